"""An mpmath reference of the Wisdom-Holman map (Jacobi coordinates, the standard kernel
D(h/2) I(h) D(h/2)), independent of ``integrators.WisdomHolman``: the Kepler drifts by
``tests/exact/mp_kepler.ref_flow`` (60 digits), the interaction accelerations written out
from H_I (Wisdom & Holman 1991; the module docstring of ``integrators.wisdom_holman``),
every number an mpf."""

import mpmath as mp

from tests.exact.mp_kepler import WORK_DPS, ref_flow


def _add(a, b, s=1):
    return [x + s * y for x, y in zip(a, b, strict=True)]


def _scale(c, a):
    return [c * x for x in a]


def _jacobi(m, eta, x):
    """(centre of mass, relative vectors x_i − X_{i−1}, i ≥ 1), X_k the centre of mass of
    bodies 0..k."""
    out, acc = [], _scale(m[0], x[0])
    for i in range(1, len(m)):
        out.append(_add(x[i], _scale(1 / eta[i - 1], acc), -1))
        acc = _add(acc, _scale(m[i], x[i]))
    return _scale(1 / eta[-1], acc), out


def _inertial(m, eta, R, rel):
    """The inverse of ``_jacobi``: X_{i−1} = X_i − m_i r_i / η_i, x_i = r_i + X_{i−1}."""
    n = len(m)
    x: list = [None] * n
    X = R
    for i in range(n - 1, 0, -1):
        X = _add(X, _scale(m[i] / eta[i], rel[i - 1]), -1)
        x[i] = _add(rel[i - 1], X)
    x[0] = X
    return x


def _accelerations(m, eta, G, x):
    """The interaction accelerations (inertial): the direct forces without the pair
    (0, 1), and the Jacobi terms G m_j η_{j−1}/|Q_j| (j ≥ 2) differentiated."""
    n = len(m)
    a = [[mp.mpf(0)] * 3 for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j or {i, j} == {0, 1}:
                continue
            d = _add(x[j], x[i], -1)
            r = mp.sqrt(mp.fsum(c * c for c in d))
            a[i] = _add(a[i], _scale(G * m[j] / r**3, d))
    _, Q = _jacobi(m, eta, x)
    for j in range(2, n):
        q = Q[j - 1]
        f = _scale(G / mp.sqrt(mp.fsum(c * c for c in q)) ** 3, q)
        a[j] = _add(a[j], _scale(eta[j - 1], f))
        for i in range(j):
            a[i] = _add(a[i], _scale(m[j], f), -1)
    return a


def wisdom_holman(masses, q0, v0, h, steps, G=1):
    """The inertial positions after ``steps`` steps of size h from positions q0 and
    velocities v0 (lists of 3-vectors; numbers or mpf), at WORK_DPS digits."""
    with mp.workdps(WORK_DPS):
        m = [mp.mpf(x) for x in masses]
        G, h = mp.mpf(G), mp.mpf(h)
        eta = [mp.fsum(m[: k + 1]) for k in range(len(m))]
        q = [[mp.mpf(c) for c in r] for r in q0]
        v = [[mp.mpf(c) for c in r] for r in v0]
        R, r = _jacobi(m, eta, q)
        V, u = _jacobi(m, eta, v)

        def drift(r, u, t):
            out = [ref_flow(G * eta[i + 1], r[i], u[i], t) for i in range(len(r))]
            return [o[0] for o in out], [o[1] for o in out]

        for _ in range(steps):
            r, u = drift(r, u, h / 2)
            a = _accelerations(m, eta, G, _inertial(m, eta, R, r))
            _, aj = _jacobi(m, eta, a)
            u = [_add(ui, _scale(h, ai)) for ui, ai in zip(u, aj, strict=True)]
            r, u = drift(r, u, h / 2)
            R = _add(R, _scale(h, V))
        return _inertial(m, eta, R, r)
