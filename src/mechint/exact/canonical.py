r"""Exact solutions of canonical models: the harmonic oscillator and the Kepler problem.

Harmonic oscillator: q(t) = q0 cos ωt + (p0/ω) sin ωt, p(t) = p0 cos ωt − ω q0 sin ωt.

Kepler (bound orbits, H < 0, L ≠ 0): from (q0, p0), a = −μ/(2H), mean motion
n = √(μ/a³), eccentricity vector A/μ (Laplace-Runge-Lenz) giving e and the periapsis
direction ω; in the perifocal frame x = a(cos E − e), y = b sin E (b = a√(1 − e²)) and
ẋ = −a n sin E/(1 − e cos E), ẏ = b n cos E/(1 − e cos E), with the eccentric anomaly
E solving Kepler's equation E − e sin E = M0 + n t by Newton's method.
"""

from __future__ import annotations

import numpy as np

from mechint._validate import real_array
from mechint.errors import InputError


def _per_member(system, x0, t, single):
    (q0, p0), batched = system.validate_state(x0, "x0")
    t = real_array("t", t)
    if not batched:
        return single(q0, p0, t)
    outs = [single(q, p, t) for q, p in zip(q0, p0, strict=True)]
    return np.stack([o[0] for o in outs]), np.stack([o[1] for o in outs])


def harmonic_oscillator(system, x0, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact (q(t), p(t)) of ``HarmonicOscillator``; arrays of shape t.shape + (d,)."""
    w = np.asarray(system.omega, dtype=float)

    def single(q0, p0, t):
        wt = t[..., None] * w
        c, s = np.cos(wt), np.sin(wt)
        return q0 * c + (p0 / w) * s, p0 * c - w * q0 * s

    return _per_member(system, x0, t, single)


def kepler(system, x0, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact (q(t), p(t)) of ``Kepler`` on a bound orbit; arrays of shape t.shape + (2,)."""
    mu = float(system.mu)

    def single(q0, p0, t):
        return _kepler(mu, q0, p0, t)

    return _per_member(system, x0, t, single)


def _kepler(mu: float, q0: np.ndarray, p0: np.ndarray, t: np.ndarray):
    r0 = np.hypot(*q0)
    energy = 0.5 * (p0 @ p0) - mu / r0
    L = q0[0] * p0[1] - q0[1] * p0[0]
    if energy >= 0:
        raise InputError("x0", f"the orbit is not bound (H = {energy:.3g} >= 0)")
    if L == 0:
        raise InputError("x0", "a radial orbit (L = 0) collides with the centre")
    flip = np.array([1.0, np.sign(L)])  # reflect y so that L > 0
    q0, p0, L = q0 * flip, p0 * flip, abs(L)
    a = -mu / (2.0 * energy)
    n = np.sqrt(mu / a**3)
    A = np.array([p0[1] * L - mu * q0[0] / r0, -p0[0] * L - mu * q0[1] / r0])
    e = min(np.hypot(*A) / mu, 1.0 - 1e-16)
    w = np.arctan2(A[1], A[0])
    cw, sw = np.cos(w), np.sin(w)
    x0, y0 = cw * q0[0] + sw * q0[1], -sw * q0[0] + cw * q0[1]
    b = a * np.sqrt(1.0 - e * e)
    E0 = np.arctan2(y0 / b, x0 / a + e)
    M = np.remainder(E0 - e * np.sin(E0) + n * t, 2.0 * np.pi)
    E = np.where(e < 0.8, M, np.pi * np.ones_like(M))
    for _ in range(60):
        dE = (E - e * np.sin(E) - M) / (1.0 - e * np.cos(E))
        E = E - dE
        if np.all(np.abs(dE) <= 4e-16 * (1.0 + np.abs(E))):
            break
    cE, sE = np.cos(E), np.sin(E)
    x, y = a * (cE - e), b * sE
    den = 1.0 - e * cE
    vx, vy = -a * n * sE / den, b * n * cE / den
    q = np.stack([cw * x - sw * y, sw * x + cw * y], axis=-1) * flip
    p = np.stack([cw * vx - sw * vy, sw * vx + cw * vy], axis=-1) * flip
    return q, p
