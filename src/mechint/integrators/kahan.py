"""Kahan's method (Hirota-Kimura discretization) for quadratic vector fields (docs/math.md §2).

For a quadratic field ẋ = Q(x, x) + Bx + c, Kahan's map is
(x' − x)/h = Q(x, x') + ½B(x + x') + c  (Q polarized): linearly implicit, order 2,
symmetric.  One linear solve a step:
(𝟙 − h Q(x, ·) − (h/2) B) x' = x + (h/2) B x + h c,  Q(x, ·)_ik = Σ_j Q_ijk x_j.
Every ``QuadraticVectorField`` is served (``QuadraticField``, ``LotkaVolterra``,
``EulerTop``); the system's ``kahan_step`` does the solve.  For the Euler top, with
ε = h/2 and (i, j, k) cyclic, (m_i' − m_i)/h = (a_i/2)(m_j' m_k + m_j m_k'), i.e.
m' = (𝟙 − ε B(m))⁻¹ m with B(m) = [[0, a1 m3, a1 m2], [a2 m3, 0, a2 m1], [a3 m2, a3 m1, 0]]
(Kahan 1993; "Kahan's integrator for the free rigid body"), solved in closed form
(``systems.euler_top.kahan_step``).  The map keeps the integrals K_k and d_i/d_j of
``EulerTop.kahan_integrals`` exactly; H and C only to O(h²).  It is Poisson (for hat(m))
iff energy preserving; both fail at O(h³) per step for distinct moments and hold with
two equal moments.  A singular linear system is a failed step (``Reason.SINGULAR``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

from mechint.maps import Integrator, StepStatus, Traits, serves_only
from mechint.systems.base import QuadraticVectorField
from mechint.systems.euler_top import kahan_step as euler_top_step

__all__ = ["Kahan", "euler_top_step"]


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
        return system.kahan_step(x, h)

    def preserved(self, system: QuadraticVectorField, x, h) -> dict:
        return system.kahan_integrals(x, h)

    def poisson_on(self, system) -> bool:
        return isinstance(system, QuadraticVectorField) and system.kahan_poisson()
