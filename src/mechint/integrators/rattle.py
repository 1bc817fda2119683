r"""RATTLE and SHAKE: Störmer–Verlet on a constraint manifold (``systems.Constrained``).

RATTLE (Andersen 1983; Leimkuhler & Skeel 1994; Hairer, Lubich & Wanner, GNI VII.1.4),
for H = T(p) + V(q), T = ½ pᵀWp (W = M⁻¹), constraints g(q) = 0, G = ∂g/∂q:

    p_{n+½} = p_n − (h/2) (∇V(q_n) + G(q_n)ᵀ λ_n)
    q_{n+1} = q_n + h W p_{n+½},                 0 = g(q_{n+1})
    p_{n+1} = p_{n+½} − (h/2) (∇V(q_{n+1}) + G(q_{n+1})ᵀ μ_n),   0 = G(q_{n+1}) W p_{n+1}.

The position multipliers, as c = (h²/2) λ_n, solve the m equations
g(q̃ − W G(q_n)ᵀ c) = 0 (q̃ the unconstrained drift) by Newton with the exact Jacobian
−G(q_{n+1}) W G(q_n)ᵀ (``solvers.Newton``; derivatives of the step by the implicit
function theorem); the momentum multipliers solve the linear system
(G W Gᵀ) ν = G W p̂ at q_{n+1} exactly.  RATTLE maps T*Q = {g = 0, G W p = 0} to itself,
is symmetric, symplectic on T*Q and of order 2 (so ``Composition(Rattle(), scheme)``
reaches the scheme's order), and keeps the momentum maps of linear symmetries of V and g.

SHAKE (Ryckaert, Ciccotti & Berendsen 1977) is the same step without the momentum
projection, p_{n+1} = p_{n+½} − (h/2) ∇V(q_{n+1}), as molecular dynamics codes run it:
its positions are RATTLE's from the same start (the SHAKE recursion
q_{n+1} − 2q_n + q_{n−1} = −h² W (∇V(q_n) + G(q_n)ᵀ λ̃_n), Leimkuhler & Skeel 1994), on
g = 0 to round-off and of order 2, but its momenta leave the hidden constraint by
(h/2) G(q_{n+1})ᵀ μ_n, O(h): as a map of (q, p) it is of order 1 and not symmetric, and
RATTLE is SHAKE with that component projected out.  SHAKE is symplectic in the sense of
Leimkuhler & Skeel: DΦ restricted to the tangent space of T*Q keeps the canonical form
(``diagnostics.symplectic_defects`` measures it at round-off), though its image leaves
T*Q.  The normal component changes none of the later states (the next step's
multipliers absorb it), so a SHAKE run starts from any momentum at positions on the
manifold (``Shake.validate_start``) and continues from its last state as it is.

A step fails rather than return a state off the manifold: Newton not converged
(``NOT_CONVERGED``: too large a step, or a singular G W Gᵀ), or the constraints (both, for
RATTLE) not met to max(1e-10, 1000 ulps) of their scale at the new state (``SINGULAR``:
the momentum solve of a singular G W Gᵀ, or a position solve that converged to a
residual above that).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax.numpy as jnp

from mechint.maps import (
    ImplicitIntegrator,
    Reason,
    StepStatus,
    Traits,
    combine,
    kept,
    ok_status,
    serves_only,
    status,
)
from mechint.solvers import Newton
from mechint.systems.constrained import Constrained, manifold_tolerance

# the residual's rounding, in ulps of the size of its terms, below which a solve whose
# updates have stopped shrinking is done
_ROUNDING_ULPS = 64.0


def _position_residual(c, args):
    """g(q̃ − (W Gᵀ)ᵀ c): the position constraints at the new q for c = (h²/2) λ."""
    system, q_tilde, WG = args
    return system.constraints(q_tilde - WG.T @ c)


def _shake(solver: Newton, system: Constrained, q, p, h):
    """The SHAKE half: (q_{n+1}, p_{n+½} − (h/2)∇V(q_{n+1}), Newton's status)."""
    base = system.system
    p_tilde = p - (0.5 * h) * base.potential_gradient(q)
    q_tilde = q + h * base.kinetic_gradient(p_tilde)
    G = system.constraint_jacobian(q)
    WG = system.inverse_mass(p, G)
    # the multipliers that would move q by its own size: Newton's update is judged
    # against them where c itself is small (a constraint that hardly pulls)
    scale = jnp.max(jnp.abs(q)) / jnp.maximum(jnp.max(jnp.abs(WG)), jnp.finfo(q.dtype).tiny)
    # where the masses or lengths differ by orders, the small multipliers' updates are
    # the rounding of the large ones and never reach rtol of them: the solve is also done
    # where the updates stop shrinking with every constraint met to a few ulps of its
    # terms Σ_j |G_ij| |q̃_j| (the rounding of g itself)
    rounding = _ROUNDING_ULPS * jnp.finfo(q.dtype).eps * (jnp.abs(G) @ jnp.abs(q_tilde))
    c0 = jnp.zeros(system.m, q.dtype)
    c, st = solver.solve(_position_residual, c0, (system, q_tilde, WG), scale=scale,
                         rounding=rounding)  # fmt: skip
    q1 = q_tilde - WG.T @ c
    p_half = p_tilde - G.T @ (c / h)
    p1 = p_half - (0.5 * h) * base.potential_gradient(q1)
    return q1, p1, status(st.converged, st.residual, Reason.NOT_CONVERGED)


def _on_manifold(system: Constrained, x, p_hat=None) -> StepStatus:
    """Whether x meets the constraints (and, given ``p_hat``, the momentum before its
    projection, their rates) to max(1e-10, 1000 ulps) of their scales
    (``Constrained.step_residuals``); the residual is the larger relative value."""
    g, sg, g_dot, sv = system.step_residuals(x[0], x[1], p_hat)
    return manifold_status(g, sg) if p_hat is None else manifold_status(g, sg, g_dot, sv)


def manifold_status(g, sg, g_dot=None, sv=None) -> StepStatus:
    """The status of residuals ``g`` (and rates ``g_dot``) against their scales: fails
    (``SINGULAR``) beyond max(1e-10, 1000 ulps); the residual is the largest relative
    value."""
    tiny = jnp.finfo(g.dtype).tiny
    worst = jnp.max(jnp.abs(g) / jnp.maximum(sg, tiny))
    if g_dot is not None and sv is not None:
        worst = jnp.maximum(worst, jnp.max(jnp.abs(g_dot) / jnp.maximum(sv, tiny)))
    ok = worst <= manifold_tolerance(g.dtype)  # False for NaN
    return status(ok, jnp.where(jnp.isfinite(worst), worst, jnp.inf), Reason.SINGULAR)


def free_body_energy(system) -> tuple[str, ...]:
    """("H",) where RATTLE keeps the energy too (``Constrained.keeps_energy``: one rigid
    water molecule, a free rigid body, whose RATTLE is the Moser–Veselov map of its
    attitude, McLachlan & Scovel 1995).  SETTLE, the same map, says so too; SHAKE, whose
    momenta are not RATTLE's, does not."""
    return ("H",) if system.keeps_energy else ()


class _ConstrainedMap(ImplicitIntegrator):
    solver: Newton

    def cannot_serve(self, system) -> str | None:
        return serves_only(system, (Constrained,))

    def preserved(self, system, x, h) -> dict:
        names = ("constraints", *self._rates, *system.momentum_maps)
        if self._rates:  # RATTLE
            names += free_body_energy(system)
        return kept(system, names, x)

    _rates: ClassVar[tuple[str, ...]] = ()


@final
@dataclasses.dataclass(frozen=True)
class Rattle(_ConstrainedMap):
    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "rattle"
    traits = Traits(order=2, symmetric=True, explicit=False, symplectic=True, constrained=True)
    _rates: ClassVar[tuple[str, ...]] = ("constraint_rates",)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        q, p = x
        q1, p_hat, st = _shake(self.solver, system, q, p, h)
        x1 = (q1, system.momentum_projection(q1, p_hat))
        return x1, combine([st, _on_manifold(system, x1, p_hat)])


@final
@dataclasses.dataclass(frozen=True)
class Shake(_ConstrainedMap):
    solver: Newton = dataclasses.field(default_factory=Newton)

    name: ClassVar[str] = "shake"
    # order 2 in q, 1 in p; symplectic as a map out of T*Q (the module docstring)
    traits = Traits(order=1, symmetric=False, explicit=False, symplectic=True, constrained=True)

    def validate_start(self, system, x0, name: str = "x0") -> tuple[object, bool]:
        """Positions on the manifold; the momentum anywhere: the step does not depend on
        its normal part (the multipliers absorb it), which its own steps leave, so a
        run continues from its last state (``--resume``) as it was."""
        return system.validate_state(x0, name, momenta=False)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        q, p = x
        q1, p1, st = _shake(self.solver, system, q, p, h)
        x1 = (q1, p1)
        return x1, combine([st, ok_status(x1), _on_manifold(system, x1)])
