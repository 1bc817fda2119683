"""Gauss-Legendre collocation, s = 1..4 stages (Hairer, Lubich, Wanner, GNI II.1.3).

x_{k+1} = x_k + h Σ b_i f(x_k + Z_i),  Z_i = h Σ_j a_ij f(x_k + Z_j): the s stage
increments Z are solved together by Newton with the exact Jacobian
(``mechint.solvers.Newton``), from Z_i = c_i h f(x_k); a step whose Newton does not
converge fails (``Reason.NOT_CONVERGED``).  Order 2s, symmetric, symplectic for
canonical systems, and every quadratic invariant is kept exactly (the coefficients,
``tableau.GAUSS``, are verified on import: B(2s), C(s), D(s), b_i a_ij + b_j a_ji =
b_i b_j and symmetry, to 4e-16).  s = 1 is the implicit midpoint rule.  Like the
midpoint rule, it keeps H only where H is quadratic (it is not an energy integrator).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax
import jax.numpy as jnp

from mechint._validate import whole_number
from mechint.errors import InputError
from mechint.integrators.tableau import GAUSS
from mechint.maps import (
    ImplicitIntegrator,
    Reason,
    Setting,
    StepStatus,
    Traits,
    kept,
    status,
)
from mechint.solvers import Newton

_stages = whole_number("stages")


def _coefficients(stages: int, like):
    """(A, b, c) of ``GAUSS[stages]`` in the state's precision."""
    dtype = jax.tree.leaves(like)[0].dtype
    return tuple(jnp.asarray(v, dtype=dtype) for v in GAUSS[stages].arrays)


def _stage_values(system, x, Z):
    """f(x + Z_i) for every stage i (Z: leaves with a leading stage axis)."""
    return jax.vmap(lambda z: system.vector_field(jax.tree.map(jnp.add, x, z)))(Z)


def _residual(Z, args):
    """Z_i − h Σ_j a_ij f(x + Z_j)."""
    system, x, h, A = args
    F = _stage_values(system, x, Z)
    return jax.tree.map(lambda z, f: z - h * jnp.tensordot(A, f, axes=1), Z, F)


@final
@dataclasses.dataclass(frozen=True)
class Gauss(ImplicitIntegrator):
    """Gauss-Legendre collocation with ``stages`` = 1..4 (order 2 stages)."""

    stages: int = 2
    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "gauss"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("stages", "gauss: 1, 2 (default), 3 or 4 stages (order 2s)", _stages),
    )

    def __post_init__(self):
        if self.stages not in GAUSS:
            raise InputError("stages", f"must be 1, 2, 3 or 4, got {self.stages!r}")
        self.settle_traits()

    def derived_traits(self) -> Traits:
        return Traits(order=2 * self.stages, symmetric=True, explicit=False, symplectic=True,
                      forced=True)  # fmt: skip

    def cannot_serve(self, system) -> str | None:
        return None  # every system has a vector field

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        A, b, c = _coefficients(self.stages, x)
        f0 = system.vector_field(x)
        guess = jax.tree.map(lambda v: (h * c).reshape((-1,) + (1,) * v.ndim) * v, f0)
        Z, st = self.solver.solve(_residual, guess, (system, x, h, A))
        F = _stage_values(system, x, Z)
        x_next = jax.tree.map(lambda u, f: u + h * jnp.tensordot(b, f, axes=1), x, F)
        x_next = system.advance_clock(x, x_next, h)
        return x_next, status(st.converged, st.residual, Reason.NOT_CONVERGED)

    def preserved(self, system, x, h) -> dict:
        return kept(system, system.quadratic_invariants, x)
