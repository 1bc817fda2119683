"""Ensembles and long runs: body-steps/s on whatever device is present, and the memory
of a 10^9-step run.

    python benchmarks/ensemble.py [--quick] [--dtype float64|float32] [--long STEPS]

1. Kahan's map on the Euler top and the discrete Lagrangian map (n = 3) for batches of
   10^4 .. 10^7 bodies (random states), in the precision asked for: body-steps/s
   (`mi.simulate`, compile excluded, best of 3).
2. One Euler top for 10^9 Kahan steps (or --long) with save_every = 10^5, in a child
   process: wall time and peak resident memory (the run keeps only the saved samples).
   On a GPU one trajectory is a sequence of tiny kernels; --long 1e7 keeps it short.
Targets: Kahan >= 1e8 body-steps/s on a 2-core CPU (>= 1e11 on one H100); the 10^9-step
run under 500 MB resident.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import jax
import numpy as np
from _timing import best_of

import mechint as mi

LONG_RUN = """
import resource, sys, time
import mechint as mi
def peak_mb():
    # VmHWM: this process's own peak (ru_maxrss is inherited across fork/exec on Linux)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
steps, every, dtype = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
t = time.perf_counter()
traj = mi.simulate(
    top, mi.integrators.Kahan(), [0.45, 0.0, 0.89], 0.001, steps, every, dtype=dtype
)
wall = time.perf_counter() - t
print(wall, len(traj.t), peak_mb())
"""


def _rate(system, integrator, x0, steps, dtype):
    return best_of(
        lambda: mi.simulate(system, integrator, x0, 0.01, steps, steps, dtype=dtype), warm=True
    ).best


def ensembles(quick: bool, dtype: str):
    rng = np.random.default_rng(0)
    top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
    body = mi.systems.FreeRigidBody((1.0, 2.0, 3.0))
    rows = []
    print(f"Ensembles, {dtype} (device: {jax.devices()[0]}, jax {jax.__version__})")
    print("| map | bodies | steps | body-steps/s |")
    print("|---|---|---|---|")

    def add(name, batch, steps, rate):  # printed as measured: a run cut short keeps its rows
        rows.append((name, batch, steps, rate))
        print(f"| {name} | {batch:.0e} | {steps} | {rate:.3g} |", flush=True)

    on_gpu = jax.default_backend() == "gpu"
    sizes = (10**3, 10**4) if quick else (10**4, 10**5, 10**6, 10**7)
    work, cap = (10**6 if quick else 2 * 10**8), 10**9
    if on_gpu and not quick:
        # a GPU needs more members to fill it, and each step of a loop is a launch
        sizes, work, cap = (*sizes, 10**8), 2 * 10**9, 2 * 10**4
    for batch in sizes:
        m = rng.standard_normal((batch, 3))
        steps = max(2, min(cap, work // batch))
        wall = _rate(top, mi.integrators.Kahan(), m, steps, dtype)
        add("Kahan, Euler top", batch, steps, batch * steps / wall)
    for batch in sizes[: 4 if on_gpu else 3]:
        A = 0.5 * rng.standard_normal((batch, 3, 3))
        steps = max(2, min(cap // 10, (10**5 if quick else 10**7) * (10 if on_gpu else 1) // batch))
        skew = A - A.transpose(0, 2, 1)
        wall = _rate(body, mi.integrators.DiscreteLagrangian(), skew, steps, dtype)
        add("discrete Lagrangian, n = 3", batch, steps, batch * steps / wall)
    return rows


def long_run(quick: bool, dtype: str, steps: int | None):
    every = 10**3 if quick else 10**5
    steps = steps or (10**6 if quick else 10**9)
    out = subprocess.run(
        [sys.executable, "-c", LONG_RUN, str(steps), str(every), dtype],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall, saved, rss_mb = out.stdout.split()
    print(
        f"\nOne Euler top, {steps:.0e} Kahan steps, save_every = {every:.0e}, {dtype}: "
        f"{float(wall):.1f} s, {saved} samples, peak resident memory {float(rss_mb):.0f} MB"
    )
    return float(rss_mb)


def main(quick: bool = False, dtype: str = "float64", long: int | None = None) -> None:
    rows = ensembles(quick, dtype)
    rss = long_run(quick, dtype, long)
    best = max(r[3] for r in rows if r[0].startswith("Kahan"))
    print(
        f"targets: Kahan >= 1e8 body-steps/s on a 2-core CPU, >= 1e11 on one H100 ({best:.2e}); "
        f"long run < 500 MB resident ({rss:.0f} MB)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--long", type=float, help="steps of the long run (default 1e9)")
    args = parser.parse_args()
    main(args.quick, args.dtype, int(args.long) if args.long else None)
