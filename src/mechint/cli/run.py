"""``mechint run``: one trajectory (or a batch) to NetCDF or CSV, optionally a figure."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax

from mechint import _validate, integrators, io, resources
from mechint.cli import guard, model, parsing
from mechint.errors import StepFailure
from mechint.maps import unwrap_all
from mechint.plan import Plan, make_plan, unlayered
from mechint.runfile import RunFile, segment_dir
from mechint.simulate import simulate


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run",
        help="integrate one system and write the trajectory",
        description="Integrate a system and write the saved samples (NetCDF .nc or CSV .csv).",
        epilog="examples:\n"
        "  mechint run --system euler-top --inertia 2,1,0.6667 --x0 0.45,0,0.89 "
        "--integrator kahan --h 0.01 --steps 100000 --save-every 100 --out run.nc --plot run.png\n"
        "  mechint run --system quadratic-potential-top --J 1,2,3 "
        "--M0 '0,1,0;-1,0,0.5;0,-0.5,0' --P0 '1,0,0;0,2,0;0,0,-1' "
        "--integrator discrete-lagrangian --h 0.05 --steps 1000 --out qpt.nc\n"
        "  mechint run --system kepler --eccentricity 0.5 --integrator composition "
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
    p.add_argument(
        "--save-every",
        help="save every N-th state; must divide steps (default: about "
        f"{AUTO_SAMPLES:,} samples, the choice printed)",
    )
    p.add_argument("--out", required=True, help="output file: .nc (NetCDF) or .csv")
    p.add_argument("--plot", help="also write a figure (.png, .pdf or .svg)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    p.add_argument(
        "--checkpoint-every",
        default="1",
        help="write the file after a chunk of steps at most every this many seconds "
        "(default 1; 0: after every chunk); a killed run keeps every checkpoint",
    )
    p.add_argument("--dtype", default="float64", help="float64 (default) or float32")
    p.add_argument(
        "--compensated",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="add each step's increment by Kahan–Babuška summation (round-off ~√N, not N, "
        "ulp over N steps for maps that form the increment, e.g. midpoint); default: on "
        "for those of order >= 8 (compositions of Verlet on a separable H or of the "
        "midpoint rule), off otherwise and on states that carry their clock",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted run in --out (.nc) with the same options",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an unfinished run in --out (without it, an unfinished run is kept: "
        "continue it with --resume)",
    )
    p.set_defaults(handler=handle)


# The default --save-every keeps about this many samples: a 10^7-step run of one Euler
# top writes a file of about 0.5 MB instead of 480 MB.
AUTO_SAMPLES = 10_000


def auto_save_every(steps: int) -> int:
    """The default --save-every: the smallest divisor of ``steps`` that keeps at most
    ``AUTO_SAMPLES`` samples (every step for a run that short)."""
    if steps <= AUTO_SAMPLES:
        return 1
    return _validate.divisor_near(steps, -(-steps // AUTO_SAMPLES), at_least=True)


# the options that name a run's parameters (errors of the plan name these)
OPTIONS = {"h": "--h", "steps": "--steps", "save_every": "--save-every", "dtype": "--dtype",
           "orientation": "--orientation", "integrator": "--integrator",
           "compensation": "--resume"}  # fmt: skip


def prepare(args: argparse.Namespace) -> tuple[Plan, Path, Path | None]:
    """Validate every input before any work: the run's plan (``plan.make_plan``, shared
    with ``simulate``), --out and --plot."""
    from mechint.plot import FIGURE_FORMATS  # matplotlib only when a command draws

    model.relabel("--integrator", integrators.get, args.integrator)  # an unknown name first
    # the numbers and the files before the system is built (a --potential module is
    # imported, and so run, only for a command that is otherwise valid)
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    save_every = None
    if args.save_every is not None:
        save_every = parsing.whole("--save-every", args.save_every)
    parsing.nonnegative_float("--checkpoint-every", args.checkpoint_every)
    out = io.check_writable(args.out, "--out")
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    system = model.build_system(args)
    integrator = model.build_integrator(args, system)
    model.check_compensated(args, [integrator])
    x0, g0 = model.initial_state(args, system)
    if save_every is None:
        save_every = auto_save_every(steps)
        if not args.quiet and save_every > 1:
            print(f"saving every {save_every} steps ({steps // save_every + 1} samples; "
                  "--save-every to choose)", file=sys.stderr)  # fmt: skip
    model.check_serves(integrator, system)
    plan = make_plan(system, integrator, x0, h, steps, save_every, dtype=args.dtype,
                     orientation=g0, compensated=args.compensated, names=OPTIONS)  # fmt: skip
    estimate = resources.footprint(plan.system, x0, steps, plan.save_every, dtype=plan.dtype,
                                   orientation=g0 is not None, csv=out.suffix.lower() == ".csv",
                                   streamed=True)  # fmt: skip
    # a resumed run replaces what is on disk: its file and segments are space it has
    resources.require_fits(estimate, steps, plan.save_every, out,
                           replaces=_on_disk(out) if args.resume else 0,
                           members=_state_option(plan.system),
                           runs=_members(plan.system, x0))  # fmt: skip
    return plan, out, plot


def _on_disk(out: Path) -> int:
    """Bytes of --out and its segments."""
    paths = [out, *(segment_dir(out).glob("*.npz") if segment_dir(out).is_dir() else [])]
    return sum(p.stat().st_size for p in paths if p.is_file())


# Body-steps per chunk of a written run at most: what its memory holds (a fast explicit
# map does 2^20 steps in 0.03 s); slower maps take shorter chunks (``_chunk_seconds``).
_CHECKPOINT_CHUNK = 1 << 20


def handle(args: argparse.Namespace) -> int:
    plan, out, plot = prepare(args)
    every = parsing.nonnegative_float("--checkpoint-every", args.checkpoint_every)
    with guard.exclusive(out):
        if not args.resume and not args.overwrite:
            guard.keep_unfinished(out)
        return _run(args, plan, out, plot, every)


def _run(args, plan: Plan, out: Path, plot: Path | None, every: float) -> int:
    system, steps, save_every, h = plan.system, plan.steps, plan.save_every, plan.h
    x0, extras = unwrap_all(plan.integrator, plan.x0)
    g0 = extras.get("orientation")
    record = io.run_record(system, plan.recorded, h, save_every, steps, plan.dtype)
    resumed = RunFile.resume(out, system, record, x0, g0) if args.resume else None
    start, todo, t0, e0, z0, clock = x0, steps, 0.0, None, None, None
    if resumed is not None:
        done = (resumed.samples - 1) * save_every
        start, g0, e0 = resumed.start(system)
        z0, clock = resumed.loop_state(system), resumed.clock()
        todo, t0 = steps - done, resumed.t0 + h * (save_every * (resumed.samples - 1))
    writer = RunFile(out, system, plan.recorded, h, save_every, steps, plan.dtype,
                     every=every, resumed=resumed)  # fmt: skip
    if todo == 0:
        writer.close()
        print(f"{out} is already complete ({steps} steps)")
        return 0
    base = unlayered(plan.integrator)  # simulate adds the options' layers again
    with guard.stop_on_signals() as stop:
        try:
            traj = simulate(
                system, base, start, h, todo, save_every, t0=t0,
                progress=not args.quiet, orientation=g0, on_chunk=writer.append,
                interrupt=stop.check, chunk_steps=_CHECKPOINT_CHUNK,
                chunk_seconds=_chunk_seconds(every), dtype=plan.dtype, keep=False,
                compensated=args.compensated, compensation=e0, step0=steps - todo,
                loop_state=z0, clock=clock,
            )  # fmt: skip
            writer.close()
            stop.check()  # a signal during the last chunk: the run is complete, and says so
        except StepFailure as exc:
            if exc.trajectory is not None and len(exc.trajectory.t):
                writer.append(exc.trajectory)
            if exc.failure is not None:
                writer.record_failure(exc.failure)
            writer.close(stopped=True)
            exc.trajectory = None
            exc.args = (f"{exc.args[0]}; the samples before it and the failure are written "
                        f"to {out}",)  # fmt: skip
            raise
        except KeyboardInterrupt:
            writer.close(stopped=True)
            held = f"{out} holds {writer.on_file} of {steps} steps"
            if writer.segments:
                held += f" (steps up to {writer.steps} are in {writer.dir.name} beside it)"
            rest = ""
            if writer.steps < steps:
                rest = ("; CSV runs cannot be continued: write .nc to resume" if writer.csv
                        else "; continue with --resume")  # fmt: skip
            print(f"interrupted: {held}{rest}", file=sys.stderr)
            raise
    if plot is not None:
        from mechint.plot import trajectory_figure

        drawn = RunFile.trajectory(out, system, plan.recorded)
        trajectory_figure(drawn).savefig(plot, dpi=130)
    if not args.quiet:
        _summary(traj, writer, plot)
    return 0


def _chunk_seconds(every: float) -> float:
    """How long a chunk of steps should take: short enough that progress shows and the
    checkpoints come on time (--checkpoint-every), at most a second, at least 50 ms."""
    return min(1.0, max(0.05, every)) if every > 0 else 1.0


def _summary(traj, writer: RunFile, plot: Path | None) -> None:
    # relative to |I(x0)|, or to the size of the terms I sums where that is larger (a
    # barycentric momentum: System.invariant_scales)
    drift = ", ".join(f"max|Δ{k}|/{'size' if k in writer.scale0 else f'|{k}|'} = {v:.2e}"
                      for k, v in writer.worst.items())  # fmt: skip
    wall = traj.stats.get("wall_time", float("nan"))
    compiling = traj.stats.get("compile_time", 0.0)
    print(
        f"wrote {writer.out}: {writer.samples} samples, t in [{writer.t0:g}, {writer.t_end:g}], "
        f"{traj.steps} steps in {wall - compiling:.2f} s (+ {compiling:.2f} s compiling); "
        f"{drift}" + (f"; figure {plot}" if plot else ""),
        file=sys.stdout,
    )


def _state_option(system) -> str:
    """The option that sets the initial states (the first of the system's)."""
    return f"--{system.state_options[0].name}" if system.state_options else "--x0"


def _members(system, x0) -> int:
    """How many runs a batch of initial states makes (1 for one state)."""
    x0, batched = system.validate_state(x0)
    return int(jax.tree.leaves(x0)[0].shape[0]) if batched else 1
