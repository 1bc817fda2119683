"""A chain of ten rigid links on spherical joints against MuJoCo's ball joints.

    python benchmarks/joints.py [--quick]

Needs ``mujoco>=3.2`` (``make bench`` installs it).  Writes
``benchmarks/results/joints.md``.  Times are wall-clock on whatever machine runs it.

``link_chain(10)``: ten solid cylinders 0.1 m long, radius 5 mm, 0.1 kg, link 0's top
held at the origin, each next one's top at the one before's bottom, gravity 9.81 m/s²,
released at rest tilted 0.6 rad from the vertical with azimuths 0 … 1 rad
(``link_chain_state``).  MuJoCo: ten bodies on ball joints at their tops, each with the
same mass and inertia about its centre, no contacts, no damping, no armature, its
``Euler`` (semi-implicit) and ``RK4`` integrators from the same attitudes (each body's
quaternion relative to its parent), 10⁵ steps of 1 ms; the energy from its
``energy`` flag (gravity about the same origin, so E₀ agrees).  mechint:
``LieGroupVariational()`` (the constrained LGVI) and its Yoshida-4 composition, and
the LGVI on a batch of chains (100 steps, chain-steps/s).  Reported: energy band and
drift (a linear fit's change) relative to |E₀|, the largest joint residual, steps/s.
Then a rigid double pendulum (two links of 1 m, 1 kg, spun in space) for 10⁶ steps by
the LGVI: its energy's band and drift.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
from _mujoco import ball_chain
from _timing import best_of

RESULTS = Path(__file__).resolve().parent / "results" / "joints.md"
CHAINS = {True: 64, False: 1_000}  # the batch of chains (quick, full): 100 steps each


def _band_drift(t, E):
    """(band, drift) of energies E over times t, relative to |E₀|."""
    E = np.asarray(E, dtype=float)
    slope = np.polyfit(np.asarray(t, dtype=float), E, 1)[0]
    return float(np.ptp(E) / abs(E[0])), float(slope * (t[-1] - t[0]) / abs(E[0]))


def _row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def mujoco_links(system, x0, h, steps, every, integrator):
    """(E, t, steps/s, E₀'s difference from mechint's, the time MuJoCo found its state
    unstable (and reset it) or None, version) of MuJoCo's chain."""
    import mujoco

    n = system.bodies
    ell = 2.0 * system.joints[0].site_a[2]
    mass = float(np.asarray(system.mass)[0])
    I1, _, I3 = (float(v) for v in np.asarray(system.inertia)[0])
    links = [("0 0 0" if i == 0 else f"0 0 {-ell}",  # each body's frame at its top
              f'pos="0 0 {-ell / 2}" mass="{mass}" diaginertia="{I1} {I1} {I3}"',
              f'type="cylinder" fromto="0 0 0 0 0 {-ell}" size="0.005"')
             for i in range(n)]  # fmt: skip
    m, d = ball_chain(h, integrator, 9.81, links)
    R = np.asarray(x0[2])
    parent = np.eye(3)
    for i in range(n):
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, (parent.T @ R[i]).reshape(-1))
        d.qpos[m.jnt_qposadr[i] : m.jnt_qposadr[i] + 4] = quat
        parent = R[i]

    def energy():
        mujoco.mj_forward(m, d)
        return float(d.energy[0] + d.energy[1])

    E = [energy()]
    unstable = None  # MuJoCo resets a state whose accelerations blow up, and warns
    t0 = time.perf_counter()
    for k in range(steps // every):
        for _ in range(every):
            mujoco.mj_step(m, d)
        E.append(energy())
        if unstable is None and d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0:
            unstable = (k + 1) * every * h
    wall = time.perf_counter() - t0
    E0 = float(system.hamiltonian(system.validate_state(x0)[0]))
    t = np.arange(len(E)) * every * h
    return E, t, steps / wall, E[0] - E0, unstable, mujoco.__version__


def mechint_links(system, x0, h, steps, every, integrator):
    """(E, t, steps/s, the largest joint residual) of one chain."""
    import mechint as mi

    timed = best_of(lambda: mi.simulate(system, integrator, x0, h, steps, every), 1, warm=True)
    traj = timed.result
    if int(traj.failed_step) != -1:
        raise RuntimeError(f"the run failed at step {int(traj.failed_step)}")
    inv = system.invariants(traj.x)
    return (
        np.asarray(inv["H"]),
        np.asarray(traj.t),
        steps / timed.best,
        float(np.max(np.asarray(inv["constraints"]))),
    )


def batch_rate(system, batch: int) -> float:
    """Chain-steps/s of the LGVI on ``batch`` chains (tilts spread by 0.05), 100 steps."""
    import mechint as mi
    from mechint.systems import link_chain_state

    rng = np.random.default_rng(0)
    starts = [link_chain_state(system, 0.6 + 0.05 * rng.standard_normal(10), np.linspace(0, 1, 10))
              for _ in range(batch)]  # fmt: skip
    x = tuple(np.stack(parts) for parts in zip(*starts, strict=True))
    lgvi = mi.integrators.LieGroupVariational()
    timed = best_of(lambda: mi.simulate(system, lgvi, x, 1e-3, 100, 100), 1, warm=True)
    return batch * 100 / timed.best


def main(quick: bool = False) -> dict:
    try:
        import mujoco  # noqa: F401
    except ImportError:
        print("MuJoCo is not installed (make bench installs it): nothing to race; "
              "tests/systems/test_joints.py runs the map")  # fmt: skip
        print("targets: not measured without MuJoCo")
        return {}
    import mechint as mi
    from mechint.systems import link_chain, link_chain_state

    system = link_chain(10)
    x0 = link_chain_state(system, np.full(10, 0.6), np.linspace(0.0, 1.0, 10))
    h = 1e-3
    steps, every = (2_000, 100) if quick else (100_000, 1000)
    lines = [f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, float64", "",
             f"**Chain of rigid links**: ten cylinders of 0.1 m and 0.1 kg on spherical "
             f"joints, released at rest tilted in space; {steps} steps of {h:g} s", "",
             "| code | energy band / E₀ | drift / E₀ | largest joint residual (m) | steps/s |",
             "|---|---|---|---|---|"]  # fmt: skip
    result: dict = {}
    for integ in ("Euler", "RK4"):
        E, t, sps, dE0, unstable, version = mujoco_links(system, x0, h, steps, every, integ)
        if unstable is None:
            band, drift = _band_drift(t, E)
            cells = (f"{band:.2e}", f"{drift:+.2e}")
        else:  # the energy before the blow-up, and when it came
            before = t < unstable - every * h
            band, drift = _band_drift(t[before], np.asarray(E)[before])
            cells = (f"{band:.2e} before t = {unstable:g} s, then unstable (reset)",
                     f"{drift:+.2e} before")  # fmt: skip
        lines.append(_row(f"MuJoCo {version} {integ}", *cells, "0 (joint coordinates)",
                          f"{sps:,.0f}"))  # fmt: skip
        result[f"mujoco {integ}"] = (band, drift, sps)
    lgvi = mi.integrators.LieGroupVariational()
    E, t, sps, res = mechint_links(system, x0, h, steps, every, lgvi)
    band, drift = _band_drift(t, E)
    lines.append(_row("mechint LieGroupVariational()", f"{band:.2e}", f"{drift:+.2e}",
                      f"{res:.1e}", f"{sps:,.0f}"))  # fmt: skip
    yoshida = mi.integrators.Composition(lgvi, "yoshida4")
    E4, t4, sps4, res4 = mechint_links(system, x0, h, steps, every, yoshida)
    band4, drift4 = _band_drift(t4, E4)
    lines.append(_row("mechint Yoshida-4 of the LGVI", f"{band4:.2e}", f"{drift4:+.2e}",
                      f"{res4:.1e}", f"{sps4:,.0f}"))  # fmt: skip
    rate = batch_rate(system, CHAINS[quick])
    lines.append(_row(f"mechint LGVI, batch of {CHAINS[quick]} chains", "", "", "",
                      f"{rate:,.0f} chain-steps/s"))  # fmt: skip
    lines += ["", f"(E₀ = {E[0]:.9f} J; MuJoCo's E₀ differs by {dE0:.1e} J.)", ""]

    # a rigid double pendulum in space (two links of 1 m and 1 kg), spun: the long run
    double = link_chain(2, length=1.0, radius=0.05, mass=1.0, gravity=9.81)
    spins = np.array([[0.3, 0.1, 0.05], [-0.2, 0.4, 0.1]])
    x2 = link_chain_state(double, np.array([1.0, -0.5]), np.array([0.0, 0.8]), spins)
    long = 10_000 if quick else 1_000_000
    E2, t2, sps2, res2 = mechint_links(double, x2, h, long, long // 1000, lgvi)
    band2, drift2 = _band_drift(t2, E2)
    lines += [f"**Rigid double pendulum**: two links of 1 m and 1 kg, spun in space; {long} "
              f"steps of {h:g} s by the LGVI: energy band {band2:.2e} |E₀|, drift {drift2:+.2e} "
              f"({abs(drift2) / band2:.0%} of the band), largest joint residual {res2:.1e} m, "
              f"{sps2:,.0f} steps/s."]  # fmt: skip
    text = "\n".join(lines)
    print(text)
    residual = max(res, res4, res2)
    yes = {True: "met", False: "NOT met"}
    print(f"targets: joint residuals <= 1e-13 {yes[residual <= 1e-13]} ({residual:.1e}); "
          f"the LGVI's energy without drift (|drift| < 5 % of the band): double pendulum "
          f"{yes[abs(drift2) < 0.05 * band2]} ({abs(drift2) / band2:.0%}), ten links "
          f"{yes[abs(drift) < 0.05 * band]} ({abs(drift) / band:.0%})")  # fmt: skip
    if not quick:
        RESULTS.write_text(text + "\n")
    result["mechint"] = (band, drift, sps, rate)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
