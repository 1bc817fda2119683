"""The free rigid body (Euler top) on so(3)* ≅ R³ (MATH.md §1)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint._validate import positive_vector
from mechint.lie import hat
from mechint.systems.base import validate_vector_state


@register_pytree(data=("inertia",))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class EulerTop:
    r"""Free rigid body in body angular momentum m ∈ R³ with principal moments I.

    ṁ = m × I⁻¹m, i.e. ṁ1 = a1 m2 m3, ṁ2 = a2 m3 m1, ṁ3 = a3 m1 m2 with
    a1 = (I2−I3)/(I2 I3), a2 = (I3−I1)/(I3 I1), a3 = (I1−I2)/(I1 I2).
    Hamiltonian H = ½ Σ m_i²/I_i, Casimir C = ½|m|², Poisson tensor Π(m) = hat(m)
    (the minus Lie-Poisson structure on so(3)*), ṁ = Π(m)∇H.

    Any positive inertia is accepted, including two or three equal moments.
    """

    inertia: Float[Array, 3]

    name: ClassVar[str] = "euler-top"
    state_fields: ClassVar[tuple] = (("m", ("axis",)),)
    state_shape: ClassVar[tuple[int, ...]] = (3,)
    quadratic_invariants: ClassVar[tuple[str, ...]] = ("H", "C")

    def __init__(self, inertia=(2.0, 1.0, 2.0 / 3.0)):
        object.__setattr__(self, "inertia", jnp.asarray(positive_vector("inertia", inertia, 3)))

    def __repr__(self) -> str:
        return f"EulerTop(inertia={tuple(float(v) for v in np.asarray(self.inertia))})"

    # -- structure ---------------------------------------------------------------------
    @property
    def coefficients(self) -> Float[Array, 3]:
        """(a1, a2, a3) with a1 = (I2−I3)/(I2 I3) and cyclically."""
        I1, I2, I3 = self.inertia[0], self.inertia[1], self.inertia[2]
        return jnp.stack([(I2 - I3) / (I2 * I3), (I3 - I1) / (I3 * I1), (I1 - I2) / (I1 * I2)])

    def vector_field(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
        a = self.coefficients
        m1, m2, m3 = m[..., 0], m[..., 1], m[..., 2]
        return jnp.stack([a[0] * m2 * m3, a[1] * m3 * m1, a[2] * m1 * m2], axis=-1)

    def hamiltonian(self, m: Float[Array, "... 3"]) -> Float[Array, ...]:
        return 0.5 * jnp.sum(m * m / self.inertia, axis=-1)

    def casimirs(self, m: Float[Array, "... 3"]) -> dict[str, Float[Array, ...]]:
        return {"C": 0.5 * jnp.sum(m * m, axis=-1)}

    def invariants(self, m: Float[Array, "... 3"]) -> dict[str, Float[Array, ...]]:
        return {"H": self.hamiltonian(m), **self.casimirs(m)}

    def poisson_tensor(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3 3"]:
        return hat(m)

    def coordinates(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
        return m

    def from_coordinates(self, z: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
        return z

    def quadratic_form(self):
        """(Q, B, c) of ṁ = Q(m, m): Q_1,23 = Q_1,32 = a1/2 and cyclically; B = 0, c = 0.
        Kahan's generic quadratic-field step on these equals the closed-form step."""
        a = self.coefficients
        Q = jnp.zeros((3, 3, 3), dtype=a.dtype)
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            Q = Q.at[i, j, k].set(0.5 * a[i]).at[i, k, j].set(0.5 * a[i])
        return Q, jnp.zeros((3, 3), dtype=a.dtype), jnp.zeros(3, dtype=a.dtype)

    # -- Kahan's modified integrals (MATH.md §2) ----------------------------------------
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

    # -- metadata and validation --------------------------------------------------------
    def parameters(self) -> dict:
        return {"inertia": [float(v) for v in np.asarray(self.inertia)]}

    def validate_state(self, x, name: str = "x0") -> tuple[np.ndarray, bool]:
        return validate_vector_state(name, x, 3)
