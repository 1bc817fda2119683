"""The driver: advance a system with an integrator by ``jax.lax.scan``.

The run is split into chunks of whole save intervals (a save interval longer than a
chunk's budget into pieces, so that no call runs unbounded).  Each chunk is one jitted
call (cached by system type, integrator and chunk shape: parameters, h, the save
interval and the chunk's length are traced, so one program serves every chunk) whose
inner loop takes ``save_every`` steps between saved samples.  Only saved samples leave
the device, so memory is O(steps / save_every) (O(chunk) when they are streamed,
``keep=False``).  A batch of initial conditions (leading axis) is advanced by ``vmap``
of the step, in one call.

Failure is data.  Every step's status is tracked: the first failing step of each batch
member, its residual and its ``Reason`` are recorded and that member's state is frozen
there.  With ``throw=True`` (the default) ``simulate`` raises ``StepFailure`` after the
chunk that saw a failure, with the step number, the residual and every sample saved
before the failing step.  With ``throw=False`` it runs every healthy member to the end
and returns the trajectory with per-member ``failed_step`` (−1: none), ``residual`` and
``reason``; a failed member's samples after its failure are NaN, never a frozen state
that could pass for a result.

Longer than the house's 600 lines because the host driver is one loop: chunks sized by
time, progress, checkpoints, events, save times and failures are the same pass over the
run, and splitting it would pass its state between modules.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from mechint import _validate
from mechint._xla import loop_jit
from mechint.errors import InputError, StepFailure
from mechint.events import Crossings, Watching, initial_watch, locate, saved_at, stopped_steps
from mechint.integrate import blank_failed, decode, initial_carry, run_saves, settle_failures
from mechint.maps import Reason, entered, physical_time, shown, unwrap_all
from mechint.plan import Plan, make_plan
from mechint.trajectory import Trajectory, reason_labels

# Body-steps per chunk: long enough to amortise dispatch, short enough for progress.
_CHUNK_BODY_STEPS = 1 << 22
# ... and at least this many steps by default (a huge batch: each call hands its state
# to the host, and calls of one step would do that every step)
_MIN_CALL_STEPS = 64
# Saved numbers per chunk at most (16 MiB in float64): what a chunk's buffer holds
# whatever the size of a sample (a batch, a body of large n, its attitude).
_CHUNK_NUMBERS = 1 << 21


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


@loop_jit(static_argnames=("integrator", "capacity", "batched", "watching"))
def _advance(system, integrator, carry, h, save_every, n_saves, t0=None, *, capacity, batched,
             watching=None):  # fmt: skip
    """``n_saves`` (≤ ``capacity``) × ``save_every`` steps from ``carry`` (the loop shared
    with ``integrate``); returns the new carry, ``capacity`` saved states, the first
    ``n_saves`` filled, and the call's summary (a member failed in this call, some
    member has failed, every member has stopped: three flags, all the host needs to
    fetch between calls, where the failure record of a huge batch on a GPU would cost a
    transfer).  ``save_every`` and ``n_saves`` are traced, so runs that differ only in
    them (or in h, or the parameters) share one compiled program per power-of-two chunk
    size.  With ``watching`` (``events.Watching``: events, save times), ``carry`` is
    (carry, ``events.Watch``)."""
    state, saved = run_saves(
        system, integrator, carry, h, save_every, capacity,
        batched=batched, n_saves=n_saves, checkpoint=False, settled=False, watching=watching,
        t0=t0,
    )  # fmt: skip
    both: Any = (carry[0], *state) if watching else (carry, state, None)
    before, after, watch = both
    fail_step = decode(after[2])[0]
    summary = (
        jnp.any((before[2] < 0) & (after[2] >= 0)),
        jnp.any(fail_step >= 0),
        jnp.all(stopped_steps(watch, fail_step) >= 0),
    )
    return state, saved, summary


@loop_jit(static_argnames=("integrator", "batched"))
def _entered(system, integrator, x, h, *, batched):
    return entered(system, integrator, x, h, batched)


@loop_jit(static_argnames=("integrator", "batched"))
def _shown(system, integrator, z, h, *, batched):
    return shown(system, integrator, z, h, batched)


@loop_jit(static_argnames=("integrator", "events", "batched"))
def _locate(system, integrator, h, t0, watch, *, events, batched):
    return locate(system, integrator, h, t0, events, watch, batched)


@loop_jit(static_argnames=("integrator", "batched", "steps"))
def _saved_at(system, integrator, h, times, tau, watch, ends, end_tau, *, batched, steps):
    # the wrappers' parts too: ``_trajectory`` peels them, as from the samples
    return saved_at(system, integrator, h, times, tau, watch, ends, end_tau, batched, steps,
                    whole=True)  # fmt: skip


def _plan(n_saves: int, save_every: int, batch: int, chunk: int = _CHUNK_BODY_STEPS) -> int:
    """Saves per chunk: a divisor of n_saves near the budget when one exists (one compile)."""
    cap = max(1, chunk // (save_every * batch))
    if cap >= n_saves:
        return n_saves
    best = _validate.divisor_near(n_saves, cap, at_most=True)
    return best if 2 * best >= cap else cap


# The driver's clock (a test injects its own to size chunks without the wall clock).
_clock = time.perf_counter


class ChunkSizer:
    """How much the next compiled call does, when calls are sized by time
    (``chunk_seconds``): the first call is short (``first``), each next one is aimed at
    ``seconds`` from the rate the last one measured, damped (at most 4 times longer and
    at least half as long as the one before) and never shorter than the first (the
    floor) nor longer than ``cap``.  The damping and the floor keep a busy machine, whose
    measured rates jump, from breaking a run into thousands of tiny calls.  Without
    ``seconds``, every call is ``cap`` long.  The unit (saves, or steps of one save
    interval) is the caller's."""

    def __init__(self, first: int, cap: int, seconds: float | None):
        self.cap, self.seconds = max(1, cap), seconds
        self.floor = max(1, min(first, self.cap))
        self.size = self.cap if seconds is None else self.floor

    def next(self, done: int, spent: float) -> int:
        """The next call's size, after a call did ``done`` units in ``spent`` seconds."""
        if self.seconds is None:
            return self.size
        target = done / max(spent, 1e-9) * self.seconds
        damped = min(max(target, -(-self.size // 2)), 4 * self.size)
        self.size = int(min(self.cap, max(self.floor, damped)))
        return self.size


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
    compensated: bool | None = None,
    compensation=None,
    interrupt=None,
    step0: int = 0,
    events=None,
    max_events: int | None = None,
    save_at=None,
    loop_state=None,
    clock=None,
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
        Called after every chunk of steps that saved samples.  With ``keep=True``: with
        a function that builds the Trajectory of everything saved so far.  With
        ``keep=False``: with the Trajectory of the samples saved since the last call (x0
        included in the first), which the run then forgets (``mechint run`` streams them
        to its file).
    compensated
        Add each step's increment with Kahan–Babuška summation (``integrators.Compensated``;
        Hairer's GNI codes; a composition of Störmer–Verlet on a separable H adds each of
        its kicks and drifts so): round-off grows like √N instead of N ulp over N steps for
        maps that form their increment directly (the implicit midpoint rule, Störmer–Verlet
        on a separable H, their compositions, the Lie group maps).  None (the default):
        the map's choice, ``integrator.compensated_by_default(system)``: on for those of
        order 8 or more (the high-order compositions), off otherwise, and on when ``compensation``
        is given.  The correction at every saved sample is ``Trajectory.compensation``;
        ``Trajectory.integrator`` is then ``Compensated(...)``.
    compensation
        The correction to start from (default zero): a resumed compensated run passes
        the last one saved, and continues bit for bit.
    chunk_steps
        Body-steps (steps × batch size) per compiled call, rounded to whole save
        intervals where an interval is shorter (default 2^22, and at least 64 steps
        of the whole batch, as far as one call's saved samples fit in 2^21 numbers:
        every call hands the state to the host); a longer save interval is run in
        calls of about this many steps, so no call runs unbounded.
    chunk_seconds
        Aim for calls of about this many seconds (at most ``chunk_steps``): the first
        call is short (1/256 of the budget), the next ones are sized from the rate the
        last one measured (``ChunkSizer``: damped, with the first call's length as a
        floor), so that a slow map shows progress and checkpoints on time.  All calls
        share one compiled program; the states are the same as with any chunking.
    loop_state
        For a map that carries coordinates of its own between the states it shows
        (``Integrator.own_coordinates``: the Wisdom–Holman maps), the loop's state to
        start from instead of the one made from ``x0``: the ``Trajectory.loop_state`` of
        the run this one continues, which then continues bit for bit.
    clock
        A ``ReversibleAdaptive`` run's clock (t, ρ) to start from (one per member): the
        ``Trajectory.clock[-1]`` of the run this one continues (its last state as
        ``x0``, the same ``t0``), which then continues bit for bit; default t = 0,
        ρ = 1/σ(x0).
    step0
        Steps taken before ``x0`` by the run this one continues (``mechint run
        --resume``): failures are numbered from the whole run's start.
    interrupt
        Called with no argument after every compiled call (at most about
        ``chunk_seconds`` apart, whatever the save interval); an exception it raises
        (``KeyboardInterrupt`` on a signal, for ``mechint run``) ends the run there.
    events, max_events
        ``mechint.Event`` s (or one) whose crossings are located on the map
        (``mechint.events``), at most ``max_events`` (default 64) kept per member and
        event: ``Trajectory.events[name]`` (``events.Crossings``: times, states, count,
        overflowed).  A terminal event ends its member's run at the crossing (its later
        samples are NaN; the run stops when every member has ended).
    save_at
        Times (within the run, in its direction) at which to save the state instead of
        every ``save_every``-th step (leave that at 1): a partial step of the map from
        the last state before each time (the state itself at a step's time), so
        ``Trajectory.t`` is these times and ``save_every`` is recorded as 0.  Held on
        the device until the run ends (not with ``keep=False``).
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
        On bad input, before any step (``plan.make_plan``).
    StepFailure
        With ``throw=True``, when a step fails (singular solve, Newton not converged,
        wrong branch, non-finite state): it names the step, residual and reason and
        carries every sample saved before it, with the failure recorded.
    """
    plan = make_plan(system, integrator, x0, h, steps, save_every, t0=t0, dtype=dtype,
                     orientation=orientation, compensated=compensated,
                     compensation=compensation, step0=step0, events=events,
                     max_events=max_events, save_at=save_at, loop_state=loop_state,
                     clock=clock)  # fmt: skip
    if plan.save_at is not None and not keep:
        raise InputError("keep", "save_at holds its states until the run ends",
                         "keep=True, or stream regular samples (save_every)")  # fmt: skip
    if chunk_steps is None:  # a call's steps: 2^22 body-steps, and at least 64 steps
        chunk = max(_CHUNK_BODY_STEPS, _MIN_CALL_STEPS * plan.batch)
    else:
        chunk = _validate.count("chunk_steps", chunk_steps)
    if chunk_seconds is not None and not chunk_seconds > 0:
        raise InputError("chunk_seconds", f"must be > 0, got {chunk_seconds!r}")
    return _drive(plan, chunk, chunk_seconds, progress=progress, on_chunk=on_chunk,
                  interrupt=interrupt, throw=throw, keep=keep)  # fmt: skip


def _drive(plan: Plan, chunk: int, chunk_seconds, *, progress, on_chunk, interrupt, throw,
           keep) -> Trajectory:  # fmt: skip
    """The host loop of a run: compiled calls of whole saves, or of pieces of one save
    interval where a call's budget (in steps, or in time: ``ChunkSizer``) is shorter
    than the interval; failures, progress, ``on_chunk`` and ``interrupt`` between
    calls."""
    system, integrator, batched = plan.system, plan.integrator, plan.batched
    save_every, n_saves = plan.save_every, plan.n_saves
    real = jnp.dtype(plan.dtype)
    budget = max(1, chunk // plan.batch)  # steps per call at most
    if save_every <= budget:  # whole saves per call, as many as the budgets allow
        per_chunk = _plan(n_saves, save_every, plan.batch, chunk)
        per_chunk = min(per_chunk, max(1, _CHUNK_NUMBERS // plan.numbers))
        cap = per_chunk * save_every
    else:
        per_chunk, cap = 1, budget
    sizer = ChunkSizer(max(1, cap // 256), cap, chunk_seconds)  # in steps
    size = capacity(min(per_chunk, n_saves), plan.numbers)
    x0_j = jax.tree.map(lambda a: jnp.asarray(a, dtype=real), plan.x0)
    h_j = jnp.asarray(plan.h, dtype=real)
    z0 = x0_j
    if plan.loop_state is not None:  # a continued run: where its loop was
        z0 = jax.tree.map(lambda a: jnp.asarray(a, dtype=real), plan.loop_state)
    elif integrator.own_coordinates:
        z0 = _entered(system, integrator, x0_j, h_j, batched=batched)
    carry = initial_carry(z0, plan.batch if batched else None, real)
    t0_j = jnp.asarray(plan.t0, dtype=real)
    watch = None  # the record of events and save times (events.Watch), when watched
    times, steps_at, _, per_step = plan.save_at if plan.save_at is not None else ((), None, None, 1)
    watching = Watching(plan.events, plan.max_events, len(times), per_step)
    if watching:
        watch = initial_watch(watching, system, integrator, x0_j, t0_j, batched, steps_at, z0)
    samples = [jax.tree.map(lambda a: np.asarray(a)[None], plan.x0)]
    start, compiled = _clock(), _COMPILE_CLOCK.seconds
    bar = tqdm(
        total=plan.steps, unit="step", unit_scale=True, delay=2.0, disable=not progress,
        file=sys.stderr, leave=False,
    )  # fmt: skip
    handed, last = 0, None  # samples handed to on_chunk and forgotten (keep=False)
    calls, done, into = 0, 0, 0  # compiled calls; saves done; steps into the next save
    if sizer.size < save_every and not keep:  # the first sample may be long in coming
        part = _trajectory(plan, samples, carry, steps=0, watch=watch)
        handed, samples, last = 1, [], samples[0]
        if on_chunk is not None:
            on_chunk(part)
    try:
        while done < n_saves:
            whole = into == 0 and sizer.size >= save_every
            if whole:
                every, n = save_every, min(sizer.size // save_every, per_chunk, n_saves - done)
            else:  # a piece of one save interval
                every, n = min(sizer.size, save_every - into), 1
            began, compiling, before = _clock(), _COMPILE_CLOCK.seconds, carry
            state, saved, summary = _advance(
                system, integrator, carry if watch is None else (carry, watch), plan.h,
                jnp.asarray(every, dtype=jnp.int64), jnp.asarray(n, dtype=jnp.int64), t0_j,
                capacity=size, batched=batched, watching=watching,
            )  # fmt: skip
            carry, watch = (state, None) if watch is None else state
            calls += 1
            # a member failed in this call; some member failed; every member failed or
            # ended at a terminal event (three flags: the host fetches no failure record)
            failed_now, failed, ended = (bool(f) for f in jax.device_get(summary))
            if failed_now:
                carry = settle_failures(system, integrator, plan.h, batched, before, carry)
            spent = _clock() - began - (_COMPILE_CLOCK.seconds - compiling)
            sizer.next(n * every, spent)
            if not ended:  # (a call where every member stopped ran fewer steps than asked)
                bar.update(n * every)
            if not whole:
                into += every
                if into < save_every and not ended:  # nothing to save yet
                    if throw and failed:
                        _raise_failure(plan, samples, saved, done, carry, handed, n=0,
                                       watch=watch)  # fmt: skip
                    if interrupt is not None:
                        interrupt()
                    continue
                into = 0  # the interval is complete (or its sample is a failed one's NaN)
            # to the host only now (a piece of an interval saves nothing): a copy of the n
            # saves, as a view would keep the whole buffer alive
            saved = jax.tree.map(lambda a, n=n: np.array(a[:n]), jax.device_get(saved))
            if throw and failed:
                _raise_failure(plan, samples, saved, done, carry, handed, n=n, watch=watch)
            samples.append(saved)
            done += n
            if not keep:
                part = _trajectory(plan, samples, carry, first=handed, watch=watch)
                handed += len(part.t)
                samples = []
                if on_chunk is not None:
                    on_chunk(part)
                last = jax.tree.map(lambda a: a[-1:], saved)
            elif on_chunk is not None:
                on_chunk(partial(_trajectory, plan, samples, carry, watch=watch))
            if ended:  # nothing left to advance (the rest is NaN, handed above)
                break
            if interrupt is not None:
                interrupt()
    finally:
        bar.close()
    wall = _clock() - start
    compile_time = min(_COMPILE_CLOCK.seconds - compiled, wall)
    stats = {"wall_time": wall, "compile_time": compile_time, "calls": calls}
    if not keep:
        if handed == 0:  # no chunk saved (every member failed in the first interval)
            return _trajectory(plan, samples, carry, stats=stats, watch=watch)
        return _trajectory(plan, [last], carry, first=handed - 1, stats=stats, watch=watch)
    return _trajectory(plan, samples, carry, stats=stats, watch=watch)


def _host(watch):
    """The events' record with ``stop`` on the host (None without events)."""
    return None if watch is None else watch._replace(stop=np.asarray(watch.stop))


def _at_times(plan: Plan, watch, ends, end_tau, steps: int):
    """(times, states at them, 0): the save times a trajectory of the run's first
    ``steps`` steps holds (those its steps reach), the states located (``_saved_at``;
    NaN where a member failed or ended before)."""
    times, K, tau, _ = plan.save_at
    real = jnp.dtype(plan.dtype)
    if end_tau is None:
        end_tau = np.full(np.shape(ends), np.inf)
    x = _saved_at(plan.system, plan.integrator, jnp.asarray(plan.h, real),
                  jnp.asarray(times, real), jnp.asarray(tau, real), watch, jnp.asarray(ends),
                  jnp.asarray(end_tau, real), batched=plan.batched, steps=plan.steps)  # fmt: skip
    reach = K + (tau != 0)
    n = int(np.sum(reach <= steps))  # nondecreasing: a prefix
    axis = 1 if plan.batched else 0
    x = jax.tree.map(lambda a: np.asarray(a).take(np.arange(n), axis=axis), x)
    return np.asarray(times[:n], dtype=np.float64), x, 0


def _slots_in_use(watch, capacity: int) -> int:
    """The crossing slots a run's events used, at most (every member and event), rounded
    up to a power of two within ``capacity``: locating costs that many, not the
    capacity (10⁵ slots a member with a few crossings took 10 s after a 0.5 s loop)."""
    used = max(int(np.max(np.minimum(np.asarray(w.n), capacity), initial=0))
               for w in watch.each)  # fmt: skip
    return min(capacity, 1 << max(used - 1, 0).bit_length())


def _pad_slots(a, capacity: int, axis: int):
    """``a`` with NaN slots appended along ``axis`` up to ``capacity``."""
    pad = [(0, 0)] * a.ndim
    pad[axis] = (0, capacity - a.shape[axis])
    return np.pad(a, pad, constant_values=np.nan)


def _crossings(plan: Plan, watch, steps: int) -> tuple[dict, np.ndarray | None]:
    """(the events' crossings of the run's first ``steps`` steps, located (``_locate``)
    and on the host; per member the |τ| at which a terminal event ended the run).  A
    crossing in a later step (other members ran on in the chunk whose failure stopped
    the run) is not the trajectory's."""
    if watch is None or not plan.events:
        return {}, None
    real = jnp.dtype(plan.dtype)
    capacity = int(watch.each[0].kk.shape[-1])
    slots = _slots_in_use(watch, capacity)
    axis = 1 if plan.batched else 0
    trimmed = watch
    if slots < capacity:  # locate only the slots in use (a power of two: few programs)
        cut = partial(jax.lax.slice_in_dim, start_index=0, limit_index=slots, axis=axis)
        trimmed = watch._replace(
            each=tuple(w._replace(xk=jax.tree.map(cut, w.xk), kk=cut(w.kk)) for w in watch.each)
        )
    found, end_tau = _locate(plan.system, plan.integrator, jnp.asarray(plan.h, real),
                             jnp.asarray(plan.t0, real), trimmed, events=plan.events,
                             batched=plan.batched)  # fmt: skip
    out = {}
    for (key, c), w in zip(found.items(), watch.each, strict=True):
        c = jax.tree.map(np.asarray, c)
        if slots < capacity:  # back to the run's capacity: empty slots are NaN
            c = c._replace(t=_pad_slots(c.t, capacity, axis),
                           x=jax.tree.map(lambda a: _pad_slots(a, capacity, axis), c.x),
                           overflowed=np.asarray(w.n) > capacity)  # fmt: skip
        within = np.asarray(w.kk) < steps  # slots are in step order: a prefix
        count = np.minimum(
            np.asarray(c.count),
            np.sum(within & (np.arange(within.shape[-1]) < np.asarray(c.count)[..., None]), -1),
        )
        valid = np.arange(within.shape[-1]) < count[..., None]

        def blank(a, valid=valid):
            return np.where(valid.reshape(valid.shape + (1,) * (a.ndim - valid.ndim)), a, np.nan)

        overflowed = np.asarray(c.overflowed) & (count == np.asarray(c.count))
        out[key] = Crossings(blank(c.t), jax.tree.map(blank, c.x), count.astype(np.int64),
                             overflowed)  # fmt: skip
    return out, np.asarray(end_tau)


def _trajectory(plan: Plan, samples, carry, first: int = 0, stats=None, steps=None,
                fail=None, watch=None, reached=None) -> Trajectory:  # fmt: skip
    """The Trajectory of ``samples``, the run's saved samples from number ``first`` on
    (``steps``: the run's length when it stopped early; ``fail``: the failure record,
    by default the carry's; ``watch``: the record of events and save times, of the
    first ``reached`` steps (default: those the samples cover))."""
    fail_step, codes, residual = fail or _failure(carry)
    full = (plan.steps if steps is None else steps) // plan.save_every + 1 - first
    ends = stopped_steps(_host(watch), fail_step)  # a failure, or a terminal event
    if plan.batched and not np.any(ends >= 0):  # one pass into the batch's layout
        x = jax.tree.map(_members_first, *samples)
        n_saved = jax.tree.leaves(x)[0].shape[1]
    else:
        x = jax.tree.map(lambda *parts: np.concatenate(parts, axis=0), *samples)
        n_saved = jax.tree.leaves(x)[0].shape[0]
        if n_saved < full and np.all(ends >= 0):  # stopped early: every member failed or ended
            x = jax.tree.map(lambda a: _pad(a, full), x)
            n_saved = full
        x = blank_failed(x, ends, np.arange(first, first + n_saved) * plan.save_every)
        if plan.batched:
            x = jax.tree.map(lambda a: np.ascontiguousarray(np.moveaxis(a, 0, 1)), x)
    index = np.arange(first, first + n_saved)
    t = plan.t0 + plan.h * (plan.save_every * index.astype(np.float64))
    covered = (first + n_saved - 1) * plan.save_every  # the steps this trajectory holds
    if reached is None:
        reached = covered
    crossings, end_tau = _crossings(plan, watch, reached)
    save_every = plan.save_every
    if plan.save_at is not None:  # the states at the save times instead of the samples
        t, x, save_every = _at_times(plan, watch, ends, end_tau, reached)
        covered = reached
    own = physical_time(plan.system, plan.integrator, x)
    if own is not None and not plan.batched and plan.save_at is None:  # variable steps
        t = plan.t0 + np.asarray(own, dtype=np.float64)
    x, extras = unwrap_all(plan.integrator, x)
    loop = None  # the map's own coordinates at the last sample (what a continued run needs)
    if plan.integrator.own_coordinates:
        loop = jax.tree.map(np.asarray, jax.device_get(carry[0]))
    stopped_step, stopped_by = _stopped(plan, _host(watch), crossings, reached)
    if plan.step0:  # a continued run: its failures numbered from the whole run's start
        fail_step = np.where(fail_step >= 0, fail_step + plan.step0, fail_step)
        stopped_step = np.where(stopped_step >= 0, stopped_step + plan.step0, stopped_step)
    return Trajectory(
        system=plan.system,
        integrator=plan.recorded,
        h=plan.h,
        t=t,
        x=x,
        orientation=extras.get("orientation"),
        compensation=extras.get("compensation"),
        clock=extras.get("clock"),
        tangent=extras.get("tangent"),
        steps=covered,
        save_every=save_every,
        stats={"steps_requested": plan.steps, **(stats or {})},
        failed_step=fail_step,
        residual=residual,
        reason_code=np.asarray(codes, dtype=np.int8),
        events=crossings,
        stopped_step=stopped_step,
        stopped_by=stopped_by,
        loop_state=loop,
    )


def _stopped(plan: Plan, watch, crossings: dict, reached: int):
    """Per member, the step at whose end a terminal event ended the run (−1: none did,
    within the first ``reached`` steps) and that event's name ("" where none): of the
    terminal events crossed in that step, the one crossed first."""
    if watch is None or not any(e.terminal for e in plan.events):
        return -1, ""
    stop = np.asarray(watch.stop, dtype=np.int64)
    stop = np.where((stop >= 0) & (stop <= reached), stop, -1)
    by = np.full(stop.shape, "", dtype=object)
    first = np.full(stop.shape, np.inf)
    sign = 1.0 if plan.h > 0 else -1.0
    for e, w in zip(plan.events, watch.each, strict=True):
        if not e.terminal:
            continue
        t = np.asarray(crossings[e.key].t)[..., 0] * sign  # a terminal event's one crossing
        t = np.nan_to_num(t, nan=np.inf)  # not located: crossed after any located one
        here = (stop >= 0) & (np.asarray(w.n) > 0) & (np.asarray(w.kk)[..., 0] + 1 == stop)
        take = here & (t < first)
        by = np.where(take, e.key, by)
        first = np.where(take, t, first)
    return stop, by


def _failure(carry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(failed step, reason code, residual) per member from the loop's carry."""
    fail_step, codes = decode(np.asarray(carry[2]))
    residual = np.where(fail_step >= 0, np.asarray(carry[3], dtype=np.float64), 0.0)
    return fail_step, codes, residual


def _members_first(*parts: np.ndarray) -> np.ndarray:
    """Parts of samples (n_i, B, ...) joined as (B, Σ n_i, ...), written once."""
    out = np.empty((parts[0].shape[1], sum(len(p) for p in parts), *parts[0].shape[2:]),
                   dtype=np.result_type(*parts))  # fmt: skip
    at = 0
    for p in parts:
        out[:, at : at + len(p)] = np.moveaxis(p, 0, 1)
        at += len(p)
    return out


def _pad(a: np.ndarray, n: int) -> np.ndarray:
    out = np.full((n, *a.shape[1:]), np.nan, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def _raise_failure(plan: Plan, samples, saved, done, carry, handed: int, n: int, watch=None):
    """StepFailure for the earliest failing member, with every sample saved before its
    failing step and the failure recorded (every member that failed by that step)."""
    fail_step, codes, residual = (np.atleast_1d(a) for a in _failure(carry))
    failed = np.flatnonzero(fail_step >= 0)
    member = int(failed[np.argmin(fail_step[failed])])
    first = int(fail_step[member])
    why = Reason(int(codes[member]))
    # Samples of this chunk strictly before the failing step are valid.
    valid = min(n, max(0, (first - 1) // plan.save_every - done))
    kept = [*samples, jax.tree.map(lambda a: a[:valid], saved)]
    # the run stopped at step `first`: members failing later did not fail in it
    later = fail_step > first
    record = tuple(np.where(later, empty, a) for a, empty in
                   zip((fail_step, codes, residual), (-1, 0, 0.0), strict=True))  # fmt: skip
    if not plan.batched:
        record = tuple(np.asarray(a[0]) for a in record)
    held = sum(jax.tree.leaves(part)[0].shape[0] for part in kept)
    partial_traj = None
    if held:
        covered = (done + valid) * plan.save_every
        # crossings and save times up to the failing step's start, whatever the samples
        partial_traj = _trajectory(plan, kept, carry, first=handed, steps=covered, fail=record,
                                   watch=watch, reached=first - 1)  # fmt: skip
    x = carry[0]
    if plan.integrator.own_coordinates:  # the state the frozen loop's state shows
        x = _shown(plan.system, plan.integrator, x, jnp.asarray(plan.h, jnp.dtype(plan.dtype)),
                   batched=plan.batched)  # fmt: skip
    x = unwrap_all(plan.integrator, x)[0]
    last = jax.tree.map(lambda a: np.asarray(a)[member] if plan.batched else np.asarray(a), x)
    res = float(residual[member])
    failed, codes_kept, res_kept = record
    failure = {
        "failed_step": np.where(failed >= 0, failed + plan.step0, failed).astype(np.int64),
        "residual": np.asarray(res_kept, dtype=np.float64),
        "reason": reason_labels(codes_kept).astype(str),
    }
    raise StepFailure(
        step=first + plan.step0,
        residual=res,
        reason=f"{why.text} at t = {plan.t0 + plan.h * (first - 1):.6g}, of {plan.steps} steps",
        trajectory=partial_traj,
        last_state=last,
        batch_index=member if plan.batched else None,
        code=why,
        saved=handed + held,
        failure=failure,
    )
