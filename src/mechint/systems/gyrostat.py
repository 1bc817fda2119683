r"""The Zhukovsky–Volterra gyrostat on so(3)*: a rigid body carrying a rotor of fixed
angular momentum β (in the body frame), state m ∈ R³.

    ṁ = m × (ω + β),   ω = I⁻¹m,   H = ½ m·I⁻¹m + β·m,   C = ½|m|²

in the Euler top's convention (Π(m) = hat(m), ṁ = Π∇H); β = 0 is the Euler top.  H is
quadratic and Π linear, so the field is quadratic: Kahan's map serves it (its generic
step, one 3 × 3 solve), midpoint keeps H and C, and its integrability under Kahan's map
(Petrera and Suris) is what ``diagnostics.find_integrals`` finds.

With β = b e_c along one axis and (i, j, c) cyclic, a_i = (I_j − I_c)/(I_j I_c) and
cyclically, ε = h/2, Kahan's map keeps exactly (``kahan_integrals``)

    K_i = (a_i a_c m_i² − (a_i m_c + b)²) / (1 − ε² a_i a_c m_j²),
    K_j = (a_j a_c m_j² − (a_j m_c − b)²) / (1 − ε² a_j a_c m_i²),

found by a search over ratios of quadratics in (m_i², m_j², m_c², m_c, 1) (a null space
of dimension 2 of the Plücker coordinates of numerator ∧ denominator along (m, m')),
proved with sympy (I(m') − I(m) simplifies to 0) and kept to 2e-14 over 2·10⁴ random
steps; their numerators are the continuous flow's integrals, their denominators the
Euler top's d_j and d_i, and b = 0 gives the Euler top's −a_i K_j, −a_j K_i.

With two non-zero components, β_k = 0 and (i, j, k) cyclic, Kahan's map keeps one
integral (``kahan_integrals``),

    K_k = (a_i (a_j m_i + β_i)² − a_j (a_i m_j − β_j)²) / (1 − ε² a_i a_j m_k²),

whose numerator is a_i a_j (2H − 2C/I_k) plus a constant (the flow's) and denominator
the Euler top's d_k; β_j = 0 gives −a_i K_j of the one-axis case and β_i = 0 gives
a_j K_i.  Found by the same search (numerator ∧ denominator of degree ≤ 2), proved with
sympy (N(m')D(m) − N(m)D(m') expands to 0 for symbolic moments, β_i, β_j and ε), kept
to 8e-13 relative over 10⁴ steps from random states at h up to 0.5.  There is no
second one: the same search in degrees 3 and 4 finds only K_k's own multiples (null
spaces of dimension 10 and 55, the count K_k alone gives, gaps 1e-16 against 2e-6 and
2e-8 at h = 0.5), and the degree of the n-th iterate on a line grows as (1 + √2)ⁿ
(3, 9, 23, 57, 139, ...: d_{n+1} = 2d_n + d_{n−1} + 2, computed exactly over a prime
field), against the quadratic growth (3, 9, 19, 33, ...) of the one-axis case: positive
algebraic entropy, the mark of a map that is not integrable (Bellon–Viallet; a strong
indication, not a proof).  With three non-zero components nothing is kept in degree
≤ 4 and the degrees grow as 3ⁿ.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint._validate import positive_vector, real_array, shown
from mechint.systems.base import Parameter
from mechint.systems.euler_top import AngularMomentum


@final
@register_pytree(data=("inertia", "beta"), meta=("kahan_axis", "kahan_zero"))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class ZhukovskyVolterra(AngularMomentum):
    """The gyrostat: principal moments ``inertia`` (> 0), gyrostatic momentum ``beta``."""

    inertia: Float[Array, " 3"]
    beta: Float[Array, " 3"]
    # the axis β lies along (2 for β = 0), where Kahan's two integrals are known; else
    # None; and the one component of β that is zero where only that one is (one integral)
    kahan_axis: int | None = None
    kahan_zero: int | None = None

    name: ClassVar[str] = "zhukovsky-volterra"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("inertia", "principal moments I1,I2,I3", required=True, example="2,1,0.6667"),
        Parameter("beta", "the rotor's angular momentum β1,β2,β3 (body frame)", required=True,
                  example="0.1,0.2,0.3"),
    )  # fmt: skip

    def __init__(self, inertia=(2.0, 1.0, 2.0 / 3.0), beta=(0.1, 0.2, 0.3)):
        object.__setattr__(self, "inertia", jnp.asarray(positive_vector("inertia", inertia, 3)))
        beta = real_array("beta", beta, (3,))
        object.__setattr__(self, "beta", jnp.asarray(beta))
        along = np.flatnonzero(beta)
        axis = 2 if along.size == 0 else int(along[0]) if along.size == 1 else None
        object.__setattr__(self, "kahan_axis", axis)
        zero = int(np.flatnonzero(beta == 0)[0]) if along.size == 2 else None
        object.__setattr__(self, "kahan_zero", zero)

    def __repr__(self) -> str:
        return f"ZhukovskyVolterra(inertia={shown(self.inertia)}, beta={shown(self.beta)})"

    def vector_field(self, m):
        return jnp.cross(m, m / self.inertia + self.beta)

    def hamiltonian(self, m) -> Float[Array, ...]:
        return 0.5 * jnp.sum(m * m / self.inertia, axis=-1) + jnp.sum(self.beta * m, axis=-1)

    def parameters(self) -> dict:
        return {
            "inertia": np.asarray(self.inertia).tolist(),
            "beta": np.asarray(self.beta).tolist(),
        }

    def kahan_integrals(self, m, h) -> dict:
        """Kahan's two integrals with β along one axis (the module docstring), keyed by
        the index they carry (K_i, K_j); its one integral K_k where β_k alone is zero;
        {} where all three components are non-zero (the map is then not integrable)."""
        if self.kahan_zero is not None:
            k = self.kahan_zero
            i, j = (k + 1) % 3, (k + 2) % 3
            a, beta, eps2 = self.coefficients, self.beta, (0.5 * h) ** 2
            mi_, mj, mk = m[..., i], m[..., j], m[..., k]
            num = a[i] * (a[j] * mi_ + beta[i]) ** 2 - a[j] * (a[i] * mj - beta[j]) ** 2
            return {f"K{k + 1}": num / (1 - eps2 * a[i] * a[j] * mk * mk)}
        if self.kahan_axis is None:
            return {}
        c = self.kahan_axis
        i, j = (c + 1) % 3, (c + 2) % 3
        a, b, eps2 = self.coefficients, self.beta[c], (0.5 * h) ** 2
        mi_, mj, mc = m[..., i], m[..., j], m[..., c]
        Ki = (a[i] * a[c] * mi_ * mi_ - (a[i] * mc + b) ** 2) / (1 - eps2 * a[i] * a[c] * mj * mj)
        Kj = (a[j] * a[c] * mj * mj - (a[j] * mc - b) ** 2) / (1 - eps2 * a[j] * a[c] * mi_ * mi_)
        return {f"K{i + 1}": Ki, f"K{j + 1}": Kj}
