"""The Störmer-Verlet (leapfrog) method.

For H = T(p) + V(q), explicit ("velocity Verlet", kick-drift-kick):
    p_{k+½} = p_k − (h/2) ∇V(q_k),  q_{k+1} = q_k + h ∇T(p_{k+½}),
    p_{k+1} = p_{k+½} − (h/2) ∇V(q_{k+1}).
For a general H(q, p), the generalized leapfrog (Hairer, Lubich, Wanner, GNI (VI.3.4)):
    p_{k+½} = p_k − (h/2) ∂H/∂q(q_k, p_{k+½})                      (implicit, Newton),
    q_{k+1} = q_k + (h/2) (∂H/∂p(q_k, p_{k+½}) + ∂H/∂p(q_{k+1}, p_{k+½}))  (implicit),
    p_{k+1} = p_{k+½} − (h/2) ∂H/∂q(q_{k+1}, p_{k+½}).
Order 2, symmetric, symplectic; it is symplectic Euler B_{h/2} ∘ A_{h/2} and the Strang
splitting of the V and T flows, and keeps momentum maps of the form qᵀDp exactly.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

from mechint.integrators import forced, stages
from mechint.integrators.half_steps import implicit_half, momentum_update, position_half
from mechint.maps import (
    ImplicitIntegrator,
    StepStatus,
    Traits,
    combine,
    kept,
    ok_status,
    serves_only,
)
from mechint.solvers import Newton
from mechint.systems.canonical import Canonical, Separable
from mechint.systems.forced import Forced


@final
@dataclasses.dataclass(frozen=True)
class StormerVerlet(ImplicitIntegrator):
    solver: Newton = dataclasses.field(default_factory=Newton)

    # explicit for separable H (their use); a general H(q, p) takes Newton solves
    name: ClassVar[str] = "stormer-verlet"
    traits = Traits(order=2, symmetric=True, explicit=True, symplectic=True, forced=True)

    def cannot_serve(self, system) -> str | None:
        return serves_only(system.base if isinstance(system, Forced) else system, (Canonical,))

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        if isinstance(system, Forced):  # the discrete Lagrange–d'Alembert map
            return forced.stormer_verlet(self.solver, system, x, h)
        q, p = x
        if self.splits(system):
            p = p - (0.5 * h) * system.potential_gradient(q)
            q = q + h * system.kinetic_gradient(p)
            p = p - (0.5 * h) * system.potential_gradient(q)
            return (q, p), ok_status((q, p))
        Hq = lambda q, p: system.gradient(q, p)[0]  # noqa: E731
        Hp = lambda q, p: system.gradient(q, p)[1]  # noqa: E731
        half, s1 = implicit_half(self.solver, momentum_update, p, (system, q, p, 0.5 * h))
        v0 = Hp(q, half)
        q1, s2 = implicit_half(self.solver, position_half, q + h * v0, (system, q, half, h, v0))
        p1 = half - (0.5 * h) * Hq(q1, half)
        return (q1, p1), combine([s1, s2])

    def increment(self, system, x, h) -> tuple[object, StepStatus]:
        """For separable H the increments (Δq, Δp) formed directly (Δp = the two half
        kicks, Δq = h ∇T at the half-step momentum): their rounding is relative to the
        increment, as compensated summation needs; otherwise the default."""
        if not self.splits(system):
            return super().increment(system, x, h)
        q, p = x
        kick1 = -(0.5 * h) * system.potential_gradient(q)
        dq = h * system.kinetic_gradient(p + kick1)
        kick2 = -(0.5 * h) * system.potential_gradient(q + dq)
        d = (dq, kick1 + kick2)
        return d, ok_status((q + dq, p + d[1]))

    def splits(self, system) -> bool:
        """Whether a step on ``system`` is kick(h/2) ∘ drift(h) ∘ kick(h/2), the exact flows
        of V and T (a separable H, no forces doing work)."""
        return isinstance(system, Separable) and not isinstance(system, Forced)

    def forms_increment(self, system) -> bool:
        return self.splits(system)

    def merges_stages(self, system) -> bool:
        """On a separable H a composition's stages are kicks and drifts, and the last
        kick of a stage and the first of the next act at the same point."""
        return self.splits(system)

    def merged_stages(self, system, x, h, gamma, e=None):
        """One kick, then a drift and a merged kick per stage (``stages.advance_leapfrog``)."""
        return stages.advance_leapfrog(system, x, h, gamma, e)

    def preserved(self, system, x, h) -> dict:
        return kept(system, forced.kept_momenta(system), x)
