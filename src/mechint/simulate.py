"""The driver: advance a system with an integrator by ``jax.lax.scan``.

The run is split into chunks of whole save intervals.  Each chunk is one jitted call
(cached by system type, integrator and chunk shape: parameters and h are traced, so a
new inertia or step size reuses the compiled code) whose inner loop takes ``save_every``
steps between saved samples.  Only saved samples leave the device, so memory is
O(steps / save_every).  A batch of initial conditions (leading axis) is advanced by
``vmap`` of the step, in one call.

Every step's status is tracked: the first failing step of each batch member is
recorded and that member's state is frozen there.  After a chunk that saw a failure,
``simulate`` raises ``StepFailure`` with the step number, the residual, and every sample
saved before the failing step.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from mechint import _validate
from mechint.errors import InputError, StepFailure
from mechint.trajectory import Trajectory

# Body-steps per chunk: long enough to amortise dispatch, short enough for progress.
_CHUNK_BODY_STEPS = 1 << 22


@dataclasses.dataclass(frozen=True)
class _Run:
    """What a run was asked to do (recorded in every Trajectory it returns)."""

    system: object
    integrator: object
    h: float
    t0: float
    steps: int
    save_every: int
    batched: bool
    oriented: bool = False


@dataclasses.dataclass(frozen=True)
class _Oriented:
    """``base`` carrying the attitude g ∈ SO(n) along: state (x, g), g_{k+1} = g_k W_k.

    W_k comes from ``base.step_with_rotation``; each new g is re-orthonormalized by one
    Newton-Schulz step, which removes accumulated round-off (it moves g by O(‖gᵀg − I‖)).
    """

    base: object

    @property
    def traits(self):
        return self.base.traits

    @property
    def failure(self):
        return self.base.failure

    def check(self, system) -> None:
        self.base.check(system)

    def step(self, system, x, h):
        from mechint.lie import orthonormalize

        state, g = x
        state, W, status = self.base.step_with_rotation(system, state, h)
        return (state, orthonormalize(g @ W)), status


def _orientation(system, integrator, g0, batched: bool, batch: int) -> np.ndarray:
    """Validate the initial attitude g0 ∈ SO(n) (one, or one per batch member)."""
    if not callable(getattr(integrator, "step_with_rotation", None)):
        raise InputError(
            "orientation",
            f"{type(integrator).__name__} does not compute the body's rotation per step",
            "use mechint.integrators.DiscreteLagrangian(), or leave orientation out",
        )
    n = system.state_shape[-1]
    g = _validate.real_array("orientation", g0)
    shape = (batch, n, n) if batched and g.ndim == 3 else (n, n)
    if g.shape != shape:
        raise InputError("orientation", f"expected an {n}x{n} rotation matrix, got shape {g.shape}")
    defect = float(np.max(np.abs(np.swapaxes(g, -1, -2) @ g - np.eye(n))))
    if defect > 1e-10 or np.any(np.linalg.det(g) <= 0):
        raise InputError(
            "orientation",
            f"is not a rotation (max |gᵀg − I| = {defect:.2g}, det = "
            f"{np.min(np.linalg.det(g)):.3g})",
            "give g in SO(n), e.g. the identity",
        )
    if batched and g.ndim == 2:
        g = np.broadcast_to(g, (batch, n, n)).copy()
    return g


def _check_system(system) -> None:
    for attr in ("validate_state", "state_fields", "invariants"):
        if not hasattr(system, attr):
            raise InputError(
                "system",
                f"{type(system).__name__} is not a mechint system (it lacks {attr!r})",
                "use one of mechint.systems",
            )


def _check_integrator(integrator) -> None:
    for attr in ("step", "check", "traits"):
        if not hasattr(integrator, attr):
            raise InputError(
                "integrator",
                f"{integrator!r} is not a mechint integrator (it lacks {attr!r})",
                "pass an instance, e.g. mechint.integrators.Kahan()",
            )


def _freeze(frozen, old, new):
    """Per batch member: keep ``old`` where ``frozen`` (shape (B,) or ()), else ``new``."""
    return jax.tree.map(
        lambda a, b: jnp.where(frozen.reshape(frozen.shape + (1,) * (a.ndim - frozen.ndim)), a, b),
        old,
        new,
    )


@functools.partial(jax.jit, static_argnames=("integrator", "n_saves", "save_every", "batched"))
def _advance(system, integrator, x, h, k0, *, n_saves, save_every, batched):
    step = integrator.step
    if batched:
        step = jax.vmap(step, in_axes=(None, 0, None))
    batch_shape = jax.tree.leaves(x)[0].shape[:1] if batched else ()

    def one_step(_, carry):
        x, k, fail_step, fail_res = carry
        x_new, status = step(system, x, h)
        newly = (fail_step < 0) & ~status.ok
        fail_step = jnp.where(newly, k + 1, fail_step)
        fail_res = jnp.where(newly, status.residual, fail_res)
        return _freeze(fail_step >= 0, x, x_new), k + 1, fail_step, fail_res

    def one_save(carry, _):
        carry = jax.lax.fori_loop(0, save_every, one_step, carry)
        return carry, carry[0]

    init = (
        x,
        k0,
        jnp.full(batch_shape, -1, dtype=k0.dtype),
        jnp.zeros(batch_shape, dtype=jax.tree.leaves(x)[0].dtype),
    )
    return jax.lax.scan(one_save, init, None, length=n_saves)


def _plan(n_saves: int, save_every: int, batch: int, chunk: int = _CHUNK_BODY_STEPS) -> int:
    """Saves per chunk: a divisor of n_saves near the budget when one exists (one compile)."""
    cap = max(1, chunk // (save_every * batch))
    if cap >= n_saves:
        return n_saves
    best = max(d for d in _validate._divisors(n_saves) if d <= cap)
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
    dtype: str = "float64",
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
        Initial attitude g0 ∈ SO(n) (one for all batch members, or one each): the run
        then also carries g_{k+1} = g_k W_k (integrators with ``step_with_rotation``,
        i.e. ``DiscreteLagrangian``), saved as ``Trajectory.orientation``.  With
        P_0 = g0ᵀ A g0 the saved states keep P_k = g_kᵀ A g_k.
    on_chunk
        Called after every chunk of steps with a function that builds the Trajectory of
        everything saved so far (``mechint run`` writes its checkpoints from it).
    chunk_steps
        Body-steps (steps × batch size) per chunk, rounded to whole save intervals
        (default 2^22): each chunk is one compiled call, and the unit of ``on_chunk``.
    dtype
        "float64" (default) or "float32": the state and the system's parameters are cast
        to it (faster on GPUs, about 1e-7 relative precision; invariants kept to
        float32 round-off).

    Returns
    -------
    Trajectory with ``steps // save_every + 1`` samples (x0 included).

    Raises
    ------
    InputError
        On bad input, before any step.
    StepFailure
        When a step fails (singular solve, Newton not converged, non-finite state): it
        names the step and residual and carries every sample saved before it.
    """
    _check_system(system)
    _check_integrator(integrator)
    integrator.check(system)
    x0_np, batched = system.validate_state(x0, "x0")
    h = _validate.step_size(h)
    steps = _validate.count("steps", steps)
    save_every = _validate.save_every(steps, save_every)
    t0 = float(_validate.real_array("t0", t0, ()))
    if dtype not in ("float64", "float32"):
        raise InputError("dtype", f"must be 'float64' or 'float32', got {dtype!r}")
    real = jnp.dtype(dtype)
    if real != jnp.float64:
        system = jax.tree.map(lambda a: jnp.asarray(a, dtype=real), system)

    n_saves = steps // save_every
    batch = jax.tree.leaves(x0_np)[0].shape[0] if batched else 1
    oriented = orientation is not None
    if oriented:
        g0 = _orientation(system, integrator, orientation, batched, batch)
        x0_np, integrator = (x0_np, g0), _Oriented(integrator)
    run = _Run(system, integrator, h, t0, steps, save_every, batched, oriented)
    per_chunk = _plan(
        n_saves, save_every, batch, _validate.count("chunk_steps", chunk_steps or _CHUNK_BODY_STEPS)
    )

    x = jax.tree.map(lambda a: jnp.asarray(a, dtype=real), x0_np)
    k = jnp.asarray(0, dtype=jnp.int64)
    samples = [jax.tree.map(lambda a: np.asarray(a, dtype=real)[None], x0_np)]
    start = time.perf_counter()
    bar = _progress_bar(steps, progress)
    try:
        done = 0
        while done < n_saves:
            n = min(per_chunk, n_saves - done)
            (x, k, fail_step, fail_res), saved = _advance(
                system, integrator, x, h, k, n_saves=n, save_every=save_every, batched=batched
            )
            saved = jax.device_get(saved)
            fail_step = np.asarray(fail_step)
            if np.any(fail_step >= 0):
                _raise_failure(run, samples, saved, done, fail_step, np.asarray(fail_res), x)
            samples.append(saved)
            done += n
            bar.update(n * save_every)
            if on_chunk is not None:
                on_chunk(lambda: _trajectory(run, samples))
    finally:
        bar.close()
    wall = time.perf_counter() - start
    return _trajectory(run, samples, wall_time=wall)


def _progress_bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        unit="step",
        unit_scale=True,
        delay=2.0,
        disable=not enabled,
        file=sys.stderr,
        leave=False,
    )


def _trajectory(run: _Run, samples, **stats) -> Trajectory:
    x = jax.tree.map(lambda *parts: np.concatenate(parts, axis=0), *samples)
    n_saved = jax.tree.leaves(x)[0].shape[0]
    if run.batched:
        x = jax.tree.map(lambda a: np.ascontiguousarray(np.moveaxis(a, 0, 1)), x)
    t = run.t0 + run.h * (run.save_every * np.arange(n_saved, dtype=np.float64))
    x, g = x if run.oriented else (x, None)
    return Trajectory(
        system=run.system,
        integrator=run.integrator.base if run.oriented else run.integrator,
        h=run.h,
        t=t,
        x=x,
        orientation=g,
        steps=(n_saved - 1) * run.save_every,
        save_every=run.save_every,
        stats=stats,
    )


def _raise_failure(run: _Run, samples, saved, done, fail_step, fail_res, x):
    failed = np.flatnonzero(np.atleast_1d(fail_step) >= 0)
    member = int(failed[np.argmin(np.atleast_1d(fail_step)[failed])])
    first = int(np.atleast_1d(fail_step)[member])
    residual = float(np.atleast_1d(fail_res)[member])
    # Samples of this chunk strictly before the failing step are valid.
    valid = max(0, (first - 1) // run.save_every - done)
    kept = [*samples, jax.tree.map(lambda a: a[:valid], saved)]
    partial = _trajectory(run, kept)
    last = jax.tree.map(lambda a: np.asarray(a)[member] if run.batched else np.asarray(a), x)
    if run.oriented:
        last = last[0]
    raise StepFailure(
        step=first,
        residual=residual if math.isfinite(residual) else float("nan"),
        reason=(
            f"{run.integrator.failure} at t = {run.t0 + run.h * (first - 1):.6g}, "
            f"of {run.steps} steps"
        ),
        trajectory=partial,
        last_state=last,
        batch_index=member if run.batched else None,
    )
