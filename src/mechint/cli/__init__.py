"""The ``mechint`` command."""
