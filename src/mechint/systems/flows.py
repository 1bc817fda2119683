"""The exact flows of systems' pieces, in one place: each an integrator (one map
protocol) that serves a capability base of ``systems.base``, never a system class, so
the systems whose ``natural_split`` returns them import this module and it imports none
of them.

- ``Drift()``, ``Kick()``: the flows of T and V for H = T(p) + V(q) (``SeparableEnergy``);
- ``AxisRotation(i)``: the flow of m_i²/(2 I_i) for a body with principal axes, turning
  m (and the heavy top's γ) rigidly (``PrincipalRotations``);
- ``GravityKick()``, ``SymmetricFreeFlow()``: a heavy top's potential χ·γ and, for two
  equal moments, its exact free flow (``GravityTop``);
- ``BodyKick()``, ``BodyDrift()``: the potential and the translational kinetic energy
  of rigid bodies in a potential (``BodiesInPotential``), whose free rotation is the
  principal rotations composed into one (``FreeRotation``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, final

import jax.numpy as jnp
from jaxtyping import Array, Float

from mechint import maps
from mechint.errors import InputError
from mechint.lie import so3
from mechint.systems.base import (
    BodiesInPotential,
    GravityTop,
    PrincipalRotations,
    SeparableEnergy,
)

__all__ = [
    "AxisRotation",
    "BodyDrift",
    "BodyKick",
    "Drift",
    "FreeRotation",
    "GravityKick",
    "Kick",
    "SymmetricFreeFlow",
    "spin",
]


class _Piece(maps.Integrator):
    """An exact flow given by ``advance(system, x, t)`` on the systems of one capability
    base (``serves``): an explicit step that fails only where the state is not finite."""

    traits = maps.EXACT_TRAITS
    serves: ClassVar[tuple[type, ...]]

    @staticmethod
    def advance(system, x, t) -> Any:
        raise NotImplementedError

    def cannot_serve(self, system) -> str | None:
        return maps.serves_only(system, self.serves)

    def step(self, system, x, h):
        y = self.advance(system, x, h)
        return y, maps.ok_status(y)


# -- the exact flows of the pieces of a separable Hamiltonian -------------------------------
class _SeparablePiece(_Piece):
    """A piece of H = T(p) + V(q): it keeps the momentum maps."""

    serves: ClassVar[tuple[type, ...]] = (SeparableEnergy,)

    def preserved(self, system, x, h) -> dict:
        return maps.kept(system, system.momentum_maps, x)


@final
@dataclasses.dataclass(frozen=True)
class Drift(_SeparablePiece):
    """Exact flow of the kinetic energy T(p) of a separable Hamiltonian: q ← q + t ∇T(p)."""

    name: ClassVar[str] = "drift"

    @staticmethod
    def advance(system, x, t) -> Any:
        q, p = x
        return q + t * system.kinetic_gradient(p), p


@final
@dataclasses.dataclass(frozen=True)
class Kick(_SeparablePiece):
    """Exact flow of the potential energy V(q) of a separable Hamiltonian: p ← p − t ∇V(q)."""

    name: ClassVar[str] = "kick"

    @staticmethod
    def advance(system, x, t) -> Any:
        q, p = x
        return q, p - t * system.potential_gradient(q)


def axis_quaternion(system: PrincipalRotations, m, i: int, t):
    """The quaternion (cos(θ/2), −sin(θ/2) a) of the flow of m_i²/(2 I_i) for time t:
    the rotation about the principal axis a = A e_i by −θ, θ = t (a·m)/I_i."""
    axes = system.principal_axes()
    a = jnp.eye(3, dtype=m.dtype)[i] if axes is None else axes[..., :, i]
    half = 0.5 * t * jnp.sum(a * m, axis=-1, keepdims=True) / system.inertia[..., i : i + 1]
    return jnp.concatenate([jnp.cos(half), -jnp.sin(half) * a], axis=-1)


def spin(v: Float[Array, "... 3"], i: int, theta) -> Float[Array, "... 3"]:
    """v rotated about e_i by −θ: with (i, j, k) cyclic, v_j ← cos θ v_j + sin θ v_k,
    v_k ← cos θ v_k − sin θ v_j; v_i is left untouched (exactly)."""
    j, k = (i + 1) % 3, (i + 2) % 3
    c, s = jnp.cos(theta), jnp.sin(theta)
    out = [v[..., i], v[..., i], v[..., i]]
    out[j], out[k] = c * v[..., j] + s * v[..., k], c * v[..., k] - s * v[..., j]
    return jnp.stack(out, axis=-1)


@final
@dataclasses.dataclass(frozen=True)
class AxisRotation(maps.Integrator):
    """Exact flow of H_i = m_i²/(2 I_i) for the Euler top (axis i = 0, 1, 2): with
    (i, j, k) cyclic and ω = m_i/I_i, ṁ_j = ω m_k, ṁ_k = −ω m_j, a rotation about e_i by
    −ωt (McLachlan 1993, Reich 1993).  It keeps m_i and |m| (the Casimir) exactly.  On
    the heavy top's (m, γ) the same rotation moves γ too (γ̇ = γ × ω), and it keeps both
    Casimirs |γ|² and m·γ."""

    axis: int

    name: ClassVar[str] = "axis-rotation"
    traits = maps.EXACT_TRAITS

    def __post_init__(self):
        if self.axis not in (0, 1, 2):
            raise InputError("axis", f"must be 0, 1 or 2, got {self.axis!r}")

    def cannot_serve(self, system) -> str | None:
        return maps.serves_only(system, (PrincipalRotations,))

    def step(self, system, x, h):
        i = self.axis
        vectors = system.body_vectors(x)  # m, and the heavy top's γ
        if system.principal_axes() is None:
            theta = h * vectors[0][..., i] / system.inertia[..., i]  # (N, 3) moments: per body
            y = system.from_body_vectors(x, tuple(spin(v, i, theta) for v in vectors))
        else:  # about the principal axis A e_i of the frame the vectors are given in
            q = axis_quaternion(system, vectors[0], i, h)
            y = system.from_body_vectors(x, tuple(so3.rotate(q, v) for v in vectors))
        return y, maps.ok_status(y)

    def preserved(self, system, x, h) -> dict:
        return dict(system.casimirs(x))


@final
@dataclasses.dataclass(frozen=True)
class FreeRotation(maps.Integrator):
    """The free body's Strang splitting into its principal rotations,
    R1(h/2) R2(h/2) R3(h) R2(h/2) R1(h/2) (McLachlan 1993; Dullweber, Leimkuhler and
    McLachlan 1997), composed into one quaternion and applied once to every body vector
    (``PrincipalRotations``, principal axes in any frame: ``principal_axes``).  One
    rounded rotation a step instead of five: the rotations' rounding, which is the same
    every step when the spin changes slowly, would otherwise move Π and RᵀR by a bias of
    ~1e-16 each (1e-11 in 10⁵ steps).  Explicit, Poisson, symmetric, of order 2; it
    keeps |m| and every Casimir."""

    name: ClassVar[str] = "free-rotation"
    traits = maps.Traits(order=2, symmetric=True, explicit=True, symplectic=True, poisson=True)

    def cannot_serve(self, system) -> str | None:
        return maps.serves_only(system, (PrincipalRotations,))

    def step(self, system, x, h):
        vectors = system.body_vectors(x)
        axes = system.principal_axes()
        m = vectors[0] if axes is None else jnp.einsum("...ji,...j->...i", axes, vectors[0])
        # in the principal frame: each rotation turns m in its plane (``spin``), and the
        # quaternion (w, u) of the product so far is multiplied by (cos, −sin e_i) in
        # components (a rotation about a coordinate axis: most products vanish)
        w = jnp.ones_like(m[..., 0])
        u = [jnp.zeros_like(w)] * 3
        for i, t in ((0, 0.5 * h), (1, 0.5 * h), (2, h), (1, 0.5 * h), (0, 0.5 * h)):
            half = 0.5 * t * m[..., i] / system.inertia[..., i]
            c, s = jnp.cos(half), jnp.sin(half)
            m = spin(m, i, 2.0 * half)
            j, k = (i + 1) % 3, (i + 2) % 3
            new = [u[0], u[1], u[2]]
            new[i], new[j], new[k] = c * u[i] - s * w, c * u[j] + s * u[k], c * u[k] - s * u[j]
            w, u = c * w + s * u[i], new
        c_axis = jnp.stack(u, axis=-1) / w[..., None]  # (1, c): c = tan(φ/2)·axis
        if axes is not None:  # the axis in the frame the vectors are given in
            c_axis = jnp.einsum("...ij,...j->...i", axes, c_axis)
        q = jnp.concatenate([jnp.ones_like(c_axis[..., :1]), c_axis], axis=-1)
        y = system.from_body_vectors(x, tuple(so3.rotate(q, v) for v in vectors))
        return y, maps.ok_status(y)

    def preserved(self, system, x, h) -> dict:
        return dict(system.casimirs(x))


# -- the exact flows of the natural split ---------------------------------------------------
@final
@dataclasses.dataclass(frozen=True)
class GravityKick(_Piece):
    """Exact flow of the potential χ·γ: m ← m + t γ × χ, γ fixed.  It keeps both
    Casimirs (γ × χ ⟂ γ) and χ·m."""

    name: ClassVar[str] = "gravity-kick"
    serves: ClassVar[tuple[type, ...]] = (GravityTop,)

    @staticmethod
    def advance(system, x, t) -> Any:
        m, g = x
        return m + t * jnp.cross(g, system.chi), g

    def preserved(self, system, x, h) -> dict:
        return system.split_invariants(x)


@final
@dataclasses.dataclass(frozen=True)
class SymmetricFreeFlow(maps.Integrator):
    r"""Exact free-body flow on e(3)* for a symmetric top (I_a = I_b, c the axis).

    T = |m|²/(2 I_a) + ½ κ m_c², κ = 1/I_c − 1/I_a, and the two pieces commute
    ({|m|², m_c} = 0).  The first moves γ only: γ̇ = γ × m/I_a, a rotation about m by
    −|m|t/I_a; the second rotates m and γ about e_c by −κ m_c t.  Both keep m_c, |m|
    and the Casimirs.  I_a is read as ½(I_a + I_b) (a derivative along the two equal
    moments is shared between them)."""

    name: ClassVar[str] = "symmetric-free-flow"
    traits = maps.EXACT_TRAITS

    def cannot_serve(self, system) -> str | None:
        why = maps.serves_only(system, (GravityTop,))
        if why is None and system.symmetry_axis is None:
            return "it is not a symmetric top (use the principal rotations)"
        return why

    def step(self, system, x, h):
        m, g = x
        c = system.symmetry_axis
        assert c is not None  # cannot_serve refused it otherwise
        Ia = 0.5 * (system.inertia[(c + 1) % 3] + system.inertia[(c + 2) % 3])
        # γ about m by −φ, φ = |m|h/I_a: the quaternion (|m| cos(φ/2), −sin(φ/2) m);
        # then m and γ about e_c by −θ, θ = κ m_c h: (cos(θ/2), −sin(θ/2) e_c).  One
        # composed quaternion moves both (R_m m = m), so both see the same rotation and
        # its rounding varies with m (a fixed rotation, as θ is along the Lagrange top,
        # would move |γ|² by the same fraction of an ulp every step)
        r2 = jnp.sum(m * m, axis=-1, keepdims=True)
        r = jnp.sqrt(jnp.where(r2 > 0, r2, 1.0))
        half = 0.5 * h * r / Ia
        q_m = jnp.concatenate([jnp.where(r2 > 0, r * jnp.cos(half), 1.0), -jnp.sin(half) * m], -1)
        half_c = 0.5 * h * (1.0 / system.inertia[c] - 1.0 / Ia) * m[..., c : c + 1]
        u_c = jnp.zeros_like(m).at[..., c].set(-jnp.sin(half_c[..., 0]))
        q = so3.compose(jnp.concatenate([jnp.cos(half_c), u_c], axis=-1), q_m)
        y = so3.rotate(q, m), so3.rotate(q, g)
        return y, maps.ok_status(y)

    def preserved(self, system, x, h) -> dict:
        return system.split_invariants(x)


# -- the exact flows of rigid bodies in a potential ----------------------------------------
class _BodyPiece(_Piece):
    """An exact flow of a piece of rigid bodies' H (``BodiesInPotential``): it keeps the
    momenta of V's symmetries and RᵀR."""

    serves: ClassVar[tuple[type, ...]] = (BodiesInPotential,)

    def preserved(self, system, x, h) -> dict:
        return system.split_invariants(x)


@final
@dataclasses.dataclass(frozen=True)
class BodyKick(_BodyPiece):
    """Exact flow of the potential V of rigid bodies: p ← p − t ∂V/∂x and Π ← Π + t M
    (the body torques; x and R fixed)."""

    name: ClassVar[str] = "body-kick"

    @staticmethod
    def advance(system, x, t) -> Any:
        return system.kick(x, t)


@final
@dataclasses.dataclass(frozen=True)
class BodyDrift(_BodyPiece):
    """Exact flow of the translational kinetic energy Σ|p|²/(2m): x ← x + t p/m."""

    name: ClassVar[str] = "body-drift"

    @staticmethod
    def advance(system, x, t) -> Any:
        return system.drift(x, t)
