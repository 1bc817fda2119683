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
import numpy as np
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
        rounding=None,
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
        singular value of its Jacobian).  ``rounding`` (a scalar, or a pytree of the
        residual's structure; may depend on ``args``): the iteration is also done where
        every |G_i(z)| is at most rounding_i and the update has stopped shrinking
        (‖Δz_k‖∞ > ‖Δz_{k−1}‖∞ / 2, where Newton's updates would fall quadratically) at
        a size within √eps of the unknowns' (not Newton's halving steps near a double root):
        the iterate is then at the residual's rounding, for unknowns of sizes orders
        apart (multipliers of heavy and light masses, of long and short rods) whose
        small updates are the rounding of the large ones.  Where the update test is
        met first, it stops as without ``rounding``, at the same iterate.
        """
        if retract is None:
            retract = _add
            tangent = jax.tree.map(jnp.zeros_like, z0)
        flat_t, unravel_t = ravel_pytree(tangent)
        space = (flat_t.shape, flat_t.dtype)  # (static: the closures below hold no array)

        def G(z, args):
            return ravel_pytree(residual(z, args))[0]

        def chart(z, d):
            """The chart centred at z (to first order when ``tangent_map`` is given)."""
            if tangent_map is None:
                return retract(z, unravel_t(d))
            return _add(z, tangent_map(z, unravel_t(d)))

        def size(z):
            return jnp.max(jnp.stack([jnp.max(jnp.abs(a)) for a in jax.tree.leaves(z)]))

        def finite(z):
            return jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in jax.tree.leaves(z)]))

        # rtol below the precision of the state (float32 runs) is raised to a few ulps
        rtol = max(self.rtol, 8.0 * float(jnp.finfo(space[1]).eps))
        near = float(np.sqrt(jnp.finfo(space[1]).eps))
        max_iter, atol = self.max_iter, self.atol

        def iterate(z0, args, bounds):
            """The iterations from z0: (z, (iterations, done, ok)).  The primal of the
            root's custom derivative (``_root``): never differentiated."""
            floor, g_floor, g_round = bounds
            zero = jnp.zeros(*space)

            def local(d, z):
                g = G(chart(z, d), args)
                return g, g

            if simplified is not None:
                fixed = simplified(z0, args)

                def jac(d, z):
                    return fixed, G(z, args)

            elif jacobian is None:
                jac = jax.jacfwd(local, has_aux=True)
            else:
                written = jacobian

                def jac(d, z):
                    return written(z, args), G(z, args)

            def cond(state):
                _, i, done, ok = state[:4]
                return (i < max_iter) & ~done & ok

            def body(state):
                z, i = state[:2]
                J, g = jac(zero, z)
                d = solve(J, -g, pivot=pivot)
                z = retract(z, unravel_t(d))
                step = jnp.max(jnp.abs(d))
                done = step <= rtol * jnp.maximum(size(z), floor) + atol
                if residual_floor is not None:
                    done = done | (jnp.max(jnp.abs(g)) <= g_floor)
                if rounding is None:
                    return z, i + 1, done, finite(z)
                # (the update within √eps of the unknowns: not the halving steps of Newton
                # near a double root, whose residual may be as small)
                stalled = ((2.0 * step > state[4]) & (step <= near * jnp.maximum(size(z), floor))
                           & jnp.all(jnp.abs(g) <= g_round))  # fmt: skip
                return z, i + 1, done | stalled, finite(z), step

            init = (z0, jnp.asarray(0), jnp.asarray(False), finite(z0))
            if rounding is not None:
                init += (jnp.asarray(jnp.inf, space[1]),)
            z, iterations, done, ok = jax.lax.while_loop(cond, body, init)[:4]
            return z, (iterations, done, ok)

        def bound(value):
            return jnp.zeros((), space[1]) if value is None else jnp.asarray(value, space[1])

        # the root as a function of ``args`` (its derivatives from the implicit function
        # theorem, never from the iterations: see the module docstring); z0 and the
        # bounds carry no derivative
        # (flat, as the residual the iterations see; a scalar broadcasts)
        g_round = None if rounding is None else ravel_pytree(rounding)[0].astype(space[1])
        bounds = jax.lax.stop_gradient((bound(scale), bound(residual_floor), g_round))
        z, (iterations, done, ok) = _root(G, chart, jacobian, space, iterate,
                                         jax.lax.stop_gradient(z0), args, bounds)  # fmt: skip
        res = jnp.max(jnp.abs(G(jax.lax.stop_gradient(z), jax.lax.stop_gradient(args))))
        converged = done & ok & jnp.isfinite(res)
        return z, NewtonStatus(converged, res, iterations)


@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3, 4))
def _root(G, chart, jacobian, tangent_space, iterate, z0, args, bounds):
    """The root z of G(·, args) = 0 that ``iterate(z0, args, bounds)`` finds, and its
    (iterations, done, ok), as a function of ``args``; ``chart(z, d)`` for d in
    ``tangent_space`` = (shape, dtype); ``jacobian``: the written-out Jacobian or None.
    The iterations are this function's primal, inside the custom derivative: a
    ``while_loop`` on stopped inputs outside it would be reached by JAX's reverse pass
    through a loop of steps as if the root were held fixed (wrong second derivatives)."""
    return iterate(z0, args, bounds)


@_root.defjvp
def _root_jvp(G, chart, jacobian, tangent_space, iterate, primals, tangents):
    z0, args, bounds = primals
    # the root as a function of args again, so that the rule itself differentiates
    # correctly (second derivatives)
    z, aux = _root(G, chart, jacobian, tangent_space, iterate, z0, args, bounds)
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
    no_tangent = tuple(np.zeros(jnp.shape(a), dtype=jax.dtypes.float0) for a in aux)
    return (z, aux), (z_dot, no_tangent)


def _add(z, d):
    return jax.tree.map(lambda a, b: a + b, z, d)
