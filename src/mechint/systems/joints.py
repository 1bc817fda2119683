r"""Spherical joints between rigid bodies: ``RigidBodies(..., joints=[Joint(...), ...])``.

Sources: S. Leyendecker, J. E. Marsden, M. Ortiz, *Variational integrators for
constrained dynamical systems*, ZAMM 88 (2008) 677; T. Lee, M. Leok, N. H. McClamroch,
CMAME 196 (2007) 2907 (the LGVI); docs/constraints.md.

A joint holds the point s_a of body a (in a's body frame) on the point s_b of body b, or
on a fixed point c of space (b = ``"ground"``, site_b = c):

    g_j(x, R) = x_a + R_a s_a − (x_b + R_b s_b) = 0        (or x_a + R_a s_a − c = 0),

three equations per joint.  With the bodies' velocities u_b = (v_b, Ω_b), v = p/m and
Ω = 𝕁⁻¹Π, its rate is linear in u:

    ġ_j = v_a − R_a ŝ_a Ω_a − (v_b − R_b ŝ_b Ω_b) = (K u)_j,

and multipliers λ (one force per joint) act through Kᵀ: the force −λ_j at body a's
site (ṗ_a gains −λ_j, Π̇_a gains −s_a × R_aᵀλ_j) and +λ_j at body b's.  The equations

    ẋ = p/m,  ṗ = −∂V/∂x − K_xᵀλ,  Ṙ = RΩ̂,  Π̇ = Π × Ω + M − K_Ωᵀλ

keep T*Q = {g = 0, K u = 0}.  Differentiating ġ once more gives λ at every state of T*Q
(index 1), with 𝕄 = diag(m 𝟙, 𝕁) the bodies' mass:

    (K 𝕄⁻¹ Kᵀ) λ = d/dt (K u) along the field without the joints        (``multipliers``),

so ``RigidBodies.vector_field`` of a jointed system is this field (DOP853's reference).
Joints are internal forces: between two bodies they keep the total linear and angular
momenta; a joint to the ground keeps neither, save the angular momentum about a ground
point at the origin (``RigidBodies`` checks its declarations against the joints).

The constrained Lie group variational map (``integrators.LieGroupVariational``) is
RATTLE in these variables: the multipliers' impulse −(h/2)Kᵀλ at the first half kick,
solved by Newton (the exact Jacobian through each body's Moser–Veselov solve) so that
g = 0 after the free step, and the second half kick's projection onto K u = 0 in the
metric 𝕄.  In matrix variables (q = (x, R), P_R = Ṙ J_d, the constraints RᵀR = 1 joined
to g) that is RATTLE on T*(R³ × R^{3×3})ᴺ, the discrete null-space scheme of Leyendecker,
Marsden and Ortiz (its directors are R's columns): ``MatrixBodies`` runs it so by
``integrators.Rattle``, and the two agree to round-off.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from mechint._validate import real_array, traced
from mechint.errors import InputError
from mechint.lie import so3
from mechint.systems.constrained import manifold_tolerance

if TYPE_CHECKING:
    from mechint.systems.rigid_bodies import RigidBodies

GROUND = "ground"
# K is a dense (3J × 6N) matrix and K𝕄⁻¹Kᵀ is solved densely at every step
MOST_JOINTS = 200


@dataclasses.dataclass(frozen=True)
class Joint:
    """A spherical joint: body ``a``'s point ``site_a`` (its body frame) held on body
    ``b``'s point ``site_b``, or, with ``b="ground"``, on the fixed point ``site_b`` of
    space.  Bodies are numbered from 0 in the order of ``RigidBodies``' inertia."""

    a: int
    site_a: tuple[float, float, float]
    b: int | str
    site_b: tuple[float, float, float]

    def __post_init__(self):
        for name in ("site_a", "site_b"):
            value = real_array(f"joints ({name})", getattr(self, name))
            if value.shape != (3,) or not np.all(np.isfinite(value)):
                raise InputError(
                    f"joints ({name})",
                    f"must be 3 finite numbers, got {getattr(self, name)!r}",
                    "give the point as (x, y, z)",
                )
            object.__setattr__(self, name, tuple(float(v) for v in value))
        if not _index(self.a):
            raise InputError("joints (a)", f"must be a body's index (an integer), got {self.a!r}")
        if not (_index(self.b) or self.b == GROUND):
            raise InputError("joints (b)", f'must be a body\'s index or "ground", got {self.b!r}')

    @property
    def grounded(self) -> bool:
        return self.b == GROUND


def _index(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def validate(joints, bodies: int, translating: bool) -> tuple[Joint, ...]:
    """The joints as a tuple of ``Joint`` (also from (a, site_a, b, site_b) tuples),
    each naming bodies that exist, no joint holding a body to itself."""
    if joints is None:
        return ()
    if isinstance(joints, Joint) or not isinstance(joints, list | tuple):
        raise InputError("joints", f"must be a list of Joint, got {type(joints).__name__}")
    out = []
    for k, joint in enumerate(joints):
        if not isinstance(joint, Joint):
            if not (isinstance(joint, list | tuple) and len(joint) == 4):
                raise InputError(
                    f"joints[{k}]",
                    f"must be a Joint(a, site_a, b, site_b), got {joint!r}",
                )
            joint = Joint(*joint)
        for side in ("a", "b"):
            index = getattr(joint, side)
            if index != GROUND and not 0 <= int(index) < bodies:
                raise InputError(
                    f"joints[{k}] ({side})",
                    f"there is no body {index}: this system has {bodies} (0 to {bodies - 1})",
                )
        if joint.a == joint.b:
            raise InputError(f"joints[{k}]", f"joins body {joint.a} to itself")
        out.append(joint)
    if out and not translating:
        raise InputError(
            "joints",
            "the centres are fixed (mass=None): a joint needs bodies that move",
            "give the masses",
        )
    if len(out) > MOST_JOINTS:
        raise InputError("joints", f"at most {MOST_JOINTS}, got {len(out)}")
    return tuple(out)


def check_declarations(joints: tuple[Joint, ...], translation: bool, rotation: bool) -> None:
    """Refuse declared momenta that the joints to the ground break."""
    grounded = [j for j in joints if j.grounded]
    if translation and grounded:
        raise InputError(
            "translation_invariant",
            "a joint to the ground holds the bodies: the total linear momentum is not kept",
            "leave translation_invariant out",
        )
    if rotation and any(any(j.site_b) for j in grounded):
        raise InputError(
            "rotation_invariant",
            "a joint holds a body to a ground point other than the origin: the angular "
            "momentum about the origin is not kept",
            "put the ground point at the origin, or leave rotation_invariant out",
        )


# -- one state's pieces (the arrays of one state, no batch axes) ---------------------------
def _tables(system: RigidBodies, dtype):
    """(a, b, ground, s_a, s_b): the bodies' indices (b = 0 at the ground), a mask of the
    joints to the ground, and the sites (s_b the ground point there), (J,) and (J, 3)."""
    joints = system.joints
    a = np.array([j.a for j in joints])
    ground = np.array([j.grounded for j in joints])
    b = np.array([0 if j.grounded else j.b for j in joints])
    sa = jnp.asarray(np.array([j.site_a for j in joints]), dtype)
    sb = jnp.asarray(np.array([j.site_b for j in joints]), dtype)
    return a, b, ground, sa, sb


def residual(system: RigidBodies, pos, R):
    """g of one state, (3J,)."""
    a, b, ground, sa, sb = _tables(system, R.dtype)
    pa = pos[a] + jnp.einsum("jkl,jl->jk", R[a], sa)
    pb = jnp.where(ground[:, None], sb, pos[b] + jnp.einsum("jkl,jl->jk", R[b], sb))
    return (pa - pb).reshape(-1)


def jacobian(system: RigidBodies, R):
    """K of one state, (3J, 6N): ġ = K u with u = (v_b, Ω_b) per body, raveled."""
    a, b, ground, sa, sb = _tables(system, R.dtype)
    n = system.bodies
    eye = jnp.broadcast_to(jnp.eye(3, dtype=R.dtype), (len(a), 3, 3))

    def block(R_, s):  # (J, 3, 6): [𝟙, −R ŝ]
        return jnp.concatenate([eye, -R_ @ so3.hat(s)], axis=-1)

    on_a = jnp.asarray(np.eye(n)[a], R.dtype)
    on_b = jnp.asarray(np.eye(n)[b] * ~ground[:, None], R.dtype)
    K = jnp.einsum("jn,jkc->jknc", on_a, block(R[a], sa))
    K = K - jnp.einsum("jn,jkc->jknc", on_b, block(R[b], sb))
    return K.reshape(3 * len(a), 6 * n)


def velocities(system: RigidBodies, p, Pi):
    """u = (p/m, 𝕁⁻¹Π) per body, raveled (6N,)."""
    m = jnp.asarray(system.mass, p.dtype)[:, None]
    return jnp.concatenate([p / m, system.angular_velocity(Pi)], axis=-1).reshape(-1)


def inverse_mass(system: RigidBodies, rows):
    """rows (k, 6N) times 𝕄⁻¹ (symmetric): each row's (force, torque) per body turned
    into (force/m, 𝕁⁻¹ torque)."""
    w = rows.reshape(rows.shape[0], system.bodies, 6)
    m = jnp.asarray(system.mass, rows.dtype)[:, None]
    return jnp.concatenate([w[..., :3] / m, system.angular_velocity(w[..., 3:])], -1).reshape(
        rows.shape
    )


def impulse(system: RigidBodies, p, Pi, K, nu):
    """(p, Π) after the impulse −Kᵀν (ν: one impulse per joint, (3J,))."""
    f = (K.T @ nu).reshape(system.bodies, 6)
    return p - f[:, :3], Pi - f[:, 3:]


def project_momenta(system: RigidBodies, p, Pi, K):
    """(p, Π) with K u = 0 (K the joints' ``jacobian`` at the state): the impulse −Kᵀμ,
    (K𝕄⁻¹Kᵀ) μ = K u (the nearest in the metric 𝕄⁻¹ of the momenta; the second half of
    RATTLE)."""
    mu = jnp.linalg.solve(K @ inverse_mass(system, K).T, K @ velocities(system, p, Pi))
    return impulse(system, p, Pi, K, mu)


def multipliers(system: RigidBodies, state, free_field):
    """λ at one state of T*Q (the module docstring): ``free_field`` is the field of the
    bodies without the joints at that state."""

    def rate(y):
        _, p, R, Pi = system.parts(y)
        return jacobian(system, R) @ velocities(system, p, Pi)

    rhs = jax.jvp(rate, (state,), (free_field,))[1]
    K = jacobian(system, system.parts(state)[2])
    return jnp.linalg.solve(K @ inverse_mass(system, K).T, rhs)


def position_scales(system: RigidBodies, pos, R):
    """The size of the terms of each g_i, (3J,): |x_a| + |s_a| + |x_b| + |s_b|."""
    a, b, ground, sa, sb = _tables(system, R.dtype)
    norm = jnp.abs(pos).max(axis=-1)
    size_a = norm[a] + jnp.abs(sa).max(axis=-1)
    size_b = jnp.where(ground, 0.0, norm[b]) + jnp.abs(sb).max(axis=-1)
    return jnp.repeat(size_a + size_b, 3)


def scales(system: RigidBodies, pos, p, R, Pi, K):
    """The size of the terms of each g_i and of its rate, (3J,) each
    (``position_scales``, and |K| (|u| + √(|a| ℓ)) for the rates, a the accelerations
    the potential gives and ℓ each body's size (its distance from the origin and its
    sites): a chain at rest has rates that are rounding of the speeds its forces give);
    K the joints' ``jacobian`` at the state."""
    a, b, ground, sa, sb = _tables(system, R.dtype)
    norm = jnp.abs(pos).max(axis=-1)
    sg = position_scales(system, pos, R)
    force, M = system.forces(pos, R)
    acc = inverse_mass(system, jnp.concatenate([force, M], axis=-1).reshape(1, -1))[0]
    reach = jnp.zeros(system.bodies, R.dtype).at[a].max(jnp.abs(sa).max(axis=-1))
    reach = reach.at[b].max(jnp.where(ground, 0.0, jnp.abs(sb).max(axis=-1)))
    ell = jnp.repeat(norm + reach, 6)
    sv = jnp.abs(K) @ (jnp.abs(velocities(system, p, Pi)) + jnp.sqrt(jnp.abs(acc) * ell))
    return sg, sv


def state_residuals(system: RigidBodies, state, u_hat=None):
    """(g, its scale, ġ, its scale) of one state, from one K.  ``u_hat``, the velocities
    before a projection of the momenta, joins the rates' scale: its kicks are the terms
    the projected momenta sum, whose rounding remains."""
    pos, p, R, Pi = system.parts(state)
    K = jacobian(system, R)
    sg, sv = scales(system, pos, p, R, Pi, K)
    if u_hat is not None:
        sv = jnp.maximum(sv, jnp.abs(K) @ jnp.abs(u_hat))
    return residual(system, pos, R), sg, K @ velocities(system, p, Pi), sv


def worst(g, sg, g_dot, sv):
    """The larger relative residual (NaN-safe: inf)."""
    tiny = jnp.finfo(g.dtype).tiny
    out = jnp.maximum(
        jnp.max(jnp.abs(g) / jnp.maximum(sg, tiny)),
        jnp.max(jnp.abs(g_dot) / jnp.maximum(sv, tiny)),
    )
    return jnp.where(jnp.isfinite(out), out, jnp.inf)


_one_residuals = jax.jit(state_residuals)
_batch_residuals = jax.jit(jax.vmap(state_residuals, in_axes=(None, 0)))


def check_state(system: RigidBodies, state, name: str, dtype=None) -> None:
    """Refuse a state (or batch) off T*Q, with its residuals, judged at the precision
    ``dtype`` it was given in (a traced state or system is the caller's: it cannot be
    inspected)."""
    if traced((system, state)):
        return
    parts = system.parts(state)
    lead = parts[3].shape[:-2]
    residuals = _batch_residuals if lead else _one_residuals  # one compiled program each
    g, sg, g_dot, sv = jax.tree.map(np.asarray, residuals(system, state))
    tol = manifold_tolerance(np.asarray(parts[2]).dtype if dtype is None else dtype)
    rel_g = np.max(np.abs(g) / np.maximum(sg, np.finfo(float).tiny))
    rel_v = np.max(np.abs(g_dot) / np.maximum(sv, np.finfo(float).tiny))
    if not (rel_g <= tol and rel_v <= tol):
        raise InputError(
            name,
            f"is off the joints' manifold: max |g| = {np.max(np.abs(g)):.3g} (relative "
            f"{rel_g:.3g}), max |ġ| = {np.max(np.abs(g_dot)):.3g} (relative {rel_v:.3g}), "
            f"the tolerance {tol:.3g}",
            "place each joint's two sites together with velocities that keep them so "
            "(system.project(x0) moves a state there)",
        )


def project(system: RigidBodies, state, iterations: int = 50):
    """One state moved onto T*Q: Gauss–Newton steps of least 𝕄-norm on the positions
    (x ← x + δv, R ← R exp(δΩ̂), δu = −𝕄⁻¹Kᵀ(K𝕄⁻¹Kᵀ)⁻¹ g) to round-off, then the
    momenta projected (``project_momenta``)."""
    pos, p, R, Pi = system.parts(state)
    clock = system.clock(state)

    def body(_, carry):
        pos, R = carry
        K = jacobian(system, R)
        WK = inverse_mass(system, K)
        du = -(WK.T @ jnp.linalg.solve(K @ WK.T, residual(system, pos, R))).reshape(-1, 6)
        return pos + du[:, :3], R @ so3.exp(du[:, 3:])

    pos, R = jax.lax.fori_loop(0, iterations, body, (pos, R))
    p, Pi = project_momenta(system, p, Pi, jacobian(system, R))
    return system.join(pos, p, R, Pi, clock)


def impulse_scale(system: RigidBodies, pos, R, K, h):
    """The impulse that would move the bodies by their own size in one step: Newton's
    updates of the multipliers' impulses are judged against it where they are small."""
    *_, sa, sb = _tables(system, R.dtype)
    size = jnp.maximum(jnp.max(jnp.abs(pos)), jnp.max(jnp.abs(jnp.concatenate([sa, sb]))))
    WK = inverse_mass(system, K)
    return size / (jnp.abs(h) * jnp.maximum(jnp.max(jnp.abs(WK)), jnp.finfo(R.dtype).tiny))


def projected_checked(system: RigidBodies, state, reach: bool = True):
    """``projected`` as NumPy arrays, refused (``InputError`` naming ``joints``) where it
    is not finite (redundant joints: K M⁻¹ Kᵀ singular) or, with ``reach``, does not end
    on the joints' manifold (joints no state meets: a closed loop too short to close).
    Without ``reach``, a state far from the joints is moved towards them
    (``RigidBodies.example_state``: a generic state near the joints)."""
    out = jax.tree.map(np.asarray, projected(system, state))
    fix = ("joints that some placement of the bodies meets, none of them redundant (a loop "
           "long enough to close, each pair of sites joined once)")  # fmt: skip
    if not all(np.all(np.isfinite(a)) for a in jax.tree.leaves(out)):
        raise InputError("joints", "cannot be met: projected onto them, a state is not "
                         "finite (redundant joints, or a loop that cannot close)",
                         fix)  # fmt: skip
    if reach:
        try:
            check_state(system, out, "joints")
        except InputError as exc:
            raise InputError("joints", f"cannot be met from this state: projected onto "
                             f"them, it {exc.problem}", fix) from None  # fmt: skip
    return out


@jax.jit
def projected(system: RigidBodies, state):
    """``project`` over the leading axes of a validated state or batch
    (``RigidBodies.project``): one compiled program per system structure (bodies,
    joints, their sites) and shape, the system's numbers traced, not one per call."""
    return system._per_state(partial(project, system), state)
