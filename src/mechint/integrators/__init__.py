"""One-step maps with declared traits (see ``mechint.integrators.base``)."""

from mechint.errors import InputError
from mechint.integrators.base import StepStatus, Traits
from mechint.integrators.explicit_rk import RK4, ExplicitEuler
from mechint.integrators.implicit_midpoint import ImplicitMidpoint
from mechint.integrators.kahan import Kahan

INTEGRATORS = {cls.name: cls for cls in (Kahan, ImplicitMidpoint, RK4, ExplicitEuler)}


def get(name: str):
    """The integrator class registered under the CLI name ``name``."""
    try:
        return INTEGRATORS[name]
    except KeyError:
        raise InputError(
            "integrator", f"unknown integrator {name!r}", "choose one of: " + ", ".join(INTEGRATORS)
        ) from None


__all__ = [
    "INTEGRATORS",
    "RK4",
    "ExplicitEuler",
    "ImplicitMidpoint",
    "Kahan",
    "StepStatus",
    "Traits",
    "get",
]
