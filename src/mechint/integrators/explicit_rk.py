"""Explicit Runge-Kutta baselines: ``ExplicitEuler`` (order 1) and ``RK4`` (order 4).

x_{k+1} = x_k + h Σ b_i K_i,  K_i = f(x_k + h Σ_{j<i} a_ij K_j).  Neither keeps the
energy or the Casimir of a rigid body: they are the baselines the structure-preserving
maps are measured against.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax

from mechint.integrators import tableau as tab
from mechint.maps import Integrator, StepStatus, Traits, ok_status


def rk_step(table: tab.ButcherTableau, system, x, h):
    """One explicit RK step on any pytree state."""
    K = []
    for _, deps in table.stages():
        xi = x
        for j, a in deps:
            xi = jax.tree.map(lambda u, k, a=a: u + (h * a) * k, xi, K[j])
        K.append(system.vector_field(xi))
    out = x
    for bi, k in zip(table.b, K, strict=True):
        if bi != 0.0:
            out = jax.tree.map(lambda u, k, bi=bi: u + (h * bi) * k, out, k)
    return out


@dataclasses.dataclass(frozen=True)
class ExplicitRungeKutta(Integrator):
    """An explicit RK method given by its checked ``tableau`` (class data; abstract)."""

    tableau: ClassVar[tab.ButcherTableau]

    def cannot_serve(self, system) -> str | None:
        return None  # every system has a vector field

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        x_next = system.advance_clock(x, rk_step(self.tableau, system, x, h), h)
        return x_next, ok_status(x_next)


@final
@dataclasses.dataclass(frozen=True)
class ExplicitEuler(ExplicitRungeKutta):
    """Explicit Euler, x_{k+1} = x_k + h f(x_k). Order 1, not symmetric."""

    name: ClassVar[str] = "explicit-euler"
    tableau: ClassVar[tab.ButcherTableau] = tab.EULER
    traits = Traits(order=1, symmetric=False, explicit=True, forced=True)


@final
@dataclasses.dataclass(frozen=True)
class RK4(ExplicitRungeKutta):
    """The classical fourth-order Runge-Kutta method. Order 4, not symmetric."""

    name: ClassVar[str] = "rk4"
    tableau: ClassVar[tab.ButcherTableau] = tab.RK4
    traits = Traits(order=4, symmetric=False, explicit=True, forced=True)
