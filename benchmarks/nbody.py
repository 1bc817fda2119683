"""mechint's Wisdom-Holman maps against REBOUND 5.2.2's WHFast and SABA on the outer solar system.

    python benchmarks/nbody.py [--quick]
    python benchmarks/nbody.py --gpu [--quick]

Needs ``rebound==5.2.2`` (``pip install rebound==5.2.2``).  Problem: REBOUND's
``sim.add("outersolarsystem")`` (Sun + Jupiter, Saturn, Uranus, Neptune; G = 1, time unit
yr/2pi); mechint's ``systems.NBody`` and state are built from REBOUND's particles
(q = x, p = m v).  P_J = 2 pi sqrt(a_J^3 / (G (m_0 + m_J))), a_J from REBOUND's orbit of
Jupiter (about 74.6 time units).

1. Accuracy: |dE/E| at the end of 1000 Jupiter periods, the same method at the same step,
   REBOUND (safe_mode=0, the scheme of mechint's run: the map's coordinates carried from
   step to step, adjacent half drifts merged, the corrector applied once at the start and
   its inverse where a state is shown; safe_mode=1, which converts and corrects every
   step, shown alongside; both synchronized at the end) against mechint
   (``system.hamiltonian`` at the final state against the initial one, only the end
   saved): WHFast Jacobi at h = 0.123, 0.0123 and (not with --quick) 0.00123 P_J (1e6
   steps; 100 P_J instead if mechint would take over ~3 minutes), corrector 11, WHCKL
   (lazy kernel + corrector 17), SABA(10,6,4) at h = 0.0123235235 P_J, democratic
   heliocentric and WHDS, all at 0.0123 P_J otherwise.
   Target: mechint within 1.5x of REBOUND in every row.
2. One system, one core (every thread of the process pinned to one CPU): steps/s of WH Jacobi
   (standard kernel) at h = 0.0123 P_J over 1e5 steps; mechint ``simulate`` (wall minus
   compile time, best of 2 after a warm-up), and the same in a process of its own with
   ``MECHINT_SMALL_LOOP_BYTES=65536`` (XLA runs the whole loop as one compiled function),
   against REBOUND safe_mode=0 and safe_mode=1 (best of 3).
3. Many systems: B = 1e4 (--quick: 1e3) outer solar systems, each planet's position
   perturbed by a relative 1e-6 normal (seed 0), 1000 steps at h = 0.0123 P_J,
   body-steps/s (B x 1000 x 5 / s): mechint's batched ``simulate`` (one call, (B, 5, 3)
   arrays, wall minus compile time, the best of three calls) against REBOUND system by
   system in a ``multiprocessing.Pool(2)`` (each process its half; the ``map`` timed, the
   best of two; the pool forked at the start, before JAX runs anything), safe_mode=0 and
   1; the final states checked against each other.
   Target: mechint >= 4x REBOUND's two processes (safe_mode=0, its faster mode).
4. One step of every configuration both accept, from the same state at h = 0.0123 P_J,
   against REBOUND (safe_mode=1, one ``sim.steps(1)``): coordinates x kernels x
   correctors {0, 3, 5, 7, 11, 17} x corrector2, SABA 1..4, SABACM 1..4, SABA(10,4),
   (8,6,4), (10,6,4); relative difference max|d| / max|value| over positions and over
   velocities, target <= 1e-14.  --quick: correctors {0, 17} only.

5. ``--gpu`` (this section alone): many systems on JAX's default device (a GPU):
   B = 1e4, 1e5, 1e6 perturbed outer solar systems (--quick: 1e3, 1e4), 1000 steps, float64
   and float32, mechint's batched ``simulate`` in one compiled call (wall - compile, best
   of 3), against REBOUND safe_mode=0 on every CPU of the machine (1000 systems a process,
   ``multiprocessing.Pool``, best of 2) in the same run; the final states of REBOUND's
   systems compared.  Target: float64 >= 100x REBOUND on all of the machine's cores.

Times are wall-clock on whatever machine runs the script; on a shared machine they are
noisy.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time

import jax
import numpy as np
from _timing import best_of

import mechint as mi
from mechint.errors import InputError

I = mi.integrators

PERIODS = 1000  # Jupiter periods for the accuracy table
TARGET_RATIO = 1.5  # mechint |dE/E| within this factor of REBOUND's
TARGET_SPEEDUP = 4.0  # mechint batch >= this x REBOUND's two processes
TARGET_STEP = 1e-14  # one step against REBOUND, relative
COORDS = {"jacobi": "jacobi", "democratic-heliocentric": "democraticheliocentric", "whds": "whds"}
KERNELS = {"standard": "default", "modified-kick": "modifiedkick", "composition": "composition",
           "lazy": "lazy"}  # fmt: skip
CORRECTORS = (0, 3, 5, 7, 11, 17)
SABA_TYPES = {1: "1", 2: "2", 3: "3", 4: "4", "10,4": "10_4", "8,6,4": "8_6_4",
              "10,6,4": "10_6_4"}  # fmt: skip


# --- the problem, and the same method on both sides ------------------------------------


def outer_solar_system():
    """REBOUND's outer solar system: masses (5,), positions and velocities (5, 3), G, P_J."""
    import rebound

    sim = rebound.Simulation()
    sim.add("outersolarsystem")
    ps = sim.particles
    m = np.array([p.m for p in ps])
    q = np.array([[p.x, p.y, p.z] for p in ps])
    v = np.array([[p.vx, p.vy, p.vz] for p in ps])
    a_j = ps[1].orbit(primary=ps[0]).a
    period = 2 * math.pi * math.sqrt(a_j**3 / (sim.G * (m[0] + m[1])))
    return m, q, v, float(sim.G), period


class Method:
    """One method as REBOUND and mechint each spell it: ``rb`` a dict of REBOUND settings
    ({"integrator": "whfast", "coordinates": ..., ...} or {"integrator": "saba", "type": ...}),
    ``mi`` the mechint integrator (or the InputError mechint raised)."""

    def __init__(self, label, rb, make):
        self.label, self.rb = label, rb
        try:
            self.mi, self.refused = make(), None
        except InputError as exc:
            self.mi, self.refused = None, str(exc)

    @staticmethod
    def wh(coordinates="jacobi", kernel="standard", corrector=0, corrector2=False, label=None):
        rb = dict(integrator="whfast", coordinates=COORDS[coordinates], kernel=KERNELS[kernel],
                  corrector=corrector, corrector2=int(corrector2))  # fmt: skip
        label = label or f"WH {coordinates} {kernel} c{corrector}" + (" +c2" if corrector2 else "")
        return Method(
            label,
            rb,
            lambda: I.WisdomHolman(
                coordinates=coordinates, kernel=kernel, corrector=corrector, corrector2=corrector2
            ),
        )

    @staticmethod
    def saba(n, corrected=False, label=None):
        rb = dict(integrator="saba", type=("CM_" if corrected else "") + SABA_TYPES[n])
        label = label or ("SABACM" if corrected else "SABA") + f"({n})"
        return Method(label, rb, lambda: I.SABA(n, corrected=corrected))


def rebound_sim(m, q, v, G, h, rb: dict, safe_mode: int = 1):
    import rebound

    sim = rebound.Simulation()
    sim.G = G
    for k in range(len(m)):
        sim.add(m=m[k], x=q[k, 0], y=q[k, 1], z=q[k, 2], vx=v[k, 0], vy=v[k, 1], vz=v[k, 2])
    sim.integrator = rb["integrator"]  # first: it makes a fresh state
    for key, value in rb.items():
        if key != "integrator":
            setattr(sim.integrator, key, value)
    sim.integrator.safe_mode = safe_mode
    sim.dt = h
    return sim


def rebound_state(sim):
    ps = sim.particles
    return (np.array([[p.x, p.y, p.z] for p in ps]), np.array([[p.vx, p.vy, p.vz] for p in ps]))


def fmt(x, spec=".2e"):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


# --- 1. accuracy -----------------------------------------------------------------------


def rebound_drift(prob, method, h, steps, safe_mode):
    m, q, v, G, _ = prob
    sim = rebound_sim(m, q, v, G, h, method.rb, safe_mode)
    e0 = sim.energy()
    t = time.perf_counter()
    sim.steps(steps)
    sim.synchronize()  # safe_mode=0: the inertial state (the corrector's inverse applied)
    wall = time.perf_counter() - t
    return abs((sim.energy() - e0) / e0), wall


def mechint_drift(prob, method, h, steps):
    m, q, v, G, _ = prob
    system = mi.systems.NBody(m, G=G)
    x0 = (q, m[:, None] * v)
    traj = mi.simulate(system, method.mi, x0, h, steps, steps)
    e0 = float(system.hamiltonian(x0))
    e1 = float(system.hamiltonian((traj.x[0][-1], traj.x[1][-1])))
    s = traj.stats
    return abs((e1 - e0) / e0), s["wall_time"] - s["compile_time"], s["compile_time"]


def accuracy(prob, quick):
    period = prob[4]
    jac = Method.wh(label="WHFast jacobi")
    rows = [
        (jac, 0.123),
        (jac, 0.0123),
        (jac, 0.00123),
        (Method.wh(corrector=11, label="WHFast jacobi, corrector 11"), 0.0123),
        (Method.wh(kernel="lazy", corrector=17, label="WHCKL (lazy kernel, corrector 17)"), 0.0123),
        (Method.saba("10,6,4", label="SABA(10,6,4)"), 0.0123235235),
        (Method.wh("democratic-heliocentric", label="WHFast democratic heliocentric"), 0.0123),
        (Method.wh("whds", label="WHFast WHDS"), 0.0123),
    ]
    rate = None  # mechint's steps/s on WH Jacobi at 0.0123 P_J, to size the 1e6-step row
    out = []
    for method, frac in rows:
        h = frac * period
        periods, note = PERIODS, ""
        if frac == 0.00123:
            if quick:
                continue
            if rate is not None and PERIODS * period / h / rate > 180:
                periods = 100
                note = f"100 P_J: mechint would take ~{PERIODS * period / h / rate:.0f} s for 1000"
        steps = round(periods * period / h)
        rb0, rb_wall = rebound_drift(prob, method, h, steps, 0)
        rb1, _ = rebound_drift(prob, method, h, steps, 1)
        mie, mi_wall, mi_compile = mechint_drift(prob, method, h, steps)
        if method is jac and frac == 0.0123:
            rate = steps / mi_wall
        out.append(dict(label=method.label, frac=frac, steps=steps, periods=periods, rb=rb0,
                        rb1=rb1, mi=mie, ratio=mie / rb0, rb_wall=rb_wall, mi_wall=mi_wall,
                        mi_compile=mi_compile, note=note))  # fmt: skip
    print(f"\n## 1. Energy error |dE/E| after {PERIODS} Jupiter periods (P_J = {period:.4f})")
    print("REBOUND safe_mode=0 (the scheme of mechint's run); ratio = mechint / REBOUND; "
          f"target ratio <= {TARGET_RATIO}\n")  # fmt: skip
    print("| method | h/P_J | steps | REBOUND \\|dE/E\\| | mechint \\|dE/E\\| | ratio "
          "| REBOUND safe_mode=1 | REBOUND s | mechint s (compile s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in out:
        label = r["label"] + (f" ({r['note']})" if r["note"] else "")
        print(f"| {label} | {r['frac']:g} | {r['steps']} | {fmt(r['rb'])} | {fmt(r['mi'])} "
              f"| {r['ratio']:.2f} | {fmt(r['rb1'])} | {r['rb_wall']:.2f} "
              f"| {r['mi_wall']:.2f} ({r['mi_compile']:.1f}) |")  # fmt: skip
    return out


# --- 2. one system, one core -----------------------------------------------------------


def pin(cpus) -> dict:
    """Set the CPU affinity of every thread of this process; return the old ones."""
    old = {}
    for tid in map(int, os.listdir("/proc/self/task")):
        try:
            old[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, cpus)
        except OSError:  # the thread ended
            pass
    return old


def single_core(prob, steps):
    """steps/s of WH Jacobi, both codes, every thread of this process on one CPU."""
    m, q, v, G, period = prob
    h = 0.0123 * period
    method = Method.wh()
    system = mi.systems.NBody(m, G=G)
    x0 = (q, m[:, None] * v)
    cpu = min(os.sched_getaffinity(0))
    # the same in a process of its own with XLA's small-loop threshold raised (the whole
    # loop one compiled function; mechint._xla), before this process pins its threads
    env = dict(os.environ, MECHINT_SMALL_LOOP_BYTES="65536")
    small = subprocess.run([sys.executable, __file__, "--single", str(steps), str(cpu)],
                           env=env, capture_output=True, text=True, check=True)  # fmt: skip
    old = pin({cpu})
    try:
        first, best = mechint_single(system, method.mi, x0, h, steps)
        out = dict(mechint=steps / best, mechint_compile=first.stats["compile_time"])
        out["mechint_small"] = float(small.stdout.split()[-1])
        for safe in (0, 1):

            def run(safe=safe):
                sim = rebound_sim(m, q, v, G, h, method.rb, safe)
                sim.steps(steps)

            out[f"rebound{safe}"] = steps / best_of(run, 3).best
    finally:
        for tid, cpus in old.items():
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:
                pass
    print(f"\n## 2. One system on one core (every thread on CPU {cpu}): WH Jacobi, "
          f"h = 0.0123 P_J, {steps:.0e} steps\n")  # fmt: skip
    print("| code | steps/s | vs mechint |")
    print("|---|---|---|")
    for name, key in [("mechint simulate (wall - compile, best of 2)", "mechint"),
                      ("mechint, MECHINT_SMALL_LOOP_BYTES=65536 (its own process)",
                       "mechint_small"),
                      ("REBOUND WHFast safe_mode=0 (best of 3)", "rebound0"),
                      ("REBOUND WHFast safe_mode=1 (best of 3)", "rebound1")]:  # fmt: skip
        print(f"| {name} | {out[key]:.3g} | {out[key] / out['mechint']:.2f} |")
    print(f"\nmechint compile: {out['mechint_compile']:.1f} s")
    return out


def mechint_single(system, integrator, x0, h, steps):
    """(the first run, the best wall - compile time of two more) of one system."""
    first = mi.simulate(system, integrator, x0, h, steps, steps)
    best = math.inf
    for _ in range(2):
        s = mi.simulate(system, integrator, x0, h, steps, steps).stats
        best = min(best, s["wall_time"] - s["compile_time"])
    return first, best


def single_only(steps: int, cpu: int) -> None:
    """Print mechint's steps/s of section 2 (``--single``: a process of its own)."""
    m, q, v, G, period = outer_solar_system()
    pin({cpu})
    _, best = mechint_single(mi.systems.NBody(m, G=G), Method.wh().mi, (q, m[:, None] * v),
                             0.0123 * period, steps)  # fmt: skip
    print(steps / best)


# --- 3. many systems -------------------------------------------------------------------


def rebound_chunk(args):
    """Run each system of a chunk in turn; return the final positions and velocities."""
    m, qs, v, G, h, steps, safe = args
    rb = Method.wh().rb
    qf, vf = np.empty_like(qs), np.empty((len(qs), *v.shape))
    for b in range(len(qs)):
        sim = rebound_sim(m, qs[b], v, G, h, rb, safe)
        sim.steps(steps)
        qf[b], vf[b] = rebound_state(sim)
    return qf, vf


def many_systems(prob, batch, pool, steps=1000):
    m, q, v, G, period = prob
    h = 0.0123 * period
    rng = np.random.default_rng(0)
    qs = np.repeat(q[None], batch, axis=0)
    qs[:, 1:] *= 1.0 + 1e-6 * rng.standard_normal((batch, len(m) - 1, 3))
    ps = np.repeat((m[:, None] * v)[None], batch, axis=0)
    work = batch * steps * len(m)
    system = mi.systems.NBody(m, G=G)
    integ = I.WisdomHolman()
    traj = mi.simulate(system, integ, (qs, ps), h, steps, steps)
    mi_time = traj.stats["wall_time"] - traj.stats["compile_time"]
    for _ in range(2):  # the best of three (a shared machine's times are noisy)
        s = mi.simulate(system, integ, (qs, ps), h, steps, steps).stats
        mi_time = min(mi_time, s["wall_time"] - s["compile_time"])
    mq, mv = np.asarray(traj.x[0][:, -1]), np.asarray(traj.x[1][:, -1]) / m[:, None]
    rows = [("mechint batched simulate (wall - compile, best of 3)", work / mi_time, math.nan)]
    halves = np.array_split(np.arange(batch), 2)
    for safe in (0, 1):
        wall = math.inf
        for _ in range(2):  # the best of two
            t = time.perf_counter()
            parts = pool.map(rebound_chunk, [(m, qs[i], v, G, h, steps, safe) for i in halves])
            wall = min(wall, time.perf_counter() - t)
        rq = np.concatenate([p[0] for p in parts])
        rv = np.concatenate([p[1] for p in parts])
        diff = max(np.max(np.abs(rq - mq)) / np.max(np.abs(rq)),
                   np.max(np.abs(rv - mv)) / np.max(np.abs(rv)))  # fmt: skip
        rows.append((f"REBOUND WHFast safe_mode={safe}, Pool(2)", work / wall, diff))
    print(f"\n## 3. Many systems: B = {batch}, {steps} steps, h = 0.0123 P_J, WH Jacobi\n")
    print("| code | body-steps/s | mechint speed-up | final state vs mechint (rel.) |")
    print("|---|---|---|---|")
    for name, rate, diff in rows:
        print(f"| {name} | {rate:.3g} | {rows[0][1] / rate:.2f} | {fmt(diff, '.1e')} |")
    print(f"\nmechint compile: {traj.stats['compile_time']:.1f} s")
    return {name: (rate, diff) for name, rate, diff in rows}


# --- 5. many systems on an accelerator ------------------------------------------------


def perturbed(prob, batch, seed=0):
    """``batch`` outer solar systems, each planet's position perturbed by a relative 1e-6
    normal: positions (B, 5, 3) and momenta (B, 5, 3)."""
    m, q, v, _, _ = prob
    rng = np.random.default_rng(seed)
    qs = np.repeat(q[None], batch, axis=0)
    qs[:, 1:] *= 1.0 + 1e-6 * rng.standard_normal((batch, len(m) - 1, 3))
    return qs, np.repeat((m[:, None] * v)[None], batch, axis=0)


def accelerator(prob, batches, dtypes, pool, workers, rebound_batch, steps=1000, budget=60.0):
    """Section 5 (``--gpu``): body-steps/s of mechint's batched ``simulate`` on JAX's
    default device for each batch size and dtype (wall - compile, best of 3; a size is
    skipped once one call of the one before took over ``budget`` s), against REBOUND
    WHFast safe_mode=0 on ``workers`` processes (``rebound_batch`` systems, best of 2), in
    the same run; the first ``rebound_batch`` systems' final states compared."""
    m, _, v, G, period = prob
    h = 0.0123 * period
    qs, ps = perturbed(prob, max(max(batches), rebound_batch))
    chunks = np.array_split(np.arange(rebound_batch), workers)
    wall = math.inf
    for _ in range(2):
        t = time.perf_counter()
        parts = pool.map(rebound_chunk, [(m, qs[i], v, G, h, steps, 0) for i in chunks])
        wall = min(wall, time.perf_counter() - t)
    rq = np.concatenate([p[0] for p in parts])
    rv = np.concatenate([p[1] for p in parts])
    rb_rate = rebound_batch * steps * len(m) / wall
    system = mi.systems.NBody(m, G=G)
    integ = I.WisdomHolman()
    rows = []
    for dtype in dtypes:
        last = 0.0
        for batch in batches:
            if last > budget:
                rows.append((dtype, batch, math.nan, math.nan, math.nan, "skipped"))
                continue
            x0 = (qs[:batch], ps[:batch])
            try:
                # one compiled call for the whole run (the default cuts it into calls of
                # 2^22 body-steps, each handing the state to the host)
                run = dict(dtype=dtype, chunk_steps=batch * steps)
                traj = mi.simulate(system, integ, x0, h, steps, steps, **run)
                compile_time = traj.stats["compile_time"]
                best = traj.stats["wall_time"] - compile_time
                for _ in range(2):
                    s = mi.simulate(system, integ, x0, h, steps, steps, **run).stats
                    best = min(best, s["wall_time"] - s["compile_time"])
            except Exception as exc:  # a row's failure is its cell
                rows.append((dtype, batch, math.nan, math.nan, math.nan, repr(exc)[:120]))
                continue
            last = best
            k = min(batch, rebound_batch)
            mq = np.asarray(traj.x[0][:k, -1], dtype=np.float64)
            mv = np.asarray(traj.x[1][:k, -1], dtype=np.float64) / m[:, None]
            diff = max(rel(mq, rq[:k]), rel(mv, rv[:k]))
            rows.append((dtype, batch, batch * steps * len(m) / best, compile_time, diff, ""))
            print(f"  {dtype} B={batch}: {rows[-1][2]:.3g} body-steps/s", file=sys.stderr)
    print(f"\n## 5. Many systems on {jax.devices()[0].device_kind}: {steps} steps, "
          f"h = 0.0123 P_J, WH Jacobi\n")  # fmt: skip
    print(f"REBOUND WHFast safe_mode=0, {rebound_batch} systems on {workers} processes "
          f"(best of 2): {rb_rate:.3g} body-steps/s\n")  # fmt: skip
    print("| dtype | systems | mechint body-steps/s | vs REBOUND | compile (s) | "
          "final state vs REBOUND (rel.) | note |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for dtype, batch, rate, comp, diff, note in rows:
        print(f"| {dtype} | {batch:.0e} | {fmt(rate, '.3g')} | {fmt(rate / rb_rate, '.1f')} | "
              f"{fmt(comp, '.1f')} | {fmt(diff, '.1e')} | {note} |")  # fmt: skip
    return rb_rate, rows


def gpu_main(quick: bool) -> None:
    """Section 5 alone: the accelerator against REBOUND on every CPU of the machine."""
    import rebound

    workers = os.cpu_count() or 1
    pool = mp.get_context("fork").Pool(workers)
    cpu = platform.processor() or platform.machine()
    print(f"mechint {mi.__version__}, REBOUND {rebound.__version__}, jax {jax.__version__}, "
          f"device {jax.devices()[0]}, {workers} CPUs ({cpu})")  # fmt: skip
    prob = outer_solar_system()
    batches = (1_000, 10_000) if quick else (10_000, 100_000, 1_000_000)
    with pool:
        accelerator(prob, batches, ("float64", "float32"), pool, workers,
                    rebound_batch=100 * workers if quick else 1000 * workers)  # fmt: skip


# --- 4. one step against REBOUND -------------------------------------------------------


def configurations(quick):
    methods = []
    for coords in COORDS:
        for kernel in KERNELS:
            for corr in (0, 17) if quick else CORRECTORS:
                for c2 in (False, True):
                    methods.append(Method.wh(coords, kernel, corr, c2))
    for n in (1, 2, 3, 4):
        methods.append(Method.saba(n))
    for n in (1, 2, 3, 4):
        methods.append(Method.saba(n, corrected=True))
    for n in ("10,4", "8,6,4", "10,6,4"):
        methods.append(Method.saba(n))
    return methods


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def one_step(prob, quick, group=12):
    m, q, v, G, period = prob
    h = 0.0123 * period
    system = mi.systems.NBody(m, G=G)
    x0 = (q, m[:, None] * v)
    ours, refused_rb, refused_mi = [], [], []
    for method in configurations(quick):
        try:
            sim = rebound_sim(m, q, v, G, h, method.rb, 1)
            sim.steps(1)
        except RuntimeError:
            refused_rb.append(method.label)
            continue
        if method.mi is None:
            refused_mi.append(method.label)
            continue
        ours.append((method, rebound_state(sim)))
    # one compiled program per group of configurations (compiling costs ~1 s each so,
    # ~3 s each on their own)
    worst, results = (0.0, ""), []
    t = time.perf_counter()
    for k in range(0, len(ours), group):
        chunk = ours[k : k + group]
        step = jax.jit(lambda x, chunk=chunk: [c[0].mi.step(system, x, h)[0] for c in chunk])
        for (method, (rq, rv)), (mq, mp_) in zip(chunk, step(x0), strict=True):
            d = max(rel(np.asarray(mq), rq), rel(np.asarray(mp_) / m[:, None], rv))
            results.append((method.label, d))
            worst = max(worst, (d, method.label))
    wall = time.perf_counter() - t
    bad = [(label, d) for label, d in results if not d <= TARGET_STEP]
    print("\n## 4. One step against REBOUND (safe_mode=1), h = 0.0123 P_J"
          + (", correctors {0, 17} only (--quick)" if quick else ""))  # fmt: skip
    print(f"\n{len(results)} configurations compared, worst relative difference "
          f"{worst[0]:.1e} ({worst[1]}), {len(bad)} above {TARGET_STEP:.0e}; "
          f"{len(refused_rb) + len(refused_mi)} combinations not compared "
          f"({len(refused_rb)} REBOUND refuses, {len(refused_mi)} mechint refuses); "
          f"mechint compile + run {wall:.0f} s")  # fmt: skip
    for label, d in bad:
        print(f"- {label}: {d:.1e}")
    if refused_mi:
        print(f"- REBOUND runs, mechint refuses: {', '.join(refused_mi)}")
    return dict(n=len(results), worst=worst, bad=bad)


# --- main ------------------------------------------------------------------------------


def main(quick: bool = False) -> None:
    try:
        import rebound
    except ImportError:  # the test environment: mechint's side alone, small
        system, x0 = mi.systems.nbody.outer_solar_system()
        traj = mi.simulate(system, I.WisdomHolman(), x0, 50.0, 200, 200)
        H = traj.invariants()["H"]
        print(f"REBOUND is not installed (make bench installs it): mechint alone, 200 WH steps "
              f"of HLW's outer solar system, |dE/E| = {abs(H[-1] / H[0] - 1):.2e}")  # fmt: skip
        print("targets: not measured without REBOUND")
        return

    # REBOUND's two processes, forked now, before JAX starts its threads (no second JAX)
    pool = mp.get_context("fork").Pool(2)
    print(
        f"mechint {mi.__version__}, REBOUND {rebound.__version__}, jax {jax.__version__}, "
        f"device {jax.devices()[0]}, {os.cpu_count()} CPUs "
        f"({platform.processor() or platform.machine()}), {'quick' if quick else 'full'} run"
    )
    prob = outer_solar_system()
    acc = accuracy(prob, quick)
    single = single_core(prob, 100_000)
    with pool:
        many = many_systems(prob, 1_000 if quick else 10_000, pool)
    step = one_step(prob, quick)

    worst = max(acc, key=lambda r: r["ratio"])
    acc_ok = sum(r["ratio"] <= TARGET_RATIO for r in acc)
    speedup = many["mechint batched simulate (wall - compile, best of 3)"][0] / many[
        "REBOUND WHFast safe_mode=0, Pool(2)"][0]  # fmt: skip
    yes = {True: "met", False: "NOT met"}
    print(
        f"\ntargets: accuracy within {TARGET_RATIO}x of REBOUND {yes[acc_ok == len(acc)]} "
        f"({acc_ok}/{len(acc)} rows; worst {worst['ratio']:.2f}x, {worst['label']} at "
        f"h = {worst['frac']:g} P_J); many systems >= {TARGET_SPEEDUP:g}x REBOUND's two "
        f"processes {yes[speedup >= TARGET_SPEEDUP]} ({speedup:.2f}x); one step within "
        f"{TARGET_STEP:.0e} of REBOUND {yes[not step['bad']]} ({step['n']} configurations, "
        f"worst {step['worst'][0]:.1e}); one system, one core >= REBOUND safe_mode=0: "
        f"mechint {single['mechint'] / single['rebound0']:.2f}x, with "
        f"MECHINT_SMALL_LOOP_BYTES=65536 {single['mechint_small'] / single['rebound0']:.2f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke)")
    parser.add_argument(
        "--single",
        nargs=2,
        type=int,
        metavar=("STEPS", "CPU"),
        help="section 2's mechint row alone (run by section 2 itself)",
    )
    parser.add_argument("--gpu", action="store_true",
                        help="section 5 alone: JAX's default device (a GPU) against REBOUND "
                        "on every CPU")  # fmt: skip
    args = parser.parse_args()
    if args.gpu:
        gpu_main(args.quick)
    elif args.single:
        single_only(*args.single)
    else:
        main(quick=args.quick)
