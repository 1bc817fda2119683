"""Speed of Marsden's energy maps and Gauss collocation beside the implicit midpoint rule.

    python benchmarks/energy.py [--quick]

Steps per second (one trajectory, ``mi.simulate``, save_every = 100, compile excluded,
best of 3) of the average vector field, Gonzalez's and Itoh–Abe's discrete gradients
and Gauss(s = 2, 4) beside implicit midpoint, on Kepler (e = 0.5, h = 0.01; H not
polynomial: 8 quadrature nodes, checked against 16 after each step) and on Hénon–Heiles
(H cubic: 2 nodes, exact), and Gauss beside midpoint on the Euler top (the energy maps
serve canonical systems).  All are Newton solves with the exact Jacobian.  Targets: the
energy maps within 4× of midpoint's cost on the same system.  Quick: Kepler, 10^3 steps,
three maps.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best_of

import mechint as mi

I = mi.integrators
MAPS = [
    ("implicit midpoint", I.ImplicitMidpoint()),
    ("average vector field", I.AverageVectorField()),
    ("Gonzalez", I.DiscreteGradient("gonzalez")),
    ("Itoh–Abe", I.DiscreteGradient("itoh-abe")),
    ("Gauss, s = 2", I.Gauss(2)),
    ("Gauss, s = 4", I.Gauss(4)),
]


def main(quick: bool = False) -> list[dict]:
    kepler, hh, top = mi.systems.Kepler(), mi.systems.HenonHeiles(), mi.systems.EulerTop()
    systems = [
        ("Kepler", kepler, kepler.periapsis_state(0.5)),
        ("Hénon–Heiles", hh, (np.array([0.1, -0.2]), np.array([0.3, 0.25]))),
        ("Euler top", top, top.example_state()),
    ][: 1 if quick else 3]
    steps = 1_000 if quick else 100_000
    maps = [MAPS[i] for i in (0, 1, 4)] if quick else MAPS
    rows = []
    for sname, system, x0 in systems:
        for name, integrator in maps:
            if integrator.cannot_serve(system) is not None:
                continue

            def run(system=system, integrator=integrator, x0=x0):
                return mi.simulate(system, integrator, x0, 0.01, steps, 100)

            run()  # compile
            rows.append({"system": sname, "map": name,
                         "steps/s": steps / best_of(run, 3).best})  # fmt: skip
    print(f"Energy maps and Gauss beside midpoint ({steps} steps, one trajectory, CPU); "
          "targets: energy maps within 4× of midpoint's cost")  # fmt: skip
    print("| system | map | steps/s | cost / midpoint |")
    print("|---|---|---|---|")
    for r in rows:
        base = next(x for x in rows if x["system"] == r["system"] and x["map"] == MAPS[0][0])
        print(f"| {r['system']} | {r['map']} | {r['steps/s']:.3g} | "
              f"{base['steps/s'] / r['steps/s']:.2f} |")  # fmt: skip
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
