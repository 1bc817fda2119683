"""Variable steps on eccentric Kepler orbits (issue 33): the steps needed for a given
position error, and the energy's long-time behaviour.

    python benchmarks/variable_steps.py [--quick] [--json PATH] [--cache PATH]

Kepler, μ = 1, a = 1, from periapsis, e = 0.9 and 0.99.  Three maps, each built on
Störmer–Verlet (order 2):

- fixed steps h = T/N;
- the Poincaré time transformation (``systems.TimeTransformed``, g = r^{3/2}; K is not
  separable, so Verlet solves it by Newton);
- Hairer–Söderlind reversible step-size control (``integrators.ReversibleAdaptive``,
  σ = r^{3/2}; explicit).

For each, the steps per orbit are doubled (then bisected) until the position error
after 100 orbits against the exact solution (``mechint.exact``) is ≤ 1e-6.  A
variable-step run ends at the physical time T = 100 · 2π exactly (a terminal
``mi.Event`` on t), and its steps are counted from its clock (to 1/64 of an orbit's
steps).  Fixed steps that would take more than ``FIXED_CAP`` steps are extrapolated
from the last run at the method's order 2 (a lower bound: before the asymptotic range
the error falls slower).  Then 10^4
orbits (10^3 in --quick) of both variable-step maps at 1000 steps per orbit: the band
of |H − H0| and the trend over the run of a line fitted through the bands of 20 equal
parts of it, as a fraction of the band (a drift would make it about 1).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np

import mechint as mi

I = mi.integrators
KEPLER = mi.systems.Kepler()
ORBITS = 100
GOAL = 1e-6
FIXED_CAP = 2 * 10**9  # steps a fixed-step run may take; beyond, extrapolated


def sigma(x):
    return jnp.sum(x[0] ** 2) ** 0.75


def g(q, p):
    return jnp.sum(q**2) ** 0.75


ADAPTIVE = I.ReversibleAdaptive(I.StormerVerlet(), sigma)
TRANSFORMED = mi.systems.TimeTransformed(KEPLER, g)


def fictive_period(e: float) -> float:
    """∮ dt / σ over one orbit, σ = r^{3/2}: ∫ (1 − e cos E)^{-1/2} dE (eccentric
    anomaly E: r = 1 − e cos E, dt = r dE)."""
    E = np.linspace(0, 2 * np.pi, 400001)
    return float(np.trapezoid((1 - e * np.cos(E)) ** -0.5, E))


def _exact(x0, T):
    return np.asarray(KEPLER.exact_solution(x0, np.array([T]))[0]).reshape(-1)


@functools.cache
def _end_at(T: float) -> mi.Event:
    """The terminal event t = T (one object per T: one compiled run for every h)."""
    return mi.Event(lambda t, x: t - T, direction=1, terminal=True, name="end")


def run(method: str, e: float, per_orbit: int, orbits: int = ORBITS) -> dict:
    """The position error after ``orbits`` orbits and the steps taken."""
    x0 = KEPLER.periapsis_state(e)
    T = 2 * np.pi * orbits
    began = time.perf_counter()
    if method == "fixed":
        n = per_orbit * orbits
        sol = mi.integrate(KEPLER, I.StormerVerlet(), x0, T / n, n)
        q = np.asarray(sol.x[0][-1])
        steps = n
    else:
        system, integrator = (
            (KEPLER, ADAPTIVE) if method == "adaptive" else (TRANSFORMED, I.StormerVerlet())
        )
        end = _end_at(T)
        every = max(1, per_orbit // 64)
        for slack in (1.3, 2.0, 4.0):  # coarse adaptive steps run slower than σ says
            n = every * math.ceil(slack * per_orbit * orbits / every)
            traj = mi.simulate(system, integrator, x0, fictive_period(e) / per_orbit, n, every,
                               events=[end], max_events=1)  # fmt: skip
            c = traj.events["end"]
            if int(c.count) == 1:
                break
        else:
            raise RuntimeError(f"{method}, e = {e}: the run ended before t = {T}")
        q = np.asarray(c.x[0][0])[:2]
        # the steps taken: the first sample past T (its clock), to `every` steps
        steps = int(np.argmax(~(traj.t < T))) * every
    wall = time.perf_counter() - began
    return {"steps": steps, "error": float(np.max(np.abs(q - _exact(x0, T)))), "wall": wall}


def steps_for(method: str, e: float, start: int, orbits: int = ORBITS, goal: float = GOAL,
              cap: int = FIXED_CAP) -> dict:  # fmt: skip
    """Steps per orbit doubled from ``start`` until the error after ``orbits`` orbits is
    ≤ ``goal``, then bisected (three times) between the last two; fixed steps past
    ``cap`` extrapolated."""
    runs = []
    per = start
    while True:
        if method == "fixed" and per * orbits > cap:
            # at the method's order 2 (the fewest steps fixed steps could need: in the
            # pre-asymptotic range the fitted order is lower, and the need larger)
            (n1, e1), (n2, e2) = [(r["steps"], r["error"]) for r in runs[-2:]]
            fitted = math.log(e1 / e2) / math.log(n2 / n1)
            need = n2 * (e2 / goal) ** (1 / 2)
            return {"steps": need, "error": goal, "extrapolated": True, "fitted order": fitted,
                    "runs": runs}  # fmt: skip
        r = run(method, e, per, orbits)
        runs.append({**r, "per_orbit": per})
        print(f"  {method:9s} e = {e}: {per:>9d} steps/orbit -> error {r['error']:.2e} "
              f"({r['steps']} steps, {r['wall']:.2f} s)", flush=True)  # fmt: skip
        if r["error"] <= goal:
            break
        per *= 2
    if len(runs) > 1:
        lo, hi = runs[-2]["per_orbit"], per
        best = runs[-1]
        for _ in range(3):
            mid = round(math.sqrt(lo * hi))
            r = {**run(method, e, mid, orbits), "per_orbit": mid}
            runs.append(r)
            if r["error"] <= goal:
                hi, best = mid, r
            else:
                lo = mid
        return {"steps": best["steps"], "error": best["error"], "extrapolated": False,
                "runs": runs}  # fmt: skip
    return {"steps": runs[-1]["steps"], "error": runs[-1]["error"], "extrapolated": False,
            "runs": runs}  # fmt: skip


def drift(method: str, e: float, orbits: int, per_orbit: int = 1000) -> dict:
    """|H − H0| over ``orbits`` orbits: its band and its trend over the run (as a
    fraction of the band)."""
    x0 = KEPLER.periapsis_state(e)
    system, integrator = (
        (KEPLER, ADAPTIVE) if method == "adaptive" else (TRANSFORMED, I.StormerVerlet())
    )
    n = per_orbit * orbits
    began = time.perf_counter()
    # samples 100 an orbit: each part's band sees the periapsis passages (4 an orbit
    # would catch them only as their phase drifts past, and fake a trend)
    traj = mi.simulate(system, integrator, x0, fictive_period(e) / per_orbit, n,
                       max(1, per_orbit // 100))  # fmt: skip
    wall = time.perf_counter() - began
    band, trend = energy_trend(traj.t, np.asarray(traj.invariants()["H"], dtype=np.float64))
    return {"orbits": float(traj.t[-1] / (2 * np.pi)), "band": band, "trend": trend,
            "steps": n, "wall": wall}  # fmt: skip


def energy_trend(t, H, segments: int = 20) -> tuple[float, float]:
    """(the band max|H − H0|, the trend over the run of a line fitted through the band
    of each of ``segments`` equal parts, as a fraction of the band).  The parts' bands
    see every periapsis passage, so the samples' phase on the orbit (stroboscopic
    aliasing) does not pass for a drift; a drifting energy gives about 1."""
    dH = np.abs(H - H[0])
    parts = np.array_split(np.arange(len(t)), segments)
    mids = np.array([t[p].mean() for p in parts])
    tops = np.array([dH[p].max() for p in parts])
    band = float(dH.max())
    return band, float(np.polyfit(mids, tops, 1)[0] * (t[-1] - t[0]) / band)


def main(quick: bool = False, out: str | None = None, cache: str | None = None) -> dict:
    """The tables; ``quick``: a smoke test (fixed and adaptive steps, 10 orbits to 1e-3,
    50 orbits of energy)."""
    orbits, goal, cap = (10, 1e-3, 4 * 10**6) if quick else (ORBITS, GOAL, FIXED_CAP)
    results: dict = {"steps": {}, "drift": {}}
    if cache and Path(cache).exists():
        results = json.loads(Path(cache).read_text())
    eccentricities = (0.9,) if quick else (0.9, 0.99)
    # the smoke test leaves out the time-transformed map (Newton: the longest compile)
    methods = (("fixed", 4096), ("adaptive", 256)) + (() if quick else (("transformed", 256),))
    for e in eccentricities:
        for method, start in methods:
            key = f"{method} {e}"
            if key not in results["steps"]:
                results["steps"][key] = steps_for(method, e, start // (4 if quick else 1),
                                                  orbits, goal, cap)  # fmt: skip
                if cache:  # a long sweep keeps what it measured
                    Path(cache).write_text(json.dumps(results, indent=1))
    print(f"\nKepler, a = 1, from periapsis: steps for a position error ≤ {goal:g} after "
          f"{orbits} orbits (Störmer–Verlet underneath)\n")  # fmt: skip
    print("| e | fixed steps | time-transformed | reversible adaptive | fewer steps (fixed / "
          "transformed, fixed / adaptive) |")  # fmt: skip
    print("|---|---|---|---|---|")
    none = {"steps": math.nan}
    for e in eccentricities:
        f, t, a = (results["steps"].get(f"{m} {e}", none)
                   for m in ("fixed", "transformed", "adaptive"))  # fmt: skip
        mark = " (extrapolated at order 2)" if f.get("extrapolated") else ""
        print(f"| {e} | ≥ {f['steps']:.2g}{mark} | {t['steps']:.3g} | {a['steps']:.3g} | "
              f"{f['steps'] / t['steps']:.0f}×, {f['steps'] / a['steps']:.0f}× |")  # fmt: skip
    orbits, per_orbit = (50, 200) if quick else (10_000, 1000)
    for e in eccentricities:
        for method in ("adaptive",) if quick else ("transformed", "adaptive"):
            if f"{method} {e}" not in results["drift"]:
                results["drift"][f"{method} {e}"] = drift(method, e, orbits, per_orbit)
                if cache:
                    Path(cache).write_text(json.dumps(results, indent=1))
    print(
        f"\nEnergy over {orbits} orbits, {per_orbit} steps an orbit: band of |H − H0|, and the "
        "trend over the run of a line through the bands of 20 parts, over the band\n"
    )
    print("| e | map | band | trend / band | wall (s) |")
    print("|---|---|---|---|---|")
    for key, r in results["drift"].items():
        method, e = key.split()
        print(f"| {e} | {method} | {r['band']:.2e} | {r['trend']:+.3f} | {r['wall']:.1f} |")
    fewest = min(results["steps"][f"fixed {e}"]["steps"] / results["steps"][f"{m} {e}"]["steps"]
                 for e in eccentricities for m in ("transformed", "adaptive")
                 if f"{m} {e}" in results["steps"])  # fmt: skip
    trend = max(abs(r["trend"]) for r in results["drift"].values())
    print(
        f"targets: variable steps ≥ 20× fewer than fixed steps ({fewest:.0f}× at least); "
        f"energy trend < 5 % of its band ({100 * trend:.1f} % at most)"
    )
    if out:
        with open(out, "w") as fh:
            json.dump(results, fh, indent=1)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default=None)
    parser.add_argument("--cache", default=None, help="keep (and reuse) what was measured")
    args = parser.parse_args()
    main(args.quick, args.json, args.cache)
