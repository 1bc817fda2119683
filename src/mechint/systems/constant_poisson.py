r"""A Hamiltonian on R^n with a constant Poisson structure: ż = S∇H(z), S skew.

``PoissonHamiltonian(H, S)`` is to a constant, possibly degenerate, skew S what
``Hamiltonian(H, dof)`` is to the canonical 𝕁: point vortices (S = ⊕ Γ_i⁻¹ 𝕁), a charged
particle in a constant magnetic field in (x, v) coordinates, noncanonical coordinates of
any linear Poisson structure.  Every linear function c·z with Sc = 0 is a Casimir
(``C1``, ``C2``, … from an orthonormal basis of ker S, computed once from S); every
Runge–Kutta map keeps them, being linear.

The maps that serve it: the average vector field and the discrete gradients (H kept
exactly, for any skew S), midpoint and Gauss (Poisson: a constant S is 𝕁 in linear
coordinates z = A(q, p, c), and Runge–Kutta maps commute with linear changes of
coordinates), the explicit Runge–Kutta maps.  H is a jax-traceable scalar function of
one sample z of shape (n,), ``H(z)`` or, with ``params`` (a pytree of arrays that are
leaves of the system), ``H(z, params)``; ``degree``: H is a polynomial of this degree.
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
from mechint._validate import real_array
from mechint.errors import InputError
from mechint.systems.base import PoissonSystem, validate_vector_state
from mechint.systems.canonical import _degree, _parameters, _scalar_function


def _skew(S) -> np.ndarray:
    """S as a float64 skew matrix: square, finite, not zero, and skew up to a few ulp of
    its size (the rounding of a computed S), which is then removed."""
    S = real_array("S", S)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 2:
        raise InputError("S", f"must be a square matrix of size n ≥ 2, got shape {S.shape}")
    scale = float(np.max(np.abs(S)))
    if scale == 0.0:
        raise InputError("S", "is zero: the vector field S∇H would vanish everywhere")
    asymmetry = float(np.max(np.abs(S + S.T)))
    if asymmetry > 8 * np.finfo(float).eps * scale:
        raise InputError(
            "S",
            f"must be skew (S = −Sᵀ), but max |S + Sᵀ| = {asymmetry:.3g}",
            "give a skew-symmetric matrix, e.g. (A − A.T) / 2",
        )
    return 0.5 * (S - S.T)


def _kernel(S: np.ndarray) -> np.ndarray:
    """An orthonormal basis of ker S (rows), by the SVD: singular values below n ε σ_max
    count as zero."""
    _, s, vt = np.linalg.svd(S)
    rank = int(np.sum(s > S.shape[0] * np.finfo(float).eps * s[0]))
    return vt[rank:]


@final
@register_pytree(data=("S", "kernel", "params"), meta=("H", "energy_degree"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class PoissonHamiltonian(PoissonSystem):
    """ż = S∇H(z) with a constant skew matrix ``S`` (n × n) and any Hamiltonian ``H``."""

    H: Callable
    S: Float[Array, "n n"]
    kernel: Float[Array, "k n"]
    params: object = None

    name: ClassVar[str] = "poisson-hamiltonian"
    constant_structure: ClassVar[bool] = True

    def __init__(self, H, S, params=None, degree: int | None = None):
        S = _skew(S)
        params = _parameters(params)
        _scalar_function("H", H, 1, S.shape[0], params)
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "S", jnp.asarray(S))
        object.__setattr__(self, "kernel", jnp.asarray(_kernel(S)))
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "energy_degree", _degree(degree))

    def __repr__(self) -> str:
        return f"PoissonHamiltonian(H={getattr(self.H, '__name__', self.H)!s}, n={self.n})"

    @property
    def n(self) -> int:
        return int(self.S.shape[-1])

    @property
    def casimir_names(self) -> tuple[str, ...]:
        return tuple(f"C{i + 1}" for i in range(self.kernel.shape[0]))

    # -- structure -------------------------------------------------------------------------
    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return self.casimir_names  # linear, so kept by every Runge–Kutta map

    state_fields = (("z", ("coordinate",)),)

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (self.n,)

    def _energy(self, z):
        return self.H(z) if self.params is None else self.H(z, self.params)

    def hamiltonian(self, x) -> Float[Array, ...]:
        return jnp.vectorize(self._energy, signature="(d)->()")(x)

    def vector_field(self, x):
        grad = jnp.vectorize(jax.grad(self._energy), signature="(d)->(d)")(x)
        return grad @ self.S.T.astype(x.dtype)

    def casimirs(self, x) -> dict:
        values = x @ self.kernel.T.astype(x.dtype)
        return {name: values[..., i] for i, name in enumerate(self.casimir_names)}

    def invariants(self, x) -> dict:
        return {"H": self.hamiltonian(x), **self.casimirs(x)}

    def coordinates(self, x) -> Float[Array, "... n"]:
        return x

    def from_coordinates(self, z):
        return z

    def poisson_tensor(self, x) -> Float[Array, "... n n"]:
        return jnp.broadcast_to(self.S.astype(x.dtype), (*x.shape[:-1], self.n, self.n))

    # -- metadata and validation ---------------------------------------------------------
    def parameters(self) -> dict:
        return {"H": getattr(self.H, "__name__", repr(self.H)), "S": np.asarray(self.S).tolist()}

    def validate_state(self, x, name: str = "x0"):
        return validate_vector_state(name, x, self.n)

    def example_state(self):
        k = np.arange(1, self.n + 1)
        return 0.4 * np.cos(1.3 * k) + 0.1 * k / self.n
