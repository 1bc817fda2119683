"""Speed of the Euler-top Kahan step: one trajectory and a batch, against baselines.

    python benchmarks/euler_top.py [--quick]

Prints a table: mechint (jax.lax.scan, jit) for one trajectory (10^6 steps,
save_every = 100) and for a batch of 10^5 bodies, beside a plain NumPy per-step loop and
SciPy DOP853 (rtol 1e-10) on the same problem.  DOP853 is adaptive; its rate is given as
Kahan-equivalent steps (T/h) per second.  Compile time is reported separately.
Targets (2-core CPU): >= 1e7 steps/s single, >= 1e8 body-steps/s batched.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import best_of
from scipy.integrate import solve_ivp

import mechint as mi

INERTIA = (2.0, 1.0, 0.6667)
M0 = np.array([0.45, 0.0, 0.89])
H = 0.01


def timed(fn, repeat=3):
    return best_of(fn, repeat).best


def numpy_kahan(a, m, h, steps):
    """The same closed-form step as mechint, one NumPy evaluation per step."""
    p, q, r = 0.5 * h * a
    for _ in range(steps):
        m1, m2, m3 = m[..., 0], m[..., 1], m[..., 2]
        s1, s2, s3 = q * r * m1 * m1, p * r * m2 * m2, p * q * m3 * m3
        det = 1.0 - s1 - s2 - s3 - 2.0 * p * q * r * m1 * m2 * m3
        m = (
            np.stack(
                [
                    m1 * (1 + s2 + s3 - s1) + 2 * p * m2 * m3,
                    m2 * (1 + s3 + s1 - s2) + 2 * q * m3 * m1,
                    m3 * (1 + s1 + s2 - s3) + 2 * r * m1 * m2,
                ],
                axis=-1,
            )
            / det[..., None]
        )
    return m


def main(quick: bool = False) -> None:
    top = mi.systems.EulerTop(INERTIA)
    a = np.asarray(top.coefficients)
    kahan = mi.integrators.Kahan()
    rows = []

    steps = 10**5 if quick else 10**6
    t = time.perf_counter()
    mi.simulate(top, kahan, M0, H, steps, 100)
    first = time.perf_counter() - t
    wall = timed(lambda: mi.simulate(top, kahan, M0, H, steps, 100))
    rows.append(("mechint Kahan (scan, jit)", "1 body", steps / wall, "steps/s", first - wall))

    n_np = 10**4 if quick else 10**5
    wall_np = timed(lambda: numpy_kahan(a, M0.copy(), H, n_np), repeat=1)
    rows.append(("NumPy loop, same step", "1 body", n_np / wall_np, "steps/s", None))

    T = 100.0 if quick else 1000.0

    def rhs(_, m):
        return np.array([a[0] * m[1] * m[2], a[1] * m[2] * m[0], a[2] * m[0] * m[1]])

    wall_dop = timed(
        lambda: solve_ivp(rhs, (0, T), M0, method="DOP853", rtol=1e-10, atol=1e-12), repeat=1
    )
    rows.append(("SciPy DOP853 rtol 1e-10", "1 body", T / H / wall_dop, "equiv steps/s", None))

    B = 10**4 if quick else 10**5
    rng = np.random.default_rng(0)
    xb = rng.normal(size=(B, 3))
    bsteps = 100 if quick else 1000
    t = time.perf_counter()
    mi.simulate(top, kahan, xb, H, bsteps, bsteps)
    first = time.perf_counter() - t
    wall_b = timed(lambda: mi.simulate(top, kahan, xb, H, bsteps, bsteps))
    rows.append(
        (
            "mechint Kahan (scan, vmap)",
            f"{B} bodies",
            B * bsteps / wall_b,
            "body-steps/s",
            first - wall_b,
        )
    )

    nb = 10 if quick else 100
    wall_nb = timed(lambda: numpy_kahan(a, xb.copy(), H, nb), repeat=1)
    rows.append(("NumPy vectorized loop", f"{B} bodies", B * nb / wall_nb, "body-steps/s", None))

    Bd, Td = 1000, 10.0

    def rhs_b(_, y):
        m = y.reshape(-1, 3)
        return np.stack(
            [a[0] * m[:, 1] * m[:, 2], a[1] * m[:, 2] * m[:, 0], a[2] * m[:, 0] * m[:, 1]], axis=1
        ).ravel()

    wall_db = timed(
        lambda: solve_ivp(rhs_b, (0, Td), xb[:Bd].ravel(), method="DOP853", rtol=1e-10, atol=1e-12),
        repeat=1,
    )
    rows.append(
        ("SciPy DOP853 stacked", f"{Bd} bodies", Bd * Td / H / wall_db, "equiv body-steps/s", None)
    )

    print(f"Euler top, I = {INERTIA}, h = {H}; best of 3 runs after compilation")
    print(f"{'method':<28} {'problem':<14} {'rate':>10}  {'unit':<20} {'compile s':>9}")
    for name, problem, rate, unit, comp in rows:
        c = f"{comp:9.2f}" if comp is not None else f"{'-':>9}"
        print(f"{name:<28} {problem:<14} {rate:10.3e}  {unit:<20} {c}")
    print(
        f"targets: >= 1e7 steps/s single ({rows[0][2]:.2e}), "
        f">= 1e8 body-steps/s batched ({rows[3][2]:.2e})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke)")
    main(parser.parse_args().quick)
