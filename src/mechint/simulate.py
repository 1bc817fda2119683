"""The driver: advance a system with an integrator by ``jax.lax.scan``.

The run is split into chunks of whole save intervals.  Each chunk is one jitted call
(cached by system type, integrator and chunk shape: parameters and h are traced, so a
new inertia or step size reuses the compiled code) whose inner loop takes ``save_every``
steps between saved samples.  Only saved samples leave the device, so memory is
O(steps / save_every).  A batch of initial conditions (leading axis) is advanced by
``vmap`` of the step, in one call.

Failure is data.  Every step's status is tracked: the first failing step of each batch
member, its residual and its ``Reason`` are recorded and that member's state is frozen
there.  With ``throw=True`` (the default) ``simulate`` raises ``StepFailure`` after the
chunk that saw a failure, with the step number, the residual and every sample saved
before the failing step.  With ``throw=False`` it runs every healthy member to the end
and returns the trajectory with per-member ``failed_step`` (−1: none), ``residual`` and
``reason``; a failed member's samples after its failure are NaN, never a frozen state
that could pass for a result.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from mechint import _validate
from mechint.errors import InputError, StepFailure
from mechint.integrate import check_integrator, check_system, decode, initial_carry, run_saves
from mechint.integrators.compensated import Compensated
from mechint.integrators.oriented import Oriented
from mechint.maps import Integrator, Reason, require_serves
from mechint.systems.base import System
from mechint.systems.euler_top import EulerTop
from mechint.systems.rigid import Body
from mechint.trajectory import Trajectory

# Body-steps per chunk: long enough to amortise dispatch, short enough for progress.
_CHUNK_BODY_STEPS = 1 << 22


class _CompileClock:
    """Seconds JAX has spent tracing, lowering and compiling in this process (its
    monitoring events), so that a run reports its compile time apart from its steps."""

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self):
        self.seconds = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._heard)

    def _heard(self, event: str, duration_secs: float, **_: str | int) -> None:
        if event in self.EVENTS:
            self.seconds += duration_secs


_COMPILE_CLOCK = _CompileClock()


@dataclasses.dataclass(frozen=True)
class _Run:
    """What a run was asked to do (recorded in every Trajectory it returns)."""

    system: System
    integrator: Integrator
    h: float
    t0: float
    steps: int
    save_every: int
    batched: bool
    oriented: bool = False
    compensated: bool = False


# Chunks of few saves are compiled at one size, up to this many saves and numbers, and
# chunks of up to 16 times that at a second size.
_MIN_SAVES, _MIN_NUMBERS = 64, 1 << 16


def capacity(n_saves: int, numbers: int = 1) -> int:
    """The compiled size of a chunk of ``n_saves`` saves of ``numbers`` numbers each: at
    least 64 (or as many as keep the padded buffer within 2^16 numbers), else 16 times
    that, else the next power of two: runs of one (system, integrator) of different
    lengths share a few programs (the saves past ``n_saves`` cost a skipped iteration
    each, at most 15/16 of a 2^20-number buffer)."""
    floor = _MIN_SAVES
    while floor > 1 and floor * numbers > _MIN_NUMBERS:
        floor //= 2
    size = 1 << max(0, n_saves - 1).bit_length()
    if size <= floor:
        return floor
    return 16 * floor if size <= 16 * floor else size


@partial(jax.jit, static_argnames=("integrator", "capacity", "batched"))
def _advance(system, integrator, carry, h, save_every, n_saves, *, capacity, batched):
    """``n_saves`` (≤ ``capacity``) × ``save_every`` steps from ``carry`` (the loop shared
    with ``integrate``); returns the new carry and ``capacity`` saved states, the first
    ``n_saves`` filled.  ``save_every`` and ``n_saves`` are traced, so runs that differ
    only in them (or in h, or the parameters) share one compiled program per
    power-of-two chunk size."""
    return run_saves(
        system, integrator, carry, h, save_every, capacity,
        batched=batched, n_saves=n_saves, checkpoint=False,
    )  # fmt: skip


def _plan(n_saves: int, save_every: int, batch: int, chunk: int = _CHUNK_BODY_STEPS) -> int:
    """Saves per chunk: a divisor of n_saves near the budget when one exists (one compile)."""
    cap = max(1, chunk // (save_every * batch))
    if cap >= n_saves:
        return n_saves
    best = _validate.divisor_near(n_saves, cap, at_most=True)
    return best if 2 * best >= cap else cap


def simulate(
    system,
    integrator,
    x0,
    h: float,
    steps: int,
    save_every: int = 1,
    *,
    t0: float = 0.0,
    progress: bool = False,
    orientation=None,
    on_chunk=None,
    chunk_steps: int | None = None,
    chunk_seconds: float | None = None,
    dtype: str = "float64",
    throw: bool = True,
    keep: bool = True,
    compensated: bool = False,
) -> Trajectory:
    """Advance ``x0`` by ``steps`` steps of size ``h``, saving every ``save_every``-th state.

    Parameters
    ----------
    system, integrator
        A ``mechint.systems`` model and a ``mechint.integrators`` map that serves it.
    x0
        Initial state, or a batch of them along a leading axis.
    h
        Time step (finite, non-zero; negative integrates backwards).
    steps, save_every
        Number of steps, and the save interval (must divide ``steps``).
    t0
        Time of ``x0``.
    progress
        Show a progress bar on stderr for runs lasting more than about two seconds.
    orientation
        Initial attitude g0 ∈ SO(n) (one for all batch members, or one each): the
        integrator is wrapped in ``integrators.Oriented``, which also carries
        g_{k+1} = g_k W_k (maps with a body rotation, i.e. ``DiscreteLagrangian``),
        saved as ``Trajectory.orientation``.
    on_chunk
        Called after every chunk of steps.  With ``keep=True``: with a function that
        builds the Trajectory of everything saved so far.  With ``keep=False``: with the
        Trajectory of the samples saved since the last call (x0 included in the first),
        which the run then forgets (``mechint run`` streams them to its file).
    compensated
        Add each step's increment with Kahan–Babuška summation (``integrators.Compensated``;
        Hairer's GNI codes): round-off grows like √N instead of N ulp over N steps for
        maps that form their increment directly (the implicit midpoint rule).
    chunk_steps
        Body-steps (steps × batch size) per chunk, rounded to whole save intervals
        (default 2^22): each chunk is one compiled call, and the unit of ``on_chunk``.
    chunk_seconds
        Aim for chunks of about this many seconds (at most ``chunk_steps``): the first
        chunk is short (1/256 of the budget), and the next ones are sized from the rate
        it measured, so that a slow map shows progress and checkpoints on time.  All
        chunks share one compiled program; the states are the same as with any chunking.
    dtype
        "float64" (default) or "float32": the state and the system's parameters are cast
        to it (faster on GPUs, about 1e-7 relative precision; invariants kept to
        float32 round-off).
    throw
        True (default): a failed step raises ``StepFailure``.  False: every healthy
        member runs to the end; the trajectory's ``failed_step``, ``residual`` and
        ``reason`` say which members failed, where and why (their later samples are NaN).
    keep
        True (default): every saved sample is kept and returned.  False: samples go to
        ``on_chunk`` only, so memory stays bounded by a chunk however long the run; the
        returned Trajectory holds the last sample (with the whole run's ``steps``), and a
        ``StepFailure`` carries the samples of the failing chunk before the failure.

    Returns
    -------
    Trajectory with ``steps // save_every + 1`` samples (x0 included).

    Raises
    ------
    InputError
        On bad input, before any step.
    StepFailure
        With ``throw=True``, when a step fails (singular solve, Newton not converged,
        wrong branch, non-finite state): it names the step, residual and reason and
        carries every sample saved before it.
    """
    system = check_system(system)
    integrator = check_integrator(integrator)
    require_serves(integrator, system)
    x0_np, batched = system.validate_state(x0, "x0")
    h = _validate.step_size(h)
    steps = _validate.count("steps", steps)
    save_every = _validate.save_every(steps, save_every)
    t0 = float(_validate.real_array("t0", t0, ()))
    real = jnp.dtype(_validate.real_dtype(dtype))
    if real != jnp.float64:
        system = jax.tree.map(lambda a: jnp.asarray(a, dtype=real), system)

    n_saves = steps // save_every
    batch = jax.tree.leaves(x0_np)[0].shape[0] if batched else 1
    oriented = orientation is not None
    if oriented:
        integrator = Oriented(integrator)
        assert isinstance(system, Body | EulerTop)  # the base map serves it (checked above)
        x0_np = (x0_np, Oriented.initial(system, orientation, batched, batch))
    if compensated:  # the state carries its Kahan–Babuška correction, from zero
        integrator = Compensated(integrator)
        x0_np = (x0_np, jax.tree.map(np.zeros_like, x0_np))
    run = _Run(system, integrator, h, t0, steps, save_every, batched, oriented, compensated)
    chunk = (
        _CHUNK_BODY_STEPS if chunk_steps is None else _validate.count("chunk_steps", chunk_steps)
    )
    per_chunk = _plan(n_saves, save_every, batch, chunk)
    if chunk_seconds is not None and not chunk_seconds > 0:
        raise InputError("chunk_seconds", f"must be > 0, got {chunk_seconds!r}")

    x0_j = jax.tree.map(lambda a: jnp.asarray(a, dtype=real), x0_np)
    carry = initial_carry(x0_j, batch if batched else None, real)
    samples = [jax.tree.map(lambda a: np.asarray(a, dtype=real)[None], x0_np)]
    every = jnp.asarray(save_every, dtype=jnp.int64)
    numbers = sum(int(np.size(a)) for a in jax.tree.leaves(x0_np))
    start, compiled = time.perf_counter(), _COMPILE_CLOCK.seconds
    bar = tqdm(
        total=steps, unit="step", unit_scale=True, delay=2.0, disable=not progress,
        file=sys.stderr, leave=False,
    )  # fmt: skip
    handed, last = 0, None  # samples handed to on_chunk and forgotten (keep=False)
    # one compiled size for every chunk (the last, shorter one included)
    size = capacity(min(per_chunk, n_saves), numbers)
    n_next = per_chunk if chunk_seconds is None else max(1, per_chunk // 256)
    try:
        done = 0
        while done < n_saves:
            n = min(n_next, n_saves - done)
            began, compiling = time.perf_counter(), _COMPILE_CLOCK.seconds
            carry, saved = _advance(
                system, integrator, carry, h, every, jnp.asarray(n, dtype=jnp.int64),
                capacity=size, batched=batched,
            )  # fmt: skip
            saved = jax.tree.map(lambda a, n=n: a[:n], jax.device_get(saved))
            if chunk_seconds is not None:  # the next chunk's size, from this one's rate
                spent = time.perf_counter() - began - (_COMPILE_CLOCK.seconds - compiling)
                rate = n / max(spent, 1e-6)
                n_next = int(min(per_chunk, max(1, rate * chunk_seconds)))
            fail_step = decode(np.asarray(carry[2]))[0]
            if throw and np.any(fail_step >= 0):
                _raise_failure(run, samples, saved, done, carry, handed)
            samples.append(saved)
            done += n
            bar.update(n * save_every)
            if not keep:
                chunk = _trajectory(run, samples, carry, first=handed)
                handed += len(chunk.t)
                samples = []
                if on_chunk is not None:
                    on_chunk(chunk)
                last = jax.tree.map(lambda a: a[-1:], saved)
            elif on_chunk is not None:
                on_chunk(partial(_trajectory, run, samples, carry))
            if np.all(fail_step >= 0):  # every member failed: nothing left to advance
                break
    finally:
        bar.close()
    wall = time.perf_counter() - start
    compile_time = min(_COMPILE_CLOCK.seconds - compiled, wall)
    stats = {"wall_time": wall, "compile_time": compile_time}
    if not keep:
        if handed == 0:  # no chunk ran (steps == 0 cannot happen): x0 alone
            return _trajectory(run, samples, carry, stats=stats)
        return _trajectory(run, [last], carry, first=handed - 1, stats=stats)
    return _trajectory(run, samples, carry, stats=stats)


def _trajectory(run: _Run, samples, carry, first: int = 0, stats=None) -> Trajectory:
    """The Trajectory of ``samples``, the run's saved samples from number ``first`` on."""
    x = jax.tree.map(lambda *parts: np.concatenate(parts, axis=0), *samples)
    n_saved = jax.tree.leaves(x)[0].shape[0]
    full = run.steps // run.save_every + 1 - first
    fail_step, codes = decode(np.asarray(carry[2]))
    if n_saved < full and np.all(fail_step >= 0):  # stopped early: every member failed
        x = jax.tree.map(lambda a: _pad(a, full), x)
        n_saved = full
    # a failed member's samples from its failing step on are not results
    last_valid = np.where(fail_step >= 0, (fail_step - 1) // run.save_every, first + n_saved - 1)
    index = np.arange(first, first + n_saved)
    invalid = index.reshape((-1,) + (1,) * fail_step.ndim) > last_valid
    if np.any(invalid):
        x = jax.tree.map(lambda a: _blank(a, invalid), x)
    if run.batched:
        x = jax.tree.map(lambda a: np.ascontiguousarray(np.moveaxis(a, 0, 1)), x)
    t = run.t0 + run.h * (run.save_every * index.astype(np.float64))
    g = None
    if run.compensated:
        x = x[0]
    if run.oriented:
        x, g = x
    integrator = run.integrator  # recorded as asked: Compensated(base) when compensated
    inner = integrator.base if isinstance(integrator, Compensated) else integrator
    if isinstance(inner, Oriented):
        inner = inner.base
    integrator = Compensated(inner) if run.compensated else inner
    reason = np.vectorize(lambda code: Reason(int(code)).label, otypes=[object])(codes)
    return Trajectory(
        system=run.system,
        integrator=integrator,
        h=run.h,
        t=t,
        x=x,
        orientation=g,
        steps=(first + n_saved - 1) * run.save_every,
        save_every=run.save_every,
        stats=stats or {},
        failed_step=fail_step,
        residual=np.where(fail_step >= 0, np.asarray(carry[3], dtype=np.float64), 0.0),
        reason=reason,
    )


def _pad(a: np.ndarray, n: int) -> np.ndarray:
    out = np.full((n, *a.shape[1:]), np.nan, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def _blank(a: np.ndarray, invalid: np.ndarray) -> np.ndarray:
    mask = invalid.reshape(invalid.shape + (1,) * (a.ndim - invalid.ndim))
    return np.where(mask, np.nan, a).astype(a.dtype)


def _raise_failure(run: _Run, samples, saved, done, carry, handed: int = 0):
    x = carry[0]
    fail_step, codes = (np.atleast_1d(a) for a in decode(np.asarray(carry[2])))
    failed = np.flatnonzero(fail_step >= 0)
    member = int(failed[np.argmin(fail_step[failed])])
    first = int(fail_step[member])
    residual = float(np.atleast_1d(np.asarray(carry[3]))[member])
    why = Reason(int(codes[member]))
    # Samples of this chunk strictly before the failing step are valid.
    valid = max(0, (first - 1) // run.save_every - done)
    kept = [*samples, jax.tree.map(lambda a: a[:valid], saved)]
    partial_run = dataclasses.replace(run, steps=(done + valid) * run.save_every)
    healthy = (carry[0], carry[1], jnp.full_like(carry[2], -1), carry[3])
    held = sum(jax.tree.leaves(part)[0].shape[0] for part in kept)
    empty = held == 0
    partial_traj = None if empty else _trajectory(partial_run, kept, healthy, first=handed)
    last = jax.tree.map(lambda a: np.asarray(a)[member] if run.batched else np.asarray(a), x)
    if run.oriented:
        last = last[0]
    raise StepFailure(
        step=first,
        residual=residual if math.isfinite(residual) else float("nan"),
        reason=(f"{why.text} at t = {run.t0 + run.h * (first - 1):.6g}, of {run.steps} steps"),
        trajectory=partial_traj,
        last_state=last,
        batch_index=member if run.batched else None,
        code=why,
        saved=handed + held,
    )
