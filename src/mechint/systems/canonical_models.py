r"""Named canonical models: harmonic oscillator, pendulum, Kepler problem, Hénon-Heiles.

All are separable, H = T(p) + V(q) with T = ½|p|², and immutable pytrees whose
parameters are leaves (one compiled run serves every parameter value).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint._validate import positive_scalar, positive_vector, real_array, shown
from mechint.errors import InputError
from mechint.exact.canonical import harmonic_oscillator as exact_oscillator
from mechint.exact.canonical import kepler as exact_kepler
from mechint.systems.base import ExactSolution, Parameter, StateOption
from mechint.systems.canonical import Canonical, ReducedEnergy, Separable


def _g(v) -> str:
    return f"{float(v):g}"


def _half_square(p):
    return 0.5 * jnp.sum(p * p)


@final
@register_pytree(data=("omega",), meta=("dof",))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class HarmonicOscillator(Separable, ExactSolution):
    r"""H = Σ_i ½(p_i² + ω_i² q_i²): d uncoupled oscillators, d = len(omega).

    Exact flow: a rotation by ω_i t in each (ω_i q_i, p_i) plane (``mechint.exact``).
    H is quadratic, so implicit midpoint keeps it exactly.
    """

    omega: Float[Array, " d"]

    name: ClassVar[str] = "harmonic-oscillator"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("omega", "frequencies ω_i > 0, one per dof (default 1)"),
    )

    energy_degree: ClassVar[int | None] = 2

    def __init__(self, omega: npt.ArrayLike = 1.0):
        w = real_array("omega", omega)
        w = w.reshape(1) if w.ndim == 0 else w
        object.__setattr__(self, "omega", jnp.asarray(positive_vector("omega", w, None)))
        object.__setattr__(self, "dof", int(self.omega.shape[0]))

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("H",)

    def __repr__(self) -> str:
        return f"HarmonicOscillator(omega={shown(self.omega)})"

    def kinetic(self, p):
        return _half_square(p)

    def potential(self, q):
        return 0.5 * jnp.sum((self.omega * q) ** 2)

    def parameters(self) -> dict:
        return {"omega": [float(w) for w in np.asarray(self.omega)]}

    def exact_solution(self, x0, t):
        return exact_oscillator(self, x0, t)


@final
@register_pytree(data=("omega",))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class Pendulum(Separable):
    r"""The mathematical pendulum, H = ½p² + ω²(1 − cos q), ω² = g/l; q the angle."""

    omega: Float[Array, ""]

    name: ClassVar[str] = "pendulum"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("omega", "ω = √(g/l) > 0 (default 1)"),
    )
    dof = 1

    def __init__(self, omega: ArrayLike = 1.0):
        object.__setattr__(self, "omega", jnp.asarray(positive_scalar("omega", omega)))

    def __repr__(self) -> str:
        return f"Pendulum(omega={shown(self.omega, _g)})"

    def kinetic(self, p):
        return _half_square(p)

    def potential(self, q):
        return self.omega**2 * jnp.sum(1.0 - jnp.cos(q))

    def parameters(self) -> dict:
        return {"omega": float(self.omega)}


@final
@register_pytree(data=("mu",))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class Kepler(Separable, ReducedEnergy, ExactSolution):
    r"""The planar Kepler problem, H = ½|p|² − μ/|q|, q, p ∈ R².

    First integrals: the angular momentum L = q1 p2 − q2 p1 (the momentum map of the
    rotation group, quadratic of the form qᵀDp: kept exactly by symplectic Euler,
    Störmer-Verlet, midpoint and their compositions) and the Laplace-Runge-Lenz vector
    A = p × (L e3) − μ q/|q| = (p2 L − μ q1/|q|, −p1 L − μ q2/|q|).
    """

    descriptions: ClassVar[dict[str, str]] = {
        "L": "angular momentum q1 p2 − q2 p1",
        "A1": "Laplace–Runge–Lenz vector, first component",
        "A2": "Laplace–Runge–Lenz vector, second component",
    }

    mu: Float[Array, ""]

    name: ClassVar[str] = "kepler"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("mu", "gravitational parameter μ > 0 (default 1)"),
    )
    state_options: ClassVar[tuple[StateOption, ...]] = (
        *Canonical.state_options,
        StateOption("eccentricity", "kepler: start at periapsis of the orbit with this e (a = 1)"),
    )
    dof = 2
    momentum_maps: ClassVar[tuple[str, ...]] = ("L",)

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("L",)

    def __init__(self, mu: ArrayLike = 1.0):
        object.__setattr__(self, "mu", jnp.asarray(positive_scalar("mu", mu)))

    def __repr__(self) -> str:
        return f"Kepler(mu={shown(self.mu, _g)})"

    def kinetic(self, p):
        return _half_square(p)

    def potential(self, q):
        return -self.mu / jnp.sqrt(jnp.sum(q * q))

    def symmetry_invariants(self, z):
        """(|q|², |p|²), invariant under rotations (q, p) ↦ (Rq, Rp)."""
        q, p = z[:2], z[2:]
        return jnp.stack([q @ q, p @ p])

    def reduced_energy(self, pi):
        return 0.5 * pi[1] - self.mu / jnp.sqrt(pi[0])

    def first_integrals(self, x) -> dict:
        q, p = x
        L = q[..., 0] * p[..., 1] - q[..., 1] * p[..., 0]
        r = jnp.sqrt(jnp.sum(q * q, axis=-1))
        return {
            "L": L,
            "A1": p[..., 1] * L - self.mu * q[..., 0] / r,
            "A2": -p[..., 0] * L - self.mu * q[..., 1] / r,
        }

    def invariant_scales(self, x) -> dict:
        """The size of the terms A sums (``System.invariant_scales``): |p||L| + μ for A1
        and A2 (a component is 0 where A is along the other axis, at periapsis on q1)."""
        q, p = x
        L = q[..., 0] * p[..., 1] - q[..., 1] * p[..., 0]
        size_a = jnp.sqrt(jnp.sum(p * p, axis=-1)) * jnp.abs(L) + self.mu
        return {"A1": size_a, "A2": size_a}

    def periapsis_state(
        self, e: float | np.ndarray, a: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """(q, p) at periapsis of the orbit with eccentricity 0 <= e < 1 and semi-major axis
        a, moving counter-clockwise: q = (a(1 − e), 0), p = (0, √(μ(1 + e)/(a(1 − e))))."""
        e = float(real_array("e", e, ()))
        if not 0.0 <= e < 1.0:
            raise InputError("e", f"must be in [0, 1) for a bound orbit, got {e:g}")
        a = positive_scalar("a", a)
        mu = float(self.mu)
        return np.array([a * (1 - e), 0.0]), np.array([0.0, np.sqrt(mu * (1 + e) / (a * (1 - e)))])

    def exact_solution(self, x0, t):
        return exact_kepler(self, x0, t)

    def fictive_period(self, x0, g) -> float:
        """The fictive time S = ∮ dt / g(q, p) of one orbit of the bound orbit through x0,
        for ``TimeTransformed(self, g)`` (dt/ds = g): a run of fictive step Δs takes S/Δs
        steps an orbit.  By the trapezoid rule in the eccentric anomaly E (dt = (1 − e
        cos E)/n dE; exponentially convergent for a smooth periodic integrand), with
        points doubled from 256 until two estimates agree to 1e-13 (InputError naming
        ``g`` if they do not by 2^20 points, or g is not positive on the orbit)."""
        q0, p0 = (np.asarray(a, dtype=np.float64) for a in x0)
        mu = float(self.mu)
        r0 = float(np.hypot(*q0))
        energy = 0.5 * float(p0 @ p0) - mu / r0
        if not energy < 0:
            raise InputError("x0", f"is not on a bound orbit (energy {energy:g} >= 0)",
                             "a fictive period exists for e < 1 only")  # fmt: skip
        a = -mu / (2.0 * energy)
        L = float(q0[0] * p0[1] - q0[1] * p0[0])
        ecc_vec = np.array([p0[1] * L, -p0[0] * L]) / mu - q0 / r0
        e = float(np.hypot(*ecc_vec))
        P = ecc_vec / e if e > 0 else q0 / r0  # to periapsis (or the start, e = 0)
        Q = np.sign(L) * np.array([-P[1], P[0]])  # the direction of motion there
        n = np.sqrt(mu / a**3)
        b = a * np.sqrt(1.0 - e * e)
        fn = jax.jit(jax.vmap(g))

        def estimate(m: int) -> float:
            E = 2.0 * np.pi * np.arange(m) / m
            c, sn = np.cos(E), np.sin(E)
            q = a * (c - e)[:, None] * P + (b * sn)[:, None] * Q
            k = n / (1.0 - e * c)  # dE/dt
            p = (-a * sn * k)[:, None] * P + (b * c * k)[:, None] * Q
            gv = np.asarray(fn(jnp.asarray(q), jnp.asarray(p)), dtype=np.float64)
            if not np.all(np.isfinite(gv) & (gv > 0)):
                raise InputError("g", "must be positive and finite along the orbit",
                                 "dt/ds = g(q, p) > 0")  # fmt: skip
            return float(np.sum((1.0 - e * c) / (n * gv)) * (2.0 * np.pi / m))

        m, last = 256, estimate(256)
        while m < 2**20:
            m *= 2
            now = estimate(m)
            if abs(now - last) <= 1e-13 * abs(now):
                return now
            last = now
        raise InputError("g", "its fictive period did not converge by 2^20 points on the orbit",
                         "a smooth g on the orbit")  # fmt: skip

    def example_state(self):
        return exact_kepler(self, self.periapsis_state(0.5), 0.9)

    def state_from_options(self, given: dict, frame=None):
        """(q0, p0) from q0/p0, or the periapsis state of the orbit of eccentricity e."""
        if given.get("eccentricity") is None:
            return super().state_from_options(given, frame)
        if given.get("q0") is not None or given.get("p0") is not None:
            raise InputError("eccentricity", "give either eccentricity or q0/p0")
        e = np.asarray(given["eccentricity"])
        try:
            return self.periapsis_state(e.reshape(()) if e.size == 1 else e)
        except InputError as exc:
            raise InputError("eccentricity", exc.problem, exc.fix) from None

    def validate_state(self, x, name: str = "x0"):
        (q, p), batched = super().validate_state(x, name)
        if np.any(np.sum(q * q, axis=-1) == 0.0):
            raise InputError(f"{name}[0] (q)", "q = 0 is the singularity of the potential")
        return (q, p), batched

    def parameters(self) -> dict:
        return {"mu": float(self.mu)}


@final
@register_pytree(data=("lam",))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class HenonHeiles(Separable):
    r"""Hénon-Heiles: H = ½(p1² + p2²) + ½(q1² + q2²) + λ(q1² q2 − q2³/3).

    Bounded motion for H < 1/(6λ²); chaotic near that escape energy (λ = 1: H ≈ 1/8
    mixed, 1/6 the escape threshold).
    """

    lam: Float[Array, ""]

    name: ClassVar[str] = "henon-heiles"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("lam", "coupling λ > 0 (default 1)"),
    )
    dof = 2
    energy_degree: ClassVar[int | None] = 3

    def __init__(self, lam: ArrayLike = 1.0):
        object.__setattr__(self, "lam", jnp.asarray(positive_scalar("lam", lam)))

    def __repr__(self) -> str:
        return f"HenonHeiles(lam={shown(self.lam, _g)})"

    def kinetic(self, p):
        return _half_square(p)

    def potential(self, q):
        q1, q2 = q[0], q[1]
        return 0.5 * (q1 * q1 + q2 * q2) + self.lam * (q1 * q1 * q2 - q2**3 / 3.0)

    def parameters(self) -> dict:
        return {"lam": float(self.lam)}
