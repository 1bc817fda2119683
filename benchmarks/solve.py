"""Small dense solves: the unrolled Gauss–Jordan form beside LAPACK, by size.

    python benchmarks/solve.py [--quick]

Nanoseconds a solve of ``mechint.solvers.solve`` with the unrolled form forced and with
LAPACK forced (``jnp.linalg.solve``), n = 2..8: one solve a step in a ``lax.scan`` of 10⁴
steps (the Newton solve of one trajectory) and a vmapped batch of 10⁵ systems (an
ensemble), best of 5, compile excluded; and the seconds to compile a vmapped forward-mode
Jacobian of the solve (what the structure diagnostics compile).  Targets: the unrolled
form where it is faster in both columns, that is n <= ``UNROLL_MAX``.  Quick: n = 4 on small
sizes.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of

import mechint.solvers.linear as linear  # importing mechint enables float64


def _forced(unrolled: bool):
    """``solve`` with the unrolled form (or LAPACK) forced at every size."""

    def f(A, b):
        saved = linear.UNROLL_MAX
        linear.UNROLL_MAX = 10**9 if unrolled else 0
        try:
            return linear.solve(A, b)
        finally:
            linear.UNROLL_MAX = saved

    return f


def main(quick: bool = False) -> list[dict]:
    sizes = [4] if quick else [2, 3, 4, 5, 6, 8]
    steps, batch = (1_000, 1_000) if quick else (10_000, 100_000)
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        A = jnp.asarray(rng.normal(size=(n, n)) + 2 * np.eye(n))
        b = jnp.asarray(rng.normal(size=n))
        As = jnp.asarray(rng.normal(size=(batch, n, n)) + 2 * np.eye(n))
        bs = jnp.asarray(rng.normal(size=(batch, n)))
        row = {"n": n}
        for label, f in (("unrolled", _forced(True)), ("LAPACK", _forced(False))):

            @jax.jit
            def scan(A, b, f=f):
                step = partial(lambda f, y, _: (f(A, b + 1e-3 * y), None), f)
                return jax.lax.scan(step, b, None, length=steps)[0]

            vmapped = jax.jit(jax.vmap(f))
            t = time.perf_counter()
            jax.jit(jax.vmap(jax.jacfwd(f, argnums=1))).lower(As[:5], bs[:5]).compile()
            row[f"{label} compile (s)"] = time.perf_counter() - t
            scan(A, b).block_until_ready()
            vmapped(As, bs).block_until_ready()
            one = best_of(lambda s=scan, A=A, b=b: s(A, b).block_until_ready(), 5).best
            many = best_of(lambda v=vmapped, A=As, b=bs: v(A, b).block_until_ready(), 5).best
            row[f"{label} scan (ns)"] = one / steps * 1e9
            row[f"{label} batch (ns)"] = many / batch * 1e9
        rows.append(row)
    print(f"Small solves, ns a solve (scan of {steps} / vmapped batch of {batch}, CPU); "
          f"targets: unrolled where faster in both (UNROLL_MAX = {linear.UNROLL_MAX})")  # fmt: skip
    print("| n | unrolled scan | unrolled batch | LAPACK scan | LAPACK batch "
          "| compile unrolled (s) | compile LAPACK (s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['unrolled scan (ns)']:.0f} | {r['unrolled batch (ns)']:.0f} "
              f"| {r['LAPACK scan (ns)']:.0f} | {r['LAPACK batch (ns)']:.0f} "
              f"| {r['unrolled compile (s)']:.2f} | {r['LAPACK compile (s)']:.2f} |")  # fmt: skip
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
