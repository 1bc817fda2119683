r"""The explicit splitting integrator for the free rigid body (MATH.md §4).

H = Σ m_i²/(2 I_i) splits into three pieces whose flows are exact rotations about the
principal axes (``flows.AxisRotation``; McLachlan 1993, Reich 1993).  Order 2 is the
Strang splitting R1(h/2) R2(h/2) R3(h) R2(h/2) R1(h/2); orders 4, 6, 8 compose it with
Suzuki's 5-stage, Kahan-Li's 9-stage and Kahan-Li's 17-stage schemes.  Explicit, Poisson
for hat(m), and the Casimir |m|² is kept exactly (each rotation keeps it); H is kept only
to O(h^order).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

from mechint._validate import whole_number
from mechint.errors import InputError
from mechint.integrators.composition import Composition
from mechint.integrators.splitting import Splitting
from mechint.maps import Integrator, Setting, StepStatus, Traits, kept, serves_only
from mechint.systems.euler_top import AxisRotation, EulerTop

SCHEME_FOR_ORDER = {4: "suzuki4", 6: "kahan-li6", 8: "kahan-li8"}

_STRANG = Splitting((AxisRotation(0), AxisRotation(1), AxisRotation(2)), "strang")


_order = whole_number("order")


@final
@dataclasses.dataclass(frozen=True)
class RigidBodySplitting(Integrator):
    order: int = 2

    name: ClassVar[str] = "rigid-body-splitting"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("order", "rigid-body-splitting: 2 (default), 4, 6 or 8", _order),
    )

    def __post_init__(self):
        if self.order not in (2, *SCHEME_FOR_ORDER):
            raise InputError("order", f"must be 2, 4, 6 or 8, got {self.order!r}")

    @property
    def method(self) -> Integrator:
        """The Strang splitting, or its composition for order > 2."""
        if self.order == 2:
            return _STRANG
        return Composition(_STRANG, SCHEME_FOR_ORDER[self.order])

    @property
    def traits(self) -> Traits:  # type: ignore[override]
        return Traits(order=self.order, symmetric=True, explicit=True, poisson=True)

    def cannot_serve(self, system) -> str | None:
        return serves_only(system, (EulerTop,))

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        return self.method.step(system, x, h)

    def preserved(self, system, x, h) -> dict:
        return kept(system, ("C",), x)
