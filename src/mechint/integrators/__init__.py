"""One-step maps with declared traits (see ``mechint.maps`` and ``docs/extending.md``).

``INTEGRATORS`` is the registry of the maps the CLI and experiment files name; each
class's ``settings`` table gives its options (``--scheme``, ``--order``, ...), and
``build(name, system, settings)`` constructs one from them.
"""

from mechint.integrators import flows
from mechint.integrators.compensated import Compensated
from mechint.integrators.composition import Composition
from mechint.integrators.composition_schemes import SCHEMES as COMPOSITION_SCHEMES
from mechint.integrators.composition_schemes import CompositionScheme
from mechint.integrators.discrete_lagrangian import BodyRotationMap, DiscreteLagrangian
from mechint.integrators.energy import AverageVectorField, DiscreteGradient
from mechint.integrators.exact_flow import ExactFlow
from mechint.integrators.explicit_rk import RK4, ExplicitEuler, ExplicitRungeKutta
from mechint.integrators.flows import (
    AxisRotation,
    BodyDrift,
    BodyKick,
    Drift,
    FreeRotation,
    GravityKick,
    Kick,
    NumericalFlow,
    SymmetricFreeFlow,
)
from mechint.integrators.gauss import Gauss
from mechint.integrators.implicit_midpoint import ImplicitMidpoint
from mechint.integrators.kahan import Kahan
from mechint.integrators.lie_group import RKMK, CommutatorFree, Magnus
from mechint.integrators.lie_group_variational import LieGroupVariational
from mechint.integrators.oriented import Oriented
from mechint.integrators.rattle import Rattle, Shake
from mechint.integrators.registry import INTEGRATORS, SETTINGS, build, get, serving, settings_for
from mechint.integrators.reversible_adaptive import ReversibleAdaptive
from mechint.integrators.rigid_body_splitting import RigidBodySplitting
from mechint.integrators.settle import Settle
from mechint.integrators.splitting import Splitting
from mechint.integrators.stages import SPLITTING_SCHEMES, SplittingScheme
from mechint.integrators.stormer_verlet import StormerVerlet
from mechint.integrators.symplectic_euler import SymplecticEuler
from mechint.integrators.tangent import Tangent
from mechint.integrators.wisdom_holman import SABA, WisdomHolman
from mechint.maps import (
    EXACT,
    ImplicitIntegrator,
    Integrator,
    Reason,
    Setting,
    StepStatus,
    Traits,
    Wrapper,
)

__all__ = [
    "COMPOSITION_SCHEMES",
    "EXACT",
    "INTEGRATORS",
    "RK4",
    "RKMK",
    "SABA",
    "SETTINGS",
    "SPLITTING_SCHEMES",
    "AverageVectorField",
    "AxisRotation",
    "BodyDrift",
    "BodyKick",
    "BodyRotationMap",
    "CommutatorFree",
    "Compensated",
    "Composition",
    "CompositionScheme",
    "DiscreteGradient",
    "DiscreteLagrangian",
    "Drift",
    "ExactFlow",
    "ExplicitEuler",
    "ExplicitRungeKutta",
    "FreeRotation",
    "Gauss",
    "GravityKick",
    "ImplicitIntegrator",
    "ImplicitMidpoint",
    "Integrator",
    "Kahan",
    "Kick",
    "LieGroupVariational",
    "Magnus",
    "NumericalFlow",
    "Oriented",
    "Rattle",
    "Reason",
    "ReversibleAdaptive",
    "RigidBodySplitting",
    "Setting",
    "Settle",
    "Shake",
    "Splitting",
    "SplittingScheme",
    "StepStatus",
    "StormerVerlet",
    "SymmetricFreeFlow",
    "SymplecticEuler",
    "Tangent",
    "Traits",
    "WisdomHolman",
    "Wrapper",
    "build",
    "flows",
    "get",
    "serving",
    "settings_for",
]
