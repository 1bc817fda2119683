"""What events and save times cost: Kahan's map on the Euler top, one trajectory and a
batch, without events, with one event (the section m1 = 0, both directions) and with
100 save times (issue 33).

    python benchmarks/events.py [--quick] [--dtype float64|float32] [--one N] [--batch B]
                                [--steps S]

Rates in steps (body-steps for the batch) per second, compiled, best of 3; the
crossings are located after the loop (all of them at once), which the rate includes.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
from _timing import best_of

import mechint as mi

TOP = mi.systems.EulerTop((1.0, 1.5, 2.0))
M0 = np.array([0.6, -0.8, 0.3])


def rate(x0, steps: int, dtype: str, **kw) -> float:
    batch = 1 if np.ndim(x0) == 1 else len(x0)

    def go():
        sol = mi.integrate(TOP, mi.integrators.Kahan(), x0, 0.01, steps, dtype=dtype, **kw)
        jax.block_until_ready(sol)

    go()
    return batch * steps / best_of(go, 3).best


def main(quick: bool = False, dtype: str = "float64", one=None, batch=None, steps=None) -> None:
    section = mi.Event(lambda t, x: x[0], name="m1")
    one_steps = one or (10**5 if quick else 10**6)
    batch = batch or (10**3 if quick else 10**5)
    steps = steps or (200 if quick else 1000)
    rng = np.random.default_rng(0)
    xb = M0 * (1 + 0.05 * rng.standard_normal((batch, 1)))
    print(f"{jax.devices()[0].device_kind}, {dtype}: Kahan, Euler top, h = 0.01")
    print("| run | no events | one event | 100 save times |")
    print("|---|---|---|---|")
    for label, x0, n in (("one trajectory", M0, one_steps), (f"batch of {batch}", xb, steps)):
        times = np.linspace(0.0, 0.01 * n, 100)
        rates = [rate(x0, n, dtype), rate(x0, n, dtype, events=[section], max_events=64),
                 rate(x0, n, dtype, save_at=times)]  # fmt: skip
        print(f"| {label}, {n} steps | " + " | ".join(f"{r:.3g}" for r in rates) + " |")
    print("targets: none (issue 33 asks for events, not a rate; the cost is reported)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--one", type=int, help="steps of the one trajectory")
    parser.add_argument("--batch", type=int, help="bodies of the batch")
    parser.add_argument("--steps", type=int, help="steps of the batch")
    args = parser.parse_args()
    main(args.quick, args.dtype, args.one, args.batch, args.steps)
