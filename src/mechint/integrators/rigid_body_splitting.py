r"""The explicit splitting integrator for the free rigid body and the heavy tops (docs/math.md
§4, §6).

The Euler top's H = Σ m_i²/(2 I_i) splits into three pieces whose flows are exact
rotations about the principal axes (``flows.AxisRotation``; McLachlan 1993, Reich 1993).
The heavy top's H = T + χ·γ splits into the kick of χ·γ and the free body acting on m
and γ alike (``HeavyTop.natural_split``: the principal rotations, or the exact free flow
of a body with two equal moments), the explicit Lie–Poisson splitting.  Order 2 is the
Strang splitting of the system's natural split (the Euler top's:
R1(h/2) R2(h/2) R3(h) R2(h/2) R1(h/2)); orders 4, 6, 8, 10 compose it with Suzuki's
5-stage, Kahan-Li's 9- and 17-stage and Sofroniou–Spaletta's 35-stage schemes.
Explicit and Poisson, and every Casimir is kept exactly (each piece keeps it; on the
Lagrange top m3 too); H is kept only to O(h^order).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, final

from mechint._validate import whole_number
from mechint.errors import InputError
from mechint.integrators import composition_schemes
from mechint.integrators.composition import Composition
from mechint.integrators.splitting import Splitting
from mechint.maps import Integrator, Setting, StepStatus, Traits, serves_only
from mechint.systems.base import BodiesInPotential
from mechint.systems.euler_top import EulerTop
from mechint.systems.flows import BodyDrift, BodyKick, FreeRotation
from mechint.systems.heavy_top import AbstractHeavyTop

SCHEME_FOR_ORDER = composition_schemes.FOR_ORDER

_STRANG = Splitting()  # the system's natural split: exact flows
# rigid bodies in a potential: the free motion (drift, and the free rotation's five
# principal rotations composed into one) around a whole kick, D(h/2) F(h/2) K(h) F(h/2)
# D(h/2): one evaluation of the forces a step (NO_SQUISH type; Dullweber, Leimkuhler,
# McLachlan 1997), where kick–free–kick takes two
_BODIES = Splitting((BodyDrift(), FreeRotation(), BodyKick()))


_order = whole_number("order")


@final
@dataclasses.dataclass(frozen=True)
class RigidBodySplitting(Integrator):
    order: int = 2

    name: ClassVar[str] = "rigid-body-splitting"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("order", "rigid-body-splitting: 2 (default), 4, 6, 8 or 10", _order),
    )

    def __post_init__(self):
        if self.order not in (2, *SCHEME_FOR_ORDER):
            raise InputError("order", f"must be 2, 4, 6, 8 or 10, got {self.order!r}")
        self.settle_traits()

    def method(self, system) -> Integrator:
        """The Strang splitting, or its composition for order > 2."""
        strang = _BODIES if isinstance(system, BodiesInPotential) else _STRANG
        if self.order == 2:
            return strang
        return Composition(strang, SCHEME_FOR_ORDER[self.order])

    def derived_traits(self) -> Traits:
        return Traits(order=self.order, symmetric=True, explicit=True, poisson=True)

    def cannot_serve(self, system) -> str | None:
        return serves_only(system, (EulerTop, AbstractHeavyTop, BodiesInPotential))

    def step(self, system, x, h) -> tuple[Any, StepStatus]:
        return self.method(system).step(system, x, h)

    def preserved(self, system, x, h) -> dict:
        if isinstance(system, BodiesInPotential):  # every piece keeps these (the
            return system.split_invariants(x)  # principal rotations included)
        return _STRANG.preserved(system, x, h)
