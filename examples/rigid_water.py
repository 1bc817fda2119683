"""A cluster of 27 rigid TIP3P water molecules by SETTLE: bonds at round-off, the energy
in a band, the temperature it settles to, and a batch of clusters in one program.

``mi.systems.RigidWater(27, "tip3p")`` is 27 three-site molecules on a 3×3×3 lattice of
0.31 nm, turned at random, with velocities at 300 K (the preset ``cluster-27``),
interacting by Coulomb's law between the sites of different molecules and Lennard-Jones
between the oxygens, in vacuum (no box, no cutoff).  ``mi.integrators.Settle()`` holds
each molecule's three distances in closed form: the run reports the largest bond
residual and its rate at every saved state.  The energy's error stays in a band
(SETTLE is symplectic on the manifold); the kinetic temperature T = 2K / (k_B (6N − 6))
(six degrees of freedom a molecule, less the kept total momentum and angular momentum)
rises as the cluster, released from its lattice, binds: potential energy turns into
heat, with no thermostat to take it.  Units: nm, ps, amu, kJ/mol.

python examples/rigid_water.py [--quick] [--out FIGURE]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mechint as mi

K_B = 0.0083144626  # kJ/(mol K)


def temperature(system, x) -> np.ndarray:
    """The kinetic temperature of each saved state (K), from the sites' momenta."""
    masses = np.repeat(np.asarray(system.system.params["masses"]), 3)  # per coordinate
    p = np.asarray(x[1])
    kinetic = 0.5 * np.sum(p * p / masses, axis=-1)
    return 2.0 * kinetic / (K_B * (6 * system.molecules - 6))


def main(quick: bool = False, out: str | None = None) -> dict:
    system, x0 = mi.systems.RigidWater.presets["cluster-27"]()
    h, steps = 1e-3, (1_000 if quick else 20_000)  # 1 fs; 1 or 20 ps
    traj = mi.simulate(system, mi.integrators.Settle(), x0, h, steps, steps // 200)
    inv = system.invariants(traj.x)
    scales = system.invariant_scales(traj.x)
    H = np.asarray(inv["H"])
    T = temperature(system, traj.x)

    def worst(key):
        return float(np.max(np.asarray(inv[key]) / np.asarray(scales[key])))

    result = {
        "energy band": float(np.ptp(H) / abs(H[0])),
        "bonds": worst("constraints"),
        "rates": worst("constraint_rates"),
        "P": float(max(np.ptp(np.asarray(inv[k])) for k in ("Px", "Py", "Pz"))),
        "temperature": (float(T[0]), float(T[-1])),
    }
    print(f"27 molecules, {steps} steps of 1 fs: |ΔH|/|H| band {result['energy band']:.2e}, "
          f"largest residuals {result['bonds']:.1e} (bonds), {result['rates']:.1e} (rates), "
          f"P kept to {result['P']:.1e}; T {T[0]:.0f} K -> {T[-1]:.0f} K")  # fmt: skip

    # a batch: clusters from different random turns and velocities, one compiled program
    count = 8 if quick else 64
    starts = [system.cluster(seed=s) for s in range(count)]
    batch = tuple(np.stack(parts) for parts in zip(*starts, strict=True))
    settle = mi.integrators.Settle()
    mi.simulate(system, settle, batch, h, 10, 10)  # compile
    t0 = time.perf_counter()
    clusters = mi.simulate(system, settle, batch, h, 500, 50)
    seconds = time.perf_counter() - t0
    result["batch cluster-steps/s"] = count * 500 / seconds
    print(f"{count} clusters x 500 steps in {seconds:.2f} s: "
          f"{result['batch cluster-steps/s']:.3g} cluster-steps/s, "
          f"{int(np.sum(clusters.failed))} failed")  # fmt: skip

    if out:
        import matplotlib.pyplot as plt

        fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(12, 3.6))
        ax1.plot(traj.t, (H - H[0]) / abs(H[0]), lw=0.8)
        ax1.set(xlabel="t (ps)", ylabel="(H − H₀)/|H₀|", title="energy: a band, no drift")
        ax2.plot(traj.t, T, lw=0.8)
        ax2.plot(clusters.t, temperature(system, clusters.x).T, lw=0.4, color="0.6", alpha=0.4)
        ax2.set(xlabel="t (ps)", ylabel="T (K)",
                title=f"temperature (grey: {count} other clusters)")  # fmt: skip
        g = np.asarray(inv["constraints"])
        ax3.semilogy(traj.t, np.maximum(g, 1e-20), ".", ms=2)
        ax3.set(xlabel="t (ps)", ylabel="max |g| (nm²)", title="bond residuals (floor 1e-20)")
        fig.tight_layout()
        fig.savefig(out, dpi=120)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="write the figure here (.png)")
    args = parser.parse_args()
    main(args.quick, args.out)
