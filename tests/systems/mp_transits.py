"""An mpmath reference of transit times on the Störmer–Verlet map (kick-drift-kick on
H = Σ|p|²/2m − Σ G m_i m_j / r_ij), independent of mechint: the map written out, each
transit the root of τ ↦ (Δ_s·Δv_s)(Φ_τ(x_k)) in the step where it rises with the planet
in front (observer +z), every number an mpf."""

import mpmath as mp

DPS = 40


def _grad_v(q, m, G):
    """∂V/∂q_i = Σ_j G m_i m_j (q_i − q_j) / r_ij³."""
    n = len(m)
    out = [[mp.mpf(0)] * 3 for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            d = [q[i][c] - q[j][c] for c in range(3)]
            r2 = d[0] ** 2 + d[1] ** 2 + d[2] ** 2
            w = G * m[i] * m[j] / (r2 * mp.sqrt(r2))
            for c in range(3):
                out[i][c] += w * d[c]
    return out


def step(q, p, m, G, h):
    """One Störmer–Verlet step (kick h/2, drift h, kick h/2)."""
    g = _grad_v(q, m, G)
    p = [[p[i][c] - h / 2 * g[i][c] for c in range(3)] for i in range(len(m))]
    q = [[q[i][c] + h * p[i][c] / m[i] for c in range(3)] for i in range(len(m))]
    g = _grad_v(q, m, G)
    p = [[p[i][c] - h / 2 * g[i][c] for c in range(3)] for i in range(len(m))]
    return q, p


def _sky(q, p, m, planet, star):
    d = [q[planet][c] - q[star][c] for c in range(3)]
    dv = [p[planet][c] / m[planet] - p[star][c] / m[star] for c in range(3)]
    return d[0] * dv[0] + d[1] * dv[1], d[2]


def transit_times(q0, p0, masses, G, h, steps: int, planet: int, star: int = 0) -> list:
    """The mid-transit times of ``planet`` (observer +z) in ``steps`` steps of size h."""
    with mp.workdps(DPS):
        m = [mp.mpf(x) for x in masses]
        G, h = mp.mpf(G), mp.mpf(h)
        q = [[mp.mpf(x) for x in row] for row in q0]  # (floats are exact in mpf)
        p = [[mp.mpf(x) for x in row] for row in p0]
        g0 = _sky(q, p, m, planet, star)[0]
        out = []
        for k in range(steps):
            q1, p1 = step(q, p, m, G, h)
            g1, z1 = _sky(q1, p1, m, planet, star)
            if g0 < 0 <= g1 and z1 > 0:

                def F(tau, q=q, p=p):
                    return _sky(*step(q, p, m, G, tau), m, planet, star)[0]

                tau = mp.findroot(F, (mp.mpf(0), h), solver="anderson")
                out.append(k * h + tau)
            q, p, g0 = q1, p1, g1
        return out
