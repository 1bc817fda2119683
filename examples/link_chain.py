"""A chain of ten rigid links on spherical joints, by the constrained Lie group
variational integrator: the joints at round-off, the energy in a band, the force each
joint carries, and the path of the chain's free end.

``mi.systems.link_chain(10)`` is ten solid cylinders (0.1 m, 0.1 kg, radius 5 mm) as
``RigidBodies`` with a joint from link 0's top to the origin and from each link's top to
the one before's bottom (the preset ``link-chain-10``: tilted 0.6 rad in space and
spun).  ``mi.integrators.LieGroupVariational()`` is RATTLE in the bodies' variables: each
step solves the joints' impulses so that the Moser–Veselov steps of the links end on
the joints, then projects the momenta onto their rates.  ``multipliers`` reads each
joint's force from any saved state: the top joint carries the chain's weight plus what
its swinging adds.

python examples/link_chain.py [--quick] [--out FIGURE]
"""

from __future__ import annotations

import argparse

import numpy as np

import mechint as mi


def main(quick: bool = False, out: str | None = None) -> dict:
    system, x0 = mi.systems.RigidBodies.presets["link-chain-10"]()
    h, steps = 1e-3, (2_400 if quick else 24_000)  # t = 2.4 or 24 s
    lgvi = mi.integrators.LieGroupVariational()
    yoshida = mi.integrators.Composition(lgvi, "yoshida4")  # three LGVI steps a step
    runs = {
        "LGVI, h = 1 ms": mi.simulate(system, lgvi, x0, h, steps, steps // 400),
        "Yoshida-4 of the LGVI, h = 3 ms": mi.simulate(system, yoshida, x0, 3 * h, steps // 3,
                                                        steps // 1200),
    }  # fmt: skip
    result = {}
    for name, traj in runs.items():
        inv = system.invariants(traj.x)
        H = np.asarray(inv["H"])
        result[name] = {
            "energy band": float(np.ptp(H) / abs(H[0])),
            "joints": float(np.max(np.asarray(inv["constraints"]))),
            "rates": float(np.max(np.asarray(inv["constraint_rates"]))),
        }
        r = result[name]
        print(f"{name}: |ΔH|/|H| band {r['energy band']:.2e}, largest joint residual "
              f"{r['joints']:.1e} m, rate {r['rates']:.1e} m/s")  # fmt: skip
    traj = runs["LGVI, h = 1 ms"]
    force = np.asarray(system.multipliers(traj.x))  # (saves, joints, 3)
    weight = 10 * 0.1 * 9.81
    top = np.linalg.norm(force[:, 0], axis=-1)
    result["top joint / weight"] = (float(top.min() / weight), float(top.max() / weight))
    print(
        f"the top joint carries {top.min() / weight:.2f} to {top.max() / weight:.2f} "
        "times the chain's weight"
    )

    if out:
        import matplotlib.pyplot as plt

        fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(12, 3.6))
        for name, run in runs.items():
            H = np.asarray(system.hamiltonian(run.x))
            ax1.plot(run.t, (H - H[0]) / abs(H[0]), lw=0.8, label=name)
        ax1.set(xlabel="t (s)", ylabel="(H − H₀)/|H₀|", title="energy: a band, no drift")
        ax1.legend(fontsize=8)
        ax2.plot(traj.t, top / weight, lw=0.8, label="top joint")
        ax2.plot(traj.t, np.linalg.norm(force[:, -1], axis=-1) / weight, lw=0.8,
                 label="last joint")  # fmt: skip
        ax2.set(xlabel="t (s)", ylabel="|force| / chain's weight", title="joint forces")
        ax2.legend(fontsize=8)
        pos, R = np.asarray(traj.x[0]), np.asarray(traj.x[2])
        end = pos[:, -1] + R[:, -1] @ np.array([0.0, 0.0, -0.05])  # the free end
        ax3.plot(end[:, 0], end[:, 1], lw=0.6)
        ax3.set(xlabel="x (m)", ylabel="y (m)", title="the free end, seen from above")
        ax3.set_aspect("equal")
        fig.tight_layout()
        fig.savefig(out, dpi=120)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="write the figure here (.png)")
    args = parser.parse_args()
    main(args.quick, args.out)
