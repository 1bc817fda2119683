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
        from mechint._validate import count

        count("max_iter", self.max_iter)
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not (value >= 0.0 and value < 1.0):
                from mechint.errors import InputError

                raise InputError(name, f"must be in [0, 1), got {value!r}")

    def solve(self, residual: Callable, z0) -> tuple[object, NewtonStatus]:
        flat0, unravel = ravel_pytree(z0)

        def G(flat):
            return ravel_pytree(residual(unravel(flat)))[0]

        def with_aux(flat):
            g = G(flat)
            return g, g

        jac = jax.jacfwd(with_aux, has_aux=True)

        def cond(state):
            _, i, done, finite = state
            return (i < self.max_iter) & ~done & finite

        def body(state):
            z, i, _, _ = state
            J, g = jac(z)
            dz = jnp.linalg.solve(J, -g)
            z = z + dz
            size = jnp.max(jnp.abs(dz))
            done = size <= self.rtol * jnp.max(jnp.abs(z)) + self.atol
            finite = jnp.all(jnp.isfinite(z))
            return z, i + 1, done, finite

        init = (flat0, jnp.asarray(0), jnp.asarray(False), jnp.all(jnp.isfinite(flat0)))
        z, iterations, done, finite = jax.lax.while_loop(cond, body, init)
        res = jnp.max(jnp.abs(G(z)))
        converged = done & finite & jnp.isfinite(res)
        return unravel(z), NewtonStatus(converged, res, iterations)
