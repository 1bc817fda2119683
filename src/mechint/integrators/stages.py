r"""The stage loop shared by splitting and composition methods, and splitting
coefficients as checked data (STYLE.md §3).

A staged method is a plan ((Φ¹, c_1), ..., (Φˢ, c_s)): Ψ_h = Φˢ_{c_s h} ∘ ... ∘ Φ¹_{c_1 h}.
``advance`` runs it: as a ``lax.scan`` over the coefficients when every stage uses the
same map (compositions: one compiled copy of the base step, measured faster to compile
and to run than unrolling), written out otherwise (splittings: different sub-flows).

``SplittingScheme`` gives the plan of a splitting of H = H_1 + ... + H_m as
(flow index, coefficient) pairs and verifies its own claimed order on construction:
Π_i exp(c_i h A_{j_i}) = exp(h(A_1 + ... + A_m)) + O(h^{p+1}) in the free associative
algebra on A_1..A_m (every word of length <= p compared, m = 2, 3, 4), its symmetry
(the plan is a palindrome) and that the next order fails (the declared order is the
true order).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from functools import cache

import jax
import jax.numpy as jnp

from mechint._validate import lookup
from mechint.maps import Integrator, StepStatus, combine, no_failure

_TOL = 1e-13


def advance(system, x, h, plan: Sequence[tuple[Integrator, float]]) -> tuple[object, StepStatus]:
    """Run the stages of ``plan`` from x with step h; the statuses combined."""
    maps = [m for m, _ in plan]
    if all(m == maps[0] for m in maps[1:]) and len(plan) > 1:
        base = maps[0]

        def stage(carry, c):
            y, st = carry
            y, s = base.step(system, y, c * h)
            return (y, combine([st, s])), None

        real = jax.tree.leaves(x)[0].dtype
        coeffs = jnp.asarray([c for _, c in plan], dtype=real)
        none = no_failure(real)
        (y, st), _ = jax.lax.scan(stage, (x, none), coeffs)
        return y, st
    statuses = []
    for m, c in plan:
        x, s = m.step(system, x, c * h)
        statuses.append(s)
    return x, combine(statuses)


def advance_increment(
    system, x, h, plan: Sequence[tuple[Integrator, float]]
) -> tuple[object, StepStatus]:
    """Ψ_h(x) − x as the sum of the stages' own increments (each formed by its map,
    ``Integrator.increment``): the increment of a composition carries round-off relative
    to the increments, not to x, which is what compensated summation needs
    (``integrators.Compensated``).  The stage states are x + (the sum so far)."""
    real = jax.tree.leaves(x)[0].dtype
    maps = [m for m, _ in plan]
    zero = jax.tree.map(jnp.zeros_like, x)

    def one(d, m, c):
        y = jax.tree.map(lambda a, b: a + b, x, d)
        delta, s = m.increment(system, y, c * h)
        return jax.tree.map(lambda a, b: a + b, d, delta), s

    if all(m == maps[0] for m in maps[1:]) and len(plan) > 1:

        def stage(carry, c):
            d, st = carry
            d, s = one(d, maps[0], c)
            return (d, combine([st, s])), None

        coeffs = jnp.asarray([c for _, c in plan], dtype=real)
        (d, st), _ = jax.lax.scan(stage, (zero, no_failure(real)), coeffs)
        return d, st
    d, statuses = zero, []
    for m, c in plan:
        d, s = one(d, m, c)
        statuses.append(s)
    return d, combine(statuses)


@cache
def _product(plan: tuple[tuple[int, float], ...], m: int, order: int) -> dict:
    """Coefficients of the words of length <= order in Π_i exp(c_i A_{j_i})."""
    out: dict[tuple[int, ...], float] = {(): 1.0}
    for j, c in plan:
        new: dict[tuple[int, ...], float] = {}
        for word, value in out.items():
            for k in range(order - len(word) + 1):
                key = word + (j,) * k
                new[key] = new.get(key, 0.0) + value * c**k / math.factorial(k)
        out = new
    return out


def splitting_defects(plan: tuple[tuple[int, float], ...], m: int, order: int) -> dict[int, float]:
    """Largest |coefficient of Π exp(c_i A_{j_i}) − exp(Σ A_j)| over the words of each
    length 1..order in the free algebra on m generators."""
    prod = _product(plan, m, order)
    out = {}
    for length in range(1, order + 1):
        want = 1.0 / math.factorial(length)
        words = itertools.product(range(m), repeat=length)
        out[length] = max(abs(prod.get(w, 0.0) - want) for w in words)
    return out


@dataclasses.dataclass(frozen=True)
class SplittingScheme:
    """A splitting of m pieces: ``plan(m)`` gives its stages; checks its order, and
    symmetry when ``symmetric``, for m = 2, 3, 4 on construction."""

    name: str
    order: int
    symmetric: bool

    def plan(self, m: int) -> tuple[tuple[int, float], ...]:
        if self.name == "lie-trotter":
            return tuple((j, 1.0) for j in range(m))
        half = tuple((j, 0.5) for j in range(m - 1))
        return (*half, (m - 1, 1.0), *half[::-1])

    def __post_init__(self):
        for m in (2, 3, 4):
            plan = self.plan(m)
            if self.symmetric and plan != plan[::-1]:
                raise ValueError(f"{self.name}: the plan is not symmetric")
            defects = splitting_defects(plan, m, self.order + 1)
            bad = {k: v for k, v in defects.items() if k <= self.order and v > _TOL}
            if bad:
                raise ValueError(f"{self.name}: order conditions fail {bad}")
            if defects[self.order + 1] <= _TOL:
                raise ValueError(f"{self.name}: the order is higher than declared")


SPLITTING_SCHEMES = {
    s.name: s
    for s in (
        SplittingScheme("lie-trotter", order=1, symmetric=False),
        SplittingScheme("strang", order=2, symmetric=True),
    )
}


def splitting_scheme(name: str) -> SplittingScheme:
    return lookup("scheme", SPLITTING_SCHEMES, name)
