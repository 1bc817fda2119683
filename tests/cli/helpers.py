"""Running the ``mechint`` command in-process."""

import pytest

from mechint.cli.main import main


def invoke(argv, capsys):
    """(exit code, stdout, stderr) of ``mechint *argv``."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out = capsys.readouterr()
    return info.value.code, out.out, out.err
