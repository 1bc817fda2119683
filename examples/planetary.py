"""The outer solar system by Wisdom–Holman maps: one system for a long time, and many at once.

The Sun (with the inner planets' mass), Jupiter, Saturn, Uranus, Neptune and Pluto of
Hairer, Lubich & Wanner's *Geometric Numerical Integration* (§I.2.4; AU, days, solar
masses, G = k²), advanced by ``WisdomHolman`` (Jacobi coordinates, the standard kernel)
at h = 50 days, about 1/87 of Jupiter's period: the energy error stays bounded (a
symplectic map), at O(ε h²) with ε ≈ 1e-3 the planets' mass ratio, and the momenta are
kept to round-off; with the corrector of order 11 the same step gains two orders.  Then
a batch of outer solar systems, each planet's position moved by 1e-6 of itself, all
advanced in one call: the spread of Jupiter's longitude grows as the system's chaos
amplifies it.  Where REBOUND is installed (``pip install rebound``) its WHFast runs the
same system at the same step for the energy error side by side.

python examples/planetary.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mechint as mi

DAYS_PER_YEAR = 365.25
H = 50.0  # days


def energy_error(system, traj) -> np.ndarray:
    H_ = traj.invariants()["H"]
    return np.abs(H_ - H_[0]) / abs(H_[0])


def rebound_energy_error(x0, masses, G, h, steps, every):
    """REBOUND's WHFast (Jacobi, safe mode off) on the same state: |ΔE/E| every ``every``
    steps, or None where REBOUND is not installed."""
    try:
        import rebound
    except ImportError:
        return None
    sim = rebound.Simulation()
    sim.G = G
    q, p = x0
    for m, qi, pi in zip(masses, q, p, strict=True):
        sim.add(m=m, x=qi[0], y=qi[1], z=qi[2], vx=pi[0] / m, vy=pi[1] / m, vz=pi[2] / m)
    sim.integrator = "whfast"
    sim.integrator.safe_mode = 0
    sim.dt = h
    e0 = sim.energy()
    out = [0.0]
    for _ in range(steps // every):
        sim.steps(every)
        out.append(abs((sim.energy() - e0) / e0))
    return np.array(out)


def main(quick: bool = False, out: str | None = None) -> dict:
    system, x0 = mi.systems.nbody.outer_solar_system()
    years = 2e3 if quick else 1e6
    every = 100
    steps = every * int(years * DAYS_PER_YEAR / H / every)
    rows = {}
    maps = {"WH": mi.integrators.WisdomHolman(),
            "WH, corrector 11": mi.integrators.WisdomHolman(corrector=11)}  # fmt: skip
    for label, integrator in maps.items():
        n = steps if label == "WH" else every * max(1, steps // every // (100 if not quick else 10))
        traj = mi.simulate(system, integrator, x0, H, n, every)
        inv = traj.invariants()
        rows[label] = {
            "years": traj.t / DAYS_PER_YEAR,
            "dE/E": energy_error(system, traj),
            "L drift": max(float(np.max(np.abs(inv[k] - inv[k][0]))) for k in ("Lx", "Ly", "Lz")),
            "steps/s": n / max(traj.stats["wall_time"] - traj.stats["compile_time"], 1e-9),
        }
    reb = rebound_energy_error(x0, np.asarray(system.masses), float(system.G), H, steps, every)
    # many systems at once
    batch = 16 if quick else 10_000
    rng = np.random.default_rng(0)
    q = x0[0] * (1 + 1e-6 * rng.normal(size=(batch, *x0[0].shape)))
    p = np.broadcast_to(x0[1], q.shape).copy()
    batch_years = 100 if quick else 1e5
    batch_steps = int(batch_years * DAYS_PER_YEAR / H)
    start = time.perf_counter()
    many = mi.simulate(system, mi.integrators.WisdomHolman(), (q, p), H, batch_steps, batch_steps)
    wall = time.perf_counter() - start
    el = system.to_elements((many.x[0][:, -1], many.x[1][:, -1]))
    lam = np.asarray(el["M"] + el["omega"] + el["Omega"])[:, 0]
    spread = float(np.std(np.angle(np.exp(1j * (lam - lam[0])))))
    result = {
        "rows": rows,
        "rebound dE/E": reb,
        "batch": batch,
        "batch years": batch_years,
        "batch body-steps/s": batch * batch_steps * system.n / wall,
        "Jupiter longitude spread": spread,
        "batch failed": int(np.sum(many.failed)),
    }
    if out:
        figure(result).savefig(out, dpi=130)
    report(result)
    return result


def report(r: dict) -> None:
    for label, row in r["rows"].items():
        print(f"{label}: max |dE/E| {np.max(row['dE/E']):.2e} over {row['years'][-1]:.3g} years, "
              f"L drift {row['L drift']:.1e}, {row['steps/s']:.3g} steps/s")  # fmt: skip
    if r["rebound dE/E"] is not None:
        print(f"REBOUND WHFast: max |dE/E| {np.max(r['rebound dE/E']):.2e}")
    spread = r["Jupiter longitude spread"]
    print(f"{r['batch']} systems x {r['batch years']:g} years: {r['batch body-steps/s']:.3g} "
          f"body-steps/s; Jupiter's longitude spread {spread:.2e} rad")  # fmt: skip


def figure(result):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, row in result["rows"].items():
        ax.loglog(row["years"][1:], row["dE/E"][1:], label=f"mechint {label}")
    if result["rebound dE/E"] is not None:
        wh = result["rows"]["WH"]["years"]
        ax.loglog(wh[1:], result["rebound dE/E"][1:], "k:", label="REBOUND WHFast")
    ax.set_xlabel("years")
    ax.set_ylabel("|ΔE/E|")
    ax.set_title("Outer solar system, h = 50 days")
    ax.legend()
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="planetary.png")
    args = parser.parse_args()
    main(args.quick, args.out)
