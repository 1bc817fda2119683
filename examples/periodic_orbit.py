"""Periodic orbits of Hénon-Heiles by Newton shooting through ``mi.integrate``.

Unknowns: (y0, px0, py0, T) with x0 = 0 (the phase condition); equations: the 4-th order
Yoshida composition of Störmer-Verlet, N steps of h = T/N, returns to the start,
Φ(z0) = z0, at the energy H(z0) = E.  Five equations, four unknowns, consistent (the
flow keeps H): Gauss-Newton with the exact Jacobian (``jax.jacfwd``, h = T/N traced, so
the period is an unknown like the rest).  The monodromy matrix's eigenvalues come in
reciprocal pairs with a double 1 (symplectic, autonomous).

python examples/periodic_orbit.py [--quick]
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import mechint as mi

ENERGY = 0.125


def main(quick: bool = False) -> list[dict]:
    system = mi.systems.HenonHeiles(1.0)
    integrator = mi.integrators.Composition(mi.integrators.StormerVerlet(), "yoshida4")
    N = 200 if quick else 1000

    def start(theta):
        y0, px0, py0, _ = theta
        return jnp.stack([jnp.zeros_like(y0), y0]), jnp.stack([px0, py0])

    def flow(z, T):
        sol = mi.integrate(system, integrator, (z[:2], z[2:]), T / N, N, checkpoint=False)
        return jnp.concatenate([sol.x[0][-1], sol.x[1][-1]])

    def residual(theta):
        q, p = start(theta)
        z = jnp.concatenate([q, p])
        energy = system.hamiltonian((q, p)) - ENERGY
        return jnp.concatenate([flow(z, theta[3]) - z, energy[None]])

    jac, res = jax.jit(jax.jacfwd(residual)), jax.jit(residual)
    monodromy = jax.jit(jax.jacfwd(flow))
    rows = []
    for angle in (0.0, np.pi / 6):  # initial guesses: small-oscillation orbits, T = 2π
        v = np.sqrt(2 * ENERGY)
        theta = np.array([0.0, v * np.cos(angle), v * np.sin(angle), 2 * np.pi])
        for iteration in range(1, 31):  # noqa: B007 (reported)
            step = np.linalg.lstsq(np.asarray(jac(theta)), -np.asarray(res(theta)))[0]
            theta = theta + step
            if np.max(np.abs(step)) < 1e-14 * np.max(np.abs(theta)):
                break
        q, p = start(jnp.asarray(theta))
        M = np.asarray(monodromy(jnp.concatenate([q, p]), theta[3]))
        mult = np.linalg.eigvals(M)
        near_one = np.sort(np.abs(mult - 1))
        rows.append(
            {
                "start": theta[:3],
                "period": float(theta[3]),
                "iterations": iteration,
                "residual": float(np.max(np.abs(np.asarray(res(theta))))),
                "multipliers": mult,
                # symplectic: the multipliers are closed under μ ↦ 1/μ ...
                "reciprocal": float(max(np.min(np.abs(mult - 1 / m)) for m in mult)),
                # ... and autonomous: 1 is a double multiplier (a Jordan block: √eps)
                "unit pair": float(near_one[1]),
            }
        )
    print(f"Hénon-Heiles periodic orbits at E = {ENERGY} (yoshida4, N = {N} steps a period)")
    print("| y0 | px0 | py0 | period | Newton iterations | residual | multipliers |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        y0, px0, py0 = r["start"]
        mult = ", ".join(f"{m.real:.4g}{m.imag:+.2g}j" for m in r["multipliers"])
        print(f"| {y0:.12f} | {px0:.12f} | {py0:.1e} | {r['period']:.12f} | {r['iterations']} "
              f"| {r['residual']:.1e} | {mult} |")  # fmt: skip
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
