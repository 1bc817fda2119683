"""The implicit midpoint rule (Marsden, Example 3).

z_{k+1} − z_k = h X((z_k + z_{k+1})/2), solved for z_{k+1} by Newton with the exact
Jacobian (``mechint.solvers.Newton``, a field), starting from the explicit Euler guess.
Order 2, symmetric, symplectic for canonical systems, and it keeps every quadratic
invariant exactly: for the Euler top both H and C (so it is an energy integrator there),
yet it is not a Poisson map for hat(m).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax

from mechint.maps import Integrator, Reason, StepStatus, Traits, kept, status
from mechint.solvers import Newton


@final
@dataclasses.dataclass(frozen=True)
class ImplicitMidpoint(Integrator):
    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "midpoint"
    traits = Traits(order=2, symmetric=True, explicit=False, symplectic=True)  # type: ignore[assignment]

    def cannot_serve(self, system) -> str | None:
        return None  # every system has a vector field

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        f = system.vector_field

        def residual(z):
            mid = jax.tree.map(lambda a, b: 0.5 * (a + b), x, z)
            return jax.tree.map(lambda zz, xx, v: zz - xx - h * v, z, x, f(mid))

        guess = jax.tree.map(lambda xx, v: xx + h * v, x, f(x))
        z, st = self.solver.solve(residual, guess)
        return z, status(st.converged, st.residual, Reason.NOT_CONVERGED)

    def preserved(self, system, x, h) -> dict:
        return kept(system, system.quadratic_invariants, x)
