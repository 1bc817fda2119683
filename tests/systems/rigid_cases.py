"""Random, reproducible states for the rigid bodies on so(n), so(n) ⋉ Symm(n) and e(n)."""

from typing import Any, Literal, overload

import numpy as np

from mechint.systems import Body, ClebschTop, FreeRigidBody, QuadraticPotentialTop


def skew(rng, n, scale=1.0):
    A = rng.normal(size=(n, n)) * scale
    return A - A.T


def symmetric(rng, n, scale=1.0):
    A = rng.normal(size=(n, n)) * scale
    return A + A.T


@overload
def case(kind: Literal["free"], n: int, seed: int = 0) -> tuple[FreeRigidBody, np.ndarray]: ...
@overload
def case(
    kind: Literal["qpt"], n: int, seed: int = 0
) -> tuple[QuadraticPotentialTop, tuple[np.ndarray, np.ndarray]]: ...
@overload
def case(
    kind: Literal["clebsch"], n: int, seed: int = 0
) -> tuple[ClebschTop, tuple[np.ndarray, np.ndarray]]: ...
@overload
def case(kind: str, n: int, seed: int = 0) -> tuple[Body, Any]: ...
def case(kind: str, n: int, seed: int = 0) -> tuple[Body, Any]:
    """(system, x0) for kind in free / qpt / clebsch."""
    rng = np.random.default_rng(seed + 17 * n)
    J = rng.uniform(0.5, 2.0, n)
    M = skew(rng, n, 0.5)
    if kind == "free":
        return FreeRigidBody(J), M
    if kind == "qpt":
        return QuadraticPotentialTop(J), (M, symmetric(rng, n, 0.5))
    return ClebschTop(J), (M, rng.normal(size=n))
