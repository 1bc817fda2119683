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
        "--integrator kahan --h 0.01 --steps 100000 --save-every 100 --out run.nc --plot run.png\n"
        "         mechint run --system quadratic-potential-top --J 1,2,3 "
        "--M0 '0,1,0;-1,0,0.5;0,-0.5,0' --P0 '1,0,0;0,2,0;0,0,-1' "
        "--integrator discrete-lagrangian --h 0.05 --steps 1000 --out qpt.nc",
    )
    p.add_argument("--system", required=True, help="one of: " + ", ".join(systems.SYSTEMS))
    p.add_argument("--inertia", help="principal moments I1,I2,I3 (euler-top)")
    p.add_argument(
        "--J",
        help="J1,...,Jn > 0 (free-rigid-body, quadratic-potential-top, clebsch; any n >= 2)",
    )
    p.add_argument(
        "--x0",
        help="initial state of euler-top: comma-separated numbers, rows separated by ';' "
        "for a batch, or a .npy/.json file",
    )
    matrix = "rows separated by ';' (e.g. 0,1,2;-1,0,3;-2,-3,0), or a .npy/.json file"
    p.add_argument("--M0", help=f"initial skew body momentum M (n x n): {matrix}")
    p.add_argument("--P0", help=f"initial symmetric P (quadratic-potential-top): {matrix}")
    p.add_argument("--p0", help="initial vector p (clebsch): comma-separated numbers")
    p.add_argument("--A", help="potential matrix A (space frame) instead of --P0: P0 = g0ᵀ A g0")
    p.add_argument("--a", help="potential vector a (space frame) instead of --p0: p0 = g0ᵀ a")
    p.add_argument(
        "--orientation",
        help="carry the attitude g_k in SO(n) from g0 (a matrix, or 'identity'); "
        "discrete-lagrangian only",
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
    if args.J is None:
        raise InputError("--J", f"required for {args.system}", "give J1,...,Jn, e.g. 1,2,3")
    return cls(parsing.numbers("--J", args.J))


def _required(option: str, value, system_name: str, fix: str):
    if value is None:
        raise InputError(option, f"required for {system_name}", fix)
    return value


def _initial_state(args, system):
    """x0 and g0 (or None) from the options the system needs."""
    import numpy as np

    from mechint import systems

    if isinstance(system, systems.EulerTop):
        text = _required("--x0", args.x0, "euler-top", "give m1,m2,m3, e.g. 0.45,0,0.89")
        x0, _ = _relabel("--x0", system.validate_state, parsing.numbers("--x0", text), "--x0")
        return x0, None
    n = system.n
    g0 = None
    if args.orientation is not None:
        g0 = (
            np.eye(n)
            if args.orientation.strip() == "identity"
            else parsing.numbers("--orientation", args.orientation)
        )
    example = "0,1,2;-1,0,3;-2,-3,0" if n == 3 else f"an {n}x{n} skew matrix, rows split by ';'"
    M0 = parsing.numbers("--M0", _required("--M0", args.M0, system.name, f"give {example}"))
    if isinstance(system, systems.FreeRigidBody):
        x0, _ = _relabel("--M0", system.validate_state, M0, "--M0")
        return x0, g0
    frame = np.eye(n) if g0 is None else g0
    if isinstance(system, systems.QuadraticPotentialTop):
        if args.P0 is None and args.A is not None:
            A = parsing.numbers("--A", args.A)
            if A.shape != (n, n):
                raise InputError("--A", f"expected an {n}x{n} matrix, got shape {A.shape}")
            second = system.body_potential(A, frame)
        else:
            text = _required("--P0", args.P0, system.name, "give --P0 (or --A)")
            second = parsing.numbers("--P0", text)
    else:
        if args.p0 is None and args.a is not None:
            second = system.body_vector(parsing.numbers("--a", args.a), frame)
        else:
            second = parsing.numbers("--p0", _required("--p0", args.p0, system.name, "give --p0"))
    x0, _ = _relabel_state(system, (M0, second))
    return x0, g0


def _relabel_state(system, x):
    try:
        return system.validate_state(x, "x0")
    except InputError as exc:
        second = "--P0" if "(P)" in exc.parameter else "--p0"
        option = "--M0" if "[0]" in exc.parameter else second
        raise InputError(option, exc.problem, exc.fix) from None


def prepare(args: argparse.Namespace):
    """Validate every input before any work; returns what ``simulate`` needs."""
    from mechint import _validate, integrators, io
    from mechint.plot import FIGURE_FORMATS

    integrator = integrators.get(args.integrator)()
    try:
        system = _system(args)
    except InputError as exc:
        raise InputError(f"--{exc.parameter.lstrip('-')}", exc.problem, exc.fix) from None
    x0, g0 = _initial_state(args, system)
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    save_every = _relabel(
        "--save-every", _validate.save_every, steps, parsing.whole("--save-every", args.save_every)
    )
    integrator.check(system)
    if g0 is not None:
        from mechint.simulate import _orientation

        batched = system.validate_state(x0)[1]
        batch = len(x0[0]) if batched else 1
        g0 = _relabel("--orientation", _orientation, system, integrator, g0, batched, batch)
    out = io.check_writable(args.out, "--out")
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    return system, integrator, (x0, g0), h, steps, save_every, out, plot


def _relabel(option, fn, *a):
    try:
        return fn(*a)
    except InputError as exc:
        raise InputError(option, exc.problem, exc.fix) from None


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
