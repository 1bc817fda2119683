"""A batch's members against the same states run alone: which (system, map) pairs agree
bit for bit, and by how much the others differ.

    python benchmarks/batch_bits.py [--quick] [--no-fma]

Every registered system but the Kovalevskaya top (the Lagrange top's code) with every
map that serves it (default settings, the Euler top with I = (2, 1, 2/3)): ``simulate``
on a batch of 6 states (the system's example state and its first 5 images under the
map, h = 0.05) over 200 steps of h = 0.01, and on each state alone (copies of the
example state where a map takes the rotations of its images off SO(3) by more than a
state may be).  XLA compiles the two loops as different programs (vectorised kernels,
fused multiply-adds where LLVM chooses them, sums in another order), so they agree to
round-off, not always to the bit.  ``--no-fma`` runs the same in a fresh process under
``XLA_FLAGS=--xla_cpu_max_isa=AVX``, where XLA's CPU code has no fused multiply-adds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import jax
import numpy as np

import mechint as mi


def pairs(quick: bool):
    """(map name, system name, system, map) for every registered pair but the
    Kovalevskaya top's (quick: two)."""
    out = []
    for sname, scls in mi.systems.SYSTEMS.items():
        if sname == "kovalevskaya-top":  # the Lagrange top's code with other numbers
            continue
        if sname == "nbody":  # its masses have no default: the outer solar system
            system = mi.systems.nbody.outer_solar_system()[0]
        else:
            top = sname == "euler-top"
            system = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0)) if top else scls.example()
        out += [(iname, sname, system, m) for iname, m in mi.integrators.serving(system).items()]
    if quick:
        out = [p for p in out if p[1] == "euler-top" and p[0] in ("kahan", "rk4")]
    return out


def compare(system, integrator, members: int, steps: int) -> float:
    """The largest difference between a batch's final states and the members' run alone
    (0.0: the same bits; inf: a member failed in one run and not in the other)."""
    # the batch: the example state and the states the map takes it to in its first
    # steps; copies of the example state where those are refused (a map that does not
    # keep rotations takes R off SO(3) by more than a state may be)
    x0 = system.example_state()
    xb = mi.simulate(system, integrator, x0, 0.05, members - 1, 1).x
    try:
        batch = mi.simulate(system, integrator, xb, 0.01, steps, steps, throw=False)
    except mi.InputError:
        xb = jax.tree.map(lambda a: np.stack([np.asarray(a)] * members), x0)
        batch = mi.simulate(system, integrator, xb, 0.01, steps, steps, throw=False)
    worst = 0.0
    for i in range(members):
        alone = mi.simulate(
            system, integrator, jax.tree.map(lambda a, i=i: a[i], xb), 0.01, steps, steps,
            throw=False,
        )  # fmt: skip
        for u, v in zip(jax.tree.leaves(batch.x), jax.tree.leaves(alone.x), strict=True):
            u, v = np.asarray(u)[i], np.asarray(v)
            if np.any(np.isnan(u) != np.isnan(v)):  # failed in one run only
                return float("inf")
            if not np.array_equal(u, v, equal_nan=True):
                worst = max(worst, float(np.nanmax(np.abs(u - v))))
    return worst


def main(quick: bool = False, no_fma: bool = False) -> None:
    if no_fma and "--xla_cpu_max_isa" not in os.environ.get("XLA_FLAGS", ""):
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX").strip()
        argv = [sys.executable, __file__, "--no-fma"] + (["--quick"] if quick else [])
        subprocess.run(argv, env=env, check=True)
        return
    members, steps = (2, 20) if quick else (6, 200)
    flags = os.environ.get("XLA_FLAGS", "") or "default"
    print(f"A batch of {members} against each member alone, {steps} steps, "
          f"{jax.devices()[0]}, jax {jax.__version__}, XLA_FLAGS: {flags}\n"
          "| map | system | largest difference |\n|---|---|---|")  # fmt: skip
    found = [(iname, sname, compare(system, integrator, members, steps))
             for iname, sname, system, integrator in pairs(quick)]  # fmt: skip
    for iname, sname, dev in found:
        print(f"| {iname} | {sname} | {'same bits' if dev == 0 else f'{dev:.1e}'} |")
    differ = [dev for *_, dev in found if dev > 0]
    print(
        f"targets: none (a measurement); {len(differ)} of {len(found)} pairs differ, "
        f"by at most {max(differ, default=0.0):.1e}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two pairs, small sizes")
    parser.add_argument("--no-fma", action="store_true", help="XLA without fused multiply-adds")
    args = parser.parse_args()
    main(args.quick, args.no_fma)
