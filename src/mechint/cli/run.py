"""``mechint run``: one trajectory (or a batch) to NetCDF or CSV, optionally a figure."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mechint.cli import model, parsing
from mechint.errors import StepFailure


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run",
        help="integrate one system and write the trajectory",
        description="Integrate a system and write the saved samples (NetCDF .nc or CSV .csv).",
        epilog="example: mechint run --system euler-top --inertia 2,1,0.6667 --x0 0.45,0,0.89 "
        "--integrator kahan --h 0.01 --steps 100000 --save-every 100 --out run.nc --plot run.png\n"
        "         mechint run --system quadratic-potential-top --J 1,2,3 "
        "--M0 '0,1,0;-1,0,0.5;0,-0.5,0' --P0 '1,0,0;0,2,0;0,0,-1' "
        "--integrator discrete-lagrangian --h 0.05 --steps 1000 --out qpt.nc\n"
        "         mechint run --system kepler --eccentricity 0.5 --integrator composition "
        "--scheme kahan-li8 --h 0.05 --steps 20000 --save-every 100 --out kepler.nc",
    )
    model.add_system_options(p)
    p.add_argument(
        "--orientation",
        help="carry the attitude g_k in SO(n) from g0 (a matrix, or 'identity'); "
        "discrete-lagrangian only",
    )
    model.add_integrator_options(p)
    p.add_argument("--h", required=True, help="time step (> 0)")
    p.add_argument("--steps", required=True, help="number of steps (>= 1)")
    p.add_argument("--save-every", default="1", help="save every N-th state; must divide steps")
    p.add_argument("--out", required=True, help="output file: .nc (NetCDF) or .csv")
    p.add_argument("--plot", help="also write a figure (.png, .pdf or .svg)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    p.set_defaults(handler=handle)


def prepare(args: argparse.Namespace):
    """Validate every input before any work; returns what ``simulate`` needs."""
    from mechint import _validate, integrators, io
    from mechint.plot import FIGURE_FORMATS

    integrators.get(args.integrator)  # an unknown name is reported first
    system = model.build_system(args)
    integrator = model.build_integrator(args, system)
    x0, g0 = model.initial_state(args, system)
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    save_every = model.relabel(
        "--save-every", _validate.save_every, steps, parsing.whole("--save-every", args.save_every)
    )
    integrator.check(system)
    if g0 is not None:
        from mechint.simulate import _orientation

        batched = system.validate_state(x0)[1]
        batch = len(x0[0]) if batched else 1
        g0 = model.relabel("--orientation", _orientation, system, integrator, g0, batched, batch)
    out = io.check_writable(args.out, "--out")
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    return system, integrator, (x0, g0), h, steps, save_every, out, plot


def handle(args: argparse.Namespace) -> int:
    from mechint.simulate import simulate

    system, integrator, (x0, g0), h, steps, save_every, out, plot = prepare(args)
    try:
        traj = simulate(
            system,
            integrator,
            x0,
            h,
            steps,
            save_every,
            progress=not args.quiet,
            orientation=g0,
        )
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
