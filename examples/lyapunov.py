"""Lyapunov exponents and MEGNO of Hénon-Heiles from the tangent map of a symplectic map.

``mi.integrators.Tangent(StormerVerlet(), vectors=4)`` carries four tangent vectors by
the exact tangent map of each step and renormalises them (Benettin's QR method);
``mi.diagnostics.lyapunov`` reads the spectrum after a warm-up that aligns the vectors
with the Lyapunov frame, ``mi.diagnostics.megno`` the mean exponential growth factor.
The map is symplectic, so the spectrum comes in ± pairs: λ1 + λ4 = λ2 + λ3 = 0 to
round-off, and the middle pair (the flow direction and the energy) tends to 0 like 1/T.
A regular orbit at the same energy has ⟨Y⟩ → 2; the chaotic one's grows like λ t / 2.

python examples/lyapunov.py [--quick]
"""

from __future__ import annotations

import argparse

import numpy as np

import mechint as mi

H_STEP = 0.05  # step size


def start(energy: float, y0: float):
    """x = 0, py = 0 and px from the energy."""
    px0 = np.sqrt(2 * (energy - (0.5 * y0**2 - y0**3 / 3)))
    return np.array([0.0, y0]), np.array([px0, 0.0])


def main(quick: bool = False) -> dict:
    system = mi.systems.HenonHeiles(1.0)
    energy = 0.125
    warm, measured = (1_000.0, 2_500.0) if quick else (10_000.0, 100_000.0)
    every = round(warm / H_STEP)  # a sample at the warm-up's end, then every warm-up
    steps = every * round((warm + measured) / warm)
    chaotic, regular = start(energy, -0.1), start(energy, 0.3)
    x0 = tuple(np.stack(parts) for parts in zip(chaotic, regular, strict=True))
    spectrum = mi.integrators.Tangent(mi.integrators.StormerVerlet(), vectors=4)
    run = mi.simulate(system, spectrum, x0, H_STEP, steps, save_every=every)
    lam = mi.diagnostics.lyapunov(run, warm_up=warm)
    y = mi.diagnostics.megno(run)
    T = float(run.t[-1] - warm)
    result = {
        "exponents": lam[0],
        "regular exponents": lam[1],
        "T": T,
        "pair 1+4": float(lam[0, 0] + lam[0, 3]),
        "pair 2+3": float(lam[0, 1] + lam[0, 2]),
        "sum": float(lam[0].sum()),
        "megno chaotic": float(y[0]),
        "megno regular": float(y[1]),
        "energy error": float(np.max(mi.diagnostics.invariant_errors(system, run)["H"])),
    }
    print(f"Hénon-Heiles, E = {energy}, Störmer-Verlet h = {H_STEP}, T = {T:g} after "
          f"a warm-up of {warm:g}")  # fmt: skip
    print("chaotic (y0 = -0.1): λ = " + ", ".join(f"{v:+.6e}" for v in lam[0]))
    print(f"  λ1 + λ4 = {result['pair 1+4']:.1e},  λ2 + λ3 = {result['pair 2+3']:.1e},  "
          f"Σλ = {result['sum']:.1e},  ⟨Y⟩ = {y[0]:.1f} (λ t / 2 = "
          f"{lam[0, 0] * run.t[-1] / 2:.1f})")  # fmt: skip
    print(f"regular (y0 = 0.3): λ1 = {lam[1, 0]:.1e},  ⟨Y⟩ = {y[1]:.3f} (→ 2)")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
