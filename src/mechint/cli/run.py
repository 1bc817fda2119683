"""``mechint run``: one trajectory (or a batch) to NetCDF or CSV, optionally a figure."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mechint.cli import parsing
from mechint.errors import InputError, StepFailure


def add_parser(sub) -> None:
    from mechint import integrators, systems

    p = sub.add_parser(
        "run",
        help="integrate one system and write the trajectory",
        description="Integrate a system and write the saved samples (NetCDF .nc or CSV .csv).",
        epilog="example: mechint run --system euler-top --inertia 2,1,0.6667 --x0 0.45,0,0.89 "
        "--integrator kahan --h 0.01 --steps 100000 --save-every 100 --out run.nc --plot run.png",
    )
    p.add_argument("--system", required=True, help="one of: " + ", ".join(systems.SYSTEMS))
    p.add_argument("--inertia", help="principal moments I1,I2,I3 (euler-top)")
    p.add_argument(
        "--x0",
        required=True,
        help="initial state: comma-separated numbers, rows separated by ';' for a batch, "
        "or a .npy/.json file",
    )
    p.add_argument(
        "--integrator", required=True, help="one of: " + ", ".join(integrators.INTEGRATORS)
    )
    p.add_argument("--h", required=True, help="time step (> 0)")
    p.add_argument("--steps", required=True, help="number of steps (>= 1)")
    p.add_argument("--save-every", default="1", help="save every N-th state; must divide steps")
    p.add_argument("--out", required=True, help="output file: .nc (NetCDF) or .csv")
    p.add_argument("--plot", help="also write a figure (.png, .pdf or .svg)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    p.set_defaults(handler=handle)


def _system(args):
    from mechint import systems

    cls = systems.get(args.system)
    if cls is systems.EulerTop:
        if args.inertia is None:
            raise InputError(
                "--inertia", "required for euler-top", "give I1,I2,I3, e.g. 2,1,0.6667"
            )
        return cls(parsing.numbers("--inertia", args.inertia))
    raise InputError("--system", f"{args.system!r} cannot be built from the command line yet")


def prepare(args: argparse.Namespace):
    """Validate every input before any work; returns what ``simulate`` needs."""
    from mechint import _validate, integrators, io
    from mechint.plot import FIGURE_FORMATS

    integrator = integrators.get(args.integrator)()
    try:
        system = _system(args)
    except InputError as exc:
        raise InputError(f"--{exc.parameter.lstrip('-')}", exc.problem, exc.fix) from None
    x0, _ = _relabel("--x0", system.validate_state, parsing.numbers("--x0", args.x0), "--x0")
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    save_every = _relabel(
        "--save-every", _validate.save_every, steps, parsing.whole("--save-every", args.save_every)
    )
    integrator.check(system)
    out = io.check_writable(args.out, "--out")
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    return system, integrator, x0, h, steps, save_every, out, plot


def _relabel(option, fn, *a):
    try:
        return fn(*a)
    except InputError as exc:
        raise InputError(option, exc.problem, exc.fix) from None


def handle(args: argparse.Namespace) -> int:
    from mechint.simulate import simulate

    system, integrator, x0, h, steps, save_every, out, plot = prepare(args)
    try:
        traj = simulate(system, integrator, x0, h, steps, save_every, progress=not args.quiet)
    except StepFailure as exc:
        if exc.trajectory is not None and len(exc.trajectory.t):
            exc.trajectory.save(out)
            exc.args = (f"{exc.args[0]}; written to {out}",)
        raise
    traj.save(out)
    if plot is not None:
        from mechint.plot import trajectory_figure

        trajectory_figure(traj).savefig(plot, dpi=130)
    if not args.quiet:
        _summary(traj, out, plot)
    return 0


def _summary(traj, out: Path, plot: Path | None) -> None:
    import numpy as np

    from mechint.diagnostics import invariant_errors

    errs = invariant_errors(traj.system, traj)
    drift = ", ".join(f"max|Δ{k}|/|{k}| = {np.max(v):.2e}" for k, v in errs.items())
    wall = traj.stats.get("wall_time", float("nan"))
    print(
        f"wrote {out}: {len(traj.t)} samples, t in [{traj.t[0]:g}, {traj.t[-1]:g}], "
        f"{traj.steps} steps in {wall:.2f} s; {drift}" + (f"; figure {plot}" if plot else ""),
        file=sys.stdout,
    )
