"""Where a batch's step loop spends its time: the same Kahan step (Euler top) in the loops
mechint builds and in variants of them, on whatever device is present.

    python benchmarks/loop_variants.py [--quick] [--dtype float64|float32] [--bodies B]

Rows (body-steps/s, best of 3 after compiling; the compile and first call in seconds):
`integrate` (on a GPU its batch carries the state as columns, eight Kahan steps an
iteration; a row shows it with the state as one (B, 3) array); the tracked loop alone, of
a static length, of a traced length (what `simulate` compiles once for any interval), of
a traced length in static blocks of 64 (`simulate`'s loop on a GPU), unrolled 4 times,
with the members along the last axis (structure of arrays: with the failure record, with
a bool flag a member, with nothing), with the state as columns (the freeze on the
re-stacked state; without a failure record); the step without the failure record; the
step with a NaN poison where its status fails instead of a record, alone and with a
finite check every 64 steps (poison and replay: a block that fails would be taken again
by the tracked step);
`simulate` itself; the bare `lax.scan` of the closed-form step (three columns); on a CPU
(an even batch), the members in blocks of 1000 (10 with --quick) each taken through all
its steps (`integrate` on each block, mechint's step with an ok flag a member and nothing
frozen, the bare step), in one thread and with the batch's halves in two host threads
(and, the control, both halves dispatched from one thread); RK4 in `integrate`, members
last, as columns, with every stage's sums on the columns and the field on the members
first (the first candidate for RK's step on a GPU; `ExplicitRungeKutta.step_columns`
puts the members last, `maps.map_columns`), without a record, and its bare scan.  Made
for a GPU session (a dynamic loop's predicate is read back on the host every iteration
there; the layout decides whether loads coalesce and whether a step updates its carry in
place), it runs anywhere.
A second table runs `integrate` on batches of Kahan's map, the discrete Lagrangian map,
RK4, the implicit midpoint rule and the LGVI with the state as (B, n) arrays and as
columns, forced either way (each map's `batch_columns` is read from it), and (not with
--quick) as columns with the map's whole step on the members last; a third, Kahan's
map, RK4 and explicit Euler with the columns forced on, 1 to 16 steps an iteration of the
loop (each map's `batch_unroll` is read from it).
Every row's final state is checked against `integrate`'s.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of
from peers import bare_scan, kahan_step, rk4_step

import mechint as mi
from mechint.integrate import initial_carry, tracked_step
from mechint.maps import Integrator, map_columns

loop = sys.modules["mechint.integrate"]  # the module (mi.integrate is the function)


def compiled_with_columns(on: bool, f, *args):
    """``f`` compiled with a batch's state as columns in its loops (``on``: for every
    map, whatever its ``batch_columns`` and the device) or as one (B, n) array."""
    with (
        mock.patch.object(loop, "_columns_in_loops", lambda: on),
        mock.patch.object(Integrator, "batch_columns", on),  # the maps that do not set it
    ):
        forget_loops()  # the flags are read when the loops are traced
        try:
            return jax.jit(f).lower(*args).compile()
        finally:
            forget_loops()


def forget_loops():
    """Drop the traced programs of mechint's loops (``integrate``'s and ``simulate``'s)."""
    from mechint.simulate import _advance

    for f in (loop._integrate, loop._integrate_concrete, _advance):
        f.clear_cache()


def without_columns(f, *args):
    """``f`` compiled with a batch's state as one (B, n) array in its loops (the columns
    of ``integrate.tracked_step`` are a GPU's choice: on a CPU this is ``f``)."""
    return compiled_with_columns(False, f, *args)


def last(a):
    return a[:, -1]


def by_map(quick: bool, dtype: str):
    """``integrate`` on a batch of each map with the state as (B, n) arrays and as
    columns, forced either way (what each map's ``batch_columns`` was decided from), and
    (not with ``quick``) as columns with the map's whole step on the members last
    (``step_members_last``, a candidate default ``step_columns``): body-steps/s, and the
    largest difference of the final states from the (B, n) arrays' (0: the same bits)."""
    real = jnp.dtype(dtype)
    on_gpu = jax.default_backend() == "gpu"
    rng = np.random.default_rng(1)
    big = 10**2 if quick else 10**6 if on_gpu else 10**4
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    body = mi.systems.FreeRigidBody((1.0, 2.0, 3.0))
    rb = mi.systems.RigidBodies([(1.0, 2.0, 3.0)])
    R, P = rb.example_state()
    lgvi_x = (np.broadcast_to(R, (big // 10, *R.shape)), rng.standard_normal((big // 10, *P.shape)))
    cases = [
        ("Kahan, Euler top", top, mi.integrators.Kahan(), rng.standard_normal((big, 3)), 100),
        ("discrete Lagrangian n = 3", body, mi.integrators.DiscreteLagrangian(),
         np.asarray(mi.lie.hat(rng.standard_normal((big // 10, 3)))), 20),
    ]  # fmt: skip
    if not quick:
        cases += [
            ("RK4, Euler top", top, mi.integrators.RK4(), rng.standard_normal((big, 3)), 100),
            ("implicit midpoint, Euler top", top, mi.integrators.ImplicitMidpoint(),
             rng.standard_normal((big, 3)), 20),
            ("LGVI, one rigid body", rb, mi.integrators.LieGroupVariational(), lgvi_x, 20),
        ]  # fmt: skip
    variants = ("array", "columns") if quick else ("array", "columns", "last")
    print(f"\nBy map, `integrate` on a batch, {dtype}, {jax.devices()[0]}\n"
          "| map | bodies x steps | (B, n) arrays | columns (the map's step_columns) |"
          + (" columns, the whole step with the members last |" if not quick else "")
          + " largest difference |\n|---|---|---|---|" + "---|" * (len(variants) - 1))  # fmt: skip
    for name, system, integrator, x0, steps in cases:
        x0 = jax.tree.map(lambda a: jnp.asarray(a, real), x0)
        system = jax.tree.map(lambda v: jnp.asarray(v, real), system)
        rate, final = {}, {}
        for variant in variants:

            def run(x, system=system, integrator=integrator, steps=steps):
                return jax.tree.map(last, mi.integrate(system, integrator, x, 0.01, steps).x)

            cls = type(integrator)
            with (
                mock.patch.object(cls, "step_columns", step_members_last)
                if variant == "last"  # a candidate default for Integrator.step_columns
                else nullcontext()
            ):
                fn = compiled_with_columns(variant != "array", run, x0)
            t = best_of(lambda fn=fn, x0=x0: jax.block_until_ready(fn(x0)), warm=True)
            n = jax.tree.leaves(x0)[0].shape[0]
            rate[variant], final[variant] = n * steps / t.best, jax.tree.leaves(t.result)
        dev = max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                  for v in variants[1:]
                  for a, b in zip(final["array"], final[v], strict=True))  # fmt: skip
        rates = " | ".join(f"{rate[v]:.3g}" for v in variants)
        print(f"| {name} | {n:.0e} x {steps} | {rates} | {dev:.1e} |", flush=True)


def step_members_last(self, system, cols, like, h):
    """``Integrator.step_columns`` with the map's whole step on the members along the
    last axis (``maps.map_columns``), as RK's stages' field is: a candidate default,
    measured here against the default's stacked members."""
    return map_columns(lambda x: self.step(system, x, h), like, cols, extra=True)


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
    vrk4 = jax.vmap(rk4.step, in_axes=(None, 0, None))
    last = jax.vmap(kahan.step, in_axes=(None, -1, None), out_axes=(-1, 0))

    def tracked(x, length, **kw):
        return jax.lax.fori_loop(0, length, one, initial_carry(x, B, real), **kw)[0]

    def blocked(x, n):
        c = jax.lax.fori_loop(
            0, n // 64, lambda _, c: jax.lax.fori_loop(0, 64, one, c), initial_carry(x, B, real)
        )
        return jax.lax.fori_loop(0, n % 64, one, c)[0]

    def members_last(x, integrator=kahan):
        last = jax.vmap(integrator.step, in_axes=(None, -1, None), out_axes=(-1, 0))

        def step(_, c):
            x, k, fail = c
            y, st = last(top, x, h)
            fail = jnp.where((fail < 0) & ~st.ok, (k + 1) * 8 + st.reason, fail)
            return jnp.where(fail >= 0, x, y), k + 1, fail

        c = (x.T, jnp.asarray(0), jnp.full(B, -1))
        return jax.lax.fori_loop(0, S, step, c)[0].T

    def columns(x, integrator=kahan, record=True):
        """The carry's state as its columns (each member's component i in one (B,)
        array): every output of the step reads its inputs at the same member, so the
        step can write its carry in place."""
        vone = jax.vmap(integrator.step, in_axes=(None, 0, None))

        def step(_, c):
            cols, k, fail = c
            y, st = vone(top, jnp.stack(cols, axis=-1), h)
            if record:
                fail = jnp.where((fail < 0) & ~st.ok, (k + 1) * 8 + st.reason, fail)
                y = jnp.where((fail >= 0)[:, None], jnp.stack(cols, axis=-1), y)
            return tuple(y[:, i] for i in range(3)), k + 1, fail

        c = (tuple(x[:, i] for i in range(3)), jnp.asarray(0), jnp.full(B, -1))
        return jnp.stack(jax.lax.fori_loop(0, S, step, c)[0], axis=-1)

    def rk4_stages_on_columns(x):
        """RK4 (the tableau's sums in ``rk_step``'s order) with every stage's sums on the
        columns: the vector field sees the stacked (B, 3) state and its result is split at
        once (on one H100 two kernels a step: ``maps.map_columns`` says why)."""
        field = jax.vmap(top.vector_field)
        tab = rk4.tableau

        def f(cols):
            k = field(jnp.stack(cols, axis=-1))
            return tuple(k[:, i] for i in range(3))

        def step(_, c):
            cols, k, fail = c
            K = []
            for _, deps in tab.stages():
                xi = cols
                for j, a in deps:
                    xi = tuple(u + (h * a) * kj for u, kj in zip(xi, K[j], strict=True))
                K.append(f(xi))
            y = cols
            for bi, ki in zip(tab.b, K, strict=True):
                if bi != 0.0:
                    y = tuple(u + (h * bi) * kj for u, kj in zip(y, ki, strict=True))
            ok = jnp.isfinite(y[0]) & jnp.isfinite(y[1]) & jnp.isfinite(y[2])
            fail = jnp.where((fail < 0) & ~ok, (k + 1) * 8 + 1, fail)
            y = tuple(jnp.where(fail >= 0, u, v) for u, v in zip(cols, y, strict=True))
            return y, k + 1, fail

        c = (tuple(x[:, i] for i in range(3)), jnp.asarray(0), jnp.full(B, -1))
        return jnp.stack(jax.lax.fori_loop(0, S, step, c)[0], axis=-1)

    def members_last_bare(x):  # the same layout, no failure record
        return jax.lax.fori_loop(0, S, lambda _, x: last(top, x, h)[0], x.T).T

    def members_last_flag(x):  # the same layout, one "has failed" flag a member
        def step(_, c):
            x, failed = c
            y, st = last(top, x, h)
            failed = failed | ~st.ok
            return jnp.where(failed, x, y), failed

        return jax.lax.fori_loop(0, S, step, (x.T, jnp.zeros(B, bool)))[0].T

    def poisoned(x, vstep=vstep, block=None):
        """The step with a poison instead of a record: a member whose status fails takes
        NaN (absorbing: a non-finite input fails every map's status); ``block``: a check
        that the state is finite at the end of every ``block`` steps (where a run would
        replay a block that holds a failure with the tracked step)."""

        def step(_, x):
            y, st = vstep(top, x, h)
            return jnp.where(st.ok[:, None], y, jnp.nan)

        if block is None:
            return jax.lax.fori_loop(0, S, step, x)

        def blocks(c, _):
            x = jax.lax.fori_loop(0, block, step, c[0])
            return (x, c[1] & jnp.all(jnp.isfinite(x))), None

        c = jax.lax.scan(blocks, (x, jnp.asarray(True)), None, length=S // block)[0]
        return jnp.where(c[1], jax.lax.fori_loop(0, S % block, step, c[0]), jnp.nan)

    def scan(step):  # vmap of the scan of three scalars: XLA carries three columns
        return jax.vmap(bare_scan(step, S))

    # On a CPU: the members in blocks, each block taken through all its steps before the
    # next (``lax.map`` of the loop; a block's state stays in cache), as numba's loop does
    bs = next(b for b in (1000, 100, 10, 1) if B % (2 * b) == 0)

    def in_blocks(run):
        return lambda x: jax.lax.map(run, x.reshape(-1, bs, 3)).reshape(-1, 3)

    def untracked(x):
        """mechint's step with a flag a member ANDed, nothing frozen: a failed member's
        final state is NaN (a run would take its block again with the tracked step)."""

        def step(_, c):
            y, st = vstep(top, c[0], h)
            return y, c[1] & st.ok

        y, ok = jax.lax.fori_loop(0, S, step, (x, jnp.ones(x.shape[0], bool)))
        return jnp.where(ok[:, None], y, jnp.nan)

    def bare_columns(x):  # the closed-form step on a block's three columns
        cols = jax.lax.fori_loop(0, S, lambda _, m: kahan_step(m, p, q, r), tuple(x.T))
        return jnp.stack(cols, axis=-1)

    pool = ThreadPoolExecutor(2)

    def in_halves(run, threads: bool = True):
        """Each half of the batch in blocks, in its own host thread (XLA runs a program's
        independent loops one after the other: a second core is reached from the host);
        ``threads=False``, the control: both halves dispatched from this thread, then
        waited for (JAX's CPU dispatch is asynchronous: the second call may start before
        the first ends)."""
        fn = jax.jit(in_blocks(run))

        def run_both(x):
            halves = (x[: B // 2], x[B // 2 :])
            out = pool.map(fn, halves) if threads else [fn(a) for a in halves]
            return np.concatenate([np.asarray(r.block_until_ready()) for r in out])

        return run_both

    variants = [
        ("integrate, Kahan", jax.jit(lambda x: mi.integrate(top, kahan, x, h, S).x[:, -1]), (x,)),
        ("integrate, Kahan, the state as one (B, 3) array",
         without_columns(lambda x: mi.integrate(top, kahan, x, h, S).x[:, -1], x), (x,)),
        ("tracked loop, static length", jax.jit(lambda x: tracked(x, S)), (x,)),
        ("tracked loop, traced length", jax.jit(tracked), (x, n)),
        ("tracked loop, traced length in static blocks of 64", jax.jit(blocked), (x, n)),
        ("tracked loop, static, unrolled 4", jax.jit(lambda x: tracked(x, S, unroll=4)), (x,)),
        ("tracked loop, members last (structure of arrays)", jax.jit(members_last), (x,)),
        ("tracked loop, the state as columns", jax.jit(columns), (x,)),
        ("the state as columns, no failure record",
         jax.jit(lambda x: columns(x, record=False)), (x,)),
        ("members last, a bool flag a member", jax.jit(members_last_flag), (x,)),
        ("members last, no failure record", jax.jit(members_last_bare), (x,)),
        (
            "the step without a failure record",
            jax.jit(lambda x: jax.lax.fori_loop(0, S, lambda _, x: vstep(top, x, h)[0], x)),
            (x,),
        ),
        ("the step, a NaN poison where its status fails", jax.jit(poisoned), (x,)),
        ("the poison, a finite check every 64 steps",
         jax.jit(lambda x: poisoned(x, block=64)), (x,)),
        ("simulate, Kahan, one save", lambda x: mi.simulate(top, kahan, x, h, S, S).x[:, -1],
         (xn,)),
        ("bare lax.scan, Kahan step (three columns)",
         jax.jit(scan(lambda m: kahan_step(m, p, q, r))), (x,)),
    ]  # fmt: skip
    if not on_gpu and B % 2 == 0:  # a GPU would run the blocks one by one, tiny kernels

        def integrate_block(b):
            return mi.integrate(top, kahan, b, h, S).x[:, -1]

        variants += [
            (f"blocks of {bs}: integrate on each", jax.jit(in_blocks(integrate_block)), (x,)),
            (f"blocks of {bs}: integrate on each, two threads", in_halves(integrate_block), (x,)),
            (
                f"blocks of {bs}: the step with an ok flag, nothing frozen",
                jax.jit(in_blocks(untracked)),
                (x,),
            ),
            (
                f"blocks of {bs}: the step with an ok flag, two threads",
                in_halves(untracked),
                (x,),
            ),
            (
                f"blocks of {bs}: the step with an ok flag, both halves from one thread",
                in_halves(untracked, threads=False),
                (x,),
            ),
            (
                f"blocks of {bs}: bare Kahan step (three columns)",
                jax.jit(in_blocks(bare_columns)),
                (x,),
            ),
            (f"blocks of {bs}: bare Kahan step, two threads", in_halves(bare_columns), (x,)),
        ]
    variants += [
        ("integrate, RK4", jax.jit(lambda x: mi.integrate(top, rk4, x, h, S).x[:, -1]), (x,)),
        ("RK4, members last (structure of arrays)", jax.jit(lambda x: members_last(x, rk4)),
         (x,)),
        ("RK4, the state as columns", jax.jit(lambda x: columns(x, rk4)), (x,)),
        ("RK4, every stage's sums on the columns, the field on (B, 3)",
         jax.jit(rk4_stages_on_columns), (x,)),
        ("RK4, the step without a failure record", jax.jit(
            lambda x: jax.lax.fori_loop(0, S, lambda _, x: vrk4(top, x, h)[0], x)), (x,)),
        ("RK4, a NaN poison where its status fails",
         jax.jit(lambda x: poisoned(x, vstep=vrk4)), (x,)),
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


def compiled_unrolled(unroll: int, integrator, f, *args):
    """``f`` compiled with a batch's state as columns and ``unroll`` steps of
    ``integrator`` an iteration of the loop (its ``batch_unroll``)."""
    with mock.patch.object(type(integrator), "batch_unroll", unroll):
        return compiled_with_columns(True, f, *args)


def by_unroll(quick: bool, dtype: str):
    """``integrate`` on a batch of Euler tops with the state as a (B, 3) array and as
    columns, 1 to 16 steps an iteration of the loop (each map's ``batch_unroll`` is its
    choice): body-steps/s and whether every variant gives the (B, 3) loop's bits."""
    real = jnp.dtype(dtype)
    on_gpu = jax.default_backend() == "gpu"
    B, S = (10**2, 16) if quick else (10**6, 1000) if on_gpu else (10**4, 200)
    top = jax.tree.map(lambda v: jnp.asarray(v, real), mi.systems.EulerTop((2.0, 1.0, 0.6667)))
    x = jnp.asarray(np.random.default_rng(0).standard_normal((B, 3)), real)
    h = real.type(0.01)
    unrolls = (1, 8) if quick else (1, 2, 4, 8, 16)
    maps = [mi.integrators.Kahan()]
    if not quick:
        maps += [mi.integrators.RK4(), mi.integrators.ExplicitEuler()]
    print(f"\nSteps an iteration, `integrate` on {B:.0e} Euler tops x {S} steps, {dtype}, "
          f"{jax.devices()[0]}\n| map | (B, 3) array | "
          + " | ".join(f"columns, {u} step an iteration" if u == 1 else f"{u}" for u in unrolls)
          + " | bits |\n|---|---|" + "---|" * len(unrolls) + "---|")  # fmt: skip
    for integrator in maps:

        def run(x, integrator=integrator):
            return mi.integrate(top, integrator, x, h, S).x[:, -1]

        fns = [without_columns(run, x)]
        fns += [compiled_unrolled(u, integrator, run, x) for u in unrolls]
        rates, finals = [], []
        for fn in fns:
            t = best_of(lambda fn=fn: jax.block_until_ready(fn(x)), warm=True)
            rates.append(f"{B * S / t.best:.3g}")
            finals.append(np.asarray(t.result))
        same = all(np.array_equal(f, finals[0], equal_nan=True) for f in finals)
        chosen = type(integrator).batch_unroll
        bits = "the same" if same else "differ"
        print(f"| {integrator.name} ({chosen} on a GPU) | " + " | ".join(rates) + f" | {bits} |",
              flush=True)  # fmt: skip


def main(quick: bool = False, dtype: str = "float64", bodies: int | None = None) -> None:
    out = rows(quick, dtype, bodies)
    by_map(quick, dtype)
    by_unroll(quick, dtype)
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
