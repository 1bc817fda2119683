"""Step loops of small systems and XLA's small-loop threshold (``mechint._xla``).

    python benchmarks/loop_threshold.py [--quick]

XLA's CPU backend runs a ``while`` loop as one compiled function when its body accesses
fewer bytes than ``xla_cpu_small_while_loop_byte_threshold`` (XLA's default 1024), else
as kernels launched one by one every iteration.  mechint keeps XLA's default (fewer of a
batch's members then differ from their runs alone in the last bits; docs/concepts.md,
"What is reproduced bit for bit"); ``MECHINT_SMALL_LOOP_BYTES=65536`` in the environment
raises it.  Each row runs ``simulate`` (one trajectory, or ``integrate``
for a batch) in a fresh process under either threshold, XLA_FLAGS set before JAX
starts; steps/s (body-steps/s for a batch), best of 3 after compiling, and the first
call (compile included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CASES = {
    # name: (system, integrator, state, compensated, steps, batch)
    "Kepler, Störmer-Verlet": ("Kepler()", "StormerVerlet()", "kepler", None, 10**6, 0),
    "Kepler, Yoshida-4": (
        "Kepler()",
        "Composition(StormerVerlet(), 'yoshida4')",
        "kepler",
        False,
        3 * 10**5,
        0,
    ),
    "Kepler, Yoshida-4, compensated": (
        "Kepler()",
        "Composition(StormerVerlet(), 'yoshida4')",
        "kepler",
        True,
        3 * 10**5,
        0,
    ),
    "Kepler, Sofroniou-Spaletta-10, compensated": (
        "Kepler()",
        "Composition(StormerVerlet(), 'sofroniou-spaletta10')",
        "kepler",
        True,
        10**5,
        0,
    ),
    "Euler top, Kahan": ("EulerTop((2.0, 1.0, 0.6667))", "Kahan()", "top", None, 10**6, 0),
    "Euler top, RK4": ("EulerTop((2.0, 1.0, 0.6667))", "RK4()", "top", None, 10**6, 0),
    "Euler top, implicit midpoint": (
        "EulerTop((2.0, 1.0, 0.6667))",
        "ImplicitMidpoint()",
        "top",
        None,
        10**5,
        0,
    ),
    "heavy top, splitting": ("HeavyTop()", "Splitting()", "heavy", None, 10**5, 0),
    "Euler top, Kahan, batch of 100": (
        "EulerTop((2.0, 1.0, 0.6667))",
        "Kahan()",
        "top",
        None,
        1000,
        100,
    ),
    "Euler top, Kahan, batch of 10^5": (
        "EulerTop((2.0, 1.0, 0.6667))",
        "Kahan()",
        "top",
        None,
        1000,
        10**5,
    ),
    "Euler top, RK4, batch of 10^5": (
        "EulerTop((2.0, 1.0, 0.6667))",
        "RK4()",
        "top",
        None,
        1000,
        10**5,
    ),
}

CHILD = r"""
import json, sys, time
import numpy as np, jax
import mechint as mi
from mechint.systems import *
from mechint.integrators import *
system, integ, state, comp, steps, batch = json.loads(sys.argv[1])
system, integ = eval(system), eval(integ)
x0 = {"kepler": lambda: system.periapsis_state(0.5), "top": lambda: np.array([0.45, 0.0, 0.89]),
      "heavy": lambda: system.example_state()}[state]()
if batch:
    rng = np.random.default_rng(0)
    x0 = np.asarray(x0) * (1 + 0.01 * rng.standard_normal((batch, np.size(x0))))
    run = lambda: jax.block_until_ready(mi.integrate(system, integ, x0, 0.01, steps).x)
else:
    run = lambda: mi.simulate(system, integ, x0, 0.01, steps, steps, compensated=comp)
t = time.perf_counter(); run(); first = time.perf_counter() - t
best = float("inf")
for _ in range(3):
    t = time.perf_counter(); run(); best = min(best, time.perf_counter() - t)
print(json.dumps([steps * max(batch, 1) / best, first]))
"""


def measure(case: tuple, threshold: int) -> tuple[float, float]:
    env = dict(os.environ)
    env["XLA_FLAGS"] = (f"{env.get('XLA_FLAGS', '')} --xla_backend_extra_options="
                        f"xla_cpu_small_while_loop_byte_threshold={threshold}").strip()  # fmt: skip
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)], env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    rate, first = json.loads(out.stdout.strip().splitlines()[-1])
    return rate, first


def main(quick: bool = False) -> None:
    names = ["Euler top, implicit midpoint"] if quick else list(CASES)
    high = 65536
    print(f"| run | threshold 1024 (XLA's default) | {high} | gain | first call |")
    print("|---|---|---|---|---|")
    for name in names:
        case = list(CASES[name])
        if quick:
            case[4] = 2000
        (r0, f0), (r1, f1) = measure(tuple(case), 1024), measure(tuple(case), high)
        print(f"| {name} | {r0:.3g} | {r1:.3g} | {r1 / r0:.2f}× | {f0:.2f} s / {f1:.2f} s |",
              flush=True)  # fmt: skip
    print(
        "\ntargets: no row slower under the higher threshold; the loops of small systems "
        "at least 2× faster where XLA's default splits them into kernels (issue 37)"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
