"""Mechanical systems as immutable JAX pytrees (see ``mechint.systems.base``).

``SYSTEMS`` is the registry of the models the CLI and experiment files build from
numbers (their ``parameter_table``); adding a system is its module plus one line here
(``docs/extending.md``).
"""

from mechint._pytree import register_pytree
from mechint._validate import lookup
from mechint.systems import nbody, potentials
from mechint.systems.attitude import AttitudeKinematics
from mechint.systems.base import (
    BodiesInPotential,
    ExactSolution,
    HamiltonianSystem,
    LevelSetSampler,
    NaturalSplit,
    Parameter,
    PoissonSystem,
    QuadraticVectorField,
    StateOption,
    System,
)
from mechint.systems.canonical import (
    Canonical,
    Hamiltonian,
    ReducedEnergy,
    Separable,
    SeparableHamiltonian,
)
from mechint.systems.canonical_models import HarmonicOscillator, HenonHeiles, Kepler, Pendulum
from mechint.systems.clebsch import ClebschTop
from mechint.systems.constant_poisson import PoissonHamiltonian
from mechint.systems.constrained import Constrained
from mechint.systems.constrained_models import PendulumChain, hanging_state
from mechint.systems.euler_top import EulerTop, FreeTop
from mechint.systems.flows import (
    AxisRotation,
    BodyDrift,
    BodyKick,
    Drift,
    FreeRotation,
    GravityKick,
    Kick,
    SymmetricFreeFlow,
)
from mechint.systems.forced import Forced
from mechint.systems.free_rigid_body import FreeRigidBody
from mechint.systems.gyrostat import ZhukovskyVolterra
from mechint.systems.heavy_top import (
    AbstractHeavyTop,
    HeavyTop,
    KovalevskayaTop,
    LagrangeTop,
)
from mechint.systems.joints import Joint
from mechint.systems.lie_poisson import LiePoissonHamiltonian
from mechint.systems.link_chain import link_chain, link_chain_state
from mechint.systems.matrix_bodies import MatrixBodies
from mechint.systems.nbody import NBody
from mechint.systems.quadratic_field import LotkaVolterra, QuadraticField
from mechint.systems.quadratic_potential import QuadraticPotentialTop
from mechint.systems.rigid import Body
from mechint.systems.rigid_bodies import RigidBodies
from mechint.systems.time_transformed import TimeTransformed
from mechint.systems.water import WATER_MODELS, RigidWater

# The models the CLI and experiment files build from numbers (and, for rigid-bodies, a
# reference "module:function" to the user's potential); the others take user functions or
# tensors.
SYSTEMS: dict[str, type[System]] = {
    cls.name: cls
    for cls in (
        EulerTop,
        FreeRigidBody,
        QuadraticPotentialTop,
        ClebschTop,
        HeavyTop,
        LagrangeTop,
        KovalevskayaTop,
        HarmonicOscillator,
        Pendulum,
        Kepler,
        HenonHeiles,
        LotkaVolterra,
        QuadraticField,
        RigidBodies,
        ZhukovskyVolterra,
        NBody,
        PendulumChain,
        RigidWater,
    )
}

# The exact flows of the systems' natural pieces (re-exported by mechint.integrators).
FLOWS = (
    AxisRotation,
    BodyDrift,
    BodyKick,
    Drift,
    FreeRotation,
    GravityKick,
    Kick,
    SymmetricFreeFlow,
)


def get(name: str) -> type[System]:
    """The system class registered under the CLI name ``name`` (the installed packages'
    entry points included), or the class a reference "package.module:Class" names (a
    subclass of ``System``; ``mechint.plugins``)."""
    from mechint import plugins

    if plugins.is_reference(name):
        return SYSTEMS.get(name) or plugins.reference("system", name)
    if not isinstance(name, str) or name not in SYSTEMS:
        plugins.load()
    return lookup("system", SYSTEMS, name)


__all__ = [
    "FLOWS",
    "SYSTEMS",
    "WATER_MODELS",
    "AbstractHeavyTop",
    "AttitudeKinematics",
    "BodiesInPotential",
    "Body",
    "BodyDrift",
    "BodyKick",
    "Canonical",
    "ClebschTop",
    "Constrained",
    "EulerTop",
    "ExactSolution",
    "Forced",
    "FreeRigidBody",
    "FreeTop",
    "GravityKick",
    "Hamiltonian",
    "HamiltonianSystem",
    "HarmonicOscillator",
    "HeavyTop",
    "HenonHeiles",
    "Joint",
    "Kepler",
    "KovalevskayaTop",
    "LagrangeTop",
    "LevelSetSampler",
    "LiePoissonHamiltonian",
    "LotkaVolterra",
    "MatrixBodies",
    "NBody",
    "NaturalSplit",
    "Parameter",
    "Pendulum",
    "PendulumChain",
    "PoissonHamiltonian",
    "PoissonSystem",
    "QuadraticField",
    "QuadraticPotentialTop",
    "QuadraticVectorField",
    "ReducedEnergy",
    "RigidBodies",
    "RigidWater",
    "Separable",
    "SeparableHamiltonian",
    "StateOption",
    "SymmetricFreeFlow",
    "System",
    "TimeTransformed",
    "ZhukovskyVolterra",
    "get",
    "hanging_state",
    "link_chain",
    "link_chain_state",
    "nbody",
    "potentials",
    "register_pytree",
]
