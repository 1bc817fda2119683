"""Random, reproducible states for the rigid bodies on so(n), so(n) ⋉ Symm(n) and e(n)."""

import numpy as np

import mechint as mi


def skew(rng, n, scale=1.0):
    A = rng.normal(size=(n, n)) * scale
    return A - A.T


def symmetric(rng, n, scale=1.0):
    A = rng.normal(size=(n, n)) * scale
    return A + A.T


def case(kind: str, n: int, seed: int = 0):
    """(system, x0) for kind in free / qpt / clebsch."""
    rng = np.random.default_rng(seed + 17 * n)
    J = rng.uniform(0.5, 2.0, n)
    M = skew(rng, n, 0.5)
    if kind == "free":
        return mi.systems.FreeRigidBody(J), M
    if kind == "qpt":
        return mi.systems.QuadraticPotentialTop(J), (M, symmetric(rng, n, 0.5))
    return mi.systems.ClebschTop(J), (M, rng.normal(size=n))
