r"""Potentials of rigid bodies as plain JAX functions, to combine into the ``potential`` of
``systems.RigidBodies`` (docs/math.md §9).

Every function takes one state, not a batch: positions ``x`` (N, 3) of the centres of
mass, attitudes ``R`` (N, 3, 3) (body → space), and its own constants; each returns a
scalar energy.  Sum them in a function of your own, e.g.

    def V(x, R, params):
        return potentials.lennard_jones(x, R, sites, params["eps"], params["sigma"]) + \
               potentials.coulomb(x, R, sites, charges)

Constants given through ``params`` are leaves of the system (differentiable, and a new
value reuses the compiled run); constants closed over are fixed.

**Units.**  None is assumed: every function is written in one consistent system of
units of your choosing, lengths L, masses M and times T (those of ``h``), and returns an
energy in M L²/T².  So μ (``point_mass``, ``gravity_gradient``) is in L³/T², inertia
tensors in M L², a weight or χ in M L/T² (× L for χ), ε in M L²/T² and σ in L
(``lennard_jones``), k q_i q_j in M L³/T² (``coulomb``), and G m_i m_j in M L³/T²
(``mutual_gravity``).  In km, kg and s, Earth's μ is 398600.4418 km³/s² and an inertia
of 100 kg m² is 1e-4 kg km².

- ``fixed_point_gravity(R, chi, up)``: uniform gravity on bodies turning about fixed
  points (the heavy top; χ_b = weight × the centre of mass in body b's frame):
  V = Σ_b up·R_b χ_b.  With up = e_z, V = χ·γ, γ = Rᵀe_z: ``systems.HeavyTop``'s.
- ``uniform_gravity(x, weight, up)``: V = Σ_b weight_b up·x_b.
- ``point_mass(x, mu, mass)``: a point-mass primary at the origin, V = −Σ_b μ m_b/|x_b|
  (the orbit of coupled orbit–attitude motion).
- ``gravity_gradient(x, R, mu, inertia)``: MacCullagh's second-order term of the same
  primary, V₂ = −Σ_b μ/(2|x_b|³) (tr 𝕁_b − 3 r̂ᵀ R_b 𝕁_b R_bᵀ r̂), r̂ = x_b/|x_b|:
  its torque 3μ/|x|³ (R_bᵀr̂) × 𝕁_b(R_bᵀr̂) turns the axis of least inertia to the
  primary.  ``point_mass + gravity_gradient`` is the restricted full two-body problem.
- ``site_positions(x, R, sites)``: the space positions x_b + R_b s_bi of points fixed in
  the bodies (``sites`` (S, 3) for all bodies alike, or (N, S, 3)).
- ``lennard_jones``, ``coulomb``, ``mutual_gravity``: sums over the pairs of sites on
  different bodies (never within one body: a rigid body's internal energy is constant)
  of 4ε((σ/r)¹² − (σ/r)⁶) (per-site ε, σ mixed by Lorentz–Berthelot: √(ε_iε_j),
  (σ_i + σ_j)/2), k q_i q_j / r, and −G m_i m_j / r.  Free space, no cut-off: every
  pair counts (O((NS)²) work per evaluation), except the sites whose ε, q or m is 0
  (known, not traced), which take part in no pair of that sum.  ``pair_sum`` is the
  sum of any such pair energy, its forces summed over the pairs' differences.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "coulomb",
    "fixed_point_gravity",
    "gravity_gradient",
    "lennard_jones",
    "mutual_gravity",
    "pair_sum",
    "point_mass",
    "site_positions",
    "uniform_gravity",
]

_UP = (0.0, 0.0, 1.0)


def fixed_point_gravity(R, chi, up=_UP):
    """Σ_b up·R_b χ_b: gravity on bodies turning about fixed points (``chi`` (N, 3) or
    (3,): weight × the centre of mass in the body frame; ``up``: the unit vertical).
    Units: χ in M L²/T² (a weight M L/T² times a length); V in M L²/T²."""
    chi = jnp.broadcast_to(jnp.asarray(chi, R.dtype), R.shape[:-1])
    return jnp.sum(jnp.asarray(up, R.dtype) * jnp.einsum("nij,nj->ni", R, chi))


def uniform_gravity(x, weight, up=_UP):
    """Σ_b weight_b up·x_b (``weight``: m_b g, one per body or one for all).  Units:
    weight in M L/T², x in L; V in M L²/T²."""
    weight = jnp.broadcast_to(jnp.asarray(weight, x.dtype), x.shape[:-1])
    return jnp.sum(weight * (x @ jnp.asarray(up, x.dtype)))


def _norm(x):
    return jnp.sqrt(jnp.sum(x * x, axis=-1))


def point_mass(x, mu, mass):
    """−Σ_b μ m_b/|x_b|: a point-mass primary (gravitational parameter μ = GM) at the
    origin.  Units: μ in L³/T², m in M, x in L; V in M L²/T²."""
    mass = jnp.broadcast_to(jnp.asarray(mass, x.dtype), x.shape[:-1])
    return -mu * jnp.sum(mass / _norm(x))


def _tensors(inertia, dtype):
    """Inertia tensors (N, 3, 3) from tensors or principal moments (N, 3) / (3,)."""
    inertia = jnp.asarray(inertia, dtype)
    if inertia.shape[-2:] == (3, 3) and inertia.ndim == 3:
        return inertia
    return jnp.atleast_2d(inertia)[..., :, None] * jnp.eye(3, dtype=dtype)


def gravity_gradient(x, R, mu, inertia):
    """MacCullagh's term −Σ_b μ/(2|x_b|³)(tr 𝕁_b − 3 r̂ᵀ R_b 𝕁_b R_bᵀ r̂) of a point-mass
    primary at the origin (``inertia``: tensors (N, 3, 3) or principal moments (N, 3)
    in the body frames).  Units: μ in L³/T², inertia in M L², x in L; V in M L²/T²."""
    J = _tensors(inertia, x.dtype)
    r = _norm(x)
    u = jnp.einsum("nji,nj->ni", R, x / r[:, None])  # r̂ in each body's frame
    trace = jnp.trace(J, axis1=-2, axis2=-1)
    along = jnp.einsum("ni,nij,nj->n", u, J, u)
    return -jnp.sum(mu / (2.0 * r**3) * (trace - 3.0 * along))


def site_positions(x, R, sites):
    """x_b + R_b s_bi: the space positions (N, S, 3) of points fixed in the bodies
    (``sites`` (S, 3), the same in every body, or (N, S, 3), in the body frames,
    relative to the centres of mass)."""
    sites = jnp.broadcast_to(jnp.asarray(sites, R.dtype), (R.shape[0], *jnp.shape(sites)[-2:]))
    return x[:, None, :] + jnp.einsum("nij,nsj->nsi", R, sites)


# A pair sum over at most this many (site, site) entries is evaluated as one (NS, NS)
# array; a larger one in blocks of rows of about this many entries, so that its memory
# grows like NS, not (NS)²: 10⁴ bodies of one site each took 6.4 GB as one array.
_PAIRS_AT_ONCE = 2**20


def pair_sum(x, R, sites, energy: Callable, *values, vanishes_with: int | None = None):
    """Σ over pairs (i, j) of sites on different bodies of ``energy(r², a_i, a_j, ...)``
    for the per-site ``values`` a (each (S,) or (N, S)); ``energy`` receives each value
    as the pair (a_i, a_j) of arrays that broadcast against r².  Pairs of one body are
    left out and never evaluated at r = 0 (their gradient stays finite).  Up to 2^20
    (site, site) entries ((NS)², about 1000 sites) at once; more in blocks of rows, with
    memory proportional to NS (and the sum's rounding in another order).

    ``vanishes_with`` (an index into ``values``): every pair of a site where that value
    is 0 in every body has zero energy, so those sites are left out where the values
    are known (not traced), as a water model's hydrogens are from its Lennard-Jones sum.

    Derivatives: the gradient by the sites' positions is formed from G = ∂E/∂r² as
    2 Σ_j (G_ij + G_ji)(p_i − p_j), sums over the pairs' differences (not products with
    the absolute positions, which would lose translation invariance far from the
    origin), by a derivative rule of its own rather than reverse mode through the sum (a
    64-water cluster's forces and torques: 0.22 ms on the 2-core CPU, 2026-12-07,
    against 0.35 ms for JAX MD's); by the values, from ``energy``'s own derivatives.
    Both are differentiable again."""
    P = site_positions(x, R, sites)
    n, s = P.shape[0], P.shape[1]
    per_site = [jnp.broadcast_to(jnp.asarray(v, R.dtype), (n, s)) for v in values]
    if vanishes_with is not None:
        keep = _active_sites(values[vanishes_with], (n, s))
        if keep is not None:
            P, per_site, s = P[:, keep], [v[:, keep] for v in per_site], len(keep)
    m = n * s
    if m == 0:
        return jnp.zeros((), R.dtype)
    body = jnp.asarray(np.repeat(np.arange(n), s))
    return _pairs(energy, P.reshape(m, 3), body, tuple(v.reshape(m) for v in per_site))


def _active_sites(value, shape) -> np.ndarray | None:
    """The indices of the sites where ``value`` ((S,) or (N, S), ``shape`` (N, S)) is not
    0 in some body; None where it is traced (every site then takes part)."""
    try:
        known = np.broadcast_to(np.asarray(value), shape)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None
    return np.flatnonzero(np.any(known != 0, axis=0))


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _pairs(energy, flat, body, values):
    """The pair sum of the sites ``flat`` (m, 3) of bodies ``body`` (m,) with ``values``
    (each (m,)); its tangent from ``_over_rows``' gradients."""
    return _over_rows(energy, flat, body, values, False, ())[0]


def _pairs_jvp(energy, primals, tangents):
    flat, body, values = primals
    dflat, _, dvalues = tangents
    zero = jax.custom_derivatives.SymbolicZero
    moving = not isinstance(dflat, zero)
    chosen = tuple(i for i, dv in enumerate(dvalues) if not isinstance(dv, zero))
    E, F, A = _over_rows(energy, flat, body, values, moving, chosen)
    dE = jnp.zeros((), E.dtype)
    if moving:
        dE = dE + jnp.sum(F * dflat)
    for a, i in zip(A, chosen, strict=True):
        dE = dE + jnp.sum(a * dvalues[i])
    return E, dE


_pairs.defjvp(_pairs_jvp, symbolic_zeros=True)


def _over_rows(energy, flat, body, values, moving: bool, chosen: tuple[int, ...]):
    """(E, ∂E/∂flat (with ``moving``), ∂E/∂values[i] for i in ``chosen``) of all rows of
    sites at once, or summed over blocks of rows (``_PAIRS_AT_ONCE``)."""
    m = flat.shape[0]
    if m * m <= _PAIRS_AT_ONCE:
        return _rows(energy, flat, body, values, None, moving, chosen)
    size = max(1, _PAIRS_AT_ONCE // m)
    blocks = jnp.asarray(np.arange(-(-m // size) * size).reshape(-1, size))

    def block(total, rows):
        part = _rows(energy, flat, body, values, rows, moving, chosen)
        return jax.tree.map(jnp.add, total, part), None

    zero = (
        jnp.zeros((), flat.dtype),
        jnp.zeros_like(flat) if moving else None,
        tuple(jnp.zeros_like(values[i]) for i in chosen),
    )
    # (each block recomputed where the rule itself is differentiated in reverse mode:
    # memory like NS, not (NS)², for second derivatives too)
    return jax.lax.scan(jax.checkpoint(block), zero, blocks)[0]


def _rows(energy, flat, body, values, rows, moving: bool, chosen: tuple[int, ...]):
    """The pairs of the sites ``rows`` (indices, None for all; past the last site: no
    pair) with every site of a later body: their energy and, as asked, its gradients
    by every site's position (``moving``) and by the values ``chosen``."""
    m = flat.shape[0]
    if rows is None:
        p, b, mine = flat, body, values
    else:
        at = jnp.minimum(rows, m - 1)
        p, mine = flat[at], tuple(v[at] for v in values)
        b = jnp.where(rows < m, body[at], jnp.iinfo(body.dtype).max)
    mask = b[:, None] < body[None, :]
    d = [p[:, k, None] - flat[None, :, k] for k in range(3)]  # the coordinates apart
    r2 = jnp.where(mask, d[0] * d[0] + d[1] * d[1] + d[2] * d[2], 1.0)

    def total(r2, picked_mine, picked):
        a_mine, a_all = list(mine), list(values)
        for i, u, v in zip(chosen, picked_mine, picked, strict=True):
            a_mine[i], a_all[i] = u, v
        pairs = [(u[:, None], v[None, :]) for u, v in zip(a_mine, a_all, strict=True)]
        return jnp.sum(jnp.where(mask, energy(r2, *pairs), 0.0))

    picked = (tuple(mine[i] for i in chosen), tuple(values[i] for i in chosen))
    if not moving and not chosen:
        return total(r2, *picked), None, ()
    argnums = (0, 1, 2) if moving else (1, 2)  # ∂E/∂r² only where the sites move
    E, grads = jax.value_and_grad(total, argnums=argnums)(r2, *picked)
    da_mine, da_all = grads[-2:]
    F = None
    if moving:  # ∂E/∂p: 2 Σ_j G_ij (p_i − p_j) at the rows, −2 Σ_i G_ij (p_i − p_j) at the columns
        G = grads[0]
        # on the differences, not the positions: exact to a translation far from the origin
        Gd = jnp.stack([2.0 * G * dk for dk in d])  # (3, rows, NS), one array: two reductions
        on_rows = jnp.sum(Gd, axis=2).T
        F = -jnp.sum(Gd, axis=1).T
        F = F + on_rows if rows is None else F.at[rows].add(on_rows, mode="drop")
    if rows is None:
        A = tuple(u + v for u, v in zip(da_mine, da_all, strict=True))
    else:
        A = tuple(v.at[rows].add(u, mode="drop") for u, v in zip(da_mine, da_all, strict=True))
    return E, F, A


def lennard_jones(x, R, sites, epsilon, sigma):
    """Σ 4ε_ij((σ_ij/r)¹² − (σ_ij/r)⁶) over pairs of sites on different bodies; ε and σ
    per site ((S,), (N, S) or one number), mixed by Lorentz–Berthelot.  Units: ε in
    M L²/T², σ and the sites in L; V in M L²/T²."""

    def energy(r2, eps, sig):
        both = eps[0] * eps[1]
        positive = both > 0  # sites without LJ (ε = 0): no NaN in the gradient by ε
        e = jnp.where(positive, jnp.sqrt(jnp.where(positive, both, 1.0)), 0.0)
        s6 = (0.5 * (sig[0] + sig[1])) ** 6 / r2**3
        return 4.0 * e * (s6 * s6 - s6)

    return pair_sum(x, R, sites, energy, epsilon, sigma, vanishes_with=0)


def coulomb(x, R, sites, charges, k=1.0):
    """Σ k q_i q_j / r over pairs of sites on different bodies (``charges`` per site).
    Units: k q_i q_j in M L³/T² (e.g. k = 1/(4πε₀) in SI), sites in L; V in M L²/T²."""

    def energy(r2, q):
        return k * q[0] * q[1] / jnp.sqrt(r2)

    return pair_sum(x, R, sites, energy, charges, vanishes_with=0)


def mutual_gravity(x, R, sites, masses, G=1.0):
    """−Σ G m_i m_j / r over pairs of point masses on different bodies (bodies made of
    point masses ``masses`` per site: the full two-body problem's mutual potential).
    Units: G in L³/(M T²), masses in M, sites in L; V in M L²/T²."""

    def energy(r2, m):
        return -G * m[0] * m[1] / jnp.sqrt(r2)

    return pair_sum(x, R, sites, energy, masses, vanishes_with=0)
