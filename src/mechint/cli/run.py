"""``mechint run``: one trajectory (or a batch) to NetCDF or CSV, optionally a figure."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

from mechint import _validate, integrators, io, resources
from mechint.cli import guard, model, parsing
from mechint.errors import InputError, StepFailure
from mechint.integrators.compensated import Compensated
from mechint.integrators.oriented import Oriented
from mechint.runfile import Resumed, RunFile
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
        action="store_true",
        help="add each step's increment by Kahan–Babuška summation (round-off ~√N, not N, "
        "ulp over N steps for maps that form the increment, e.g. midpoint)",
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


def prepare(args: argparse.Namespace):
    """Validate every input before any work; returns what ``simulate`` needs."""
    from mechint.plot import FIGURE_FORMATS  # matplotlib only when a command draws

    model.relabel("--integrator", integrators.get, args.integrator)  # an unknown name first
    system = model.build_system(args)
    integrator = model.build_integrator(args, system)
    x0, g0 = model.initial_state(args, system)
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    if args.save_every is None:
        save_every = auto_save_every(steps)
        if not args.quiet and save_every > 1:
            print(f"saving every {save_every} steps ({steps // save_every + 1} samples; "
                  "--save-every to choose)", file=sys.stderr)  # fmt: skip
    else:
        save_every = model.relabel(
            "--save-every",
            _validate.save_every,
            steps,
            parsing.whole("--save-every", args.save_every),
        )
    model.check_serves(integrator, system)
    if g0 is not None:
        model.relabel("--orientation", Oriented, integrator)
        batched = system.validate_state(x0)[1]
        batch = len(x0[0]) if batched else 1
        g0 = model.relabel("--orientation", Oriented.initial, system, g0, batched, batch)
    out = io.check_writable(args.out, "--out")
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    dtype = model.relabel("--dtype", _validate.real_dtype, args.dtype)
    estimate = resources.footprint(system, x0, steps, save_every, dtype=dtype,
                                   orientation=g0 is not None,
                                   csv=out.suffix.lower() == ".csv")  # fmt: skip
    resources.require_fits(estimate, steps, save_every, out)
    return system, integrator, (x0, g0), h, steps, save_every, out, plot


# Body-steps per chunk of a written run at most: what its memory holds (a fast explicit
# map does 2^20 steps in 0.03 s); slower maps take shorter chunks (``_chunk_seconds``).
_CHECKPOINT_CHUNK = 1 << 20


def handle(args: argparse.Namespace) -> int:
    system, integrator, (x0, g0), h, steps, save_every, out, plot = prepare(args)
    every = parsing.nonnegative_float("--checkpoint-every", args.checkpoint_every)
    with guard.exclusive(out):
        if not args.resume and not args.overwrite:
            guard.keep_unfinished(out)
        return _run(args, system, integrator, x0, g0, h, steps, save_every, out, plot, every)


def _run(args, system, integrator, x0, g0, h, steps, save_every, out, plot, every) -> int:
    resumed = (
        _resume(args, system, integrator, x0, g0, h, steps, save_every, out)
        if args.resume
        else None
    )
    start, todo, t0 = x0, steps, 0.0
    if resumed is not None:
        done = (resumed.samples - 1) * save_every
        fields = len(system.state_fields)
        last = [_drop_time(a, batched=_batched(system, resumed)) for a in resumed.last]
        start = last[0] if fields == 1 else tuple(last[:fields])
        g0 = last[fields] if len(last) > fields else None
        todo, t0 = steps - done, resumed.t0 + h * (save_every * (resumed.samples - 1))
    recorded = Compensated(integrator) if args.compensated else integrator
    writer = RunFile(out, system, recorded, h, save_every, steps, args.dtype,
                     every=every, resumed=resumed)  # fmt: skip
    if todo == 0:
        writer.close()
        print(f"{out} is already complete ({steps} steps)")
        return 0
    with guard.stop_on_signals() as stop:

        def on_chunk(chunk) -> None:
            writer.append(chunk)
            stop.check()  # a signal arrived: end here, with this chunk written

        try:
            traj = simulate(
                system, integrator, start, h, todo, save_every, t0=t0,
                progress=not args.quiet, orientation=g0, on_chunk=on_chunk,
                chunk_steps=_CHECKPOINT_CHUNK, chunk_seconds=_chunk_seconds(every),
                dtype=args.dtype, keep=False,
                compensated=args.compensated,
            )  # fmt: skip
            writer.close()
            stop.check()  # a signal during the last chunk: the run is complete, and says so
        except StepFailure as exc:
            if exc.trajectory is not None and len(exc.trajectory.t):
                writer.append(exc.trajectory)
            writer.close(stopped=True)
            exc.trajectory = None
            exc.args = (f"{exc.args[0]}; the samples before it are written to {out}",)
            raise
        except KeyboardInterrupt:
            writer.close(stopped=True)
            held = f"{out} holds {writer.on_file} of {steps} steps"
            if writer.segments:
                held += f" (steps up to {writer.steps} are in {writer.dir.name} beside it)"
            rest = "" if writer.steps >= steps else "; continue with --resume"
            print(f"interrupted: {held}{rest}", file=sys.stderr)
            raise
    if plot is not None:
        from mechint.plot import trajectory_figure

        drawn = RunFile.trajectory(out, system, integrator)
        trajectory_figure(drawn).savefig(plot, dpi=130)
    if not args.quiet:
        _summary(traj, writer, plot)
    return 0


def _chunk_seconds(every: float) -> float:
    """How long a chunk of steps should take: short enough that progress shows and the
    checkpoints come on time (--checkpoint-every), at most a second, at least 50 ms."""
    return min(1.0, max(0.05, every)) if every > 0 else 1.0


def _batched(system, resumed) -> bool:
    return np.ndim(resumed.first[0]) == len(system.state_shape) + 2


def _drop_time(a, batched: bool):
    """One sample's array (time axis of length 1 removed)."""
    return np.take(np.asarray(a), 0, axis=1 if batched else 0)


def _resume(args, system, integrator, x0, g0, h, steps, save_every, out) -> Resumed:
    """The run on file at ``out`` (and its segments) if it is this run's beginning,
    untouched since it was written, else InputError (the files are left as they are)."""
    if out.suffix.lower() != ".nc" or not out.is_file():
        raise InputError("--resume", f"needs an existing NetCDF (.nc) file at --out, {str(out)!r}")
    try:
        resumed = RunFile.read(out, system)
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise InputError(
            "--resume", f"cannot read a mechint run from {str(out)!r}: {exc}"
        ) from None
    attrs = resumed.attrs
    name = repr(str(out))
    if "checksum" not in attrs:
        raise InputError("--resume", f"{name} has no checksum (written before mechint 0.1.0 "
                         "recorded one), so its data cannot be trusted to continue",
                         "run it again without --resume (--overwrite)")  # fmt: skip
    if not str(attrs["checksum"]).startswith(io.CHECKSUM_SCHEME):
        raise InputError("--resume", f"{name} was written by an older mechint, whose checksum "
                         "this version does not compute", "run it again without --resume "
                         "(--overwrite)")  # fmt: skip
    if attrs["checksum"] != resumed.found:
        raise InputError("--resume", f"{name} was changed after it was written (its data or "
                         "record disagree with its checksum)", "run it again without --resume "
                         "(--overwrite)")  # fmt: skip
    # the whole run record: system, parameters, the integrator and every setting, h,
    # save_every, steps, dtype (the initial state and attitude are compared below)
    recorded = Compensated(integrator) if args.compensated else integrator
    want = io.run_record(system, recorded, h, save_every, steps, args.dtype)
    for key, value in want.items():
        if attrs.get(key) != value:
            raise InputError(
                "--resume",
                f"{name} was written by another run ({key} = {attrs.get(key)!r}, "
                f"this run: {value!r})",
                "give the same options as the interrupted run",
            )
    done = int(attrs["steps"])
    if done % save_every or resumed.merged != done // save_every + 1:
        raise InputError("--resume", f"{name} holds {resumed.merged} samples, which is not "
                         f"{done} steps saved every {save_every}")  # fmt: skip
    batched = _batched(system, resumed)
    fields = len(system.state_fields)
    first = [_drop_time(a, batched) for a in resumed.first]
    same = (
        np.array_equal(a, np.asarray(b, a.dtype))
        for a, b in zip(first[:fields], _leaves(x0), strict=True)
    )
    if not all(same):
        raise InputError("--resume", f"{name} starts from another initial state")
    has_g = len(first) > fields
    if (g0 is None) == has_g or (
        g0 is not None and not np.array_equal(first[fields], np.asarray(g0))
    ):
        raise InputError("--resume", f"{name} starts from another attitude (--orientation)")
    return resumed


def _leaves(x):
    return [np.asarray(a) for a in jax.tree.leaves(x)]


def _summary(traj, writer: RunFile, plot: Path | None) -> None:
    drift = ", ".join(f"max|Δ{k}|/|{k}| = {v:.2e}" for k, v in writer.worst.items())
    wall = traj.stats.get("wall_time", float("nan"))
    compiling = traj.stats.get("compile_time", 0.0)
    t_end = writer.t0 + writer.h * (writer.save_every * (writer.samples - 1))
    print(
        f"wrote {writer.out}: {writer.samples} samples, t in [{writer.t0:g}, {t_end:g}], "
        f"{traj.steps} steps in {wall - compiling:.2f} s (+ {compiling:.2f} s compiling); "
        f"{drift}" + (f"; figure {plot}" if plot else ""),
        file=sys.stdout,
    )
