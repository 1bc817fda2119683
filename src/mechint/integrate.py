"""``integrate``: a run as a pure function (jit, vmap, grad), and the one step loop.

``integrate(system, integrator, x0, h, steps, save_every)`` does no host work: every
input may be traced (the system's parameters, x0, h, t0) and it returns a small pytree,
``Solution``, so it composes with ``jax.jit``, ``jax.vmap``, ``jax.grad``, ``jax.jvp``
and ``jax.jacrev``.  ``simulate`` is the host driver on the same loop (``run_saves``):
validation of concrete input, chunks, progress, checkpoints, ``StepFailure``.

Failure is data here too: each member's first failing step, its residual and its
``Reason`` code are returned, the member is frozen there, and its samples from the
failing step on are NaN.  Nothing raises under a transform.

Derivatives.  Implicit steps are differentiated at their converged roots by the
implicit function theorem (``solvers.Newton``), never through Newton's iterations.  A
run is cut into chunks of at least ``_CHUNK_MIN`` (or √steps) steps; a chunk of 64
steps or more has a structured derivative (``_chunk``): its states are stored, every
step Jacobian is computed at once, vectorized over the chunk's states, and the tangent
(or, in reverse mode, the adjoint) recurrence is a scan of small matrix-vector products.
Shorter chunks are differentiated by JAX through the loop.  ``checkpoint=True`` (the
default) recomputes each chunk in the reverse pass, which then holds the saved samples,
the chunk starts and one chunk's Jacobians: bounded memory (0.35 MB for 10^6 Kahan
steps, ``benchmarks/gradients.py``) for about one more forward pass.
``checkpoint=False`` keeps every chunk's Jacobians (memory O(steps), fastest).

Longer than the house's 600 lines because the pure driver is one program: its loop
variants (tracked, columns, saves, events), the checkpointed reverse mode and the
structured derivative are the branches of the one traced function.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from mechint import _validate
from mechint._xla import loop_jit
from mechint.errors import InputError
from mechint.events import (
    Watch,
    Watching,
    check_events,
    check_save_at,
    freeze,
    initial_watch,
    locate,
    saved_at,
    stand_in,
    stopped_steps,
    watched_step,
)
from mechint.maps import (
    Integrator,
    Reason,
    _column_leaf,
    combine,
    entered,
    from_columns,
    over_members,
    physical_time,
    require_serves,
    shown,
    start_all,
    to_columns,
    unwrap_all,
)
from mechint.plan import check_integrator, check_system
from mechint.systems.base import System

# A failure is recorded as step × _CODES + reason (one select a step for both).
_CODES = 16
assert len(Reason) <= _CODES


class Solution(NamedTuple):
    """What ``integrate`` returns (a pytree: every field is an array).

    ``t``: the saved times (``steps // save_every + 1``, t0 first: for a variable-step
    run of one state the physical ones, else the driver's t0 + k h); ``x``: the saved
    states of the integrator (a wrapper's (x, extra)), leaves of shape (T, ...) or
    (B, T, ...) for a batch; per member
    ``failed_step`` (−1: none), ``residual`` (0 where none) and ``reason`` (a
    ``maps.Reason`` code, 0 = OK).  A failed member's samples from its failing step on
    are NaN.  ``events``: each ``Event``'s ``events.Crossings`` by name (empty without
    events); a member that crossed a terminal event has NaN samples after the crossing.
    """

    t: Float[Array, " T"]
    x: Any
    failed_step: Int[Array, ...]
    residual: Float[Array, ...]
    reason: Int[Array, ...]
    events: dict = {}  # noqa: RUF012 (never mutated: every run makes its own)

    @property
    def ok(self):
        """True where the member ran every step."""
        return self.failed_step < 0

    def __repr__(self) -> str:
        """One line: the samples, the states' shapes, the failures and the events' counts
        (not the data; the shapes alone inside a transform)."""
        shapes = ", ".join(str(tuple(np.shape(a))) for a in jax.tree.leaves(self.x))
        try:
            span = f", t in [{float(self.t[0]):g}, {float(self.t[-1]):g}]"
            failed = f"; {int(np.sum(np.asarray(self.failed_step) >= 0))} failed"
            crossed = "".join(f"; {key}: {int(np.sum(np.asarray(c.count)))} crossings"
                              for key, c in self.events.items())  # fmt: skip
        except (TypeError, jax.errors.ConcretizationTypeError):  # traced: shapes only
            span = failed = crossed = ""
        return f"Solution({np.shape(self.t)[0]} samples{span}; x {shapes}{failed}{crossed})"


def decode(fail) -> tuple[Any, Any]:
    """(failed step, −1 where none; reason code, 0 where none) from the packed record
    (NumPy or JAX arrays alike)."""
    xp = np if isinstance(fail, np.ndarray) else jnp
    if xp is np and not np.any(fail >= 0):  # nothing failed (−1 throughout): no arithmetic
        return np.array(fail), np.zeros_like(fail)  # a copy: the caller's, writable
    return xp.where(fail >= 0, fail // _CODES, -1), xp.where(fail >= 0, fail % _CODES, 0)


def blank_failed(x, failed_step, sample_step):
    """``x`` (samples along the leading axis, members after it) with NaN at the samples
    of a failed member from its failing step on: they are not results.  ``sample_step``:
    the step of each sample.  NumPy or JAX arrays alike (the one home of this rule)."""
    xp = np if isinstance(failed_step, np.ndarray) else jnp
    if xp is np and not np.any(failed_step >= 0):  # nothing to blank: no pass over x
        return x
    at = sample_step.reshape((-1,) + (1,) * failed_step.ndim)
    valid = (failed_step < 0) | (at < failed_step)
    return jax.tree.map(
        lambda a: xp.where(
            valid.reshape(valid.shape + (1,) * (a.ndim - valid.ndim)), a, xp.nan
        ).astype(a.dtype),
        x,
    )


def initial_carry(x0, batch: int | None, real):
    """The loop's carry (x, steps taken, packed failure, failure residual) at the start."""
    lead = () if batch is None else (batch,)
    return (
        x0,
        jnp.asarray(0, dtype=jnp.int64),
        jnp.full(lead, -1, dtype=jnp.int64),
        jnp.zeros(lead, dtype=real),
    )


def _member_step(integrator: Integrator, batched: bool):
    """``integrator.loop_step`` (its step, on the loop's state) over every member of a
    batch (or the one state), with the system's ``domain_status`` of the new state."""

    def checked(system, z, h):
        z_new, st = integrator.loop_step(system, z, h)
        if not system.checks_domain or integrator.own_coordinates:
            return z_new, st
        # (of the system's state: a wrapper's carries its own parts beside it)
        return z_new, combine([st, system.domain_status(unwrap_all(integrator, z_new)[0])])

    return over_members(checked, batched)


def tracked_step(system, integrator: Integrator, h, batched: bool, columns_of=None):
    """One step on the carry: advance x, record the first failure (step × 8 + reason),
    freeze a failed member.  The one step of every run.  The failure's residual is not
    kept here (a third buffer updated each step makes XLA copy the state every step):
    ``settle`` fills it in after the loop.

    ``columns_of`` (a batch's state): the carry's state is ``to_columns`` of a state like
    it.  Each output of the step, the failure record and the freeze then reads its inputs
    at its own member and entry, so that XLA on a GPU fuses them into one kernel that
    updates the carry in place; the state as (B, n) arrays takes a second kernel and a
    copy of the state a step (``_columns_in_loops``).

    ``held`` (the events' loop: members stopped by a terminal event) and the failed
    members step from a live member's state where the map's step branches for the whole
    batch (``Integrator.batch_branches``); their results are discarded either way."""
    step = _member_step(integrator, batched)
    stands_in = batched and integrator.batch_branches

    def one_step(_, carry, held=None):
        x, k, fail, fail_res = carry
        x_in = x
        if stands_in:  # frozen members step from a live one's state (discarded)
            x_in = stand_in(fail >= 0 if held is None else (fail >= 0) | held, x)
        if columns_of is None:
            x_new, st = step(system, x_in, h)
        else:
            x_new, st = integrator.step_columns(system, x_in, columns_of, h)
        newly = (fail < 0) & ~st.ok
        if stands_in and held is not None:  # a stopped member's step was another's
            newly = newly & ~held
        fail = jnp.where(newly, (k + 1) * _CODES + st.reason.astype(fail.dtype), fail)
        return freeze(fail >= 0, x, x_new), k + 1, fail, fail_res

    return one_step


def settle(system, integrator: Integrator, h, batched: bool, before, after):
    """``after`` (a loop's carry from ``before``) with the residual of each member that
    failed in the loop: its failing step evaluated again at its frozen state, which is
    the state that step started from (one step, only when a member failed)."""
    step = _member_step(integrator, batched)
    x, k, fail, res = after
    newly = (before[2] < 0) & (fail >= 0)
    # no derivative flows through the residual (a diagnostic): nothing to trace for it
    at, system, h = jax.lax.stop_gradient((x, system, h))

    def fill(res):
        st = step(system, at, h)[1]
        return jnp.where(newly, st.residual.astype(res.dtype), res)

    return x, k, fail, jax.lax.cond(jnp.any(newly), fill, lambda r: r, res)


def run_saves(
    system, integrator, carry, h, save_every, length: int, *, batched, n_saves=None,
    checkpoint, settled: bool = True, watching=None, t0=None,
):  # fmt: skip
    """The step loop: ``length`` saves of ``save_every`` steps each from ``carry``;
    returns (carry, the saved states stacked along a leading axis of ``length``).

    It runs as one ``fori_loop`` of tracked steps per save inside a ``scan`` over the
    saves (``_loop_saves``): one loop level per step, nothing copied per step.
    ``save_every`` static (a Python int) and ``n_saves`` None: that loop's derivative is
    the chunked, structured recurrence of ``_static_saves`` (a ``custom_jvp`` around the
    whole run: the forward pass alone never pays for the chunks; ``checkpoint``
    recomputes each chunk in the reverse pass).  ``save_every`` traced: one compiled
    program for any interval (``simulate``, and ``integrate`` on concrete input), where
    ``n_saves`` (traced, ≤ length) makes only the first n_saves saves step and the rest
    repeat the last state (``simulate``'s chunks of a power-of-two ``length``).
    ``settled``: the residuals of the failures filled in (``settle``); ``simulate``
    leaves them to its host loop, which settles only a call where a member failed.

    ``watching`` (an ``events.Watching``: events, save times; ``t0`` the run's start
    time): the carry is (carry, ``events.Watch``) and every step records the crossings
    and the states at the save times; the loop is then differentiated by JAX through
    its steps (memory O(steps) in reverse mode)."""
    if watching:
        (out, watch), xs = _loop_saves(
            system, integrator, carry, h, save_every, length, batched, n_saves, watching, t0
        )
        if settled:
            out = settle(system, integrator, h, batched, carry[0], out)
        return (out, watch), shown(system, integrator, xs, h, batched, lead=1)
    if isinstance(save_every, int) and n_saves is None:
        out, xs = _saves(
            integrator, save_every, length, batched, bool(checkpoint), system, h, carry
        )
    else:
        out, xs = _loop_saves(system, integrator, carry, h, save_every, length, batched, n_saves)
    if settled:
        out = settle(system, integrator, h, batched, carry, out)
    # the saved states as the map shows them (a map with coordinates of its own)
    return out, shown(system, integrator, xs, h, batched, lead=1)


def _loop_saves(system, integrator, carry, h, save_every, length: int, batched, n_saves=None,
                watching=None, t0=None):  # fmt: skip
    """``run_saves``' loop as it runs (see there)."""
    # a batch's steps on the state's columns (see ``tracked_step``), converted around
    # each segment; the state keeps its shapes, so ``like`` is the one at the start
    columns = (batched and not watching and integrator.batch_columns and _columns_in_loops()
               and not system.checks_domain)  # fmt: skip
    like = carry[0] if columns else None
    one_step = tracked_step(system, integrator, h, batched, columns_of=like)
    state = (lambda c: c[0]) if not watching else (lambda c: c[0][0])
    if watching:
        one_step = watched_step(one_step, watching, system, integrator, t0, h, batched)

    # several steps an iteration where every leaf goes by columns (a larger leaf is not
    # kept in registers between steps; the map's ``batch_unroll``)
    small = columns and all(_column_leaf(a) for a in jax.tree.leaves(like))
    unroll = integrator.batch_unroll if small else 1

    def steps(c, n):  # n steps, unroll at a time (n traced: whole groups, then the rest)
        if isinstance(n, int):
            return jax.lax.fori_loop(0, n, one_step, c, unroll=unroll)
        if unroll > 1:
            c = jax.lax.fori_loop(0, n // unroll, lambda _, c: steps(c, unroll), c)
            n = n % unroll
        return jax.lax.fori_loop(0, n, one_step, c)

    def loop(c):
        if isinstance(save_every, int) or not _blocks_for_traced_loops():
            return steps(c, save_every)
        # whole blocks of a static length, then the rest (the same steps in order)
        b = _TRACED_LOOP_BLOCK
        c = jax.lax.fori_loop(0, save_every // b, lambda _, c: steps(c, b), c)
        return steps(c, save_every % b)

    def segment(c):
        if not columns:
            return loop(c)
        x, *rest = loop((to_columns(c[0]), *c[1:]))
        return (from_columns(x, like), *rest)

    def one_save(c, i):
        if n_saves is None:
            c = segment(c)
        else:
            c = jax.lax.cond(i < n_saves, segment, lambda c: c, c)
        return c, state(c)

    return jax.lax.scan(one_save, carry, jnp.arange(length))


# A loop of a traced number of steps (``simulate``'s, and ``integrate``'s on concrete
# input) runs on a GPU in blocks of this many steps, each a loop of a static length:
# XLA reads a dynamic loop's predicate back on the host at every iteration, a static
# one's not.  Measured on one H100 (2026-11-26; 10⁶ Euler tops, Kahan, 1000 steps):
# 1.40e10 -> 1.80e10 body-steps/s in float64, 2.26e10 -> 3.95e10 in float32, against
# 1.86e10 and 4.17e10 for the static loop.  On a CPU it would only double the compiled
# step, so there the loop stays one.
_TRACED_LOOP_BLOCK = 64


def _blocks_for_traced_loops() -> bool:
    """Whether a traced-length loop runs in static blocks (on a GPU; see above)."""
    return jax.default_backend() == "gpu"


def _columns_in_loops() -> bool:
    """Whether a batch's loop carries its state as columns (``tracked_step``): on a GPU,
    for a map whose ``batch_columns`` says so, ``batch_unroll`` steps an iteration.
    Measured on one H100 (10⁶ Euler tops, 1000 steps, body-steps/s, float64 / float32):
    Kahan's ``integrate`` 1.86e10 / 4.15e10 as a (B, 3) array, 4.81e10 / 9.90e10 as
    columns (2026-11-26), 1.28e11 / 2.94e11 as columns eight steps an iteration (the
    same day), against 6.3e10 / 1.12e11 for the bare
    ``lax.scan`` of three columns, one step an iteration;
    RK4 6.6e9 / 1.5e10 -> 1.1e11 / 1.9e11.  The same numbers bit for bit, and in float64
    a batch the same as its members one by one.  On a CPU the columns gain nothing (one
    core, 10⁵ Euler tops × 1000 steps: Kahan 3.3e8, RK4 1.9e8 body-steps/s either way)
    and change some maps' arithmetic at round-off (RK4, the LGVI, RKMK over 130 steps: up to
    8e-14), so there they are off and a CPU run keeps its bits."""
    return jax.default_backend() == "gpu"


@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3, 4))
def _saves(integrator, every: int, length: int, batched: bool, checkpoint: bool, system, h, carry):
    """``length`` saves of ``every`` steps: the plain loop forward, the structured
    chunks (``_static_saves``) for a derivative."""
    return _loop_saves(system, integrator, carry, h, every, length, batched)


@_saves.defjvp
def _saves_jvp(integrator, every, length, batched, checkpoint, primals, tangents):
    def run(system, h, carry):
        return _static_saves(
            system, integrator, carry, h, every, length, batched=batched, checkpoint=checkpoint
        )

    return jax.jvp(run, primals, tangents)


# -- the structured derivative of a run ------------------------------------------------
# A chunk of L steps x_{k+1} = φ(x_k, θ) (θ: the system's parameters and h) has the
# tangent t_{k+1} = J_k t_k + G_k dθ, J_k = ∂φ/∂x, G_k = ∂φ/∂θ at x_k.  The forward
# pass stores x_0..x_{L-1}; every J_k, G_k is then one vectorized jacfwd over all L
# states (and batch members) at once, and the recurrence is a linear system
# (𝟙 − S)T = r, S the subdiagonal of J's, solved by ``lax.custom_linear_solve`` with a
# forward scan (jvp) and, for reverse mode, the adjoint recurrence
# Λ_k = c_k + J_{k+1}ᵀ Λ_{k+1} as a reverse scan of 3 × 3 (D × D) products.  This keeps
# both passes free of JAX's per-step residual bookkeeping (≈ 3.5 µs a step on CPU).

# A chunk's Jacobians are held for at most this many numbers (16 MiB in float64).
_JACOBIAN_NUMBERS = 1 << 21
# Chunks are at least this long (or √steps), so that the vectorized Jacobians pay off.
_CHUNK_MIN = 8192
# Shorter chunks are differentiated by JAX through the loop itself: as fast there, and
# about half the compile time of the structured derivative.
_STRUCTURED_MIN = 64


def _flat_size(tree, lead: int) -> int:
    return sum(math.prod(a.shape[lead:]) for a in jax.tree.leaves(tree))


def _chunk_length(steps: int, carry, batched: bool) -> int:
    """Steps per chunk: ≥ √steps and ``_CHUNK_MIN``, at most ``steps`` and what keeps the
    chunk's Jacobians within ``_JACOBIAN_NUMBERS``."""
    x = carry[0]
    batch = jax.tree.leaves(x)[0].shape[0] if batched else 1
    d = _flat_size(x, 1 if batched else 0)
    cap = max(1, _JACOBIAN_NUMBERS // (batch * d * (d + 1)))
    return max(1, min(steps, cap, max(_CHUNK_MIN, math.isqrt(steps))))


def _static_saves(system, integrator, carry, h, every: int, n_saves: int, *, batched, checkpoint):
    """``n_saves`` saves of ``every`` steps as chunks of ``_chunk`` (checkpointed: each
    chunk is recomputed in the reverse pass, which keeps the chunk starts only)."""
    unit = _chunk_length(every * n_saves, carry, batched)

    def chunk(length, every_, c):
        run = _chunk if length >= _STRUCTURED_MIN else _chunk_primal
        return run(integrator, batched, length, every_, system, h, c)

    def remat(f):
        return jax.checkpoint(f) if checkpoint else f

    if n_saves == 0:
        return carry, jax.tree.map(lambda a: jnp.zeros((0, *a.shape), a.dtype), carry[0])
    if every <= unit:  # whole saves per chunk
        per = min(n_saves, max(1, unit // every))
        chunks, rest = divmod(n_saves, per)
        carry, xs = jax.lax.scan(
            remat(lambda c, _: chunk(per * every, every, c)), carry, None, length=chunks
        )
        xs = jax.tree.map(lambda a: a.reshape((chunks * per, *a.shape[2:])), xs)
        if rest:
            carry, more = remat(lambda c: chunk(rest * every, every, c))(carry)
            xs = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), xs, more)
        return carry, xs
    whole, rest = divmod(every, unit)  # chunks per save

    def one_save(c, _):
        c = jax.lax.scan(
            remat(lambda c, _: (chunk(unit, None, c)[0], None)), c, None, length=whole
        )[0]
        if rest:
            c = remat(lambda c: chunk(rest, None, c)[0])(c)
        return c, c[0]

    return jax.lax.scan(one_save, carry, None, length=n_saves)


def _flatten(x, lead: int):
    """The leaves of ``x`` as one array of shape (leading ``lead`` axes, D)."""
    leaves = jax.tree.leaves(x)
    shape = leaves[0].shape[:lead]
    return jnp.concatenate([a.reshape((*shape, -1)) for a in leaves], axis=-1)


def _unflatten(flat, like, lead: int):
    """Inverse of ``_flatten`` for the structure of ``like`` (unbatched leaves after
    ``lead`` axes of ``like``), with the leading axes of ``flat``."""
    leaves, treedef = jax.tree.flatten(like)
    out, at = [], 0
    for a in leaves:
        n = math.prod(a.shape[lead:])
        out.append(flat[..., at : at + n].reshape(flat.shape[:-1] + a.shape[lead:]))
        at += n
    return jax.tree.unflatten(treedef, out)


def _chunk_primal(integrator, batched, length, every, system, h, carry):
    one_step = tracked_step(system, integrator, h, batched)
    if every is None:
        return jax.lax.fori_loop(0, length, one_step, carry), None

    def save(c, _):
        c = jax.lax.fori_loop(0, every, one_step, c)
        return c, c[0]

    return jax.lax.scan(save, carry, None, length=length // every)


_chunk = jax.custom_jvp(_chunk_primal, nondiff_argnums=(0, 1, 2, 3))


@_chunk.defjvp
def _chunk_jvp(integrator, batched, length, every, primals, tangents):
    """(carry after ``length`` steps, states after every ``every``-th step) and their
    tangents by the linear recurrence of the step Jacobians (see above)."""
    system, h, carry = primals
    d_system, d_h, d_carry = tangents
    one_step = tracked_step(system, integrator, h, batched)
    final, before = jax.lax.scan(lambda c, _: (one_step(0, c), c), carry, None, length=length)
    saved = None
    if every is not None:
        saved = jax.tree.map(
            lambda a, b: jnp.concatenate([a[every::every], b[None]]), before[0], final[0]
        )
    lead = 2 if batched else 1  # (step, member)
    x_flat = _flatten(before[0], lead)  # (L, [B], D)
    member = jax.tree.map(lambda a: a[(0,) * lead], before[0])  # one member's x

    def member_step(x, system, h, *, k, fail, res):
        """One member's step, x flattened (the tracked step: a frozen member stays)."""
        carry = (_unflatten(x, member, 0), k, fail, res)
        return _flatten(tracked_step(system, integrator, h, False)(0, carry)[0], 0)

    def member_linear(x, k, fail, res):
        """(∂φ/∂x, ∂φ/∂θ · dθ) at one member's state, from one linearization."""
        _, lin = jax.linearize(partial(member_step, k=k, fail=fail, res=res), x, system, h)
        no_theta = jax.tree.map(jnp.zeros_like, (system, h))
        Jx = jax.vmap(lambda e: lin(e, *no_theta), out_axes=-1)(jnp.eye(x.shape[-1], dtype=x.dtype))
        return Jx, lin(jnp.zeros_like(x), d_system, d_h)

    def over_steps(f):
        """``f`` over every (step, member), the step axis last (contiguous lanes)."""
        if batched:
            f = jax.vmap(f, in_axes=(0, None, 0, 0))
        f = jax.vmap(f, in_axes=(-1, 0, -1, -1), out_axes=-1)
        out = f(
            jnp.moveaxis(x_flat, 0, -1), before[1], *(jnp.moveaxis(a, 0, -1) for a in before[2:])
        )
        return jax.tree.map(lambda a: jnp.moveaxis(a, -1, 0), out)

    Jx, r = over_steps(member_linear)  # (L, [B], D, D), (L, [B], D)
    dx0 = _flatten(d_carry[0], lead - 1)  # ([B], D)
    r = r.at[0].add(jnp.einsum("...de,...e->...d", Jx[0], dx0))

    def mv(A, v):
        return jnp.einsum("...de,...e->...d", A, v)

    def mvt(A, v):
        return jnp.einsum("...ed,...e->...d", A, v)

    def matvec(T):
        return T - jnp.concatenate([jnp.zeros_like(T[:1]), mv(Jx[1:], T[:-1])])

    def solve(_, rhs):
        def body(t, xs):
            A, b = xs
            t = mv(A, t) + b
            return t, t

        return jax.lax.scan(body, jnp.zeros_like(rhs[0]), (Jx, rhs))[1]

    def transpose_solve(_, c):
        def body(g, xs):
            A, ck = xs
            lam = ck + g
            return mvt(A, lam), lam

        return jax.lax.scan(body, jnp.zeros_like(c[0]), (Jx, c), reverse=True)[1]

    T = jax.lax.custom_linear_solve(matvec, r, solve, transpose_solve)  # (L, [B], D)
    x_one = jax.tree.map(lambda a: a[0], before[0])  # one step's x ([B], ...)
    dx_final = _unflatten(T[-1], x_one, lead - 1)
    zero_int = partial(np.zeros, dtype=jax.dtypes.float0)
    d_final = (dx_final, zero_int(np.shape(final[1])), zero_int(np.shape(final[2])),
               jnp.zeros_like(final[3]))  # fmt: skip
    d_saved = None
    if every is not None:
        d_saved = _unflatten(T[every - 1 :: every], x_one, lead - 1)
    return (final, saved), (d_final, d_saved)


@loop_jit(static_argnames=("integrator", "steps", "save_every", "batched", "checkpoint",
                           "watching"))  # fmt: skip
def _integrate(system, integrator, x0, h, t0, at=None, *, steps, save_every, batched, checkpoint,
               watching=None):  # fmt: skip
    """``integrate`` under a transform: ``steps`` and ``save_every`` static (a derivative
    needs the chunks' lengths).  ``at``: (save times, their K_j, τ_j) with ``watching.times``."""
    carry = _start(system, x0, integrator, h, t0, batched, watching, at)
    n_saves = steps // save_every
    carry, xs = run_saves(
        system, integrator, carry, h, save_every, n_saves, batched=batched, checkpoint=checkpoint,
        watching=watching, t0=t0,
    )  # fmt: skip
    return _solution(system, integrator, x0, carry, xs, h, t0, save_every, n_saves, batched,
                     watching, at)  # fmt: skip


@loop_jit(static_argnames=("integrator", "n_saves", "batched", "watching"))
def _integrate_concrete(system, integrator, x0, h, t0, every, at=None, *, n_saves, batched,
                        watching=None):  # fmt: skip
    """``integrate`` on concrete input (nothing to differentiate): the save interval is
    traced, so one compiled program serves any number of steps with ``n_saves`` saves.
    Returns the Solution and the loop's start and end: a failure's residual is settled
    by the caller (``settle_failures``, compiled only for a run in which a member failed)."""
    start = _start(system, x0, integrator, h, t0, batched, watching, at)
    carry, xs = run_saves(
        system, integrator, start, h, every, n_saves, batched=batched, checkpoint=False,
        settled=False, watching=watching, t0=t0,
    )  # fmt: skip
    sol = _solution(system, integrator, x0, carry, xs, h, t0, every, n_saves, batched, watching,
                    at)  # fmt: skip
    if watching:
        return sol, start[0], carry[0]
    return sol, start, carry


settle_failures = loop_jit(settle, static_argnames=("integrator", "batched"))


def _start(system, x0, integrator, h, t0, batched: bool, watching=None, at=None):
    """The loop's carry at x0 (one state, or a batch along the leading axis; the map's
    own coordinates of it, ``maps.entered``); with ``watching`` (``events.Watching``),
    (that carry, its ``events.Watch``)."""
    leaf = jax.tree.leaves(x0)[0]
    z0 = entered(system, integrator, x0, h, batched)
    carry = initial_carry(z0, leaf.shape[0] if batched else None, leaf.dtype)
    if not watching:
        return carry
    steps_at = None if at is None else at[1]
    return carry, initial_watch(watching, system, integrator, x0, t0, batched, steps_at, z0)


def _solution(system, integrator, x0, carry, xs, h, t0, every, n_saves: int, batched: bool,
              watching=None, at=None) -> Solution:  # fmt: skip
    """The ``Solution`` of a run: x0 and the saves (or the states at the save times
    ``at``), failed (or terminated) members' samples blanked, the events' crossings
    located."""
    watch: Watch | None = None
    if watching:
        carry, watch = carry
    real = jax.tree.leaves(x0)[0].dtype
    failed_step, reason = decode(carry[2])
    ends = stopped_steps(watch, failed_step)
    crossings: dict = {}
    end_tau = None
    if watch is not None and watching is not None and watching.events:
        crossings, end_tau = locate(system, integrator, h, t0, watching.events, watch, batched)
    if watch is not None and watch.at is not None and at is not None:
        t = jnp.asarray(at[0], real)
        if end_tau is None:
            end_tau = jnp.full(watch.stop.shape, jnp.inf, real)
        x = saved_at(system, integrator, h, at[0], at[2], watch, ends, end_tau, batched,
                     n_saves * every)  # fmt: skip
    else:
        x = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), x0, xs)
        sample = jnp.arange(n_saves + 1) * every
        x = blank_failed(x, ends, sample)
        if batched:
            x = jax.tree.map(lambda a: jnp.moveaxis(a, 0, 1), x)
        t = t0 + h * sample.astype(real)
        clock = physical_time(system, integrator, x)
        if clock is not None and not batched:  # variable steps: the physical time
            t = t0 + clock
    residual = jnp.where(failed_step >= 0, carry[3], 0.0)
    return Solution(t, x, failed_step, residual, reason.astype(jnp.int32), crossings)


def integrate(
    system,
    integrator,
    x0,
    h,
    steps: int,
    save_every: int | None = None,
    *,
    t0=0.0,
    checkpoint: bool = True,
    dtype: str | None = None,
    events=None,
    max_events: int | None = None,
    save_at=None,
    clock=None,
) -> Solution:
    """``steps`` steps of size ``h`` from ``x0``: a pure function (jit, vmap, grad).

    Parameters
    ----------
    system, integrator
        A ``mechint.systems`` model (its parameters may be traced) and a map serving it.
    x0
        Initial state, or a batch along a leading axis (may be traced).
    h, t0
        Step size and initial time (may be traced: gradients with respect to h work).
    steps, save_every
        Python ints: the number of steps and the save interval (default: ``steps``, only
        the final state besides x0); ``save_every`` must divide ``steps``.
    checkpoint
        Recompute each chunk of steps in the reverse pass (bounded memory, about one
        extra forward pass); False keeps every chunk's step Jacobians (memory O(steps)).
    dtype
        "float64" or "float32": cast the state and the system's parameters (default: the
        state's own precision, float64 for Python numbers).
    events, max_events
        ``mechint.Event`` s (or one) whose crossings are located on the map
        (``mechint.events``), at most ``max_events`` (default 64) kept per member and
        event: ``Solution.events[name]``.  With events the loop is differentiated by JAX
        step by step (reverse mode: memory O(steps)); the crossing times and states
        differentiate by the implicit function theorem.
    save_at
        Times (in the run, in its direction; concrete) at which to return the state
        instead of every ``save_every``-th step: a partial step of the map from the
        last state before each (the saved state itself at a step's time);
        ``Solution.t`` is then these times.  ``save_every`` is then not given.
    clock
        A ``ReversibleAdaptive`` run's clock (t, ρ) to start from (one per member): the
        last one of the run this one continues, which then continues bit for bit
        (default: t = 0, ρ = 1/σ(x0)); give the same ``t0`` as that run.

    Returns
    -------
    Solution (t, x, failed_step, residual, reason, events).

    Concrete input is validated (``InputError`` naming the parameter); traced input is
    checked for shape only and a bad value fails the run as data.
    """
    system = check_system(system)
    integrator = check_integrator(integrator)
    require_serves(integrator, system)
    steps = _validate.count("steps", steps)
    save_every = _validate.save_every(steps, steps if save_every is None else save_every)
    h = _validate.step_size(h)
    t0 = _validate.real_array("t0", t0, ())
    if _validate.traced(x0):
        x0, batched = _traced_state(system, system.traced_state(x0))
        x0 = system.starting_state(x0, t0)
    else:
        x0, batched = integrator.validate_start(system, x0, "x0")
        x0 = system.starting_state(x0, t0)
    events, max_events = check_events(events, system, x0, batched, max_events)
    # a wrapper given as the map (``ReversibleAdaptive``) advances an extended state
    x0 = start_all(integrator, system, x0, batched, jax.tree.leaves(x0)[0].shape[0] if batched
                   else 1, {"clock": clock})  # fmt: skip
    if dtype is None:
        # the state's own dtype, as given (NumPy's or a tracer's: not canonicalised, so a
        # float64 state with JAX's 64-bit mode off is refused, never run in float32)
        single = all(np.dtype(a.dtype) == np.float32 for a in jax.tree.leaves(x0))
        real = jnp.dtype(_validate.real_dtype("float32" if single else "float64"))
    else:
        real = jnp.dtype(_validate.real_dtype(dtype))
    _validate.precision(system, str(real))
    members = jax.tree.leaves(x0)[0].shape[0] if batched else 1
    if not _validate.traced(x0):
        from mechint.resources import require_run_buffers

        require_run_buffers(x0, members, len(events), max_events, save_at, real.itemsize)
    at = None
    if save_at is not None:
        if save_every != steps:
            raise InputError("save_every", "is not used with save_at", "give one of the two")
        variable = physical_time(system, integrator, x0) is not None
        at = check_save_at(save_at, t0, h, steps, str(real), variable=variable)
    cast = partial(jax.tree.map, lambda a: jnp.asarray(a, dtype=real))
    if real != jnp.float64:
        system = cast(system)
    args = (system, integrator, cast(x0), jnp.asarray(h, real), jnp.asarray(t0, real))
    watching = Watching(events, max_events, *((0, 1) if at is None else (len(at[0]), at[3])))
    at = None if at is None else at[:3]  # (times, K_j, τ_j)
    if not _validate.traced((system, x0, h, t0)):
        every = jnp.asarray(save_every, dtype=jnp.int64)
        sol, start, end = _integrate_concrete(
            *args, every, at, n_saves=steps // save_every, batched=batched, watching=watching
        )
        if _validate.traced(sol.failed_step):  # staged into a caller's jit, scan, ...
            res = settle(args[0], integrator, args[3], batched, start, end)[3]
        elif np.any(np.asarray(sol.failed_step) >= 0):
            res = settle_failures(args[0], integrator, args[3], batched, start, end)[3]
        else:
            return sol
        return sol._replace(residual=jnp.where(sol.failed_step >= 0, res, 0.0))
    return _integrate(
        *args, at, steps=steps, save_every=save_every, batched=batched,
        checkpoint=bool(checkpoint), watching=watching,
    )  # fmt: skip


def _traced_state(system: System, x0) -> tuple[Any, bool]:
    """A traced state's structure checked against the system's (its numbers are unknown)."""
    leaves = jax.tree.leaves(x0)
    fields = system.state_fields
    if len(leaves) != len(fields):
        names = ", ".join(f for f, _ in fields)
        raise InputError("x0", f"expected {len(fields)} arrays ({names}), got {len(leaves)}")
    got = [tuple(leaf.shape) for leaf in leaves]
    extra = {len(s) - len(dims) for s, (_, dims) in zip(got, fields, strict=True)}
    batched = extra == {1}
    core = [s[1:] if batched else s for s in got]
    if len(extra) != 1 or not extra <= {0, 1} or tuple(system.state_shape) not in core:
        raise InputError(
            "x0",
            f"expected a state of shape {tuple(system.state_shape)} ({system.state_fields}; or "
            f"a batch of them), got arrays of shapes {got}",
        )
    return x0, batched
