"""A rigid body in a quadratic potential on (so(n) ⋉ Symm(n))* (Suris 2001, §4; docs/math.md §3)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint.errors import InputError
from mechint.lie import commutator, so_hat, so_vee, sym_dim, sym_hat, sym_vee
from mechint.solvers.linear import matmul
from mechint.systems import rigid
from mechint.systems.base import StateOption, required, state_pair


@final
@register_pytree(data=("J",))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class QuadraticPotentialTop(rigid.Body):
    r"""Rigid body about a fixed point in the potential φ(x) = ½ xᵀAx, any n >= 2.

    State (M, P): M skew (body angular momentum), P = gᵀAg symmetric.  Equations (4.4):
    Ṁ = [M, Ω] + [P, J],  Ṗ = [P, Ω],  M = JΩ + ΩJ.  Hamiltonian (4.6):
    H = ½ Σ_{j<k} M_jk²/(J_j+J_k) − ½ Σ_k J_k P_kk.  Casimirs tr P^k, k = 1..n.
    Lax matrix L(λ) = P + λM + λ²J², L̇ = [L, Ω + λJ]; its n(n−1)/2 independent spectral
    invariants are ``lax_integrals``.  Poisson tensor: the Lie-Poisson tensor of
    so(n) ⋉ Symm(n) in the coordinates (M_jk, j<k; P_jk, j≤k) (docs/math.md §3).
    """

    descriptions: ClassVar[dict[str, str]] = {"P": "potential matrix in the body frame, P = gᵀAg"}

    J: Float[Array, " n"]

    name: ClassVar[str] = "quadratic-potential-top"
    energy_degree: ClassVar[int | None] = 2  # ½⟨M, Ω⟩ − ½ Σ J_i P_ii
    state_options: ClassVar[tuple[StateOption, ...]] = (
        rigid.M0_OPTION,
        StateOption("P0", "initial symmetric P = g0ᵀAg0 (n x n), e.g. '1,0,0;0,2,0;0,0,-1'"),
        StateOption("A", "potential matrix A (space frame) instead of P0: P0 = g0ᵀ A g0"),
    )
    state_fields = (("M", ("row", "col")), ("P", ("row", "col")))

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("H", "trP1", "trP2")

    @staticmethod
    def body_potential(A, g) -> np.ndarray:
        """P = gᵀAg: the potential's matrix A (space frame) seen from the body frame g."""
        A, g = np.asarray(A, dtype=float), np.asarray(g, dtype=float)
        return np.swapaxes(g, -1, -2) @ A @ g

    # -- structure ---------------------------------------------------------------------
    def vector_field(self, x):
        M, P = x
        Omega = self.omega(M)
        return commutator(M, Omega) + self.torque(P), commutator(P, Omega)

    def torque(self, P):
        """PJ − JP: the potential's part of Ṁ (P fixed by the potential alone)."""
        return rigid.times_J(self.J, P, "right") - rigid.times_J(self.J, P, "left")

    def potential_kick(self, x, t):
        M, P = x
        return M + t * self.torque(P), P

    def hamiltonian(self, x) -> Float[Array, ...]:
        M, P = x
        return rigid.kinetic(M, self.J) - 0.5 * jnp.sum(
            self.J * jnp.diagonal(P, axis1=-2, axis2=-1), axis=-1
        )

    def casimirs(self, x) -> dict[str, Float[Array, ...]]:
        _, P = x
        out, power = {}, P
        for k in range(1, self.n + 1):
            power = P if k == 1 else power @ P
            out[f"trP{k}"] = jnp.trace(power, axis1=-2, axis2=-1)
        return out

    def lax_matrix(self, x, lam) -> Float[Array, "... n n"]:
        """L(λ) = P + λM + λ²J²."""
        M, P = x
        return P + lam * M + lam**2 * jnp.diag(self.J**2)

    def lax_integrals(self, x) -> Float[Array, "... m"]:
        """Coefficients of λ^{2j} in tr L(λ)^k, k = 2..n, j = 1..k−1 (n(n−1)/2 integrals)."""
        M, P = x
        return rigid.lax_integrals(M, P, self.J)

    def invariants(self, x) -> dict[str, Float[Array, ...]]:
        return {
            "H": self.hamiltonian(x),
            **self.casimirs(x),
            **rigid.named_lax_integrals(x[0], x[1], self.J),
        }

    # -- coordinates and Poisson tensor --------------------------------------------------
    def coordinates(self, x) -> Float[Array, "... d"]:
        """z = (M_jk, j<k; P_jk, j≤k), n² numbers."""
        M, P = x
        return jnp.concatenate([so_vee(M), sym_vee(P)], axis=-1)

    def from_coordinates(self, z):
        d = z.shape[-1] - sym_dim(self.n)
        return so_hat(z[..., :d], self.n), sym_hat(z[..., d:], self.n)

    def poisson_tensor(self, x) -> Float[Array, "... d d"]:
        M, P = x
        return rigid.semidirect_tensor(rigid.poisson_MM(M), rigid.poisson_MP(P))

    # -- the body split (discrete Lagrangian map) and facts ------------------------------
    def body_split(self, x):
        return x

    def body_advance(self, x, M_next, W):
        return M_next, matmul(matmul(W.T, x[1]), W)

    def example_state(self):
        rng = np.random.default_rng(0)
        M = self._generic_M(rng)
        B = 0.5 * rng.standard_normal((self.n, self.n))
        return M, B + B.T

    def state_from_options(self, given: dict, frame=None):
        n = self.n
        M0 = self._M0(given)
        if given.get("P0") is None and given.get("A") is not None:
            A = np.asarray(given["A"])
            if A.shape != (n, n):
                raise InputError("A", f"expected an {n}x{n} matrix, got shape {A.shape}")
            P0 = self.body_potential(A, np.eye(n) if frame is None else frame)
        else:
            P0 = required(given, "P0", self.name, "give P0 (or A)")
        return rigid.validate_pair(self, (M0, P0), "P0")

    # -- validation -----------------------------------------------------------------------
    def validate_state(self, x, name: str = "x0") -> tuple[tuple, bool]:
        n = self.n
        return state_pair(
            name,
            x,
            ("M", lambda nm, v: rigid.matrix_state(nm, v, n, "skew")),
            ("P", lambda nm, v: rigid.matrix_state(nm, v, n, "symmetric")),
        )
