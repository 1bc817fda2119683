"""Rigid bodies in your own potential (docs/math.md §9): a satellite's coupled orbit and
attitude, and two rigid bodies in mutual gravity, by the Lie group variational
integrator (LGVI) and the explicit splitting.

python examples/rigid_bodies.py [--quick] [--out rigid_bodies.png]

1. The restricted full two-body problem: a satellite of unit mass about a point-mass
   planet (μ = 1) on a circular orbit of radius 1, its long axis (least inertia) 0.1 rad
   off the local vertical, turning once per orbit about the orbit normal.  V = point
   mass + MacCullagh's gravity gradient (``potentials``): rotation invariant, so the
   total angular momentum L = x × p + RΠ is kept.  A small satellite (moments
   (1, 1.5, 2)·10⁻⁶) librates in pitch as the classical C θ̈ = −(3/2)n²(B − A) sin 2θ
   says (A, B, C about the radial, along-track and normal axes; small-amplitude rate
   n√(3(B − A)/C), the period of amplitude 0.1 from K(sin 0.1)); a large one (10⁻³) pumps its orbit
   through the angular momentum they trade (the orbit's eccentricity follows the
   libration), and its period moves by about 1 %: the coupling the model is for.  10⁶
   steps of h = 2π/200 (5000 orbits) of the large one by the LGVI keep H within a
   bounded band and L to round-off.
2. The full two-body problem: two bodies of four point masses each, in mutual gravity
   (``potentials.mutual_gravity``), near-circular mutual orbit of radius 4, both spinning:
   the orbital angular momentum Σ x × p and the spins Σ RΠ trade amounts far above
   round-off while their sum L and the total momentum P are kept to round-off.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import ellipk

import mechint as mi
from mechint.systems import RigidBodies, potentials

S, I = mi.systems, mi.integrators

# -- 1. a satellite about a planet ----------------------------------------------------------
MOMENTS = np.array([[1.0, 1.5, 2.0]])  # A (radial), B (along-track), C (normal), per unit mass
MU = 1.0


def satellite_potential(x, R, params):
    """The planet's point mass and gravity gradient (the moments as a parameter: one
    compiled run serves every satellite)."""
    J = params["inertia"]
    return potentials.point_mass(x, MU, 1.0) + potentials.gravity_gradient(x, R, MU, J)


def satellite(size: float) -> RigidBodies:
    """A satellite of unit mass with moments ``size`` × (1, 1.5, 2) about the planet."""
    inertia = size * MOMENTS
    return RigidBodies(
        inertia,
        mass=1.0,
        potential=satellite_potential,
        params={"inertia": inertia},
        rotation_invariant=True,
    )


def orbit_rate(size: float) -> float:
    """The rate of the circular orbit of radius 1: the gravity gradient adds
    (3/2)μ(tr 𝕁 − 3A)/r⁴ to the point mass's pull (the long axis radial)."""
    return float(np.sqrt(1.0 + 1.5 * size * (MOMENTS.sum() - 3.0 * MOMENTS[0, 0])))


def satellite_state(size: float, pitch: float = 0.1):
    """Circular orbit of radius 1 in the xy-plane (rate n), body axes 1, 2, 3 along the
    radial, along-track and normal directions, turned by ``pitch`` about the normal; the
    body turns with the orbit (Ω = n e3)."""
    n = orbit_rate(size)
    c, s = np.cos(pitch), np.sin(pitch)
    R = np.array([[[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]])
    return np.array([[1.0, 0, 0]]), np.array([[0, n, 0.0]]), R, size * MOMENTS * [[0, 0, n]]


def pitch_angle(traj) -> np.ndarray:
    """The angle of body axis 1 from the local vertical x/|x|, about the orbit normal."""
    x, R = np.asarray(traj.x[0])[:, 0], np.asarray(traj.x[2])[:, 0]
    axis = R[:, :, 0]
    radial = x / np.linalg.norm(x, axis=-1, keepdims=True)
    cross = radial[:, 0] * axis[:, 1] - radial[:, 1] * axis[:, 0]
    return np.arctan2(cross, np.sum(radial * axis, axis=-1))


def libration_period(t, theta) -> float:
    """Mean period between the first and the last upward zero crossing."""
    up = np.nonzero((theta[:-1] < 0) & (theta[1:] >= 0))[0]
    times = t[up] - theta[up] * (t[up + 1] - t[up]) / (theta[up + 1] - theta[up])
    return float((times[-1] - times[0]) / (len(times) - 1))


def satellites(quick: bool) -> dict:
    """Pitch librations of a small satellite (moments 10⁻⁶ per unit mass: the classical
    frequency) and a large one (10⁻³: the libration pumps the orbit through the angular
    momentum they trade, and the period moves); 10⁶ steps of the large one."""
    h = 2 * np.pi / 200
    A, B, C = MOMENTS[0]
    out: dict = {"pitch": {}}
    # quick: in calls of 64 saves, one compiled program for these runs and the long one
    chunk = 64 if quick else None
    for size in (1e-6, 1e-3):
        system = satellite(size)
        traj = mi.simulate(system, I.LieGroupVariational(), satellite_state(size), h, 8000, 2,
                           chunk_steps=chunk and chunk * 2)  # fmt: skip
        theta = pitch_angle(traj)
        # C θ̈ = −(3/2)n²(B − A) sin 2θ: a pendulum in 2θ, of amplitude 2θ₀
        small = 2 * np.pi / (orbit_rate(size) * np.sqrt(3 * (B - A) / C))
        predicted = small * 2 / np.pi * ellipk(np.sin(0.1) ** 2)
        out["pitch"][size] = {
            "t": np.asarray(traj.t),
            "pitch": theta,
            "period": libration_period(np.asarray(traj.t), theta),
            "predicted": float(predicted),
        }
    steps = 20_000 if quick else 1_000_000
    system = satellite(1e-3)
    every = steps // 1000
    long = mi.simulate(system, I.LieGroupVariational(), satellite_state(1e-3), h, steps, every,
                       chunk_steps=chunk and chunk * every)  # fmt: skip
    inv = long.invariants()
    L = np.stack([inv[f"L{c}"] for c in "xyz"], -1)
    H = inv["H"]
    out.update({
        "t": np.asarray(long.t),
        "H error": np.abs(H - H[0]) / abs(H[0]),
        "L error": np.linalg.norm(L - L[0], axis=-1) / np.linalg.norm(L[0]),
        "energy drift": mi.diagnostics.drift(system, long)["H"],
        "orthogonality": float(np.max(system.orthogonality(long.x))),
        "steps": steps,
        "failed": bool(np.any(long.failed)),
    })  # fmt: skip
    return out


# -- 2. two rigid bodies in mutual gravity ---------------------------------------------------
MASSES = np.array([1.0, 0.8, 0.6, 0.4])
_RAW = np.array([[0.5, 0.0, 0.1], [-0.4, 0.1, 0.0], [0.0, 0.45, -0.2], [0.1, -0.3, 0.35]])
SITES = _RAW - MASSES @ _RAW / MASSES.sum()
TENSOR = np.einsum("s,sij->ij", MASSES, np.einsum("si,si->s", SITES, SITES)[:, None, None]
                   * np.eye(3) - np.einsum("si,sj->sij", SITES, SITES))  # fmt: skip


def mutual(x, R):
    return potentials.mutual_gravity(x, R, SITES, MASSES)


PAIR = RigidBodies(
    [TENSOR, TENSOR],
    mass=MASSES.sum(),
    potential=mutual,
    translation_invariant=True,
    rotation_invariant=True,
)


def pair_state():
    _, _, R, Pi = PAIR.example_state()
    M = MASSES.sum()
    v = 0.5 * np.sqrt(2.0 * M / 4.0)
    x = np.array([[-2.0, 0.0, 0.1], [2.0, 0.0, -0.1]])
    p = M * np.array([[0.0, -v, 0.02], [0.0, v, -0.02]])
    return x, p, R, 0.5 * Pi


def two_bodies(quick: bool) -> dict:
    steps, h = (20_000 if quick else 200_000), 0.01
    out = {}
    for label, integrator in (
        ("LGVI", I.LieGroupVariational()),
        ("splitting", I.RigidBodySplitting()),
    ):
        traj = mi.simulate(PAIR, integrator, pair_state(), h, steps, steps // 2000)
        x, p, R, Pi = (np.asarray(a) for a in traj.x)
        orbital = np.sum(np.cross(x, p), axis=1)
        spin = np.sum(np.einsum("tnij,tnj->tni", R, Pi), axis=1)
        inv = traj.invariants()
        total = orbital + spin
        P = np.stack([inv[f"P{c}"] for c in "xyz"], -1)
        out[label] = {
            "t": np.asarray(traj.t),
            "orbital z": orbital[:, 2],
            "spin z": spin[:, 2],
            "exchanged": float(np.ptp(spin, axis=0).max()),
            "L error": float(
                np.max(np.linalg.norm(total - total[0], axis=-1)) / np.linalg.norm(total[0])
            ),
            "P error": float(np.max(np.abs(P - P[0])) / np.max(np.abs(p).sum(axis=(1, 2)))),
            "H error": np.abs(inv["H"] - inv["H"][0]) / abs(inv["H"][0]),
            "failed": bool(np.any(traj.failed)),
        }
    return out


def figure(sat: dict, pair: dict, out: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(11, 7.5), constrained_layout=True)
    a = ax[0, 0]
    for size, r in sat["pitch"].items():
        a.plot(r["t"] / (2 * np.pi), r["pitch"], lw=1,
               label=f"moments {size:g}: period {r['period']:.4f} (rigid satellite: "
                     f"{r['predicted']:.4f})")  # fmt: skip
    a.set(xlabel="orbits", ylabel="pitch angle (rad)", title="gravity-gradient pitch libration",
          xlim=(0, 12))  # fmt: skip
    a.legend(fontsize=8)
    a = ax[0, 1]
    a.semilogy(sat["t"] / (2 * np.pi), sat["H error"] + 1e-18, label="|ΔH|/|H|")
    a.semilogy(sat["t"] / (2 * np.pi), sat["L error"] + 1e-18, label="|ΔL|/|L|")
    a.set(xlabel="orbits", title=f"satellite, LGVI, {sat['steps']:.0e} steps of h = 2π/200")
    a.legend()
    a = ax[1, 0]
    run = pair["LGVI"]
    a.plot(run["t"], run["orbital z"] - run["orbital z"][0], label="orbital (Σ x×p)_z − start")
    a.plot(run["t"], run["spin z"] - run["spin z"][0], label="spin (Σ RΠ)_z − start")
    a.set(xlabel="t", title="two bodies in mutual gravity: spin–orbit exchange (LGVI)")
    a.legend()
    a = ax[1, 1]
    for label, r in pair.items():
        a.semilogy(r["t"], r["H error"] + 1e-18, label=f"{label}: |ΔH|/|H|")
    a.set(xlabel="t", title="two bodies: energy error (L, P kept to round-off)")
    a.legend()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(quick: bool = False, out: str | None = None) -> dict:
    sat, pair = satellites(quick), two_bodies(quick)
    for size, r in sat["pitch"].items():
        print(f"satellite, moments {size:g}: pitch period {r['period']:.5f}, classical "
              f"(uncoupled) {r['predicted']:.5f}")  # fmt: skip
    print(f"  {sat['steps']} steps: max |ΔH|/|H| = {sat['H error'].max():.2e} "
          f"(trend {float(sat['energy drift'].trend):.1e}), max |ΔL|/|L| = "
          f"{sat['L error'].max():.1e}, max |RᵀR − 1| = {sat['orthogonality']:.1e}")  # fmt: skip
    for label, r in pair.items():
        print(f"two bodies, {label}: spin exchanged {r['exchanged']:.3e}, "
              f"|ΔL|/|L| {r['L error']:.1e}, |ΔP| {r['P error']:.1e}, "
              f"|ΔH|/|H| {r['H error'].max():.1e}")  # fmt: skip
    if out:
        figure(sat, pair, out)
    return {"satellite": sat, "two bodies": pair}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (the tests use it)")
    parser.add_argument("--out", default=None, help="figure file (e.g. rigid_bodies.png)")
    args = parser.parse_args()
    main(args.quick, args.out)
