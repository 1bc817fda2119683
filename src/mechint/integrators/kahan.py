"""Kahan's method (Hirota-Kimura discretization) for quadratic vector fields (MATH.md §2).

For a quadratic field ẋ = Q(x, x) + Bx + c, Kahan's map is
(x' − x)/h = Q(x, x') + ½B(x + x') + c  (Q polarized): linearly implicit, order 2,
symmetric.  One linear solve a step:
(𝟙 − h Q(x, ·) − (h/2) B) x' = x + (h/2) B x + h c,  Q(x, ·)_ik = Σ_j Q_ijk x_j.
Any system with ``quadratic_form()`` is served (``QuadraticField``, ``LotkaVolterra``).
For the Euler top, with ε = h/2 and (i, j, k) cyclic,
(m_i' − m_i)/h = (a_i/2)(m_j' m_k + m_j m_k'), i.e. m' = (𝟙 − ε B(m))⁻¹ m with
B(m) = [[0, a1 m3, a1 m2], [a2 m3, 0, a2 m1], [a3 m2, a3 m1, 0]]
(Kahan 1993; the Euler-top form follows "Kahan's integrator for the free rigid body").
The 3×3 system is solved in closed form: with p, q, r = ε a1, ε a2, ε a3,
s1 = q r m1², s2 = p r m2², s3 = p q m3², t = 2 p q r m1 m2 m3,
det = 1 − s1 − s2 − s3 − t and
m1' = (m1 (1 + s2 + s3 − s1) + 2 p m2 m3)/det, and cyclically.
The map keeps the integrals K_k and d_i/d_j of ``EulerTop.kahan_integrals`` exactly;
H and C only to O(h²).  It is Poisson (for hat(m)) iff energy preserving; both fail at
O(h³) per step for distinct moments and hold with two equal moments.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp
from jaxtyping import Array, Float

from mechint.errors import UnsupportedError
from mechint.integrators.base import StepStatus, Traits
from mechint.solvers.linear import solve
from mechint.systems.euler_top import EulerTop

# |det| below this many ulps of its terms' magnitude counts as singular.
_SINGULAR_ULPS = 64.0


def euler_top_step(a: Float[Array, 3], m: Float[Array, 3], h) -> tuple[Float[Array, 3], StepStatus]:
    """Closed-form Kahan step for the Euler top with coefficients a = (a1, a2, a3)."""
    eps = 0.5 * h
    p, q, r = eps * a[0], eps * a[1], eps * a[2]
    m1, m2, m3 = m[..., 0], m[..., 1], m[..., 2]
    s1, s2, s3 = q * r * m1 * m1, p * r * m2 * m2, p * q * m3 * m3
    t = 2.0 * p * q * r * m1 * m2 * m3
    det = 1.0 - s1 - s2 - s3 - t
    num = jnp.stack(
        [
            m1 * (1.0 + s2 + s3 - s1) + 2.0 * p * m2 * m3,
            m2 * (1.0 + s3 + s1 - s2) + 2.0 * q * m3 * m1,
            m3 * (1.0 + s1 + s2 - s3) + 2.0 * r * m1 * m2,
        ],
        axis=-1,
    )
    m_next = num / det[..., None]
    scale = 1.0 + jnp.abs(s1) + jnp.abs(s2) + jnp.abs(s3) + jnp.abs(t)
    ok = (jnp.abs(det) > _SINGULAR_ULPS * jnp.finfo(det.dtype).eps * scale) & jnp.all(
        jnp.isfinite(m_next), axis=-1
    )
    return m_next, StepStatus(ok, jnp.abs(det))


def quadratic_step(Q, B, c, x: Float[Array, " n"], h) -> tuple[Float[Array, " n"], StepStatus]:
    """One Kahan step of ẋ = Q(x, x) + Bx + c (Q polarized); the status fails when the
    linear system is singular (non-finite solution or backward error above 1e-8)."""
    n = x.shape[-1]
    A = jnp.eye(n, dtype=x.dtype) - h * jnp.einsum("ijk,j->ik", Q, x) - (0.5 * h) * B
    rhs = x + (0.5 * h) * (B @ x) + h * c
    x_next = solve(A, rhs)
    r = jnp.max(jnp.abs(A @ x_next - rhs)) / (
        jnp.max(jnp.sum(jnp.abs(A), axis=-1)) * jnp.max(jnp.abs(x_next)) + jnp.max(jnp.abs(rhs))
    )
    ok = jnp.all(jnp.isfinite(x_next)) & (r < 1e-8)
    return x_next, StepStatus(ok, jnp.where(jnp.isfinite(r), r, jnp.inf))


@dataclasses.dataclass(frozen=True)
class Kahan:
    """Kahan's linearly implicit, symmetric, second-order map (one linear solve a step;
    closed-form 3×3 solve for the Euler top)."""

    name: ClassVar[str] = "kahan"
    traits: ClassVar[Traits] = Traits(order=2, symmetric=True, explicit=False)
    failure: ClassVar[str] = (
        "Kahan's linear system is singular (residual = |det| for the Euler top, the relative "
        "backward error of the solve otherwise)"
    )

    def check(self, system) -> None:
        if not isinstance(system, EulerTop) and not callable(
            getattr(system, "quadratic_form", None)
        ):
            raise UnsupportedError(
                "integrator",
                f"Kahan cannot advance {type(system).__name__}: it is not a quadratic field",
                "use EulerTop, QuadraticField or LotkaVolterra (systems with quadratic_form())",
            )

    def step(self, system, x, h) -> tuple[Float[Array, " n"], StepStatus]:
        if isinstance(system, EulerTop):
            return euler_top_step(system.coefficients, x, h)
        Q, B, c = system.quadratic_form()
        return quadratic_step(Q, B, c, x, h)

    def preserved(self, system, x, h) -> dict:
        if isinstance(system, EulerTop):
            return system.kahan_integrals(x, h)
        return {}
