"""Events: where a run crosses a surface, located on the map itself.

``Event(condition, direction, terminal, name)``: ``condition(t, x) -> scalar`` (any JAX
function of the time and the state).  The step loop evaluates every condition after
every step (one evaluation a step and event, nothing else while nothing crosses); a
sign change between t_k and t_{k+1} (in the event's direction) records the step's
start x_k and k in fixed-capacity buffers (``max_events`` per member; the count goes
on past them, so an overflow is reported, never silently cut).  A terminal event
freezes its member at x_k.

After the loop, each recorded crossing is located on the discrete flow: the root of
τ ↦ condition(t_k + τ, Φ_τ(x_k)) in (0, h] (every map of ours takes any step size) by
a bracketing solver (Illinois' regula falsi, with a bisection every fourth iteration:
superlinear, and never slower than bisection by more than 4×; a point that would fall
within 2 ulp of an end is put 2 ulp inside it, so that an end found at the root is
bracketed at the next evaluation) to a bracket of a few ulp, all crossings of all
members and events at once (the program holds the map's step once, the solver's, whatever
the number of events).  The crossing's state is Φ_τ(x_k), the solver's own evaluation at
the bracket's end it returns: a point of the map's own flow, not an interpolant's.  Its
derivative (``jax.grad`` through a run with events) is the implicit function theorem's,
dτ = −∂_θF / ∂_τF, from a second trace of the step that only a differentiated program
holds.

A zero of the condition exactly at a step counts once (a crossing is a change from
strictly one side to the other side or zero); two crossings inside one step cancel
and are not seen (take smaller steps than the surface's features).

Longer than the house's 600 lines because events and save times share the loop's
record (``Watch``): what the step loop keeps and what the location afterwards reads are
defined together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from mechint._validate import traced
from mechint.errors import InputError
from mechint.maps import Integrator, physical_time, shown, unwrap_all

# Iterations of the bracketing solver at most (Illinois converges in ~10; the bisection
# every fourth iteration bounds it by 4 × 64 for any float64 bracket).
_MAX_ITERATIONS = 256
# A closed bracket is a root where f at its two ends is within this fraction of f's change
# over the step (a smooth f: a few ulp of it; a jump: the jump)
_JUMP = 1e-3
# The default capacity: crossings kept per member and event.
MAX_EVENTS = 64
# Events a run watches at most: each adds its condition and record to the compiled loop
# and its condition to the location program, which all events share (2-core CPU, Kepler,
# Störmer–Verlet, a run of 1000 steps compiled and run, 2026-12-06: 0.9 s for one event,
# 4.7 s for 32, 12 s for 64).
MOST_EVENTS = 64


@dataclasses.dataclass(frozen=True, eq=False)
class Event:
    """A surface ``condition(t, x) = 0`` whose crossings a run records.

    ``condition``: any JAX function of the time and the (unbatched) state returning a
    scalar; ``direction``: +1 counts crossings from below (condition rising through
    zero), −1 from above, 0 both; ``terminal``: the member's run ends at its first
    crossing (its samples after it are NaN; other members go on); ``name``: the key in
    ``Solution.events`` / ``Trajectory.events`` (default: the condition's name);
    ``where``: a function like the condition; a crossing counts only where it is > 0 at
    the end of the step that crossed (a transit: the planet in front of the star, not
    behind it).  ``uses_system``: the condition (and ``where``) is ``condition(t, x,
    system)`` and reads the run's system (its parameters, traced under ``jax.grad``: a
    planet's mass in a transit's condition, ``systems.nbody.transits``).  Hashed by
    identity: reuse one Event to reuse a compiled run."""

    condition: Callable[..., Any]
    direction: int = 0
    terminal: bool = False
    name: str | None = None
    uses_system: bool = False
    where: Callable[..., Any] | None = None

    def __post_init__(self):
        if not callable(self.condition):
            raise InputError(
                "condition", f"expected a function condition(t, x), got {self.condition!r}"
            )
        if isinstance(self.direction, bool) or self.direction not in (-1, 0, 1):
            raise InputError(
                "direction",
                f"must be -1, 0 or +1, got {self.direction!r}",
                "+1: crossings upwards, -1: downwards, 0: both",
            )
        if not isinstance(self.terminal, bool):
            raise InputError("terminal", f"must be True or False, got {self.terminal!r}")
        if not isinstance(self.uses_system, bool):
            raise InputError("uses_system", f"must be True or False, got {self.uses_system!r}")
        if self.where is not None and not callable(self.where):
            raise InputError("where", f"expected a function where(t, x) > 0, got {self.where!r}")
        if self.name is not None and not (isinstance(self.name, str) and self.name.isidentifier()):
            raise InputError(
                "name", f"must be a name like 'q1' or 'periapsis', got {self.name!r}",
                "letters, digits and _ (it names the event's arrays in files)",
            )  # fmt: skip

    @property
    def key(self) -> str:
        """The event's name: ``name``, else the condition's (a lambda's: "event")."""
        own = getattr(self.condition, "__name__", "")
        return self.name or (own if own.isidentifier() else "event")


class Crossings(NamedTuple):
    """One event's crossings in a run (a pytree).

    ``t``: (..., max_events) crossing times, NaN past ``count``; ``x``: the states there
    (leaves (..., max_events, *state)); ``count``: crossings kept per member (at most
    ``max_events``); ``overflowed``: more crossings happened than were kept (the first
    ``max_events`` are kept).  Leading axes: the batch's, if any."""

    t: Any
    x: Any
    count: Any
    overflowed: Any

    def __repr__(self) -> str:
        """One line: the counts per member, the capacity and the overflows (not the data)."""
        try:
            count = np.asarray(self.count)
            over = int(np.sum(np.asarray(self.overflowed)))
        except (TypeError, jax.errors.ConcretizationTypeError):  # traced: shapes only
            return f"Crossings(t{tuple(np.shape(self.t))})"
        counts = str(int(count)) if count.ndim == 0 else f"{count.min()}..{count.max()} a member"
        return (f"Crossings({counts} crossings, {np.shape(self.t)[-1]} slots"
                + (f", {over} overflowed" if over else "") + ")")  # fmt: skip

    def trimmed(self) -> list:
        """The crossings per member without the padding: a list of (t, x) with
        ``count`` entries each (one pair for a single run)."""
        count = np.asarray(self.count)
        t = np.asarray(self.t)
        xs = jax.tree.map(np.asarray, self.x)
        if count.ndim == 0:
            n = int(count)
            return [(t[:n], jax.tree.map(lambda a: a[:n], xs))]
        return [(t[b, : int(c)], jax.tree.map(lambda a, b=b, c=c: a[b, : int(c)], xs))
                for b, c in enumerate(count)]  # fmt: skip


class _Watched(NamedTuple):
    """One event's record in the loop: the condition at the last state ``g``, the
    crossings seen ``n`` (may pass the capacity), their step's start state ``xk`` (as
    the loop carries it: ``locate`` shows it) and step number ``kk`` (capacity
    slots)."""

    g: Any
    n: Any
    xk: Any
    kk: Any


class _At(NamedTuple):
    """The save times' record in the loop: ``steps`` K_j (nondecreasing: the time T_j
    lies in [t_{K_j}, t_{K_j + 1})), the next slot ``j`` and the states x_{K_j} written
    so far (``xs``, as the loop carries them: ``saved_at`` shows them)."""

    steps: Any
    j: Any
    xs: Any


class Watch(NamedTuple):
    """What the loop watches besides the state: ``stop`` per member (−1, or the step at
    whose end a terminal event was crossed: the member stays at that step's start), one
    ``_Watched`` per event, and the save times' record (``_At``, or None)."""

    stop: Any
    each: tuple
    at: Any = None


@dataclasses.dataclass(frozen=True)
class Watching:
    """What a run watches (a static argument of the compiled loop): its ``events``,
    ``capacity`` crossings kept per member and event, ``times`` save times, at most
    ``per_step`` of them in one step."""

    events: tuple = ()
    capacity: int = 1
    times: int = 0
    per_step: int = 1  # save times in one step at most

    def __bool__(self) -> bool:
        return bool(self.events) or self.times > 0


def check_events(events, system, x0, batched: bool, max_events) -> tuple[tuple[Event, ...], int]:
    """``events`` as a tuple of Events with distinct names, each condition returning a
    scalar for this system's state (checked by tracing it once, no numbers computed);
    ``max_events`` a positive int.  ``InputError`` naming the parameter otherwise."""
    cap = MAX_EVENTS if max_events is None else max_events
    if isinstance(cap, bool) or not isinstance(cap, int | np.integer) or cap < 1:
        raise InputError("max_events", f"must be a positive integer, got {max_events!r}"[:200])
    if events is None:
        return (), int(cap)
    if isinstance(events, Event):
        events = (events,)
    if not isinstance(events, Sequence) or not all(isinstance(e, Event) for e in events):
        raise InputError(
            "events", f"expected a list of mechint.Event, got {events!r}"[:300],
            "wrap each condition: mechint.Event(condition, direction=..., terminal=...)",
        )  # fmt: skip
    events = tuple(events)
    if len(events) > MOST_EVENTS:
        raise InputError(
            "events", f"{len(events)} events, more than the {MOST_EVENTS} a run watches (each "
            "is compiled into the step loop and located on its own: about 0.5 s each)",
            "watch fewer, or one condition for several surfaces (e.g. their product, or a "
            "sine of a periodic coordinate)",
        )  # fmt: skip
    keys = [e.key for e in events]
    if len(set(keys)) != len(keys):
        raise InputError("events", f"two events have the same name ({keys})", "give each a name=")
    one = jax.tree.map(lambda a: a[0], x0) if batched else x0
    spec = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a)), one)
    t = jax.ShapeDtypeStruct((), jax.tree.leaves(spec)[0].dtype)
    for e, f in [(ev, f) for ev in events for f in (ev.condition, ev.where) if f is not None]:
        try:
            if e.uses_system:
                out = jax.eval_shape(f, t, spec, system)
            else:
                out = jax.eval_shape(f, t, spec)
        except Exception as exc:  # the user's function, traced once: say which one failed
            raise InputError(
                "events", f"condition of event {e.key!r} failed on a state of {system!r}: "
                f"{type(exc).__name__}: {exc}"[:400],
                "write condition(t, x) for the system's state (x as x0 has it, unbatched)",
            ) from None  # fmt: skip
        if not isinstance(out, jax.ShapeDtypeStruct) or out.shape != ():
            got = getattr(out, "shape", type(out).__name__)
            raise InputError(
                "events", f"condition of event {e.key!r} must return a scalar, got {got}",
                "return one number, e.g. x[0][1] for the surface q2 = 0",
            )  # fmt: skip
        if not jnp.issubdtype(out.dtype, jnp.floating):  # a sign change needs a real value
            raise InputError(
                "events", f"condition of event {e.key!r} must return a real floating number, "
                f"got {out.dtype}",
                "return the surface's function, e.g. x[0][1], not a comparison (x[0][1] > 0) "
                "or a complex number",
            )  # fmt: skip
    return events, int(cap)


def _event_time(system, integrator: Integrator, t0, t, x):
    """The time an event sees at state x (one member): the driver's t, or with variable
    steps the physical time t0 + the state's clock (``maps.physical_time``)."""
    own = physical_time(system, integrator, x)
    return t if own is None else (t0 + own).astype(t.dtype)


def _condition(event: Event, system, integrator: Integrator, t0, batched: bool, where=False):
    """``event.condition`` (``where``: ``event.where``) on the loop's (wrapped, maybe
    batched) state at its time (``_event_time``), as the run's real type."""
    f = cast(Callable[..., Any], event.where if where else event.condition)

    def g(t, x):
        base = unwrap_all(integrator, x)[0]
        t = _event_time(system, integrator, t0, t, x)
        value = f(t, base, system) if event.uses_system else f(t, base)
        return jnp.asarray(value, dtype=t.dtype)

    return jax.vmap(g, in_axes=(None, 0)) if batched else g


def _crossed(before, after, direction: int):
    """Whether the condition crossed zero from ``before`` to ``after``: from strictly
    one side to the other side or zero (a zero at a step counts once)."""
    up = (before < 0) & (after >= 0)
    down = (before > 0) & (after <= 0)
    return up if direction > 0 else down if direction < 0 else up | down


def initial_watch(watching: Watching, system, integrator, x0, t0, batched: bool,
                  steps_at=None, z0=None) -> Watch:  # fmt: skip
    """The record at the start: the conditions at x0, nothing crossed; the loop's state
    at x0 (``z0``, a map with coordinates of its own; x0 itself by default) written for
    the save times in the first step (``steps_at``: their K_j, ``save_steps``).  The
    buffers hold loop states (``locate`` and ``saved_at`` show them)."""
    events, capacity = watching.events, watching.capacity
    loop = x0 if z0 is None else z0
    leaf = jax.tree.leaves(x0)[0]
    lead = (leaf.shape[0],) if batched else ()
    t0 = jnp.asarray(t0, dtype=leaf.dtype)  # the loop's time rule (``_time``) at k = 0
    each = tuple(
        _Watched(
            _condition(e, system, integrator, t0, batched)(t0, x0),
            jnp.zeros(lead, dtype=jnp.int32),
            jax.tree.map(lambda a: jnp.zeros((*lead, capacity, *a.shape[len(lead):]), a.dtype),
                         loop),
            jnp.zeros((*lead, capacity), dtype=jnp.int64),
        )
        for e in events
    )  # fmt: skip
    at = None
    if watching.times:
        K = jnp.asarray(steps_at, dtype=jnp.int64)
        first = K == 0  # nondecreasing: a prefix
        axis = len(lead)

        def fill(a):
            shape = (*lead, K.shape[0], *a.shape[axis:])
            mask = first.reshape((1,) * axis + (-1,) + (1,) * (a.ndim - axis))
            return jnp.where(mask, jnp.expand_dims(a, axis), jnp.zeros(shape, a.dtype))

        at = _At(K, jnp.sum(first).astype(jnp.int64), jax.tree.map(fill, loop))
    return Watch(jnp.full(lead, -1, dtype=jnp.int64), each, at)


def freeze(frozen, old, new):
    """Per batch member (or slot): ``old`` where ``frozen`` (the leading axes of the
    leaves), else ``new``: the one per-member select of the loop (``integrate``'s too)."""
    return jax.tree.map(
        lambda a, b: jnp.where(frozen.reshape(frozen.shape + (1,) * (a.ndim - frozen.ndim)), a, b),
        old,
        new,
    )


def stand_in(held, x):
    """``x`` with each held member (``held``: per member of the batch x) replaced by the
    first member not held (member 0 when all are): the input of a step whose result the
    loop discards for the held ones (``Integrator.batch_branches``)."""
    live = jnp.argmin(held)

    def one(a):
        return jnp.where(held.reshape(held.shape + (1,) * (a.ndim - held.ndim)), a[live], a)

    return jax.tree.map(one, x)


def _blank(valid, x):
    """``x`` where ``valid`` (its leading axes), NaN elsewhere: not a result."""
    return freeze(valid, x, jax.tree.map(lambda a: jnp.full_like(a, jnp.nan), x))


def _record(w: _Watched, crossed, x, k, batched: bool) -> _Watched:
    """``w`` with x (the crossing step's start) and k written in each crossing member's
    next slot (while it has one), and the crossings counted."""
    capacity = w.kk.shape[-1]

    def one(xk, kk, n, hit, x):
        slot = jnp.minimum(n, capacity - 1)
        write = hit & (n < capacity)

        def put(buf, v):
            return buf.at[slot].set(jnp.where(write, v, buf[slot]))

        return jax.tree.map(put, xk, x), put(kk, k)

    put = jax.vmap(one) if batched else one
    xk, kk = put(w.xk, w.kk, w.n, crossed, x)
    return w._replace(n=w.n + crossed.astype(w.n.dtype), xk=xk, kk=kk)


def watched_step(one_step, watching: Watching, system, integrator, t0, h, batched: bool):
    """``one_step`` (the tracked step on the 4-tuple carry) on the carry (carry, Watch):
    each event's condition after the step, crossings recorded, a member that crossed a
    terminal event frozen at the step's start, and a stopped member kept where it is."""
    events, per_step = watching.events, watching.per_step
    conditions = [_condition(e, system, integrator, t0, batched) for e in events]
    guards = [None if e.where is None else _condition(e, system, integrator, t0, batched, True)
              for e in events]  # fmt: skip

    def show(z):  # the state the loop's state shows (a map with coordinates of its own)
        return shown(system, integrator, z, h, batched)

    # (a conditional's operands are copied in and out of it on every step, on XLA's CPU
    # backend: 1 µs a step for one Euler top with 64 slots, 2026-12-06)
    shows_other = integrator.own_coordinates

    def step(i, both):
        carry, watch = both
        x = carry[0]
        stopped = watch.stop >= 0
        new = one_step(i, carry, stopped)
        x_new = freeze(stopped, x, new[0])
        t_new = _time(t0, new[1], h, x)
        ending = jnp.zeros_like(stopped)
        each = []
        # neither ended nor failed (a frozen state's time runs on)
        live = ~stopped & (new[2] < 0)
        seen = show(x_new) if events else None
        for e, g, guard, w in zip(events, conditions, guards, watch.each, strict=True):
            g_new = g(t_new, seen)
            crossed = _crossed(w.g, g_new, e.direction) & live
            if guard is not None:
                crossed = crossed & (guard(t_new, seen) > 0)
            # the loop's own state is recorded (``locate`` shows it: a map with
            # coordinates of its own pays for that once a crossing, after the loop, and
            # reverse mode differentiates no drift here); written only on a step where
            # some member crossed where the loop holds conditionals of its own (a slot's
            # unconditional write then copies the buffers: 4 µs a step for Wisdom–Holman
            # with 64 slots on the 2-core CPU, 2026-12-07)
            if batched or shows_other:
                w = jax.lax.cond(
                    jnp.any(crossed),
                    lambda w, c=crossed: _record(w, c, x, carry[1], batched),
                    lambda w: w, w,
                )  # fmt: skip
            else:  # one trajectory: a slot's write costs less than a conditional's copies
                w = _record(w, crossed, x, carry[1], batched)
            w = w._replace(g=jnp.where(live, g_new, w.g))
            if e.terminal:
                ending = ending | crossed
            each.append(w)
        stop = jnp.where(ending, new[1], watch.stop)
        x_new = freeze(ending, x, x_new)
        at = watch.at
        if at is not None:
            at = jax.lax.cond(
                _due(at, new[1]), lambda a: _write(a, new[1], x_new, batched, per_step),
                lambda a: a, at,
            )  # fmt: skip
        return (x_new, *new[1:]), Watch(stop, tuple(each), at)

    return step


def _due(at: _At, k):
    """Whether the next save time lies in the step starting at step k."""
    n = at.steps.shape[0]
    return (at.j < n) & (at.steps[jnp.minimum(at.j, n - 1)] == k)


def _write(at: _At, k, x, batched: bool, per_step: int) -> _At:
    """x (the state after k steps) written for every save time in the step from it (at
    most ``per_step`` of them: a loop of static length, which reverse mode can
    differentiate)."""
    n = at.steps.shape[0]

    def body(_, a):
        hit, slot = _due(a, k), jnp.minimum(a.j, n - 1)

        def put(b, v):
            if batched:
                return b.at[:, slot].set(jnp.where(hit, v, b[:, slot]))
            return b.at[slot].set(jnp.where(hit, v, b[slot]))

        return a._replace(j=a.j + hit.astype(a.j.dtype), xs=jax.tree.map(put, a.xs, x))

    return jax.lax.fori_loop(0, per_step, body, at)


def save_steps(times, t0, h, steps: int, real):
    """(K_j, τ_j) per save time T_j: t_{K_j} ≤ T_j < t_{K_j + 1} (reversed for h < 0),
    0 ≤ K_j ≤ ``steps``, and τ_j = T_j − t_{K_j}, with t_k = t0 + k h in the run's real
    type computed once here: K and τ agree by construction (a second program could round
    t_k otherwise).  NumPy on concrete input, JAX on traced (the same arithmetic)."""
    xp = jnp if traced((times, t0, h)) else np
    times = xp.asarray(times, dtype=real)
    t0, h = xp.asarray(t0, dtype=real), xp.asarray(h, dtype=real)
    k = xp.clip(xp.floor((times - t0) / h), 0, steps).astype(np.int64)

    def t(k):
        return t0 + k.astype(real) * h

    sign = xp.sign(h)
    for _ in range(4):  # the floor's rounding, corrected (a step or two at most)
        k = k - ((k > 0) & (sign * (times - t(k)) < 0)).astype(k.dtype)
        k = k + ((k < steps) & (sign * (times - t(k + 1)) >= 0)).astype(k.dtype)
    return k, times - t(k)


def check_save_at(save_at, t0, h, steps: int, dtype: str, parameter: str = "save_at", *,
                  variable: bool = False):  # fmt: skip
    """(the save times, their K_j and τ_j (``save_steps``), the most save times in one
    step) for a run of ``steps`` steps of ``h`` from ``t0`` in ``dtype``:
    ``InputError`` naming ``parameter`` unless they are a non-empty 1-D array of finite
    times, in the run's direction, within [t0, t0 + steps h], and the run's steps are
    not ``variable`` (a clock of its own: ``maps.physical_time``)."""
    real = jnp.dtype(dtype)
    if variable:
        raise InputError(parameter, "with variable steps the driver's times are not the "
                         "physical ones", "end at a physical time T with a terminal "
                         "mi.Event(lambda t, x: t - T)")  # fmt: skip
    if traced(save_at):
        raise InputError(parameter, "got traced times", "give concrete times (NumPy or a list)")
    kind = np.asarray(save_at).dtype.kind if not isinstance(save_at, str) else "U"
    if kind not in "fiuO":  # booleans, complex numbers, text: not times
        raise InputError(parameter, f"expected real times, got {str(save_at)[:100]!r}",
                         "give the times as real numbers")  # fmt: skip
    try:
        times = np.asarray(save_at, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(parameter, f"expected times, got {save_at!r}"[:200]) from None
    if times.ndim != 1 or times.size == 0:
        raise InputError(parameter, f"expected a 1-D array of times, got shape {times.shape}")
    if not np.all(np.isfinite(times)):
        raise InputError(parameter, "every time must be finite")
    times = times.astype(real)
    K, tau = save_steps(times, t0, h, steps, real)
    if not traced((t0, h)):
        sign = np.sign(float(h))
        if np.any(sign * np.diff(times) < 0):
            raise InputError(parameter, "times must be in the run's order (increasing for "
                             "h > 0, decreasing for h < 0)", "sort them")  # fmt: skip
        start = np.asarray(t0, real)
        end = start + np.asarray(steps, real) * np.asarray(h, real)
        out = (sign * (times - start) < 0) | (sign * (times - end) > 0)
        if np.any(out):
            bad = times[np.argmax(out)]
            raise InputError(parameter, f"time {float(bad)!r} is outside the run "
                             f"[{float(start)!r}, {float(end)!r}]",
                             "save within the run, or run longer")  # fmt: skip
        if np.any((K == steps) & (tau != 0)):
            raise InputError(parameter, "a time is past the run's last step",
                             "save within the run, or run longer")  # fmt: skip
        return times, K, tau, int(np.max(np.unique(K, return_counts=True)[1]))
    return times, K, tau, len(times)  # K traced (h or t0 is): as many as there are times


def _shown_slots(system, integrator: Integrator, z, h, used):
    """The states that recorded loop states z show (``Integrator.leave``; their slots
    along ``used``'s axes), all at once; an unused slot's inputs (zeros, and its copies
    of the system and h) held constant, so that the NaN a map's coordinates make of them
    sends no derivative back in either mode (0 · NaN).  z itself for a map without
    coordinates of its own."""
    if not integrator.own_coordinates:
        return z
    n, flat = used.ndim, used.reshape(-1)
    slots = jax.tree.map(lambda a: a.reshape((-1, *a.shape[n:])), z)
    copies = jax.tree.map(lambda a: jnp.broadcast_to(a, flat.shape + jnp.shape(a)), (system, h))
    inputs = (*copies, slots)
    inputs = freeze(~flat, jax.lax.stop_gradient(inputs), inputs)  # unused slots: constants
    x = jax.vmap(lambda s, h, z: integrator.leave(s, z, h))(*inputs)
    return jax.tree.map(lambda a: a.reshape(used.shape + a.shape[1:]), x)


def saved_at(system, integrator: Integrator, h, times, tau, watch: Watch, ends, end_tau,
             batched: bool, steps: int, whole: bool = False):  # fmt: skip
    """The states at the save times: x_{K_j} itself where τ_j = 0 (T_j = t_{K_j}), else
    the map's partial step Φ_τ(x_{K_j}) (``tau``: the τ_j of ``save_steps``); NaN where
    that state or step is not a result (a member failed or ended before it: ``ends``,
    ``stopped_steps``; a time in the step where a terminal event ended the run counts up
    to the crossing's |τ|, ``end_tau``) or the time was never reached (out of order).
    The base map's states, or with ``whole`` the wrappers' parts too (``simulate``
    returns them: a compensated run's correction, the attitude carried along).
    ``times``: the save times T_j themselves (their size sets the rounding of τ_j)."""
    at = watch.at
    real = jax.tree.leaves(at.xs)[0].dtype
    tau = jnp.asarray(tau, real)
    written = jnp.arange(tau.shape[0], dtype=at.j.dtype) < at.j[..., None]
    xs = _shown_slots(system, integrator, at.xs, jnp.asarray(h, real), written)

    def one(x, tau):
        x1 = integrator.step(system, x, tau)[0]
        # at a step's time the saved state itself, with the derivative of the step of size
        # τ = 0 from it (Φ_0 the identity: dx + ∂_τΦ dτ), one trace of the step
        sg = jax.lax.stop_gradient
        at_step = jax.tree.map(lambda a, d: sg(a) + (d - sg(d)), x, x1)
        return jax.tree.map(lambda a, b: jnp.where(tau == 0, a, b), at_step, x1)

    # A time in the step a terminal event ended counts up to the crossing (to a few ulp of
    # the time and of h: T given as the crossing's time t_k + τ, rounded there, rounds to
    # either side of the located root).  A crossing at the step's very end (the condition
    # 0 at t_k) ends the run in step k, whose sample holds the step's start: a time
    # T = t_k is that state a whole step on.
    sg = jax.lax.stop_gradient
    size = jnp.maximum(jnp.abs(jnp.asarray(h, real)), jnp.abs(jnp.asarray(times, real)))
    slack = 4 * jnp.spacing(sg(size))
    end_tau = end_tau[..., None]
    at_end = (at.steps == watch.stop[..., None]) & (tau == 0) & (end_tau >= jnp.abs(h) - slack)
    tau_each = jnp.where(at_end, jnp.asarray(h, real), tau)  # per member (and time)
    over = jax.vmap(one, in_axes=(0, 0))
    if batched:
        over = jax.vmap(over, in_axes=(0, 0))
    x = over(xs, tau_each)
    if not whole:
        x = unwrap_all(integrator, x)[0]
    reach = at.steps + (tau != 0).astype(at.steps.dtype)  # steps a result at T_j needs
    end = jnp.where(ends >= 0, ends, jnp.iinfo(jnp.int64).max)
    # a time inside the run (traced times are not checked before), reached in order
    inside = (reach <= steps) & (jnp.sign(h) * tau >= 0) & (jnp.abs(tau) < jnp.abs(h))
    reached = jnp.arange(tau.shape[0], dtype=at.j.dtype) < at.j
    in_last = (at.steps + 1 == watch.stop[..., None]) & (jnp.abs(tau) <= end_tau + slack)
    valid = reached & inside & ((reach < end[..., None]) | in_last | at_end)
    return _blank(valid, x)


def _time(t0, k, h, x):
    """t0 + k h in the state's real type: the one time rule of the loop, ``locate`` and
    the save times.  k h is rounded before it is added (an optimization barrier keeps
    XLA from fusing them into one multiply-add, which it does in some programs and not
    in others), so every program, and NumPy, gives the same t_k."""
    real = jax.tree.leaves(x)[0].dtype
    kh = jax.lax.optimization_barrier(k.astype(real) * jnp.asarray(h, real))
    return jnp.asarray(t0, real) + kh


def stopped_steps(watch: Watch | None, fail):
    """Per member, the first step whose sample is not a result: a failure's step, or the
    step at whose end a terminal event ended the run (its sample there and later)."""
    if watch is None:
        return fail
    xp = np if isinstance(fail, np.ndarray) else jnp
    stop = xp.asarray(watch.stop)
    return xp.where(stop >= 0, xp.where(fail >= 0, xp.minimum(fail, stop), stop), fail)


def _bracket_roots(f, a, fa, xa, b, used):
    """The roots of the vectorised ``f`` (a value per slot, and a tree of states per
    slot) between a and b to a bracket of ~2 ulp each: Illinois' regula falsi, a
    bisection every fourth iteration, a falsi point within 2 ulp of an end put 2 ulp
    inside it (Brent's least step), each slot on its own (a slot stops moving once its
    bracket is closed).  The first pass evaluates f at b (0 where not ``used``), so that
    the program holds one f; the states at both ends are carried (``xa``: at a), so that
    the root's state needs no evaluation of its own.  A bracket closed on a jump of f (a
    map whose partial step does not start at its state: SHAKE projects the momentum) is
    not a root: at a closed bracket f's values at its two ends (not Illinois' halved
    ones) must be within ``_JUMP`` of its change over the step, else it is not converged.
    Returns (τ, converged, f at b, f at τ, the state at τ)."""

    def done(s):
        a, fa, b, fb, _, it = s[:6]
        tiny = 4 * jnp.spacing(jnp.maximum(jnp.abs(a), jnp.abs(b)))
        return (fa == 0) | (fb == 0) | (jnp.abs(b - a) <= tiny) | (it >= _MAX_ITERATIONS)

    def body(carry):
        s, fb_at_b, first = carry
        a, fa, b, fb, side, it, xa, xb, ga, gb = s
        falsi = (a * fb - b * fa) / (fb - fa)
        lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
        # A falsi point within half the closing width of an end moves that far into the
        # bracket (Brent's least step): an end at the root to round-off, on which such
        # points fall, is bracketed at the next evaluation, not by bisections.  Twice
        # in a row, it bisects instead (the end was not at the root: Illinois stalls).
        least = 2 * jnp.spacing(jnp.maximum(jnp.abs(a), jnp.abs(b)))
        near = (falsi < lo + least) | (falsi > hi - least)
        falsi_ok = jnp.isfinite(falsi) & (it % 4 != 3)
        short = falsi_ok & near & (jnp.abs(side) != 2)
        c = jnp.where(short, jnp.clip(falsi, lo + least, hi - least), falsi)
        c = jnp.where(short | (falsi_ok & ~near), c, 0.5 * (a + b))
        fc, xc = f(jnp.where(first, b, c))
        same_b = jnp.sign(fc) == jnp.sign(fb)
        # the end that moves takes c; the other end's value is halved when it stays
        # twice in a row (Illinois); |side| = 2 after a least step
        moved = (
            jnp.where(same_b, a, c),
            jnp.where(same_b, jnp.where(side > 0, 0.5 * fa, fa), fc),
            jnp.where(same_b, c, b),
            jnp.where(same_b, fc, jnp.where(side < 0, 0.5 * fb, fb)),
            (jnp.where(same_b, 1, -1) * jnp.where(short, 2, 1)).astype(side.dtype),
            it + 1,
            jnp.where(same_b, ga, fc),  # f itself at each end
            jnp.where(same_b, fc, gb),
        )
        live = ~done(s)
        was = (*s[:6], ga, gb)
        moved = tuple(jnp.where(live, m, o) for m, o in zip(moved, was, strict=True))
        moving = live & ~first
        # the state at each end: c's where c replaced that end (b's on the first pass)
        xa, xb = freeze(moving & ~same_b, xc, xa), freeze(first | (moving & same_b), xc, xb)
        fb_at_b = jnp.where(first, jnp.where(used, fc, 0.0), fb_at_b)
        begun = (a, fa, b, fb_at_b, side, it, fa, fb_at_b)
        s = tuple(jnp.where(first, b0, m) for b0, m in zip(begun, moved, strict=True))
        return (*s[:6], xa, xb, *s[6:]), fb_at_b, jnp.asarray(False)

    zero = jnp.zeros(a.shape, jnp.int32)
    s = (a, fa, b, jnp.zeros_like(fa), zero, zero, xa, xa, fa, jnp.zeros_like(fa))
    start = (s, jnp.zeros_like(fa), jnp.asarray(True))
    s, fb_at_b, _ = jax.lax.while_loop(lambda c: c[2] | jnp.any(~done(c[0])), body, start)
    change = jnp.abs(fa) + jnp.abs(fb_at_b)  # f's change over the step, at its ends
    a, fa, b, fb, _, it, xa, xb, ga, gb = s
    at_a = (fb != 0) & ((fa == 0) | (jnp.abs(fa) < jnp.abs(fb)))
    tau = jnp.where(at_a, a, b)
    # a partial step that failed inside the bracket (F = NaN) leaves a non-finite end
    finite = jnp.isfinite(fa) & jnp.isfinite(fb)
    exact = (fa == 0) | (fb == 0)
    # closed on a root, f at both ends is as small as its change over a few ulp of τ
    # (and its rounding) makes it; closed on a jump of f, it is not
    continuous = exact | (jnp.abs(ga) + jnp.abs(gb) <= _JUMP * change)
    converged = ((it < _MAX_ITERATIONS) | exact) & finite & continuous
    return tau, converged, fb_at_b, jnp.where(at_a, fa, fb), freeze(at_a, xa, xb)


def locate(system, integrator: Integrator, h, t0, events, watch: Watch, batched: bool):
    """Every recorded crossing located on the map (see the module docstring): (a dict
    of ``Crossings`` by event name, per member the partial step |τ| at which a terminal
    event ended the run, inf where none did).  A crossing whose partial steps fail, or
    whose root the solver does not bracket, is NaN (t and x), not a point of the flow.

    The slots of every event and member are solved together, as one axis: the program
    holds the map's step once (the solver's, which keeps the states at the bracket's
    ends), twice where it is differentiated (the rates at the roots: ``_at_roots``),
    whatever the number of events (a step of a long composition or corrector compiles in
    seconds)."""
    real = jax.tree.leaves(watch.each[0].xk)[0].dtype if events else jnp.float64
    h = jnp.asarray(h, real)
    found = []
    if events:
        lead = watch.each[0].kk.shape  # (members?, capacity)
        n_lead = len(lead)

        def flat(a):
            return a.reshape((-1, *a.shape[n_lead:]))

        kept = [jnp.minimum(w.n, w.kk.shape[-1]) for w in watch.each]
        in_use = [jnp.arange(lead[-1], dtype=n.dtype) < n[..., None] for n in kept]
        xk = jax.tree.map(lambda *a: jnp.concatenate([flat(b) for b in a]),
                          *[w.xk for w in watch.each])  # fmt: skip
        k = jnp.concatenate([flat(w.kk) for w in watch.each])
        used = jnp.concatenate([flat(u) for u in in_use])
        xk = _shown_slots(system, integrator, xk, h, used)
        size = int(np.prod(lead))
        parts = [slice(i * size, (i + 1) * size) for i in range(len(events))]

        def conditions(gs, t, x, systems=None):
            """Each event's condition on its own slots (a system per slot, or one)."""
            out = []
            for g, part in zip(gs, parts, strict=True):
                x_part = jax.tree.map(lambda a, part=part: a[part], x)
                if systems is None:
                    out.append(jax.vmap(g)(t[part], x_part))
                else:
                    s_part = jax.tree.map(lambda a, part=part: a[part], systems)
                    out.append(jax.vmap(lambda s, t, x, g=g: g(s)(t, x))(s_part, t[part], x_part))
            return jnp.concatenate(out)

        tk = jax.vmap(lambda k, x: _time(t0, k, h, x))(k, xk)
        x_, tk_, s_, h_ = jax.lax.stop_gradient((xk, tk, system, h))
        t_end = jax.lax.stop_gradient(jax.vmap(lambda k, x: _time(t0, k + 1, h, x))(k, xk))
        # no derivative into the solver
        gs_ = [_condition(e, s_, integrator, t0, False) for e in events]

        def F(tau):
            x1, st = jax.vmap(lambda x, tau: integrator.step(s_, x, tau))(x_, tau)
            g = conditions(gs_, jnp.where(tau == h_, t_end, tk_ + tau), x1)
            return jnp.where(st.ok, g, jnp.nan), x1

        # the step's start as the loop evaluated it (an empty slot: nothing to solve)
        fa = jnp.where(used, conditions(gs_, tk_, x_), 0.0)
        tau, ok, fb, f_tau, x1 = _bracket_roots(F, jnp.zeros_like(fa), fa, x_,
                                                jnp.broadcast_to(h_, fa.shape), used)  # fmt: skip
        ok = ok & used & ((jnp.sign(fa) != jnp.sign(fb)) | (fb == 0)) & jnp.isfinite(f_tau)

        # the live inputs where a root was found; elsewhere (an empty slot: zeros)
        # constants, so that the NaN of a step from an empty slot's state sends no
        # derivative back to the system (reverse mode: 0 · NaN)
        def keep(a):
            a = jnp.asarray(a)
            return freeze(~ok, jax.lax.stop_gradient(a), a)

        xk_l, tk_l = jax.tree.map(keep, (xk, tk))
        system_l = jax.tree.map(lambda a: keep(jnp.broadcast_to(a, ok.shape + jnp.shape(a))),
                                system)  # fmt: skip

        def G(theta, tau):  # the conditions and the states at τ, from the live inputs
            system_l, xk_l, tk_l, system, t0 = theta
            gs_l = [(lambda s, e=e: _condition(e, s, integrator, t0, False)) if e.uses_system
                    else (lambda s, e=e: _condition(e, system, integrator, t0, False))
                    for e in events]  # fmt: skip
            x1, st = jax.vmap(lambda s, x, tau: integrator.step(s, x, tau))(system_l, xk_l, tau)
            g = conditions(gs_l, tk_l + tau, x1, system_l)
            return jnp.where(st.ok, g, jnp.nan), x1

        tau_live, x1 = _at_roots(G, (system_l, xk_l, tk_l, system, t0), tau, x1)
        # at τ = h the loop's own t_{k+1} (tk + h may round to another number)
        t = jnp.where(tau == h_, t_end + (tau_live - jax.lax.stop_gradient(tau_live)),
                      tk + tau_live)  # fmt: skip
        t = jax.vmap(lambda t, x: _event_time(system, integrator, t0, t, x))(t, x1)
        x_shown = jax.vmap(lambda x: unwrap_all(integrator, x)[0])(x1)
        nan = _nan_unless(ok)
        t, tau = nan(t), nan(tau)
        x_shown = jax.tree.map(
            lambda a: jnp.where(ok.reshape(ok.shape + (1,) * (a.ndim - 1)), a, jnp.nan
                                ).astype(a.dtype), x_shown)  # fmt: skip
        for e, w, n, part in zip(events, watch.each, kept, parts, strict=True):

            def back(a, part=part):
                return a[part].reshape(lead + a.shape[1:])

            found.append((e, w, back(t), jax.tree.map(back, x_shown), back(tau), n))
    # a crossing in a member's last step after the terminal crossing that ended it there
    # did not happen, another terminal event's included (a terminal event crosses once:
    # its first slot); a terminal crossing not located judges nothing
    ends = [jnp.where((k > 0) & jnp.isfinite(tau[..., 0]), jnp.abs(tau[..., 0]), jnp.inf)
            for e, _, _, _, tau, k in found if e.terminal]  # fmt: skip
    end = jnp.min(jnp.stack(ends), axis=0) if ends else jnp.full(watch.stop.shape, jnp.inf)
    out = {}
    for e, w, t, x, tau, kept in found:
        if ends:
            last = jnp.clip(kept - 1, 0, w.kk.shape[-1] - 1)[..., None]
            k_last = jnp.take_along_axis(w.kk, last, -1)[..., 0]
            tau_last = jnp.take_along_axis(tau, last, -1)[..., 0]
            late = (kept > 0) & (k_last + 1 == watch.stop) & ~(jnp.abs(tau_last) <= end)
            kept = kept - late.astype(kept.dtype)
            valid = jnp.arange(w.kk.shape[-1], dtype=kept.dtype) < kept[..., None]
            t, x = _blank(valid, (t, x))
        out[e.key] = Crossings(t, x, kept, w.n > w.kk.shape[-1])
    return out, end.astype(real)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _at_roots(G, theta, tau, x):
    """The roots τ and the states x there, as the solver found them (no evaluation of
    their own: a program without derivatives holds the step once, the solver's); their
    derivatives by the implicit function theorem from ``G(theta, tau)`` (the conditions
    F and the states at τ from the live inputs θ), in the rule alone:
    dτ = −∂_θF·dθ / ∂_τF and dx = ∂_θx·dθ + ∂_τx·dτ, at the roots as this function gives
    them, so that the rule's own derivatives (second and higher orders) hold too."""
    return tau, x


@_at_roots.defjvp
def _at_roots_jvp(G, primals, tangents):
    theta, tau, x = primals
    tau, x = _at_roots(G, theta, tau, x)  # the same values, with their derivatives

    def rates(theta):
        return jax.jvp(lambda tau: G(theta, tau), (tau,), (jnp.ones_like(tau),))

    (_, (dF, dx_dtau)), ((dF_theta, dx), _) = jax.jvp(rates, (theta,), (tangents[0],))
    dtau = -dF_theta / jnp.where((dF == 0) | ~jnp.isfinite(dF), 1.0, dF)
    dx = jax.tree.map(lambda a, d: a + d * dtau.reshape(dtau.shape + (1,) * (a.ndim - 1)),
                      dx, dx_dtau)  # fmt: skip
    return (tau, x), (dtau, dx)


def _nan_unless(ok):
    """``a`` where ``ok``, else NaN (in ``a``'s dtype)."""
    return lambda a: jnp.where(ok, a, jnp.nan).astype(a.dtype)
