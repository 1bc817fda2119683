r"""SETTLE: RATTLE for rigid three-site water with its constraint solves in closed form
(Miyamoto & Kollman 1992, J. Comput. Chem. 13, 952; ``systems.RigidWater``).

The step is RATTLE's (``integrators.rattle``):

    p̃ = p_n − (h/2)∇V(q_n),  q̃ = q_n + h M⁻¹p̃                 (unconstrained)
    q_{n+1} = SETTLE(q_n, q̃) = q̃ − M⁻¹G(q_n)ᵀc,  p_{n+½} = p̃ − G(q_n)ᵀc/h
    p̂ = p_{n+½} − (h/2)∇V(q_{n+1}),  p_{n+1} = p̂ − G(q_{n+1})ᵀν       (G M⁻¹ p_{n+1} = 0)

molecule by molecule.  The position solve puts each molecule's unconstrained triangle
back to its rigid shape with the displacements of RATTLE's: they lie in the old plane,
keep the centre of mass, and exert no torque about it, the conditions that span
M⁻¹G(q_n)ᵀλ for a triangle (so SETTLE's q_{n+1} is RATTLE's to round-off; the tests
compare them).  In the frame of the old plane and the new centre of mass, two tilts
out of the plane (φ, ψ) and one turn in it (θ, from α sinθ + β cosθ = γ) are closed
forms; the branch is the small rotation's.  The momentum solve is each molecule's
3 × 3 linear system (G M⁻¹Gᵀ)ν = G M⁻¹p̂, and c, for the momentum, the one of the
displacement SETTLE made (a pair force along each old bond: the cluster's momentum and
angular momentum move by rounding only).  No iteration: the cost is fixed and the step
differentiates directly.  A molecule moved too far in one step has no real solution
(an argument of a square root below 0): the step fails (``NON_FINITE``).

Order 2, symmetric, symplectic on the manifold; it keeps the bond lengths, their rates,
and the cluster's momentum and angular momentum.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax
import jax.numpy as jnp

from mechint.integrators.rattle import free_body_energy, manifold_status
from mechint.maps import Integrator, StepStatus, Traits, combine, kept, ok_status, serves_only
from mechint.solvers.linear import solve
from mechint.systems.water import RigidWater


def _unit(v):
    return v / jnp.sqrt(jnp.sum(v * v))


def settle_positions(old, new, masses, r_oh, r_hh):
    """One molecule's constrained positions (3, 3) (O, H1, H2) from its ``old`` positions
    (on the constraints) and its unconstrained ``new`` ones; ``masses`` (m_O, m_H)."""
    m_o, m_h = masses
    total = m_o + 2.0 * m_h
    rc = 0.5 * r_hh
    height = jnp.sqrt(r_oh * r_oh - rc * rc)
    ra = 2.0 * m_h * height / total  # centre of mass to O
    rb = height - ra  # centre of mass to the H-H midpoint
    a0, b0, c0 = old
    a1, b1, c1 = new
    # about the new centre of mass, formed from differences (GROMACS's order: rounding
    # relative to the molecule, not to its position)
    d2, d3 = b1 - a1, c1 - a1
    A1 = -(d2 + d3) * (m_h / total)
    B1, C1 = d2 + A1, d3 + A1
    com = a1 - A1
    B0, C0 = b0 - a0, c0 - a0
    ez = _unit(jnp.cross(B0, C0))
    ex = _unit(jnp.cross(A1, ez))
    ey = jnp.cross(ez, ex)
    T = jnp.stack([ex, ey, ez])
    b0p, c0p = T @ B0, T @ C0
    A1p, B1p, C1p = T @ A1, T @ B1, T @ C1
    sin_phi = A1p[2] / ra
    cos_phi = jnp.sqrt(1.0 - sin_phi * sin_phi)
    sin_psi = (B1p[2] - C1p[2]) / (2.0 * rc * cos_phi)
    cos_psi = jnp.sqrt(1.0 - sin_psi * sin_psi)
    a2y = ra * cos_phi
    b2x = -rc * cos_psi
    b2y = -rb * cos_phi - rc * sin_psi * sin_phi
    c2y = -rb * cos_phi + rc * sin_psi * sin_phi
    alpha = b2x * (b0p[0] - c0p[0]) + b0p[1] * b2y + c0p[1] * c2y
    beta = b2x * (c0p[1] - b0p[1]) + b0p[0] * b2y + c0p[0] * c2y
    gamma = b0p[0] * B1p[1] - B1p[0] * b0p[1] + c0p[0] * C1p[1] - C1p[0] * c0p[1]
    ab2 = alpha * alpha + beta * beta
    sin_theta = (alpha * gamma - beta * jnp.sqrt(ab2 - gamma * gamma)) / ab2
    cos_theta = jnp.sqrt(1.0 - sin_theta * sin_theta)
    a3 = jnp.stack([-a2y * sin_theta, a2y * cos_theta, A1p[2]])
    b3 = jnp.stack([b2x * cos_theta - b2y * sin_theta, b2x * sin_theta + b2y * cos_theta, B1p[2]])
    c3 = jnp.stack([-b2x * cos_theta - c2y * sin_theta, -b2x * sin_theta + c2y * cos_theta,
                    C1p[2]])  # fmt: skip
    return com + jnp.stack([a3, b3, c3]) @ T


def _bond_jacobian(x):
    """G (3, 9) of one molecule's squared bond lengths |x_i − x_j|² at positions x (3, 3)."""
    rows = []
    for i, j in ((0, 1), (0, 2), (1, 2)):
        d = 2.0 * (x[i] - x[j])
        rows.append(jnp.zeros((3, 3), x.dtype).at[i].set(d).at[j].set(-d).reshape(-1))
    return jnp.stack(rows)


def _inverse_masses(masses):
    return jnp.repeat(1.0 / jnp.stack([masses[0], masses[1], masses[1]]), 3)


def settle_impulse(x0, displacement, masses):
    """Gᵀc, the constraint impulse (times h) of one molecule's SETTLE displacement
    (3, 3) = −M⁻¹G(x0)ᵀc: c from (G M⁻¹Gᵀ)c = −G·displacement.  Formed as pair forces along
    the old bonds, it adds to the molecule's momentum and angular momentum nothing but
    rounding, which the displacement's own rounding (relative to the positions, over h)
    would not."""
    G = _bond_jacobian(x0)
    W = _inverse_masses(masses)
    c = solve((G * W) @ G.T, -(G @ displacement.reshape(-1)))
    return (G.T @ c).reshape(3, 3)


def _molecule_residuals(x, p, p_hat, masses, r_oh, r_hh):
    """One molecule's bond residuals, their scales, rates and the rates' scales (those of
    ``Constrained.residual_scales``, ``p_hat`` counted as in ``rattle._on_manifold``),
    from its own 3 × 9 Jacobian rather than the cluster's."""
    G = _bond_jacobian(x)
    W = _inverse_masses(masses)
    flat = x.reshape(-1)
    d = [x[i] - x[j] for i, j in ((0, 1), (0, 2), (1, 2))]
    lengths = jnp.stack([r_oh, r_oh, r_hh])
    g = jnp.stack([jnp.sum(v * v) for v in d]) - lengths * lengths
    A = jnp.abs(G)
    v, v_hat = W * p.reshape(-1), W * p_hat.reshape(-1)
    return g, A @ jnp.abs(flat), G @ v, jnp.maximum(A @ jnp.abs(v), A @ jnp.abs(v_hat))


def settle_momenta(x, p, masses):
    """One molecule's momenta (3, 3) with the rates of its three bonds removed: p − Gᵀν,
    (G M⁻¹Gᵀ)ν = G M⁻¹p at positions x (3, 3)."""
    G = _bond_jacobian(x)
    W = _inverse_masses(masses)
    nu = solve((G * W) @ G.T, (G * W) @ p.reshape(-1))
    return p - (G.T @ nu).reshape(3, 3)


@final
@dataclasses.dataclass(frozen=True)
class Settle(Integrator):
    name: ClassVar[str] = "settle"
    traits = Traits(order=2, symmetric=True, explicit=True, symplectic=True, constrained=True)

    def cannot_serve(self, system) -> str | None:
        return serves_only(system, (RigidWater,))

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        q, p = x
        base = system.system
        masses = base.params["masses"]
        W = jnp.repeat(1.0 / masses, 3)
        m_o, m_h = masses[0], masses[1]
        geometry = system.params
        p_tilde = p - (0.5 * h) * base.potential_gradient(q)
        q_tilde = q + h * W * p_tilde
        old, new = q.reshape(-1, 3, 3), q_tilde.reshape(-1, 3, 3)
        q1 = jax.vmap(settle_positions, in_axes=(0, 0, None, None, None))(
            old, new, (m_o, m_h), geometry["r_oh"], geometry["r_hh"]
        ).reshape(-1)
        impulse = jax.vmap(settle_impulse, in_axes=(0, 0, None))(
            old, q1.reshape(-1, 3, 3) - new, (m_o, m_h)
        ).reshape(-1)
        p_half = p_tilde - impulse / h
        p_hat = p_half - (0.5 * h) * base.potential_gradient(q1)
        p1 = jax.vmap(settle_momenta, in_axes=(0, 0, None))(
            q1.reshape(-1, 3, 3), p_hat.reshape(-1, 3, 3), (m_o, m_h)
        ).reshape(-1)
        x1 = (q1, p1)
        checked = jax.vmap(_molecule_residuals, in_axes=(0, 0, 0, None, None, None))(
            q1.reshape(-1, 3, 3), p1.reshape(-1, 3, 3), p_hat.reshape(-1, 3, 3), (m_o, m_h),
            geometry["r_oh"], geometry["r_hh"],
        )  # fmt: skip
        return x1, combine([ok_status(x1), manifold_status(*checked)])

    def preserved(self, system, x, h) -> dict:
        names = ("constraints", "constraint_rates", *system.momentum_maps)
        return kept(system, names + free_body_energy(system), x)
