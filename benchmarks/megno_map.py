"""A MEGNO stability map: mechint's ``stability_map`` against REBOUND 5.2.2 (WHFast + MEGNO).

    python benchmarks/megno_map.py [--quick] [--na 20 --ne 10 --periods 10000]

Needs ``rebound==5.2.2``.  Problem: REBOUND's MEGNO example (its ``Megno.ipynb``): G = 1,
a star of mass 1, Jupiter (m = 0.000954, a = 5.204, e = 0.048, omega = 0.257, M = 0.600)
and Saturn (m = 0.000285, omega = 1.616, M = 0.871) with Saturn's a in [7, 10] and e in
[0, 0.5] on an na x ne grid, Jacobi elements, WHFast (standard kernel, no corrector) at
h = 5 for ``--periods`` Jupiter periods (P_J = 2 pi sqrt(5.204^3 / 1.000954), 14.92
steps), a body farther than 20 from the centre of mass ending the run (REBOUND's
``exit_max_distance``, mechint's ``escape``).

* REBOUND: one simulation per point, ``sim.init_megno(seed=s)``, in a
  ``multiprocessing.Pool(2)`` forked before JAX runs (its MEGNO needs safe_mode=1); an
  escape counts as chaotic.  Run for seeds 1 and 2: the spread between two random first
  tangent vectors is what a finite run's ⟨Y⟩ cannot decide.
* mechint: ``stability_map`` (one batch, ``Tangent(WisdomHolman())``, seed 0), wall time
  with compilation and without it (a second, compiled call).

Reported: the wall times, and the agreement of ⟨Y⟩: the fraction of points classified
alike (chaotic: ⟨Y⟩ > 2.5, escaped or failed), and on the points both call regular the
median and largest |⟨Y⟩_mechint − ⟨Y⟩_REBOUND| beside REBOUND's own seed-to-seed
differences.  Writes ``benchmarks/results/megno-map.md``.  Times are wall-clock on
whatever machine runs it.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import time
from pathlib import Path

import numpy as np

JUPITER = {"m": 0.000954, "a": 5.204, "e": 0.048, "omega": 0.257, "M": 0.600}
SATURN = {"m": 0.000285, "omega": 1.616, "M": 0.871}
H, ESCAPE, THRESHOLD = 5.0, 20.0, 2.5


def rebound_point(args) -> float:
    a, e, steps, seed = args
    import rebound

    sim = rebound.Simulation()
    sim.integrator = "whfast"
    sim.dt = H
    sim.add(m=1.0)
    sim.add(**JUPITER)
    sim.add(a=a, e=e, **SATURN)
    sim.move_to_com()
    sim.init_megno(seed=seed)
    sim.exit_max_distance = ESCAPE
    try:
        sim.steps(steps)
    except rebound.Escape:
        return np.nan
    return sim.megno()


def plain_map(masses, elements, a, e, steps) -> float:
    """The compiled wall time of the map alone (no tangent) on the grid's systems, one
    batch: what the tangent costs, and how the map runs on a batch whose chaotic members
    need the general Kepler solve at most steps."""
    import jax

    import mechint as mi

    aa, ee = (g.ravel() for g in np.meshgrid(a, e, indexing="ij"))
    batch = {k: np.tile(v, (aa.size, 1)) for k, v in elements.items()}
    batch["a"][:, 1], batch["e"][:, 1] = aa, ee
    system, x0 = mi.systems.NBody.from_elements(masses, batch, escape=ESCAPE)
    wh = mi.integrators.WisdomHolman()
    mi.simulate(system, wh, x0, H, steps, steps, throw=False)
    t = time.perf_counter()
    jax.block_until_ready(mi.simulate(system, wh, x0, H, steps, steps, throw=False).x)
    return time.perf_counter() - t


def main(quick: bool = False, na: int = 20, ne: int = 10, periods: float = 10_000.0) -> dict:
    try:
        import rebound  # noqa: F401
    except ImportError:  # the test environment: the map itself is tested in test_stability
        print("REBOUND is not installed (make bench installs it): nothing to race; "
              "tests/test_stability.py runs the map")  # fmt: skip
        print("targets: not measured without REBOUND")
        return {}
    period_steps = 2 * np.pi * np.sqrt(JUPITER["a"] ** 3 / (1 + JUPITER["m"])) / H
    if quick:
        na, ne, periods = 8, 5, 42.0
    steps = round(float(periods * period_steps))
    a, e = np.linspace(7, 10, na), np.linspace(0, 0.5, ne)
    points = [(ai, ei) for ai in a for ei in e]
    pool = mp.get_context("fork").Pool(2)  # before JAX starts threads
    rb, rb_wall = {}, {}
    for seed in (1, 2):
        t = time.perf_counter()
        rb[seed] = np.array(pool.map(rebound_point, [(ai, ei, steps, seed) for ai, ei in points]))
        rb_wall[seed] = time.perf_counter() - t
    pool.close()

    from mechint.stability import stability_map

    elements = {"a": [JUPITER["a"], 9.0], "e": [JUPITER["e"], 0.1],
                "omega": [JUPITER["omega"], SATURN["omega"]],
                "M": [JUPITER["M"], SATURN["M"]]}  # fmt: skip
    run = dict(h=H, steps=steps, escape=ESCAPE)
    masses = [1.0, JUPITER["m"], SATURN["m"]]
    t = time.perf_counter()
    ds = stability_map(masses, elements, 2, {"a": a, "e": e}, **run)
    first = time.perf_counter() - t
    t = time.perf_counter()
    stability_map(masses, elements, 2, {"a": a, "e": e}, **run)
    again = time.perf_counter() - t
    y = ds["megno"].values.ravel()
    plain = plain_map(masses, elements, a, e, steps)

    def chaotic(v):
        return ~(v <= THRESHOLD)  # NaN (escaped, failed) counts as chaotic

    agree = float(np.mean(chaotic(y) == chaotic(rb[1])))
    agree_rb = float(np.mean(chaotic(rb[2]) == chaotic(rb[1])))
    regular = ~chaotic(y) & ~chaotic(rb[1]) & ~chaotic(rb[2])
    d_mi = np.abs(y - rb[1])[regular]
    d_rb = np.abs(rb[2] - rb[1])[regular]
    result = {
        "points": len(points), "steps": steps, "periods": periods,
        "rebound wall": rb_wall[1], "mechint wall": first, "mechint wall compiled": again,
        "mechint plain map compiled": plain,
        "agree": agree, "agree rebound seeds": agree_rb, "regular": int(regular.sum()),
        "median |dY| mechint-rebound": float(np.median(d_mi)) if d_mi.size else np.nan,
        "max |dY| mechint-rebound": float(np.max(d_mi)) if d_mi.size else np.nan,
        "median |dY| rebound seeds": float(np.median(d_rb)) if d_rb.size else np.nan,
        "max |dY| rebound seeds": float(np.max(d_rb)) if d_rb.size else np.nan,
    }  # fmt: skip
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}"
    lines = [
        f"MEGNO map, Sun-Jupiter-Saturn, Saturn's (a, e) on {na} x {ne} points, "
        f"{periods:g} Jupiter periods ({steps} WHFast steps, h = {H}), escape at {ESCAPE}; "
        f"{time.strftime('%Y-%m-%d')}, {machine}",
        "",
        "| | wall (s) | chaotic/regular as REBOUND seed 1 | regular points: median / max |ΔY| |",
        "|---|---|---|---|",
        f"| REBOUND 5.2.2, Pool(2), seed 1 | {rb_wall[1]:.1f} | (itself) | |",
        f"| REBOUND 5.2.2, Pool(2), seed 2 | {rb_wall[2]:.1f} | {agree_rb:.1%} | "
        f"{result['median |dY| rebound seeds']:.2g} / {result['max |dY| rebound seeds']:.2g} |",
        f"| mechint stability_map (compiled; with compiling) | {again:.1f} ({first:.1f}) | "
        f"{agree:.1%} | {result['median |dY| mechint-rebound']:.2g} / "
        f"{result['max |dY| mechint-rebound']:.2g} |",
        f"| mechint WisdomHolman, no tangent, the same batch (compiled) | {plain:.1f} | | |",
        "",
        f"Speed: mechint / REBOUND Pool(2) = {rb_wall[1] / again:.2f}x (compiled call).",
    ]
    yes = {True: "met", False: "NOT met"}
    print(f"targets: >= 4x REBOUND's Pool(2) {yes[rb_wall[1] / again >= 4]} "
          f"({rb_wall[1] / again:.2f}x); classification agreement >= 99% "
          f"{yes[agree >= 0.99]} ({agree:.1%}; REBOUND's two seeds {agree_rb:.1%})")  # fmt: skip
    text = "\n".join(lines)
    print(text)
    if not quick:
        Path(__file__).with_name("results").joinpath("megno-map.md").write_text(text + "\n")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--na", type=int, default=20)
    parser.add_argument("--ne", type=int, default=10)
    parser.add_argument("--periods", type=float, default=10_000.0)
    args = parser.parse_args()
    main(args.quick, args.na, args.ne, args.periods)
