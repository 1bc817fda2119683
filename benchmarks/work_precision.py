"""Work-precision of rigid-body methods: the Euler top over T = 1000 against the exact
solution (issue 16).

    python benchmarks/work_precision.py [--quick] [--figure PATH]

Methods: DiscreteLagrangian(order=2..10) (Hairer–Vilmart's preprocessed Moser–Veselov
map), RigidBodySplitting(order=2..10), Kahan∘Kahan-Li-8, the implicit midpoint rule, and
SciPy's DOP853 (rtol = atol swept).  For each: the error max|m(T) − m_exact(T)| and the
wall time (best of 2, compiled, one trajectory and a batch of 10^3 as one vmapped
run; DOP853's batch is one stacked system).  The table gives, per method, the time to
reach error 1e-12 (log-log interpolation between the runs around it).
Target: at error 1e-12, DMV-10 at least 10× faster than DOP853 for one trajectory and
for a batch of 10^3.
"""

from __future__ import annotations

import argparse
import itertools
import math

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


# At most this many steps per run (T = 1000: h >= 5e-3): the low orders then stop short
# of 1e-12, and the table says so ("nan": not reached, with the best error reached).
MAX_STEPS = 200_000


def step_sizes(order: int, T: float, quick: bool) -> list[float]:
    """Steps whose errors span about 1e-4 .. 1e-13 at T = 1000 for this order."""
    top = {2: -2.0, 4: -1.2, 6: -0.9, 8: -0.7, 10: -0.6}[order]
    bottom = {2: -6.0, 4: -3.2, 6: -2.2, 8: -1.6, 10: -1.3}[order]
    bottom = max(bottom, math.log10(T / MAX_STEPS))
    if quick:
        return [10.0**top]
    return [10.0**e for e in np.linspace(top, bottom, 5)]


def run(integrator, m0, T, h):
    n = round(T / h)
    h = T / n
    traj = mi.simulate(TOP, integrator, m0, h, n, n)
    return traj.x[..., -1, :]


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


def at_goal(points: list[tuple[float, float]]) -> float:
    """Time to reach error GOAL, interpolated in log-log (nan if never reached)."""
    points = sorted(points)  # by error
    for (e1, t1), (e2, t2) in itertools.pairwise(points):
        if e1 <= GOAL <= e2 and e1 > 0:
            w = (math.log(GOAL) - math.log(e1)) / (math.log(e2) - math.log(e1))
            return math.exp(math.log(t1) + w * (math.log(t2) - math.log(t1)))
    reached = [t for e, t in points if e <= GOAL]
    return min(reached) if reached else math.nan


def main(quick: bool = False, figure: str | None = None) -> None:
    T = 10.0 if quick else 1000.0
    batch = 8 if quick else 1000
    rng = np.random.default_rng(1)
    mb = rng.standard_normal((batch, 3))
    mb *= np.linalg.norm(M0) / np.linalg.norm(mb, axis=1, keepdims=True)
    exact1 = mi.exact.euler_top(TOP, M0, T)
    exactb = mi.exact.euler_top(TOP, mb, T)
    curves: dict[str, list[tuple[float, float, float]]] = {}
    for name, (integrator, order) in methods(quick).items():
        for h in step_sizes(order, T, quick):
            one = best_of(lambda i=integrator, h=h: run(i, M0, T, h), 2, warm=True)
            many = best_of(lambda i=integrator, h=h: run(i, mb, T, h), 1 if quick else 2, True)
            err = float(np.max(np.abs(one.result - exact1)))
            errb = float(np.max(np.abs(many.result - exactb)))
            curves.setdefault(name, []).append((max(err, errb), one.best, many.best))
    for tol in [1e-8] if quick else [1e-8, 1e-10, 1e-11, 1e-12, 1e-13]:
        one = best_of(lambda t=tol: dop853(M0, T, t), 1, False)
        many = best_of(lambda t=tol: dop853(mb, T, t), 1, False)
        err = max(
            float(np.max(np.abs(one.result - exact1))),
            float(np.max(np.abs(many.result - exactb))),
        )
        curves.setdefault("DOP853 (SciPy)", []).append((err, one.best, many.best))

    print(f"Euler top I = (1, 1.5, 2), T = {T:g}, batch {batch}; time (s) to reach error 1e-12")
    print(f"{'method':22s} {'one trajectory':>16s} {f'batch of {batch}':>16s}  best error")
    goal = {}
    for name, pts in curves.items():
        t1 = at_goal([(e, a) for e, a, _ in pts])
        tb = at_goal([(e, b) for e, _, b in pts])
        goal[name] = (t1, tb)
        print(f"{name:22s} {t1:16.4g} {tb:16.4g}  {min(e for e, _, _ in pts):.1e}")
    d1, db = goal["DOP853 (SciPy)"]
    m1, mb_ = goal["DMV-10"]
    print(
        f"targets: DMV-10 vs DOP853 at 1e-12: {d1 / m1:.1f}x (one), {db / mb_:.1f}x "
        f"(batch); goal >= 10x"
    )
    if figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
        markers = "osD^v<>ph*XP"
        for k, (name, pts) in enumerate(curves.items()):
            pts = sorted(pts)
            errs = [e for e, _, _ in pts]
            for ax, col in zip(axes, (1, 2), strict=True):
                ax.loglog([p[col] for p in pts], errs, marker=markers[k % len(markers)],
                          label=name, color=f"C{k % 10}", ls="--" if k >= 10 else "-")  # fmt: skip
        for ax, what in zip(axes, ("one trajectory", f"batch of {batch}"), strict=True):
            ax.axhline(GOAL, color="0.6", lw=0.8)
            ax.set_xlabel("wall time (s)")
            ax.set_title(f"Euler top, T = {T:g}: {what}")
            ax.grid(True, which="major", alpha=0.3)
        axes[0].set_ylabel("max error at T")
        axes[1].legend(fontsize=7, loc="lower left", ncol=2)
        fig.tight_layout()
        fig.savefig(figure, dpi=120)
        print(f"figure: {figure}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--figure", default=None)
    args = parser.parse_args()
    main(quick=args.quick, figure=args.figure)
