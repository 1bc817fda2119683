"""Kahan's method (Hirota-Kimura discretization) for quadratic vector fields (docs/math.md §2).

For a quadratic field ẋ = Q(x, x) + Bx + c, Kahan's map is
(x' − x)/h = Q(x, x') + ½B(x + x') + c  (Q polarized): linearly implicit, order 2,
symmetric.  One linear solve a step:
(𝟙 − h Q(x, ·) − (h/2) B) x' = x + (h/2) B x + h c,  Q(x, ·)_ik = Σ_j Q_ijk x_j.
Every ``QuadraticVectorField`` is served (``QuadraticField``, ``LotkaVolterra``,
``EulerTop``, the heavy tops): the system gives its quadratic form, this module
does the solve (``solve_quadratic``).  So is every Poisson system whose declared
degrees make its field quadratic (``systems.base.field_degree``: a cubic H with a
constant structure, Hénon–Heiles; a quadratic H with a linear one, the Clebsch top,
the so(n) bodies, the gyrostat): z' = z + δ, (𝟙 − (h/2) f'(z)) δ = h f(z), the same
map (``linearised_step``); on a cubic H with constant Π it keeps H̃ (``modified_energy``,
``preserved`` key ``"H~"``) and a measure (``Kahan.invariant_density``).  For the Euler top, with
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

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from mechint import maps
from mechint.maps import Integrator, StepStatus, Traits, serves_only
from mechint.solvers.linear import solve
from mechint.systems.base import QuadraticVectorField, field_degree

__all__ = ["Kahan", "euler_top_step", "linearised_step", "modified_energy", "solve_quadratic"]

# |det| below this many ulps of its terms' magnitude counts as singular (Kahan's step).
_SINGULAR_ULPS = 64.0


@final
@dataclasses.dataclass(frozen=True)
class Kahan(Integrator):
    """Kahan's linearly implicit, symmetric, second-order map (one linear solve a step;
    closed-form 3×3 solve for the Euler top)."""

    name: ClassVar[str] = "kahan"
    traits = Traits(order=2, symmetric=True, explicit=False)
    # a batch of 10⁶ Euler tops on one H100 (2026-11-26): 1.9e10 -> 4.8e10 body-steps/s
    # in float64, 4.2e10 -> 9.9e10 in float32 (``integrate._columns_in_loops``)
    batch_columns: ClassVar[bool] = True
    # eight steps an iteration of that loop, fused into one kernel: 4.7e10 -> 1.28e11
    # body-steps/s in float64, 8.1e10 -> 2.9e11 in float32, the same bits (one H100,
    # 2026-11-26; two steps 8.4e10 / 1.2e11, four 1.2e11 / 2.3e11, sixteen 1.2e11 / 2.4e11)
    batch_unroll: ClassVar[int] = 8

    def cannot_serve(self, system) -> str | None:
        if isinstance(system, QuadraticVectorField):
            return None
        degree = field_degree(system)
        if degree is not None and degree <= 2:
            return None
        why = serves_only(system, (QuadraticVectorField,))
        return ("it is not a quadratic field (nor a Poisson system whose declared energy "
                "degree makes its field quadratic: H cubic with a constant structure, "
                f"quadratic with a linear one); {why}")  # fmt: skip

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        if not isinstance(system, QuadraticVectorField):  # a Poisson field of degree ≤ 2
            z, st = linearised_step(system.coordinate_field, system.coordinates(x), h)
            return system.from_coordinates(z), st
        a = system.euler_coefficients()
        if a is not None:
            return euler_top_step(a, x, h)
        z, st = solve_quadratic(*system.quadratic_form(), system.to_field(x), h)
        return system.from_field(z), st

    def preserved(self, system, x, h) -> dict:
        if isinstance(system, QuadraticVectorField) or hasattr(system, "kahan_integrals"):
            return system.kahan_integrals(x, h)  # the system's own closed forms
        if system.constant_structure and system.energy_degree == 3:
            return {"H~": modified_energy(system, x, h)}
        if _linear(system):  # Kahan's map is the midpoint rule: a quadratic H is kept
            return {system.energy_name: system.hamiltonian(x)}
        return {}

    def invariant_density(self, system, h):
        """The density ρ of a measure ρ(z) dz that the map keeps on ``system`` (z its
        coordinates), where one is known, else None.  A cubic H with a constant
        structure: 1/det(𝟙 − (h/2) f'(z)) (Celledoni, McLachlan, Owren, Quispel 2013).
        The Euler top, ṁ_i = a_i m_j m_k: 1/d_1², d_i = 1 − (h/2)² a_j a_k m_i² (any
        d_i, or d_i d_j, alike: the ratios d_i/d_j are kept); the measure of Petrera and
        Suris's study, found here by ``diagnostics.measure_defect`` among powers of d_i
        and of det(𝟙 ∓ (h/2) f') and kept to round-off (tests)."""
        if _is_euler_top(system):
            a = system.euler_coefficients()

            def euler(m):
                d1 = 1.0 - (0.5 * h) ** 2 * a[1] * a[2] * m[..., 0] * m[..., 0]
                return 1.0 / (d1 * d1)

            return euler
        if not (system.constant_structure and getattr(system, "energy_degree", 0) == 3):
            return None
        f = system.coordinate_field

        def density(x):
            def one(z):
                A = jnp.eye(z.shape[-1], dtype=z.dtype) - (0.5 * h) * jax.jacfwd(f)(z)
                return 1.0 / jnp.linalg.det(A)

            return jnp.vectorize(one, signature="(d)->()")(system.coordinates(x))

        return density

    def poisson_on(self, system) -> bool:
        if not isinstance(system, QuadraticVectorField):
            return _linear(system)  # the midpoint rule on a linear field: symplectic
        return system.kahan_poisson()


def _linear(system) -> bool:
    """A linear field with a constant structure (a quadratic H), where Kahan's map is the
    implicit midpoint rule."""
    degree = field_degree(system)
    return bool(system.constant_structure and degree is not None and degree <= 1)


def _is_euler_top(system) -> bool:
    return isinstance(system, QuadraticVectorField) and system.euler_coefficients() is not None


def linearised_step(f, z, h) -> tuple[Any, maps.StepStatus]:
    """Kahan's map for a quadratic field f given as a function: z' = z + δ with
    (𝟙 − (h/2) f'(z)) δ = h f(z), the same map as the polarized form (f'(z) δ =
    2 Q(z, δ) + B δ), solved for the increment δ."""
    fz, J = f(z), jax.jacfwd(f)(z)
    A = jnp.eye(z.shape[-1], dtype=z.dtype) - (0.5 * h) * J
    delta, st = _solve(A, h * fz)
    z_next = z + delta
    finite = jnp.all(jnp.isfinite(z_next))
    return z_next, maps.StepStatus(st.ok & finite, st.residual, st.reason)


def modified_energy(system, x, h):
    """H̃ = H + (h/3) ∇Hᵀ (𝟙 − (h/2) f')⁻¹ f, which Kahan's map keeps exactly for a cubic
    H with a constant Poisson structure (Celledoni, McLachlan, Owren, Quispel 2013)."""
    return _modified_energy(system, system.coordinates(x), h)


@jax.jit
def _modified_energy(system, z, h):
    f = system.coordinate_field

    def one(z):
        grad = jax.grad(lambda w: system.hamiltonian(system.from_coordinates(w)))(z)
        A = jnp.eye(z.shape[-1], dtype=z.dtype) - (0.5 * h) * jax.jacfwd(f)(z)
        return system.hamiltonian(system.from_coordinates(z)) + (h / 3.0) * grad @ solve(A, f(z))

    return jnp.vectorize(one, signature="(d)->()")(z)


def _solve(A, rhs) -> tuple[Any, maps.StepStatus]:
    """A⁻¹ rhs, failing where the solve's relative backward error exceeds √eps (1.5e-8 in
    float64) or the solution is not finite: SINGULAR where A and rhs are finite (their
    system is singular, or so near it that the solution leaves the floating-point
    range), NON_FINITE (residual inf) where a term overflowed (a state too large).  The
    backward error is measured on the solution and rhs divided by max |rhs| (the
    solution's bits untouched), so that it cannot overflow for a finite solution."""
    out = solve(A, rhs)
    size = jnp.max(jnp.abs(rhs))
    scale = jnp.where(size > 0, size, jnp.ones_like(size))
    y, unit = out / scale, rhs / scale
    num = jnp.max(jnp.abs(A @ y - unit))
    den = jnp.max(jnp.sum(jnp.abs(A), axis=-1)) * jnp.max(jnp.abs(y)) + jnp.max(jnp.abs(unit))
    r = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), num)  # rhs = 0: an equilibrium
    ok = jnp.all(jnp.isfinite(out)) & (r < jnp.sqrt(jnp.finfo(A.dtype).eps))
    singular = jnp.all(jnp.isfinite(A)) & jnp.all(jnp.isfinite(rhs)) & ~ok
    return out, _status(ok, singular, jnp.where(jnp.isfinite(r), r, jnp.inf))


def solve_quadratic(Q, B, c, x, h) -> tuple[Any, maps.StepStatus]:
    """Kahan's step for ẋ = Q(x, x) + Bx + c: one linear solve
    (𝟙 − h Q(x, ·) − (h/2) B) x' = x + (h/2) B x + h c, failing (SINGULAR) where the
    solve's relative backward error exceeds √eps."""
    n = x.shape[-1]
    A = jnp.eye(n, dtype=x.dtype) - h * jnp.einsum("ijk,j->ik", Q, x) - (0.5 * h) * B
    rhs = x + (0.5 * h) * (B @ x) + h * c
    return _solve(A, rhs)


def _status(ok, singular, residual) -> maps.StepStatus:
    """A failure is SINGULAR where ``singular`` (the step's terms finite, its system
    singular), else NON_FINITE (residual inf: a term or the new state overflowed)."""
    reason = jnp.where(singular, maps.Reason.SINGULAR, maps.Reason.NON_FINITE)
    residual = jnp.where(ok | singular, residual, jnp.inf)
    return maps.StepStatus(ok, residual, reason.astype(jnp.int32))


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
    # component by component, stacked last: every operation elementwise on the members,
    # so that a batch's step is one fused pass (a stack before the division, or a
    # reduction over the stacked axis, splits it into five passes with a transpose)
    n1 = (m1 * (1.0 + s2 + s3 - s1) + 2.0 * p * m2 * m3) / det
    n2 = (m2 * (1.0 + s3 + s1 - s2) + 2.0 * q * m3 * m1) / det
    n3 = (m3 * (1.0 + s1 + s2 - s3) + 2.0 * r * m1 * m2) / det
    m_next = jnp.stack([n1, n2, n3], axis=-1)
    scale = 1.0 + jnp.abs(s1) + jnp.abs(s2) + jnp.abs(s3) + jnp.abs(t)
    regular = jnp.abs(det) > _SINGULAR_ULPS * jnp.finfo(det.dtype).eps * scale
    finite = jnp.isfinite(n1) & jnp.isfinite(n2) & jnp.isfinite(n3)
    ok = regular & finite
    # a failure is SINGULAR where det is small and finite, NON_FINITE (residual inf) where
    # a term or the new state overflowed (selects that fuse: the batch's rate holds)
    overflow = (regular & ~finite) | ~jnp.isfinite(det)
    reason = jnp.where(overflow, maps.Reason.NON_FINITE, maps.Reason.SINGULAR)
    residual = jnp.where(overflow, jnp.inf, jnp.abs(det))
    return m_next, maps.StepStatus(ok, residual, reason.astype(jnp.int32))
