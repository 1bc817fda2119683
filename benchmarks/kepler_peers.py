"""Work-precision on Kepler against the adaptive peers: compositions of Verlet against
diffrax's Tsit5 and Dopri8 and SciPy's DOP853 (issue 37).

    python benchmarks/kepler_peers.py [--quick]

Kepler e = 0.5 over 100 orbits (T = 200π). The error of a setting is the median over
16 orbits, the periapsis state turned to 16 angles (the round-off near 1e-12 is a random
walk, one orbit is one draw of it), of max|z(T) − z_exact(T)| against Kepler's equation
(``exact.kepler``); its time is one trajectory from the periapsis state, compiled, best
of 3. mechint: Kahan-Li-8 and Sofroniou-Spaletta-10 compositions of Störmer-Verlet
(compensated, their default; and Sofroniou-Spaletta-10 with plain sums) over a sweep of
step counts; diffrax (the ``bench`` extra; its absence is printed) and SciPy: adaptive,
PID controller, rtol = atol swept. The table gives the time to reach each error (the
cheapest run at or below it, or the log-log interpolation between the runs around it:
``work_precision.at_goal``) and the best median error reached.
"""

from __future__ import annotations

import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of
from round_off import KEPLER, E, T, orbits
from scipy.integrate import solve_ivp
from work_precision import DIFFRAX, at_goal, diffrax_runs

import mechint as mi

I = mi.integrators
ORBITS = 16
GOALS = (1e-8, 1e-10, 1e-12)


def exact(q0, p0) -> np.ndarray:
    """The orbits' exact states at T, one row (q, p) an orbit."""
    q, p = mi.exact.kepler(KEPLER, (q0, p0), np.array([T]))
    return np.concatenate([np.asarray(q)[:, -1], np.asarray(p)[:, -1]], axis=1)


def median_error(z, want) -> float:
    return float(np.median(np.abs(np.asarray(z) - want).max(axis=1)))


def mechint_points(integrator, compensated, counts, q0, p0, want):
    """(median error, seconds) per step count."""
    points = []
    for steps in counts:
        h = T / steps

        def one(s=steps, h=h):
            traj = mi.simulate(KEPLER, integrator, (q0[0], p0[0]), h, s, s,
                               compensated=compensated)  # fmt: skip
            return jax.block_until_ready(traj.x)

        timing = best_of(one, 3, warm=True)
        traj = mi.simulate(KEPLER, integrator, (q0, p0), h, steps, steps, compensated=compensated)
        z = np.concatenate([np.asarray(a)[:, -1] for a in traj.x], axis=1)
        points.append((median_error(z, want), timing.best))
    return points


def diffrax_points(tols, z0, want):
    """{name: [(median error, seconds)]} for Tsit5 and Dopri8, or None without diffrax."""

    def field(t, z, args):
        r = jnp.sqrt(z[0] ** 2 + z[1] ** 2)
        return jnp.stack([z[2], z[3], -z[0] / r**3, -z[1] / r**3])

    one, many = diffrax_runs(T, False, field), diffrax_runs(T, True, field)
    if one is None:
        return None
    out = {}
    for name in DIFFRAX:
        points = []
        for tol in tols:
            timing = best_of(lambda t=tol, f=one[name]: f(z0[0], t), 3, warm=True)
            points.append((median_error(many[name](z0, tol), want), timing.best))
        out[f"diffrax {name}"] = points
    return out


def dop853_points(tols, z0, want):
    def f(_, z):
        r = np.hypot(z[0], z[1])
        return np.array([z[2], z[3], -z[0] / r**3, -z[1] / r**3])

    def solve(z, tol):
        return solve_ivp(f, (0.0, T), z, method="DOP853", rtol=tol, atol=tol).y[:, -1]

    points = []
    for tol in tols:
        timing = best_of(lambda t=tol: solve(z0[0], t), 1)
        z = np.stack([solve(z, tol) for z in z0])
        points.append((median_error(z, want), timing.best))
    return points


def main(quick: bool = False) -> None:
    n = 2 if quick else ORBITS
    q0, p0 = orbits(n, first=0.0)  # the first, the one timed, not turned
    want = exact(q0, p0)
    z0 = np.concatenate([q0, p0], axis=1)
    kl8 = I.Composition(I.StormerVerlet(), "kahan-li8")
    ss10 = I.Composition(I.StormerVerlet(), "sofroniou-spaletta10")
    many = [4000, 6000, 8000, 12000, 16000, 24000, 32000, 64000, 128000, 256000]
    runs = {  # name: (map, compensated, step counts)
        "Kahan-Li-8 (compensated)": (kl8, None, [6000, *many[2:]]),
        "Sofroniou-Spaletta-10 (compensated)": (ss10, None, many),
        "Sofroniou-Spaletta-10 (plain sums)": (ss10, False, many[:7]),
    }
    tols = [1e-6, 1e-8, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14]
    if quick:
        runs = {"Sofroniou-Spaletta-10 (compensated)": (ss10, None, [4000])}
        tols = [1e-6]
    curves = {name: mechint_points(m, c, counts, q0, p0, want)
              for name, (m, c, counts) in runs.items()}  # fmt: skip
    ours = list(curves)
    peers = diffrax_points(tols, z0, want)
    if peers is None:
        print("diffrax is not installed (pip install -e '.[bench]'): its rows are missing")
    else:
        curves.update(peers)
    curves["SciPy DOP853"] = dop853_points(tols, z0, want)
    device = jax.devices()[0]
    print(f"Kepler e = {E}, T = 200π, median of {n} orbits, one trajectory timed "
          f"(device: {device}, jax {jax.__version__})")  # fmt: skip
    print("| method | " + " | ".join(f"time to {g:.0e}" for g in GOALS) + " | best median error |")
    print("|---|" + "---|" * (len(GOALS) + 1))
    for name, points in curves.items():
        cells = []
        for g in GOALS:
            t = at_goal(points, g)
            cells.append("not reached" if math.isnan(t) else f"{1e3 * t:.3g} ms")
        err, t = min(points)
        print(f"| {name} | " + " | ".join(cells) + f" | {err:.1e} ({1e3 * t:.3g} ms) |")
    for name, points in curves.items():
        print(f"  {name}: " + ", ".join(f"{e:.1e} in {1e3 * t:.3g} ms" for e, t in points))
    targets = ("targets (issue 37): the best median error <= 1e-12 with an order-8 or -10 "
               "composition; faster than diffrax's fastest at every error both reach")  # fmt: skip
    if peers is None:
        print(f"{targets}; mechint's best: {min(min(curves[k]) for k in ours)[0]:.1e}")
        return

    def reach(name, goal):  # inf where never reached (at_goal's nan)
        t = at_goal(curves[name], goal)
        return (math.inf if math.isnan(t) else t), name

    cells = []
    for g in GOALS:
        peer, own = min(reach(k, g) for k in peers), min(reach(k, g) for k in ours)
        if math.isinf(peer[0]) or math.isinf(own[0]):
            said = [f"{k} " + ("never" if math.isinf(t) else f"{1e3 * t:.3g} ms")
                    for k, t in (("mechint", own[0]), ("diffrax", peer[0]))]  # fmt: skip
            cells.append(f"{g:.0e}: " + ", ".join(said))
        else:
            cells.append(f"{g:.0e}: {peer[0] / own[0]:.3g}× ({own[1]} against {peer[1]})")
    print(f"{targets}; mechint's fastest against diffrax's fastest: " + "; ".join(cells))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
