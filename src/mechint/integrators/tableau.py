"""Runge-Kutta coefficients as checked data (STYLE.md §3)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np


@dataclasses.dataclass(frozen=True)
class ButcherTableau:
    """An explicit Runge-Kutta tableau; verifies its own consistency and claimed order.

    Checks: A strictly lower triangular, c_i = Σ_j a_ij, Σ b_i = 1 and the order
    conditions up to ``order`` (rooted trees up to order 4).
    """

    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    order: int

    def __post_init__(self):
        A, b = np.array(self.a, dtype=float), np.array(self.b, dtype=float)
        s = len(b)
        if A.shape != (s, s):
            raise ValueError(f"A must be {s}x{s}, got {A.shape}")
        if np.any(np.triu(A) != 0):
            raise ValueError("explicit tableau: A must be strictly lower triangular")
        if not 1 <= self.order <= 4:
            raise ValueError("order conditions are checked up to order 4")
        defects = self.order_defects()
        bad = {k: v for k, v in defects.items() if k <= self.order and abs(v) > 1e-14}
        if bad:
            raise ValueError(f"tableau fails order conditions {bad}")

    @property
    def c(self) -> np.ndarray:
        return np.array(self.a, dtype=float).sum(axis=1)

    def order_defects(self) -> dict[int, float]:
        """Largest defect of the order conditions of each order 1..4."""
        A, b, c = np.array(self.a, dtype=float), np.array(self.b, dtype=float), self.c
        cond = {
            1: [b.sum() - 1],
            2: [b @ c - 1 / 2],
            3: [b @ c**2 - 1 / 3, b @ A @ c - 1 / 6],
            4: [
                b @ c**3 - 1 / 4,
                (b * c) @ A @ c - 1 / 8,
                b @ A @ c**2 - 1 / 12,
                b @ A @ A @ c - 1 / 24,
            ],
        }
        return {k: float(max(abs(v) for v in vals)) for k, vals in cond.items()}

    def stages(self):
        """(i, [(j, a_ij) for nonzero a_ij]) for each stage i: the step's data flow."""
        for i, row in enumerate(self.a):
            yield i, [(j, a) for j, a in itertools.islice(enumerate(row), i) if a != 0.0]


EULER = ButcherTableau(a=((0.0,),), b=(1.0,), order=1)

RK4 = ButcherTableau(
    a=(
        (0.0, 0.0, 0.0, 0.0),
        (0.5, 0.0, 0.0, 0.0),
        (0.0, 0.5, 0.0, 0.0),
        (0.0, 0.0, 1.0, 0.0),
    ),
    b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
    order=4,
)
