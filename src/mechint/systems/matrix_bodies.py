r"""Rigid bodies in matrix variables, a ``Constrained`` system: RATTLE's form of the LGVI.

Source: R. I. McLachlan, C. Scovel, *Equivariant constrained symplectic integration*,
J. Nonlinear Sci. 5 (1995) 233 (the Moser–Veselov map is RATTLE on RᵀR = 1); S.
Leyendecker, J. E. Marsden, M. Ortiz, ZAMM 88 (2008) 677 (joints by the null-space
method on the bodies' directors, R's columns).

``MatrixBodies(bodies)`` takes ``RigidBodies`` with masses (and joints, if any) to the
canonical system on q = (x, vec R) ∈ R^{12N} with the momenta p = (p, vec P_R):

    T = Σ_b |p_b|²/(2m_b) + ½ tr(P_b J_b⁻¹ P_bᵀ),   J_b = ½ tr(𝕁_b) 𝟙 − 𝕁_b,   V(x, R),

under the constraints R_bᵀR_b = 1 (the six entries on and above the diagonal, per body)
and the joints' g(x, R) = 0 (``systems.joints``).  On the manifold, P_R = R Ω̂ J
(Ω = 𝕁⁻¹Π) and Π = vee(RᵀP_R − P_RᵀR), since Ω̂J + JΩ̂ = (𝕁Ω)^ (``from_bodies``,
``to_bodies``).  ``integrators.Rattle`` on it is, in exact arithmetic, the map of
``LieGroupVariational`` on the bodies: the first half kick's multipliers of RᵀR = 1
leave the Moser–Veselov equation h(Π + (h/2)M)^ = F J − J Fᵀ for F = RₖᵀR_{k+1}, and
those of the joints the same impulses −(h/2)Kᵀλ.  The two computations share no code
past the potential, so their agreement to round-off checks both (tests/systems).
The bodies' moments must be strict (J > 0: no planar body, whose J is singular).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, final

import jax.numpy as jnp
import numpy as np

from mechint._pytree import register_pytree
from mechint.errors import InputError
from mechint.lie import so3
from mechint.maps import Integrator, Traits
from mechint.systems import joints as jointing
from mechint.systems.canonical import SeparableHamiltonian
from mechint.systems.constrained import Constrained
from mechint.systems.rigid_bodies import RigidBodies

_UPPER = np.triu_indices(3)


@final
@register_pytree(data=("system", "params", "bodies"), meta=("g", "m", "momenta", "dof"))
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class MatrixBodies(Constrained):
    """``bodies`` (``RigidBodies`` with masses, time-independent) in matrix variables
    under RᵀR = 1 and its joints (see the module docstring)."""

    bodies: RigidBodies = None  # type: ignore[assignment]

    name: ClassVar[str] = "matrix-bodies"

    def __init__(self, bodies: RigidBodies):
        if not isinstance(bodies, RigidBodies) or not bodies.translating:
            raise InputError("bodies", "must be RigidBodies with masses", "give mass=...")
        if bodies.time_dependent:
            raise InputError("bodies", "is time dependent", "give a potential V(x, R)")
        moments = np.asarray(bodies.inertia)
        jd = 0.5 * moments.sum(axis=-1, keepdims=True) - moments
        if np.any(jd <= 0):
            raise InputError(
                "bodies",
                "a body is planar (I_i = I_j + I_k): its matrix variables have a singular mass",
                "use LieGroupVariational on the bodies themselves",
            )
        axes = np.broadcast_to(np.eye(3), (bodies.bodies, 3, 3))
        if bodies.axes is not None:
            axes = np.asarray(bodies.axes)
        inverse = np.einsum("bij,bj,bkj->bik", axes, 1.0 / jd, axes)
        params = {"mass": np.asarray(bodies.mass), "J_inv": inverse}
        n = bodies.bodies

        def kinetic(p, params):
            lin = p[: 3 * n].reshape(n, 3)
            P = p[3 * n :].reshape(n, 3, 3)
            rot = jnp.einsum("bij,bjk,bik->", P, params["J_inv"], P)
            return 0.5 * (jnp.sum(jnp.sum(lin * lin, -1) / params["mass"]) + rot)

        def potential(q, params):
            x, R = _split(q, n)
            return bodies.energy_potential(x, R)

        def constraints(q):
            x, R = _split(q, n)
            D = jnp.swapaxes(R, -1, -2) @ R - jnp.eye(3, dtype=R.dtype)
            orth = D[:, _UPPER[0], _UPPER[1]].reshape(-1)
            if not bodies.joints:
                return orth
            return jnp.concatenate([orth, jointing.residual(bodies, x, R)])

        base = SeparableHamiltonian(kinetic, potential, dof=12 * n, params=params)
        object.__setattr__(self, "bodies", bodies)
        super().__init__(base, constraints)

    def __repr__(self) -> str:
        return f"MatrixBodies({self.bodies!r})"

    def generic_position(self):
        """The bodies' example positions and attitudes, moved off RᵀR = 1 and the joints."""
        q = np.asarray(self.from_bodies(self.bodies.example_state())[0])
        return q + 0.01 * np.sin(np.arange(1, q.size + 1))

    def from_bodies(self, x) -> tuple[Any, Any]:
        """(q, p) of a state (x, p, R, Π) of the bodies (any leading axes)."""
        b = self.bodies
        pos, p, R, Pi = b.parts(x)
        W = jnp.linalg.inv(jnp.asarray(self.system.params["J_inv"]))  # type: ignore[attr-defined]
        P = R @ so3.hat(b.angular_velocity(Pi)) @ W
        lead = Pi.shape[:-2]
        q = jnp.concatenate([pos.reshape(*lead, -1), R.reshape(*lead, -1)], axis=-1)
        return q, jnp.concatenate([p.reshape(*lead, -1), P.reshape(*lead, -1)], axis=-1)

    def to_bodies(self, y) -> tuple[Any, ...]:
        """The bodies' state (x, p, R, Π) of (q, p) (any leading axes)."""
        q, mom = y
        n = self.bodies.bodies
        pos, R = _split(q, n)
        p, P = _split(mom, n)
        B = jnp.swapaxes(R, -1, -2) @ P
        return pos, p, R, so3.vee(B - jnp.swapaxes(B, -1, -2))


@dataclasses.dataclass(frozen=True)
class InMatrixVariables(Integrator):
    """``integrator``'s map of the bodies read on ``MatrixBodies``: y ↦ from(Φ(to(y))),
    so that the canonical form of the matrix variables on the constraint manifold
    measures its symplecticity (``diagnostics.symplectic_defects``)."""

    integrator: Integrator

    name: ClassVar[str] = "in-matrix-variables"

    def __post_init__(self):
        self.settle_traits()

    def derived_traits(self) -> Traits:
        return self.integrator.traits

    def cannot_serve(self, system) -> str | None:
        if not isinstance(system, MatrixBodies):
            return "it reads a map of RigidBodies on their MatrixBodies"
        return self.integrator.cannot_serve(system.bodies)

    def step(self, system, x, h):
        y, st = self.integrator.step(system.bodies, system.to_bodies(x), h)
        return system.from_bodies(y), st


def _split(v, n: int):
    lead = v.shape[:-1]
    return v[..., : 3 * n].reshape(*lead, n, 3), v[..., 3 * n :].reshape(*lead, n, 3, 3)
