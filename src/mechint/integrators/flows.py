r"""Sub-flows for splitting methods.  Every flow is an integrator (one map protocol):

- the exact flows of the systems' natural pieces, whose one home is ``systems.flows``:
  ``Drift()`` and ``Kick()`` (the flows of T and V for H = T(p) + V(q)),
  ``AxisRotation(i)`` (the flow of m_i²/(2 I_i) for the Euler top, and for the heavy top
  on m and γ), ``GravityKick()`` and ``SymmetricFreeFlow()`` (the heavy top's potential
  and, for two equal moments, its exact free flow), ``BodyKick()`` and ``BodyDrift()``
  (rigid bodies in a potential: the potential, the drift of the centres);
- ``NumericalFlow(part, integrator)``: ``integrator`` advancing the system ``part`` (a
  piece of the Hamiltonian with the same state layout), e.g. midpoint on a
  non-separable piece.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

from mechint.errors import InputError
from mechint.maps import Integrator, StepStatus, Traits
from mechint.systems.base import System
from mechint.systems.flows import (
    AxisRotation,
    BodyDrift,
    BodyKick,
    Drift,
    FreeRotation,
    GravityKick,
    Kick,
    SymmetricFreeFlow,
)

__all__ = [
    "AxisRotation",
    "BodyDrift",
    "BodyKick",
    "Drift",
    "FreeRotation",
    "GravityKick",
    "Kick",
    "NumericalFlow",
    "SymmetricFreeFlow",
]


@final
@dataclasses.dataclass(frozen=True)
class NumericalFlow(Integrator):
    """``integrator`` advancing ``part``, a system for one piece of the Hamiltonian
    whose state has the same layout as the split system's."""

    part: System
    integrator: Integrator

    name: ClassVar[str] = "numerical-flow"

    def __post_init__(self):
        if not isinstance(self.integrator, Integrator):
            raise InputError("integrator", f"{self.integrator!r} is not a mechint integrator")
        if not isinstance(self.part, System):
            raise InputError("part", f"{self.part!r} is not a mechint system")
        self.settle_traits()

    def derived_traits(self) -> Traits:
        return self.integrator.traits

    def cannot_serve(self, system) -> str | None:
        why = self.integrator.cannot_serve(self.part)
        if why is not None:
            return f"{type(self.integrator).__name__} cannot advance the piece: {why}"
        if tuple(self.part.state_shape) != tuple(system.state_shape):
            return (
                f"the piece {self.part!r} has states of shape {self.part.state_shape}, the "
                f"split system {tuple(system.state_shape)}"
            )
        return None

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        return self.integrator.step(self.part, x, h)
