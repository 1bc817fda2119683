r"""The forced variational maps: the discrete Lagrange–d'Alembert principle.

Marsden and West, "Discrete mechanics and variational integrators", Acta Numerica 10
(2001) 357, §3.2; Kane, Marsden, Ortiz and West, IJNME 49 (2000) 1295.  With discrete
forces F_d^± (impulses at the two ends of a step), the forced discrete Euler–Lagrange
equations in position–momentum form are

    p_k = −D₁L_d(q_k, q_{k+1}) − F_d^−(q_k, q_{k+1}),
    p_{k+1} = D₂L_d(q_k, q_{k+1}) + F_d^+(q_k, q_{k+1}),

and a momentum map J = p·ξ(q) of a symmetry of L_d changes by exactly the discrete
impulse along it (the forced discrete Noether theorem, Marsden–West Theorem 3.2.1):

    J(q_{k+1}, p_{k+1}) − J(q_k, p_k) = F_d^−·ξ(q_k) + F_d^+·ξ(q_{k+1}).

For a canonical system of ``systems.Forced`` with its total force on p,
f(t, q, p) = force(t, q, p) − R(q, p) ∂H/∂p(q, p), the quadratures of L_d and of the
force give (Hamiltonian form, with H = T(p) + V(q) explicit and a general H by Newton):

- symplectic Euler A (L_d = h L(q_{k+1}, v)): q_{k+1} = q_k + h ∂_pH(q_{k+1}, p_k),
  p_{k+1} = p_k − h ∂_qH(q_{k+1}, p_k) + h f(t_{k+1}, q_{k+1}, p_k); F_d^− = 0,
  F_d^+ = h f(t_{k+1}, q_{k+1}, p_k).  Explicit for a separable H whatever f depends on.
- symplectic Euler B, its adjoint: p_{k+1} = p_k − h ∂_qH(q_k, p_{k+1})
  + h f(t_k, q_k, p_{k+1}), q_{k+1} = q_k + h ∂_pH(q_k, p_{k+1}); F_d^− = h f(t_k, q_k,
  p_{k+1}), F_d^+ = 0.  Implicit in p_{k+1} where f depends on p (damping).
- Störmer–Verlet, B_{h/2} then A_{h/2}: p_{k+½} = p_k − (h/2) ∂_qH(q_k, p_{k+½})
  + (h/2) f(t_k, q_k, p_{k+½}), q_{k+1} as the conservative map, p_{k+1} = p_{k+½}
  − (h/2) ∂_qH(q_{k+1}, p_{k+½}) + (h/2) f(t_{k+1}, q_{k+1}, p_{k+½}); F_d^∓ = (h/2) f
  at the two ends.  Second order and symmetric; explicit where f does not depend on p.

With a zero force each is the conservative map bit for bit (the force enters as a term
added after the conservative update).  The discrete work of a step is
(F_d^− + F_d^+)·Δq / h, the force's trapezoidal work along the step (split into the work
of the force and the dissipation of R), so the energy balance holds to O(h^p) (the
energy of a symplectic map is kept only up to a bounded O(h^p) error); the impulses
make every momentum balance J − I_J exact to round-off.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechint._validate import traced
from mechint.integrators.half_steps import (
    implicit_half,
    position_half,
    position_update,
)
from mechint.maps import Reason, StepStatus, combine, ok_status, status
from mechint.solvers import Newton
from mechint.systems.base import BodiesInPotential
from mechint.systems.canonical import Canonical, Separable
from mechint.systems.forced import Forced, dot, field_mask, matvec


def kept_momenta(system) -> tuple[str, ...]:
    """What a symplectic partitioned map keeps exactly: the momentum maps qᵀDp of a
    conservative system, the balances J − I_J of a forced one (forced Noether)."""
    if isinstance(system, Forced):
        return tuple(f"{J}_balance" for J in system.momenta)
    return tuple(system.momentum_maps)


def forces(system: Forced, t, q, p):
    """(force, dissipative force −R ∂H/∂p) on p at one sample."""
    base = system.base
    assert isinstance(base, Canonical)
    x = (q, p)
    f = (jnp.zeros_like(p) if system.force is None
         else system._call(system.force, t, x).astype(p.dtype))  # fmt: skip
    if system.dissipation is None:
        return f, jnp.zeros_like(p)
    R = system._call(system.dissipation, x).astype(p.dtype)
    return f, -matvec(R, base.gradient(q, p)[1])


def _total(system, t, q, p):
    f, fr = forces(system, t, q, p)
    return f + fr


def _xi(system: Forced, q, p):
    """ξ_J(q) = ∂J/∂p for each carried momentum map J = p·ξ(q)."""
    base = system.base
    return tuple(
        jax.grad(lambda p, name=name: base.invariants((q, p))[name])(p) for name in system.momenta
    )


def _advance(system: Forced, x, q1, p1, dq, ends, h, t1):
    """The extended state after a step: work and dissipation from the end forces
    (F_d^−, F_d^+) = (h_−·f_−, h_+·f_+) given as ((h_−, t, q, p), (h_+, ...)) or None."""
    _, _, work, dissipated, impulses = system.split(x)
    w = jnp.zeros_like(work)
    d = jnp.zeros_like(dissipated)
    gained = [jnp.zeros_like(i) for i in impulses]
    for end in ends:
        if end is None:
            continue
        weight, te, qe, pe = end  # weight: h_±/h, the share of the step's quadrature
        f, fr = forces(system, te, qe, pe)
        w = w + weight * dot(f, dq)
        d = d - weight * dot(fr, dq)
        for i, xi in enumerate(_xi(system, qe, pe)):
            gained[i] = gained[i] + (weight * h) * dot(f + fr, xi)
    impulses = tuple(i + g for i, g in zip(impulses, gained, strict=True))
    return system.advance_clock(x, system.join((q1, p1), t1, work + w, dissipated + d, impulses), h)


def _kick_equation(z, args):
    """p − c h ∂H/∂q(q, z) + c h f(t, q, z): a half (c = ½) or whole (c = 1) kick whose
    force is taken at the new momentum z."""
    system, t, q, p, ch = args
    base = system.base
    return (p - ch * base.gradient(q, z)[0]) + ch * _total(system, t, q, z)


def _kick(solver: Newton, system: Forced, t, q, p, ch, guess) -> tuple[Any, StepStatus]:
    """The momentum of a kick whose force is at the new momentum (B's, SV's first):
    explicit for a separable H and a force without p; otherwise by Newton from
    ``guess``."""

    base = system.base
    if isinstance(base, Separable) and not system.momentum_dependent:
        p1 = (p - ch * base.potential_gradient(q)) + ch * _total(system, t, q, p)
        return p1, ok_status(p1)
    return implicit_half(solver, _kick_equation, guess, (system, t, q, p, ch))


def symplectic_euler(solver: Newton, variant: str, system: Forced, x, h):

    base = system.base
    assert isinstance(base, Canonical)
    (q, p), t, *_ = x
    t1 = t + h
    if variant == "A":
        if isinstance(base, Separable):
            dq = h * base.kinetic_gradient(p)
            q1 = q + dq
            st = ok_status(q1)
            p1 = (p - h * base.potential_gradient(q1)) + h * _total(system, t1, q1, p)
        else:
            guess = q + h * base.gradient(q, p)[1]
            q1, st = implicit_half(solver, position_update, guess, (base, q, p, h))
            dq = q1 - q
            p1 = (p - h * base.gradient(q1, p)[0]) + h * _total(system, t1, q1, p)
        out = _advance(system, x, q1, p1, dq, (None, (1.0, t1, q1, p)), h, t1)
        return out, combine([st, ok_status(p1)])
    if isinstance(base, Separable):
        guess = p - h * base.potential_gradient(q)
    else:
        guess = p - h * base.gradient(q, p)[0]
    guess = guess + h * _total(system, t, q, p)
    p1, st = _kick(solver, system, t, q, p, h, guess)
    if isinstance(base, Separable):
        dq = h * base.kinetic_gradient(p1)
    else:
        dq = h * base.gradient(q, p1)[1]
    q1 = q + dq
    out = _advance(system, x, q1, p1, dq, ((1.0, t, q, p1), None), h, t1)
    return out, combine([st, ok_status(q1)])


def stormer_verlet(solver: Newton, system: Forced, x, h):

    base = system.base
    assert isinstance(base, Canonical)
    (q, p), t, *_ = x
    t1 = t + h
    separable = isinstance(base, Separable)
    if separable:
        guess = (p - (0.5 * h) * base.potential_gradient(q)) + (0.5 * h) * _total(system, t, q, p)
    else:
        guess = p  # the conservative map's own start
    half, s1 = _kick(solver, system, t, q, p, 0.5 * h, guess)
    if separable:
        dq = h * base.kinetic_gradient(half)
        q1, s2 = q + dq, ok_status(half)
        p1 = (half - (0.5 * h) * base.potential_gradient(q1)) + (0.5 * h) * _total(
            system, t1, q1, half
        )
    else:
        v0 = base.gradient(q, half)[1]
        q1, s2 = implicit_half(solver, position_half, q + h * v0, (base, q, half, h, v0))
        dq = q1 - q
        p1 = (half - (0.5 * h) * base.gradient(q1, half)[0]) + (0.5 * h) * _total(
            system, t1, q1, half
        )
    ends = ((0.5, t, q, half), (0.5, t1, q1, half))
    return _advance(system, x, q1, p1, dq, ends, h, t1), combine([s1, s2, ok_status(p1)])


# -- rigid bodies: the forced Lie group variational map --------------------------------
def _rates(system: Forced, t, xb):
    """(F, R∇H, ∇H) in the coordinates z at one state of the base system."""
    z = system.base.coordinates(xb)
    g = system.energy_gradient(z)
    return system.generalized_force(t, xb), matvec(system.damping(xb), g), g


def _body_momenta(base: Any, xb):
    """The momenta (p, Π) of one state of the bodies, flattened (Π alone when the centres
    are fixed)."""
    _, p, _, Pi = base.parts(xb)
    return Pi.reshape(-1) if p is None else jnp.concatenate([p.reshape(-1), Pi.reshape(-1)])


def _with_momenta(base: Any, xb, u):
    """``xb`` with the momenta ``u`` (``_body_momenta``'s layout)."""
    pos, p, R, Pi = base.parts(xb)
    if p is None:
        return base.join(pos, None, R, u.reshape(Pi.shape))
    return base.join(pos, u[: p.size].reshape(p.shape), R, u[p.size :].reshape(Pi.shape))


def _body_kick(system: Forced, kicked, impulse):
    """``kicked`` (the potential's kick) with the force's impulse (in the coordinates z)
    added to its momenta, after the conservative update: a zero force leaves it as it
    is, bit for bit."""
    base: Any = system.base
    pos, p, R, Pi = base.parts(kicked)
    _, fp, _, fPi = base.parts(base.from_coordinates(impulse))
    return base.join(pos, None if p is None else p + fp, R, Pi + fPi)


def _body_kick_equation(u, args):
    """The momenta after a kick of c(F − R∇H) taken at those momenta (the first kick of
    the forced map, implicit where the force depends on the momenta)."""
    system, t, kicked, c = args
    F, Rg, _ = _rates(system, t, _with_momenta(system.base, kicked, u))
    return _body_momenta(system.base, _body_kick(system, kicked, c * (F - Rg)))


def _trapezoid(c, start, end):
    """The work and dissipation of a step with kicks of c = h/2 at its two ends, each
    (F, R∇H, ∇H) at that kick's momenta: c(∇H·F)₀ + c(∇H·F)₁, c(∇HᵀR∇H)₀ + …₁."""
    (F0, Rg0, g0), (F1, Rg1, g1) = start, end
    return c * dot(g0, F0) + c * dot(g1, F1), c * dot(g0, Rg0) + c * dot(g1, Rg1)


def moves_positions(system: Forced) -> bool:
    """Whether the force or dissipation has entries on the centres' coordinates x of
    ``RigidBodies`` (ẋ = p/m + F_x), read at the example state at t = 0 (False where
    the system's numbers are traced and cannot be read: the step then fails with
    ``Reason.UNSUPPORTED`` where such a force appears)."""
    base: Any = system.base
    if "x" not in [name for name, _ in base.state_fields]:
        return False
    if traced((system.params, base.inertia, base.mass)):
        return False
    try:
        x = jax.tree.map(jnp.asarray, base.example_state())
        F = np.asarray(system.generalized_force(jnp.zeros(()), x))
        R = np.asarray(system.damping(x))
    except jax.errors.JAXTypeError:  # a value traced inside the user's function
        return False
    mask = field_mask(base, x, ("x",))
    return bool(np.any(F[mask] != 0) or np.any(R[mask] != 0))


def lie_group_variational(integrator, system: Forced, x, h):
    r"""The discrete Lagrange–d'Alembert version of Lee, Leok and McClamroch's map
    (``integrators.lie_group_variational``): the forces F and torques (given in the
    coordinates z of ``RigidBodies``, on p and Π) and the dissipation enter as impulses
    (h/2)(F − R∇H) at the two ends of the step, added to the potential's half kicks,

        (p, Π)_{k+½} = kick_{h/2}(x_k) + (h/2)(F − R∇H)(t_k, x_k, R_k, (p, Π)_{k+½}),
        free step of h (the centres drift, each body its Moser–Veselov step),
        (p, Π)_{k+1} = kick_{h/2}(x') + (h/2)(F − R∇H)(t_{k+1}, x'),

    where x' is the state after the free step.  The first kick is implicit (Newton) only
    where the force depends on the momenta or there is a dissipation, the second is
    explicit; the map is symmetric and of order 2, and with a zero force it takes the
    conservative map's operations (the same bits where XLA compiles the two programs
    alike; within an ulp a step where it fuses them otherwise).  Each kick changes a
    momentum J of the potential's symmetry (P, L) by exactly its impulse
    (h/2)∇J·(F − R∇H) (the free step and the potential's kicks keep J), so the
    balances J − I_J are kept to round-off (forced discrete Noether); the work and the
    dissipation of a step are the trapezoidal sums (h/2)∇H·F and (h/2)∇HᵀR∇H at the two
    kicks' momenta, and the energy balance holds to O(h²)."""

    base = system.base
    assert isinstance(base, BodiesInPotential)
    xb, t, work, dissipated, impulses = system.split(x)
    c = 0.5 * h
    t1 = t + h
    kicked = base.kick(xb, c)
    F, Rg, _ = _rates(system, t, xb)
    half = _body_kick(system, kicked, c * (F - Rg))
    if system.momentum_dependent:
        u, s1 = implicit_half(integrator.solver, _body_kick_equation,
                              _body_momenta(base, half), (system, t, kicked, c))  # fmt: skip
        half = _with_momenta(base, kicked, u)
    else:
        s1 = ok_status(_body_momenta(base, half))
    moved, s2 = integrator.free_step(base, half, h)
    F1, Rg1, g1 = _rates(system, t1, moved)
    out = _body_kick(system, base.kick(moved, c), c * (F1 - Rg1))
    F0, Rg0, g0 = _rates(system, t, half)
    # a force on x or R cannot be applied by the kicks: the step fails, never drops it
    mask = jnp.asarray(field_mask(base, xb, ("x", "R")))
    stray = jnp.max(jnp.where(mask, jnp.maximum(jnp.abs(F0 - Rg0), jnp.abs(F1 - Rg1)), 0.0))
    s3 = status(~(stray > 0), stray, Reason.UNSUPPORTED)  # NaN: the state's own failure
    w, d = _trapezoid(c, (F0, Rg0, g0), (F1, Rg1, g1))
    z0, z1 = base.coordinates(half), base.coordinates(moved)
    gained = [
        c * dot(J0, F0 - Rg0) + c * dot(J1, F1 - Rg1)
        for J0, J1 in zip(system.momentum_gradients(z0), system.momentum_gradients(z1), strict=True)
    ]
    impulses = tuple(i + g for i, g in zip(impulses, gained, strict=True))
    new = system.join(out, t1, work + w, dissipated + d, impulses)
    states = [s1, s2, s3, ok_status(_body_momenta(base, out))]
    return system.advance_clock(x, new, h), combine(states)


# -- the Euler top: the forced Moser–Veselov map ------------------------------------------
def _top_kick_equation(u, args):
    """m + c(F − R∇H) at the new momentum u (the first kick, implicit where the torque
    reads m or there is a dissipation)."""
    system, t, m, c = args
    F, Rg, _ = _rates(system, t, u)
    return m + c * (F - Rg)


def moser_veselov(integrator, system: Forced, x, h):
    r"""The discrete Lagrange–d'Alembert version of the Moser–Veselov map of the Euler
    top (``DiscreteLagrangian()`` of order 2 on ``Forced(EulerTop(...), torque,
    dissipation)``), as the rigid bodies' ``lie_group_variational`` above: the torques
    F(t, m) and the dissipation R(m) enter as impulses (h/2)(F − R∇H) at the two ends of
    the free Moser–Veselov step,

        m_{k+½} = m_k + (h/2)(F − R∇H)(t_k, m_{k+½}),
        m' = the Moser–Veselov step of h from m_{k+½},
        m_{k+1} = m' + (h/2)(F − R∇H)(t_{k+1}, m'),

    the first by Newton where the torque reads m or there is a dissipation.  Symmetric, of
    order 2; the work and dissipation of a step are the trapezoidal sums (h/2)∇H·F and
    (h/2)∇HᵀR∇H at the two kicks' momenta (the energy balance to O(h²)); with a zero
    torque the conservative map's operations.  The same map as ``LieGroupVariational()``
    on ``Forced(RigidBodies(inertia))`` with the centres fixed, without the attitude."""

    m, t, work, dissipated, impulses = system.split(x)
    c = 0.5 * h
    t1 = t + h
    F, Rg, _ = _rates(system, t, m)
    half = m + c * (F - Rg)
    if system.momentum_dependent:
        half, s1 = implicit_half(integrator.solver, _top_kick_equation, half,
                                 (system, t, m, c))  # fmt: skip
    else:
        s1 = ok_status(half)
    moved, _, s2 = integrator.free_step(system.base, half, h)
    F1, Rg1, g1 = _rates(system, t1, moved)
    out = moved + c * (F1 - Rg1)
    w, d = _trapezoid(c, _rates(system, t, half), (F1, Rg1, g1))
    new = system.join(out, t1, work + w, dissipated + d, impulses)
    return system.advance_clock(x, new, h), combine([s1, s2, ok_status(out)])
