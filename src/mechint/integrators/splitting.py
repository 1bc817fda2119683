r"""Splitting methods for H = H_1 + ... + H_m (Marsden §4; docs/math.md §4).

With φ^i_t the (exact or numerical) flow of H_i, each an ``Integrator``:
- Lie-Trotter: Φ_h = φ^m_h ∘ ... ∘ φ^1_h (φ^1 first), order 1;
- Strang: Φ_h = φ^1_{h/2} ∘ ... ∘ φ^{m−1}_{h/2} ∘ φ^m_h ∘ φ^{m−1}_{h/2} ∘ ... ∘ φ^1_{h/2},
  symmetric and of order 2 (when every sub-flow is exact, or symmetric of order >= 2).
The schemes are checked coefficient data (``stages.SplittingScheme``) run by the stage
loop composition shares.  A composition of symplectic (Poisson) flows is symplectic
(Poisson), and it keeps every invariant all its flows keep.  Without ``flows``, the
system's natural exact split is used (``NaturalSplit``): (Drift, Kick) for separable
H = T + V (Lie-Trotter is then symplectic Euler A, Strang the position Verlet), the three
axis rotations for the Euler top.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

from mechint.errors import InputError
from mechint.integrators import stages
from mechint.maps import EXACT_TRAITS, Integrator, Setting, StepStatus, Traits, serves_only
from mechint.systems.base import NaturalSplit

SCHEMES = tuple(stages.SPLITTING_SCHEMES)


@final
@dataclasses.dataclass(frozen=True)
class Splitting(Integrator):
    flows: tuple[Integrator, ...] | None = None
    scheme: str = "strang"

    name: ClassVar[str] = "splitting"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("scheme", "splitting: strang (default) or lie-trotter"),
    )

    def __post_init__(self):
        stages.splitting_scheme(self.scheme)
        if self.flows is not None:
            flows = tuple(self.flows)
            if not flows or not all(isinstance(f, Integrator) for f in flows):
                raise InputError(
                    "flows",
                    "must be a non-empty sequence of integrators (exact or numerical flows)",
                    "e.g. (Drift(), Kick()), AxisRotation(i) or NumericalFlow pieces",
                )
            object.__setattr__(self, "flows", flows)
        self.settle_traits()

    def derived_traits(self) -> Traits:
        sub = [EXACT_TRAITS] if self.flows is None else [f.traits for f in self.flows]
        scheme = stages.splitting_scheme(self.scheme)
        symmetric = scheme.symmetric and all(t.symmetric for t in sub)
        return Traits(
            order=scheme.order if symmetric and all(t.order >= 2 for t in sub) else 1,
            symmetric=symmetric,
            explicit=all(t.explicit for t in sub),
            symplectic=all(t.symplectic for t in sub),
            poisson=all(t.poisson for t in sub),
        )

    def _flows(self, system) -> tuple[Integrator, ...]:
        if self.flows is not None:
            return self.flows
        return system.natural_split()

    def cannot_serve(self, system) -> str | None:
        if self.flows is None:
            why = serves_only(system, (NaturalSplit,))
            if why is not None:
                return (
                    "it has no built-in exact splitting; pass flows=(...), e.g. NumericalFlow "
                    "pieces (" + why + ")"
                )
        for f in self._flows(system):
            why = f.cannot_serve(system)
            if why is not None:
                return f"the flow {f!r} cannot advance it: {why}"
        return None

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        flows = self._flows(system)
        plan = stages.splitting_scheme(self.scheme).plan(len(flows))
        return stages.advance(system, x, h, [(flows[j], c) for j, c in plan])

    def preserved(self, system, x, h) -> dict:
        kept = [f.preserved(system, x, h) for f in self._flows(system)]
        names = set.intersection(*(set(k) for k in kept))
        return {name: value for name, value in kept[0].items() if name in names}
