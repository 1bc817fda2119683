r"""Energy integrators in Marsden's sense (H∘Φ_h = H): the average vector field and
discrete gradients, for every ``PoissonSystem``: canonical systems, a constant skew
structure S (``PoissonHamiltonian``), the Lie–Poisson spaces (the built-in tops and
bodies, ``LiePoissonHamiltonian`` for any H) and Lotka–Volterra.

Both are maps x' = x + h S ∇̄H(x, x') with S skew (𝕁, the constant S, or the Poisson
tensor at the midpoint) and a *discrete gradient* ∇̄H: H(x') − H(x) = ∇̄H(x, x')·(x' − x),
so that H(x') − H(x) = h ∇̄Hᵀ S ∇̄H = 0.  With Π at the midpoint every quadratic Casimir
C is kept too: C(x') − C(x) = ∇C(m)·(x' − x) = h ∇C(m)ᵀ Π(m) ∇̄H = 0, as Π(m)∇C(m) = 0;
a linear Casimir (of a degenerate constant S) is kept by the same identity.  Solved by
Newton with the exact Jacobian (``mechint.solvers.Newton``) from the explicit Euler
guess; a step that does not converge fails (``Reason.NOT_CONVERGED``).  None of them is
symplectic or Poisson (Ge–Marsden: for a non-integrable H no map keeps both), except
where H is quadratic and the structure constant: there the AVF and Gonzalez maps are
the implicit midpoint rule (which on a Lie–Poisson space is not Poisson either).

- ``AverageVectorField()`` (Quispel–McLaren 2008): ∇̄H = ∫₀¹ ∇H((1−ξ)x + ξx') dξ, by
  n-point Gauss–Legendre quadrature.  Rule: when the system declares H a polynomial of
  degree d (``energy_degree``), n = ⌈d/2⌉ nodes integrate ∇H (degree d − 1 along the
  segment) exactly; otherwise n = 8 nodes, and after Newton has converged the integral
  is recomputed with 16: a difference above 16 ulp of its size fails the step (the
  quadrature had not converged to round-off).  Order 2, symmetric.
- ``DiscreteGradient("gonzalez")`` (Gonzalez 1996): the midpoint discrete gradient
  ∇̄H = ∇H(m) + [(H(x') − H(x) − ∇H(m)·Δ)/|Δ|²] Δ, m = (x + x')/2, Δ = x' − x.  Order 2,
  symmetric; equivariant under orthogonal symmetries, so with a rotation-invariant H it
  keeps the angular momentum too (``momentum_maps``: Kepler's L): Marsden's
  energy-momentum integrator.
- ``DiscreteGradient("itoh-abe")`` (Itoh–Abe 1988): the coordinate-increment gradient
  ∇̄H_i = [H(y_i) − H(y_{i−1})]/Δ_i, y_i = (x'_1..x'_i, x_{i+1}..x_n), computed as
  ∫₀¹ ∂_iH(y_{i−1} + ξΔ_i e_i) dξ by the same quadrature rule (no quotient of
  differences, which would lose its digits as Δ_i → 0).  Order 1, not symmetric.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import ClassVar, cast, final

import jax
import jax.numpy as jnp
import numpy as np

from mechint.errors import InputError
from mechint.maps import (
    ImplicitIntegrator,
    Reason,
    Setting,
    StepStatus,
    Traits,
    kept,
    serves_only,
    status,
)
from mechint.solvers import Newton
from mechint.systems.base import PoissonSystem
from mechint.systems.canonical import ReducedEnergy
from mechint.systems.forced import Forced, dot, matvec

# Gauss–Legendre nodes for H of unknown degree, and the check's
_NODES, _CHECK_NODES = 8, 16


def _gauss_legendre(n: int, dtype) -> tuple[jax.Array, jax.Array]:
    """Nodes ξ in (0, 1) and weights (summing to 1) of the n-point Gauss–Legendre rule."""
    x, w = np.polynomial.legendre.leggauss(n)
    return jnp.asarray(0.5 * (x + 1.0), dtype=dtype), jnp.asarray(0.5 * w, dtype=dtype)


def _mean(grad, z0, z1, n: int):
    """∫₀¹ grad((1−ξ)z0 + ξz1) dξ by the n-point Gauss–Legendre rule."""
    xi, w = _gauss_legendre(n, z0.dtype)
    return w @ jax.vmap(grad)((1.0 - xi)[:, None] * z0 + xi[:, None] * z1)


def _nodes(degree: int | None) -> int:
    """Nodes integrating the gradient of a polynomial of ``degree`` exactly (⌈d/2⌉), or
    ``_NODES`` when H is not declared polynomial."""
    return _NODES if degree is None else max(1, math.ceil(degree / 2))


def _flat_energy(system: PoissonSystem):
    """H and ∇H of one sample as functions of the system's coordinates z."""

    def H(z):
        return system.hamiltonian(system.from_coordinates(z))

    return H, jax.grad(H)


def _gonzalez_gradient(H, grad, z0, z1, n: int):
    """Gonzalez's midpoint discrete gradient of H, its numerator H(z1) − H(z0) − ∇H(m)·Δ
    written as (∫∇H − ∇H(m))·Δ (no cancellation between values of H)."""
    delta = z1 - z0
    g = grad(0.5 * (z0 + z1))
    n2 = delta @ delta
    coefficient = jnp.where(n2 > 0, ((_mean(grad, z0, z1, n) - g) @ delta), 0.0)
    return g + coefficient / jnp.where(n2 > 0, n2, 1.0) * delta


def _average(system, z0, z1, n):
    return _mean(_flat_energy(system)[1], z0, z1, n)


def _gonzalez(system, z0, z1, n):
    if isinstance(system, ReducedEnergy):  # in the symmetry's invariants π(z)
        pi = system.symmetry_invariants
        dpi = jax.jacfwd(pi)(0.5 * (z0 + z1))  # exact: π(z1) − π(z0) = Dπ(m)Δ (π quadratic)
        grad = jax.grad(system.reduced_energy)
        return dpi.T @ _gonzalez_gradient(system.reduced_energy, grad, pi(z0), pi(z1), n)
    return _gonzalez_gradient(*_flat_energy(system), z0, z1, n)


def _itoh_abe(system, z0, z1, n):
    """∇̄H_i = ∫₀¹ ∂_iH(y_{i−1} + ξΔ_i e_i) dξ = [H(y_i) − H(y_{i−1})]/Δ_i, every
    coordinate's nodes at once: ∂_iH by forward mode along e_i (one evaluation of H
    each), the other coordinates of y_{i−1} exactly those of z0 or z1."""
    H, _ = _flat_energy(system)
    d = z0.shape[-1]
    eye = jnp.eye(d, dtype=z0.dtype)
    before = jnp.tril(jnp.ones((d, d), dtype=bool), k=-1)  # row i: the coordinates j < i
    starts = jnp.where(before, z1[None, :], z0[None, :])  # y_{i−1}
    xi, w = _gauss_legendre(n, z0.dtype)
    steps = (z1 - z0)[:, None, None] * eye[:, None, :]  # Δ_i e_i
    points = starts[:, None, :] + xi[None, :, None] * steps  # (d, n, d)
    directions = jnp.broadcast_to(eye[:, None, :], points.shape)

    def partial(y, e):
        return jax.jvp(H, (y,), (e,))[1]

    return jax.vmap(jax.vmap(partial))(points, directions) @ w


def _integrand_degree(system, dgrad) -> int | None:
    """The polynomial degree of what ``dgrad`` integrates (None: not polynomial)."""
    return (
        None if dgrad is _gonzalez and isinstance(system, ReducedEnergy) else system.energy_degree
    )


def _structure(system: PoissonSystem, z0, z1):
    """Π at the midpoint (𝕁 for a canonical system): skew, and Casimir gradients at the
    midpoint in its kernel, so H and every quadratic Casimir are kept."""
    return system.poisson_tensor(system.from_coordinates(0.5 * (z0 + z1))).astype(z0.dtype)


def _discrete_gradient_step(solver: Newton, system: PoissonSystem, x, h, dgrad):
    """x' = x + h Π((x + x')/2) ∇̄H(x, x') by Newton from the explicit Euler guess; for
    H not declared polynomial, the quadrature is checked at the root (8 against 16
    nodes)."""
    z0 = system.coordinates(x)
    degree = _integrand_degree(system, dgrad)
    n = _nodes(degree)

    def residual(z, args):
        system_, z0_, h_ = args
        return z - z0_ - h_ * (_structure(system_, z0_, z) @ dgrad(system_, z0_, z, n))

    guess = z0 + h * (_structure(system, z0, z0) @ _flat_energy(system)[1](z0))
    z1, st = solver.solve(residual, guess, (system, z0, h))
    ok, res = _quadrature_checked(system, z0, z1, degree, dgrad, st.converged, st.residual)
    return system.from_coordinates(z1), status(ok, res, Reason.NOT_CONVERGED)


def _quadrature_checked(system, z0, z1, degree, dgrad, ok, res):
    """(ok, residual) with the step failed where H is not declared polynomial and the
    quadrature of ∇̄H at the root moves by more than 16 ulp from 8 to 16 nodes: ulp of
    ∇̄H, and of what rounding the nodes' coordinates moves ∇H by (ε|z| over the
    coordinates that move, whose nodes are rounded, times ∇H's slope along the step,
    |∇H(z1) − ∇H(z0)|/|z1 − z0|: the floor of any quadrature where those coordinates
    are large against the step, e.g. a time t ≫ h as coordinate)."""
    if degree is not None:
        return ok, res
    coarse, fine = dgrad(system, z0, z1, _NODES), dgrad(system, z0, z1, _CHECK_NODES)
    eps = jnp.finfo(z0.dtype).eps
    gap = jnp.max(jnp.abs(fine - coarse))
    grad = _flat_energy(system)[1]
    step = jnp.max(jnp.abs(z1 - z0))
    slope = jnp.max(jnp.abs(grad(z1) - grad(z0))) / jnp.where(step > 0, step, 1.0)
    moving = jnp.where(z1 != z0, jnp.maximum(jnp.abs(z0), jnp.abs(z1)), 0.0)
    size = jnp.max(jnp.abs(fine)) + jnp.max(moving) * slope
    bad = ~(gap <= 16 * eps * (size + jnp.finfo(z0.dtype).tiny))
    return ok & ~bad, jnp.where(bad & ok, gap, res)


def _forced_residual(dgrad, n: int, z, args):
    """z − z0 − h[(Π(m) − R(m)) ∇̄H(z0, z) + F(t + h/2, m)], m = (z0 + z)/2."""
    system, z0, t, h = args
    base = system.base
    mid = base.from_coordinates(0.5 * (z0 + z))
    rate = matvec(_structure(base, z0, z) - system.damping(mid), dgrad(base, z0, z, n))
    return z - z0 - h * (rate + system.generalized_force(t + 0.5 * h, mid))


def _forced_step(solver: Newton, system: Forced, x, h, dgrad):
    """The energy-balance map of McLachlan, Quispel and Robidoux (1999, §2) on a forced
    system: z' = z + h[(Π(m) − R(m)) ∇̄H(z, z') + F(t + h/2, m)], m = (z + z')/2, with
    the step's discrete work W = h ∇̄H·F and dissipation D = h ∇̄Hᵀ R(m) ∇̄H, so that
    H(z') − H(z) = ∇̄H·(z' − z) = W − D exactly (Π skew).  A momentum map's impulse is
    h ∇J(m)·(F − R(m)∇̄H) (kept to the map's order, not exactly)."""
    base = system.base
    xb, t, work, dissipated, impulses = system.split(x)
    z0 = base.coordinates(xb)
    degree = _integrand_degree(base, dgrad)
    n = _nodes(degree)
    guess = z0 + h * system.coordinate_rate(t, z0)
    z1, st = solver.solve(partial(_forced_residual, dgrad, n), guess, (system, z0, t, h))
    ok, res = _quadrature_checked(base, z0, z1, degree, dgrad, st.converged, st.residual)
    z1 = cast(jax.Array, z1)
    m = 0.5 * (z0 + z1)
    mid = base.from_coordinates(m)
    g = dgrad(base, z0, z1, n)
    F, Rg = system.generalized_force(t + 0.5 * h, mid), matvec(system.damping(mid), g)
    gained = [h * dot(dJ, F - Rg) for dJ in system.momentum_gradients(m)]
    out = system.join(base.from_coordinates(z1), t + h, work + h * dot(g, F),
                      dissipated + h * dot(g, Rg),
                      tuple(i + d for i, d in zip(impulses, gained, strict=True)))  # fmt: skip
    return system.advance_clock(x, out, h), status(ok, res, Reason.NOT_CONVERGED)


@final
@dataclasses.dataclass(frozen=True)
class AverageVectorField(ImplicitIntegrator):
    """The average vector field method (energy-preserving, order 2, symmetric)."""

    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "average-vector-field"
    traits = Traits(order=2, symmetric=True, explicit=False, energy=True, forced=True)

    def cannot_serve(self, system) -> str | None:
        return serves_only(system.base if isinstance(system, Forced) else system, (PoissonSystem,))

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        if isinstance(system, Forced):
            return _forced_step(self.solver, system, x, h, _average)
        return _discrete_gradient_step(self.solver, system, x, h, _average)

    def poisson_on(self, system) -> bool:
        """On a quadratic H with a constant structure the map is the midpoint rule:
        Poisson (on a Lie–Poisson space the midpoint rule is not Poisson)."""
        return system.constant_structure and system.energy_degree == 2

    def preserved(self, system, x, h) -> dict:
        if isinstance(system, Forced):
            return kept(system, ("H_balance",), x)
        return kept(system, (system.energy_name, *_quadratic_casimirs(system, x)), x)


_VARIANTS = {"gonzalez": _gonzalez, "itoh-abe": _itoh_abe}


def _quadratic_casimirs(system, x) -> tuple[str, ...]:
    """The system's Casimirs that are quadratic: kept exactly (Π at the midpoint).  Named
    from the state at hand (the system may be traced: no example state evaluated)."""
    casimirs = jax.eval_shape(system.casimirs, jax.tree.map(jnp.asarray, x))
    return tuple(name for name in system.quadratic_invariants if name in casimirs)


@final
@dataclasses.dataclass(frozen=True)
class DiscreteGradient(ImplicitIntegrator):
    """A discrete gradient method: ``variant`` "gonzalez" (order 2, symmetric, keeps H
    and, for a ``ReducedEnergy`` system, its momentum maps) or "itoh-abe" (order 1,
    keeps H)."""

    variant: str = "gonzalez"
    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "discrete-gradient"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("variant", "discrete-gradient: gonzalez (default) or itoh-abe"),
    )

    def __post_init__(self):
        if self.variant not in _VARIANTS:
            raise InputError("variant", f"must be 'gonzalez' or 'itoh-abe', got {self.variant!r}")
        self.settle_traits()

    def derived_traits(self) -> Traits:
        gonzalez = self.variant == "gonzalez"
        return Traits(order=2 if gonzalez else 1, symmetric=gonzalez, explicit=False, energy=True,
                      forced=True)  # fmt: skip

    def cannot_serve(self, system) -> str | None:
        if self.variant == "gonzalez" and getattr(system, "time_dependent", False):
            return ("on the extended phase space Gonzalez's gradient moves the time at a rate "
                    "1 + O(h²), not 1: use AverageVectorField() or DiscreteGradient('itoh-abe'), "
                    "which keep K = H + e and advance t by h")  # fmt: skip
        return serves_only(system.base if isinstance(system, Forced) else system, (PoissonSystem,))

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        if isinstance(system, Forced):
            return _forced_step(self.solver, system, x, h, _VARIANTS[self.variant])
        return _discrete_gradient_step(self.solver, system, x, h, _VARIANTS[self.variant])

    def poisson_on(self, system) -> bool:
        """Gonzalez's gradient of a quadratic H is ∇H at the midpoint: on a constant
        structure the midpoint rule, Poisson.  Itoh–Abe's is not."""
        quadratic = system.constant_structure and system.energy_degree == 2
        return self.variant == "gonzalez" and quadratic

    def preserved(self, system, x, h) -> dict:
        if isinstance(system, Forced):  # Gonzalez's is equivariant: the momenta's balances
            reduced = self.variant == "gonzalez" and isinstance(system.base, ReducedEnergy)
            momenta = tuple(f"{J}_balance" for J in system.momenta) if reduced else ()
            return kept(system, ("H_balance", *momenta), x)
        reduced = self.variant == "gonzalez" and isinstance(system, ReducedEnergy)
        momenta = system.momentum_maps if reduced else ()
        names = (system.energy_name, *_quadratic_casimirs(system, x), *momenta)
        return kept(system, names, x)
