"""The implicit midpoint rule (Marsden, Example 3).

z_{k+1} − z_k = h X((z_k + z_{k+1})/2), solved for z_{k+1} by Newton with the exact
Jacobian (``mechint.solvers.Newton``, a field), starting from the explicit Euler guess.
Order 2, symmetric, symplectic for canonical systems, and it keeps every quadratic
invariant exactly: for the Euler top both H and C (so it is an energy integrator there),
yet it is not a Poisson map for hat(m).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax

from mechint.integrators.base import StepStatus, Traits, require_vector_field
from mechint.solvers import Newton


@dataclasses.dataclass(frozen=True)
class ImplicitMidpoint:
    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "midpoint"
    traits: ClassVar[Traits] = Traits(order=2, symmetric=True, explicit=False, symplectic=True)
    failure: ClassVar[str] = (
        "Newton did not converge (residual = max-norm of the midpoint equation)"
    )

    def check(self, system) -> None:
        require_vector_field(self, system)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        f = system.vector_field

        def residual(z):
            mid = jax.tree.map(lambda a, b: 0.5 * (a + b), x, z)
            return jax.tree.map(lambda zz, xx, v: zz - xx - h * v, z, x, f(mid))

        guess = jax.tree.map(lambda xx, v: xx + h * v, x, f(x))
        z, status = self.solver.solve(residual, guess)
        return z, StepStatus(status.converged, status.residual)

    def preserved(self, system, x, h) -> dict:
        names = getattr(system, "quadratic_invariants", ())
        values = system.invariants(x)
        return {name: values[name] for name in names}
