"""Mechanical systems as immutable JAX pytrees (see ``mechint.systems.base``)."""

from mechint._validate import lookup
from mechint.systems.clebsch import ClebschTop
from mechint.systems.euler_top import EulerTop
from mechint.systems.free_rigid_body import FreeRigidBody
from mechint.systems.quadratic_potential import QuadraticPotentialTop

SYSTEMS = {cls.name: cls for cls in (EulerTop, FreeRigidBody, QuadraticPotentialTop, ClebschTop)}


def get(name: str):
    """The system class registered under the CLI name ``name``."""
    return lookup("system", SYSTEMS, name)


__all__ = ["SYSTEMS", "ClebschTop", "EulerTop", "FreeRigidBody", "QuadraticPotentialTop", "get"]
