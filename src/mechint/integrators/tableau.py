"""Runge-Kutta coefficients as checked data."""

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


@dataclasses.dataclass(frozen=True)
class CollocationTableau:
    """An implicit Runge-Kutta tableau given by decimal strings (full published
    precision); verifies on construction, in float64 to ``tol``:

    - the simplifying assumptions B(p): Σ b_i c_i^(k−1) = 1/k (k ≤ p); C(η):
      Σ_j a_ij c_j^(k−1) = c_i^k/k (k ≤ η); D(ζ): Σ_i b_i c_i^(k−1) a_ij = b_j(1 − c_j^k)/k
      (k ≤ ζ), which give order p when p ≤ η + ζ + 1 and p ≤ 2η + 2 (Butcher 1964);
    - ``symplectic``: b_i a_ij + b_j a_ji − b_i b_j = 0 (Sanz-Serna, Lasagni 1988), so
      the method keeps every quadratic invariant;
    - ``symmetric``: c_i + c_(s+1−i) = 1 and a_ij + a_(s+1−i, s+1−j) = b_j.
    """

    a: tuple[tuple[str, ...], ...]
    b: tuple[str, ...]
    c: tuple[str, ...]
    B: int
    C: int
    D: int
    symplectic: bool = False
    symmetric: bool = False
    tol: float = 4e-16

    def __post_init__(self):
        A, b, c = self.arrays
        s = len(b)
        if A.shape != (s, s) or c.shape != (s,):
            raise ValueError(f"A must be {s}x{s} and c of length {s}")
        if not (self.order <= self.C + self.D + 1 and self.order <= 2 * self.C + 2):
            raise ValueError("B, C, D do not imply the order B")
        bad = {k: v for k, v in self.defects().items() if v > self.tol}
        if bad:
            raise ValueError(f"tableau fails {bad}")

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            np.array([[float(v) for v in row] for row in self.a]),
            np.array([float(v) for v in self.b]),
            np.array([float(v) for v in self.c]),
        )

    @property
    def order(self) -> int:
        return self.B

    @property
    def stages(self) -> int:
        return len(self.b)

    def defects(self) -> dict[str, float]:
        """The largest defect of each verified condition."""
        A, b, c = self.arrays
        out = {
            "B": max(abs(b @ c ** (k - 1) - 1 / k) for k in range(1, self.B + 1)),
            "C": max(np.max(np.abs(A @ c ** (k - 1) - c**k / k)) for k in range(1, self.C + 1)),
            "D": max(
                np.max(np.abs((b * c ** (k - 1)) @ A - b * (1 - c**k) / k))
                for k in range(1, self.D + 1)
            ),
        }
        if self.symplectic:
            M = b[:, None] * A + (b[:, None] * A).T - np.outer(b, b)
            out["symplectic"] = float(np.max(np.abs(M)))
        if self.symmetric:
            out["symmetric"] = float(
                max(np.max(np.abs(c + c[::-1] - 1)), np.max(np.abs(A + A[::-1, ::-1] - b)))
            )
        return {k: float(v) for k, v in out.items()}


def _gauss(a, b, c) -> CollocationTableau:
    s = len(b)
    return CollocationTableau(a, b, c, B=2 * s, C=s, D=s, symplectic=True, symmetric=True)


# Gauss-Legendre collocation, s = 1..4 (order 2s): c_i the zeros of the shifted Legendre
# polynomial P_s(2c − 1), a_ij = ∫_0^c_i ℓ_j, b_j = ∫_0^1 ℓ_j (Hairer, Lubich, Wanner,
# "Geometric Numerical Integration", II.1.3), computed to 25 digits with mpmath.
# fmt: off
GAUSS = {
    1: _gauss((("0.5",),), ("1.0",), ("0.5",)),
    2: _gauss(
        (
            ("0.25", "-0.03867513459481288225457439"),
            ("0.5386751345948128822545744", "0.25"),
        ),
        ("0.5", "0.5"),
        ("0.2113248654051871177454256", "0.7886751345948128822545744"),
    ),
    3: _gauss(
        (
            ("0.1388888888888888888888889", "-0.03597666752493890345639547",
             "0.009789444015308326049580042"),
            ("0.3002631949808645924380249", "0.2222222222222222222222222",
             "-0.02248541720308681466024717"),
            ("0.2679883337624694517281977", "0.4804211119693833479008399",
             "0.1388888888888888888888889"),
        ),
        ("0.2777777777777777777777778", "0.4444444444444444444444444",
         "0.2777777777777777777777778"),
        ("0.1127016653792583114820735", "0.5", "0.8872983346207416885179265"),
    ),
    4: _gauss(
        (
            ("0.08696371128436346434326599", "-0.02660418008499879331338513",
             "0.01262746268940472451505688", "-0.003555149685795683156910982"),
            ("0.1881181174998680716506855", "0.163036288715636535656734",
             "-0.02788042860247089522415111", "0.006735500594538155515398669"),
            ("0.1671919219741887731711333", "0.3539530060337439665376191",
             "0.163036288715636535656734", "-0.01419069493114114296415357"),
            ("0.177482572254522611843443", "0.3134451147418683467984111",
             "0.3526767575162718646268532", "0.08696371128436346434326599"),
        ),
        ("0.173927422568726928686532", "0.326072577431273071313468",
         "0.326072577431273071313468", "0.173927422568726928686532"),
        ("0.06943184420297371238802676", "0.3300094782075718675986671",
         "0.6699905217924281324013329", "0.9305681557970262876119732"),
    ),
}
# fmt: on
