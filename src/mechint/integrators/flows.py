r"""Sub-flows for splitting methods: exact flows of the pieces of a split Hamiltonian, or
any integrator advancing a piece given as its own system.

A flow has ``traits`` (``Traits``; exact flows have order ``EXACT``), ``check(system)``,
``advance(system, x, t) -> (x, StepStatus)`` and ``keeps(system)``: the names of the
system's invariants it keeps exactly.

- ``Drift()``: the flow of T for H = T(p) + V(q): q ← q + t ∇T(p).
- ``Kick()``: the flow of V: p ← p − t ∇V(q).
- ``AxisRotation(i)``: for the Euler top, the flow of H_i = m_i²/(2 I_i): with (i, j, k)
  cyclic and ω = m_i/I_i, ṁ_j = ω m_k, ṁ_k = −ω m_j, a rotation about e_i by −ωt
  (McLachlan 1993, Reich 1993).  It keeps m_i and |m| (the Casimir) exactly.
- ``NumericalFlow(part, integrator)``: ``integrator`` advancing the system ``part`` (a
  piece of the Hamiltonian with the same state layout), e.g. midpoint on a non-separable
  piece.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp

from mechint.errors import InputError
from mechint.integrators.base import Traits, ok_status, require
from mechint.systems.canonical import Separable
from mechint.systems.euler_top import EulerTop

# The order recorded for an exact flow.
EXACT = 99

EXACT_TRAITS = Traits(order=EXACT, symmetric=True, explicit=True, symplectic=True, poisson=True)


@dataclasses.dataclass(frozen=True)
class Drift:
    """Exact flow of the kinetic energy T(p) of a separable Hamiltonian."""

    traits: ClassVar[Traits] = EXACT_TRAITS

    def check(self, system) -> None:
        require(self, system, (Separable,))

    def advance(self, system, x, t):
        q, p = x
        y = (q + t * system.kinetic_gradient(p), p)
        return y, ok_status(y)

    def keeps(self, system) -> tuple[str, ...]:
        return tuple(getattr(system, "momentum_maps", ()))


@dataclasses.dataclass(frozen=True)
class Kick:
    """Exact flow of the potential energy V(q) of a separable Hamiltonian."""

    traits: ClassVar[Traits] = EXACT_TRAITS

    def check(self, system) -> None:
        require(self, system, (Separable,))

    def advance(self, system, x, t):
        q, p = x
        y = (q, p - t * system.potential_gradient(q))
        return y, ok_status(y)

    def keeps(self, system) -> tuple[str, ...]:
        return tuple(getattr(system, "momentum_maps", ()))


@dataclasses.dataclass(frozen=True)
class AxisRotation:
    """Exact flow of H_i = m_i²/(2 I_i) for the Euler top (axis i = 0, 1, 2)."""

    axis: int

    traits: ClassVar[Traits] = EXACT_TRAITS

    def __post_init__(self):
        if self.axis not in (0, 1, 2):
            raise InputError("axis", f"must be 0, 1 or 2, got {self.axis!r}")

    def check(self, system) -> None:
        require(self, system, (EulerTop,))

    def advance(self, system, m, t):
        i = self.axis
        j, k = (i + 1) % 3, (i + 2) % 3
        theta = t * m[..., i] / system.inertia[i]
        c, s = jnp.cos(theta), jnp.sin(theta)
        mj, mk = m[..., j], m[..., k]
        out = [None] * 3
        out[i], out[j], out[k] = m[..., i], c * mj + s * mk, c * mk - s * mj
        y = jnp.stack(out, axis=-1)
        return y, ok_status(y)

    def keeps(self, system) -> tuple[str, ...]:
        return ("C",)


@dataclasses.dataclass(frozen=True)
class NumericalFlow:
    """``integrator`` advancing ``part``, a system for one piece of the Hamiltonian
    whose state has the same layout as the split system's."""

    part: object
    integrator: object

    def __post_init__(self):
        if not callable(getattr(self.integrator, "step", None)):
            raise InputError(
                "integrator", f"{self.integrator!r} is not a mechint integrator (no step)"
            )

    @property
    def traits(self) -> Traits:
        return self.integrator.traits

    def check(self, system) -> None:
        self.integrator.check(self.part)
        if tuple(self.part.state_shape) != tuple(system.state_shape):
            raise InputError(
                "flows",
                f"the piece {self.part!r} has states of shape {self.part.state_shape}, the "
                f"split system {tuple(system.state_shape)}",
            )

    def advance(self, system, x, t):
        return self.integrator.step(self.part, x, t)

    def keeps(self, system) -> tuple[str, ...]:
        return ()
