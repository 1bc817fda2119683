"""Newton's method with the exact Jacobian from JAX, jit/vmap-safe and differentiable.

Failure is returned as a status (converged flag, residual, iterations), never raised
under ``jit``: the driver turns it into a ``StepFailure`` naming the step.

Derivatives of the root (forward and reverse mode) come from the implicit function
theorem at the converged root, never from the iterations: with the chart
c(d) = retract(z*, d) centred at the root and g(d, θ) = G(c(d); θ) for whatever the
residual closes over (θ: the state, h, the system's parameters),
ż = c'(0) ḋ with ∂_d g · ḋ = −∂_θ G · θ̇.  One Jacobian (the one Newton's last
iteration used) and one small linear solve per tangent; ``while_loop`` (which has no
reverse mode) is never differentiated, and the tangent map of a root on SO(n) stays in
its tangent space (W·so(n) through the Cayley chart).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float, Int

from mechint._validate import count
from mechint.errors import InputError
from mechint.solvers.linear import solve


class NewtonStatus(NamedTuple):
    converged: Bool[Array, ""]
    residual: Float[Array, ""]  # max-norm of the residual at the returned iterate
    iterations: Int[Array, ""]


@dataclasses.dataclass(frozen=True)
class Newton:
    r"""Solve G(z) = 0 by z ← z − DG(z)⁻¹ G(z), DG from ``jax.jacfwd``.

    Stops when the update satisfies ‖Δz‖∞ ≤ rtol·‖z‖∞ + atol (the iterate just
    formed is then accurate to round-off, Newton being quadratic) or after ``max_iter``
    iterations; converged is False if the cap was hit or anything became non-finite.
    """

    rtol: float = 1e-14
    atol: float = 1e-300
    max_iter: int = 30

    def __post_init__(self):
        count("max_iter", self.max_iter)
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not (value >= 0.0 and value < 1.0):
                raise InputError(name, f"must be in [0, 1), got {value!r}")

    def solve(
        self,
        residual: Callable,
        z0,
        args=(),
        *,
        retract: Callable | None = None,
        tangent=None,
        tangent_map: Callable | None = None,
        jacobian: Callable | None = None,
        pivot: bool = True,
        scale=None,
        simplified: Callable | None = None,
        residual_floor=None,
    ) -> tuple[object, NewtonStatus]:
        """Solve ``residual(z, args) = 0`` from ``z0``; returns (z, NewtonStatus).

        ``args`` (a pytree: the state, h, the system) holds everything the residual
        depends on besides z; ``residual``, ``retract`` and ``tangent_map`` must close
        over no traced value, so that the root is differentiated with respect to
        ``args`` (forward and reverse mode, by the implicit function theorem).

        On a manifold, give ``retract(z, d)`` (a chart centred at z, retract(z, 0) = z)
        and a zero ``tangent`` pytree: each iteration solves DG(retract(z, ·))(0) d = −G(z)
        and moves to retract(z, d), so every iterate stays on the manifold (e.g. Cayley
        updates W ← W cay(d) on SO(n)).  By default z lives in a vector space:
        retract(z, d) = z + d.  ``tangent_map(z, d)``, the derivative of retract(z, ·) at
        0 (e.g. W d), gives the same Jacobian as DG(z)·tangent_map(z, ·) without
        differentiating the chart, when ``residual`` is defined around the manifold.

        ``jacobian(z, args)``, when given, is that Jacobian written out (the d×d matrix
        of d ↦ G(chart(z, d)) at 0, in the flattened coordinates), used by the
        iterations and by the derivatives instead of ``jax.jacfwd``: for residuals whose
        Jacobian has a closed form cheaper than d forward passes.  ``pivot=False``:
        the linear solves make no row exchanges (``solvers.linear.solve``), for a
        Jacobian close to a positive diagonal; a poor elimination costs iterations or a
        failed status, never a wrong root (the iteration stops only where the update,
        hence the residual, vanishes).

        ``scale`` (a scalar, may depend on ``args``): the size the update is judged
        against where ‖z‖∞ is smaller, ‖Δz‖∞ ≤ rtol·max(‖z‖∞, scale) + atol: for an
        unknown whose root may be 0 or tiny, as a Lagrange multiplier (the constrained
        maps pass the multiplier that moves the positions by their own size).

        ``simplified(z0, args)``: one matrix, formed once at the start, that every
        iteration solves with instead of the Jacobian (simplified Newton: it converges
        linearly, at the rate of its difference from the Jacobian, so give it
        ``max_iter`` to match); the derivatives still come from the exact Jacobian.
        ``residual_floor`` (a scalar, may depend on ``args``): the iteration is also done
        where max |G(z)| is at most this (the residual's own rounding, for unknowns whose
        updates cannot reach rtol of their size: the rounding of G divided by a small
        singular value of its Jacobian).
        """
        if retract is None:
            retract = _add
            tangent = jax.tree.map(jnp.zeros_like, z0)
        flat_t, unravel_t = ravel_pytree(tangent)
        zero = jnp.zeros_like(flat_t)

        def G(z, args):
            return ravel_pytree(residual(z, args))[0]

        def chart(z, d):
            """The chart centred at z (to first order when ``tangent_map`` is given)."""
            if tangent_map is None:
                return retract(z, unravel_t(d))
            return _add(z, tangent_map(z, unravel_t(d)))

        # Newton runs on stopped gradients (the iterations are never differentiated) ...
        frozen = jax.lax.stop_gradient(args)

        def local(d, z):
            g = G(chart(z, d), frozen)
            return g, g

        if simplified is not None:
            fixed = simplified(jax.lax.stop_gradient(z0), frozen)

            def jac(d, z):
                return fixed, G(z, frozen)

        elif jacobian is None:
            jac = jax.jacfwd(local, has_aux=True)
        else:

            def jac(d, z):
                return jacobian(z, frozen), G(z, frozen)

        def size(z):
            return jnp.max(jnp.stack([jnp.max(jnp.abs(a)) for a in jax.tree.leaves(z)]))

        def finite(z):
            return jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in jax.tree.leaves(z)]))

        def cond(state):
            _, i, done, ok = state
            return (i < self.max_iter) & ~done & ok

        # rtol below the precision of the state (float32 runs) is raised to a few ulps
        rtol = max(self.rtol, 8.0 * float(jnp.finfo(flat_t.dtype).eps))

        def stopped(value):
            if value is None:
                return jnp.zeros((), flat_t.dtype)
            return jnp.asarray(jax.lax.stop_gradient(value), flat_t.dtype)

        floor, g_floor = stopped(scale), stopped(residual_floor)

        def body(state):
            z, i, _, _ = state
            J, g = jac(zero, z)
            d = solve(J, -g, pivot=pivot)
            z = retract(z, unravel_t(d))
            done = jnp.max(jnp.abs(d)) <= rtol * jnp.maximum(size(z), floor) + self.atol
            if residual_floor is not None:
                done = done | (jnp.max(jnp.abs(g)) <= g_floor)
            return z, i + 1, done, finite(z)

        z0 = jax.lax.stop_gradient(z0)
        init = (z0, jnp.asarray(0), jnp.asarray(False), finite(z0))
        z, iterations, done, ok = jax.lax.while_loop(cond, body, init)
        res = jnp.max(jnp.abs(G(z, frozen)))
        converged = done & ok & jnp.isfinite(res)
        # ... and the root's dependence on what the residual closes over comes from the
        # implicit function theorem (see the module docstring)
        z = _implicit(G, chart, jacobian, (zero.shape, zero.dtype), z, args)
        return z, NewtonStatus(converged, res, iterations)


@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3))
def _implicit(G, chart, jacobian, tangent_space, z, args):
    """The root z of G(·, args) = 0 (given), as a function of ``args``; ``chart(z, d)``
    for d in ``tangent_space`` = (shape, dtype); ``jacobian``: the written-out
    Jacobian or None."""
    return z


@_implicit.defjvp
def _implicit_jvp(G, chart, jacobian, tangent_space, primals, tangents):
    z, args = primals
    # the root as a function of args again, so that the rule itself differentiates
    # correctly (second derivatives)
    z = _implicit(G, chart, jacobian, tangent_space, z, args)
    zero = jnp.zeros(*tangent_space)
    if jacobian is None:
        J = jax.jacfwd(lambda d: G(chart(z, d), args))(zero)
    else:
        J = jacobian(z, args)
    g_dot = jax.jvp(lambda a: G(z, a), (args,), (tangents[1],))[1]
    # reverse mode transposes this solve as a solve with Jᵀ (``custom_linear_solve``),
    # not by transposing the elimination's row exchanges: XLA's CPU compiler (jaxlib
    # 0.10.2) miscompiles that transposed exchange vmapped over ≥ 33 states (the
    # structured derivative of a run's chunk, ``integrate._chunk_jvp``), which gave
    # RATTLE's parameter gradients 24-45 % wrong (tests/systems/test_constrained.py)
    d_dot = jax.lax.custom_linear_solve(
        lambda v: J @ v, -g_dot, lambda _, b: solve(J, b), lambda _, b: solve(J.T, b)
    )
    z_dot = jax.jvp(lambda d: chart(z, d), (zero,), (d_dot,))[1]
    return z, z_dot


def _add(z, d):
    return jax.tree.map(lambda a, b: a + b, z, d)
