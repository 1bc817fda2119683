"""Newton's method with the exact Jacobian from JAX, jit/vmap-safe.

Failure is returned as a status (converged flag, residual, iterations), never raised
under ``jit``: the driver turns it into a ``StepFailure`` naming the step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
        *,
        retract: Callable | None = None,
        tangent=None,
        tangent_map: Callable | None = None,
    ) -> tuple[object, NewtonStatus]:
        """Solve ``residual(z) = 0`` from ``z0``; returns (z, NewtonStatus).

        On a manifold, give ``retract(z, d)`` (a chart centred at z, retract(z, 0) = z)
        and a zero ``tangent`` pytree: each iteration solves DG(retract(z, ·))(0) d = −G(z)
        and moves to retract(z, d), so every iterate stays on the manifold (e.g. Cayley
        updates W ← W cay(d) on SO(n)).  By default z lives in a vector space:
        retract(z, d) = z + d.  ``tangent_map(z, d)``, the derivative of retract(z, ·) at
        0 (e.g. W d), gives the same Jacobian as DG(z)·tangent_map(z, ·) without
        differentiating the chart, when ``residual`` is defined around the manifold.
        """
        if retract is None:
            retract = _add
            tangent = jax.tree.map(jnp.zeros_like, z0)
        flat_t, unravel_t = ravel_pytree(tangent)
        zero = jnp.zeros_like(flat_t)

        def G(z):
            return ravel_pytree(residual(z))[0]

        def local(d, z):
            if tangent_map is None:
                g = G(retract(z, unravel_t(d)))
            else:
                g = G(_add(z, tangent_map(z, unravel_t(d))))
            return g, g

        jac = jax.jacfwd(local, has_aux=True)

        def size(z):
            return jnp.max(jnp.stack([jnp.max(jnp.abs(a)) for a in jax.tree.leaves(z)]))

        def finite(z):
            return jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in jax.tree.leaves(z)]))

        def cond(state):
            _, i, done, ok = state
            return (i < self.max_iter) & ~done & ok

        # rtol below the precision of the state (float32 runs) is raised to a few ulps
        rtol = max(self.rtol, 8.0 * float(jnp.finfo(flat_t.dtype).eps))

        def body(state):
            z, i, _, _ = state
            J, g = jac(zero, z)
            d = solve(J, -g)
            z = retract(z, unravel_t(d))
            done = jnp.max(jnp.abs(d)) <= rtol * size(z) + self.atol
            return z, i + 1, done, finite(z)

        init = (z0, jnp.asarray(0), jnp.asarray(False), finite(z0))
        z, iterations, done, ok = jax.lax.while_loop(cond, body, init)
        res = jnp.max(jnp.abs(G(z)))
        converged = done & ok & jnp.isfinite(res)
        return z, NewtonStatus(converged, res, iterations)


def _add(z, d):
    return jax.tree.map(lambda a, b: a + b, z, d)
