"""Speed of every map on the heavy top, one trajectory and a batch.

    python benchmarks/heavy_top.py [--quick]

Steps per second (``mi.simulate``, compile excluded, best of 3) on the heavy top
I = (2, 1.5, 1), χ = (0, 0.5, 1), h = 0.01: one trajectory of 10⁵ steps, and a batch of
10⁵ states on one Casimir level set (``sample_level_set``) for 10 steps (body-steps per
second: steps × batch / s; best of 2).  Maps: the explicit Lie–Poisson splitting (orders 2, 4, 8),
the discrete Lagrangian map (a Newton solve for W ∈ SO(3) a step), Kahan (one 6×6
linear solve) and implicit midpoint (Newton), all on CPU in float64.  Targets: the
explicit splitting of order 2 the fastest, the discrete Lagrangian map within 2× of
midpoint (both one Newton solve a step).  Quick: two maps, 10³ steps, a batch of 10².
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best_of

import mechint as mi

I = mi.integrators
MAPS = [
    ("splitting, order 2", I.RigidBodySplitting(2)),
    ("splitting, order 4", I.RigidBodySplitting(4)),
    ("splitting, order 8", I.RigidBodySplitting(8)),
    ("discrete Lagrangian", I.DiscreteLagrangian()),
    ("Kahan", I.Kahan()),
    ("implicit midpoint", I.ImplicitMidpoint()),
]


def main(quick: bool = False) -> list[dict]:
    top = mi.systems.HeavyTop((2.0, 1.5, 1.0), (0.0, 0.5, 1.0))
    x0 = top.example_state()
    steps, batch, batch_steps = (1_000, 100, 20) if quick else (100_000, 100_000, 10)
    spec = {"m": x0[0], "gamma": x0[1]}
    states = top.sample_level_set(np.random.default_rng(0), batch, spec)
    rows = []
    for name, integrator in [MAPS[0], MAPS[3]] if quick else MAPS:

        def one(integrator=integrator):
            return mi.simulate(top, integrator, x0, 0.01, steps, steps // 10)

        def many(integrator=integrator):
            return mi.simulate(top, integrator, states, 0.01, batch_steps, batch_steps)

        one(), many()  # compile
        rows.append({"map": name, "one": steps / best_of(one, 3).best,
                     "batch": batch_steps * batch / best_of(many, 2).best})  # fmt: skip
        print(f"  {name}: {rows[-1]['one']:.3g} steps/s, batch {rows[-1]['batch']:.3g}",
              flush=True)  # fmt: skip
    print(f"Heavy top, h = 0.01, CPU float64: steps/s of one trajectory ({steps} steps) and "
          f"body-steps/s of a batch of {batch} ({batch_steps} steps); targets: order-2 "
          "splitting fastest, discrete Lagrangian within 2× of midpoint")  # fmt: skip
    print("| map | one trajectory, steps/s | batch, body-steps/s |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r['map']} | {r['one']:.3g} | {r['batch']:.3g} |")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
