"""Mechanical systems as immutable JAX pytrees (see ``mechint.systems.base``)."""

from mechint._validate import lookup
from mechint.systems.canonical import Hamiltonian, SeparableHamiltonian
from mechint.systems.canonical_models import HarmonicOscillator, HenonHeiles, Kepler, Pendulum
from mechint.systems.clebsch import ClebschTop
from mechint.systems.euler_top import EulerTop
from mechint.systems.free_rigid_body import FreeRigidBody
from mechint.systems.quadratic_field import LotkaVolterra, QuadraticField
from mechint.systems.quadratic_potential import QuadraticPotentialTop

# The models the CLI can build from numbers (the others take user functions or tensors).
SYSTEMS = {
    cls.name: cls
    for cls in (
        EulerTop,
        FreeRigidBody,
        QuadraticPotentialTop,
        ClebschTop,
        HarmonicOscillator,
        Pendulum,
        Kepler,
        HenonHeiles,
        LotkaVolterra,
    )
}


def get(name: str):
    """The system class registered under the CLI name ``name``."""
    return lookup("system", SYSTEMS, name)


__all__ = [
    "SYSTEMS",
    "ClebschTop",
    "EulerTop",
    "FreeRigidBody",
    "Hamiltonian",
    "HarmonicOscillator",
    "HenonHeiles",
    "Kepler",
    "LotkaVolterra",
    "Pendulum",
    "QuadraticField",
    "QuadraticPotentialTop",
    "SeparableHamiltonian",
    "get",
]
