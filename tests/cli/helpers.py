"""Running the ``mechint`` command in-process."""

import pytest

from mechint.cli.main import main


def invoke(argv, capsys):
    """(exit code, stdout, stderr) of ``mechint *argv``."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def killed_run(out, system, integrator, x0, h, steps, save_every, done, chunk, **kw):
    """What ``mechint run --out out`` leaves when killed after ``done`` of ``steps``
    steps: the file and its segments (checkpoints every ``chunk`` body-steps), the writer
    never closed.  ``kw`` goes to ``simulate`` (e.g. ``compensated=True``)."""
    import mechint as mi
    from mechint.plan import compensates
    from mechint.runfile import RunFile

    compensated = compensates(integrator, system, kw.get("compensated"), kw.get("compensation"))
    recorded = mi.integrators.Compensated(integrator) if compensated else integrator
    writer = RunFile(out, system, recorded, h, save_every, steps, "float64", every=0.0)
    mi.simulate(system, integrator, x0, h, done, save_every, keep=False,
                on_chunk=writer.append, chunk_steps=chunk, **kw)  # fmt: skip
    return writer
