"""An mpmath reference of Kepler's flow, independent of ``exact.kepler_flow``: the
universal Kepler equation solved by bracketed Newton iterations at 60 digits, with
closed-form sin/cos (sinh/cosh) G-functions (series only for |β s²| < 0.1), no period
reduction, and g = t − μ G3; it starts from the exact binary inputs.  ``conditioning``:
the exact flow's change from a 1-ulp move of each input (the accuracy a float64 result
can be asked for)."""

import mpmath as mp
import numpy as np

WORK_DPS = 60


def _g_funcs(beta, s):
    z = beta * s * s
    if abs(z) < mp.mpf("0.1"):
        out = []
        tiny = mp.mpf(10) ** (-WORK_DPS - 5)
        for n in (1, 2, 3):
            term = s**n / mp.factorial(n)
            acc, k = term, 0
            while abs(term) > tiny * abs(acc):
                k += 1
                term = term * (-z) / ((2 * k + n - 1) * (2 * k + n))
                acc += term
            out.append(acc)
        return tuple(out)
    if beta > 0:
        sb = mp.sqrt(beta)
        x = sb * s
        g1 = mp.sin(x) / sb
        g2 = 2 * mp.sin(x / 2) ** 2 / beta
        g3 = (s - g1) / beta
    else:
        sb = mp.sqrt(-beta)
        y = sb * s
        g1 = mp.sinh(y) / sb
        g2 = 2 * mp.sinh(y / 2) ** 2 / (-beta)
        g3 = (g1 - s) / (-beta)
    return g1, g2, g3


def ref_flow(mu, q0, v0, t, return_s=False) -> tuple:
    """Exact flow in mpmath; inputs are exact binary numbers (converted to mpf)."""
    with mp.workdps(WORK_DPS):
        mu, t = mp.mpf(mu), mp.mpf(t)
        q0 = [mp.mpf(x) for x in q0]
        v0 = [mp.mpf(x) for x in v0]
        r0 = mp.sqrt(mp.fsum(x * x for x in q0))
        eta = mp.fsum(a * b for a, b in zip(q0, v0, strict=True))
        beta = 2 * mu / r0 - mp.fsum(x * x for x in v0)
        zeta = mu - beta * r0

        def fun(s):
            g1, g2, g3 = _g_funcs(beta, s)
            return r0 * s + eta * g2 + zeta * g3 - t, r0 + eta * g1 + zeta * g2

        if t == 0:
            s = mp.mpf(0)
        else:
            if beta > 0:  # |dE - dM| <= 2e brackets the eccentric-anomaly change
                sb = mp.sqrt(beta)
                dm = beta * sb / mu * t
                e = mp.sqrt((1 - r0 * beta / mu) ** 2 + (eta * sb / mu) ** 2)
                lo, hi = (dm - 2 * e - mp.mpf("0.01")) / sb, (dm + 2 * e + mp.mpf("0.01")) / sb
            else:
                sg = mp.sign(t)
                h = abs(t) / r0
                while sg * fun(sg * h)[0] < 0:
                    h *= 2
                lo, hi = (mp.mpf(0), h) if sg > 0 else (-h, mp.mpf(0))
                # bisect to a bracket of width < 1 in beta s^2 units (Newton is slow on exp)
                while beta < 0 and (hi - lo) ** 2 * -beta > 1:
                    mid = (lo + hi) / 2
                    lo, hi = (mid, hi) if fun(mid)[0] < 0 else (lo, mid)
            assert fun(lo)[0] < 0 < fun(hi)[0]
            s = (lo + hi) / 2
            tol = mp.mpf(10) ** (-WORK_DPS + 5)
            for _ in range(2000):
                f, fp = fun(s)
                if f < 0:
                    lo = s
                else:
                    hi = s
                s_new = s - f / fp
                if not lo < s_new < hi:
                    s_new = (lo + hi) / 2
                done = abs(s_new - s) <= tol * abs(s) or hi - lo <= tol * abs(s)
                s = s_new
                if done:
                    break
            else:
                raise RuntimeError("reference did not converge")
        g1, g2, g3 = _g_funcs(beta, s)
        r = r0 + eta * g1 + zeta * g2
        f, g = 1 - mu * g2 / r0, t - mu * g3
        fd, gd = -mu * g1 / (r0 * r), 1 - mu * g2 / r
        q = [f * a + g * b for a, b in zip(q0, v0, strict=True)]
        v = [fd * a + gd * b for a, b in zip(q0, v0, strict=True)]
        return (q, v, s) if return_s else (q, v)


def _maxnorm(x):
    return max(abs(c) for c in x)


def _rel(x, ref):
    return _maxnorm([mp.mpf(float(a)) - b for a, b in zip(x, ref, strict=True)]) / _maxnorm(ref)


def conditioning(mu, q0, v0, t, eps):
    """RSS over inputs of the exact flow's change from a 1-ulp move of each input."""
    qr, vr = ref_flow(mu, q0, v0, t)
    nq, nv = _maxnorm(qr), _maxnorm(vr)
    sq = sv = mp.mpf(0)
    base = [mp.mpf(mu), [mp.mpf(x) for x in q0], [mp.mpf(x) for x in v0], mp.mpf(t)]
    moves = [(0, None), (3, None)] + [(1, i) for i in range(len(q0))]
    moves += [(2, i) for i in range(len(q0))]
    for which, i in moves:
        arg = [base[0], list(base[1]), list(base[2]), base[3]]
        if i is None:
            arg[which] = arg[which] * (1 + mp.mpf(eps))
            if arg[which] == 0:
                continue
        else:
            arg[which][i] += mp.mpf(eps) * _maxnorm(arg[which])
        qp, vp = ref_flow(*arg)
        sq += (_maxnorm([a - b for a, b in zip(qp, qr, strict=True)]) / nq) ** 2
        sv += (_maxnorm([a - b for a, b in zip(vp, vr, strict=True)]) / nv) ** 2
    return float(mp.sqrt(sq) / eps), float(mp.sqrt(sv) / eps)


def _rotations(rng, n):
    qm, rr = np.linalg.qr(rng.normal(size=(n, 3, 3)))
    return qm * np.sign(np.diagonal(rr, axis1=1, axis2=2))[:, None, :]


def orbit_states(rng, e, n, rp=1.0, mu=1.0, dim=3):
    """States on conics of eccentricity e, periapsis rp; half uniform in true anomaly, half
    (ellipses) uniform in mean anomaly; random 3-D orientation."""
    if e < 1:
        m = rng.uniform(-np.pi, np.pi, n)
        big_e = m + e * np.sin(m)
        for _ in range(100):
            big_e = big_e - (big_e - e * np.sin(big_e) - m) / (1 - e * np.cos(big_e))
        nu_m = 2 * np.arctan2(
            np.sqrt(1 + e) * np.sin(big_e / 2), np.sqrt(1 - e) * np.cos(big_e / 2)
        )
        nu = np.where(np.arange(n) % 2 == 0, rng.uniform(-np.pi, np.pi, n), nu_m)
    else:
        nu = rng.uniform(-1, 1, n) * 0.97 * np.arccos(-1.0 / e)
    p = rp * (1 + e)
    r = p / (1 + e * np.cos(nu))
    vs = np.sqrt(mu / p)
    q = np.stack([r * np.cos(nu), r * np.sin(nu), 0 * nu], -1)
    v = np.stack([-vs * np.sin(nu), vs * (e + np.cos(nu)), 0 * nu], -1)
    if dim == 2:
        return q[:, :2], v[:, :2]
    rot = _rotations(rng, n)
    return np.einsum("nij,nj->ni", rot, q), np.einsum("nij,nj->ni", rot, v)
