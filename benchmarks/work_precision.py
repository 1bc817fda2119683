"""Work-precision of rigid-body methods: the Euler top over T = 1000 against the exact
solution (issue 16).

    python benchmarks/work_precision.py [--quick] [--figure PATH] [--table PATH] [--cache PATH]
    python benchmarks/work_precision.py --long      (one trajectory over T = 10^5)

Methods: DiscreteLagrangian(order=2..10) (Hairer–Vilmart's preprocessed Moser–Veselov
map), RigidBodySplitting(order=2..10), Kahan∘Kahan-Li-8, the implicit midpoint rule,
SciPy's DOP853 and diffrax's Tsit5 and Dopri8 (adaptive, PID controller; rtol = atol
swept; diffrax from the `bench` extra, whose absence is printed).  For each: the error
max|m(T) − m_exact(T)| and the wall time, compiled: one trajectory (best of 3) and a
batch of 10^3 (once; a vmapped run, DOP853's one stacked system).  The table gives, per
method, the time to reach each error (log-log interpolation between the runs around it).
Target: at error 1e-12, DMV-10 at least 10× faster than DOP853 for one trajectory and
for a batch of 10^3.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from _timing import best_of
from scipy.integrate import solve_ivp

import mechint as mi

I = mi.integrators
TOP = mi.systems.EulerTop((1.0, 1.5, 2.0))  # a physical body: I_i < I_j + I_k
M0 = np.array([0.45, 0.0, 0.89])
GOAL = 1e-12


def methods(quick: bool):
    dmv = {f"DMV-{p}": (I.DiscreteLagrangian(order=p), p) for p in (2, 4, 6, 8, 10)}
    split = {f"splitting-{p}": (I.RigidBodySplitting(p), p) for p in (2, 4, 6, 8, 10)}
    out = {**dmv, **split}
    out["Kahan∘Kahan-Li-8"] = (I.Composition(I.Kahan(), "kahan-li8"), 8)
    out["midpoint"] = (I.ImplicitMidpoint(), 2)
    if quick:
        out = {k: out[k] for k in ("DMV-2", "DMV-10", "splitting-4")}
    return out


# At most this many steps per run (T = 1000: h >= 5e-3 for one trajectory, 2e-2 for the
# batch): the low orders then stop short of 1e-12, and the table says so ("not reached",
# with the best error reached; "not run" where every step size is beyond the batch's cap).
MAX_STEPS = 200_000
MAX_BATCH_STEPS = 50_000
# the splittings' batches run at about 2e5 body-steps/s (five sines and cosines a stage,
# 17 or 35 stages a step): their batch points stop at 10^4 steps
MAX_SPLITTING_BATCH_STEPS = 10_000


def step_sizes(order: int, T: float, quick: bool) -> list[float]:
    """Steps whose errors span about 1e-4 .. 1e-13 at T = 1000 for this order."""
    top = {2: -2.0, 4: -1.2, 6: -0.9, 8: -0.5, 10: -0.3}[order]
    bottom = {2: -6.0, 4: -3.2, 6: -2.2, 8: -1.6, 10: -1.3}[order]
    bottom = max(bottom, math.log10(T / MAX_STEPS))
    if quick:
        return [10.0**top]
    return [10.0**e for e in np.linspace(top, bottom, 4 if order == 2 else 5)]


def run(integrator, m0, T, h):
    n = round(T / h)
    h = T / n
    traj = mi.simulate(TOP, integrator, m0, h, n, n)
    return traj.x[..., -1, :]


def timed(integrator, m0, T, h, repeat):
    """Best of ``repeat`` runs, after a one-step run that compiles the same program (the
    step count is traced)."""
    run(integrator, m0, h, h)
    return best_of(lambda: run(integrator, m0, T, h), repeat)


def dop853(m0, T, tol):
    m0 = np.atleast_2d(m0)
    a = np.asarray(TOP.coefficients)

    def f(_, y):
        m = y.reshape(-1, 3)
        return np.stack(
            [a[0] * m[:, 1] * m[:, 2], a[1] * m[:, 2] * m[:, 0], a[2] * m[:, 0] * m[:, 1]], 1
        ).ravel()

    sol = solve_ivp(f, (0.0, T), m0.ravel(), method="DOP853", rtol=tol, atol=tol)
    return sol.y[:, -1].reshape(-1, 3)


DIFFRAX = ("Tsit5", "Dopri8")


def top_field(t, m, args):
    """The Euler top's field in diffrax's signature."""
    a = jnp.asarray(TOP.coefficients)
    return jnp.stack([a[0] * m[1] * m[2], a[1] * m[2] * m[0], a[2] * m[0] * m[1]])


def diffrax_runs(T: float, batch: bool, field=top_field):
    """A compiled adaptive diffrax solve of ``field`` (diffrax's ``f(t, y, args)``; the
    Euler top's by default) to T for each of ``DIFFRAX`` (None where diffrax is not
    installed): ``run(y0, tol)``, rtol = atol = tol traced, so the sweep compiles once."""
    try:
        import diffrax as dfx
    except ImportError:
        return None
    term = dfx.ODETerm(field)

    def make(solver):
        def one(m0, tol):
            sol = dfx.diffeqsolve(
                term, solver, 0.0, T, None, m0, max_steps=None,
                stepsize_controller=dfx.PIDController(rtol=tol, atol=tol),
                saveat=dfx.SaveAt(t1=True),
            )  # fmt: skip
            return sol.ys[-1]

        f = jax.jit(jax.vmap(one, in_axes=(0, None)) if batch else one)
        return lambda m0, tol: np.asarray(f(jnp.asarray(m0), jnp.asarray(tol)))

    return {name: make(getattr(dfx, name)()) for name in DIFFRAX}


def at_goal(points: list[tuple[float, float]], goal: float = GOAL) -> float:
    """The least time that reaches error ``goal``: the cheapest run at or below it, or the
    log-log interpolation between a run below it and a cheaper run above (nan if never
    reached)."""
    reached = [t for e, t in points if e <= goal]
    best = min(reached) if reached else math.nan
    for (e1, t1), (e2, t2) in itertools.combinations(sorted(points), 2):
        if e1 <= goal <= e2 and e1 > 0 and e2 > e1 and t2 < t1:  # a cheaper run above
            w = (math.log(goal) - math.log(e1)) / (math.log(e2) - math.log(e1))
            best = min(best, math.exp(math.log(t1) + w * (math.log(t2) - math.log(t1))))
    return best


def main(
    quick: bool = False, figure: str | None = None, table: str | None = None,
    cache: str | None = None,
) -> None:  # fmt: skip
    T = 10.0 if quick else 1000.0
    batch = 8 if quick else 1000
    # the batch: 10^3 states near M0 on its sphere |m| = |M0| (random rotations of M0 by
    # about 0.1 rad), as conditioned as M0 itself; random states anywhere on the sphere
    # include some near the separatrix, where the problem's own conditioning over
    # T = 1000 (e^{λT} ulps) leaves no method below 1e-11; here 1 − k² stays in 0.27..0.65
    rng = np.random.default_rng(1)
    mb = M0 + 0.1 * np.linalg.norm(M0) * rng.uniform(-1, 1, (batch, 3)) / np.sqrt(3)
    mb *= np.linalg.norm(M0) / np.linalg.norm(mb, axis=1, keepdims=True)
    exact1 = mi.exact.euler_top(TOP, M0, T)
    exactb = mi.exact.euler_top(TOP, mb, T)
    # per method: (error, time) of one trajectory and (largest error, time) of the batch
    curves: dict[str, list[tuple[float, float, float, float]]] = {}
    if cache and Path(cache).is_file():  # methods measured by an earlier, interrupted run
        curves = {k: [tuple(p) for p in v] for k, v in json.loads(Path(cache).read_text()).items()}
    nan = math.nan
    for name, (integrator, order) in methods(quick).items():
        if name in curves:
            continue
        most = MAX_SPLITTING_BATCH_STEPS if name.startswith("splitting") else MAX_BATCH_STEPS
        for h in step_sizes(order, T, quick):
            one = timed(integrator, M0, T, h, 3)
            err = float(np.max(np.abs(one.result - exact1)))
            if T / h > most:  # one trajectory only at this step
                curves.setdefault(name, []).append((err, one.best, nan, nan))
                continue
            many = timed(integrator, mb, T, h, 1)
            errb = float(np.max(np.abs(many.result - exactb)))
            curves.setdefault(name, []).append((err, one.best, errb, many.best))
        if not quick:
            points = (
                f"{e:.1e} in {a:.3g} s / {eb:.1e} in {b:.3g} s" for e, a, eb, b in curves[name]
            )
            print(f"  {name}: " + ", ".join(points), flush=True)
            if cache:
                Path(cache).write_text(json.dumps(curves))
    dop853(M0, T, 1e-6)  # SciPy's first call pays for its set-up
    for tol in [1e-8] if quick else [1e-8, 1e-10, 1e-11, 1e-12, 1e-13]:
        one = best_of(lambda t=tol: dop853(M0, T, t), 1, False)
        many = best_of(lambda t=tol: dop853(mb, T, t), 1, False)
        curves.setdefault("DOP853 (SciPy)", []).append((
            float(np.max(np.abs(one.result - exact1))), one.best,
            float(np.max(np.abs(many.result - exactb))), many.best,
        ))  # fmt: skip

    peers_one, peers_many = diffrax_runs(T, False), diffrax_runs(T, True)
    for name in DIFFRAX if peers_one else ():
        key = f"{name} (diffrax)"
        f1, fb = peers_one[name], peers_many[name]
        for tol in [1e-8] if quick else [1e-6, 1e-8, 1e-10, 1e-11, 1e-12, 1e-13]:
            f1(M0, tol), fb(mb, tol)  # compile (once: tol is traced)
            one = best_of(lambda t=tol, f=f1: f(M0, t), 3, False)
            many = best_of(lambda t=tol, f=fb: f(mb, t), 1, False)
            curves.setdefault(key, []).append((
                float(np.max(np.abs(one.result - exact1))), one.best,
                float(np.max(np.abs(many.result - exactb))), many.best,
            ))  # fmt: skip
    if not peers_one:
        print("diffrax is not installed: its rows are missing (pip install -e '.[bench]')")
    peers = [f"{n} (diffrax)" for n in DIFFRAX]
    names = [*methods(quick), "DOP853 (SciPy)", *peers]  # the reading order
    curves = {name: curves[name] for name in names if name in curves}
    print(f"Euler top I = (1, 1.5, 2), T = {T:g}, batch {batch}; time to reach the error")
    levels = ((0, 1e-12), (0, 1e-10), (1, 1e-11), (1, 1e-10))
    rows = [
        "| method | one trajectory: 1e-12 | one trajectory: 1e-10 | batch: 1e-11 | "
        "batch: 1e-10 | best error (one / batch) |",
        "|---|---|---|---|---|---|",
    ]
    goal = {}
    for name, pts in curves.items():
        sides = ([(e, a) for e, a, _, _ in pts],
                 [(eb, b) for _, _, eb, b in pts if not math.isnan(b)])  # fmt: skip
        cells = [at_goal(sides[side], level) for side, level in levels]
        goal[name] = cells
        best = [f"{min(e for e, _ in side):.1e}" if side else "not run" for side in sides]
        if not sides[1]:  # every step size needs more steps than a batch run takes
            most = MAX_SPLITTING_BATCH_STEPS if name.startswith("splitting") else MAX_BATCH_STEPS
            best[1] = f"not run (every h needs > {most:,} steps)"
        shown = " | ".join("not reached" if math.isnan(c) else f"{c:.3g} s" for c in cells)
        rows.append(f"| {name} | {shown} | {best[0]} / {best[1]} |")
    print("\n".join(rows))
    d, m = goal["DOP853 (SciPy)"], goal["DMV-10"]
    ratios = speedups(d, m, "DOP853")
    print(
        f"targets: DMV-10 vs DOP853: {ratios[0]} (one, 1e-12), {ratios[1]} (one, 1e-10), "
        f"{ratios[2]} (batch, 1e-11), {ratios[3]} (batch, 1e-10); goal >= 10x"
    )
    if any(p in goal for p in peers):
        # diffrax's best method at each level: the fastest of Tsit5 and Dopri8 there
        best = [min((goal[p][i] for p in peers if p in goal), key=_nan_last) for i in range(4)]
        shown = speedups(best, m, "diffrax")
        print(
            f"targets: DMV-10 vs diffrax's best: {shown[1]} at 1e-10 (goal >= 2x), "
            f"{shown[0]} at 1e-12 (goal >= 4x), one trajectory; {shown[3]} (batch, 1e-10)"
        )
        # the comparison: mechint's best method against diffrax's best, per level
        ours = [n for n in methods(quick) if n in goal]
        for i, label in ((1, "one trajectory, 1e-10"), (0, "one trajectory, 1e-12"),
                         (3, "batch, 1e-10")):  # fmt: skip
            mine = min(ours, key=lambda n, i=i: _nan_last(goal[n][i]))
            theirs = min((p for p in peers if p in goal), key=lambda p, i=i: _nan_last(goal[p][i]))
            ratio = speedups([goal[theirs][i]], [goal[mine][i]], "diffrax")[0]
            print(f"  best against best, {label}: {mine} {goal[mine][i]:.3g} s, "
                  f"{theirs} {goal[theirs][i]:.3g} s: {ratio.replace('DMV-10', mine)}")  # fmt: skip
    if quick:  # the smoke test runs the long-time comparison too, at T = 1000
        long_time(quick=True)
    if table:
        Path(table).write_text("\n".join(rows) + "\n")
    if figure:
        draw(curves, T, batch, figure)


def speedups(peer: list[float], ours: list[float], who: str) -> list[str]:
    """The peer's time over DMV-10's at each level, or who never reaches it."""
    return [
        "neither reaches it" if math.isnan(p) and math.isnan(o)
        else f"{who} never" if math.isnan(p)
        else "DMV-10 never" if math.isnan(o)
        else f"{p / o:.1f}x"
        for p, o in zip(peer, ours, strict=True)
    ]  # fmt: skip


def long_time(quick: bool = False) -> None:
    """One trajectory over T = 10^5 (about 2·10^4 periods), where structure pays: the
    time to reach 1e-6 and 1e-8 for DMV-8/10 and diffrax's Tsit5 and Dopri8 (issue 37:
    DMV-10 at least 10× faster than diffrax's best at 1e-8)."""
    T = 1000.0 if quick else 1e5
    exact = mi.exact.euler_top(TOP, M0, T)
    curves: dict[str, list[tuple[float, float]]] = {}
    for name, order, hs in (
        ("DMV-8", 8, [0.4, 0.2, 0.1, 0.05] if not quick else [0.2]),
        ("DMV-10", 10, [1.0, 0.6, 0.4, 0.2, 0.1] if not quick else [0.4]),
    ):
        integrator = I.DiscreteLagrangian(order=order)
        for h in hs:
            one = timed(integrator, M0, T, h, 1)
            err = float(np.max(np.abs(one.result - exact)))
            curves.setdefault(name, []).append((err, one.best))
    peers = diffrax_runs(T, False)
    for name in DIFFRAX if peers else ():
        f = peers[name]
        f(M0, 1e-6)  # compile (the tolerance is traced)
        for tol in [1e-8] if quick else [1e-8, 1e-10, 1e-12, 1e-13]:
            one = best_of(lambda t=tol, f=f: f(M0, t), 1, False)
            key = f"{name} (diffrax)"
            curves.setdefault(key, []).append((float(np.max(np.abs(one.result - exact))), one.best))
    print(f"\nEuler top I = (1, 1.5, 2), one trajectory, T = {T:g}: time to reach the error")
    print("| method | 1e-6 | 1e-8 | best error (time) |\n|---|---|---|---|")
    goal = {}
    for name, pts in curves.items():
        goal[name] = [at_goal(pts, level) for level in (1e-6, 1e-8)]
        e, t = min(pts)
        cells = " | ".join("not reached" if math.isnan(c) else f"{c:.3g} s" for c in goal[name])
        print(f"| {name} | {cells} | {e:.1e} ({t:.3g} s) |")
    peer_names = [k for k in goal if k.endswith("(diffrax)")]
    if peer_names:
        best = [min((goal[p][i] for p in peer_names), key=_nan_last) for i in range(2)]
        shown = speedups(best, goal["DMV-10"], "diffrax")
        print(f"targets: DMV-10 vs diffrax's best at T = {T:g}: {shown[1]} at 1e-8 (goal >= 10x), "
              f"{shown[0]} at 1e-6")  # fmt: skip
    else:
        print("diffrax is not installed: no peer rows (pip install -e '.[bench]')")


def _nan_last(x: float) -> float:
    return math.inf if math.isnan(x) else x


def draw(curves, T: float, batch: int, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2), sharey=True, layout="constrained")
    markers = "osD^v<>ph*XP"
    colours = plt.get_cmap("tab20")(np.r_[0:20:2, 1:20:2] / 20)  # the dark hues first
    for k, (name, pts) in enumerate(curves.items()):
        dop, peer = name.startswith("DOP853"), name.endswith("(diffrax)")
        style = dict(marker=markers[k % len(markers)], ms=5, label=name,
                     color="black" if dop or peer else colours[k % 20],
                     ls="-." if peer else "--" if dop or name.startswith("splitting")
                     else "-")  # fmt: skip
        for ax, (e_i, t_i) in zip(axes, ((0, 1), (2, 3)), strict=True):
            # joined in the order run: decreasing step size (or tolerance)
            shown = [(p[t_i], p[e_i]) for p in pts if not math.isnan(p[t_i])]
            if shown:
                ax.loglog([t for t, _ in shown], [e for _, e in shown], **style)
    for ax, what in zip(axes, ("one trajectory", f"batch of {batch} (largest error)"), strict=True):
        ax.axhline(GOAL, color="0.5", lw=0.8, ls=":")
        ax.set_xlabel("wall time (s), compiled, 2-core CPU")
        ax.set_title(f"Euler top I = (1, 1.5, 2), T = {T:g}: {what}", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("max |m(T) − m_exact(T)|")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=8)
    fig.savefig(path, dpi=120)
    print(f"figure: {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--figure", default=None)
    parser.add_argument("--table", default=None, help="also write the table (Markdown)")
    parser.add_argument("--cache", default=None, help="keep measured methods in this JSON")
    parser.add_argument("--long", action="store_true", help="only the T = 1e5 comparison")
    args = parser.parse_args()
    if args.long:
        long_time(args.quick)
    else:
        main(quick=args.quick, figure=args.figure, table=args.table, cache=args.cache)
