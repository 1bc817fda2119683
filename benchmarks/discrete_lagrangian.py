"""Speed of Suris's discrete Lagrangian map (top in a quadratic potential) for n = 3..10.

    python benchmarks/discrete_lagrangian.py [--quick]

For each n: steps/s for one trajectory, body-steps/s for a batch of 10^4 bodies (vmap),
Newton iterations per step (mean and max over the batch), and compile time.  Random
states with |M|, |P| ~ 1, J in [0.5, 2], h = 0.05.  Baseline: a per-step NumPy/SciPy
loop solving the same W equation with scipy.optimize.fsolve (n = 3 only).
Targets (2-core CPU, batched): n = 3 at >= 1e6 body-steps/s (the three-unknown
Hairer–Vilmart step serves the free n = 3 body at >= 5e6: benchmarks/work_precision.py),
n = 4 at >= 1e6 (issue 16: the written-out Jacobian, unpivoted solve, unrolled matmuls).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of

import mechint as mi

H = 0.05


def state(n: int, batch: int | None, seed: int = 0):
    rng = np.random.default_rng(seed + n)
    shape = (n, n) if batch is None else (batch, n, n)
    A, B = rng.normal(size=shape) * 0.5, rng.normal(size=shape) * 0.5
    J = rng.uniform(0.5, 2.0, n)
    return mi.systems.QuadraticPotentialTop(J), (
        A - np.swapaxes(A, -1, -2),
        B + np.swapaxes(B, -1, -2),
    )


def rate(system, x0, steps, save_every, repeat):
    run = mi.integrators.DiscreteLagrangian()
    timing = best_of(lambda: mi.simulate(system, run, x0, H, steps, save_every), repeat, warm=True)
    return steps / timing.best, max(timing.first - timing.best, 0.0)


def iterations(system, x0):
    dl = mi.integrators.DiscreteLagrangian()

    def count(M, P):
        n = M.shape[-1]
        Q = jnp.eye(n) - 0.5 * H * H * P

        def residual(W, args):
            Q, M = args
            U = Q @ W * system.J
            return mi.lie.so_vee(U - U.T - H * M)

        _, st = dl.solver.solve(
            residual,
            mi.lie.cayley(H * system.omega(M)),
            (Q, M),
            retract=lambda W, d: W @ mi.lie.cayley(mi.lie.so_hat(d, n)),
            tangent=jnp.zeros(mi.lie.so_dim(n)),
            tangent_map=lambda W, d: W @ mi.lie.so_hat(d, n),
        )
        return st.iterations

    its = np.asarray(jax.jit(jax.vmap(count))(jnp.asarray(x0[0]), jnp.asarray(x0[1])))
    return its.mean(), its.max()


def numpy_baseline(steps: int) -> float:
    from scipy.optimize import fsolve

    system, (M, P) = state(3, None)
    J = np.diag(np.asarray(system.J))
    iu = np.triu_indices(3, 1)

    def cay(X):
        eye = np.eye(3)
        return np.linalg.solve(eye - X / 2, eye + X / 2)

    def hat(v):
        X = np.zeros((3, 3))
        X[iu] = v
        return X - X.T

    t = time.perf_counter()
    for _ in range(steps):
        Q = np.eye(3) - 0.5 * H * H * P
        W0 = cay(H * np.asarray(system.omega(jnp.asarray(M))))

        def F(v, Q=Q, W0=W0, M=M):
            W = W0 @ cay(hat(v))
            U = Q @ W @ J
            return (U - U.T - H * M)[iu]

        W = W0 @ cay(hat(fsolve(F, np.zeros(3), xtol=1e-12)))
        QW = Q @ W
        M, P = (J @ QW - QW.T @ J) / H, W.T @ P @ W
    return steps / (time.perf_counter() - t)


def main(quick: bool = False) -> None:
    ns = (3,) if quick else (3, 4, 6, 10)
    batch = 1000 if quick else 10_000
    repeat = 1 if quick else 3
    rows = []
    for n in ns:
        system, x1 = state(n, None)
        single_steps = 2000 if quick else (10**5 if n <= 4 else 10**4)
        single, c1 = rate(system, x1, single_steps, single_steps // 10, repeat)
        system, xb = state(n, batch)
        bsteps = 10 if quick else (100 if n <= 6 else 20)
        batched, c2 = rate(system, xb, bsteps, bsteps, repeat)
        mean_it, max_it = iterations(system, xb)
        rows.append((n, single, batched * batch, mean_it, max_it, c1, c2))
    base = numpy_baseline(200 if quick else 2000)
    print(f"Suris discrete Lagrangian map, h = {H}, batch = {batch} (device: {jax.devices()[0]})")
    print("| n | one trajectory steps/s | batch body-steps/s | Newton its mean / max | compile s |")
    print("|---|---|---|---|---|")
    for n, s1, sb, mit, xit, c1, c2 in rows:
        print(f"| {n} | {s1:.3g} | {sb:.3g} | {mit:.2f} / {xit} | {c1:.2f} + {c2:.2f} |")
    print(f"| 3 | NumPy + scipy fsolve per step: {base:.3g} steps/s | | | |")
    n4 = [r[2] for r in rows if r[0] == 4]
    print(
        f"targets: n = 3 batched >= 1e6 body-steps/s ({rows[0][2]:.2e})"
        + (f", n = 4 >= 1e6 ({n4[0]:.2e})" if n4 else "")
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke)")
    main(parser.parse_args().quick)
