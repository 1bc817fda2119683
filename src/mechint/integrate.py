"""``integrate``: a run as a pure function (jit, vmap, grad), and the one step loop.

``integrate(system, integrator, x0, h, steps, save_every)`` does no host work: every
input may be traced (the system's parameters, x0, h, t0) and it returns a small pytree,
``Solution``, so it composes with ``jax.jit``, ``jax.vmap``, ``jax.grad``, ``jax.jvp``
and ``jax.jacrev``.  ``simulate`` is the host driver on the same loop (``run_saves``):
validation of concrete input, chunks, progress, checkpoints, ``StepFailure``.

Failure is data here too: each member's first failing step, its residual and its
``Reason`` code are returned, the member is frozen there, and its samples from the
failing step on are NaN.  Nothing raises under a transform.

Reverse mode.  Implicit steps are differentiated at their converged roots by the
implicit function theorem (``solvers.Newton``), never through Newton's iterations.
The loop is checkpointed (``checkpoint=True``): a save interval of at most
``_BLOCK_MIN`` steps is recomputed from its start during the reverse pass; a longer
one is cut into blocks of about √save_every steps whose starts are kept.  The reverse
pass then holds the saved samples, about √save_every block starts and one block's
step residuals: 10^6 steps to one final sample keep ~2000 states, not 10^6 steps'
intermediates.  ``checkpoint=False`` keeps every step's intermediates (faster, memory
O(steps)).
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
from mechint.errors import InputError
from mechint.maps import Integrator, Reason, require_serves
from mechint.systems.base import System

# A failure is recorded as step × _CODES + reason (one select a step for both).
_CODES = 8
assert len(Reason) <= _CODES

# Save intervals longer than this are cut into √-sized checkpointed blocks.
_BLOCK_MIN = 1024


class Solution(NamedTuple):
    """What ``integrate`` returns (a pytree: every field is an array).

    ``t``: the saved times (``steps // save_every + 1``, t0 first); ``x``: the saved
    states, leaves of shape (T, ...) or (B, T, ...) for a batch; per member
    ``failed_step`` (−1: none), ``residual`` (0 where none) and ``reason`` (a
    ``maps.Reason`` code, 0 = OK).  A failed member's samples from its failing step on
    are NaN.
    """

    t: Float[Array, " T"]
    x: Any
    failed_step: Int[Array, ...]
    residual: Float[Array, ...]
    reason: Int[Array, ...]

    @property
    def ok(self):
        """True where the member ran every step."""
        return self.failed_step < 0


def decode(fail) -> tuple[Any, Any]:
    """(failed step, −1 where none; reason code, 0 where none) from the packed record
    (NumPy or JAX arrays alike)."""
    xp = np if isinstance(fail, np.ndarray) else jnp
    return xp.where(fail >= 0, fail // _CODES, -1), xp.where(fail >= 0, fail % _CODES, 0)


def check_system(system) -> System:
    """``system`` if it is a mechint system, else ``InputError``."""
    if not isinstance(system, System):
        raise InputError(
            "system",
            f"{type(system).__name__} is not a mechint system",
            "use one of mechint.systems, or subclass mechint.systems.System",
        )
    return system


def check_integrator(integrator) -> Integrator:
    """``integrator`` if it is a mechint integrator, else ``InputError``."""
    if not isinstance(integrator, Integrator):
        raise InputError(
            "integrator",
            f"{integrator!r} is not a mechint integrator",
            "pass an instance, e.g. mechint.integrators.Kahan() (user maps subclass "
            "mechint.integrators.Integrator)",
        )
    return integrator


def initial_carry(x0, batch: int | None, real):
    """The loop's carry (x, steps taken, packed failure, failure residual) at the start."""
    lead = () if batch is None else (batch,)
    return (
        x0,
        jnp.asarray(0, dtype=jnp.int64),
        jnp.full(lead, -1, dtype=jnp.int64),
        jnp.zeros(lead, dtype=real),
    )


def _freeze(frozen, old, new):
    """Per batch member: keep ``old`` where ``frozen`` (shape (B,) or ()), else ``new``."""
    return jax.tree.map(
        lambda a, b: jnp.where(frozen.reshape(frozen.shape + (1,) * (a.ndim - frozen.ndim)), a, b),
        old,
        new,
    )


def tracked_step(system, integrator: Integrator, h, batched: bool):
    """One step on the carry: advance x, record the first failure (step × 8 + reason and
    its residual), freeze a failed member.  The one step of every run."""
    step = integrator.step
    if batched:
        step = jax.vmap(step, in_axes=(None, 0, None))

    def one_step(_, carry):
        x, k, fail, fail_res = carry
        x_new, st = step(system, x, h)
        newly = (fail < 0) & ~st.ok
        fail = jnp.where(newly, (k + 1) * _CODES + st.reason.astype(fail.dtype), fail)
        fail_res = jnp.where(newly, st.residual.astype(fail_res.dtype), fail_res)
        return _freeze(fail >= 0, x, x_new), k + 1, fail, fail_res

    return one_step


def _blocked(length, checkpoint: bool) -> bool:
    """Whether ``length`` steps are run as checkpointed √-blocks (static and long)."""
    return checkpoint and isinstance(length, int) and length > _BLOCK_MIN


def _steps(one_step, carry, length, checkpoint: bool):
    """``length`` steps; with ``checkpoint`` and a static length above ``_BLOCK_MIN``,
    as √length checkpointed blocks (see the module docstring)."""
    if _blocked(length, checkpoint):
        block = math.isqrt(length)
        blocks, rest = divmod(length, block)

        @jax.checkpoint
        def one_block(c, _):
            return jax.lax.fori_loop(0, block, one_step, c), None

        carry = jax.lax.scan(one_block, carry, None, length=blocks)[0]
        return jax.lax.fori_loop(0, rest, one_step, carry)
    return jax.lax.fori_loop(0, length, one_step, carry)


def run_saves(
    system, integrator, carry, h, save_every, length: int, *, batched, n_saves=None, checkpoint
):
    """The step loop: ``length`` saves of ``save_every`` steps each from ``carry``;
    returns (carry, the saved states stacked along a leading axis of ``length``).

    ``save_every`` static (a Python int) makes the loop a ``scan``, differentiable in
    reverse mode; traced, it is a ``while_loop`` (one compiled program for any
    interval).  ``n_saves`` (traced, ≤ length): only the first n_saves saves step, the
    rest repeat the last state (``simulate``'s chunks of a power-of-two ``length``)."""
    one_step = tracked_step(system, integrator, h, batched)

    def segment(c):
        return _steps(one_step, c, save_every, checkpoint)

    if checkpoint and not _blocked(save_every, checkpoint):
        segment = jax.checkpoint(segment)

    def one_save(c, i):
        if n_saves is None:
            c = segment(c)
        else:
            c = jax.lax.cond(i < n_saves, segment, lambda c: c, c)
        return c, c[0]

    return jax.lax.scan(one_save, carry, jnp.arange(length))


@partial(jax.jit, static_argnames=("integrator", "steps", "save_every", "batched", "checkpoint"))
def _integrate(system, integrator, x0, h, t0, *, steps, save_every, batched, checkpoint):
    real = jax.tree.leaves(x0)[0].dtype
    batch = jax.tree.leaves(x0)[0].shape[0] if batched else None
    carry = initial_carry(x0, batch, real)
    n_saves = steps // save_every
    carry, xs = run_saves(
        system, integrator, carry, h, save_every, n_saves, batched=batched, checkpoint=checkpoint
    )
    x = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), x0, xs)
    failed_step, reason = decode(carry[2])
    # a failed member's samples from its failing step on are not results
    sample = jnp.arange(n_saves + 1) * save_every
    valid = (failed_step < 0) | (sample.reshape((-1,) + (1,) * failed_step.ndim) < failed_step)
    x = jax.tree.map(
        lambda a: jnp.where(valid.reshape(valid.shape + (1,) * (a.ndim - valid.ndim)), a, jnp.nan),
        x,
    )
    if batched:
        x = jax.tree.map(lambda a: jnp.moveaxis(a, 0, 1), x)
    t = t0 + h * sample.astype(real)
    residual = jnp.where(failed_step >= 0, carry[3], 0.0)
    return Solution(t, x, failed_step, residual, reason.astype(jnp.int32))


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
        Checkpoint the loop for reverse mode (bounded memory, about one extra forward
        pass); False keeps every step's intermediates.
    dtype
        "float64" or "float32": cast the state and the system's parameters (default: the
        state's own precision, float64 for Python numbers).

    Returns
    -------
    Solution (t, x, failed_step, residual, reason).

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
        x0, batched = _traced_state(system, x0)
    else:
        x0, batched = system.validate_state(x0, "x0")
    if dtype is None:
        real = jnp.result_type(*jax.tree.leaves(x0))
        real = real if jnp.issubdtype(real, jnp.floating) else jnp.float64
    else:
        real = jnp.dtype(_validate.real_dtype(dtype))
    cast = partial(jax.tree.map, lambda a: jnp.asarray(a, dtype=real))
    if real != jnp.float64:
        system = cast(system)
    return _integrate(
        system, integrator, cast(x0), jnp.asarray(h, real), jnp.asarray(t0, real),
        steps=steps, save_every=save_every, batched=batched, checkpoint=bool(checkpoint),
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
