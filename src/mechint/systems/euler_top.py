"""The free rigid body (Euler top) on so(3)* ≅ R³ (docs/math.md §1)."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar, final

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint import maps
from mechint._pytree import register_pytree
from mechint._validate import positive_scalar, positive_vector, shown, traced
from mechint.exact.euler_top import euler_top as exact_euler_top
from mechint.lie import hat, vee
from mechint.systems.base import (
    ExactSolution,
    LevelSetSampler,
    MoserVeselovBody,
    NaturalSplit,
    Parameter,
    PoissonSystem,
    PrincipalRotations,
    QuadraticVectorField,
    StateOption,
    validate_vector_state,
)
from mechint.systems.flows import AxisRotation


class FreeTop(abc.ABC):
    """The capability of a system that is the free rigid body on so(3)* in some
    coordinates (the Euler top itself; the n = 3 free body with M = hat(m)): what the
    exact flow needs to serve it."""

    @abc.abstractmethod
    def as_euler_top(self) -> EulerTop | None:
        """The Euler top it equals (None where it is not one, e.g. a body with n ≠ 3)."""

    @abc.abstractmethod
    def to_momentum(self, x) -> Float[Array, "... 3"]:
        """The body angular momentum m (..., 3) of a state."""

    @abc.abstractmethod
    def from_momentum(self, m: Float[Array, "... 3"]) -> Any:
        """The state of body angular momentum m."""


class AngularMomentum(PoissonSystem):
    """The state of a body in its angular momentum m ∈ R³ on so(3)* (the Euler top, the
    gyrostat): Π(m) = hat(m) (linear: a Lie–Poisson structure), the Casimir C = ½|m|²,
    the state option x0, coordinates m itself."""

    descriptions: ClassVar[dict[str, str]] = {"m": "body angular momentum", "C": "Casimir ½|m|²"}
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("x0", "initial body angular momentum m: 3 numbers"),
    )
    state_fields = (("m", ("axis",)),)
    energy_degree: ClassVar[int | None] = 2
    linear_structure: ClassVar[bool] = True

    inertia: Float[Array, " 3"]

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (3,)

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("H", "C")

    @property
    def coefficients(self) -> Float[Array, " 3"]:
        """(a1, a2, a3) with a1 = (I2−I3)/(I2 I3) and cyclically: ṁ_i = a_i m_j m_k + …"""
        I1, I2, I3 = self.inertia[0], self.inertia[1], self.inertia[2]
        return jnp.stack([(I2 - I3) / (I2 * I3), (I3 - I1) / (I3 * I1), (I1 - I2) / (I1 * I2)])

    def casimirs(self, m: Float[Any, "... 3"]) -> dict[str, Float[Array, ...]]:
        return {"C": 0.5 * jnp.sum(m * m, axis=-1)}

    def invariants(self, m: Float[Any, "... 3"]) -> dict[str, Float[Array, ...]]:
        return {"H": self.hamiltonian(m), **self.casimirs(m)}

    def poisson_tensor(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3 3"]:
        return hat(m)

    def coordinates(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
        return m

    def from_coordinates(self, z: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
        return z

    def example_state(self) -> np.ndarray:
        return np.array([0.45, -0.3, 0.89])

    def validate_state(self, x, name: str = "x0") -> tuple[np.ndarray, bool]:
        return validate_vector_state(name, x, 3)


@final
@register_pytree(data=("inertia",))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class EulerTop(
    AngularMomentum,
    QuadraticVectorField,
    ExactSolution,
    LevelSetSampler,
    NaturalSplit,
    PrincipalRotations,
    MoserVeselovBody,
    FreeTop,
):
    r"""Free rigid body in body angular momentum m ∈ R³ with principal moments I.

    ṁ = m × I⁻¹m, i.e. ṁ1 = a1 m2 m3, ṁ2 = a2 m3 m1, ṁ3 = a3 m1 m2 with
    a1 = (I2−I3)/(I2 I3), a2 = (I3−I1)/(I3 I1), a3 = (I1−I2)/(I1 I2).
    Hamiltonian H = ½ Σ m_i²/I_i, Casimir C = ½|m|², Poisson tensor Π(m) = hat(m)
    (the minus Lie-Poisson structure on so(3)*), ṁ = Π(m)∇H.

    Any positive inertia is accepted, including two or three equal moments.
    """

    inertia: Float[Array, " 3"]

    name: ClassVar[str] = "euler-top"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("inertia", "principal moments I1,I2,I3", required=True, example="2,1,0.6667"),
    )

    def __init__(self, inertia=(2.0, 1.0, 2.0 / 3.0)):
        object.__setattr__(self, "inertia", jnp.asarray(positive_vector("inertia", inertia, 3)))

    def __repr__(self) -> str:
        return f"EulerTop(inertia={shown(self.inertia)})"

    # -- structure ---------------------------------------------------------------------
    def vector_field(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
        a = self.coefficients
        m1, m2, m3 = m[..., 0], m[..., 1], m[..., 2]
        return jnp.stack([a[0] * m2 * m3, a[1] * m3 * m1, a[2] * m1 * m2], axis=-1)

    def hamiltonian(self, m: Float[Any, "... 3"]) -> Float[Array, ...]:
        return 0.5 * jnp.sum(m * m / self.inertia, axis=-1)

    def quadratic_form(self):
        """(Q, B, c) of ṁ = Q(m, m): Q_1,23 = Q_1,32 = a1/2 and cyclically; B = 0, c = 0.
        Kahan's generic quadratic-field step on these equals the closed-form step."""
        a = self.coefficients
        Q = jnp.zeros((3, 3, 3), dtype=a.dtype)
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            Q = Q.at[i, j, k].set(0.5 * a[i]).at[i, k, j].set(0.5 * a[i])
        return Q, jnp.zeros((3, 3), dtype=a.dtype), jnp.zeros(3, dtype=a.dtype)

    # -- Kahan's modified integrals (docs/math.md §2) ----------------------------------------
    def kahan_integrals(self, m: Float[Array, "... 3"], h) -> dict[str, Float[Array, ...]]:
        r"""The quantities Kahan's map with step h keeps exactly.

        With ε = h/2, (i, j, k) cyclic and d_k = 1 − ε² a_i a_j m_k²:
        K_k = (a_j m_i² − a_i m_j²)/d_k  (→ 2H − 2C/I_k as h → 0) and the ratios d_i/d_j.
        """
        a = self.coefficients
        eps2 = (0.5 * h) ** 2
        sq = m * m
        d = [1.0 - eps2 * a[(k + 1) % 3] * a[(k + 2) % 3] * sq[..., k] for k in range(3)]
        out = {}
        for k in range(3):
            i, j = (k + 1) % 3, (k + 2) % 3
            out[f"K{k + 1}"] = (a[j] * sq[..., i] - a[i] * sq[..., j]) / d[k]
        out["d1/d2"] = d[0] / d[1]
        out["d2/d3"] = d[1] / d[2]
        return out

    def kahan_poisson(self) -> bool:
        """Kahan's map is Poisson for hat(m) iff two moments are equal (Kahan's theorem,
        docs/math.md §2)."""
        if traced(self.inertia):  # unknown moments: not claimed
            return False
        I = np.asarray(self.inertia)
        return bool(I[0] == I[1] or I[1] == I[2] or I[0] == I[2])

    # -- the n = 3 body the discrete Lagrangian map serves (MoserVeselovBody) ----------
    @property
    def n(self) -> int:
        return 3  # the body's dimension: its attitude lies in SO(3)

    def principal_moments(self) -> Float[Array, " 3"]:
        return self.inertia

    def body_split(self, x) -> tuple[Any, Any]:
        return hat(x), None

    def body_advance(self, x, M_next, W) -> Any:
        return vee(M_next)

    def euler_coefficients(self) -> Float[Array, " 3"]:
        """Kahan's map has a closed form here (``integrators.kahan.euler_top_step``)."""
        return self.coefficients

    # -- facts ---------------------------------------------------------------------------
    def as_euler_top(self) -> EulerTop:
        return self

    def to_momentum(self, x) -> Float[Array, "... 3"]:
        return x

    def from_momentum(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
        return m

    def exact_solution(self, x0, t) -> np.ndarray:
        return exact_euler_top(self, x0, t)

    def natural_split(self) -> tuple[maps.Integrator, ...]:
        """H = Σ H_i, H_i = m_i²/(2 I_i): three exact rotations about the principal axes."""
        return (AxisRotation(0), AxisRotation(1), AxisRotation(2))

    def body_vectors(self, x) -> tuple[Any, ...]:
        return (x,)

    def from_body_vectors(self, x, vectors: tuple[Any, ...]) -> Any:
        return vectors[0]

    level_set_keys = ("C",)

    def sample_level_set(self, rng: np.random.Generator, count: int, spec: dict) -> np.ndarray:
        """Uniform on the sphere |m|²/2 = C (``spec["C"]``, default 0.5)."""
        C = positive_scalar("initial.random.C", spec.get("C", 0.5))
        v = rng.standard_normal((count, 3))
        return np.sqrt(2.0 * C) * v / np.linalg.norm(v, axis=1, keepdims=True)

    # -- metadata --------------------------------------------------------------------------
    def parameters(self) -> dict:
        return {"inertia": [float(v) for v in np.asarray(self.inertia)]}
