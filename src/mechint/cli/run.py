"""``mechint run``: one trajectory (or a batch) to NetCDF or CSV, optionally a figure."""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import time
from pathlib import Path

import jax
import numpy as np

from mechint import _validate, integrators, io
from mechint.cli import model, parsing
from mechint.diagnostics import invariant_errors
from mechint.errors import InputError, StepFailure
from mechint.integrators.oriented import Oriented
from mechint.simulate import simulate
from mechint.trajectory import concatenate, read_checkpoint


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
    p.add_argument(
        "--checkpoint-every",
        default="1",
        help="write the file after a chunk of steps at most every this many seconds "
        "(default 1; 0: after every chunk); a killed run keeps every checkpoint",
    )
    p.add_argument("--dtype", default="float64", help="float64 (default) or float32")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted run in --out (.nc) with the same options",
    )
    p.set_defaults(handler=handle)


def prepare(args: argparse.Namespace):
    """Validate every input before any work; returns what ``simulate`` needs."""
    from mechint.plot import FIGURE_FORMATS  # matplotlib only when a command draws

    integrators.get(args.integrator)  # an unknown name is reported first
    system = model.build_system(args)
    integrator = model.build_integrator(args, system)
    x0, g0 = model.initial_state(args, system)
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    save_every = model.relabel(
        "--save-every", _validate.save_every, steps, parsing.whole("--save-every", args.save_every)
    )
    model.check_serves(integrator, system)
    if g0 is not None:
        model.relabel("--orientation", Oriented, integrator)
        batched = system.validate_state(x0)[1]
        batch = len(x0[0]) if batched else 1
        g0 = model.relabel("--orientation", Oriented.initial, system, g0, batched, batch)
    out = io.check_writable(args.out, "--out")
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    return system, integrator, (x0, g0), h, steps, save_every, out, plot


# Body-steps per chunk of a written run: the granularity of its checkpoints (a fast
# explicit map does 2^20 steps in 0.03 s, the discrete Lagrangian map in about 5 s).
_CHECKPOINT_CHUNK = 1 << 20


class _Checkpoints:
    """Writes the run so far to ``out`` (atomically) after a chunk, at most every
    ``every`` seconds, and on demand; ``prior`` is the part of a resumed run on file."""

    def __init__(self, out: Path, steps: int, every: float, prior=None):
        self.out, self.steps, self.every, self.prior = out, steps, every, prior
        self.latest = None
        self.last_write = time.monotonic()

    def whole(self, traj):
        if self.prior is not None:
            traj = concatenate(self.prior, traj)
        return dataclasses.replace(traj, stats={**traj.stats, "steps_requested": self.steps})

    def __call__(self, make) -> None:
        self.latest = make
        if time.monotonic() - self.last_write >= self.every:
            self.write()

    def write(self, traj=None):
        if traj is None:
            if self.latest is None:
                return None
            traj = self.latest()
        traj = self.whole(traj)
        io.write_atomic(traj, self.out)
        self.last_write = time.monotonic()
        return traj


def _terminate(signum, frame):
    raise KeyboardInterrupt


def handle(args: argparse.Namespace) -> int:
    system, integrator, (x0, g0), h, steps, save_every, out, plot = prepare(args)
    every = parsing.nonnegative_float("--checkpoint-every", args.checkpoint_every)
    model.relabel("--dtype", _validate.real_dtype, args.dtype)
    prior = (
        _resume(args, system, integrator, x0, h, steps, save_every, out) if args.resume else None
    )
    start, todo, t0 = x0, steps, 0.0
    if prior is not None:
        start, g0, todo, t0 = (
            _last_state(prior),
            _last_orientation(prior),
            steps - prior.steps,
            prior.t[-1],
        )
        if todo == 0:
            print(f"{out} is already complete ({steps} steps)")
            return 0
    checkpoints = _Checkpoints(out, steps, every, prior)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        traj = simulate(
            system, integrator, start, h, todo, save_every, t0=t0,
            progress=not args.quiet, orientation=g0, on_chunk=checkpoints,
            chunk_steps=_CHECKPOINT_CHUNK, dtype=args.dtype,
        )  # fmt: skip
    except StepFailure as exc:
        if exc.trajectory is not None and len(exc.trajectory.t):
            checkpoints.write(exc.trajectory)
            exc.args = (f"{exc.args[0]}; written to {out}",)
        raise
    except KeyboardInterrupt:
        saved = checkpoints.write()
        done = saved.steps if saved is not None else 0
        print(f"interrupted: {out} holds {done} of {steps} steps; continue with --resume",
              file=sys.stderr)  # fmt: skip
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    traj = checkpoints.write(traj)
    if plot is not None:
        from mechint.plot import trajectory_figure

        trajectory_figure(traj).savefig(plot, dpi=130)
    if not args.quiet:
        _summary(traj, out, plot)
    return 0


def _resume(args, system, integrator, x0, h, steps, save_every, out):
    """The run on file at ``out`` if it is this run's beginning, else InputError."""
    if out.suffix.lower() != ".nc" or not out.is_file():
        raise InputError("--resume", f"needs an existing NetCDF (.nc) file at --out, {str(out)!r}")
    try:
        prior, attrs = read_checkpoint(out, system, integrator)
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(
            "--resume", f"cannot read a mechint run from {str(out)!r}: {exc}"
        ) from None
    want = {
        "system": type(system).__name__,
        "system_parameters": json.dumps(system.parameters()),
        "integrator": type(integrator).__name__,
        "h": float(h),
        "save_every": int(save_every),
        "steps_requested": int(steps),
    }
    for key, value in want.items():
        if attrs.get(key) != value:
            raise InputError(
                "--resume",
                f"{str(out)!r} was written by another run ({key} = {attrs.get(key)!r}, "
                f"this run: {value!r})",
                "give the same options as the interrupted run",
            )
    first = _first(prior)
    if str(first[0].dtype) != args.dtype:
        raise InputError(
            "--resume", f"{str(out)!r} holds {first[0].dtype} states, this run asks {args.dtype}"
        )
    same = (
        np.array_equal(a, np.asarray(b, a.dtype)) for a, b in zip(first, _leaves(x0), strict=True)
    )
    if not all(same):
        raise InputError("--resume", f"{str(out)!r} starts from another initial state")
    return prior


def _first(traj):
    axis = 1 if traj.batched else 0
    return [np.take(np.asarray(a), 0, axis=axis) for a in jax.tree.leaves(traj.x)]


def _leaves(x):
    return [np.asarray(a) for a in jax.tree.leaves(x)]


def _last_state(traj):
    axis = 1 if traj.batched else 0
    return jax.tree.map(lambda a: np.take(np.asarray(a), -1, axis=axis), traj.x)


def _last_orientation(traj):
    if traj.orientation is None:
        return None
    return np.take(traj.orientation, -1, axis=1 if traj.batched else 0)


def _summary(traj, out: Path, plot: Path | None) -> None:
    errs = invariant_errors(traj.system, traj)
    drift = ", ".join(f"max|Δ{k}|/|{k}| = {np.max(v):.2e}" for k, v in errs.items())
    wall = traj.stats.get("wall_time", float("nan"))
    print(
        f"wrote {out}: {len(traj.t)} samples, t in [{traj.t[0]:g}, {traj.t[-1]:g}], "
        f"{traj.steps} steps in {wall:.2f} s; {drift}" + (f"; figure {plot}" if plot else ""),
        file=sys.stdout,
    )
