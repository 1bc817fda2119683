r"""Lie group methods: Runge–Kutta–Munthe-Kaas, commutator-free, Magnus.

The state is a point of M = SO(3)^k × Rⁿ: the fields a system names in
``rotation_fields()`` are rotations moving as Ṙ = R hat(ω) (body angular velocities),
the rest is a vector space.  Written as ẏ = λ_*(F(y)) y for the left action
λ((g, v), (R, z)) = (R g⁻¹, z + v) of G = SO(3)^k × Rⁿ, whose generator is
F = (−ω, ż) (so3 ≅ R³, the bracket u × v on the rotations and 0 on Rⁿ), each map
advances by exponentials and actions only: every R stays a rotation to round-off
whatever the field, the torque or the step (Iserles, Munthe-Kaas, Nørsett, Zanna,
"Lie-group methods", Acta Numerica 9 (2000) 215).

- ``RKMK(order=4)`` (Munthe-Kaas, BIT 38 (1998) 92; Acta Numerica §5): the classical
  RK4 tableau in the Lie algebra, u_i = h Σ_j a_ij k̃_j, k̃_i = dexp⁻¹_{u_i} F(exp(u_i)·y),
  y' = exp(h Σ b_i k̃_i)·y, with so(3)'s dexp⁻¹ in closed form (``lie.so3.dexpinv``).
- ``CommutatorFree(order=4)`` (Celledoni, Marthinsen, Owren, "Commutator-free Lie group
  methods", FGCS 19 (2003) 341, the method of their §3 on RK4): F_i = h F(Y_i),
  Y₂ = exp(½F₁)·y, Y₃ = exp(½F₂)·y, Y₄ = exp(F₃ − ½F₁)·Y₂,
  y' = exp(−1⁄12 F₁ + ⅙F₂ + ⅙F₃ + ¼F₄)·exp(¼F₁ + ⅙F₂ + ⅙F₃ − 1⁄12 F₄)·y: two
  exponentials a step and no commutator (the one weighted to F₁ acts first; in the
  other order the method is of order 2, which the tests show).
- ``Magnus(order=4)`` for a linear field F(t) that does not depend on the state
  (``systems.AttitudeKinematics``): Ω = (h/2)(F₁ + F₂) − (√3/12) h² [F₁, F₂] with F at
  the Gauss nodes t + (½ ∓ √3/6) h, y' = exp(Ω)·y (Iserles–Nørsett; Blanes, Casas, Oteo,
  Ros, Phys. Rep. 470 (2009) 151, (43)).

Each is of order 4 (observed against DOP853 in the tests), explicit, not symmetric; the
coefficient sets are checked on construction: the abelian reduction of RKMK and of the
commutator-free scheme is a Butcher tableau that satisfies RK4's order conditions
(``tableau.ButcherTableau``), Magnus' nodes are Gauss' (c₁ + c₂ = 1, c₁c₂ = 1/6).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from mechint.errors import InputError
from mechint.integrators import tableau as tab
from mechint.lie import so3
from mechint.maps import Integrator, Setting, StepStatus, Traits, kept, ok_status
from mechint.systems.attitude import AttitudeKinematics


def _rotation_mask(system, x) -> list[bool]:
    """Which leaves of the state x are rotations."""
    names = [name for name, _ in system.state_fields]
    rotations = system.rotation_fields()
    return [name in rotations for name in names[: len(jax.tree.leaves(x))]]


def generator(system, x):
    """F(y) as a list over the state's leaves: −vee(skew(RᵀṘ)) on a rotation, ẏ else."""
    mask = _rotation_mask(system, x)
    out = []
    for is_rotation, y, v in zip(mask, jax.tree.leaves(x), jax.tree.leaves(system.vector_field(x)),
                                 strict=True):  # fmt: skip
        if is_rotation:
            A = jnp.swapaxes(y, -1, -2) @ v
            out.append(-so3.vee(0.5 * (A - jnp.swapaxes(A, -1, -2))))
        else:
            out.append(v)
    return out


def act(system, sigma, x):
    """exp(σ)·x: R ↦ R exp(−hat(σ_R)) on the rotations (as R + R(exp(−hat(σ_R)) − 1),
    rounded once relative to R), z ↦ z + σ_z on the rest."""
    return advance(system, [sigma], x)[0]


def advance(system, sigmas, x):
    """(exp(σ_m)·…·exp(σ_1)·x, its increment) for the exponents ``sigmas`` in the order
    they act: the increment summed from each action's own (R ↦ R expm1, z ↦ σ_z), so its
    rounding is relative to the increment, as compensated summation needs."""
    leaves, treedef = jax.tree.flatten(x)
    mask = _rotation_mask(system, x)
    y, d = list(leaves), [jnp.zeros_like(a) for a in leaves]
    for sigma in sigmas:
        for k, (is_rotation, s) in enumerate(zip(mask, sigma, strict=True)):
            step = y[k] @ so3.expm1(-s) if is_rotation else s
            y[k], d[k] = y[k] + step, d[k] + step
    return jax.tree.unflatten(treedef, y), jax.tree.unflatten(treedef, d)


def _combine(terms) -> list:
    """Σ c_i σ_i over (c, σ) pairs with c ≠ 0 (σ a list over the leaves)."""
    terms = [(c, s) for c, s in terms if c != 0.0]
    return [sum((c * s[k] for c, s in terms[1:]), terms[0][0] * terms[0][1][k])
            for k in range(len(terms[0][1]))]  # fmt: skip


def _scale(c, sigma) -> list:
    return [c * s for s in sigma]


def _dexpinv(mask, u, v) -> list:
    return [so3.dexpinv(a, b) if is_rotation else b for is_rotation, a, b in zip(mask, u, v,
            strict=True)]  # fmt: skip


def _bracket(mask, u, v) -> list:
    return [jnp.cross(a, b) if is_rotation else jnp.zeros_like(b)
            for is_rotation, a, b in zip(mask, u, v, strict=True)]  # fmt: skip


def _serves(system) -> str | None:
    if system.rotation_fields():
        return None
    return (
        "it advances states with rotation matrices (systems.RigidBodies, "
        "systems.AttitudeKinematics, a Forced system of them); on a vector space use RK4"
    )


def _check_order(order) -> int:
    if isinstance(order, bool) or order != 4:
        raise InputError("order", f"must be 4, got {order!r}", "order=4 (the method of the paper)")
    return 4


@dataclasses.dataclass(frozen=True)
class CommutatorFreeScheme:
    """A commutator-free method as data: ``stages[i]`` = (the stage it starts from,
    [(j, α) ...]: Y_i = exp(Σ α F_j)·Y_from), and ``output`` = the exponents of
    y' = exp(Σ βᵐ F)·…·exp(Σ β¹ F)·y in the order they act (β¹ first).  Checked on construction:
    its abelian reduction (each stage the sum of the exponents it applies from y, the
    output the sum of all) is an explicit Butcher tableau of ``order`` (its order
    conditions, ``tableau.ButcherTableau``)."""

    stages: tuple[tuple[int, tuple[tuple[int, float], ...]], ...]
    output: tuple[tuple[float, ...], ...]
    order: int

    def __post_init__(self):
        s = len(self.stages)
        a = np.zeros((s, s))
        for i, (start, exponent) in enumerate(self.stages):
            a[i] = a[start] if start != i else 0.0
            for j, alpha in exponent:
                if j >= i:
                    raise ValueError(f"stage {i} uses F_{j}: not explicit")
                a[i, j] += alpha
        b = np.sum(np.array(self.output, dtype=float), axis=0)
        tab.ButcherTableau(a=tuple(map(tuple, a)), b=tuple(b), order=self.order)


CF4 = CommutatorFreeScheme(
    stages=((0, ()), (0, ((0, 0.5),)), (0, ((1, 0.5),)), (1, ((0, -0.5), (2, 1.0)))),
    output=((0.25, 1 / 6, 1 / 6, -1 / 12), (-1 / 12, 1 / 6, 1 / 6, 0.25)),
    order=4,
)


class LieGroupMap(Integrator):
    """What the Lie group maps share: ``order`` 4 (checked), explicit, serving the
    systems with rotations (and forced ones), a step that is its ``exponents`` acting on
    x (``advance``) with the clock advanced exactly, the increment for compensated
    summation, and the rotations' Casimirs kept."""

    order: int
    symmetric: ClassVar[bool] = False

    def __post_init__(self):
        object.__setattr__(self, "order", _check_order(self.order))
        self.settle_traits()

    def derived_traits(self) -> Traits:
        return Traits(order=self.order, symmetric=self.symmetric, explicit=True, forced=True)

    def cannot_serve(self, system) -> str | None:
        return _serves(system)

    def preserved(self, system, x, h) -> dict:
        """The rotations' Casimirs (RᵀR = 1: ``trRtR``), to round-off (it adds up, about
        ε per radian turned)."""
        return kept(system, tuple(system.casimirs(x)), x)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        y = system.advance_clock(x, advance(system, self.exponents(system, x, h), x)[0], h)
        return y, ok_status(y)

    def increment(self, system, x, h) -> tuple[object, StepStatus]:
        y, d = advance(system, self.exponents(system, x, h), x)
        return d, ok_status(y)

    def forms_increment(self, system) -> bool:
        return True

    def exponents(self, system, x, h) -> list:
        """The exponent(s) of the step, in the order they act on x."""
        raise NotImplementedError


@final
@dataclasses.dataclass(frozen=True)
class RKMK(LieGroupMap):
    """Runge–Kutta–Munthe-Kaas of ``order`` 4 (the classical RK4 tableau)."""

    order: int = 4

    name: ClassVar[str] = "rkmk"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("order", "rkmk: 4", int),)

    def exponents(self, system, x, h) -> list:
        mask = _rotation_mask(system, x)
        table = tab.RK4
        ks: list[list] = []
        for _, row in table.stages():
            if row:
                u = _scale(h, _combine([(a, ks[j]) for j, a in row]))
                ks.append(_dexpinv(mask, u, generator(system, act(system, u, x))))
            else:
                ks.append(generator(system, x))
        return [_scale(h, _combine(list(zip(table.b, ks, strict=True))))]


@final
@dataclasses.dataclass(frozen=True)
class CommutatorFree(LieGroupMap):
    """The commutator-free Lie group method CF4 of Celledoni, Marthinsen and Owren."""

    order: int = 4

    name: ClassVar[str] = "commutator-free"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("order", "commutator-free: 4", int),)

    def exponents(self, system, x, h) -> list:
        scheme = CF4
        Y: list[Any] = []
        F: list[list] = []
        for i, (start, exponent) in enumerate(scheme.stages):
            Yi = x if i == 0 else Y[start]
            if exponent:
                Yi = act(system, _combine([(alpha, F[j]) for j, alpha in exponent]), Yi)
            Y.append(Yi)
            F.append(_scale(h, generator(system, Yi)))
        return [_combine(list(zip(beta, F, strict=True))) for beta in scheme.output]


# Magnus' two Gauss nodes and the commutator's coefficient
_C1, _C2 = 0.5 - math.sqrt(3) / 6, 0.5 + math.sqrt(3) / 6
_COMMUTATOR = math.sqrt(3) / 12
assert abs(_C1 + _C2 - 1) < 1e-15 and abs(_C1 * _C2 - 1 / 6) < 1e-15  # Gauss' nodes


@final
@dataclasses.dataclass(frozen=True)
class Magnus(LieGroupMap):
    """Magnus' fourth-order exponential for a linear field F(t) (attitude kinematics
    with a given ω(t))."""

    order: int = 4

    name: ClassVar[str] = "magnus"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("order", "magnus: 4", int),)
    symmetric: ClassVar[bool] = True

    def cannot_serve(self, system) -> str | None:
        if isinstance(system, AttitudeKinematics):
            return None
        return "its field must not depend on the state: systems.AttitudeKinematics, Ṙ = R hat(ω(t))"

    def exponents(self, system, x, h) -> list:
        assert isinstance(system, AttitudeKinematics)
        mask = _rotation_mask(system, x)
        R, t, rounding = x
        F1 = generator(system, (R, t + _C1 * h, rounding))
        F2 = generator(system, (R, t + _C2 * h, rounding))
        average = _scale(0.5 * h, _combine([(1.0, F1), (1.0, F2)]))
        commutator = _scale(-_COMMUTATOR * h * h, _bracket(mask, F1, F2))
        return [_combine([(1.0, average), (1.0, commutator)])]
