"""``mechint run``: one trajectory (or a batch) to NetCDF or CSV, optionally a figure."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import os
import signal
import sys
import time
from pathlib import Path

import jax
import numpy as np

from mechint import _validate, integrators, io, resources
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
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an unfinished run in --out (without it, an unfinished run is kept: "
        "continue it with --resume)",
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
    dtype = model.relabel("--dtype", _validate.real_dtype, args.dtype)
    estimate = resources.footprint(system, x0, steps, save_every, dtype=dtype,
                                   orientation=g0 is not None,
                                   csv=out.suffix.lower() == ".csv")  # fmt: skip
    resources.require_fits(estimate, steps, save_every, out)
    return system, integrator, (x0, g0), h, steps, save_every, out, plot


# Body-steps per chunk of a written run: the granularity of its checkpoints (a fast
# explicit map does 2^20 steps in 0.03 s, the discrete Lagrangian map in about 5 s).
_CHECKPOINT_CHUNK = 1 << 20


class _Checkpoints:
    """Writes the run so far to ``out`` (atomically) after a chunk, at most every
    ``every`` seconds, and on demand; ``prior`` is the part of a resumed run on file."""

    def __init__(self, out: Path, steps: int, every: float, prior=None, stop=None):
        self.out, self.steps, self.every, self.prior, self.stop = out, steps, every, prior, stop
        self.latest = None
        self.saved = None  # the trajectory last written
        self.last_write = time.monotonic()

    def whole(self, traj):
        if self.prior is not None:
            traj = concatenate(self.prior, traj)
        return dataclasses.replace(traj, stats={**traj.stats, "steps_requested": self.steps})

    def __call__(self, make) -> None:
        self.latest = make
        if time.monotonic() - self.last_write >= self.every:
            self.write()
        if self.stop is not None:
            self.stop.check()  # a signal arrived: end here (the handler writes the chunk)

    def write(self, traj=None):
        if traj is None:
            if self.latest is None:
                return None
            traj = self.latest()
        traj = self.whole(traj)
        io.write_atomic(traj, self.out)
        self.saved, self.latest = traj, None
        self.last_write = time.monotonic()
        return traj


class _Stop:
    """SIGINT and SIGTERM handler: the first signal sets a flag that the run reads after
    each chunk (a chunk is short), so the run ends with its checkpoint written; a second
    signal exits at once (the file then holds the last checkpoint).  Raising from the
    handler instead could land inside a JAX or garbage-collector callback, where Python
    prints the exception and drops it."""

    def __init__(self):
        self.signum: int | None = None

    def __call__(self, signum, frame):
        if self.signum is not None:
            os.write(2, b"mechint run: second signal: stopped at once; --out holds the last "
                        b"checkpoint; continue with --resume\n")  # fmt: skip
            os._exit(130)
        self.signum = signum

    def check(self) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt


def handle(args: argparse.Namespace) -> int:
    system, integrator, (x0, g0), h, steps, save_every, out, plot = prepare(args)
    every = parsing.nonnegative_float("--checkpoint-every", args.checkpoint_every)
    with _exclusive(out):
        if not args.resume and not args.overwrite:
            _keep_unfinished(out)
        return _run(args, system, integrator, x0, g0, h, steps, save_every, out, plot, every)


@contextlib.contextmanager
def _exclusive(out: Path):
    """Hold an exclusive lock on ``out`` (a lock file beside it, released by the kernel
    however this process ends): a second run on the same --out is refused in one line."""
    lock = out.with_name(f".{out.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise InputError("--out", f"{str(out)!r} is being written by another mechint "
                             f"run (pid {holder})", "wait for it to end, or choose another "
                             "--out") from None  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)  # while still held: a waiter finds no stale lock
    finally:
        os.close(fd)


def _keep_unfinished(out: Path) -> None:
    """InputError if ``out`` holds an unfinished mechint run (it would be discarded)."""
    attrs = io.saved_attrs(out)
    if attrs is not None and int(attrs.get("complete", 1)) == 0:
        raise InputError("--out", f"{str(out)!r} holds an unfinished run ({attrs.get('steps')} "
                         f"of {attrs.get('steps_requested')} steps)", "continue it with "
                         "--resume, or replace it with --overwrite")  # fmt: skip


def _run(args, system, integrator, x0, g0, h, steps, save_every, out, plot, every) -> int:
    prior = (
        _resume(args, system, integrator, x0, g0, h, steps, save_every, out)
        if args.resume
        else None
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
    stop = _Stop()
    checkpoints = _Checkpoints(out, steps, every, prior, stop)
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        traj = simulate(
            system, integrator, start, h, todo, save_every, t0=t0,
            progress=not args.quiet, orientation=g0, on_chunk=checkpoints,
            chunk_steps=_CHECKPOINT_CHUNK, dtype=args.dtype,
        )  # fmt: skip
        traj = checkpoints.write(traj)
        stop.check()  # a signal during the last chunk: the run is complete, and says so
    except StepFailure as exc:
        if exc.trajectory is not None and len(exc.trajectory.t):
            checkpoints.write(exc.trajectory)
            exc.args = (f"{exc.args[0]}; written to {out}",)
        raise
    except KeyboardInterrupt:
        saved = checkpoints.write() or checkpoints.saved
        done = saved.steps if saved is not None else 0
        print(f"interrupted: {out} holds {done} of {steps} steps"
              + ("" if done >= steps else "; continue with --resume"), file=sys.stderr)  # fmt: skip
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if plot is not None:
        from mechint.plot import trajectory_figure

        trajectory_figure(traj).savefig(plot, dpi=130)
    if not args.quiet:
        _summary(traj, out, plot)
    return 0


def _resume(args, system, integrator, x0, g0, h, steps, save_every, out):
    """The run on file at ``out`` if it is this run's beginning, untouched since it was
    written, else InputError (the file is left as it is)."""
    if out.suffix.lower() != ".nc" or not out.is_file():
        raise InputError("--resume", f"needs an existing NetCDF (.nc) file at --out, {str(out)!r}")
    try:
        prior, attrs, found = read_checkpoint(out, system, integrator)
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(
            "--resume", f"cannot read a mechint run from {str(out)!r}: {exc}"
        ) from None
    name = repr(str(out))
    if "checksum" not in attrs:
        raise InputError("--resume", f"{name} has no checksum (written before mechint 0.1.0 "
                         "recorded one), so its data cannot be trusted to continue",
                         "run it again without --resume (--overwrite)")  # fmt: skip
    if attrs["checksum"] != found:
        raise InputError("--resume", f"{name} was changed after it was written (its data or "
                         "record disagree with its checksum)", "run it again without --resume "
                         "(--overwrite)")  # fmt: skip
    # the whole run record: system, parameters, the integrator and every setting, h,
    # save_every, steps, dtype (the initial state and attitude are compared below)
    want = io.run_record(system, integrator, h, save_every, steps, args.dtype)
    for key, value in want.items():
        if attrs.get(key) != value:
            raise InputError(
                "--resume",
                f"{name} was written by another run ({key} = {attrs.get(key)!r}, "
                f"this run: {value!r})",
                "give the same options as the interrupted run",
            )
    axis = 1 if prior.batched else 0
    n = jax.tree.leaves(prior.x)[0].shape[axis]
    if prior.steps % save_every or n != prior.steps // save_every + 1:
        raise InputError("--resume", f"{name} holds {n} samples, which is not "
                         f"{prior.steps} steps saved every {save_every}")  # fmt: skip
    first = _first(prior)
    same = (
        np.array_equal(a, np.asarray(b, a.dtype)) for a, b in zip(first, _leaves(x0), strict=True)
    )
    if not all(same):
        raise InputError("--resume", f"{name} starts from another initial state")
    if (g0 is None) != (prior.orientation is None) or (
        g0 is not None
        and not np.array_equal(np.take(prior.orientation, 0, axis=axis), np.asarray(g0))
    ):
        raise InputError("--resume", f"{name} starts from another attitude (--orientation)")
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
