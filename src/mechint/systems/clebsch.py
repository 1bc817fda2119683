"""The Clebsch case P = ppᵀ on e(n)* = (so(n) ⋉ Rⁿ)* (Suris 2001, §6; docs/math.md §3)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint.lie import commutator, so_dim, so_hat, so_vee, vee
from mechint.systems import rigid
from mechint.systems.base import StateOption, required, state_pair


def wedge(p, q):
    """p ∧ q = pqᵀ − qpᵀ."""
    outer = p[..., :, None] * q[..., None, :]
    return outer - jnp.swapaxes(outer, -1, -2)


@final
@register_pytree(data=("J",))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class ClebschTop(rigid.Body):
    r"""The Clebsch case of the top in a quadratic potential, A = aaᵀ, any n >= 2.

    State (M, p), p = gᵀa.  Equations (6.4): Ṁ = [M, Ω] + p ∧ (Jp),  ṗ = −Ωp.
    Hamiltonian (6.5): H = ½ Σ_{j<k} M_jk²/(J_j+J_k) − ½ ⟨p, Jp⟩.  Casimirs of e(n): |p|²
    ('p2') and tr N^{2i}, i = 1..⌊(n−1)/2⌋, with N = |p|²M − (Mp) ∧ p (the part of M
    orthogonal to p; for n = 3 ``mp`` = m·p with M = hat(m) is given instead).  The
    integrals are those of L(λ) = ppᵀ + λM + λ²J² (not all independent for rank one P).
    Poisson tensor of e(n) in the coordinates (M_jk, j<k; p_c): {M_ab, p_c} = δ_ac p_b − δ_bc p_a.
    """

    descriptions: ClassVar[dict[str, str]] = {
        "p": "potential vector in the body frame, p = gᵀa",
        "p2": "Casimir |p|²",
        "mp": "Casimir m·p",
    }

    J: Float[Array, " n"]

    name: ClassVar[str] = "clebsch"
    energy_degree: ClassVar[int | None] = 2  # ½⟨M, Ω⟩ − ½ Σ J_i p_i²
    state_options: ClassVar[tuple[StateOption, ...]] = (
        rigid.M0_OPTION,
        StateOption("p0", "initial vector p = g0ᵀa (n numbers)"),
        StateOption("a", "potential vector a (space frame) instead of p0: p0 = g0ᵀ a"),
    )
    state_fields = (("M", ("row", "col")), ("p", ("axis",)))

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("H", "p2", "mp") if self.n == 3 else ("H", "p2")

    @staticmethod
    def body_vector(a, g) -> np.ndarray:
        """p = gᵀa: the space-fixed vector a seen from the body frame g."""
        a, g = np.asarray(a, dtype=float), np.asarray(g, dtype=float)
        return np.einsum("...ji,...j->...i", g, a)

    # -- structure ---------------------------------------------------------------------
    def vector_field(self, x):
        M, p = x
        Omega = self.omega(M)
        return commutator(M, Omega) + self.torque(p), -jnp.einsum("...jk,...k->...j", Omega, p)

    def torque(self, p):
        """p ∧ Jp: the potential's part of Ṁ (p fixed by the potential alone)."""
        return wedge(p, self.J * p)

    def potential_kick(self, x, t):
        M, p = x
        return M + t * self.torque(p), p

    def hamiltonian(self, x) -> Float[Array, ...]:
        M, p = x
        return rigid.kinetic(M, self.J) - 0.5 * jnp.sum(self.J * p * p, axis=-1)

    def casimirs(self, x) -> dict[str, Float[Array, ...]]:
        M, p = x
        p2 = jnp.sum(p * p, axis=-1)
        out = {"p2": p2}
        if self.n == 3:
            out["mp"] = jnp.sum(vee(M) * p, axis=-1)
            return out
        Mp = jnp.einsum("...jk,...k->...j", M, p)
        N = p2[..., None, None] * M - wedge(Mp, p)
        power = N
        for i in range(1, (self.n - 1) // 2 + 1):
            power = N @ N if i == 1 else power @ N @ N
            out[f"trN{2 * i}"] = jnp.trace(power, axis1=-2, axis2=-1)
        return out

    def kahan_integrals(self, x, h) -> dict[str, Float[Array, ...]]:
        """One of the four integrals of Kahan's map for n = 3 in closed form (ε = h/2,
        m = vee(M), a_i = 1/(J_j + J_k), ω_i = a_i m_i):

            K = Σ_i J_i (a_i m_i² − p_i²/a_i) / (1 + ε² (|ω|² − |p|²)),

        its numerator the continuous flow's quadratic integral Σ J_i (ω_i m_i − (J_j + J_k)
        p_i²), its denominator 1 + ε² times a quadratic.  Found by a search over ratios of
        quadratics in (1, m_i², p_i², m_i p_i) (the one decomposable element of the
        Plücker coordinates of numerator ∧ denominator along orbits), its coefficients
        reconstructed from exact rational steps, kept exactly by the map at 25 random
        rational (J, ε, x) and with J and ε symbolic at two rational points (sympy), and
        to 2e-14 over 10⁴ steps in float64.  The other three (deformations of H, |p|²
        and m·p: Petrera, Pfadler and Suris, 2009) are found by
        ``diagnostics.find_integrals`` but not known in closed form; {} for n ≠ 3."""
        if self.n != 3:
            return {}
        M, p = x
        m = vee(M)
        J = self.J
        a = 1.0 / (jnp.sum(J) - J)  # 1/(J_j + J_k)
        w = a * m
        numerator = jnp.sum(J * (w * m - p * p / a), axis=-1)
        eps2 = (0.5 * h) ** 2
        return {"K": numerator / (1.0 + eps2 * jnp.sum(w * w - p * p, axis=-1))}

    def potential_matrix(self, x) -> Float[Array, "... n n"]:
        """P = ppᵀ."""
        _, p = x
        return p[..., :, None] * p[..., None, :]

    def lax_matrix(self, x, lam) -> Float[Array, "... n n"]:
        """L(λ) = ppᵀ + λM + λ²J²."""
        return self.potential_matrix(x) + lam * x[0] + lam**2 * jnp.diag(self.J**2)

    def lax_integrals(self, x) -> Float[Array, "... m"]:
        return rigid.lax_integrals(x[0], self.potential_matrix(x), self.J)

    def invariants(self, x) -> dict[str, Float[Array, ...]]:
        return {
            "H": self.hamiltonian(x),
            **self.casimirs(x),
            **rigid.named_lax_integrals(x[0], self.potential_matrix(x), self.J),
        }

    # -- coordinates and Poisson tensor --------------------------------------------------
    def coordinates(self, x) -> Float[Array, "... d"]:
        """z = (M_jk, j<k; p_1..p_n)."""
        M, p = x
        return jnp.concatenate([so_vee(M), p], axis=-1)

    def from_coordinates(self, z):
        d = so_dim(self.n)
        return so_hat(z[..., :d], self.n), z[..., d:]

    def poisson_tensor(self, x) -> Float[Array, "... d d"]:
        M, p = x
        return rigid.semidirect_tensor(rigid.poisson_MM(M), rigid.poisson_Mp(p))

    # -- the body split (discrete Lagrangian map) and facts ------------------------------
    def body_split(self, x):
        return x[0], self.potential_matrix(x)

    def body_advance(self, x, M_next, W):
        return M_next, W.T @ x[1]

    def example_state(self):
        rng = np.random.default_rng(0)
        return self._generic_M(rng), rng.standard_normal(self.n)

    def state_from_options(self, given: dict, frame=None):
        n = self.n
        M0 = self._M0(given)
        if given.get("p0") is None and given.get("a") is not None:
            p0 = self.body_vector(given["a"], np.eye(n) if frame is None else frame)
        else:
            p0 = required(given, "p0", self.name, "give p0 (or a)")
        return rigid.validate_pair(self, (M0, p0), "p0")

    # -- validation -----------------------------------------------------------------------
    def validate_state(self, x, name: str = "x0") -> tuple[tuple, bool]:
        n = self.n
        return state_pair(
            name,
            x,
            ("M", lambda nm, v: rigid.matrix_state(nm, v, n, "skew")),
            ("p", lambda nm, v: rigid.vector_state(nm, v, n)),
        )
