"""Mechanical systems as immutable JAX pytrees (see ``mechint.systems.base``)."""

from mechint._validate import lookup
from mechint.systems.euler_top import EulerTop

SYSTEMS = {"euler-top": EulerTop}


def get(name: str):
    """The system class registered under the CLI name ``name``."""
    return lookup("system", SYSTEMS, name)


__all__ = ["SYSTEMS", "EulerTop", "get"]
