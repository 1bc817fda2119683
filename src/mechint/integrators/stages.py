r"""The stage loop shared by splitting and composition methods, and splitting
coefficients as checked data.

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
from mechint.maps import (
    Integrator,
    StepStatus,
    combine,
    compensated_add,
    no_failure,
    ok_status,
)

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


def leapfrog_plan(gamma: Sequence[float]) -> tuple[tuple[float, float], ...]:
    """A composition of Störmer–Verlet steps kick(γ_i h/2) ∘ drift(γ_i h) ∘ kick(γ_i h/2)
    with each pair of adjacent kicks merged into one (kicks commute: the exact flow of
    V moves p alone): after a first kick of γ_1 h/2, a row (γ_i, γ_{i+1}) for each stage,
    its drift γ_i h and then its kick (γ_i + γ_{i+1}) h/2 (γ_{s+1} = 0)."""
    c = [float(g) for g in gamma]
    return tuple(zip(c, [*c[1:], 0.0], strict=True))


def advance_leapfrog(
    system, x, h, gamma: Sequence[float], e=None
) -> tuple[object, object, StepStatus]:
    """A composition of Störmer–Verlet on a separable H = T(p) + V(q) (``system``'s
    ``kinetic_gradient``, ``potential_gradient``) as one kick and then a drift and a kick
    per stage (``leapfrog_plan``): s + 1 forces a step where the stages one by one take
    2s, and the same map to round-off.  A merged kick is applied as its two halves
    (γ_i h/2)·f + (γ_{i+1} h/2)·f, each γ_i h rounded once and used by its drift and its
    two half kicks alike: a step then kicks by exactly the total it drifts by.  Rounding
    (γ_i + γ_{i+1}) h/2 instead gives the two totals a difference of a few ulp that is the
    same every step, a force scaled apart from the kinetic energy: on Kepler over 100
    orbits a phase error of 3e-12 (Kahan-Li-8, compensated), where the random round-off
    is 1e-12.  With ``e`` (the correction of ``integrators.Compensated``, shaped like x)
    every kick and drift is added by compensated summation (``maps.compensated_add``): the
    rounding of each addition to x is carried in e, and no partial sum of the stages
    rounds on its own; else e comes back None.  The status is the
    new state's finiteness: every update adds to the state, so a non-finite kick or
    drift leaves it non-finite."""
    q, p = x
    real = jax.tree.leaves(x)[0].dtype
    table = jnp.asarray(leapfrog_plan(gamma), dtype=real)
    if e is None:
        add = lambda u, v, d: (jax.tree.map(lambda a, b: a + b, u, d), v)  # noqa: E731
        eq = ep = None
    else:
        add, (eq, ep) = compensated_add, e

    def kick(p, ep, a, b, q):
        # a = γ_i h and b = γ_{i+1} h (None: no next stage), each rounded once; halving
        # them is exact
        f = system.potential_gradient(q)
        if b is None:
            return add(p, ep, jax.tree.map(lambda g: -((0.5 * a) * g), f))
        return add(p, ep, jax.tree.map(lambda g: -((0.5 * a) * g + (0.5 * b) * g), f))

    def stage(carry, row):
        q, p, eq, ep = carry
        a, b = row[0] * h, row[1] * h
        q, eq = add(q, eq, jax.tree.map(lambda g: a * g, system.kinetic_gradient(p)))
        p, ep = kick(p, ep, a, b, q)
        return (q, p, eq, ep), None

    p, ep = kick(p, ep, table[0, 0] * h, None, q)
    (q, p, eq, ep), _ = jax.lax.scan(stage, (q, p, eq, ep), table)
    return (q, p), (None if e is None else (eq, ep)), ok_status((q, p))


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
