"""Orbital elements of planetary systems (``NBody.from_elements``, ``NBody.to_elements``):
the relative orbits of bodies 1..N−1 about the centre of mass of the bodies before each
(Jacobi) or about body 0 (heliocentric), the states of elements and the elements of
states.  A module of its own beside ``systems.nbody``: the coordinates and the two-body
solve it takes, not the system."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechint._validate import real_array
from mechint.errors import InputError
from mechint.systems.nbody import ordered_cumsum, ordered_sum

# the names of the elements (``from_elements``, bodies files, stability grids)
ELEMENT_KEYS = ("a", "P", "e", "i", "Omega", "omega", "M", "lam", "tp")

# --- relative orbits --------------------------------------------------------------------
_FRAMES = ("jacobi", "heliocentric")


def _frame(frame: str) -> str:
    if frame not in _FRAMES:
        raise InputError("frame", f"unknown frame {frame!r}", f"one of {', '.join(_FRAMES)}")
    return frame


def interior_masses(masses, frame: str):
    """(N−1,): the mass each body's orbit is about (the bodies before it for Jacobi, the
    central body for heliocentric)."""
    m = jnp.asarray(masses)
    if frame == "jacobi":
        return jnp.cumsum(m)[:-1]
    return jnp.broadcast_to(m[0], m[1:].shape)


def to_relative(masses, q, frame: str):
    """Inertial vectors (positions or velocities, (..., N, 3)) → (the centre of mass's,
    (..., 3); the relative vectors of bodies 1.., (..., N−1, 3))."""
    m = jnp.asarray(masses, dtype=q.dtype)
    eta = ordered_cumsum(m, 0)
    partial = ordered_cumsum(m[:, None] * q, -2)  # Σ_{j ≤ i} m_j q_j
    com = partial[..., -1, :] / eta[-1]
    if frame == "jacobi":
        inner = partial[..., :-1, :] / eta[:-1, None]
        return com, q[..., 1:, :] - inner
    return com, q[..., 1:, :] - q[..., :1, :]


def from_relative(masses, com, rel, frame: str):
    """The inverse of ``to_relative``."""
    m = jnp.asarray(masses, dtype=rel.dtype)
    n = m.shape[0]
    if frame == "heliocentric":
        # com = q0 + Σ_k m_k r_k / M
        q0 = com - ordered_sum(m[1:, None] * rel, -2) / ordered_sum(m, 0)
        return jnp.concatenate([q0[..., None, :], q0[..., None, :] + rel], axis=-2)
    eta = ordered_cumsum(m, 0)
    # backwards: R_k (centre of mass of 0..k) from R_{N-1} = com
    out: list[Any] = [None] * n
    R = com
    for k in range(n - 1, 0, -1):
        # R_k = (eta_{k-1} R_{k-1} + m_k q_k)/eta_k, q_k = R_{k-1} + r_k
        # ⇒ R_{k-1} = R_k − m_k r_k / eta_k
        R_prev = R - m[k] * rel[..., k - 1, :] / eta[k]
        out[k] = R_prev + rel[..., k - 1, :]
        R = R_prev
    out[0] = R
    return jnp.stack(out, axis=-2)


def state_from_elements(masses, elements: Mapping, G, frame: str):
    """The barycentric (q, p) of ``from_elements`` (NumPy arrays, float64), the elements
    checked first (``read_elements``: e = 1, a of the wrong sign and P of a hyperbola
    refused), and the state after (``InputError`` where not finite)."""
    frame = _frame(frame)
    m = np.asarray(masses, dtype=np.float64)
    n = m.shape[0]
    el = read_elements(elements, n - 1)
    q, p = _elements_state_compiled(jnp.asarray(m), {k: jnp.asarray(v) for k, v in el.items()},
                                    jnp.asarray(float(G)), frame)  # fmt: skip
    q, p = np.asarray(q), np.asarray(p)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(p))):
        raise InputError("elements", "gives a state that is not finite in float64 (a, P or "
                         "the masses out of its range)", "give elements of moderate "
                         "scale (change the units)")  # fmt: skip
    return q, p


def elements_state(masses, elements: Mapping, G=1.0, frame: str = "jacobi"):
    """``NBody.from_elements``'s barycentric state (q, p) as a JAX function of the masses,
    G and the elements (each (N−1,) or (B, N−1)): traceable and differentiable (an
    inference's likelihood takes its gradient with respect to the elements and masses
    through it), with no checks of the values (``from_elements`` checks them).  The keys
    as ``from_elements`` takes them: e, i, Omega, omega (0 where left out), one of a and
    P, one of M, lam and tp."""
    frame = _frame(frame)
    names = element_names(elements)
    m = jnp.asarray(masses)
    real = jnp.result_type(m, *(jnp.asarray(v) for v in elements.values()), float)
    el = {k: jnp.asarray(elements.get(k, 0.0), real) for k in names}
    shape = jnp.broadcast_shapes(*(v.shape for v in el.values()), (m.shape[0] - 1,))
    el = {k: jnp.broadcast_to(v, shape) for k, v in el.items()}
    return _elements_state(m.astype(real), el, jnp.asarray(G, real), frame)


def _elements_state(m, el: dict, G, frame: str):
    """The state of the elements ``el`` (arrays of one shape): the one computation of
    ``state_from_elements`` and ``elements_state``."""
    from mechint.exact.two_body import kepler_flow

    mu = G * (interior_masses(m, frame) + m[1:])
    mu = jnp.broadcast_to(mu, el["e"].shape)
    e = el["e"]
    a = el["a"] if "a" in el else jnp.cbrt(mu * (el["P"] / (2 * np.pi)) ** 2)
    bound = e < 1
    n_mean = jnp.sqrt(mu / jnp.abs(a) ** 3)
    if "M" in el:
        M = el["M"]
    elif "lam" in el:
        M = el["lam"] - el["omega"] - el["Omega"]
    else:
        M = -n_mean * el["tp"]
    # The flow starts where the orbit's state holds its energy without cancellation: the
    # apoapsis (E = π) of a bound orbit, H = 1 on a hyperbola (r = |a|(e cosh 1 − 1)), not
    # the periapsis, whose v²/2 − μ/r loses the digits of a/r_p on a nearly parabolic orbit
    # (e = 1 − 10⁻¹²: 6e-2 of the velocity).  Each branch on values valid in it (the other's
    # NaN would reach a gradient through the select).
    e_b, e_h = jnp.where(bound, e, 0.5), jnp.where(bound, 2.0, e)
    a_b, a_h = jnp.where(bound, a, 1.0), jnp.where(bound, 1.0, jnp.abs(a))
    ch, sh = np.cosh(1.0), np.sinh(1.0)
    r_b = a_b * (1 + e_b)
    v_b = jnp.sqrt(mu * a_b * ((1 - e_b) * (1 + e_b))) / r_b
    r_h = a_h * (e_h * ch - 1)
    w_h = jnp.sqrt(mu * a_h) / r_h
    root_h = jnp.sqrt((e_h - 1) * (e_h + 1))
    x = jnp.where(bound, -r_b, a_h * (e_h - ch))
    y = jnp.where(bound, 0.0, a_h * root_h * sh)
    vx = jnp.where(bound, 0.0, -w_h * sh)
    vy = jnp.where(bound, -v_b, w_h * root_h * ch)
    P = _rotation(el["Omega"], el["i"], el["omega"])  # (..., 3, 3): perifocal → frame
    r0 = x[..., None] * P[..., :, 0] + y[..., None] * P[..., :, 1]
    v0 = vx[..., None] * P[..., :, 0] + vy[..., None] * P[..., :, 1]
    # from there; a bound orbit's M − π brought into [−π, π) (any revolution is the same)
    m0 = jnp.where(bound, np.pi, e_h * sh - 1.0)
    t = jnp.where(bound, jnp.remainder(M, 2 * np.pi) - np.pi, M - m0) / n_mean
    r, v = kepler_flow(mu, r0, v0, t)
    zero = jnp.zeros((*r.shape[:-2], 3), r.dtype)
    q = from_relative(m, zero, r, frame)
    vel = from_relative(m, zero, v, frame)
    return q, vel * jnp.where(m > 0, m, 1.0)[:, None]


_elements_state_compiled = jax.jit(_elements_state, static_argnames="frame")


def element_names(elements: Mapping) -> tuple[str, ...]:
    """The six elements ``elements`` gives, in order: e, i, Omega, omega (0 where left
    out), its one of a and P, its one of M, lam and tp.  ``InputError`` for another kind
    of value, an unknown key, or not exactly one size and one phase."""
    if not isinstance(elements, Mapping):
        raise InputError("elements", f"expected a mapping of arrays, got {type(elements).__name__}",
                         "e.g. {'a': [5.2], 'e': [0.05], 'i': [0.02], 'Omega': [1.75], "
                         "'omega': [4.8], 'M': [0.3]}")  # fmt: skip
    keys = set(elements)
    if keys - set(ELEMENT_KEYS):
        raise InputError("elements", f"unknown keys {sorted(keys - set(ELEMENT_KEYS))}",
                         f"use {sorted(ELEMENT_KEYS)}")  # fmt: skip
    size = [k for k in ("a", "P") if k in keys]
    phase = [k for k in ("M", "lam", "tp") if k in keys]
    if len(size) != 1 or len(phase) != 1:
        raise InputError("elements", "give one of a and P, and one of M, lam and tp",
                         f"got {sorted(keys)}")  # fmt: skip
    return ("e", "i", "Omega", "omega", size[0], phase[0])


def read_elements(elements: Mapping, count: int) -> dict:
    """``elements`` (as ``NBody.from_elements`` takes them, for ``count`` bodies) checked
    and as float64 arrays of one shape: e, i, Omega, omega, one of a and P, one of M,
    lam and tp.  ``InputError`` naming the element otherwise."""
    out = {}
    for k in element_names(elements):
        a = real_array(f"elements[{k!r}]", elements.get(k, 0.0))
        if a.ndim == 0:
            a = np.full(count, float(a))
        if a.shape[-1] != count or a.ndim > 2:
            raise InputError(
                f"elements[{k!r}]",
                f"expected {count} values (one per body "
                f"after the first, or (B, {count}) for a batch), got {a.shape}",
            )
        if not np.all(np.isfinite(a)):
            raise InputError(f"elements[{k!r}]", "holds a value that is not finite")
        out[k] = a
    try:
        shape = np.broadcast_shapes(*(a.shape for a in out.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in out.items())
        raise InputError("elements", f"shapes that do not broadcast together: {shapes}",
                         f"({count},) each, or (B, {count}) for a batch") from None  # fmt: skip
    out = {k: np.broadcast_to(a, shape).astype(np.float64) for k, a in out.items()}
    if np.any(out["e"] < 0):
        raise InputError("elements['e']", "must be ≥ 0")
    if np.any((out["i"] < 0) | (out["i"] > np.pi)):
        raise InputError("elements['i']", "must lie in [0, π] (radians)")
    if "P" in out and np.any(out["P"] <= 0):
        raise InputError("elements['P']", "must be > 0 (bound orbits)")
    e = out["e"]
    if np.any(e == 1):
        raise InputError("elements", "e = 1 (parabolic) has no a", "use e slightly off 1")
    if "P" in out and np.any(e > 1):
        raise InputError("elements['P']", "a hyperbolic orbit (e > 1) has no period",
                         "give a (< 0) for it")  # fmt: skip
    if "a" in out:
        a, bound = out["a"], e < 1
        if np.any(bound & (a <= 0)) or np.any(~bound & (a >= 0)):
            raise InputError("elements", "a must be > 0 for e < 1 and < 0 for e > 1 "
                             "(hyperbolic)", "give a > 0 for bound orbits")  # fmt: skip
    return out


def _rotation(Omega, inc, omega):
    """R_z(Ω) R_x(i) R_z(ω): perifocal (periapsis along x) → the reference frame."""
    cO, sO, ci, si, cw, sw = (jnp.cos(Omega), jnp.sin(Omega), jnp.cos(inc), jnp.sin(inc),
                              jnp.cos(omega), jnp.sin(omega))  # fmt: skip
    rows = [
        [cO * cw - sO * sw * ci, -cO * sw - sO * cw * ci, sO * si],
        [sO * cw + cO * sw * ci, -sO * sw + cO * cw * ci, -cO * si],
        [sw * si, cw * si, ci],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


@functools.partial(jax.jit, static_argnames="frame")
def elements_of(masses, G, x, frame: str) -> dict:
    """``NBody.to_elements`` (JAX: differentiable, batched)."""
    q, p = (jnp.asarray(a) for a in x)
    m = jnp.asarray(masses, dtype=q.dtype)
    w = jnp.where(m > 0, m, 1.0)[:, None]
    _, r = to_relative(m, q, frame)
    _, v = to_relative(m, p / w, frame)
    mu = G * (interior_masses(m, frame) + m[1:])
    rn = jnp.sqrt(jnp.sum(r * r, axis=-1))
    v2 = jnp.sum(v * v, axis=-1)
    h = jnp.cross(r, v)
    hn = jnp.sqrt(jnp.sum(h * h, axis=-1))
    rv = jnp.sum(r * v, axis=-1)
    evec = ((v2 - mu / rn)[..., None] * r - rv[..., None] * v) / mu[..., None]
    e = jnp.sqrt(jnp.sum(evec * evec, axis=-1))
    a = 1.0 / (2.0 / rn - v2 / mu)
    # (each branch on values valid in it: the other's NaN would reach a gradient)
    s2 = h[..., 0] * h[..., 0] + h[..., 1] * h[..., 1]
    flat = s2 == 0
    hxy = jnp.where(flat, 0.0, jnp.sqrt(jnp.where(flat, 1.0, s2)))
    inc = jnp.arctan2(hxy, h[..., 2])  # (not arccos: i of 1e-8 is not 0)
    # the ascending node; on an equatorial orbit (none) Ω = 0, the node along x
    Omega = jnp.where(flat, 0.0, jnp.arctan2(jnp.where(flat, 0.0, h[..., 0]),
                                             jnp.where(flat, 1.0, -h[..., 1])))  # fmt: skip
    node = jnp.stack([jnp.cos(Omega), jnp.sin(Omega), jnp.zeros_like(Omega)], axis=-1)
    hz = h / hn[..., None]
    # periapsis; on a circular orbit (none) ω = 0, periapsis at the node: ν is then the
    # angle from the node (the argument of latitude), so that the body is where it was
    round_ = e == 0
    peri = jnp.where(round_[..., None], node, evec / jnp.where(round_, 1.0, e)[..., None])
    omega = jnp.arctan2(jnp.sum(jnp.cross(node, peri) * hz, axis=-1), jnp.sum(node * peri, axis=-1))
    nu = jnp.arctan2(jnp.sum(jnp.cross(peri, r) * hz, axis=-1), jnp.sum(peri * r, axis=-1))
    bound = e < 1
    # eccentric anomaly from the true anomaly
    E = 2 * jnp.arctan2(jnp.sqrt(jnp.abs(1 - e)) * jnp.sin(nu / 2),
                        jnp.sqrt(1 + e) * jnp.cos(nu / 2))  # fmt: skip
    M_ell = jnp.mod(E - e * jnp.sin(E), 2 * jnp.pi)
    # hyperbolic anomaly from r·v = sqrt(μ|a|) e sinh H (not from tan(ν/2), which saturates
    # on a long arc): M = e sinh H − H
    e_h = jnp.where(bound, 2.0, e)
    sinh_h = rv / (e_h * jnp.sqrt(mu * jnp.abs(a)))
    M_hyp = e_h * sinh_h - jnp.arcsinh(sinh_h)
    M = jnp.where(bound, M_ell, M_hyp)
    P = jnp.where(bound, 2 * jnp.pi * jnp.sqrt(jnp.abs(a) ** 3 / mu), jnp.nan)
    return {"a": a, "e": e, "i": inc, "Omega": jnp.mod(Omega, 2 * jnp.pi),
            "omega": jnp.mod(omega, 2 * jnp.pi), "M": M, "P": P, "mu": mu}  # fmt: skip
