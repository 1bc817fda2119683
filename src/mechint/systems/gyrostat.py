r"""The Zhukovsky–Volterra gyrostat on so(3)*: a rigid body carrying a rotor of fixed
angular momentum β (in the body frame), state m ∈ R³.

    ṁ = m × (ω + β),   ω = I⁻¹m,   H = ½ m·I⁻¹m + β·m,   C = ½|m|²

in the Euler top's convention (Π(m) = hat(m), ṁ = Π∇H); β = 0 is the Euler top.  H is
quadratic and Π linear, so the field is quadratic: Kahan's map serves it (its generic
step, one 3 × 3 solve), midpoint keeps H and C, and its integrability under Kahan's map
(Petrera and Suris) is what ``diagnostics.find_integrals`` finds.
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
@register_pytree(data=("inertia", "beta"))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class ZhukovskyVolterra(AngularMomentum):
    """The gyrostat: principal moments ``inertia`` (> 0), gyrostatic momentum ``beta``."""

    inertia: Float[Array, " 3"]
    beta: Float[Array, " 3"]

    name: ClassVar[str] = "zhukovsky-volterra"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("inertia", "principal moments I1,I2,I3", required=True, example="2,1,0.6667"),
        Parameter("beta", "the rotor's angular momentum β1,β2,β3 (body frame)", required=True,
                  example="0.1,0.2,0.3"),
    )  # fmt: skip

    def __init__(self, inertia=(2.0, 1.0, 2.0 / 3.0), beta=(0.1, 0.2, 0.3)):
        object.__setattr__(self, "inertia", jnp.asarray(positive_vector("inertia", inertia, 3)))
        object.__setattr__(self, "beta", jnp.asarray(real_array("beta", beta, (3,))))

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
