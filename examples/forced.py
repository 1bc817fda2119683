"""Forces that do work, and a time-dependent potential: four systems, each one map.

python examples/forced.py [--quick] [--out forced.png]

``mi.systems.Forced(system, force, dissipation)`` adds a force F(t, x) and a dissipation
R(x) ≥ 0 to a conservative system, ẋ = (Π − R)∇H + F, and carries the time, the work W
of F and the dissipated energy D in its state, so that H − W + D is a first integral of
the extended system (``H_balance``; ``mi.diagnostics.energy_balance``).

1. A satellite (the Euler top, I = (1, 2, 3)) detumbled by a damping torque τ = −k ω,
   i.e. R = k·1 on ∇H = ω.  The average vector field's discrete dissipation is the energy
   the step loses, to round-off (McLachlan–Quispel–Robidoux); RK4's balance is off by
   O(h⁴).  The spin that survives is about the axis of largest inertia.
2. A damped pendulum, q'' + c q' + sin q = 0, by the forced Störmer–Verlet map (the
   discrete Lagrange–d'Alembert principle), against the exact energy decay of the linear
   damped oscillator: for an amplitude a the two differ by O(a²).
3. The driven, damped Duffing oscillator q'' + δq' − q + q³ = γ cos ωt (δ = 0.3,
   γ = 0.5, ω = 1.2): its strange attractor, sampled once a forcing period by
   ``save_at`` (a stroboscopic Poincaré section), by forced Störmer–Verlet.
4. Kapitza's pendulum: the pivot shaken vertically, y = a cos ωt, so that
   V(t, q) = −(1 − a ω² cos ωt) cos q, a time-dependent potential
   (``SeparableHamiltonian(..., time_dependent=True)``: Störmer–Verlet on the extended
   phase space, explicit and symplectic in (q, t, p, e)).  With a²ω² > 2 the inverted
   position is stable (a = 0.1, ω = 30); without the shaking (a = 0) the pendulum falls.
   K = H(t) + e stays in a band while H itself swings with the pivot.
"""

from __future__ import annotations

import argparse

import jax.numpy as jnp
import numpy as np

import mechint as mi

S, I, D = mi.systems, mi.integrators, mi.diagnostics


def satellite(steps: int, h: float = 0.05, k: float = 0.05) -> dict:
    """The detumbling top under the AVF and RK4: H, D, the balance, the final axis."""
    top = S.EulerTop((1.0, 2.0, 3.0))
    system = S.Forced(top, dissipation=lambda x, prm: prm * jnp.eye(3), params=jnp.asarray(k))
    m0 = np.array([0.3, 1.0, 0.4])
    out = {}
    for label, integrator in (("AVF", I.AverageVectorField()), ("RK4", I.RK4())):
        traj = mi.simulate(system, integrator, m0, h, steps, max(1, steps // 400))
        m = np.asarray(traj.x[0])
        out[label] = {"t": traj.t, "H": np.asarray(top.hamiltonian(m)),
                      "dissipated": np.asarray(traj.x[3]),
                      "balance": np.abs(D.energy_balance(traj)),
                      "axis": m[-1] / np.linalg.norm(m[-1])}  # fmt: skip
    return out


def pendulum(steps: int, h: float = 0.01, c: float = 0.1) -> dict:
    """The damped pendulum's energy at amplitudes a against the linear oscillator's."""
    system = S.Forced(S.Pendulum(), dissipation=lambda x: c * jnp.eye(1))
    wd = np.sqrt(1 - c**2 / 4)
    out = {}
    for a in (0.3, 0.1, 0.03):
        traj = mi.simulate(system, I.StormerVerlet(), (np.array([a]), np.array([0.0])), h, steps,
                           max(1, steps // 400))  # fmt: skip
        q, p = (np.asarray(v)[:, 0] for v in traj.x[0])
        E = 0.5 * p**2 + (1 - np.cos(q))
        t = traj.t
        # the linear oscillator from (a, 0): q = a e^{−ct/2}(cos ωd t + c/(2ωd) sin ωd t)
        decay = np.exp(-0.5 * c * t)
        ql = a * decay * (np.cos(wd * t) + c / (2 * wd) * np.sin(wd * t))
        pl = -a * decay * (1 + c**2 / (4 * wd**2)) * wd * np.sin(wd * t)
        E_lin = 0.5 * pl**2 + 0.5 * ql**2
        out[a] = {"t": t, "E": E, "E_linear": E_lin,
                  "deviation": float(np.max(np.abs(E - E_lin)) / E_lin[0])}  # fmt: skip
    return out


def duffing(periods: int, per_period: int = 200) -> dict:
    """The stroboscopic section of the driven, damped Duffing oscillator."""
    delta, gamma, omega = 0.3, 0.5, 1.2
    base = S.SeparableHamiltonian(lambda p: 0.5 * jnp.sum(p**2),
                                  lambda q: jnp.sum(0.25 * q**4 - 0.5 * q**2), dof=1)  # fmt: skip
    system = S.Forced(base, lambda t, x: gamma * jnp.cos(omega * t) * jnp.ones(1),
                      lambda x: delta * jnp.eye(1))  # fmt: skip
    period = 2 * np.pi / omega
    h = period / per_period
    steps = periods * per_period
    times = period * np.arange(periods // 10, periods + 1)  # after a transient
    traj = mi.simulate(system, I.StormerVerlet(), (np.array([1.0]), np.array([0.0])), h, steps,
                       save_at=times)  # fmt: skip
    q, p = (np.asarray(v)[:, 0] for v in traj.x[0])
    balance = D.energy_balance(traj)
    return {"q": q, "p": p, "t": traj.t, "clock": np.asarray(traj.x[1]),
            "balance": float(np.max(np.abs(balance)))}  # fmt: skip


def _kapitza_T(p, prm):
    return 0.5 * jnp.sum(p**2)


def _kapitza_V(t, q, prm):
    return -(1.0 - prm["a"] * prm["w"] ** 2 * jnp.cos(prm["w"] * t)) * jnp.sum(jnp.cos(q))


def kapitza(steps: int, h: float = 0.002) -> dict:
    """Kapitza's pendulum from 0.2 rad off the top, shaken (a = 0.1, ω = 30) and not."""
    out = {}
    for a in (0.1, 0.0):
        prm = {"a": a, "w": 30.0}
        system = S.SeparableHamiltonian(_kapitza_T, _kapitza_V, dof=1, params=prm,
                                        time_dependent=True)  # fmt: skip
        traj = mi.simulate(system, I.StormerVerlet(), (np.array([np.pi - 0.2]), np.array([0.0])),
                           h, steps, max(1, steps // 1000))  # fmt: skip
        (q, t), (_, e) = (np.asarray(v).T for v in traj.x)
        K = np.asarray(traj.invariants()["H"])
        out[a] = {"t": traj.t, "q": q, "clock": t, "e": e, "e range": float(np.ptp(e)),
                  "K band": float(np.max(np.abs(K - K[0])))}  # fmt: skip
    return out


def main(quick: bool = False, out: str | None = None) -> dict:
    sat = satellite(2000 if quick else 8000)
    for label, r in sat.items():
        print(f"satellite, {label}: H from {r['H'][0]:.4f} to {r['H'][-1]:.2e}, dissipated "
              f"{r['dissipated'][-1]:.6f}; max |H − H0 + D|/scale {np.max(r['balance']):.1e}; "
              f"final spin axis {np.round(r['axis'], 4)}")  # fmt: skip
    pend = pendulum(2000 if quick else 10000)
    for a, r in pend.items():
        print(f"damped pendulum, amplitude {a}: max |E − E_linear| / E0 = {r['deviation']:.2e}")
    duff = duffing(200 if quick else 3000)
    print(f"Duffing: {len(duff['q'])} section points; the state's clock at them differs from "
          f"k·2π/ω by {np.max(np.abs(duff['clock'] - duff['t'])):.1e}; energy balance of "
          f"Störmer–Verlet (O(h²)) {duff['balance']:.1e}")  # fmt: skip
    kap = kapitza(10_000 if quick else 50_000)
    for a, r in kap.items():
        print(f"Kapitza, a = {a}: largest |q − π| {np.max(np.abs(r['q'] - np.pi)):.3f}; "
              f"K = H + e within {r['K band']:.1e} while e ranges over {r['e range']:.3g}; "
              f"the state's time differs from the run's by "
              f"{np.max(np.abs(r['clock'] - r['t'])):.1e}")  # fmt: skip
    if out:
        figure(sat, pend, duff, kap).savefig(out, dpi=130)
        print(f"wrote {out}")
    return {"satellite": sat, "pendulum": pend, "duffing": duff, "kapitza": kap}


def figure(sat, pend, duff, kap):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(18, 4.2), layout="constrained")
    ax = fig.subplots(1, 4)
    avf = sat["AVF"]
    ax[0].semilogy(avf["t"], avf["H"], label="H (AVF)")
    for label, r in sat.items():
        ax[0].semilogy(r["t"], np.maximum(r["balance"], 1e-18), lw=0.8,
                       label=f"|H − H0 + D| / scale, {label}")  # fmt: skip
    ax[0].set(xlabel="t", title="Satellite detumbled by τ = −kω")
    ax[0].legend(fontsize=7)
    for a, r in pend.items():
        deviation = np.abs(r["E"] - r["E_linear"]) / r["E_linear"][0]
        ax[1].semilogy(r["t"], np.maximum(deviation, 1e-18), lw=0.9, label=f"amplitude {a}")
    ax[1].set(xlabel="t", ylabel="|E − E_linear| / E0",
              title="Damped pendulum (c = 0.1) against the linear decay: O(a²)")  # fmt: skip
    ax[1].legend(fontsize=7)
    ax[2].plot(duff["q"], duff["p"], ".", ms=1.2)
    ax[2].set(xlabel="q", ylabel="p", title="Driven Duffing: q, p once a period")
    for a, r in kap.items():
        label = f"pivot shaken, a = {a}, ω = 30" if a else "pivot at rest"
        ax[3].plot(r["t"], r["q"] - np.pi, lw=0.8, label=label)
    ax[3].set(xlabel="t", ylabel="q − π (0: upside down)", ylim=(-4, 4),
              title="Kapitza's pendulum, V(t, q): upright")  # fmt: skip
    ax[3].legend(fontsize=7)
    return fig


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="forced.png")
    args = parser.parse_args()
    main(args.quick, args.out)
