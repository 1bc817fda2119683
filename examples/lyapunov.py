"""Lyapunov exponents of Hénon-Heiles from the tangent map of a symplectic map.

The tangent map of B Störmer-Verlet steps is ``jax.jacfwd`` of ``mi.integrate``; the
spectrum comes from Benettin's QR method (Q_{k+1} R_k = DΦ Q_k, λ_i = Σ log R_ii / T),
after a warm-up that aligns Q with the Lyapunov frame.  The map is symplectic, so the
spectrum comes in ± pairs: λ1 + λ4 = λ2 + λ3 = 0, to round-off, and the middle pair
(the flow direction and the energy) tends to 0 like 1/T.

python examples/lyapunov.py [--quick]
"""

from __future__ import annotations

import argparse
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

import mechint as mi

H_STEP, BLOCK = 0.05, 10  # step size, steps per QR


def block_map(system, integrator):
    def block(z):
        sol = mi.integrate(system, integrator, (z[:2], z[2:]), H_STEP, BLOCK, checkpoint=False)
        return jnp.concatenate([sol.x[0][-1], sol.x[1][-1]])

    return block


@partial(jax.jit, static_argnames=("block", "blocks"))
def benettin(block, z, Q, blocks):
    """``blocks`` QR steps from (z, Q); returns (z, Q, Σ log R_ii)."""

    def one(carry, _):
        z, Q, logs = carry
        D = jax.jacfwd(block)(z)
        Q, R = jnp.linalg.qr(D @ Q)
        d = jnp.diagonal(R)
        return (block(z), Q * jnp.sign(d), logs + jnp.log(jnp.abs(d))), None

    return jax.lax.scan(one, (z, Q, jnp.zeros(4)), None, length=blocks)[0]


def main(quick: bool = False) -> dict:
    system = mi.systems.HenonHeiles(1.0)
    energy, y0 = 0.125, -0.1  # a chaotic orbit: x = 0, py = 0, px from the energy
    px0 = np.sqrt(2 * (energy - (0.5 * y0**2 - y0**3 / 3)))
    z0 = jnp.array([0.0, y0, px0, 0.0])
    block = block_map(system, mi.integrators.StormerVerlet())
    warm, blocks = (2_000, 5_000) if quick else (20_000, 200_000)
    z, Q, _ = benettin(block, z0, jnp.eye(4), warm)
    z, Q, logs = benettin(block, z, Q, blocks)
    T = blocks * BLOCK * H_STEP
    lam = np.asarray(logs) / T
    result = {
        "exponents": lam,
        "T": T,
        "pair 1+4": float(lam[0] + lam[3]),
        "pair 2+3": float(lam[1] + lam[2]),
        "energy drift": float(abs(system.hamiltonian((z[:2], z[2:])) - energy)),
    }
    print(f"Hénon-Heiles, E = {energy}, Störmer-Verlet h = {H_STEP}, T = {T:g}")
    print("λ = " + ", ".join(f"{v:+.6e}" for v in lam))
    print(f"λ1 + λ4 = {result['pair 1+4']:.1e},  λ2 + λ3 = {result['pair 2+3']:.1e}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
