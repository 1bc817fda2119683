"""The Ge–Marsden theorem as a measured table: no map keeps both the symplectic form and
the energy of a non-integrable system (Ge & Marsden 1988; Marsden's lecture notes).

    python examples/ge_marsden.py [--quick] [--out ge_marsden.png]

On Hénon–Heiles (λ = 1, H ≈ 0.08, non-integrable) every symplectic map we ship has a
one-step energy defect |H(Φ_h(x)) − H(x)|/|H| of O(h^(p+1)) and every energy map a
symplectic defect max|DΦᵀ𝕁DΦ − 𝕁| of O(h^3) (O(h^2) for the first-order Itoh–Abe map):
exponents fitted over h = 0.4 … 0.025, verdicts as ``mechint check`` gives them.  On
the harmonic oscillator (quadratic H) the midpoint rule, the AVF and Gonzalez's map are
one and the same map and keep both.  The figure shows both defects against h on
Hénon–Heiles.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import mechint as mi
from mechint.diagnostics.onestep import jacobians

D = mi.diagnostics
I = mi.integrators

SYMPLECTIC = [
    ("symplectic Euler", I.SymplecticEuler()),
    ("Störmer–Verlet", I.StormerVerlet()),
    ("implicit midpoint", I.ImplicitMidpoint()),
    ("Yoshida 4 (Verlet)", I.Composition(I.StormerVerlet(), "yoshida4")),
    ("Gauss, s = 2", I.Gauss(2)),
]
ENERGY = [
    ("average vector field", I.AverageVectorField()),
    ("Gonzalez", I.DiscreteGradient("gonzalez")),
    ("Itoh–Abe", I.DiscreteGradient("itoh-abe")),
]
SYSTEMS = [
    ("Hénon–Heiles", mi.systems.HenonHeiles(), (np.array([0.1, -0.2]), np.array([0.3, 0.25]))),
    ("harmonic oscillator", mi.systems.HarmonicOscillator(jnp.array([1.0, 2.3])),
     (np.array([0.3, -0.1]), np.array([0.2, 0.4]))),
]  # fmt: skip


def defects(system, integrator, x, hs) -> tuple[np.ndarray, np.ndarray]:
    """(energy, symplectic) one-step defects over ``hs``, from one compiled, vmapped
    step and Jacobian (NaN where a step failed)."""
    symplectic, _ = D.symplectic_defects(system, integrator, x, hs)
    _, images, _, st = jacobians(system, integrator, x, hs)
    H0 = float(system.hamiltonian(jax.tree.map(jnp.asarray, x)))
    H1 = np.array([float(system.hamiltonian(system.from_coordinates(z))) for z in images])
    energy = np.where(np.asarray(st.ok), np.abs(H1 - H0) / abs(H0), np.nan)
    return energy, symplectic


# --quick (the test): an order-2 map of each kind and Itoh–Abe; the AVF on the oscillator
QUICK = {"Störmer–Verlet", "average vector field", "Itoh–Abe"}
QUICK_OSCILLATOR = {"average vector field"}


def measure(quick: bool = False) -> list[dict]:
    """One row per (system, map): both defects over h, fitted, with verdicts."""
    hs = 0.4 * 0.5 ** np.arange(4 if quick else 5)
    rows = []
    for sname, system, x in SYSTEMS:
        for kind, maps in (("symplectic", SYMPLECTIC), ("energy", ENERGY)):
            for name, integrator in maps:
                if quick and name not in (QUICK if sname == "Hénon–Heiles" else QUICK_OSCILLATOR):
                    continue
                values = defects(system, integrator, x, hs)
                energy, symplectic = (D.classify(hs, v, 1e-13) for v in values)
                rows.append({
                    "system": sname, "map": name, "kind": kind,
                    "order": integrator.traits.order, "h": hs,
                    "energy": energy, "symplectic": symplectic,
                    "both": energy.exact and symplectic.exact,
                })  # fmt: skip
    return rows


def figure(rows: list[dict], out: str) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharex=True)
    markers = "osD^v<>p"
    for i, r in enumerate(x for x in rows if x["system"] == "Hénon–Heiles"):
        style = "-" if r["kind"] == "symplectic" else "--"
        for ax, key in zip(axes, ("energy", "symplectic"), strict=True):
            values = np.maximum(r[key].defect, 1e-17)  # round-off shown at the floor
            ax.loglog(r["h"], values, style, marker=markers[i % len(markers)], ms=5,
                      label=f"{r['map']} ({r[key].verdict})")  # fmt: skip
    for ax, title in zip(axes, ("energy defect |ΔH|/|H|, one step",
                                "symplectic defect max|DΦᵀ𝕁DΦ − 𝕁|"), strict=True):  # fmt: skip
        ax.axhline(1e-13, color="grey", lw=0.8, ls=":")
        ax.set_xticks(rows[0]["h"], [f"{h:g}" for h in rows[0]["h"]])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("h")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Ge–Marsden on Hénon–Heiles: solid symplectic maps, dashed energy maps "
                 "(dotted: round-off floor)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(quick: bool = False, out: str = "ge_marsden.png") -> list[dict]:
    rows = measure(quick)
    print("| system | map | kind | order | energy defect | symplectic defect | both |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['system']} | {r['map']} | {r['kind']} | {r['order']} | "
              f"{r['energy'].verdict} | {r['symplectic'].verdict} | "
              f"{'yes' if r['both'] else 'no'} |")  # fmt: skip
    figure(rows, out)
    print(f"\nwrote {out}")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="ge_marsden.png")
    args = parser.parse_args()
    main(args.quick, args.out)
