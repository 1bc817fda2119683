"""The free n-dimensional rigid body on so(n)* (docs/math.md §3 with P = 0)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, final

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint.lie import commutator, so3, so_hat, so_vee
from mechint.systems import rigid
from mechint.systems.base import StateOption, validate_as
from mechint.systems.euler_top import EulerTop, FreeTop


@final
@register_pytree(data=("J",))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class FreeRigidBody(rigid.Body, FreeTop):
    r"""Free rigid body in so(n), any n >= 2: Ṁ = [M, Ω], M = JΩ + ΩJ.

    State: M, a skew n×n matrix (body angular momentum).  H = ½ Σ_{j<k} M_jk²/(J_j+J_k);
    Casimirs tr M^{2i}, i = 1..⌊n/2⌋; Manakov's integrals: the spectral invariants of
    M + λJ² (``lax_integrals``).  Poisson tensor in the coordinates M_jk, j < k:
    {M_ab, M_cd} = −(δ_bc M_ad − δ_bd M_ac − δ_ac M_bd + δ_ad M_bc).  For n = 3 it is the
    Euler top with M = hat(m) and I = (J2+J3, J1+J3, J1+J2) (see ``euler_top``).
    """

    J: Float[Array, " n"]

    name: ClassVar[str] = "free-rigid-body"
    state_options: ClassVar[tuple[StateOption, ...]] = (rigid.M0_OPTION,)
    state_fields = (("M", ("row", "col")),)

    energy_degree: ClassVar[int | None] = 2

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("H", "trM2")

    def euler_top(self):
        """The Euler top it equals for n = 3: I = (J2+J3, J1+J3, J1+J2), M = hat(m)."""
        if self.n != 3:
            raise ValueError(f"only n = 3 is an Euler top, this body has n = {self.n}")
        J1, J2, J3 = self.J[0], self.J[1], self.J[2]
        return EulerTop(jnp.stack([J2 + J3, J1 + J3, J1 + J2]))

    def as_euler_top(self) -> EulerTop | None:
        return self.euler_top() if self.n == 3 else None

    def to_momentum(self, x) -> Float[Array, "... 3"]:
        return so3.vee(x)

    def from_momentum(self, m: Float[Array, "... 3"]) -> Float[Array, "... 3 3"]:
        return so3.hat(m)

    # -- structure ---------------------------------------------------------------------
    def vector_field(self, M: Float[Any, "... n n"]) -> Float[Array, "... n n"]:
        return commutator(M, self.omega(M))

    def hamiltonian(self, M: Float[Any, "... n n"]) -> Float[Array, ...]:
        return rigid.kinetic(M, self.J)

    def casimirs(self, M: Float[Any, "... n n"]) -> dict[str, Float[Array, ...]]:
        out, power = {}, M
        for i in range(1, self.n // 2 + 1):
            power = M @ M if i == 1 else power @ M @ M
            out[f"trM{2 * i}"] = jnp.trace(power, axis1=-2, axis2=-1)
        return out

    def lax_matrix(self, M, lam) -> Float[Array, "... n n"]:
        """L(λ) = λM + λ²J² (P = 0)."""
        return lam * M + lam**2 * jnp.diag(self.J**2)

    def lax_integrals(self, M: Float[Any, "... n n"]) -> Float[Array, "... m"]:
        """Manakov's integrals: coefficients of tr (M + λJ²)^k that are not Casimirs."""
        return rigid.lax_integrals(M, None, self.J, free=True)

    def invariants(self, M) -> dict[str, Float[Array, ...]]:
        return {
            "H": self.hamiltonian(M),
            **self.casimirs(M),
            **rigid.named_lax_integrals(M, None, self.J, free=True),
        }

    # -- coordinates and Poisson tensor --------------------------------------------------
    def coordinates(self, M) -> Float[Array, "... d"]:
        """z = (M_jk, j < k)."""
        return so_vee(M)

    def from_coordinates(self, z) -> Float[Array, "... n n"]:
        return so_hat(z, self.n)

    def poisson_tensor(self, M) -> Float[Array, "... d d"]:
        """Π(z) with ż = Π(z)∇_z H, in the coordinates of ``coordinates``."""
        return rigid.poisson_MM(M)

    # -- the body split (discrete Lagrangian map) and facts ------------------------------
    def body_split(self, x):
        return x, None

    def body_advance(self, x, M_next, W):
        return M_next

    def example_state(self) -> np.ndarray:
        return self._generic_M(np.random.default_rng(0))

    def state_from_options(self, given: dict, frame=None):
        return validate_as("M0", self, self._M0(given))

    # -- validation -----------------------------------------------------------------------
    def validate_state(self, x, name: str = "x0") -> tuple[np.ndarray, bool]:
        return rigid.matrix_state(name, x, self.n, "skew")
