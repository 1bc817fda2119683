"""The heavy top family (docs/math.md §6): the Lagrange top's nutation and its third integral
m3 under four maps, and a Poincaré section of a chaotic heavy top.

python examples/heavy_top.py [--quick] [--out heavy_top.png]

1. Lagrange top (I = (1, 1, 0.5), χ = (0, 0, 1)): 10⁴ steps of h = 0.02 by the order-2
   splitting, the discrete Lagrangian map, Kahan and midpoint.  m3 is linear and
   ṁ3 ≡ 0, so Kahan and midpoint keep it bit for bit; the splitting (kick, exact
   symmetric free flow) and the discrete Lagrangian map keep it to round-off.  The
   nutation angle θ = arccos γ3 of the order-4 splitting follows DOP853.
2. A chaotic heavy top (I = (1, 1.5, 2), χ = (1, 0, 0.5)): the crossings of γ3 = 0
   upwards, by the order-4 splitting at h = 0.0025 (each crossing located by a partial
   step of the map itself) and by DOP853 (rtol 1e-13, event location on its dense
   output): the first four crossings agree to 1e-12 (times and states); the long
   section is drawn.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
from scipy.integrate import solve_ivp

import mechint as mi

S, I = mi.systems, mi.integrators
LAGRANGE = S.LagrangeTop((1.0, 1.0, 0.5), (0.0, 0.0, 1.0))
LAGRANGE_X0 = (np.array([0.3, 0.2, 2.0]), np.array([0.0, 0.6, 0.8]))
CHAOTIC = S.HeavyTop((1.0, 1.5, 2.0), (1.0, 0.0, 0.5))
CHAOTIC_X0 = (np.array([0.6, -0.8, 0.3]), np.array([0.0, 0.8, -0.6]))


def _field(top):
    f = jax.jit(lambda z: top.coordinates(top.vector_field(top.from_coordinates(z))))
    return lambda t, z: np.asarray(f(z))


def lagrange(quick: bool) -> dict:
    steps, h = (2000 if quick else 10_000), 0.02
    maps = {
        "splitting (order 2)": I.RigidBodySplitting(2),
        "discrete Lagrangian": I.DiscreteLagrangian(),
        "Kahan": I.Kahan(),
        "midpoint": I.ImplicitMidpoint(),
    }
    rows = {}
    # quick: in calls of 64 saves, the compiled programs of the tests' runs of these maps
    chunk = 64 if quick else None
    for label, integrator in maps.items():
        traj = mi.simulate(LAGRANGE, integrator, LAGRANGE_X0, h, steps, 10,
                           chunk_steps=chunk and chunk * 10)  # fmt: skip
        err = mi.diagnostics.invariant_errors(LAGRANGE, traj)
        rows[label] = {
            "m3": float(np.max(err["m3"])),
            "H": float(np.max(err["H"])),
            "gamma2": float(np.max(err["gamma2"])),
            "t": np.asarray(traj.t),
            "m3 error": np.asarray(err["m3"]),
        }
    T = steps * h
    ts = np.linspace(0.0, T, steps // 5 + 1)
    ref = solve_ivp(_field(LAGRANGE), (0.0, T), np.concatenate(LAGRANGE_X0), method="DOP853",
                    rtol=1e-13, atol=1e-15, t_eval=ts).y.T  # fmt: skip
    split4 = mi.simulate(LAGRANGE, I.RigidBodySplitting(4), LAGRANGE_X0, h, steps, 5,
                         chunk_steps=chunk and chunk * 5)  # fmt: skip
    theta = np.arccos(np.clip(np.asarray(split4.x[1])[:, 2], -1, 1))
    theta_ref = np.arccos(np.clip(ref[:, 5], -1, 1))
    return {"rows": rows, "t": ts, "theta": theta, "theta ref": theta_ref,
            "theta error": float(np.max(np.abs(theta - theta_ref)))}  # fmt: skip


def _crossings_splitting(h: float, T: float, count: int | None):
    """(t, z) at the upward crossings of γ3 = 0 by the order-4 splitting: ``mi.Event``
    locates each on the map itself, the root of τ ↦ γ3(Φ_τ(x_k)) in the step that
    crosses (``mechint.events``)."""
    steps = round(T / h)
    up = mi.Event(lambda t, x: x[1][2], direction=1, name="gamma3")
    # one capacity for both runs: one compiled program (h and the steps are traced)
    traj = mi.simulate(CHAOTIC, I.RigidBodySplitting(4), CHAOTIC_X0, h, steps, steps,
                       events=[up], max_events=1024)  # fmt: skip
    c = traj.events["gamma3"]
    if c.overflowed:
        raise RuntimeError(f"more than {len(c.t)} crossings: raise max_events")
    n = int(c.count) if count is None else min(count, int(c.count))
    return c.t[:n], np.concatenate([np.asarray(a)[:n] for a in c.x], axis=-1)


def _crossings_dop853(T: float):
    def event(t, z):
        return z[5]

    event.direction = 1.0
    sol = solve_ivp(_field(CHAOTIC), (0.0, T), np.concatenate(CHAOTIC_X0), method="DOP853",
                    rtol=1e-13, atol=1e-15, events=event)  # fmt: skip
    return sol.t_events[0], sol.y_events[0]


def poincare(quick: bool) -> dict:
    first = 4
    t_ref, z_ref = _crossings_dop853(25.0)
    t_map, z_map = _crossings_splitting(0.0025, 25.0, first)
    n = min(first, len(t_ref), len(t_map))
    diff = np.max(np.abs(z_map[:n] - z_ref[:n]), axis=1)
    long_T = 400.0 if quick else 4000.0
    t_long, z_long = _crossings_splitting(0.01, long_T, None)
    return {"t map": t_map[:n], "t ref": t_ref[:n], "difference": diff,
            "time difference": np.abs(t_map[:n] - t_ref[:n]), "section": z_long,
            "crossings": len(t_long)}  # fmt: skip


def main(quick: bool = False, out: str | None = None) -> dict:
    lag = lagrange(quick)
    print("Lagrange top, I = (1, 1, 0.5), χ = (0, 0, 1), h = 0.02: max relative change")
    print("| map | m3 | H | |γ|² |")
    print("|---|---|---|---|")
    for label, r in lag["rows"].items():
        print(f"| {label} | {r['m3']:.2e} | {r['H']:.2e} | {r['gamma2']:.2e} |")
    print(f"nutation angle, order-4 splitting vs DOP853: max difference {lag['theta error']:.2e}")
    sec = poincare(quick)
    print("Chaotic heavy top, I = (1, 1.5, 2), χ = (1, 0, 0.5): crossings of γ3 = 0 upwards")
    print("| crossing | t (splitting) | t (DOP853) | max |Δz| |")
    print("|---|---|---|---|")
    for i, (a, b, d) in enumerate(zip(sec["t map"], sec["t ref"], sec["difference"],
                                      strict=True)):  # fmt: skip
        print(f"| {i + 1} | {a:.15f} | {b:.15f} | {d:.2e} |")
    print(f"section: {sec['crossings']} crossings by the order-4 splitting (h = 0.01)")
    if out:
        figure(lag, sec).savefig(out, dpi=130)
        print(f"wrote {out}")
    return {"lagrange": lag, "poincare": sec}


def figure(lag, sec):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 3.8), layout="constrained")
    a, b, c = fig.subplots(1, 3)
    a.plot(lag["t"], np.degrees(lag["theta ref"]), lw=2, color="0.75", label="DOP853")
    a.plot(lag["t"], np.degrees(lag["theta"]), lw=0.8, label="splitting, order 4")
    a.set(xlabel="t", ylabel="nutation angle θ = arccos γ3 (degrees)",
          title="Lagrange top: nutation")  # fmt: skip
    a.set_xlim(0, min(20.0, lag["t"][-1]))
    a.legend(fontsize=8, loc="lower right", framealpha=0.9)
    for label, r in lag["rows"].items():
        b.semilogy(r["t"], np.maximum(r["m3 error"], 1e-18), lw=0.8, label=label)
    b.axhline(np.finfo(float).eps, color="0.5", ls=":", lw=0.8)
    b.set(xlabel="t", ylabel="|m3 − m3(0)| / |m3(0)|  (0 drawn at 1e-18)",
          title="Lagrange top: the integral m3")  # fmt: skip
    b.legend(fontsize=7)
    z = sec["section"]
    c.plot(z[:, 0], z[:, 1], ".", ms=1.5)
    c.set(xlabel="m1", ylabel="m2", title="chaotic heavy top: γ3 = 0 upwards")
    return fig


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="heavy_top.png")
    args = parser.parse_args()
    main(args.quick, args.out)
