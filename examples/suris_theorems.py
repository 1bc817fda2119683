"""Suris's discrete Lagrangian map for the rigid body in a quadratic potential: the
theorems of the paper, measured (docs/math.md §3).

python examples/suris_theorems.py [--quick]

For the top on so(n) ⋉ Symm(n), n = 3, 4, 5, and the Clebsch case on e(3), from a
seeded generic state: the Poisson defect of one step (h = 0.1), the isospectral drift
(largest relative change of the integrals of the discrete Lax matrix over the run), the
reversibility defect, and the observed order against DOP853 (errors at T = 1, fitted
above the round-off floor).
"""

from __future__ import annotations

import argparse

import numpy as np

import mechint as mi

D = mi.diagnostics


def state(kind: str, n: int, seed: int = 0):
    rng = np.random.default_rng(seed + n)
    A = 0.5 * rng.standard_normal((n, n))
    M = A - A.T
    J = rng.uniform(0.5, 2.0, n)
    if kind == "clebsch":
        return mi.systems.ClebschTop(J), (M, rng.standard_normal(n))
    B = 0.5 * rng.standard_normal((n, n))
    return mi.systems.QuadraticPotentialTop(J), (M, B + B.T)


def measure(kind: str, n: int, steps: int, quick: bool = False) -> dict:
    system, x0 = state(kind, n)
    dl = mi.integrators.DiscreteLagrangian()
    # quick: in calls of 64 saves, the compiled program of the order runs below (one save)
    chunk = 64 * (steps // 100) if quick else None
    traj = mi.simulate(system, dl, x0, 0.05, steps, steps // 100, chunk_steps=chunk)
    kept = D.preserved_errors(traj)
    lax = max(float(np.max(v)) for k, v in kept.items() if k.startswith("L"))
    ref = D.reference_state(system, x0, 1.0)[0]
    order = D.observed_order(system, dl, x0, 1.0, 1.0 / np.array([10, 20, 40, 80]), ref)
    return {
        "system": f"{type(system).__name__} n = {n}",
        "poisson": D.poisson_defect(system, dl, x0, 0.1),
        "lax drift": lax,
        "H~ drift": float(np.max(kept["H~"])),
        "reversibility": D.reversibility_defect(system, dl, x0, 0.1),
        "order": order.order,
        "steps": steps,
    }


def main(quick: bool = False) -> list[dict]:
    cases = (
        [("top", 3), ("clebsch", 3)]
        if quick
        else [("top", 3), ("top", 4), ("top", 5), ("clebsch", 3)]
    )
    steps = 1000 if quick else 10_000
    rows = [measure(kind, n, steps, quick) for kind, n in cases]
    print(f"Suris's map, h = 0.05 over {steps} steps (Poisson and reversibility at h = 0.1)")
    print("| system | Poisson defect | Lax integrals drift | H~ drift | reversibility | order |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['system']} | {r['poisson']:.1e} | {r['lax drift']:.1e} | {r['H~ drift']:.1e} "
            f"| {r['reversibility']:.1e} | {r['order']:.2f} |"
        )
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
