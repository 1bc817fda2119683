"""Recipes: a satellite's attitude on a prescribed orbit, steps per orbit, your own map.

python examples/recipes.py [--quick] [--out recipes.png]

1. **A satellite's attitude on a prescribed orbit.** The orbit is given (circular, radius
   1, μ = 1: the orbital rate n = 1, an orbit 2π), and only the attitude is integrated:
   one body about its centre (``RigidBodies`` with no mass: state (R, Π)) driven by the
   gravity-gradient torque τ = 3n² u × 𝕁u of the orbit's direction u = Rᵀr̂(t) in the body
   (``systems.Forced``, force f(t, x) on Π), by the forced Lie group variational map. The
   energy is then the attitude's alone, ½ Πᵀ𝕁⁻¹Π: with the orbit in the state (as in the
   getting-started page) the orbit's energy is 10¹⁴ times larger and hides it. The body
   starts on the local-vertical/local-horizontal axes (``mi.attitude.circular_orbit``) with
   a pitch of 0.02 rad and librates about the stable attitude; the period of the pitch
   angle (``mi.attitude.roll_pitch_yaw``) is the classical small-oscillation value
   2π / (n √(3 (I_x − I_z) / I_y)) orbits' time, and the energy balance H − W (the work of
   the torque) stays in a band.
2. **Steps per orbit with a time transformation.** On a Kepler orbit of e = 0.9 the
   Poincaré transformation dt/ds = g = r^{3/2} (``systems.TimeTransformed``) takes steps of
   fictive time; ``Kepler.fictive_period(x0, g)`` is the fictive time S of one orbit, so
   a step of S/n is n steps an orbit.  At 200 steps an orbit, Störmer–Verlet on the
   transformed system ends 10 orbits far closer to the exact orbit (``Kepler.exact_solution``
   at the run's own physical time) than constant steps of 2π/200.
3. **A map of your own through check.** A user's map is a subclass of
   ``mi.integrators.Integrator`` with its traits declared; ``mi.diagnostics.check``
   measures them. Störmer–Verlet in substeps, declared symplectic and of order 2, passes;
   the explicit Euler step declared the same is flagged: the measurement contradicts the
   declaration, in the verdict (``mechint check --integrator module:Class`` prints the
   same table).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import ClassVar

import jax.numpy as jnp
import numpy as np

import mechint as mi
from mechint.integrators import Integrator, Setting, Traits
from mechint.maps import ok_status, serves_only

I = mi.integrators
J = jnp.array([1.0, 1.2, 0.8])  # (I_x, I_y, I_z): along track, pitch axis, nadir
BODY = mi.systems.RigidBodies([J])  # no mass: the centre fixed, state (R, Π)


def _gravity_gradient(t, x):
    """The torque of the prescribed orbit r(t) = (cos t, sin t, 0) on the body (n = 1),
    as a force in the coordinates of ``BODY`` (on Π)."""
    R = x[0]
    r = jnp.stack([jnp.cos(t), jnp.sin(t), jnp.zeros_like(t)])
    u = R[0].T @ r
    tau = 3.0 * jnp.cross(u, J * u)
    return BODY.coordinates((jnp.zeros_like(R), tau[None]))


def satellite(orbits: int, per_orbit: int = 200, pitch: float = 0.02) -> dict:
    """The attitude on the prescribed orbit: pitch libration period and energy balance."""
    _, _, axes, omega = mi.attitude.circular_orbit(1.0, 1.0)  # LVLH axes, body rate
    R0 = axes @ mi.attitude.from_euler(jnp.array([0.0, pitch, 0.0]))  # yaw, pitch, roll
    system = mi.systems.Forced(BODY, _gravity_gradient)
    h = 2 * np.pi / per_orbit
    steps = orbits * per_orbit
    run = mi.simulate(system, I.LieGroupVariational(), (R0[None], (J * omega)[None]), h, steps)
    t = np.asarray(run.t)
    r = np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], -1)
    v = np.stack([-np.sin(t), np.cos(t), np.zeros_like(t)], -1)
    angles = np.asarray(mi.attitude.roll_pitch_yaw(run.x[0][0][:, 0], r, v))
    theta = angles[:, 1]
    # the period from the pitch's upward zero crossings (linear interpolation)
    k = np.nonzero((theta[:-1] < 0) & (theta[1:] >= 0))[0]
    crossings = t[k] - theta[k] * (t[k + 1] - t[k]) / (theta[k + 1] - theta[k])
    period = float(np.mean(np.diff(crossings))) / (2 * np.pi)
    classical = 1.0 / float(np.sqrt(3 * (J[0] - J[2]) / J[1]))
    balance = np.asarray(run.invariants()["H_balance"])  # H − W: the work of the torque
    Pi = np.asarray(run.x[0][1][:, 0])
    energy = 0.5 * np.sum(Pi**2 / np.asarray(J), axis=-1)  # the attitude's, ½ Πᵀ𝕁⁻¹Π
    return {
        "t": t / (2 * np.pi),
        "pitch": theta,
        "roll, yaw": float(np.max(np.abs(angles[:, [0, 2]]))),
        "period (orbits)": period,
        "classical (orbits)": classical,
        "energy": energy,
        "balance": balance,
        "energy band / energy": float(np.ptp(balance) / np.mean(np.abs(energy))),
    }


def steps_per_orbit(orbits: int, per_orbit: int = 200, e: float = 0.9) -> dict:
    """Kepler at e: the time-transformed run of ``per_orbit`` steps an orbit (its step
    from ``fictive_period``) against constant steps, each at the end against the exact
    orbit at the run's own physical time."""
    kepler = mi.systems.Kepler()
    x0 = (np.array([1.0 - e, 0.0]), np.array([0.0, np.sqrt((1 + e) / (1 - e))]))

    def g(q, p):
        return jnp.sum(q * q) ** 0.75

    S = kepler.fictive_period(x0, g)
    steps = orbits * per_orbit
    moved = mi.systems.TimeTransformed(kepler, g)
    run = mi.simulate(moved, I.StormerVerlet(), x0, S / per_orbit, steps, steps)
    q, t_end = np.asarray(run.base_state[0][-1]), float(run.t[-1])
    error_tt = float(np.linalg.norm(q - np.asarray(kepler.exact_solution(x0, t_end)[0])))
    fixed = mi.simulate(kepler, I.StormerVerlet(), x0, 2 * np.pi / per_orbit, steps, steps)
    q_fixed = np.asarray(fixed.x[0][-1])
    exact = np.asarray(kepler.exact_solution(x0, 2 * np.pi * orbits)[0])
    return {
        "fictive period": float(S),
        "physical time / orbits": t_end / (2 * np.pi),
        "error, time-transformed": error_tt,
        "error, constant steps": float(np.linalg.norm(q_fixed - exact)),
    }


@dataclasses.dataclass(frozen=True)
class SubstepLeapfrog(Integrator):
    """Störmer–Verlet in ``substeps`` steps of h/substeps: order 2, symplectic."""

    substeps: int = 2
    name: ClassVar[str] = "substep-leapfrog"
    traits = Traits(order=2, symmetric=True, explicit=True, symplectic=True)
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("substeps", "substep-leapfrog: leapfrog steps per step", int),
    )

    def cannot_serve(self, system):
        return serves_only(system, (mi.systems.Separable,))

    def step(self, system, x, h):
        q, p = x
        k = h / self.substeps
        for _ in range(self.substeps):
            p = p - 0.5 * k * system.potential_gradient(q)
            q = q + k * system.kinetic_gradient(p)
            p = p - 0.5 * k * system.potential_gradient(q)
        return (q, p), ok_status((q, p))


@dataclasses.dataclass(frozen=True)
class OverclaimedEuler(Integrator):
    """The explicit Euler step, declared (wrongly) symplectic, symmetric and of order 2."""

    name: ClassVar[str] = "overclaimed-euler"
    traits = Traits(order=2, symmetric=True, explicit=True, symplectic=True)

    def cannot_serve(self, system):
        return serves_only(system, (mi.systems.Separable,))

    def step(self, system, x, h):
        q, p = x
        q1 = q + h * system.kinetic_gradient(p)
        p1 = p - h * system.potential_gradient(q)
        return (q1, p1), ok_status((q1, p1))


def own_maps() -> dict:
    """``check`` of the two maps on Kepler (e = 0.5): their tables, and the rows the
    measurement contradicts."""
    kepler = mi.systems.Kepler()
    x0 = (np.array([0.5, 0.0]), np.array([0.0, np.sqrt(3.0)]))
    out = {}
    for integrator in (SubstepLeapfrog(3), OverclaimedEuler()):
        checks = mi.diagnostics.check(kepler, integrator, x0, 0.1)
        table = checks.table()
        out[integrator.name] = {
            "table": table,
            "contradicted": [
                line.split()[0] for line in table.splitlines() if "contradicts" in line
            ],
        }
    return out


def main(quick: bool = False, out: str | None = None) -> dict:
    sat = satellite(3 if quick else 10)
    kep = steps_per_orbit(2 if quick else 10)
    own = own_maps()
    print("1. attitude on a prescribed circular orbit (forced LGVI, 200 steps an orbit)")
    print(f"   pitch libration period {sat['period (orbits)']:.4f} orbits, classical "
          f"{sat['classical (orbits)']:.4f}; roll and yaw stay within {sat['roll, yaw']:.1e} "
          f"rad; energy balance band {sat['energy band / energy']:.1e} of the energy")  # fmt: skip
    print("2. Kepler e = 0.9, Störmer–Verlet, 200 steps an orbit")
    print(f"   fictive period S = {kep['fictive period']:.6f}: end after "
          f"{kep['physical time / orbits']:.6f} orbits; position error "
          f"{kep['error, time-transformed']:.2e} time-transformed, "
          f"{kep['error, constant steps']:.2e} constant steps")  # fmt: skip
    print("3. check of maps of one's own, on Kepler (e = 0.5)")
    for name, r in own.items():
        print(f"   {name}: contradicted {r['contradicted'] or 'nothing'}")
        print("\n".join("      " + line for line in r["table"].splitlines()))
    result = {"satellite": sat, "kepler": kep, "own maps": own}
    if out:
        figure(sat).savefig(out, dpi=130)
        print(f"figure: {out}")
    return result


def figure(sat: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    a.plot(sat["t"], sat["pitch"], lw=1.2)
    a.set_xlabel("time (orbits)")
    a.set_ylabel("pitch in the LVLH frame (rad)")
    a.set_title(f"pitch libration: {sat['period (orbits)']:.4f} orbits "
                f"(classical {sat['classical (orbits)']:.4f})")  # fmt: skip
    e0 = sat["energy"][0]
    b.plot(sat["t"], sat["energy"] / e0 - 1, lw=1.0, color="C0")
    b.set_xlabel("time (orbits)")
    b.set_ylabel("attitude's energy H / H₀ − 1", color="C0")
    c = b.twinx()
    c.plot(sat["t"], (sat["balance"] - sat["balance"][0]) / e0, lw=1.0, color="C3")
    c.set_ylabel("energy balance (H − W − H₀) / H₀", color="C3")
    b.set_title("the attitude's energy and its balance with the torque's work W")
    return fig


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    a = parser.parse_args()
    main(a.quick, a.out)
