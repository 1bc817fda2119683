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

from mechint.maps import ImplicitIntegrator, Reason, StepStatus, Traits, kept, status
from mechint.solvers import Newton


def _residual(z, args):
    """z − x − h f((x + z)/2): the midpoint equation for x_{k+1} = z."""
    system, x, h = args
    mid = jax.tree.map(lambda a, b: 0.5 * (a + b), x, z)
    return jax.tree.map(lambda zz, xx, v: zz - xx - h * v, z, x, system.vector_field(mid))


def _increment_residual(d, args):
    """d − h f(x + d/2): the midpoint equation for the increment d = x_{k+1} − x_k."""
    system, x, h = args
    mid = jax.tree.map(lambda a, b: a + 0.5 * b, x, d)
    return jax.tree.map(lambda dd, v: dd - h * v, d, system.vector_field(mid))


@final
@dataclasses.dataclass(frozen=True)
class ImplicitMidpoint(ImplicitIntegrator):
    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "midpoint"
    traits = Traits(order=2, symmetric=True, explicit=False, symplectic=True, forced=True)

    def cannot_serve(self, system) -> str | None:
        return None  # every system has a vector field

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        guess = jax.tree.map(lambda xx, v: xx + h * v, x, system.vector_field(x))
        z, st = self.solver.solve(_residual, guess, (system, x, h))
        return system.advance_clock(x, z, h), status(
            st.converged, st.residual, Reason.NOT_CONVERGED
        )

    def increment(self, system, x, h) -> tuple[object, StepStatus]:
        """d = x_{k+1} − x_k solved for directly (its rounding is relative to |d|, not
        |x|), as Hairer's GNI codes do for compensated summation."""
        guess = jax.tree.map(lambda v: h * v, system.vector_field(x))
        d, st = self.solver.solve(_increment_residual, guess, (system, x, h))
        return d, status(st.converged, st.residual, Reason.NOT_CONVERGED)

    def forms_increment(self, system) -> bool:
        return True

    def preserved(self, system, x, h) -> dict:
        return kept(system, system.quadratic_invariants, x)
