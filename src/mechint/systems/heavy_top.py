r"""The heavy top on e(3)* = (so(3) ⋉ R³)*, body frame, state (m, γ) (docs/math.md §6).

    ṁ = m × ω + γ × χ,   γ̇ = γ × ω,   ω = I⁻¹m,   H = ½ m·ω + χ·γ

(χ = weight × the centre of mass in the body, γ = the vertical seen from the body,
γ = gᵀe_z for the attitude g).  Poisson tensor in z = (m, γ): [[hat(m), hat(γ)],
[hat(γ), 0]] (ż = Π∇H gives the equations above; ``lie_poisson.e3_tensor``); Casimirs
|γ|² ('gamma2') and m·γ ('mgamma').  H is quadratic and so are the equations, so the
heavy top is a ``QuadraticVectorField`` (Kahan's map) and midpoint keeps H and both
Casimirs.

Three systems share the machinery (``AbstractHeavyTop``), each with its CLI name:

- ``HeavyTop(inertia, chi)``: any top; χ = 0 is the Euler top on m.
- ``LagrangeTop(inertia, chi)``: I1 = I2 and χ = (0, 0, ℓ) on the symmetry axis; the
  third integral is m3 (linear: ṁ3 = (I1 − I2)ω1ω2 + (γ × χ)3 = 0 identically).
- ``KovalevskayaTop(inertia, chi)``: I1 = I2 = 2 I3 and χ = (χ1, χ2, 0) in the
  equatorial plane; the third integral is Kovalevskaya's quartic
  K = |(ω1 + iω2)² − (χ1 + iχ2)(γ1 + iγ2)/I3|².  Derived in this convention: with
  z = ω1 + iω2 and w = γ1 + iγ2 the equations give ż = −(i/2)ω3 z + i(χ1 + iχ2)γ3/(2 I3)
  and ẇ = −iω3 w + iγ3 z, so ξ = z² − (χ1 + iχ2) w / I3 obeys ξ̇ = −iω3 ξ and |ξ|² is
  constant (checked against DOP853 in the tests).

The exact flows of the natural split H = T + χ·γ (``natural_split``): the kick
``GravityKick`` (m ← m + t γ × χ, γ fixed) and the free body applied to m and γ alike
(``AxisRotation``, the three principal rotations; for a body with two equal moments
I_a = I_b the exact free flow ``SymmetricFreeFlow``, which keeps m_c: the Lagrange top's
m3).  Every one of them is a Poisson map that keeps both Casimirs exactly.
"""

from __future__ import annotations

import abc
import dataclasses
import warnings
from typing import Any, ClassVar, final

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint import maps
from mechint._pytree import register_pytree
from mechint._validate import positive_vector, real_array, shown, traced
from mechint.errors import InputError, SpecialCaseWarning
from mechint.lie import hat, so3
from mechint.systems import rigid
from mechint.systems.base import (
    GravityTop,
    NaturalSplit,
    Parameter,
    PrincipalRotations,
    QuadraticVectorField,
    StateOption,
    required,
    state_pair,
    validate_vector_state,
)
from mechint.systems.euler_top import EulerTop
from mechint.systems.flows import AxisRotation, GravityKick, SymmetricFreeFlow
from mechint.systems.lie_poisson import e3_tensor

# Relative difference of moments (or size of χ's off-axis part) accepted as round-off
# when a named case's condition is checked; the rounding is then removed.
_CASE_RTOL = 1e-12

# Levi-Civita symbol ε_ijk.
_EPS = np.zeros((3, 3, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _EPS[_i, _j, _k], _EPS[_i, _k, _j] = 1.0, -1.0


def _cross(a, b):
    return jnp.cross(a, b)


class AbstractHeavyTop(
    rigid.Body, QuadraticVectorField, NaturalSplit, PrincipalRotations, GravityTop
):
    """What the heavy top and its integrable cases share (see the module docstring).

    As a ``rigid.Body`` (n = 3, M = hat(m)) it is served by the discrete Lagrangian map,
    with J = ½ tr(I) − I (so I1 = J2 + J3, as for ``FreeRigidBody``) and the potential
    as half kicks on both sides of each Moser–Veselov step (``body_kick``).
    """

    descriptions: ClassVar[dict[str, str]] = {
        "m": "body angular momentum",
        "gamma": "vertical in the body frame, γ = gᵀe_z",
        "gamma2": "Casimir |γ|²",
        "mgamma": "Casimir m·γ",
    }

    inertia: Float[Array, " 3"]
    chi: Float[Array, " 3"]

    @property
    def n(self) -> int:
        return 3  # the attitude lies in SO(3)

    energy_degree: ClassVar[int | None] = 2  # ½ m·I⁻¹m + χ·γ
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("inertia", "principal moments I1,I2,I3", required=True, example="2,1.5,1"),
        Parameter("chi", "χ1,χ2,χ3: weight × centre of mass in the body frame", required=True,
                  example="0,0.5,1"),
    )  # fmt: skip
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("m0", "initial body angular momentum m: 3 numbers"),
        StateOption("gamma0", "initial vertical in the body frame γ = g0ᵀe_z: 3 numbers"),
    )
    state_fields = (("m", ("axis",)), ("gamma", ("axis",)))

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (3,)

    defaults: ClassVar[tuple[tuple[float, ...], tuple[float, ...]]] = (
        (2.0, 1.5, 1.0),
        (0.0, 0.5, 1.0),
    )

    def __init__(self, inertia=None, chi=None):
        inertia = positive_vector("inertia", self.defaults[0] if inertia is None else inertia, 3)
        chi = self.defaults[1] if chi is None else chi
        chi = real_array("chi", chi, (3,))
        inertia, chi = self._case(inertia, chi)
        object.__setattr__(self, "inertia", jnp.asarray(inertia))
        object.__setattr__(self, "chi", jnp.asarray(chi))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(inertia={shown(self.inertia)}, chi={shown(self.chi)})"

    @abc.abstractmethod
    def _case(self, inertia, chi) -> tuple[Any, Any]:
        """The validated (inertia, chi) of this case (InputError naming the parameter)."""

    @abc.abstractmethod
    def extra_integrals(self, x) -> dict[str, Float[Array, ...]]:
        """The case's own first integrals beyond H and the Casimirs."""

    linear_integrals: ClassVar[tuple[str, ...]] = ()  # extra integrals linear in x

    # -- structure -------------------------------------------------------------------------
    @property
    def J(self) -> Float[Array, " 3"]:  # type: ignore[override]  # Body's leaf J, derived here
        """The Moser–Veselov mass matrix J = ½ tr(I) − I (J_i > 0 iff the moments obey
        the strict triangle inequality)."""
        return 0.5 * jnp.sum(self.inertia) - self.inertia

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("H", "gamma2", "mgamma", *self.linear_integrals)

    def vector_field(self, x):
        m, g = x
        w = m / self.inertia
        return _cross(m, w) + _cross(g, self.chi), _cross(g, w)

    def hamiltonian(self, x) -> Float[Array, ...]:
        m, g = x
        return 0.5 * jnp.sum(m * m / self.inertia, axis=-1) + jnp.sum(self.chi * g, axis=-1)

    def casimirs(self, x) -> dict[str, Float[Array, ...]]:
        m, g = x
        return {"gamma2": jnp.sum(g * g, axis=-1), "mgamma": jnp.sum(m * g, axis=-1)}

    def invariants(self, x) -> dict[str, Float[Array, ...]]:
        return {"H": self.hamiltonian(x), **self.casimirs(x), **self.extra_integrals(x)}

    def split_invariants(self, x) -> dict[str, Float[Array, ...]]:
        """What every exact piece of the natural split keeps, and so every map built
        from them (splittings, compositions, the discrete Lagrangian map): the Casimirs
        and the linear extra integral (the Lagrange top's m3)."""
        values = self.invariants(x)
        return {k: values[k] for k in ("gamma2", "mgamma", *self.linear_integrals)}

    def coordinates(self, x) -> Float[Array, "... 6"]:
        return jnp.concatenate(x, axis=-1)

    def from_coordinates(self, z):
        return z[..., :3], z[..., 3:]

    def poisson_tensor(self, x) -> Float[Array, "... 6 6"]:
        return e3_tensor(*x)

    # -- Kahan (the equations are quadratic) ---------------------------------------------
    def quadratic_form(self):
        """(Q, B, c) in z = (m, γ): (m × ω)_i = ε_ijk m_j m_k/I_k and
        (γ × ω)_i = ε_ijk γ_j m_k/I_k (polarized), (γ × χ)_i = ε_ijk χ_k γ_j (B), c = 0."""
        inv = 1.0 / self.inertia
        eps = jnp.asarray(_EPS, dtype=inv.dtype)
        Q = jnp.zeros((6, 6, 6), dtype=inv.dtype)
        mm = 0.5 * eps * inv[None, None, :]
        Q = Q.at[:3, :3, :3].set(mm + jnp.swapaxes(mm, 1, 2))
        gm = 0.5 * eps * inv[None, None, :]  # γ_j m_k
        Q = Q.at[3:, 3:, :3].set(gm).at[3:, :3, 3:].set(jnp.swapaxes(gm, 1, 2))
        B = (
            jnp.zeros((6, 6), dtype=inv.dtype)
            .at[:3, 3:]
            .set(jnp.einsum("ijk,k->ij", eps, self.chi))
        )
        return Q, B, jnp.zeros(6, dtype=inv.dtype)

    def to_field(self, x) -> Any:
        return self.coordinates(x)

    def from_field(self, z) -> Any:
        return self.from_coordinates(z)

    def kahan_integrals(self, x, h) -> dict[str, Any]:
        """Kahan's map keeps every linear integral (the Lagrange top's m3) exactly; no
        modified H or Casimir is known for it on e(3)* (measured in the tests)."""
        values = self.extra_integrals(x)
        return {k: values[k] for k in self.linear_integrals}

    # -- the natural split and the discrete Lagrangian map -------------------------------
    # The axis of a symmetric case (I1 = I2 by construction: e3), None for any top.  A
    # fact of the class, not of the numbers: the numbers are traced inside a compiled run.
    symmetry_axis: ClassVar[int | None] = None

    def natural_split(self) -> tuple[maps.Integrator, ...]:
        """The kick χ·γ first, then the free body: its exact flow for a symmetric case,
        the three principal rotations otherwise."""
        if self.symmetry_axis is not None:
            return (GravityKick(), SymmetricFreeFlow())
        return (GravityKick(), AxisRotation(0), AxisRotation(1), AxisRotation(2))

    def body_vectors(self, x) -> tuple[Any, ...]:
        return tuple(x)

    def from_body_vectors(self, x, vectors: tuple[Any, ...]) -> Any:
        return tuple(vectors)

    def body_split(self, x):
        return hat(x[0]), None

    def body_advance(self, x, M_next, W):
        """(Wᵀm, Wᵀγ): mathematically m_{k+1} = vee(M_next), but applied as one rotation
        (a quaternion of Wᵀ, ``so3.rotate``) to m and γ alike, the Casimirs |γ|² and m·γ
        are kept to round-off that does not add up (Wᵀ as a matrix moves them by a bias
        of 0.1 ulp a step: 3e-12 after 10⁵ steps)."""
        q = so3.quaternion(jnp.swapaxes(W, -1, -2))
        return so3.rotate(q, x[0]), so3.rotate(q, x[1])

    def body_kick(self, x, t):
        return GravityKick.advance(self, x, t)

    def as_euler_top(self) -> EulerTop:
        """The Euler top with these moments: the m part of the heavy top when χ = 0."""
        return EulerTop(self.inertia)

    # -- facts ---------------------------------------------------------------------------
    def parameters(self) -> dict:
        return {
            "inertia": [float(v) for v in np.asarray(self.inertia)],
            "chi": [float(v) for v in np.asarray(self.chi)],
        }

    def example_state(self):
        return np.array([0.45, -0.3, 0.89]), np.array([0.3, 0.5, -0.8]) / np.sqrt(0.98)

    def state_from_options(self, given: dict, frame=None):
        m0 = required(given, "m0", self.name, "give 3 numbers, e.g. 0.45,-0.3,0.89")
        if given.get("gamma0") is None and frame is not None:
            gamma0 = np.asarray(frame, dtype=float)[2]  # gᵀe_z: the third row of g
        else:
            gamma0 = required(
                given, "gamma0", self.name, "give 3 numbers (e.g. 0,0,1), or --orientation"
            )
        return rigid.validate_pair(self, (m0, gamma0), "gamma0")

    def validate_state(self, x, name: str = "x0") -> tuple[tuple, bool]:
        def vector(label, value):
            return validate_vector_state(label, value, 3)

        return state_pair(name, x, ("m", vector), ("gamma", vector))


def _special_case(inertia, chi) -> str:
    """What the numbers are, when they are the Lagrange or the Kovalevskaya case (about
    any axis, within ``_CASE_RTOL``), with the system that keeps its third integral; ''
    otherwise."""
    tol, scale = _CASE_RTOL * float(np.max(inertia)), float(np.max(np.abs(chi)))
    if scale == 0:  # the Euler top
        return ""
    for c in range(3):
        a, b = (c + 1) % 3, (c + 2) % 3
        relabel = "" if c == 2 else f" (relabel the axes so that axis {c + 1} is the third)"
        if abs(inertia[a] - inertia[b]) > tol:
            continue
        if max(abs(chi[a]), abs(chi[b])) <= _CASE_RTOL * scale:
            return ("the Lagrange case (two equal moments, the centre of mass on the third "
                    "axis): mi.systems.LagrangeTop (lagrange-top) keeps m3 exactly in its "
                    f"natural split and reports it{relabel}")  # fmt: skip
        if abs(inertia[a] - 2 * inertia[c]) <= tol and abs(chi[c]) <= _CASE_RTOL * scale:
            return ("the Kovalevskaya case (I1 = I2 = 2 I3, the centre of mass in the "
                    "equatorial plane): mi.systems.KovalevskayaTop (kovalevskaya-top) reports "
                    f"Kovalevskaya's integral{relabel}")  # fmt: skip
    return ""


@final
@register_pytree(data=("inertia", "chi"))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class HeavyTop(AbstractHeavyTop):
    """Any heavy top: principal moments ``inertia`` (> 0), ``chi`` any 3-vector."""

    inertia: Float[Array, " 3"]
    chi: Float[Array, " 3"]

    name: ClassVar[str] = "heavy-top"

    def _case(self, inertia, chi):
        if not (traced(inertia) or traced(chi)):
            special = _special_case(np.asarray(inertia, float), np.asarray(chi, float))
            if special:
                warnings.warn(f"HeavyTop(inertia={shown(inertia)}, chi={shown(chi)}) is "
                              f"{special}; HeavyTop treats it as any top (its third integral "
                              "drifts by O(h^p))", SpecialCaseWarning, stacklevel=3)  # fmt: skip
        return inertia, chi

    def extra_integrals(self, x) -> dict[str, Float[Array, ...]]:
        return {}


@final
@register_pytree(data=("inertia", "chi"))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class LagrangeTop(AbstractHeavyTop):
    """The Lagrange top: I1 = I2 and χ = (0, 0, ℓ); its third integral is m3."""

    descriptions: ClassVar[dict[str, str]] = {"m3": "momentum about the symmetry axis m3"}

    inertia: Float[Array, " 3"]
    chi: Float[Array, " 3"]

    name: ClassVar[str] = "lagrange-top"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("inertia", "I1,I2,I3 with I1 = I2 (symmetric about e3)", required=True,
                  example="1,1,0.5"),
        Parameter("chi", "0,0,ℓ: the centre of mass on the symmetry axis", required=True,
                  example="0,0,1"),
    )  # fmt: skip
    linear_integrals: ClassVar[tuple[str, ...]] = ("m3",)
    symmetry_axis: ClassVar[int | None] = 2
    defaults = ((1.0, 1.0, 0.5), (0.0, 0.0, 1.0))

    def _case(self, inertia, chi):
        if traced(inertia) or traced(chi):
            return inertia, chi
        if abs(float(inertia[0] - inertia[1])) > _CASE_RTOL * float(np.max(inertia)):
            raise InputError(
                "inertia",
                f"the Lagrange top needs I1 = I2, got {tuple(inertia.tolist())}",
                "e.g. 1,1,0.5",
            )
        scale = float(np.max(np.abs(chi)))
        if scale == 0 or float(np.max(np.abs(chi[:2]))) > _CASE_RTOL * scale:
            raise InputError(
                "chi", f"must be (0, 0, ℓ) with ℓ ≠ 0, got {tuple(chi.tolist())}", "e.g. 0,0,1"
            )
        I1 = 0.5 * (inertia[0] + inertia[1])
        return np.array([I1, I1, inertia[2]]), np.array([0.0, 0.0, chi[2]])

    def extra_integrals(self, x) -> dict[str, Float[Array, ...]]:
        return {"m3": x[0][..., 2]}


@final
@register_pytree(data=("inertia", "chi"))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class KovalevskayaTop(AbstractHeavyTop):
    """The Kovalevskaya top: I1 = I2 = 2 I3 and χ = (χ1, χ2, 0); its third integral is
    K = |(ω1 + iω2)² − (χ1 + iχ2)(γ1 + iγ2)/I3|²."""

    descriptions: ClassVar[dict[str, str]] = {
        "K": "Kovalevskaya's integral |(m1 + i m2)² − (γ1 + i γ2)|²"
    }

    inertia: Float[Array, " 3"]
    chi: Float[Array, " 3"]

    name: ClassVar[str] = "kovalevskaya-top"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("inertia", "I1,I2,I3 with I1 = I2 = 2 I3", required=True, example="2,2,1"),
        Parameter("chi", "χ1,χ2,0: the centre of mass in the equatorial plane", required=True,
                  example="1,0,0"),
    )  # fmt: skip
    defaults = ((2.0, 2.0, 1.0), (1.0, 0.0, 0.0))
    symmetry_axis: ClassVar[int | None] = 2

    def _case(self, inertia, chi):
        if traced(inertia) or traced(chi):
            return inertia, chi
        if float(np.ptp([inertia[0], inertia[1], 2.0 * inertia[2]])) > _CASE_RTOL * float(
            np.max(inertia)
        ):
            raise InputError(
                "inertia",
                f"the Kovalevskaya top needs I1 = I2 = 2 I3, got {tuple(inertia.tolist())}",
                "e.g. 2,2,1",
            )
        scale = float(np.max(np.abs(chi)))
        if scale == 0 or abs(float(chi[2])) > _CASE_RTOL * scale:
            raise InputError(
                "chi", f"must be (χ1, χ2, 0) and not zero, got {tuple(chi.tolist())}", "e.g. 1,0,0"
            )
        I3 = (inertia[0] + inertia[1] + 2.0 * inertia[2]) / 6.0
        return np.array([2.0 * I3, 2.0 * I3, I3]), np.array([chi[0], chi[1], 0.0])

    def extra_integrals(self, x) -> dict[str, Float[Array, ...]]:
        m, g = x
        w = m / self.inertia
        I3, c1, c2 = self.inertia[2], self.chi[0], self.chi[1]
        re = w[..., 0] ** 2 - w[..., 1] ** 2 - (c1 * g[..., 0] - c2 * g[..., 1]) / I3
        im = 2.0 * w[..., 0] * w[..., 1] - (c1 * g[..., 1] + c2 * g[..., 0]) / I3
        return {"K": re * re + im * im}
