"""Quick start: Kahan's map on the free rigid body, checked against the exact solution.

python examples/quickstart.py [--quick]
"""

from __future__ import annotations

import argparse

import numpy as np

import mechint as mi


def main(quick: bool = False) -> dict:
    top = mi.systems.EulerTop(inertia=(2.0, 1.0, 2 / 3))
    m0 = np.array([0.45, 0.0, 0.89])
    steps = 10_000 if quick else 100_000
    traj = mi.simulate(top, mi.integrators.Kahan(), m0, h=0.01, steps=steps, save_every=100)
    exact = mi.exact.euler_top(top, m0, traj.t)
    result = {
        "global error": float(np.abs(traj.x - exact).max()),
        "max |dK1|/|K1|": float(mi.diagnostics.preserved_errors(traj)["K1"].max()),
        "max |dH|/|H|": float(mi.diagnostics.invariant_errors(top, traj)["H"].max()),
    }
    for name, value in result.items():
        print(f"{name:>16}: {value:.3e}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
