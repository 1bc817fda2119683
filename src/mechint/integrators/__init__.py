"""One-step maps with declared traits (see ``mechint.integrators.base``)."""

from mechint._validate import lookup
from mechint.integrators import flows
from mechint.integrators.base import StepStatus, Traits
from mechint.integrators.composition import Composition
from mechint.integrators.composition_schemes import SCHEMES as COMPOSITION_SCHEMES
from mechint.integrators.composition_schemes import CompositionScheme
from mechint.integrators.discrete_lagrangian import DiscreteLagrangian
from mechint.integrators.explicit_rk import RK4, ExplicitEuler
from mechint.integrators.flows import AxisRotation, Drift, Kick, NumericalFlow
from mechint.integrators.implicit_midpoint import ImplicitMidpoint
from mechint.integrators.kahan import Kahan
from mechint.integrators.rigid_body_splitting import RigidBodySplitting
from mechint.integrators.splitting import Splitting
from mechint.integrators.stormer_verlet import StormerVerlet
from mechint.integrators.symplectic_euler import SymplecticEuler

INTEGRATORS = {
    cls.name: cls
    for cls in (
        Kahan,
        ImplicitMidpoint,
        RK4,
        ExplicitEuler,
        DiscreteLagrangian,
        SymplecticEuler,
        StormerVerlet,
        Splitting,
        Composition,
        RigidBodySplitting,
    )
}


def get(name: str):
    """The integrator class registered under the CLI name ``name``."""
    return lookup("integrator", INTEGRATORS, name)


__all__ = [
    "COMPOSITION_SCHEMES",
    "INTEGRATORS",
    "RK4",
    "AxisRotation",
    "Composition",
    "CompositionScheme",
    "DiscreteLagrangian",
    "Drift",
    "ExplicitEuler",
    "ImplicitMidpoint",
    "Kahan",
    "Kick",
    "NumericalFlow",
    "RigidBodySplitting",
    "Splitting",
    "StepStatus",
    "StormerVerlet",
    "SymplecticEuler",
    "Traits",
    "flows",
    "get",
]
