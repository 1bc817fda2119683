r"""User Hamiltonians on the Lie–Poisson spaces so(3)* and e(3)* (as ``Hamiltonian`` is
for canonical ones).

``LiePoissonHamiltonian(H, "so3")``: state m ∈ R³ ≅ so(3)*, ṁ = m × ∇H(m) (the Euler
top's convention: Π(m) = hat(m)), Casimir C = ½|m|².
``LiePoissonHamiltonian(H, "e3")``: state (m, γ) ∈ e(3)*, ṁ = m × ∇_mH + γ × ∇_γH,
γ̇ = γ × ∇_mH (the heavy top's: H = ½m·I⁻¹m + χ·γ gives ṁ = m × ω + γ × χ); Poisson
tensor [[hat(m), hat(γ)], [hat(γ), 0]]; Casimirs C1 = ½|γ|² and C2 = m·γ.

H is any jax-traceable scalar function of one sample (``H(m)`` or ``H(m, γ)``; with
``params``, a pytree of arrays that are leaves of the system, ``H(..., params)``).
``degree``: H is a polynomial of this degree (the average vector field then
integrates it exactly).  Every map that needs only a vector field, a Hamiltonian and a
Poisson tensor serves it: the energy–Casimir map (``AverageVectorField``), midpoint,
Gauss, RK4.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint.errors import InputError
from mechint.lie import hat
from mechint.systems.base import PoissonSystem, state_pair, validate_vector_state
from mechint.systems.canonical import _degree, _parameters

ALGEBRAS = ("so3", "e3")


def _cross(a, b):
    return jnp.cross(a, b)


def e3_tensor(m: Float[Array, "... 3"], g: Float[Array, "... 3"]) -> Float[Array, "... 6 6"]:
    """The Lie–Poisson tensor of e(3)* in z = (m, γ): [[hat(m), hat(γ)], [hat(γ), 0]]."""
    top = jnp.concatenate([hat(m), hat(g)], axis=-1)
    bottom = jnp.concatenate([hat(g), jnp.zeros_like(hat(g))], axis=-1)
    return jnp.concatenate([top, bottom], axis=-2)


@final
@register_pytree(data=("params",), meta=("H", "algebra", "energy_degree", "state_fields"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class LiePoissonHamiltonian(PoissonSystem):
    """A Hamiltonian ``H`` on so(3)* (state m) or e(3)* (state (m, γ))."""

    descriptions: ClassVar[dict[str, str]] = {
        "x": "state",
        "C": "Casimir ½|m|²",
        "C1": "Casimir ½|γ|²",
        "C2": "Casimir m·γ",
    }

    H: Callable
    algebra: str
    params: object = None

    name: ClassVar[str] = "lie-poisson-hamiltonian"
    linear_structure: ClassVar[bool] = True

    def __init__(self, H, algebra: str = "so3", params=None, degree: int | None = None):
        if algebra not in ALGEBRAS:
            raise InputError("algebra", f"must be 'so3' or 'e3', got {algebra!r}")
        if not callable(H):
            raise InputError("H", f"must be a function, got {type(H).__name__}")
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "algebra", algebra)
        fields = (
            (("m", ("axis",)),) if algebra == "so3" else (("m", ("axis",)), ("gamma", ("axis",)))
        )
        object.__setattr__(self, "state_fields", fields)
        object.__setattr__(self, "params", _parameters(params))
        object.__setattr__(self, "energy_degree", _degree(degree))
        try:
            value = self.hamiltonian(self.example_state())
        except Exception as exc:  # the user's function, called once on a sample state
            raise InputError("H", f"failed on a sample state: {exc}") from None
        if jnp.shape(value) != ():
            raise InputError("H", f"must return a scalar, returned shape {jnp.shape(value)}")

    def __repr__(self) -> str:
        return f"LiePoissonHamiltonian(H={getattr(self.H, '__name__', self.H)!s}, {self.algebra})"

    # -- structure -------------------------------------------------------------------------
    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("C",) if self.algebra == "so3" else ("C1", "C2")

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (3,)

    def _energy(self, *args):
        return self.H(*args) if self.params is None else self.H(*args, self.params)

    def hamiltonian(self, x) -> Float[Array, ...]:
        if self.algebra == "so3":
            return jnp.vectorize(self._energy, signature="(d)->()")(x)
        return jnp.vectorize(self._energy, signature="(d),(d)->()")(*x)

    def vector_field(self, x):
        if self.algebra == "so3":
            grad = jnp.vectorize(jax.grad(self._energy), signature="(d)->(d)")(x)
            return _cross(x, grad)
        m, g = x
        dm, dg = jnp.vectorize(jax.grad(self._energy, argnums=(0, 1)),
                               signature="(d),(d)->(d),(d)")(m, g)  # fmt: skip
        return _cross(m, dm) + _cross(g, dg), _cross(g, dm)

    def casimirs(self, x) -> dict:
        if self.algebra == "so3":
            return {"C": 0.5 * jnp.sum(x * x, axis=-1)}
        m, g = x
        return {"C1": 0.5 * jnp.sum(g * g, axis=-1), "C2": jnp.sum(m * g, axis=-1)}

    def invariants(self, x) -> dict:
        return {"H": self.hamiltonian(x), **self.casimirs(x)}

    def coordinates(self, x) -> Float[Array, "... d"]:
        return x if self.algebra == "so3" else jnp.concatenate(x, axis=-1)

    def from_coordinates(self, z):
        return z if self.algebra == "so3" else (z[..., :3], z[..., 3:])

    def poisson_tensor(self, x) -> Float[Array, "... d d"]:
        if self.algebra == "so3":
            return hat(x)
        return e3_tensor(*x)

    # -- metadata and validation ---------------------------------------------------------
    def parameters(self) -> dict:
        return {"H": getattr(self.H, "__name__", repr(self.H)), "algebra": self.algebra}

    def validate_state(self, x, name: str = "x0"):
        def vector(label, value):
            return validate_vector_state(label, value, 3)

        if self.algebra == "so3":
            return vector(name, x)
        return state_pair(name, x, ("m", vector), ("gamma", vector))

    def example_state(self):
        m = np.array([0.45, -0.3, 0.89])
        return m if self.algebra == "so3" else (m, np.array([0.3, 0.5, -0.8]))
