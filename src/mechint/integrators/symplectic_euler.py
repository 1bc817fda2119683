"""Symplectic Euler (Marsden, Example 1) and its adjoint.

Variant "A" (Marsden's Example 1), for H = T(p) + V(q) explicit:
    q_{k+1} = q_k + h ∇T(p_k),   p_{k+1} = p_k − h ∇V(q_{k+1});
for a general H(q, p) implicit in q_{k+1} (Newton, a field):
    q_{k+1} = q_k + h ∂H/∂p(q_{k+1}, p_k),   p_{k+1} = p_k − h ∂H/∂q(q_{k+1}, p_k).
Variant "B" is its adjoint (A_{−h}⁻¹):
    p_{k+1} = p_k − h ∂H/∂q(q_k, p_{k+1}),   q_{k+1} = q_k + h ∂H/∂p(q_k, p_{k+1}).
Order 1, symplectic, not symmetric; B_{h/2} ∘ A_{h/2} is Störmer-Verlet.  Both keep
every momentum map of the form qᵀDp exactly (e.g. Kepler's angular momentum).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

from mechint.errors import InputError
from mechint.integrators import forced
from mechint.integrators.half_steps import implicit_half, momentum_update, position_update
from mechint.maps import (
    ImplicitIntegrator,
    Setting,
    StepStatus,
    Traits,
    kept,
    ok_status,
    serves_only,
)
from mechint.solvers import Newton
from mechint.systems.canonical import Canonical, Separable
from mechint.systems.forced import Forced


@final
@dataclasses.dataclass(frozen=True)
class SymplecticEuler(ImplicitIntegrator):
    variant: str = "A"
    solver: Newton = dataclasses.field(default_factory=Newton)

    # explicit for separable H (their use); a general H(q, p) takes Newton solves
    name: ClassVar[str] = "symplectic-euler"
    traits = Traits(order=1, symmetric=False, explicit=True, symplectic=True, forced=True)
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("variant", "symplectic-euler: A (Marsden Example 1, default) or B"),
    )

    def __post_init__(self):
        if self.variant not in ("A", "B"):
            raise InputError("variant", f"must be 'A' or 'B', got {self.variant!r}")

    def cannot_serve(self, system) -> str | None:
        return serves_only(system.base if isinstance(system, Forced) else system, (Canonical,))

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        if isinstance(system, Forced):  # the discrete Lagrange–d'Alembert map
            return forced.symplectic_euler(self.solver, self.variant, system, x, h)
        q, p = x
        if isinstance(system, Separable):
            if self.variant == "A":
                q = q + h * system.kinetic_gradient(p)
                p = p - h * system.potential_gradient(q)
            else:
                p = p - h * system.potential_gradient(q)
                q = q + h * system.kinetic_gradient(p)
            return (q, p), ok_status((q, p))
        Hq = lambda q, p: system.gradient(q, p)[0]  # noqa: E731
        Hp = lambda q, p: system.gradient(q, p)[1]  # noqa: E731
        if self.variant == "A":
            q1, status = implicit_half(
                self.solver, position_update, q + h * Hp(q, p), (system, q, p, h)
            )
            return (q1, p - h * Hq(q1, p)), status
        p1, status = implicit_half(
            self.solver, momentum_update, p - h * Hq(q, p), (system, q, p, h)
        )
        return (q + h * Hp(q, p1), p1), status

    def preserved(self, system, x, h) -> dict:
        return kept(system, forced.kept_momenta(system), x)
