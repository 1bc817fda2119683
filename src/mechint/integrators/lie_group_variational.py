r"""The Lie group variational integrator (LGVI) of rigid bodies in any potential.

Source: T. Lee, M. Leok, N. H. McClamroch, *Lie group variational integrators for the
full body problem*, CMAME 196 (2007) 2907 (arXiv math/0508365), (19)–(23); docs/math.md
§9.  For each body, with the nonstandard inertia J_d = ½ tr(𝕁) 𝟙 − 𝕁 and the potential's
forces −∂V/∂x and body torques M (``systems.RigidBodies``):

    h S(Π_k + (h/2) M_k) = F_k J_d − J_d F_kᵀ            (solved for F_k ∈ SO(3))
    R_{k+1} = R_k F_k,
    Π_{k+1} = F_kᵀ Π_k + (h/2) F_kᵀ M_k + (h/2) M_{k+1},
    p_{k+1/2} = p_k − (h/2) ∂V_k/∂x,  x_{k+1} = x_k + h p_{k+1/2}/m,
    p_{k+1} = p_{k+1/2} − (h/2) ∂V_{k+1}/∂x

(the positions by Störmer–Verlet).  Read as maps, that is a half kick of the potential
(p and Π), the free step (the centres drift; each body takes the Moser–Veselov step from
the kicked Π, R ← R F, Π ← FᵀΠ), and a half kick at the new state: the first equation is
the Moser–Veselov equation of ``integrators.DiscreteLagrangian`` with the momentum
Π_k + (h/2)M_k, and it is solved by the same three-unknown Newton solve and branch check
(``dmv.step``, in each body's principal frame).  So with V = 0 it *is* the Moser–Veselov
map, and with the heavy top's V = e_z·Rχ it is the heavy top's discrete Lagrangian map
(Bobenko–Suris), which also kicks by (h/2)γ × χ around a Moser–Veselov step.

It is symplectic on T*(R³ × SO(3))ᴺ, symmetric, of order 2, keeps R in SO(3) (R turns by
the rotation of a quaternion, so |RᵀR − 1| stays at round-off) and keeps the total
linear and angular momenta exactly when V has the symmetry (the forced discrete Noether
theorem with zero force; each piece keeps them).  ``Composition(LieGroupVariational(),
scheme)`` gives orders 4–10.

On ``systems.Forced`` rigid bodies it is the discrete Lagrange–d'Alembert map
(``integrators.forced.lie_group_variational``): the forces and torques enter as impulses
(h/2)(F − R∇H) at the two kicks, and P − I_P and L − I_L are kept to round-off.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp

from mechint import maps
from mechint.integrators import dmv, forced
from mechint.lie import so3
from mechint.maps import ImplicitIntegrator, Reason, StepStatus, Traits, serves_only
from mechint.solvers import Newton
from mechint.systems import joints
from mechint.systems.base import BodiesInPotential, PrincipalRotations
from mechint.systems.constrained import manifold_tolerance
from mechint.systems.forced import Forced


@final
@dataclasses.dataclass(frozen=True)
class LieGroupVariational(ImplicitIntegrator):
    """Lee, Leok and McClamroch's LGVI for ``systems.RigidBodies`` (see the module
    docstring).  ``solver``: the tolerance and iterations of each body's Newton solve
    for F_k; ``check_branch``: refuse a solution off the branch F → 𝟙 (a failed step,
    ``Reason.WRONG_BRANCH``), on by default."""

    solver: Newton = dataclasses.field(default_factory=lambda: Newton(rtol=1e-14, max_iter=20))
    check_branch: bool = True

    name: ClassVar[str] = "lie-group-variational"
    traits = Traits(order=2, symmetric=True, explicit=False, symplectic=True, poisson=True,
                    forced=True, constrained=True)  # fmt: skip

    def cannot_serve(self, system) -> str | None:
        if isinstance(system, Forced):
            if forced.moves_positions(system):
                return ("its force moves the centres x directly (ẋ = p/m + F_x): forces "
                        "act on p and torques on Π, give zeros in x")  # fmt: skip
            system = system.base
        if isinstance(system, BodiesInPotential) and isinstance(system, PrincipalRotations):
            return None
        return serves_only(system, (BodiesInPotential,)) or "it needs principal rotations"

    def free_step(self, system: Any, x, h) -> tuple[Any, StepStatus]:
        """The drift of the centres and each body's Moser–Veselov step."""
        x = system.drift(x, h)
        vectors = system.body_vectors(x)
        axes = system.principal_axes()  # None: the vectors are in the principal frames
        m = vectors[0] if axes is None else jnp.einsum("...ji,...j->...i", axes, vectors[0])
        solve = partial(
            dmv.step,
            order=2,
            rtol=self.solver.rtol,
            max_iter=self.solver.max_iter,
            check_branch=self.check_branch,
        )
        # every body of every state (leading batch axes too), each its own solve
        shape = m.shape
        inertia = jnp.broadcast_to(system.inertia, shape).reshape(-1, 3)
        m_next, c, F, st = jax.vmap(solve, in_axes=(0, 0, None))(m.reshape(-1, 3), inertia, h)
        if axes is None:  # Π ← FᵀΠ as the solve turned it; the rows of R ← r F
            F = F.reshape(*shape, 3)
            rows = tuple(jnp.einsum("...j,...jk->...k", v, F) for v in vectors[1:])
            x = system.from_body_vectors(x, (m_next.reshape(shape), *rows))
            return x, _first_failure(st)
        # F = A F_p Aᵀ: the quaternion's axis turned by A (no product with A on the state:
        # a fixed matrix's rounding would bias RᵀR and L)
        c = jnp.einsum("...ij,...j->...i", axes, c.reshape(shape))
        q = jnp.concatenate([jnp.ones_like(c[..., :1]), -c], axis=-1)  # F_kᵀ, each body
        x = system.from_body_vectors(x, tuple(so3.rotate(q, v) for v in vectors))
        return x, _first_failure(st)

    def step(self, system: Any, x, h) -> tuple[Any, StepStatus]:
        if isinstance(system, Forced):  # the discrete Lagrange–d'Alembert map
            return forced.lie_group_variational(self, system, x, h)
        if getattr(system, "joints", ()):
            return self._jointed_step(system, x, h)
        x = system.kick(x, 0.5 * h)
        x, st = self.free_step(system, x, h)
        return system.kick(x, 0.5 * h), st

    def _jointed_step(self, system: Any, x, h) -> tuple[Any, StepStatus]:
        """RATTLE in the bodies' variables (``systems.joints``): the impulses ν = (h/2)λ
        of the joints' forces at the first half kick solved by Newton (the exact
        Jacobian, through each body's Moser–Veselov solve) so that the free step ends on
        g = 0, then the second half kick projected onto K u = 0."""
        pos, _, R, _ = system.parts(x)
        K = joints.jacobian(system, R)
        y = system.kick(x, 0.5 * h)
        args = (system, y, K, h)
        g_scale = jnp.max(joints.position_scales(system, pos, R))
        nu, st = self.solver.solve(
            partial(_joint_positions, self),
            jnp.zeros(K.shape[0], K.dtype),
            args,
            scale=joints.impulse_scale(system, pos, R, K, h),
            simplified=_joint_matrix,
            residual_floor=4.0 * jnp.finfo(K.dtype).eps * g_scale,
        )
        y, st_free = self.free_step(system, _with_impulse(system, y, K, nu), h)
        y = system.kick(y, 0.5 * h)
        pos, p, R, Pi = system.parts(y)
        u_hat = joints.velocities(system, p, Pi)  # before the projection
        p, Pi = joints.project_momenta(system, p, Pi, joints.jacobian(system, R))
        y = system.join(pos, p, R, Pi, system.clock(y))
        worst = joints.worst(*joints.state_residuals(system, y, u_hat))
        on = maps.status(worst <= manifold_tolerance(K.dtype), worst, Reason.SINGULAR)
        newton = maps.status(st.converged, st.residual, Reason.NOT_CONVERGED)
        return y, maps.combine([newton, st_free, on])

    def preserved(self, system: Any, x, h) -> dict:
        """The momenta of the potential's declared symmetries and RᵀR (the Casimirs);
        with no potential also H (the Moser–Veselov map keeps the kinetic energy); on a
        forced system the balances J − I_J of those momenta."""
        if isinstance(system, Forced):
            return maps.kept(system, forced.kept_momenta(system), x)
        kept = system.split_invariants(x)
        if system.joints:
            return {**kept, **maps.kept(system, ("constraints", "constraint_rates"), x)}
        if system.potential_free:
            kept["H"] = system.hamiltonian(x)
        return kept


def _with_impulse(system, y, K, nu):
    pos, p, R, Pi = system.parts(y)
    p, Pi = joints.impulse(system, p, Pi, K, nu)
    return system.join(pos, p, R, Pi, system.clock(y))


def _joint_matrix(nu, args):
    """−h K 𝕄⁻¹ Kᵀ: the positions' Jacobian in the impulses to O(h²) relative (the
    free step drifts x by h p/m and turns R by h 𝕁⁻¹Π to first order)."""
    system, _, K, h = args
    return -h * (K @ joints.inverse_mass(system, K).T)


def _joint_positions(integrator: LieGroupVariational, nu, args):
    """g after the free step from the kicked state with the joints' impulses ν."""
    system, y, K, h = args
    y, _ = integrator.free_step(system, _with_impulse(system, y, K, nu), h)
    pos, _, R, _ = system.parts(y)
    return joints.residual(system, pos, R)


def _first_failure(st: StepStatus) -> StepStatus:
    """One status for the bodies' statuses: all ok, the largest residual, the reason of
    the first body that failed."""
    first = jnp.argmin(st.ok)
    return StepStatus(
        jnp.all(st.ok),
        jnp.max(st.residual),
        jnp.where(jnp.all(st.ok), jnp.int32(Reason.OK), st.reason[first]),
    )
