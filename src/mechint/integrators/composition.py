r"""Composition methods (Yoshida, Suzuki, Kahan-Li; docs/math.md §4).

Ψ_h = Φ_{γ_s h} ∘ ... ∘ Φ_{γ_1 h} for a symmetric base map Φ and a symmetric scheme γ
(``composition_schemes``, coefficients checked against the order conditions): order
``scheme.order`` (or the base's, if higher), symmetric, and every structural trait of
the base kept (symplectic, Poisson, explicit), since each property survives composition.
Of the quantities the base keeps exactly, the composition keeps those that do not
depend on the step size: the system's own invariants (a modified integral of the base,
such as Kahan's K_k(h), changes with γ_i h and is not kept).

The stages run in the stage loop shared with splittings (``stages.advance``): a
``lax.scan`` over γ, one compiled copy of the base step.  Unrolling them was measured
slower to compile and to run on CPU (Kahan-Li 8 of the rigid-body Strang splitting:
17 s against 0.4 s to compile, 10.5 s against 0.21 s for 10⁵ steps; XLA's fusion
recomputes shared subexpressions), so it is not offered.

Of Störmer–Verlet on a separable H the stages are kicks and drifts, and the last kick of
a stage and the first of the next act at the same point: they run merged
(``StormerVerlet.merged_stages``, ``stages.advance_leapfrog``), one force a stage and one
more, against two a stage one by one (Kepler, one trajectory, ``benchmarks/round_off.py``:
Sofroniou–Spaletta-10 1.00e6 -> 1.21e6 steps/s, Yoshida-4 8.4e6 -> 1.11e7), the same map
to round-off.  The base map says whether its stages merge (``Integrator.merges_stages``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

from mechint.errors import InputError
from mechint.integrators import composition_schemes, stages
from mechint.integrators.stormer_verlet import StormerVerlet
from mechint.maps import Integrator, Setting, StepStatus, Traits
from mechint.systems.canonical import Canonical


@final
@dataclasses.dataclass(frozen=True)
class Composition(Integrator):
    base: Integrator = dataclasses.field(default_factory=StormerVerlet)
    scheme: composition_schemes.CompositionScheme | str = "yoshida4"

    name: ClassVar[str] = "composition"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "scheme",
            "composition: " + ", ".join(composition_schemes.SCHEMES) + " (default yoshida4)",
        ),
        Setting(
            "base",
            "composition: the symmetric base method (default stormer-verlet for canonical "
            "systems, rattle for constrained ones, splitting otherwise)",
            default=lambda system: (
                "stormer-verlet"
                if isinstance(system, Canonical)
                else "rattle"
                if getattr(system, "constrained", False)
                else "splitting"
            ),
            integrator=True,
        ),
    )

    def __post_init__(self):
        if not isinstance(self.scheme, composition_schemes.CompositionScheme):
            object.__setattr__(self, "scheme", composition_schemes.get(self.scheme))
        if not isinstance(self.base, Integrator):
            raise InputError(
                "base",
                f"{self.base!r} is not a mechint integrator",
                "pass an instance of a mechint.integrators.Integrator subclass",
            )
        if not self.base.traits.symmetric:
            raise InputError(
                "base",
                f"{type(self.base).__name__} is not symmetric, so the scheme's order "
                "conditions do not hold for it",
                "use a symmetric base: StormerVerlet(), ImplicitMidpoint(), Kahan(), "
                "DiscreteLagrangian() or Splitting(scheme='strang')",
            )
        self.settle_traits()

    @property
    def gamma(self) -> tuple[float, ...]:
        scheme = self.scheme
        assert isinstance(scheme, composition_schemes.CompositionScheme)
        return scheme.gamma

    def derived_traits(self) -> Traits:
        t = self.base.traits
        scheme = self.scheme
        assert isinstance(scheme, composition_schemes.CompositionScheme)
        return Traits(
            order=max(t.order, scheme.order),
            symmetric=True,
            explicit=t.explicit,
            symplectic=t.symplectic,
            poisson=t.poisson,
            energy=t.energy,  # each stage keeps H exactly, so their product does
            forced=t.forced,
            constrained=t.constrained,
        )

    def cannot_serve(self, system) -> str | None:
        return self.base.cannot_serve(system)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        if self.base.merges_stages(system):
            x, _, st = self.base.merged_stages(system, x, h, self.gamma)
            return x, st
        return stages.advance(system, x, h, [(self.base, g) for g in self.gamma])

    def compensated_step(self, system, x, e, h) -> tuple[object, object, StepStatus]:
        """Where the base merges its stages (Störmer–Verlet on a separable H), every
        update added by compensated summation (``Integrator.merged_stages``); otherwise
        the stages' summed increment once (``Integrator.compensated_step``)."""
        if self.base.merges_stages(system):
            return self.base.merged_stages(system, x, h, self.gamma, e)
        return super().compensated_step(system, x, e, h)

    def increment(self, system, x, h) -> tuple[object, StepStatus]:
        """The sum of the stages' increments, each formed by the base map."""
        return stages.advance_increment(system, x, h, [(self.base, g) for g in self.gamma])

    def forms_increment(self, system) -> bool:
        return self.base.forms_increment(system)

    def preserved(self, system, x, h) -> dict:
        kept = self.base.preserved(system, x, h)
        own = system.invariants(x)
        return {name: value for name, value in kept.items() if name in own}
