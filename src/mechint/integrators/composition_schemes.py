r"""Composition coefficients as checked data.

A composition scheme γ = (γ_1, ..., γ_s) turns a one-step map Φ_h into
Ψ_h = Φ_{γ_s h} ∘ ... ∘ Φ_{γ_1 h}.  For a symmetric base map, Φ_h = exp(h Y1 + h³ Y3 +
h⁵ Y5 + ...) with the Y_k free (only odd powers), so Ψ_h has order p exactly when
Π_i exp(Σ_k (γ_i h)^k Y_k) = exp(h Y1) + O(h^{p+1}) in the free associative algebra on
Y1, Y3, Y5, ...  ``order_defects`` expands both sides over every word of weight <= p
(weight of Y_k is k) and returns the largest coefficient mismatch per weight.

Coefficients are stored as the published decimal strings and checked in 50-digit
decimal arithmetic on construction (every condition up to the declared order to 1e-15,
symmetry, Σγ = 1); ``gamma`` is their float64 rounding, ``float_defects`` what that
rounding leaves (≈ 1e-16).  A scheme given as floats is checked on the binary values.

Schemes (Hairer, Lubich, Wanner, Geometric Numerical Integration, §V.3):
- ``yoshida4``: the triple jump γ = (x1, x0, x1), x1 = 1/(2 − 2^{1/3}),
  x0 = −2^{1/3}/(2 − 2^{1/3}) (Yoshida 1990; Suzuki 1990; Creutz-Gocksch 1989).
- ``suzuki4``: γ = (p, p, 1 − 4p, p, p), p = 1/(4 − 4^{1/3}) (Suzuki 1990).
- ``yoshida6``: Yoshida's (1990) solution A (7 stages), to 78 digits.
- ``kahan-li6`` (9 stages, s9odr6a) and ``kahan-li8`` (17 stages, s17odr8a):
  Kahan & Li, "Composition constants for raising the orders of unconventional schemes
  for ordinary differential equations", Math. Comp. 66 (1997).
- ``suzuki-umeno8`` (15 stages): Suzuki & Umeno (1993), "Higher-order decomposition
  theory of exponential operators and its applications to QMC and nonlinear
  dynamics"; McLachlan (1995), SIAM J. Sci. Comput. 16; HLW (V.3.12).
- ``sofroniou-spaletta10`` (35 stages): Sofroniou & Spaletta, "Derivation of symmetric
  composition constants for symmetric integrators", Optim. Methods Softw. 20 (2005).
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from decimal import Decimal
from functools import cache
from typing import Any

from mechint._validate import lookup

# Order conditions must hold to this in the stored (decimal) coefficients.
TOL = 1e-15
# ... and to this in a scheme given as float64 numbers (its rounding is ~1e-16 per γ_i).
FLOAT_TOL = 1e-13
_DIGITS = 50


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


def _exact(value) -> Decimal:
    """A coefficient as a Decimal: a string or Decimal as written, a float as its binary value."""
    return value if isinstance(value, Decimal) else Decimal(value)


def order_defects(gamma, max_weight: int, *, symmetric_base: bool = True) -> dict[int, float]:
    """Largest |coefficient of Ψ − exp(hY1)| over the words of each weight 1..max_weight,
    computed in 50-digit decimal arithmetic (γ_i given as strings, Decimals or floats).

    ``symmetric_base``: the base map has only odd-order terms (Y1, Y3, ...); otherwise
    every Y_k appears and the conditions are those for a general base of order 1.
    """
    parts = tuple(range(1, max_weight + 1, 2 if symmetric_base else 1))
    words = _words(max_weight, parts)
    one = Decimal(1)
    with decimal.localcontext() as ctx:
        ctx.prec = _DIGITS
        factorial = [Decimal(math.factorial(k)) for k in range(max_weight + 1)]
        # series as dict word -> coefficient; the empty word is the identity
        # words up to each weight, so that only products within max_weight are formed
        upto = [[()] + [w for w in words if sum(w) <= k] for k in range(max_weight + 1)]
        product: dict[tuple[int, ...], Decimal] = {(): one}
        for value in gamma:
            g = +_exact(value)
            power = [g**k for k in range(max_weight + 1)]
            stage = {w: power[sum(w)] / factorial[len(w)] for w in words}
            stage[()] = one
            new: dict[tuple[int, ...], Decimal] = {}
            for u, a in product.items():
                for v in upto[max_weight - sum(u)]:
                    new[u + v] = new.get(u + v, Decimal(0)) + a * stage[v]
            product = new
        defects = dict.fromkeys(range(1, max_weight + 1), 0.0)
        for w in words:
            target = one / factorial[len(w)] if all(k == 1 for k in w) else Decimal(0)
            gap = float(abs(product.get(w, Decimal(0)) - target))
            defects[sum(w)] = max(defects[sum(w)], gap)
    return defects


@dataclasses.dataclass(frozen=True)
class CompositionScheme:
    """Coefficients γ_1..γ_s of a symmetric composition raising a symmetric method of
    order 2 to ``order``; checks symmetry and every order condition up to ``order``.

    ``gamma`` may be given as decimal strings (checked as written, to ``TOL``) or as
    floats (checked on their binary values, to ``FLOAT_TOL``); it is kept as float64.
    ``exact`` holds the coefficients as given, ``float_defects`` the order defects of
    the float64 values that the integrators use."""

    name: str
    gamma: tuple[Any, ...]  # decimal strings, Decimals or floats; float64 after construction
    order: int
    exact: tuple[Decimal, ...] = dataclasses.field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        """The scheme by name, order and stages (the coefficients: ``gamma``)."""
        return f"CompositionScheme({self.name!r}, order {self.order}, {len(self.gamma)} stages)"

    def __post_init__(self):
        written = all(isinstance(v, str | Decimal) for v in self.gamma)
        exact = tuple(_exact(v) for v in self.gamma)
        object.__setattr__(self, "exact", exact)
        object.__setattr__(self, "gamma", tuple(float(v) for v in exact))
        if exact != exact[::-1]:
            raise ValueError(f"{self.name}: coefficients are not symmetric")
        tol = TOL if written else FLOAT_TOL
        bad = {k: v for k, v in self.defects().items() if v > tol}
        if bad:
            raise ValueError(f"{self.name}: order conditions fail {bad}")

    @property
    def stages(self) -> int:
        return len(self.gamma)

    def defects(self, max_weight: int | None = None) -> dict[int, float]:
        """The order defects of the coefficients as given (``order_defects``)."""
        return order_defects(self.exact, max_weight or self.order)

    def float_defects(self, max_weight: int | None = None) -> dict[int, float]:
        """The order defects of the float64 coefficients used in computation."""
        return order_defects(self.gamma, max_weight or self.order)


def _mirror(*half: str | Decimal) -> tuple[Decimal, ...]:
    """γ_1..γ_k as written, the middle one from Σγ = 1, and the mirror image."""
    with decimal.localcontext() as ctx:
        ctx.prec = _DIGITS
        part = tuple(Decimal(v) for v in half)
        middle = Decimal(1) - 2 * sum(part, Decimal(0))
    return (*part, middle, *part[::-1])


def _root(base: int, k: int) -> Decimal:
    with decimal.localcontext() as ctx:
        ctx.prec = _DIGITS
        return Decimal(base) ** (Decimal(1) / k)


with decimal.localcontext() as _ctx:
    _ctx.prec = _DIGITS
    _X1 = 1 / (2 - _root(2, 3))
    _P4 = 1 / (4 - _root(4, 3))

SCHEMES = {
    s.name: s
    for s in (
        CompositionScheme("yoshida4", _mirror(_X1), 4),
        CompositionScheme("suzuki4", _mirror(_P4, _P4), 4),
        CompositionScheme(
            "yoshida6",
            _mirror(
                "0.78451361047755726381949763386634987577682441745149338456794779895125997479548",
                "0.23557321335935813368479318297853460168646808210340111900349313095621471215223",
                "-1.17767998417887100694641568096431573463926925263459848447536851379674155618156",
            ),
            6,
        ),
        CompositionScheme(
            "kahan-li6",
            _mirror(
                "0.39216144400731413928",
                "0.33259913678935943860",
                "-0.70624617255763935981",
                "0.08221359629355080023",
            ),
            6,
        ),
        CompositionScheme(
            "kahan-li8",
            _mirror(
                "0.13020248308889008088",
                "0.56116298177510838456",
                "-0.38947496264484728641",
                "0.15884190655515560090",
                "-0.39590389413323757734",
                "0.18453964097831570709",
                "0.25837438768632204729",
                "0.29501172360931029887",
            ),
            8,
        ),
        CompositionScheme(
            "suzuki-umeno8",
            _mirror(
                "0.7416703643506129534482278017838063156035",
                "-0.4091008258000315939973000958935634173099",
                "0.1907547102962383799538762564503716627355",
                "-0.5738624711160822666563877266355357421595",
                "0.2990641813036559238444635406886029882258",
                "0.3346249182452981837849579798821822886337",
                "0.3152930923967665966320566638110024309941",
            ),
            8,
        ),
        CompositionScheme(
            "sofroniou-spaletta10",
            _mirror(
                "0.078795722521686419263907679337684",
                "0.31309610341510852776481247192647",
                "0.027918383235078066109520273275299",
                "-0.22959284159390709415121339679655",
                "0.13096206107716486317465685927961",
                "-0.26973340565451071434460973222411",
                "0.074973343155891435666137105641410",
                "0.11199342399981020488957508073640",
                "0.36613344954622675119314812353150",
                "-0.39910563013603589787862981058340",
                "0.10308739852747107731580277001372",
                "0.41143087395589023782070411897608",
                "-0.0048663605831352617621956593099771",
                "-0.39203335370863990644808193642610",
                "0.051942502962449647037182904015976",
                "0.050665090759924496335874344156866",
                "0.049674370639729879054568800279461",
            ),
            10,
        ),
    )
}


# The scheme that raises a symmetric order-2 map to each higher order (the rigid-body
# splitting, the discrete Lagrangian map of a body in a potential).
FOR_ORDER = {4: "suzuki4", 6: "kahan-li6", 8: "kahan-li8", 10: "sofroniou-spaletta10"}


def get(name: str) -> CompositionScheme:
    """The scheme registered under ``name`` (InputError listing the names otherwise)."""
    return lookup("scheme", SCHEMES, name)
