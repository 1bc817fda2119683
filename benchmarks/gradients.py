"""Reverse mode through a run: the cost of a gradient over the forward run, and the memory
of a reverse pass over 10^6 steps.

    python benchmarks/gradients.py [--quick]

Loss: a linear functional of the final state of Kahan's map on the Euler top after N
steps (N = 10^5; quick: 10^3, Kahan only), differentiated with respect to the inertia, x0 and h
(``jax.grad`` of ``mi.integrate``, compile excluded).  Baseline: the forward run itself
(the same compiled loop, no derivative).  Targets: gradient / forward ≤ 4; the reverse
pass over 10^6 steps (quick: the 10^3 above) in bounded memory: XLA's own accounting of the
compiled program's temporary buffers, checkpointed chunks against keeping every chunk's
step Jacobians.  mi.integrate differentiates chunks of steps by their vectorized step
Jacobians and a scan of the adjoint recurrence (``mechint.integrate``).  The DL map
(implicit steps, differentiated at their roots) is timed beside it.  Baselines
(``baselines``): JAX's reverse scan and a parallel-prefix adjoint of a bare scan of the
closed-form Kahan step.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of

import mechint as mi
from mechint.integrators.kahan import euler_top_step

X0 = np.array([0.45, -0.3, 0.89])
REPEAT = 15  # timings of a few ms: the best of 15 (3 with --quick)


def loss_fn(steps, checkpoint, system_of=mi.systems.EulerTop, integrator=None, x0=X0):
    integrator = integrator or mi.integrators.Kahan()

    def loss(params, x0, h):
        sol = mi.integrate(system_of(params), integrator, x0, h, steps, checkpoint=checkpoint)
        return sum(jnp.sum(jnp.cos(jnp.arange(1.0, a[-1].size + 1.0)).reshape(a[-1].shape) * a[-1])
                   for a in jax.tree.leaves(sol.x))  # fmt: skip

    return loss


def temp_bytes(fn, *args) -> float:
    """Temporary memory of the compiled program (XLA's accounting), in MB."""
    analysis = jax.jit(fn).lower(*args).compile().memory_analysis()
    return float("nan") if analysis is None else analysis.temp_size_in_bytes / 2**20


def main(quick: bool = False) -> list[dict]:
    global REPEAT
    REPEAT = 3 if quick else REPEAT
    inertia, h = jnp.array([2.0, 1.0, 2.0 / 3.0]), 0.01
    steps = 1_000 if quick else 100_000
    rows = []
    for name, system_of, integrator, params, x0, n in (
        ("Kahan, Euler top", mi.systems.EulerTop, mi.integrators.Kahan(), inertia, X0, steps),
        ("DL map, free body n = 3", mi.systems.FreeRigidBody, mi.integrators.DiscreteLagrangian(),
         jnp.array([1.0, 2.0, 3.5]), mi.systems.FreeRigidBody((1.0, 2.0, 3.5)).example_state(),
         steps // 10),
    )[: 1 if quick else 2]:  # fmt: skip
        x0 = jax.tree.map(jnp.asarray, x0)
        forward_fn = jax.jit(loss_fn(n, False, system_of, integrator))
        fwd = best_of(
            lambda f=forward_fn, p=params, x=x0: f(p, x, h).block_until_ready(), warm=True
        )
        row = {"map": name, "steps": n, "forward s": fwd.best}
        for checkpoint in (True, False):
            grad_fn = jax.jit(
                jax.grad(loss_fn(n, checkpoint, system_of, integrator), argnums=(0, 1, 2))
            )
            g = best_of(
                lambda f=grad_fn, p=params, x=x0: jax.block_until_ready(f(p, x, h)), warm=True
            )
            row[f"grad/forward ({'checkpointed' if checkpoint else 'stored'})"] = g.best / fwd.best
        rows.append(row)
    long = steps if quick else 1_000_000  # quick: the gradients compiled above, measured
    memory = {}
    for checkpoint in (True, False):
        grad_fn = jax.grad(loss_fn(long, checkpoint), argnums=(0, 1, 2))
        memory[checkpoint] = temp_bytes(grad_fn, inertia, jnp.asarray(X0), h)
    print(f"Gradients through mi.integrate (CPU, {jax.devices()[0].device_kind}); targets: "
          "grad/forward ≤ 4, bounded memory over 10^6 steps")  # fmt: skip
    print("| map | steps | forward (s) | grad / forward, checkpointed | grad / forward, stored |")
    print("|---|---|---|---|---|")
    for r in rows:
        ck, st = r["grad/forward (checkpointed)"], r["grad/forward (stored)"]
        print(f"| {r['map']} | {r['steps']} | {r['forward s']:.3g} | {ck:.2f} | {st:.2f} |")
    print(f"\nReverse pass over {long} Kahan steps, temporary memory of the compiled gradient:")
    print(f"| checkpointed chunks | {memory[True]:.2f} MB |")
    print(f"| every chunk's Jacobians stored | {memory[False]:.1f} MB |")
    if quick:  # (its compiled gradients would take most of a quick run)
        print("\nThe reverse pass over 10^6 Wisdom-Holman steps: in the full run")
    else:
        planetary(1_000_000)
    baselines(steps)
    return rows


def planetary(steps: int) -> None:
    """The reverse pass over ``steps`` Wisdom–Holman steps of HLW's outer solar system
    (six bodies, h = 50 days): d(final positions · w)/d(masses, q0), XLA's temporary
    memory of the compiled gradient (checkpointed and stored chunks), and the
    checkpointed gradient run once (wall time with compile, the process's peak memory)."""
    import resource
    import time

    system, (q0, p0) = mi.systems.nbody.outer_solar_system()
    q0, p0 = jnp.asarray(q0), jnp.asarray(p0)
    w = jnp.cos(jnp.arange(1.0, q0.size + 1.0)).reshape(q0.shape)

    def loss_of(checkpoint):
        def loss(masses, q):
            body = mi.systems.NBody(masses, G=system.G)
            sol = mi.integrate(body, mi.integrators.WisdomHolman(), (q, p0), 50.0, steps,
                               checkpoint=checkpoint)  # fmt: skip
            return jnp.sum(w * sol.x[0][-1])

        return jax.grad(loss, argnums=(0, 1))

    masses = jnp.asarray(system.masses)
    memory = {ck: temp_bytes(loss_of(ck), masses, q0) for ck in (True, False)}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    g = jax.block_until_ready(jax.jit(loss_of(True))(masses, q0))
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finite = all(bool(jnp.all(jnp.isfinite(a))) for a in g)
    print(f"\nReverse pass over {steps} Wisdom-Holman steps (outer solar system, six bodies), "
          "temporary memory of the compiled gradient:")  # fmt: skip
    print(f"| checkpointed chunks | {memory[True]:.2f} MB |")
    print(f"| every chunk's Jacobians stored | {memory[False]:.1f} MB |")
    print(f"\nThe checkpointed gradient run once: {wall:.1f} s with compile, the process's peak "
          f"memory {peak:.0f} MB (before: {before:.0f} MB), gradient finite: {finite}")  # fmt: skip


def baselines(steps: int) -> None:
    """Where the reverse pass's cost lies, outside mi.integrate: a bare ``lax.scan`` of
    the closed-form Kahan step, differentiated by JAX's reverse scan, against a
    parallel-prefix adjoint (states stored by the forward scan, the step Jacobians by
    ``vmap(jacfwd)``, their suffix products by ``lax.associative_scan``): the cost of a
    gradient when the reverse pass is vectorized instead of a loop of small kernels."""
    step = euler_top_step
    a, m0, h = jnp.array([-0.5, 1.0, -0.5]), jnp.asarray(X0), jnp.asarray(0.01)
    w = jnp.cos(jnp.arange(1.0, 4.0))

    def phi(a, m, h):
        return step(a, m, h)[0]

    def loss(a, m, h):
        return w @ jax.lax.scan(lambda m, _: (phi(a, m, h), None), m, None, length=steps)[0]

    def prefix_grad(a, m0, h):
        _, ms = jax.lax.scan(lambda m, _: (phi(a, m, h), m), m0, None, length=steps)
        J = jax.vmap(jax.jacfwd(phi, argnums=1), (None, 0, None))(a, ms, h)
        Ga, Gh = jax.vmap(jax.jacfwd(phi, argnums=(0, 2)), (None, 0, None))(a, ms, h)
        S = jax.lax.associative_scan(jnp.matmul, J, reverse=True)  # J_{N-1} ⋯ J_k
        lam = jnp.einsum("kij,i->kj", S, w)  # cotangent of x_k
        after = jnp.concatenate([lam[1:], w[None]])  # cotangent of x_{k+1}
        return jnp.einsum("kij,ki->j", Ga, after), lam[0], jnp.einsum("ki,ki->", Gh, after)

    forward = jax.jit(loss)
    fwd = best_of(lambda: forward(a, m0, h).block_until_ready(), repeat=REPEAT, warm=True).best
    reverse, prefix = jax.jit(jax.grad(loss, argnums=(0, 1, 2))), jax.jit(prefix_grad)
    g_rev = best_of(lambda: jax.block_until_ready(reverse(a, m0, h)), repeat=REPEAT, warm=True).best
    g_pre = best_of(lambda: jax.block_until_ready(prefix(a, m0, h)), repeat=REPEAT, warm=True).best
    diff = max(
        float(jnp.max(jnp.abs(x - y)) / jnp.max(jnp.abs(x)))
        for x, y in zip(reverse(a, m0, h), prefix(a, m0, h), strict=True)
    )
    print(f"\nBaselines, a bare lax.scan of {steps} closed-form Kahan steps "
          f"(forward {fwd * 1e3:.2f} ms):")  # fmt: skip
    print("| reverse pass | grad / forward |")
    print("|---|---|")
    print(f"| JAX's reverse scan | {g_rev / fwd:.1f} |")
    print(f"| parallel-prefix adjoint (agrees to {diff:.1e} relative) | {g_pre / fwd:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
