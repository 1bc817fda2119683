"""Where a batch's step loop spends its time: the same Kahan step (Euler top) in the loops
mechint builds and in variants of them, on whatever device is present.

    python benchmarks/loop_variants.py [--quick] [--dtype float64|float32] [--bodies B]

Rows (body-steps/s, best of 3 after compiling; the compile and first call in seconds):
`integrate` (its tracked loop of a static length); the tracked loop alone, of a static
length, of a traced length (what `simulate` compiles once for any interval), of a traced
length in static blocks of 64 (`simulate`'s loop on a GPU), unrolled 4 times, with the
members along the last axis (structure of arrays); the step without the failure record;
`simulate` itself; the bare `lax.scan` of the closed-form step (three columns) and RK4
likewise.  Made for a GPU session (a dynamic loop's predicate is read back on the host
every iteration there; the layout decides whether loads coalesce), it runs anywhere.
Every row's final state is checked against `integrate`'s.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of
from peers import bare_scan, kahan_step, rk4_step

import mechint as mi
from mechint.integrate import initial_carry, tracked_step


def rows(quick: bool, dtype: str, bodies: int | None):
    real = jnp.dtype(dtype)
    on_gpu = jax.default_backend() == "gpu"
    B = bodies or (10**2 if quick else 10**6 if on_gpu else 10**5)
    S = 10 if quick else 1000
    top = jax.tree.map(lambda v: jnp.asarray(v, real), mi.systems.EulerTop((2.0, 1.0, 0.6667)))
    kahan, rk4 = mi.integrators.Kahan(), mi.integrators.RK4()
    a = [real.type(v) for v in np.asarray(top.euler_coefficients())]
    h = real.type(0.01)
    p, q, r = (real.type(0.005) * ai for ai in a)
    xn = np.random.default_rng(0).standard_normal((B, 3))
    x = jnp.asarray(xn, real)
    n = jnp.asarray(S)
    one = tracked_step(top, kahan, h, True)
    vstep = jax.vmap(kahan.step, in_axes=(None, 0, None))
    last = jax.vmap(kahan.step, in_axes=(None, -1, None), out_axes=(-1, 0))

    def tracked(x, length, **kw):
        return jax.lax.fori_loop(0, length, one, initial_carry(x, B, real), **kw)[0]

    def blocked(x, n):
        c = jax.lax.fori_loop(
            0, n // 64, lambda _, c: jax.lax.fori_loop(0, 64, one, c), initial_carry(x, B, real)
        )
        return jax.lax.fori_loop(0, n % 64, one, c)[0]

    def members_last(x):
        def step(_, c):
            x, k, fail = c
            y, st = last(top, x, h)
            fail = jnp.where((fail < 0) & ~st.ok, (k + 1) * 8 + st.reason, fail)
            return jnp.where(fail >= 0, x, y), k + 1, fail

        c = (x.T, jnp.asarray(0), jnp.full(B, -1))
        return jax.lax.fori_loop(0, S, step, c)[0].T

    def scan(step):  # vmap of the scan of three scalars: XLA carries three columns
        return jax.vmap(bare_scan(step, S))

    variants = [
        ("integrate, Kahan", jax.jit(lambda x: mi.integrate(top, kahan, x, h, S).x[:, -1]), (x,)),
        ("tracked loop, static length", jax.jit(lambda x: tracked(x, S)), (x,)),
        ("tracked loop, traced length", jax.jit(tracked), (x, n)),
        ("tracked loop, traced length in static blocks of 64", jax.jit(blocked), (x, n)),
        ("tracked loop, static, unrolled 4", jax.jit(lambda x: tracked(x, S, unroll=4)), (x,)),
        ("tracked loop, members last (structure of arrays)", jax.jit(members_last), (x,)),
        (
            "the step without a failure record",
            jax.jit(lambda x: jax.lax.fori_loop(0, S, lambda _, x: vstep(top, x, h)[0], x)),
            (x,),
        ),
        ("simulate, Kahan, one save", lambda x: mi.simulate(top, kahan, x, h, S, S).x[:, -1],
         (xn,)),
        ("bare lax.scan, Kahan step (three columns)",
         jax.jit(scan(lambda m: kahan_step(m, p, q, r))), (x,)),
        ("integrate, RK4", jax.jit(lambda x: mi.integrate(top, rk4, x, h, S).x[:, -1]), (x,)),
        ("bare lax.scan, RK4 step", jax.jit(scan(lambda m: rk4_step(m, *a, h))), (x,)),
    ]  # fmt: skip
    reference = {}
    out = []
    print(f"Loop variants, {B:.0e} bodies x {S} steps, {dtype}, {jax.devices()[0]}, "
          f"jax {jax.__version__}\n| loop | body-steps/s | compile + first call s | check |"
          "\n|---|---|---|---|")  # fmt: skip
    for name, fn, args in variants:
        t = best_of(lambda fn=fn, args=args: jax.block_until_ready(fn(*args)), warm=True)
        final = np.asarray(t.result, dtype=np.float64)
        key = "rk4" if "RK4" in name else "kahan"
        reference.setdefault(key, final)
        dev = float(np.max(np.abs(final - reference[key])))
        out.append((name, B * S / t.best, dev))
        print(
            f"| {name} | {B * S / t.best:.3g} | {t.first:.2f} | {dev:.1e} from {key} |", flush=True
        )
    return out


def main(quick: bool = False, dtype: str = "float64", bodies: int | None = None) -> None:
    out = rows(quick, dtype, bodies)
    rate = {name: v for name, v, _ in out}
    worst = max(dev for *_, dev in out)
    print(
        f"targets: integrate >= the bare scan ({rate['integrate, Kahan']:.2e} vs "
        f"{rate['bare lax.scan, Kahan step (three columns)']:.2e}); every row the same map "
        f"(largest difference {worst:.1e})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--bodies", type=int, help="batch size (default 1e6 on a GPU, 1e5)")
    args = parser.parse_args()
    main(args.quick, args.dtype, args.bodies)
