r"""Splitting methods for H = H_1 + ... + H_m (Marsden §4; MATH.md §4).

With φ^i_t the (exact or numerical) flow of H_i:
- Lie-Trotter: Φ_h = φ^m_h ∘ ... ∘ φ^1_h (φ^1 first), order 1;
- Strang: Φ_h = φ^1_{h/2} ∘ ... ∘ φ^{m−1}_{h/2} ∘ φ^m_h ∘ φ^{m−1}_{h/2} ∘ ... ∘ φ^1_{h/2},
  symmetric and of order 2 (when every sub-flow is exact, or symmetric of order >= 2).
A composition of symplectic (Poisson) flows is symplectic (Poisson), and it keeps every
invariant all its flows keep.  Without ``flows``, the system's natural exact split is
used: (Drift, Kick) for separable H = T + V (Lie-Trotter is then symplectic Euler A,
Strang the position Verlet), the three axis rotations for the Euler top.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp

from mechint.errors import InputError, UnsupportedError
from mechint.integrators.base import StepStatus, Traits
from mechint.integrators.flows import EXACT_TRAITS, AxisRotation, Drift, Kick
from mechint.systems.canonical import Separable
from mechint.systems.euler_top import EulerTop

SCHEMES = ("lie-trotter", "strang")


def natural_flows(system) -> tuple:
    """The exact split of ``system``'s Hamiltonian, when it has one."""
    if isinstance(system, Separable):
        return (Drift(), Kick())
    if isinstance(system, EulerTop):
        return (AxisRotation(0), AxisRotation(1), AxisRotation(2))
    raise UnsupportedError(
        "flows",
        f"{type(system).__name__} has no built-in exact splitting",
        "pass flows=(...) (see mechint.integrators.flows), e.g. NumericalFlow pieces",
    )


def combine(statuses) -> StepStatus:
    """All ok, the largest residual."""
    ok = statuses[0].ok
    res = statuses[0].residual
    for s in statuses[1:]:
        ok, res = ok & s.ok, jnp.maximum(res, s.residual)
    return StepStatus(ok, res)


@dataclasses.dataclass(frozen=True)
class Splitting:
    flows: tuple | None = None
    scheme: str = "strang"

    name: ClassVar[str] = "splitting"
    failure: ClassVar[str] = "a sub-flow failed (residual = the largest sub-flow residual)"

    def __post_init__(self):
        if self.scheme not in SCHEMES:
            raise InputError(
                "scheme", f"unknown splitting scheme {self.scheme!r}", "use " + " or ".join(SCHEMES)
            )
        if self.flows is not None:
            flows = tuple(self.flows)
            if not flows or not all(callable(getattr(f, "advance", None)) for f in flows):
                raise InputError(
                    "flows",
                    "must be a non-empty sequence of flows (objects with advance(system, x, t))",
                    "see mechint.integrators.flows: Drift, Kick, AxisRotation, NumericalFlow",
                )
            object.__setattr__(self, "flows", flows)

    @property
    def traits(self) -> Traits:
        if self.flows is None:
            sub = [EXACT_TRAITS]  # the natural split is into exact flows
        else:
            sub = [f.traits for f in self.flows]
        strang = self.scheme == "strang"
        symmetric = strang and all(t.symmetric for t in sub)
        return Traits(
            order=2 if symmetric and all(t.order >= 2 for t in sub) else 1,
            symmetric=symmetric,
            explicit=all(t.explicit for t in sub),
            symplectic=all(t.symplectic for t in sub),
            poisson=all(t.poisson for t in sub),
        )

    def _flows(self, system) -> tuple:
        return self.flows if self.flows is not None else natural_flows(system)

    def check(self, system) -> None:
        for f in self._flows(system):
            f.check(system)

    def step(self, system, x, h):
        flows = self._flows(system)
        if self.scheme == "lie-trotter":
            plan = [(f, h) for f in flows]
        else:
            half = [(f, 0.5 * h) for f in flows[:-1]]
            plan = [*half, (flows[-1], h), *half[::-1]]
        statuses = []
        for f, t in plan:
            x, status = f.advance(system, x, t)
            statuses.append(status)
        return x, combine(statuses)

    def preserved(self, system, x, h) -> dict:
        kept = set.intersection(*(set(f.keeps(system)) for f in self._flows(system)))
        if not kept:
            return {}
        values = system.invariants(x)
        return {name: values[name] for name in values if name in kept}
