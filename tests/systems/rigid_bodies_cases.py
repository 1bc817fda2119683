"""Rigid bodies in potentials shared by the tests (one system object per case, so the
compiled programs are shared too)."""

from functools import cache

import numpy as np

import mechint as mi
from mechint.systems import RigidBodies, potentials

# a body of four point masses (not planar), its sites about the centre of mass turned
# off the principal axes, so that its inertia tensor is not diagonal
_MASSES = np.array([1.0, 0.8, 0.6, 0.4])
_RAW = np.array([[0.5, 0.0, 0.1], [-0.4, 0.1, 0.0], [0.0, 0.45, -0.2], [0.1, -0.3, 0.35]])
SITES = _RAW - (_MASSES[:, None] * _RAW).sum(0) / _MASSES.sum()
MASS = float(_MASSES.sum())


def tensor(sites, masses) -> np.ndarray:
    """The inertia tensor of point masses about the origin."""
    terms = [m * (r @ r * np.eye(3) - np.outer(r, r)) for m, r in zip(masses, sites, strict=True)]
    return np.sum(terms, axis=0)


def mutual(x, R):
    return potentials.mutual_gravity(x, R, SITES, _MASSES)


@cache
def pair() -> RigidBodies:
    """The full two-body problem: two such bodies in mutual gravity."""
    J = tensor(SITES, _MASSES)
    return RigidBodies(
        [J, J], mass=MASS, potential=mutual, translation_invariant=True, rotation_invariant=True
    )


def pair_state():
    """A near-circular mutual orbit, distance 4 (no close approach), both bodies spinning."""
    system = pair()
    _, _, R, Pi = system.example_state()
    v = 0.5 * np.sqrt(2.0 * MASS / 4.0)
    x = np.array([[-2.0, 0.0, 0.1], [2.0, 0.0, -0.1]])
    p = MASS * np.array([[0.0, -v, 0.02], [0.0, v, -0.02]])
    return x, p, R, 0.5 * Pi


HEAVY_I = np.array([2.0, 1.5, 1.0])
HEAVY_CHI = np.array([0.1, 0.5, 1.0])


def _heavy(R):
    return potentials.fixed_point_gravity(R, HEAVY_CHI)


@cache
def heavy() -> RigidBodies:
    """The heavy top as one body turning about a fixed point (attitude only)."""
    return RigidBodies([HEAVY_I], potential=_heavy)


@cache
def free() -> RigidBodies:
    return RigidBodies([[1.0, 1.5, 2.0]])


def heavy_top() -> mi.systems.HeavyTop:
    return mi.systems.HeavyTop(HEAVY_I, HEAVY_CHI)


SATELLITE_I = np.array([[1.0, 1.5, 2.0]]) * 1e-3


def _planet(x, R):
    """A point-mass planet (μ = 1) and its gravity gradient on the satellite."""
    return potentials.point_mass(x, 1.0, 1.0) + potentials.gravity_gradient(x, R, 1.0, SATELLITE_I)


@cache
def satellite() -> RigidBodies:
    """The restricted full two-body problem: a satellite about a planet."""
    return RigidBodies(SATELLITE_I, mass=1.0, potential=_planet, rotation_invariant=True)


def satellite_state():
    """A near-circular orbit of radius 1, the long axis 0.1 rad off the vertical."""
    c, s = np.cos(0.1), np.sin(0.1)
    R = np.array([[[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]])
    return np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]]), R, SATELLITE_I * [[0, 0, 1.0]]
