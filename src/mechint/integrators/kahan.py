"""Kahan's method (Hirota-Kimura discretization) for quadratic vector fields (docs/math.md §2).

For a quadratic field ẋ = Q(x, x) + Bx + c, Kahan's map is
(x' − x)/h = Q(x, x') + ½B(x + x') + c  (Q polarized): linearly implicit, order 2,
symmetric.  One linear solve a step:
(𝟙 − h Q(x, ·) − (h/2) B) x' = x + (h/2) B x + h c,  Q(x, ·)_ik = Σ_j Q_ijk x_j.
Every ``QuadraticVectorField`` is served (``QuadraticField``, ``LotkaVolterra``,
``EulerTop``, the heavy tops): the system gives its quadratic form, this module
does the solve (``solve_quadratic``).  For the Euler top, with
ε = h/2 and (i, j, k) cyclic, (m_i' − m_i)/h = (a_i/2)(m_j' m_k + m_j m_k'), i.e.
m' = (𝟙 − ε B(m))⁻¹ m with B(m) = [[0, a1 m3, a1 m2], [a2 m3, 0, a2 m1], [a3 m2, a3 m1, 0]]
(Kahan 1993; "Kahan's integrator for the free rigid body"), solved in closed form
(``euler_top_step``, for every system whose ``euler_coefficients`` are given).  The map
keeps the integrals K_k and d_i/d_j of ``EulerTop.kahan_integrals`` exactly; H and C
only to O(h²).  It is Poisson (for hat(m)) iff energy preserving; both fail at O(h³) per
step for distinct moments and hold with two equal moments.  A singular linear system is
a failed step (``Reason.SINGULAR``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, final

import jax.numpy as jnp
from jaxtyping import Array, Float

from mechint import maps
from mechint.maps import Integrator, StepStatus, Traits, serves_only
from mechint.solvers.linear import solve
from mechint.systems.base import QuadraticVectorField

__all__ = ["Kahan", "euler_top_step", "solve_quadratic"]

# |det| below this many ulps of its terms' magnitude counts as singular (Kahan's step).
_SINGULAR_ULPS = 64.0


@final
@dataclasses.dataclass(frozen=True)
class Kahan(Integrator):
    """Kahan's linearly implicit, symmetric, second-order map (one linear solve a step;
    closed-form 3×3 solve for the Euler top)."""

    name: ClassVar[str] = "kahan"
    traits = Traits(order=2, symmetric=True, explicit=False)

    def cannot_serve(self, system) -> str | None:
        why = serves_only(system, (QuadraticVectorField,))
        return None if why is None else "it is not a quadratic field; " + why

    def step(self, system: QuadraticVectorField, x, h) -> tuple[object, StepStatus]:
        a = system.euler_coefficients()
        if a is not None:
            return euler_top_step(a, x, h)
        z, st = solve_quadratic(*system.quadratic_form(), system.to_field(x), h)
        return system.from_field(z), st

    def preserved(self, system: QuadraticVectorField, x, h) -> dict:
        return system.kahan_integrals(x, h)

    def poisson_on(self, system) -> bool:
        return isinstance(system, QuadraticVectorField) and system.kahan_poisson()


def solve_quadratic(Q, B, c, x, h) -> tuple[Any, maps.StepStatus]:
    """Kahan's step for ẋ = Q(x, x) + Bx + c: one linear solve
    (𝟙 − h Q(x, ·) − (h/2) B) x' = x + (h/2) B x + h c, failing (SINGULAR) where the
    solve's relative backward error exceeds √eps."""
    n = x.shape[-1]
    A = jnp.eye(n, dtype=x.dtype) - h * jnp.einsum("ijk,j->ik", Q, x) - (0.5 * h) * B
    rhs = x + (0.5 * h) * (B @ x) + h * c
    # solved for rhs / 2^e (|rhs / 2^e| < 1, the same bits scaled): the backward error
    # cannot overflow, and a solution that is not finite at this scale is a singular
    # system, while one that overflows only when scaled back is a state too large
    e = jnp.frexp(jnp.max(jnp.abs(rhs)))[1]
    unit = jnp.ldexp(rhs, -e)
    y = solve(A, unit)
    x_next = jnp.ldexp(y, e)
    r = jnp.max(jnp.abs(A @ y - unit)) / (
        jnp.max(jnp.sum(jnp.abs(A), axis=-1)) * jnp.max(jnp.abs(y)) + jnp.max(jnp.abs(unit))
    )
    # a backward error above √eps (1.5e-8 in float64) is a singular system
    regular = jnp.all(jnp.isfinite(y)) & (r < jnp.sqrt(jnp.finfo(x.dtype).eps))
    ok = regular & jnp.all(jnp.isfinite(x_next))
    finite = jnp.all(jnp.isfinite(A)) & jnp.all(jnp.isfinite(rhs)) & ~regular
    return x_next, _status(ok, finite, jnp.where(jnp.isfinite(r), r, jnp.inf))


def _status(ok, singular, residual) -> maps.StepStatus:
    """A failure is SINGULAR where ``singular`` (the step's terms finite, its system
    singular), else NON_FINITE (residual inf: a term or the new state overflowed)."""
    reason = jnp.where(singular, maps.Reason.SINGULAR, maps.Reason.NON_FINITE)
    return maps.StepStatus(ok, jnp.where(singular, residual, jnp.inf), reason.astype(jnp.int32))


def euler_top_step(
    a: Float[Array, " 3"], m: Float[Array, " 3"], h
) -> tuple[Float[Array, " 3"], maps.StepStatus]:
    """Closed-form Kahan step for the Euler top with coefficients a = (a1, a2, a3).

    With ε = h/2, p, q, r = ε a1, ε a2, ε a3, s1 = q r m1², s2 = p r m2², s3 = p q m3²,
    t = 2 p q r m1 m2 m3 and det = 1 − s1 − s2 − s3 − t:
    m1' = (m1 (1 + s2 + s3 − s1) + 2 p m2 m3)/det, and cyclically.  The step fails
    (SINGULAR) when |det| is within 64 ulp of the size of its terms, or (NON_FINITE)
    when a term or the new state overflows."""
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
    regular = jnp.abs(det) > _SINGULAR_ULPS * jnp.finfo(det.dtype).eps * scale
    finite = jnp.all(jnp.isfinite(m_next), axis=-1)
    ok = regular & finite
    return m_next, _status(ok, jnp.isfinite(scale) & ~(regular & ~finite), jnp.abs(det))
