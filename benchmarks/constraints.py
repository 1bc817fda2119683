"""Constrained systems against their peers: rigid water by SETTLE against OpenMM, a
chain of ten rods against MuJoCo's ball joints.

    python benchmarks/constraints.py [--quick]

Needs ``openmm>=8.1`` and ``mujoco>=3.2`` (``make bench`` installs them).  Writes
``benchmarks/results/constraints.md``.  Times are wall-clock on whatever machine runs it.

* **Rigid water**: ``RigidWater(8, "tip3p")``'s cluster (``cluster(seed=0)``: a 2×2×2
  lattice of 0.31 nm, 300 K), Coulomb + oxygen Lennard-Jones without cutoff.  OpenMM
  runs the same system built by hand (the same masses, charges, σ, ε, bond lengths and
  Coulomb constant; the pairs within a molecule excluded; no motion remover) with its
  ``VerletIntegrator`` (leapfrog; SETTLE holds each triangle) at tolerance 1e-10 on the
  Reference platform (double precision) and the CPU platform (mixed), from the same
  positions and velocities.  mechint: ``Settle()`` and ``Rattle()``, one cluster, and
  ``Settle()`` on a batch of clusters (cluster-steps/s).  Reported: the energy's band
  and drift (a linear fit's change) over the run, relative to |E₀|, and steps/s.
* **Pendulum chain**: ``PendulumChain`` of ten bobs of 0.1 kg on rods of 0.1 m, 9.81 m/s²,
  released at rest bent in space (angles 0.6, azimuths 0 … 1).  MuJoCo: ten bodies on
  ball joints, each a point mass at its rod's tip (a diagonal inertia of 1e-9), no
  contacts, no damping, its ``Euler`` (semi-implicit) and ``RK4`` integrators from the
  same configuration, 10⁶ steps of 1 ms.  mechint: ``Rattle()`` and its Yoshida-4
  composition, and ``Rattle()`` on a batch of 10⁴ chains (100 steps, chain-steps/s).
  Reported: energy band and drift, the largest rod-length error, steps/s.
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

RESULTS = Path(__file__).resolve().parent / "results" / "constraints.md"
CHAINS = {True: 64, False: 1_000}  # the batch of chains (quick, full): 100 steps each


def _band_drift(t, E):
    """(band, drift) of energies E over times t, relative to |E₀|: max − min, and the
    change of a linear fit over the run."""
    E = np.asarray(E, dtype=float)
    slope = np.polyfit(np.asarray(t, dtype=float), E, 1)[0]
    return float(np.ptp(E) / abs(E[0])), float(slope * (t[-1] - t[0]) / abs(E[0]))


# -- rigid water ------------------------------------------------------------------------
def openmm_water(system, x0, h, steps, every, platform_name):
    import openmm as mm
    from openmm import unit

    water = system.water
    n = system.molecules
    sys_ = mm.System()
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.NoCutoff)
    for _ in range(n):
        for mass, charge, sigma, eps in ((water.mass_o, water.charge_o, water.sigma, water.epsilon),
                                         (water.mass_h, water.charge_h, 1.0, 0.0),
                                         (water.mass_h, water.charge_h, 1.0, 0.0)):  # fmt: skip
            sys_.addParticle(mass)
            nb.addParticle(charge, sigma, eps)
    for k in range(n):
        o, h1, h2 = 3 * k, 3 * k + 1, 3 * k + 2
        for i, j, d in ((o, h1, water.r_oh), (o, h2, water.r_oh), (h1, h2, water.r_hh)):
            sys_.addConstraint(i, j, d)
            nb.addException(i, j, 0.0, 1.0, 0.0)
    sys_.addForce(nb)
    integrator = mm.VerletIntegrator(h * unit.picoseconds)
    integrator.setConstraintTolerance(1e-10)
    context = mm.Context(sys_, integrator, mm.Platform.getPlatformByName(platform_name))
    q, p = x0
    masses = np.tile([water.mass_o, water.mass_h, water.mass_h], n)
    context.setPositions(np.asarray(q).reshape(-1, 3) * unit.nanometer)
    context.setVelocities(
        np.asarray(p).reshape(-1, 3) / masses[:, None] * unit.nanometer / unit.picosecond
    )

    potential0 = context.getState(getEnergy=True).getPotentialEnergy()
    potential0 = potential0.value_in_unit(unit.kilojoule_per_mole)

    def energy():
        s = context.getState(getEnergy=True)
        return (s.getKineticEnergy() + s.getPotentialEnergy()).value_in_unit(
            unit.kilojoule_per_mole
        )

    E = [energy()]
    t0 = time.perf_counter()
    for _ in range(steps // every):
        integrator.step(every)
        E.append(energy())
    wall = time.perf_counter() - t0
    t = np.arange(len(E)) * every * h
    return E, t, steps / wall, mm.Platform.getOpenMMVersion(), potential0


def mechint_water(system, x0, h, steps, every, batch):
    import mechint as mi

    out = {}
    for name, integrator in (
        ("Settle()", mi.integrators.Settle()),
        ("Rattle()", mi.integrators.Rattle()),
    ):
        mi.simulate(system, integrator, x0, h, every, every)  # compile
        t0 = time.perf_counter()
        traj = mi.simulate(system, integrator, x0, h, steps, every)
        wall = time.perf_counter() - t0
        E = np.asarray(system.hamiltonian(traj.x))
        kept = mi.diagnostics.preserved_errors(traj)
        residual = max(float(np.max(kept[k])) for k in ("constraints", "constraint_rates"))
        out[name] = (E, np.asarray(traj.t), steps / wall, residual)
    starts = [system.cluster(seed=s) for s in range(batch)]
    x = tuple(np.stack(parts) for parts in zip(*starts, strict=True))
    settle = mi.integrators.Settle()
    timed = best_of(lambda: mi.simulate(system, settle, x, h, 1000, 1000), 1, warm=True)
    out["batch"] = batch * 1000 / timed.best
    return out


# -- pendulum chain ----------------------------------------------------------------------
def _turn(a, b):
    """The rotation taking the unit vector a to the unit vector b (about a × b)."""
    v, c = np.cross(a, b), float(np.dot(a, b))
    if np.linalg.norm(v) < 1e-15:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + K + K @ K / (1.0 + c)


def mujoco_chain(q, masses, lengths, gravity, h, steps, every, integrator):
    import mujoco

    n = len(masses)
    links = [("0 0 0" if i == 0 else f"0 0 {-lengths[i - 1]}",  # a point mass at each tip
              f'pos="0 0 {-lengths[i]}" mass="{masses[i]}" diaginertia="1e-9 1e-9 1e-9"',
              f'type="capsule" fromto="0 0 0 0 0 {-lengths[i]}" size="0.002"')
             for i in range(n)]  # fmt: skip
    m, d = ball_chain(h, integrator, gravity, links)
    x = np.asarray(q).reshape(n, 3)
    links = x - np.concatenate([np.zeros((1, 3)), x[:-1]])
    parent = np.eye(3)
    for i in range(n):
        world = _turn(np.array([0.0, 0.0, -1.0]), links[i] / np.linalg.norm(links[i]))
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, (parent.T @ world).reshape(-1))
        d.qpos[m.jnt_qposadr[i] : m.jnt_qposadr[i] + 4] = quat
        parent = world
    mujoco.mj_forward(m, d)
    ids = [m.body(f"b{i}").id for i in range(n)]
    tips = np.array([d.xpos[b] + d.xmat[b].reshape(3, 3) @ [0.0, 0.0, -lengths[i]]
                     for i, b in enumerate(ids)])  # fmt: skip
    placed = float(np.max(np.abs(tips - x)))

    def energy():
        mujoco.mj_forward(m, d)
        return float(d.energy[0] + d.energy[1])

    E = [energy()]
    t0 = time.perf_counter()
    for _ in range(steps // every):
        for _ in range(every):
            mujoco.mj_step(m, d)
        E.append(energy())
    wall = time.perf_counter() - t0
    t = np.arange(len(E)) * every * h
    return E, t, steps / wall, placed, mujoco.__version__


def mechint_chain(system, x0, h, steps, every, batch, rattle=None):
    import mechint as mi

    rattle = rattle or mi.integrators.Rattle()
    timed = best_of(lambda: mi.simulate(system, rattle, x0, h, steps, every), 1, warm=True)
    traj, wall = timed.result, timed.best
    E = np.asarray(system.hamiltonian(traj.x))
    q = np.asarray(traj.x[0]).reshape(len(traj.t), -1, 3)
    links = q - np.concatenate([np.zeros_like(q[:, :1]), q[:, :-1]], axis=1)
    rod = float(np.max(np.abs(np.linalg.norm(links, axis=-1) - 0.1)))
    rng = np.random.default_rng(0)
    azimuths = np.linspace(0.0, 1.0, 10)
    starts = [mi.systems.hanging_state(system, 0.6 + 0.05 * rng.standard_normal(10), None, azimuths)
              for _ in range(batch)]  # fmt: skip
    x = tuple(np.stack(parts) for parts in zip(*starts, strict=True))
    timed = best_of(lambda: mi.simulate(system, rattle, x, h, 100, 100), 1, warm=True)
    return E, np.asarray(traj.t), steps / wall, rod, batch * 100 / timed.best


def _row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main(quick: bool = False) -> dict:
    try:
        import mujoco  # noqa: F401
        import openmm  # noqa: F401
    except ImportError:
        print("OpenMM or MuJoCo is not installed (make bench installs them): nothing to race; "
              "tests/integrators/test_settle.py and test_rattle.py run the maps")  # fmt: skip
        print("targets: not measured without OpenMM and MuJoCo")
        return {}
    import mechint as mi

    lines = [f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, float64 unless said", ""]  # fmt: skip
    result: dict = {}

    # rigid water
    water = mi.systems.RigidWater(8, "tip3p")
    x0 = water.cluster(seed=0)
    steps, every = (2_000, 100) if quick else (100_000, 1000)
    lines += [f"**Rigid water**: 8 TIP3P molecules in vacuum, {steps} steps "
              f"({steps * 1e-3:g} ps at 1 fs), energy read every {every} steps", "",
              "| code | h (fs) | energy band / E₀ | drift / E₀ | largest bond residual | steps/s |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for h in (0.001, 0.002):
        n = steps if h == 0.001 else steps // 2
        for plat in ("Reference", "CPU"):
            E, t, sps, version, _ = openmm_water(water, x0, h, n, every, plat)
            band, drift = _band_drift(t, E)
            label = f"OpenMM {version} {plat}" + (" (mixed precision)" if plat == "CPU" else "")
            lines.append(_row(label, f"{h * 1e3:g}", f"{band:.2e}", f"{drift:+.2e}",
                              "single-precision lengths", f"{sps:,.0f}"))  # fmt: skip
            result[f"openmm {plat} {h}"] = (band, drift, sps)
        ours = mechint_water(water, x0, h, n, every, batch=64 if quick else 1000)
        for name in ("Settle()", "Rattle()"):
            E, t, sps, res = ours[name]
            band, drift = _band_drift(t, E)
            lines.append(_row(f"mechint {name}", f"{h * 1e3:g}", f"{band:.2e}", f"{drift:+.2e}",
                              f"{res:.1e} (relative)", f"{sps:,.0f}"))  # fmt: skip
            result[f"mechint {name} {h}"] = (band, drift, sps)
            result["settle residual"] = max(result.get("settle residual", 0.0), res)
        rate = f"{ours['batch']:,.0f} cluster-steps/s"
        label = f"mechint Settle(), batch of {64 if quick else 1000} clusters"
        lines.append(_row(label, f"{h * 1e3:g}", "", "", "", rate))
    V_openmm = openmm_water(water, x0, 0.001, 0, 1, "Reference")[4]
    V_ours = float(water.system.potential(np.asarray(x0[0])))
    lines += [
        "",
        f"The same potential: V(q₀) = {V_openmm:.12g} kJ/mol (OpenMM), {V_ours:.12g} (mechint). "
        "OpenMM's leapfrog reports the kinetic energy at half steps, so its E₀ differs by "
        "O(h) from the state's.",
        "",
    ]

    # pendulum chain
    chain = mi.systems.PendulumChain([0.1] * 10, [0.1] * 10, 9.81, dim=3)
    xc = mi.systems.hanging_state(chain, [0.6] * 10, None, np.linspace(0.0, 1.0, 10))
    h = 1e-3
    steps, every = (10_000, 100) if quick else (1_000_000, 10_000)
    lines += [f"**Pendulum chain**: ten bobs of 0.1 kg on rods of 0.1 m, released at rest bent in "
              f"space; {steps} steps of {h:g} s", "",
              "| code | energy band / E₀ | drift / E₀ | largest rod-length error (m) | steps/s |",
              "|---|---|---|---|---|"]  # fmt: skip
    for integ in ("Euler", "RK4"):
        E, t, sps, placed, version = mujoco_chain(
            xc[0], [0.1] * 10, [0.1] * 10, 9.81, h, steps, every, integ
        )
        band, drift = _band_drift(t, E) if np.all(np.isfinite(E)) else (np.nan, np.nan)
        lines.append(_row(f"MuJoCo {version} {integ}", f"{band:.2e}", f"{drift:+.2e}",
                          "0 (joint coordinates)", f"{sps:,.0f}"))  # fmt: skip
        result[f"mujoco {integ}"] = (band, drift, sps)
    E, t, sps, rod, batch_sps = mechint_chain(chain, xc, h, steps, every, batch=CHAINS[quick])
    band, drift = _band_drift(t, E)
    lines.append(f"| mechint Rattle() | {band:.2e} | {drift:+.2e} | {rod:.1e} | {sps:,.0f} |")
    lines.append(_row(f"mechint Rattle(), batch of {CHAINS[quick]} chains", "", "", "",
                      f"{batch_sps:,.0f} chain-steps/s"))  # fmt: skip
    yoshida = mi.integrators.Composition(mi.integrators.Rattle(), "yoshida4")
    E4, t4, sps4, rod4, _ = mechint_chain(chain, xc, h, steps, every, 2, yoshida)
    band4, drift4 = _band_drift(t4, E4)
    lines.append(_row("mechint Yoshida-4 of Rattle()", f"{band4:.2e}", f"{drift4:+.2e}",
                      f"{rod4:.1e}", f"{sps4:,.0f}"))  # fmt: skip
    lines += ["", f"(MuJoCo's chain placed on mechint's start to {placed:.1e} m; E₀ {E[0]:.6f} J.)"]
    result["mechint chain"] = (band, drift, sps, batch_sps)
    text = "\n".join(lines)
    print(text)
    residual = max(result["settle residual"], rod / 0.1)
    yes = {True: "met", False: "NOT met"}
    print(f"targets: constraint residuals <= 1e-13 {yes[residual <= 1e-13]} ({residual:.1e}); "
          f"RATTLE's chain energy without drift (|drift| < 5 % of the band) "
          f"{yes[abs(drift) < 0.05 * band]} ({drift:+.1e} against {band:.1e})")  # fmt: skip
    if not quick:
        RESULTS.write_text(text + "\n")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
