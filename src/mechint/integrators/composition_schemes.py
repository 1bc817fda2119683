r"""Composition coefficients as checked data (STYLE.md §3).

A composition scheme γ = (γ_1, ..., γ_s) turns a one-step map Φ_h into
Ψ_h = Φ_{γ_s h} ∘ ... ∘ Φ_{γ_1 h}.  For a symmetric base map, Φ_h = exp(h Y1 + h³ Y3 +
h⁵ Y5 + ...) with the Y_k free (only odd powers), so Ψ_h has order p exactly when
Π_i exp(Σ_k (γ_i h)^k Y_k) = exp(h Y1) + O(h^{p+1}) in the free associative algebra on
Y1, Y3, Y5, ...  ``order_defects`` expands both sides over every word of weight <= p
(weight of Y_k is k) and returns the largest coefficient mismatch per weight: each
scheme verifies its own claimed order on construction, and that it is symmetric.

Schemes (Hairer, Lubich, Wanner, Geometric Numerical Integration, §V.3):
- ``yoshida4``: the triple jump γ = (x1, x0, x1), x1 = 1/(2 − 2^{1/3}),
  x0 = −2^{1/3}/(2 − 2^{1/3}) (Yoshida 1990; Suzuki 1990; Creutz-Gocksch 1989).
- ``suzuki4``: γ = (p, p, 1 − 4p, p, p), p = 1/(4 − 4^{1/3}) (Suzuki 1990).
- ``yoshida6``: Yoshida's (1990) solution A (7 stages).  (His order-8 solutions are
  published to 15 digits only, which leaves order-condition defects of 1e-12: use
  ``kahan-li8``, which is also more accurate.)
- ``kahan-li6`` (9 stages, s9odr6a) and ``kahan-li8`` (17 stages, s17odr8a):
  Kahan & Li, "Composition constants for raising the orders of unconventional schemes
  for ordinary differential equations", Math. Comp. 66 (1997).
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache

import numpy as np

from mechint._validate import lookup

# Order conditions must hold to this (absolute, on coefficients of size <= ~1).
_TOL = 1e-13


@cache
def _words(max_weight: int, parts: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Every word in ``parts`` (generator weights) of total weight 1..max_weight."""
    out, frontier = [], [()]
    while frontier:
        nxt = []
        for w in frontier:
            for k in parts:
                v = (*w, k)
                if sum(v) <= max_weight:
                    out.append(v)
                    nxt.append(v)
        frontier = nxt
    return tuple(out)


def order_defects(gamma, max_weight: int, *, symmetric_base: bool = True) -> dict[int, float]:
    """Largest |coefficient of Ψ − exp(hY1)| over the words of each weight 1..max_weight.

    ``symmetric_base``: the base map has only odd-order terms (Y1, Y3, ...); otherwise
    every Y_k appears and the conditions are those for a general base of order 1.
    """
    parts = tuple(range(1, max_weight + 1, 2 if symmetric_base else 1))
    words = _words(max_weight, parts)
    # series as dict word -> coefficient; the empty word is the identity
    product: dict[tuple[int, ...], float] = {(): 1.0}
    for g in gamma:
        stage: dict[tuple[int, ...], float] = {(): 1.0}
        stage.update({w: g ** sum(w) / math.factorial(len(w)) for w in words})
        new: dict[tuple[int, ...], float] = {}
        for u, a in product.items():
            for v, b in stage.items():
                if sum(u) + sum(v) <= max_weight:
                    new[u + v] = new.get(u + v, 0.0) + a * b
        product = new
    defects = dict.fromkeys(range(1, max_weight + 1), 0.0)
    for w in words:
        target = 1.0 / math.factorial(len(w)) if all(k == 1 for k in w) else 0.0
        defects[sum(w)] = max(defects[sum(w)], abs(product.get(w, 0.0) - target))
    return defects


@dataclasses.dataclass(frozen=True)
class CompositionScheme:
    """Coefficients γ_1..γ_s of a symmetric composition raising a symmetric method of
    order 2 to ``order``; checks symmetry and every order condition up to ``order``."""

    name: str
    gamma: tuple[float, ...]
    order: int

    def __post_init__(self):
        g = np.asarray(self.gamma, dtype=float)
        if not np.array_equal(g, g[::-1]):
            raise ValueError(f"{self.name}: coefficients are not symmetric")
        defects = order_defects(self.gamma, self.order)
        bad = {k: v for k, v in defects.items() if v > _TOL}
        if bad:
            raise ValueError(f"{self.name}: order conditions fail {bad}")

    @property
    def stages(self) -> int:
        return len(self.gamma)


def _mirror(half: tuple[float, ...], middle: float) -> tuple[float, ...]:
    return (*half, middle, *half[::-1])


_x1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
_p4 = 1.0 / (4.0 - 4.0 ** (1.0 / 3.0))
_Y6 = (0.784513610477560, 0.235573213359357, -1.17767998417887)
_KL6 = (
    0.39216144400731413928,
    0.33259913678935943860,
    -0.70624617255763935981,
    0.08221359629355080023,
)
_KL8 = (
    0.13020248308889008088,
    0.56116298177510838456,
    -0.38947496264484728641,
    0.15884190655515560090,
    -0.39590389413323757734,
    0.18453964097831570709,
    0.25837438768632204729,
    0.29501172360931029887,
)

SCHEMES = {
    s.name: s
    for s in (
        CompositionScheme("yoshida4", (_x1, 1.0 - 2.0 * _x1, _x1), 4),
        CompositionScheme("suzuki4", _mirror((_p4, _p4), 1.0 - 4.0 * _p4), 4),
        CompositionScheme("yoshida6", _mirror(_Y6, 1.0 - 2.0 * sum(_Y6)), 6),
        CompositionScheme("kahan-li6", _mirror(_KL6, 1.0 - 2.0 * sum(_KL6)), 6),
        CompositionScheme("kahan-li8", _mirror(_KL8, 1.0 - 2.0 * sum(_KL8)), 8),
    )
}


def get(name: str) -> CompositionScheme:
    """The scheme registered under ``name`` (InputError listing the names otherwise)."""
    return lookup("scheme", SCHEMES, name)
