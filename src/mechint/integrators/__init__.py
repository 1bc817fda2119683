"""One-step maps with declared traits (see ``mechint.integrators.base``)."""

from mechint._validate import lookup
from mechint.integrators.base import StepStatus, Traits
from mechint.integrators.discrete_lagrangian import DiscreteLagrangian
from mechint.integrators.explicit_rk import RK4, ExplicitEuler
from mechint.integrators.implicit_midpoint import ImplicitMidpoint
from mechint.integrators.kahan import Kahan

INTEGRATORS = {
    cls.name: cls for cls in (Kahan, ImplicitMidpoint, RK4, ExplicitEuler, DiscreteLagrangian)
}


def get(name: str):
    """The integrator class registered under the CLI name ``name``."""
    return lookup("integrator", INTEGRATORS, name)


__all__ = [
    "INTEGRATORS",
    "RK4",
    "DiscreteLagrangian",
    "ExplicitEuler",
    "ImplicitMidpoint",
    "Kahan",
    "StepStatus",
    "Traits",
    "get",
]
