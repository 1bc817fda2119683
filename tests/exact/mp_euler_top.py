"""An independent Euler-top reference in mpmath: the classical elliptic-function formulas
(G², 2H, k² as differences) at 60 digits, where nothing cancels that matters."""

import mpmath as mp
import numpy as np


def exact(inertia, m0, t, dps=60):
    """m(t) as float64 and 1 − k², for I with three distinct moments and m0 off the
    separatrix (the grid's states)."""
    with mp.workdps(dps):
        I = [mp.mpf(float(v)) for v in inertia]
        m = [mp.mpf(float(v)) for v in m0]
        order = sorted(range(3), key=lambda i: -I[i])
        inversions = sum(1 for a in range(3) for b in range(a + 1, 3) if order[a] > order[b])
        ts = mp.mpf(float(t)) * (-1 if inversions % 2 else 1)
        Is, ms = [I[i] for i in order], [m[i] for i in order]
        G2 = sum(v * v for v in ms)
        H2 = sum(v * v / i for v, i in zip(ms, Is, strict=True))
        if G2 > H2 * Is[1]:  # circulates about the largest axis: reverse (time reversed)
            Is, ms, order, ts = Is[::-1], ms[::-1], order[::-1], -ts
        I1, I2, I3 = Is
        m1, m2, m3 = ms
        g, f = G2 - H2 * I3, H2 * I1 - G2
        amp = [
            mp.sqrt(I1 * g / (I1 - I3)),
            mp.sqrt(I2 * g / (I2 - I3)),
            mp.sqrt(I3 * f / (I1 - I3)),
        ]
        k2 = g * (I1 - I2) / ((I2 - I3) * f)
        s3 = mp.sign(m3)
        lam = mp.sign((I3 - I1) / (I3 * I1)) * s3 * mp.sqrt(f * (I2 - I3) / (I1 * I2 * I3))
        u = lam * ts + mp.ellipf(mp.atan2(m2 / amp[1], m1 / amp[0]), k2)
        K = mp.ellipk(k2)
        r = u - 4 * K * mp.nint(u / (4 * K))
        y = [
            amp[0] * mp.ellipfun("cn", r, m=k2),
            amp[1] * mp.ellipfun("sn", r, m=k2),
            s3 * amp[2] * mp.ellipfun("dn", r, m=k2),
        ]
        out = [mp.mpf(0)] * 3
        for pos, i in enumerate(order):
            out[i] = y[pos]
        return np.array([float(v) for v in out]), float(1 - k2)


def spread(inertia, m0, t):
    """The problem's own conditioning: how far m(t) moves when one component of m0 moves
    by one ulp (either way)."""
    ref = exact(inertia, m0, t)[0]
    out = 0.0
    for i in range(3):
        for d in (np.inf, -np.inf):
            moved = np.array(m0, dtype=float)
            moved[i] = np.nextafter(moved[i], d)
            out = max(out, float(np.max(np.abs(exact(inertia, moved, t)[0] - ref))))
    return ref, out
