r"""Suris's discrete Lagrangian map on so(n) ⋉ Symm(n), the Clebsch case, and Moser-Veselov.

Source: Yu. B. Suris, *Integrable discretization of a rigid body in a quadratic
potential* (references/suris-rigid-body-quadratic-potential.md), Theorems 3-4 and §6;
Moser & Veselov (1991) for P = 0; docs/math.md §3.  With time step ε = h and
Q_k = I − (ε²/2)P_k, equations (5.5):

    ε M_k     = Q_k W_k J − J W_kᵀ Q_k          (solved for W_k ∈ SO(n))
    ε M_{k+1} = J Q_k W_k − W_kᵀ Q_k J
    P_{k+1}   = W_kᵀ P_k W_k                    (Clebsch: p_{k+1} = W_kᵀ p_k, P = ppᵀ)

and P = 0 is the Moser-Veselov map of the free body.  The heavy top (a linear potential,
``systems.HeavyTop``; Bobenko–Suris 1999) takes the discrete Lagrangian
Λ(W_k, γ_k) = −(1/ε) tr(W_k J) − (ε/2)(χ·γ_k + χ·W_kᵀγ_k), the potential by the
trapezoidal rule.  Its discrete Euler–Poincaré equations (Theorem 2 of the paper) are
the Moser-Veselov step between two half kicks, in the variables (m, γ) with M = hat(m)
and J = ½ tr(I) − I:

    m⁺ = m_k + (ε/2) γ_k × χ,   ε hat(m⁺) = W_k J − J W_kᵀ,
    ε hat(m⁻) = J W_k − W_kᵀ J,  γ_{k+1} = W_kᵀ γ_k,   m_{k+1} = m⁻ + (ε/2) γ_{k+1} × χ,

Poisson on e(3)*, symmetric, of order 2; it keeps both Casimirs |γ|², m·γ exactly (the
kicks move m by γ × χ ⟂ γ, W_k rotates m and γ alike) and, for the Lagrange top, m3
(the kicks keep it, and Moser-Veselov keeps |m|² and T, hence m3² when J1 = J2).  In
floating point m_{k+1} and γ_{k+1} are W_kᵀ applied as one quaternion
(``HeavyTop.body_advance``).

The first equation is solved by Newton on SO(n) with the exact Jacobian (``jax.jacfwd``)
and Cayley updates W ← W cay(δ), from W = cay(εΩ_k). The correspondence is multi-valued;
the branch taken is the one continuous with W → I as ε → 0. It is characterized by the
factorization L_k(λ) = U_k(λ)U_kᵀ(−λ), U_k(λ) = Q_kW_k − ελJ, of Theorem 4: the zeros of
det U_k(λ) (the eigenvalues of (εJ)⁻¹Q_kW_k, ≈ 1/(εJ_i) for small ε) are the n zeros of
det L_k on the side sign(ε)·Re λ > 0, i.e. every eigenvalue of J⁻¹Q_kW_k has a positive
real part. A solve that lands elsewhere, or a step so large that zeros reach the
imaginary axis, is a failed step (an error, never a wrong branch).

The map is Poisson for the Lie-Poisson bracket, symmetric (stepping with −ε undoes a
step), of order 2 with no time shift, and keeps exactly the spectrum of
L_k(λ) = I − ε²(P̃_k + λM_k + λ²J²), P̃ = P − ε²P²/4: the spectral invariants of
K = P̃ + λM + λ²J², H(M, P̃) and the Casimirs tr P^k.

On ``systems.Forced`` Euler tops (a torque F(t, m), a dissipation R(m)) the map of
order 2 is the discrete Lagrange–d'Alembert Moser–Veselov map
(``integrators.forced.moser_veselov``: impulses (h/2)(F − R∇H) at the two ends of the
free step).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from mechint import maps
from mechint._validate import traced, whole_number
from mechint.errors import InputError
from mechint.integrators import composition_schemes, dmv, forced
from mechint.lie import cayley, orthonormalize, so3, so_dim, so_hat, so_index, so_vee
from mechint.maps import (
    ImplicitIntegrator,
    Integrator,
    Reason,
    Setting,
    StepStatus,
    Traits,
    combine,
    no_failure,
    serves_only,
    status,
)
from mechint.solvers import Newton
from mechint.solvers.linear import matmul, positive_stable
from mechint.systems import rigid
from mechint.systems.base import MoserVeselovBody
from mechint.systems.euler_top import EulerTop, FreeTop
from mechint.systems.forced import Forced


def _residual(W, args):
    """so_vee(Q W J − J Wᵀ Q − h M): the equation for the body rotation W."""
    Q, J, M, h = args
    U = matmul(Q, W) * J  # Q W J
    return so_vee(U - U.T - h * M)


def _jacobian(W, args):
    """The Jacobian of ``_residual`` along W ← W(I + δ̂), written out: the derivative is
    A − Aᵀ with A = U δ̂ J, U = QW, and for δ̂ = E_ab (a < b)
    (A − Aᵀ)_ij = J_b(U_ia δ_jb − U_ja δ_ib) − J_a(U_ib δ_ja − U_jb δ_ia).  One
    einsum instead of n(n−1)/2 forward passes (``jax.jacfwd``)."""
    Q, J, _, _ = args
    n = W.shape[-1]
    U = matmul(Q, W)
    eye = jnp.eye(n, dtype=W.dtype)
    T = U[:, None, :, None] * eye[None, :, None, :] * J  # [i, j, a, b] = U_ia δ_jb J_b
    D = T - jnp.swapaxes(T, 0, 1)
    D = D - jnp.swapaxes(D, 2, 3)
    j, k = so_index(n)
    return D[j, k][:, j, k]


class BodyRotationMap(Integrator):
    """A map of a rigid body that also gives the body rotation W_k = g_kᵀ g_{k+1} of each
    step, so that ``integrators.Oriented`` can carry the attitude g along."""

    @abc.abstractmethod
    def step_with_rotation(self, system, x, h) -> tuple[Any, Any, StepStatus]:
        """One step; returns (x_{k+1}, W_k, status)."""

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        x_next, _, st = self.step_with_rotation(system, x, h)
        return x_next, st


_order = whole_number("order")


def moments(system: MoserVeselovBody) -> jnp.ndarray:
    """The principal moments I of an n = 3 body: I = (J2+J3, J1+J3, J1+J2) = ΣJ − J."""
    return system.principal_moments()


def _free(system) -> bool:
    """No potential: the free bodies (the Euler top, ``FreeRigidBody``)."""
    return isinstance(system, FreeTop)


@dataclasses.dataclass(frozen=True)
class DiscreteLagrangian(BodyRotationMap, ImplicitIntegrator):
    """Suris / Moser-Veselov map for FreeRigidBody, QuadraticPotentialTop and ClebschTop
    (every ``systems.Body``) and the Euler top.

    ``solver``: Newton settings for the W equation; ``check_branch``: verify that the
    solution lies on the branch W → I (see the module docstring); on by default.  A
    failed step is ``Reason.NOT_CONVERGED`` or ``Reason.WRONG_BRANCH``.

    ``order``: 2 (the map of the papers), or 4, 6, 8, 10 for the n = 3 bodies: Hairer
    and Vilmart's preprocessed map (``integrators.dmv``: the moments modified by a
    series in h² in the conserved H and |m|²), which keeps H and |m|² exactly.  On a
    body in a potential (the heavy tops, the quadratic-potential and Clebsch tops with
    n = 3) the step of order > 2 is the Strang splitting of the potential's exact kick
    and the preprocessed free step, composed to the order (``composition_schemes``
    ``FOR_ORDER``: Suzuki 4, Kahan–Li 6 and 8, Sofroniou–Spaletta 10), as Hairer and
    Vilmart combine their code with a potential.  Every n = 3 body takes the step in
    three unknowns (``dmv.step``); the result equals the generic so(n) solve to 1e-15.
    """

    solver: Newton = dataclasses.field(default_factory=lambda: Newton(rtol=1e-14, max_iter=20))
    check_branch: bool = True
    order: int = 2

    name: ClassVar[str] = "discrete-lagrangian"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "order",
            "discrete-lagrangian: 2 (default), 4, 6, 8 or 10 (n = 3 bodies: Hairer–Vilmart's "
            "preprocessed Moser–Veselov map)",
            _order,
        ),
    )

    def __post_init__(self):
        if self.order not in dmv.ORDERS:
            raise InputError("order", f"must be 2, 4, 6, 8 or 10, got {self.order!r}")
        self.settle_traits()

    def derived_traits(self) -> Traits:
        return Traits(order=self.order, symmetric=True, explicit=False, poisson=True,
                      forced=self.order == 2)  # fmt: skip

    def cannot_serve(self, system: Any) -> str | None:
        if isinstance(system, Forced):  # the forced Moser–Veselov map (Euler top)
            if isinstance(system.base, EulerTop):
                return None
            return ("forced, it serves the Euler top (for other bodies use "
                    "LieGroupVariational() on a Forced RigidBodies)")  # fmt: skip
        why = serves_only(system, (MoserVeselovBody,))
        if why is not None:
            return (
                why + " (FreeRigidBody, QuadraticPotentialTop, ClebschTop, the heavy tops, "
                "EulerTop)"
            )
        n = system.n
        if self.order > 2 and n != 3:
            return (
                f"order {self.order} (Hairer–Vilmart's preprocessing) is for n = 3 bodies, "
                f"this one has n = {n}: use order 2"
            )
        J = 0.5 * jnp.sum(moments(system)) - moments(system) if n == 3 else system.J
        if not traced(J) and np.any(np.asarray(J) <= 0):
            return (
                f"its Moser-Veselov inertia J = ½ tr(I) − I = {tuple(np.asarray(J).tolist())} "
                "is not positive (the moments must satisfy I_i < I_j + I_k)"
            )
        return None

    # -- the map -----------------------------------------------------------------------
    def solve_W(self, J, M, P, h):
        """W ∈ SO(n) with h M = Q W J − J Wᵀ Q, Q = I − h²P/2; returns (W, StepStatus)."""
        n = M.shape[-1]
        eye = jnp.eye(n, dtype=M.dtype)
        Q = eye if P is None else eye - 0.5 * h * h * P

        def retract(W, d):
            return matmul(W, cayley(so_hat(d, n)))

        W0 = cayley(h * rigid.omega(M, J))
        W, st = self.solver.solve(
            _residual,
            W0,
            (Q, J, M, h),
            retract=retract,
            tangent=jnp.zeros(so_dim(n), dtype=M.dtype),
            tangent_map=lambda W, d: matmul(W, so_hat(d, n)),
            jacobian=_jacobian,
            pivot=False,  # the Jacobian is diag(J_a + J_b) + O(hΩ), see _jacobian
        )
        W = orthonormalize(jnp.asarray(W))  # remove the round-off the Cayley updates accumulated
        newton = status(st.converged, st.residual, Reason.NOT_CONVERGED)
        if not self.check_branch:
            return W, newton
        branch = status(
            positive_stable(matmul(Q, W) / J[:, None]), st.residual, Reason.WRONG_BRANCH
        )
        return W, combine([newton, branch])

    def _three(self, system, m, h):
        """The (preprocessed) step of an n = 3 body in three unknowns."""
        return dmv.step(
            m,
            moments(system),
            h,
            self.order,
            rtol=self.solver.rtol,
            max_iter=self.solver.max_iter,
            check_branch=self.check_branch,
        )

    def free_step(self, system, x, h, *, suris: bool = True):
        """The Moser–Veselov step (x_{k+1}, W_k, StepStatus); ``suris``: P enters the W
        equation (Suris's map, order 2), else P is only carried along by W."""
        if _free(system) and system.n == 3:  # in its momentum m: three unknowns, no hat
            m_next, _, W, st = self._three(system, system.to_momentum(x), h)
            return system.from_momentum(m_next), W, st
        M, P = system.body_split(x)
        if not suris:
            P = None
        if system.n == 3 and P is None:
            m_next, _, W, st = self._three(system, so3.vee(M), h)
            return system.body_advance(x, so3.hat(m_next), W), W, st
        W, st = self.solve_W(system.J, M, P, h)
        QW = W if P is None else W - 0.5 * h * h * matmul(P, W)
        JQW = system.J[:, None] * QW
        M_next = (JQW - JQW.T) / h
        return system.body_advance(x, M_next, W), W, st

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        if isinstance(system, Forced):  # the discrete Lagrange–d'Alembert map
            return forced.moser_veselov(self, system, x, h)
        return super().step(system, x, h)

    def step_with_rotation(self, system: Any, x, h):
        """One step; returns (x_{k+1}, W_k, StepStatus) (W_k = g_kᵀ g_{k+1})."""
        if self.order == 2 or _free(system):
            x = system.body_kick(x, 0.5 * h)
            x, W, st = self.free_step(system, x, h)
            return system.body_kick(x, 0.5 * h), W, st
        gamma = composition_schemes.get(composition_schemes.FOR_ORDER[self.order]).gamma
        real = jax.tree.leaves(x)[0].dtype

        def stage(carry, g):
            y, W, st = carry
            y = system.potential_kick(y, 0.5 * g * h)
            y, Wi, s = self.free_step(system, y, g * h, suris=False)
            return (system.potential_kick(y, 0.5 * g * h), matmul(W, Wi), combine([st, s])), None

        none = no_failure(real)
        (x, W, st), _ = jax.lax.scan(
            stage, (x, jnp.eye(3, dtype=real), none), jnp.asarray(gamma, dtype=real)
        )
        return x, orthonormalize(W), st

    # -- what the map keeps ------------------------------------------------------------
    def modified_P(self, system: rigid.Body, x, h):
        """P̃ = P − ε²P²/4 (zero for the free body)."""
        M, P = system.body_split(x)
        if P is None:
            return jnp.zeros_like(M)
        return P - 0.25 * h * h * matmul(P, P)

    def lax_matrix(self, system, x, h, lam):
        """The discrete Lax matrix L_k(λ) = I − ε²(P̃ + λM + λ²J²), isospectral along the map."""
        M = system.body_split(x)[0]
        K = self.modified_P(system, x, h) + lam * M + lam**2 * jnp.diag(system.J**2)
        return jnp.eye(M.shape[-1], dtype=M.dtype) - h * h * K

    def preserved(self, system: Any, x, h) -> dict:
        """H(M, P̃) ('H~'), the spectral invariants of P̃ + λM + λ²J² ('L{k}_{d}~') and the
        Casimirs.  For the free body (P̃ = P = 0) these are the body's own integrals: the
        Moser-Veselov map keeps H, tr M^{2i} and Manakov's integrals exactly; the
        preprocessed map (order > 2, n = 3) keeps H and |m|².  On a body in a potential
        the map of order > 2 (a splitting) keeps the Casimirs (and the Lagrange top's m3)."""
        if isinstance(system, Forced):  # no momentum map of the Euler top to balance
            return maps.kept(system, forced.kept_momenta(system), x)
        if _free(system):
            return system.invariants(x)
        split = system.split_invariants(x)
        if split is not None:  # the heavy tops: the Casimirs (and the Lagrange top's m3)
            return split
        if self.order > 2:
            return system.casimirs(x)
        M = system.body_split(x)[0]
        Pt = self.modified_P(system, x, h)
        J = system.J
        out = {
            "H~": rigid.kinetic(M, J) - 0.5 * jnp.sum(J * jnp.diagonal(Pt, axis1=-2, axis2=-1), -1)
        }
        out.update(system.casimirs(x))
        out.update(rigid.named_lax_integrals(M, Pt, J, suffix="~"))
        return out
