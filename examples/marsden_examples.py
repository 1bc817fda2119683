"""Marsden's mechanical integrators, Examples 1-3, measured on the pendulum (docs/math.md §4).

python examples/marsden_examples.py [--quick]

Example 1 (symplectic Euler, q = q0 + h p0, p = p0 − h V'(q)), its adjoint, Example 2
(the implicit second-order scheme q = q0 + h(p + p0)/2, p = p0 − h V'((q + q0)/2), which
is the implicit midpoint rule for H = p²/2 + V(q)), Example 3 (implicit midpoint) and
Störmer-Verlet: symplectic defect max|DΦᵀ𝕁DΦ − 𝕁| at h = 0.1, observed order against
DOP853 (T = 2), and the energy error band over a long run.  Last, for a linear system
ż = Az the midpoint map is the Cayley transform (I − hA/2)⁻¹(I + hA/2).
"""

from __future__ import annotations

import argparse

import jax.numpy as jnp
import numpy as np

import mechint as mi

D = mi.diagnostics
I = mi.integrators

METHODS = [
    ("Example 1: symplectic Euler", I.SymplecticEuler("A"), 1),
    ("adjoint symplectic Euler", I.SymplecticEuler("B"), 1),
    ("Example 2 = Example 3: midpoint", I.ImplicitMidpoint(), 2),
    ("Störmer-Verlet", I.StormerVerlet(), 2),
]


def example_2_step(system, q0, p0, h, iterations=100):
    """Marsden's Example 2 by fixed-point iteration (independent of mechint's midpoint)."""
    w2 = float(system.omega) ** 2
    q, p = q0, p0
    for _ in range(iterations):
        q, p = q0 + h * (p + p0) / 2, p0 - h * w2 * np.sin((q + q0) / 2)
    return q, p


def main(quick: bool = False) -> dict:
    pendulum = mi.systems.Pendulum(1.0)
    x0 = (np.array([1.2]), np.array([0.4]))
    ref = D.reference_state(pendulum, x0, 2.0)[0]
    hs = 2.0 / np.array([20, 40, 80, 160])
    steps = 10_000 if quick else 1_000_000
    rows = []
    # quick: in calls of 64 saves, the compiled program of the order runs (one save each)
    chunk = 64 * (steps // 100) if quick else None
    for label, method, claimed in METHODS:
        traj = mi.simulate(pendulum, method, x0, 0.1, steps, steps // 100, chunk_steps=chunk)
        rows.append(
            {
                "method": label,
                "symplectic defect": D.symplectic_defect(pendulum, method, x0, 0.1),
                "order": D.observed_order(pendulum, method, x0, 2.0, hs, ref).order,
                "claimed": claimed,
                "energy band": float(np.max(D.invariant_errors(pendulum, traj)["H"])),
            }
        )
    q2, p2 = example_2_step(pendulum, *x0, 0.1)
    (qm, pm), _ = I.ImplicitMidpoint().step(pendulum, tuple(map(jnp.asarray, x0)), 0.1)
    example_2_vs_midpoint = float(max(np.abs(q2 - qm).max(), np.abs(p2 - pm).max()))

    oscillator = mi.systems.HarmonicOscillator([1.0, 3.0])
    z0 = (np.array([1.0, 0.2]), np.array([0.0, -0.5]))
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.diag([1.0, 9.0]), np.zeros((2, 2))]])
    cayley = np.linalg.solve(np.eye(4) - 0.05 * A, np.eye(4) + 0.05 * A)
    traj = mi.simulate(oscillator, I.ImplicitMidpoint(), z0, 0.1, 100, 100)
    z = np.linalg.matrix_power(cayley, 100) @ np.concatenate(z0)
    cayley_gap = float(np.max(np.abs(np.concatenate([traj.x[0][-1], traj.x[1][-1]]) - z)))

    print(f"Pendulum, h = 0.1; energy band over {steps} steps; order fitted at T = 2")
    print("| method | symplectic defect | observed order | energy band |")
    print("|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['method']} | {r['symplectic defect']:.1e} | {r['order']:.2f} "
            f"(claimed {r['claimed']}) | {r['energy band']:.1e} |"
        )
    print(f"Example 2 solved by fixed-point iteration vs midpoint: {example_2_vs_midpoint:.1e}")
    print(f"midpoint vs Cayley transform, linear oscillator, 100 steps: {cayley_gap:.1e}")
    return {"rows": rows, "example 2 vs midpoint": example_2_vs_midpoint, "cayley": cayley_gap}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
