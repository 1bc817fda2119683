r"""Exact free-rigid-body motion by Jacobi elliptic functions (MATH.md §1).

For I1 > I2 > I3 and G² = |m|², 2H = Σ m_i²/I_i, the motion circulates about e3 when
G² < 2H I2 and about e1 when G² > 2H I2.  Writing the first case (the second is the
first after reversing the axes, an odd permutation, hence with time reversed),

    m1 = m1max cn(u, k²),  m2 = m2max sn(u, k²),  m3 = s3 m3max dn(u, k²),  u = λt + u0,

    m1max² = I1 g/(I1 − I3),  m2max² = I2 g/(I2 − I3),  m3max² = I3 f/(I1 − I3),
    k² = g (I1 − I2) / ((I2 − I3) f),  λ = sign(a2) s3 √(f (I2 − I3)/(I1 I2 I3)),

with g = G² − 2H I3 = m1²(I1−I3)/I1 + m2²(I2−I3)/I2 and
f = 2H I1 − G² = m2²(I1−I2)/I2 + m3²(I1−I3)/I3 (sums of non-negative terms, so no
cancellation near the axes), s3 = sign m3(0) and u0 = F(φ0 | k²) with
φ0 = atan2(m2/m2max, m1/m1max).  The same formulas hold for I1 < I2 < I3.

The separatrix G² = 2H I2 is the k² = 1 limit: sn → tanh, cn, dn → sech.  With two
equal moments I_j = I_k the body precesses uniformly: m_i is constant and
(m_j + i m_k)(t) = (m_j + i m_k)(0) exp(−i a_j m_i t).  A spherical body does not move.
A permutation P of the axes maps solutions to solutions with time scaled by det P.
See Celledoni, Fassò, Säfström, Zanna, SIAM J. Sci. Comput. 30 (2008).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from mechint._validate import real_array
from mechint.errors import InputError

_EPS = np.finfo(float).eps


def euler_top(system, m0, t) -> np.ndarray:
    """Exact m(t) of the Euler top ``system`` from m(0) = ``m0``.

    ``m0``: (3,) or a batch (B, 3); ``t``: times (any shape).  Returns an array of shape
    ``t.shape + (3,)`` (or ``(B,) + t.shape + (3,)``).
    """
    inertia = np.asarray(system.inertia, dtype=float)
    m0, batched = system.validate_state(m0, "m0")
    t = real_array("t", t)
    if batched:
        return np.stack([_single(inertia, row, t) for row in m0])
    return _single(inertia, m0, t)


def regime(system, m0) -> str:
    """'stationary', 'spherical', 'symmetric', 'about-largest', 'about-smallest' or
    'separatrix': the case of the exact solution that applies to ``m0``."""
    inertia = np.asarray(system.inertia, dtype=float)
    m0, batched = system.validate_state(m0, "m0")
    if batched:
        raise InputError("m0", "regime takes one state, not a batch")
    return _classify(inertia, m0)[0]


def _classify(I, m):
    if I[0] == I[1] == I[2]:
        return "spherical", None
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        if I[j] == I[k]:
            return "symmetric", i
    perm = np.argsort(-I, kind="stable")
    Is, ms = I[perm], m[perm]
    t1 = ms[0] ** 2 * (Is[0] - Is[1]) / Is[0]
    t3 = ms[2] ** 2 * (Is[1] - Is[2]) / Is[2]
    if t1 == 0.0 and t3 == 0.0:
        return "stationary", perm
    delta = t1 - t3  # = G² − 2 H I2 in sorted axes
    if abs(delta) <= 8 * _EPS * (t1 + t3):
        return "separatrix", perm
    return ("about-largest" if delta > 0 else "about-smallest"), perm


def _single(I, m0, t) -> np.ndarray:
    kind, data = _classify(I, m0)
    if kind in ("spherical", "stationary"):
        return np.broadcast_to(m0, (*t.shape, 3)).copy()
    assert data is not None  # an axis (symmetric) or a permutation (the other regimes)
    if kind == "symmetric":
        return _precession(I, m0, t, int(np.asarray(data)))
    perm = np.asarray(data)
    if kind == "about-largest":  # reverse axes: circulation axis to position 3
        perm = perm[::-1]
    parity = _parity(perm)
    y = _circulating(I[perm], m0[perm], parity * t, separatrix=(kind == "separatrix"))
    out = np.empty_like(y)
    out[..., perm] = y
    return out


def _parity(perm) -> int:
    return round(np.linalg.det(np.eye(3)[perm]))


def _precession(I, m0, t, i) -> np.ndarray:
    j, k = (i + 1) % 3, (i + 2) % 3
    a_j = (I[k] - I[i]) / (I[k] * I[i])
    z = (m0[j] + 1j * m0[k]) * np.exp(-1j * a_j * m0[i] * t)
    out = np.empty((*t.shape, 3))
    out[..., i] = m0[i]
    out[..., j] = z.real
    out[..., k] = z.imag
    return out


def _circulating(I, m, t, separatrix: bool) -> np.ndarray:
    """Motion circulating about axis 3 (I2 strictly between I1 and I3); see module doc."""
    I1, I2, I3 = I
    m1, m2, m3 = m
    g = m1**2 * (I1 - I3) / I1 + m2**2 * (I2 - I3) / I2
    f = m2**2 * (I1 - I2) / I2 + m3**2 * (I1 - I3) / I3
    if g == 0.0:  # permanent rotation about axis 3
        return np.broadcast_to(m, (*t.shape, 3)).copy()
    m1max = np.sqrt(I1 * g / (I1 - I3))
    m2max = np.sqrt(I2 * g / (I2 - I3))
    m3max = np.sqrt(I3 * f / (I1 - I3))
    a2 = (I3 - I1) / (I3 * I1)
    rate = np.sqrt(f * (I2 - I3) / (I1 * I2 * I3))
    out = np.empty((*t.shape, 3))
    k2 = g * (I1 - I2) / ((I2 - I3) * f)
    # k² rounding to 1 means the orbit is the separatrix to working precision
    if separatrix or k2 >= 1.0:
        if m1 == 0.0 and m3 == 0.0:  # the unstable equilibrium on the middle axis
            return np.broadcast_to(m, (*t.shape, 3)).copy()
        s1, s3 = np.sign(m1), np.sign(m3)
        lam = np.sign(a2) * s1 * s3 * rate
        with np.errstate(divide="ignore"):  # m1 = 0: at the saddle, u0 = ±inf
            u = lam * t + np.arcsinh(m2 * m1max / (m2max * abs(m1)))
        sech = 1.0 / np.cosh(u)
        out[..., 0] = s1 * m1max * sech
        out[..., 1] = m2max * np.tanh(u)
        out[..., 2] = s3 * m3max * sech
        return out
    s3 = np.sign(m3)
    lam = np.sign(a2) * s3 * rate
    phi0 = np.arctan2(m2 / m2max, m1 / m1max)
    u = lam * t + special.ellipkinc(phi0, k2)
    sn, cn, dn, _ = special.ellipj(u, k2)
    out[..., 0] = m1max * cn
    out[..., 1] = m2max * sn
    out[..., 2] = s3 * m3max * dn
    return out
