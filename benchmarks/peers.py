"""mechint against its peers: diffrax, numba, SciPy and a bare lax.scan of the same step.

    python benchmarks/peers.py [--quick] [--dtype float64|float32] [--json FILE]

The `bench` extra installs the peers (`make bench`); a peer that is not installed is
reported as such, never skipped silently.  Problem: the Euler top I = (2, 1, 0.6667),
h = 0.01 (the issue-37 problem).

1. One trajectory, 10^6 steps (steps/s): Kahan's map and RK4, each as mechint runs it
   (`mi.integrate`, final state only), as a bare `lax.scan` of the same closed-form step,
   as a numba loop; diffrax's fixed-step RK4 and Heun (`diffeqsolve`, `SaveAt(t1=True)`);
   SciPy's DOP853 at rtol 1e-10 (adaptive: Kahan-equivalent steps T/h per second).
2. A batch of 10^5 bodies x 1000 steps (body-steps/s): the same maps vmapped; numba's
   loops parallel over bodies (`prange` over blocks of members, the members of a block in
   the innermost, contiguous axis so that LLVM vectorises them); diffrax vmapped; on a
   GPU also numba-cuda, one thread per body.

Every row checks its final state against mechint's (Kahan rows against Kahan, RK rows
against RK4: they are the same maps, so they agree to round-off; Heun and DOP853 against
the RK4 state within their own error): a peer that computed something else is flagged.
Compile time (first call minus the best call) is reported separately.  Times are the best
of 3 after a warm-up, in one process, alternating peers within each section.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of

import mechint as mi

INERTIA = (2.0, 1.0, 0.6667)
M0 = (0.45, 0.0, 0.89)
H = 0.01


# --- the same closed-form steps, written plainly ---------------------------------------


def kahan_step(m, p, q, r):
    """Kahan's map of the Euler top m' = (a1 m2 m3, ...), p, q, r = h a / 2 (closed form)."""
    m1, m2, m3 = m
    s1, s2, s3 = q * r * m1 * m1, p * r * m2 * m2, p * q * m3 * m3
    inv = 1.0 / (1.0 - s1 - s2 - s3 - 2.0 * p * q * r * m1 * m2 * m3)
    return (
        (m1 * (1 + s2 + s3 - s1) + 2 * p * m2 * m3) * inv,
        (m2 * (1 + s3 + s1 - s2) + 2 * q * m3 * m1) * inv,
        (m3 * (1 + s1 + s2 - s3) + 2 * r * m1 * m2) * inv,
    )


def field(m, a1, a2, a3):
    m1, m2, m3 = m
    return (a1 * m2 * m3, a2 * m3 * m1, a3 * m1 * m2)


def rk4_step(m, a1, a2, a3, h):
    def add(x, k, c):
        return (x[0] + c * k[0], x[1] + c * k[1], x[2] + c * k[2])

    k1 = field(m, a1, a2, a3)
    k2 = field(add(m, k1, 0.5 * h), a1, a2, a3)
    k3 = field(add(m, k2, 0.5 * h), a1, a2, a3)
    k4 = field(add(m, k3, h), a1, a2, a3)
    return tuple(m[i] + (h / 6.0) * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) for i in range(3))


def diffrax_rk4(dfx):
    """The classical RK4 as a diffrax solver (diffrax ships none; its documented way to add
    an explicit Runge-Kutta method is a Butcher tableau).  The error weights are unused:
    every diffrax row here runs at a constant step."""

    class RK4(dfx.AbstractERK):
        tableau: ClassVar = dfx.ButcherTableau(
            a_lower=(np.array([0.5]), np.array([0.0, 0.5]), np.array([0.0, 0.0, 1.0])),
            b_sol=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
            b_error=np.zeros(4),
            c=np.array([0.5, 0.5, 1.0]),
        )
        interpolation_cls: ClassVar = dfx.ThirdOrderHermitePolynomialInterpolation.from_k

        def order(self, terms):
            return 4

    return RK4()


def bare_scan(step, steps):
    """``steps`` steps of ``step`` on a (3,) state in one lax.scan, nothing else."""

    @jax.jit
    def run(m):
        def body(c, _):
            return step(c), None

        out, _ = jax.lax.scan(body, (m[0], m[1], m[2]), None, length=steps)
        return jnp.stack(out)

    return run


# --- numba ------------------------------------------------------------------------------

NUMBA_SRC = """
import numba as nb
import numpy as np

BLOCK = 64

@nb.njit(inline="always")
def _kahan(x1, x2, x3, p, q, r, _h, c):
    s1 = q * r * x1 * x1
    s2 = p * r * x2 * x2
    s3 = p * q * x3 * x3
    inv = c[0] / (c[0] - s1 - s2 - s3 - c[1] * p * q * r * x1 * x2 * x3)
    return ((x1 * (c[0] + s2 + s3 - s1) + c[1] * p * x2 * x3) * inv,
            (x2 * (c[0] + s3 + s1 - s2) + c[1] * q * x3 * x1) * inv,
            (x3 * (c[0] + s1 + s2 - s3) + c[1] * r * x1 * x2) * inv)

@nb.njit(inline="always")
def _rk4(x1, x2, x3, a1, a2, a3, h, c):
    k11, k12, k13 = a1 * x2 * x3, a2 * x3 * x1, a3 * x1 * x2
    y1, y2, y3 = x1 + c[2] * h * k11, x2 + c[2] * h * k12, x3 + c[2] * h * k13
    k21, k22, k23 = a1 * y2 * y3, a2 * y3 * y1, a3 * y1 * y2
    y1, y2, y3 = x1 + c[2] * h * k21, x2 + c[2] * h * k22, x3 + c[2] * h * k23
    k31, k32, k33 = a1 * y2 * y3, a2 * y3 * y1, a3 * y1 * y2
    y1, y2, y3 = x1 + h * k31, x2 + h * k32, x3 + h * k33
    k41, k42, k43 = a1 * y2 * y3, a2 * y3 * y1, a3 * y1 * y2
    k = h * c[3]
    return (x1 + k * (k11 + c[1] * k21 + c[1] * k31 + k41),
            x2 + k * (k12 + c[1] * k22 + c[1] * k32 + k42),
            x3 + k * (k13 + c[1] * k23 + c[1] * k33 + k43))

"""

# The loops, one per step function (passed as an argument, numba would neither inline
# nor vectorise the Kahan step: 10x slower): one body in registers, and the batch as
# blocks of BLOCK members, ms (3, B) with the members contiguous, the block innermost.
# k1, k2, k3: p, q, r for _kahan (which ignores h), a1, a2, a3 for _rk4.
NUMBA_LOOPS = """
@nb.njit(fastmath=False)
def {name}_one(m, k1, k2, k3, h, steps, c):
    x1, x2, x3 = m[0], m[1], m[2]
    for _ in range(steps):
        x1, x2, x3 = _{name}(x1, x2, x3, k1, k2, k3, h, c)
    out = np.empty_like(m)
    out[0], out[1], out[2] = x1, x2, x3
    return out

@nb.njit(parallel=True, fastmath=False)
def {name}_batch(ms, k1, k2, k3, h, steps, c):
    B = ms.shape[1]
    out = np.empty_like(ms)
    nblocks = (B + BLOCK - 1) // BLOCK
    for b in nb.prange(nblocks):
        lo = b * BLOCK
        hi = min(lo + BLOCK, B)
        m1 = ms[0, lo:hi].copy()
        m2 = ms[1, lo:hi].copy()
        m3 = ms[2, lo:hi].copy()
        for _ in range(steps):
            for j in range(hi - lo):
                m1[j], m2[j], m3[j] = _{name}(m1[j], m2[j], m3[j], k1, k2, k3, h, c)
        out[0, lo:hi] = m1
        out[1, lo:hi] = m2
        out[2, lo:hi] = m3
    return out
"""
NUMBA_SRC += "".join(NUMBA_LOOPS.format(name=n) for n in ("kahan", "rk4"))

CUDA_SRC = """
from numba import cuda

@cuda.jit
def kahan_cuda(ms, p, q, r, steps, c):
    i = cuda.grid(1)
    if i < ms.shape[1]:
        m1, m2, m3 = ms[0, i], ms[1, i], ms[2, i]
        for _ in range(steps):
            s1 = q * r * m1 * m1
            s2 = p * r * m2 * m2
            s3 = p * q * m3 * m3
            inv = c[0] / (c[0] - s1 - s2 - s3 - c[1] * p * q * r * m1 * m2 * m3)
            n1 = (m1 * (c[0] + s2 + s3 - s1) + c[1] * p * m2 * m3) * inv
            n2 = (m2 * (c[0] + s3 + s1 - s2) + c[1] * q * m3 * m1) * inv
            n3 = (m3 * (c[0] + s1 + s2 - s3) + c[1] * r * m1 * m2) * inv
            m1, m2, m3 = n1, n2, n3
        ms[0, i], ms[1, i], ms[2, i] = m1, m2, m3
"""


def load(src: str, name: str):
    """Compile one of the source blocks above into a namespace (None, reason) if the peer
    is not installed or cannot run here."""
    ns: dict = {}
    try:
        exec(compile(src, f"<peers:{name}>", "exec"), ns)
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}".splitlines()[0][:80]
    return ns, ""


# --- the rows ---------------------------------------------------------------------------


class Table:
    def __init__(self, title: str, unit: str):
        self.title, self.unit, self.rows = title, unit, []

    def add(self, name, work, fn, ref=None, tol=None, repeat=3):
        """Time ``fn`` (returns the final state(s)); ``work`` steps or body-steps per call."""
        try:
            t = best_of(fn, repeat, warm=True)
        except Exception as exc:
            self.rows.append(dict(name=name, rate=None, note=f"failed: {exc}"[:90]))
            return None
        out = np.asarray(t.result, dtype=np.float64)
        note, err = "", math.nan
        if ref is not None:
            err = float(np.max(np.abs(out - ref)) / max(1.0, float(np.max(np.abs(ref)))))
            note = f"{err:.1e} from the float64 map"
            if tol is not None and not err <= tol:
                note += f" > {tol:.0e}: NOT THE SAME MAP"
        self.rows.append(
            dict(
                name=name,
                rate=work / t.best,
                wall=t.best,
                compile=t.first - t.best,
                err=err,
                note=note,
            )
        )
        return out

    def skip(self, name, why):
        self.rows.append(dict(name=name, rate=None, note=f"not run: {why}"))

    def show(self, base=None):
        print(f"\n{self.title}")
        print(f"| method | {self.unit} | vs mechint | compile s | check |")
        print("|---|---|---|---|---|")
        ref = next((r["rate"] for r in self.rows if r["name"] == base), None)
        for r in self.rows:
            if r["rate"] is None:
                print(f"| {r['name']} | — | — | — | {r['note']} |")
                continue
            ratio = f"{r['rate'] / ref:.2f}" if ref else "—"
            print(
                f"| {r['name']} | {r['rate']:.3g} | {ratio} | {max(r['compile'], 0):.2f} "
                f"| {r['note']} |"
            )


def sections(quick: bool, dtype: str):
    real = np.float32 if dtype == "float32" else np.float64
    top = mi.systems.EulerTop(INERTIA)
    a1, a2, a3 = (real(x) for x in np.asarray(top.coefficients))
    h = real(H)
    p, q, r = real(0.5) * h * a1, real(0.5) * h * a2, real(0.5) * h * a3
    c = np.array([1.0, 2.0, 0.5, 1.0 / 6.0], dtype=real)  # numba's constants, typed
    m0 = np.asarray(M0, dtype=real)
    kahan, rk4 = mi.integrators.Kahan(), mi.integrators.RK4()
    on_gpu = jax.default_backend() == "gpu"
    nb_ns, nb_why = load(NUMBA_SRC, "numba")
    cpu = f" [{os.cpu_count()} CPUs]" if jax.default_backend() != "cpu" else ""
    if on_gpu and not hasattr(np, "row_stack"):
        # numba-cuda 0.x still calls np.row_stack, which NumPy 2.5 removed (its alias)
        setattr(np, "row_stack", np.vstack)  # noqa: B010
    cu_ns, cu_why = load(CUDA_SRC, "numba-cuda") if on_gpu else (None, "no GPU")
    try:
        import diffrax as dfx
    except ImportError as exc:
        dfx, dfx_why, dfx_rk4 = None, str(exc), None
    else:
        dfx_why, dfx_rk4 = "", diffrax_rk4(dfx)

    def reference(integrator, x0, steps):
        """The same map in float64 (mechint), the yardstick of every row's check."""
        x = np.asarray(x0, dtype=np.float64)
        return np.asarray(mi.integrate(top, integrator, x, H, steps, dtype="float64").x)[..., -1, :]

    def tolerance(table):
        """A row computes the same map when it is as close to the float64 map as mechint's
        own run in this precision (10x, and 1e-9 at least: the float64 rows differ only
        in the order of operations)."""
        return max(1e-9, 10 * table.rows[-1]["err"])

    def mechint_run(integrator, x0, steps):
        run = jax.jit(
            lambda x: mi.integrate(top, integrator, x, H, steps, dtype=dtype).x[..., -1, :]
        )
        return lambda: jax.block_until_ready(run(x0))

    def scan_run(fn, x0):
        return lambda: jax.block_until_ready(fn(jnp.asarray(x0)))

    def diffrax_run(solver, x0, steps, batch=False):
        term = dfx.ODETerm(lambda t, y, args: jnp.stack(field(y, a1, a2, a3)))
        T = real(steps) * h

        def one(y0):
            sol = dfx.diffeqsolve(
                term,
                solver,
                t0=real(0),
                t1=T,
                dt0=h,
                y0=y0,
                saveat=dfx.SaveAt(t1=True),
                max_steps=steps + 2,
                stepsize_controller=dfx.ConstantStepSize(),
            )
            return sol.ys[-1]

        run = jax.jit(jax.vmap(one) if batch else one)
        return lambda: jax.block_until_ready(run(jnp.asarray(x0)))

    # 1. one trajectory; on a GPU a chain of tiny kernels (tens of microseconds a step)
    steps = 10**4 if on_gpu else 10**5 if quick else 10**6
    one = Table(f"One trajectory, {steps:.0e} steps, {dtype}", "steps/s")
    k64, r64 = reference(kahan, M0, steps), reference(rk4, M0, steps)
    one.add("mechint Kahan (integrate)", steps, mechint_run(kahan, jnp.asarray(m0), steps), k64)
    tol = tolerance(one)
    scan_k = bare_scan(lambda m: kahan_step(m, p, q, r), steps)
    one.add("bare lax.scan, same Kahan step", steps, scan_run(scan_k, m0), k64, tol)
    if nb_ns:
        one.add(
            "numba loop, same Kahan step" + cpu,
            steps,
            lambda: nb_ns["kahan_one"](m0, p, q, r, h, steps, c),
            k64,
            tol,
        )
    else:
        one.skip("numba loop, same Kahan step" + cpu, nb_why)
    one.add("mechint RK4 (integrate)", steps, mechint_run(rk4, jnp.asarray(m0), steps), r64)
    tol = tolerance(one)
    scan_r = bare_scan(lambda m: rk4_step(m, a1, a2, a3, h), steps)
    one.add("bare lax.scan, same RK4 step", steps, scan_run(scan_r, m0), r64, tol)
    if nb_ns:
        one.add(
            "numba loop, same RK4 step" + cpu,
            steps,
            lambda: nb_ns["rk4_one"](m0, a1, a2, a3, h, steps, c),
            r64,
            tol,
        )
    else:
        one.skip("numba loop, same RK4 step" + cpu, nb_why)
    if dfx:
        one.add("diffrax RK4 (ConstantStepSize)", steps, diffrax_run(dfx_rk4, m0, steps), r64, tol)
        # Heun is order 2: its check is its own error against RK4's
        one.add("diffrax Heun (ConstantStepSize)", steps, diffrax_run(dfx.Heun(), m0, steps), r64)
    else:
        one.skip("diffrax RK4 / Heun", dfx_why)
    if not on_gpu:
        from scipy.integrate import solve_ivp

        T = steps * H
        a = np.asarray(top.coefficients)

        def dop():
            sol = solve_ivp(
                lambda _, m: [a[0] * m[1] * m[2], a[1] * m[2] * m[0], a[2] * m[0] * m[1]],
                (0, T),
                np.asarray(M0),
                method="DOP853",
                rtol=1e-10,
                atol=1e-12,
            )
            return sol.y[:, -1]

        one.add("SciPy DOP853 rtol 1e-10, float64 (equiv.)", steps, dop, r64, repeat=1)
    one.show("mechint Kahan (integrate)")

    # 2. a batch
    B = 10**6 if on_gpu else 10**4 if quick else 10**5
    bsteps = 100 if quick else 1000
    rng = np.random.default_rng(0)
    x64 = rng.standard_normal((B, 3))
    xb = x64.astype(real)
    xs = np.ascontiguousarray(xb.T)
    work = B * bsteps
    bat = Table(f"A batch of {B:.0e} bodies x {bsteps} steps, {dtype}", "body-steps/s")
    k64, r64 = reference(kahan, xb, bsteps), reference(rk4, xb, bsteps)
    bat.add(
        "mechint Kahan (integrate, vmap)", work, mechint_run(kahan, jnp.asarray(xb), bsteps), k64
    )
    tol = tolerance(bat)
    scan_kb = jax.jit(jax.vmap(bare_scan(lambda m: kahan_step(m, p, q, r), bsteps)))
    bat.add("bare vmap(lax.scan), same Kahan step", work, scan_run(scan_kb, xb), k64, tol)

    # members in the last axis: the scan carries (3, B) columns, XLA vectorises the members
    @jax.jit
    def soa(x):
        def body(c, _):
            return kahan_step(c, p, q, r), None

        out, _ = jax.lax.scan(body, (x[0], x[1], x[2]), None, length=bsteps)
        return jnp.stack(out, axis=-1)

    bat.add("bare lax.scan over (3, B) columns", work, scan_run(soa, xs), k64, tol)
    if nb_ns:
        bat.add(
            f"numba prange, {nb_ns['BLOCK']} members a block" + cpu,
            work,
            lambda: nb_ns["kahan_batch"](xs, p, q, r, h, bsteps, c).T,
            k64,
            tol,
        )
    else:
        bat.skip("numba prange" + cpu, nb_why)
    if cu_ns:
        from numba import cuda

        def cuda_run():
            d = cuda.to_device(xs)
            threads = 256
            cu_ns["kahan_cuda"][(B + threads - 1) // threads, threads](d, p, q, r, bsteps, c)
            return d.copy_to_host().T

        bat.add("numba-cuda, one thread a body (with copies)", work, cuda_run, k64, tol)
    elif on_gpu:
        bat.skip("numba-cuda", cu_why)
    bat.add("mechint RK4 (integrate, vmap)", work, mechint_run(rk4, jnp.asarray(xb), bsteps), r64)
    tol = tolerance(bat)
    scan_rb = jax.jit(jax.vmap(bare_scan(lambda m: rk4_step(m, a1, a2, a3, h), bsteps)))
    bat.add("bare vmap(lax.scan), same RK4 step", work, scan_run(scan_rb, xb), r64, tol)
    if nb_ns:
        bat.add(
            "numba prange, same RK4 step" + cpu,
            work,
            lambda: nb_ns["rk4_batch"](xs, a1, a2, a3, h, bsteps, c).T,
            r64,
            tol,
        )
    if dfx:
        bat.add("diffrax RK4, vmap", work, diffrax_run(dfx_rk4, xb, bsteps, batch=True), r64, tol)
    else:
        bat.skip("diffrax RK4, vmap", dfx_why)
    bat.show("mechint Kahan (integrate, vmap)")
    return [one, bat]


def main(quick: bool = False, dtype: str = "float64", out: str | None = None) -> None:
    print(
        f"mechint {mi.__version__}, jax {jax.__version__}, device {jax.devices()[0]}, "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"{time.strftime('%Y-%m-%d')}"
    )
    tables = sections(quick, dtype)
    rate = {r["name"].split(" [")[0]: r["rate"] for t in tables for r in t.rows}

    def shown(name):
        v = rate.get(name)
        return "not run" if v is None else f"{v:.2e}"

    odd = [r["name"] for t in tables for r in t.rows if "NOT THE SAME" in r["note"]]
    block = next((k for k in rate if k.startswith("numba prange, ") and "members" in k), "")
    print(
        f"\ntargets: Kahan one trajectory >= 6e7 steps/s and >= the bare scan "
        f"({shown('mechint Kahan (integrate)')} vs {shown('bare lax.scan, same Kahan step')}); "
        f"RK4 >= its bare scan ({shown('mechint RK4 (integrate)')} vs "
        f"{shown('bare lax.scan, same RK4 step')}); Kahan batch >= 1e9 body-steps/s, within "
        f"2x of numba ({shown('mechint Kahan (integrate, vmap)')} vs {shown(block)}); "
        f"every row the same map: {'no: ' + ', '.join(odd) if odd else 'yes'}"
    )
    if out:
        with open(out, "w") as f:
            json.dump(
                dict(
                    dtype=dtype,
                    device=str(jax.devices()[0]),
                    jax=jax.__version__,
                    tables=[dict(title=t.title, unit=t.unit, rows=t.rows) for t in tables],
                ),
                f,
                indent=1,
                default=lambda x: None if isinstance(x, float) and math.isnan(x) else x,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--json", help="also write the tables to this file")
    args = parser.parse_args()
    main(args.quick, args.dtype, args.json)
