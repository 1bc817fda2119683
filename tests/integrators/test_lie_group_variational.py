"""The Lie group variational integrator and the explicit (NO_SQUISH type) splitting on
rigid bodies in a potential: the papers' maps as special cases, orders against DOP853,
structure, long runs, gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.diagnostics import observed_order, reference_state
from mechint.integrators import (
    Composition,
    DiscreteLagrangian,
    FreeRotation,
    GravityKick,
    LieGroupVariational,
    RigidBodySplitting,
    Splitting,
)
from mechint.lie import so3
from mechint.systems import RigidBodies, potentials
from mechint.systems.rigid import haar_so
from tests.systems import rigid_bodies_cases as cases

LGVI = LieGroupVariational()
EPS = np.finfo(float).eps
EZ = np.array([0.0, 0.0, 1.0])


def test_with_no_potential_it_is_the_moser_veselov_map_attitude_included():
    """V = 0: LGVI = DiscreteLagrangian on FreeRigidBody with J = ½ tr(𝕁) − 𝕁 (its Π as
    M = hat(Π), its attitude carried by ``orientation``), 200 steps, to 1e-14."""
    system = cases.free()
    I = np.asarray(system.inertia[0])
    body = mi.systems.FreeRigidBody(0.5 * I.sum() - I)
    R, Pi = system.example_state()
    ours = mi.simulate(system, LGVI, (R, Pi), 0.1, 200, 20)
    theirs = mi.simulate(body, DiscreteLagrangian(), so3.hat(Pi[0]), 0.1, 200, 20, orientation=R[0])
    assert np.max(np.abs(ours.x[1][:, 0] - so3.vee(theirs.x))) < 1e-14
    assert np.max(np.abs(ours.x[0][:, 0] - theirs.orientation)) < 1e-14
    # and it keeps H exactly, as the Moser–Veselov map does: a random walk of round-off
    H = ours.invariants()["H"]
    assert np.max(np.abs(H - H[0])) < 10 * EPS * np.sqrt(200) * H[0]


@pytest.mark.parametrize("split", [False, True])
def test_with_the_heavy_top_potential_it_is_the_heavy_top_map(split):
    """V = e_z·Rχ: LGVI = the heavy top's discrete Lagrangian map (Bobenko–Suris), and
    the splitting = the heavy top's Lie–Poisson splitting F(h/2) K(h) F(h/2) of its own
    exact flows (``FreeRotation``, ``GravityKick``): one step from each of
    200 states along a run, to 1e-14 (the chaotic top parts runs at round-off: a step
    is the thing to compare)."""
    system, top = cases.heavy(), cases.heavy_top()
    free_kick_free = Splitting((FreeRotation(), GravityKick()))  # the heavy top's own flows
    ours_map, their_map = (
        (RigidBodySplitting(), free_kick_free) if split else (LGVI, DiscreteLagrangian())
    )
    along = mi.simulate(system, ours_map, system.example_state(), 0.1, 199, 1).x
    R, Pi = (np.asarray(a)[:, 0] for a in along)  # 200 states, one body each
    ours = mi.simulate(system, ours_map, (R[:, None], Pi[:, None]), 0.1, 1, 1)
    theirs = mi.simulate(top, their_map, (Pi, R.transpose(0, 2, 1) @ EZ), 0.1, 1, 1)
    assert np.max(np.abs(ours.x[1][:, -1, 0] - theirs.x[0][:, -1])) < 1e-14
    gamma = np.einsum("sij,i->sj", ours.x[0][:, -1, 0], EZ)
    assert np.max(np.abs(gamma - theirs.x[1][:, -1])) < 1e-14


@pytest.fixture(scope="module")
def reference():
    """The two-body problem's state at T = 2 by DOP853 (rtol = atol = 1e-13) on
    (x, p, R, Π), R integrated as a matrix."""
    system, x0 = cases.pair(), cases.pair_state()
    ref, how = reference_state(system, x0, 2.0)
    assert how == "DOP853"
    return system, x0, ref


ORDERS = [
    (LGVI, 2, [16, 32, 64, 128]),
    (RigidBodySplitting(), 2, [16, 32, 64, 128]),
    (Composition(LGVI, "suzuki4"), 4, [16, 32, 64, 128]),
    (RigidBodySplitting(4), 4, [16, 32, 64, 128]),
    (Composition(LGVI, "kahan-li6"), 6, [4, 6, 8, 12, 16]),
    (RigidBodySplitting(6), 6, [4, 6, 8, 12, 16]),
    (Composition(LGVI, "kahan-li8"), 8, [3, 4, 5, 6]),
]


@pytest.mark.parametrize(("integrator", "order", "steps"), ORDERS, ids=lambda v: str(v)[:40])
def test_observed_order_against_dop853(reference, integrator, order, steps):
    system, x0, ref = reference
    fit = observed_order(system, integrator, x0, 2.0, 2.0 / np.array(steps), ref)
    assert abs(fit.order - order) < 0.25, (fit.order, fit.error)


@pytest.fixture(scope="module")
def long_runs():
    """10⁵ steps of each map on the two-body problem (h = 0.01, 160 orbits of the bodies
    about each other) and on the satellite about its planet (h = 2π/200, 500 orbits),
    every 100th state kept (in calls of 64 saves: on the two-body problem the compiled
    programs of the order runs, one save in a 64-save chunk, serve these runs too; the
    states are the same in any chunks)."""
    maps = (LGVI, RigidBodySplitting())
    return {
        (case, m.name): mi.simulate(system, m, x0, h, 100_000, 100, chunk_steps=6400)
        for case, system, x0, h in (
            ("pair", cases.pair(), cases.pair_state(), 0.01),
            ("satellite", cases.satellite(), cases.satellite_state(), 2 * np.pi / 200),
        )
        for m in maps
    }


@pytest.mark.parametrize("name", ["lie-group-variational", "rigid-body-splitting"])
def test_over_1e5_steps_rotations_momenta_and_energy(long_runs, name):
    """RᵀR = 1 to 1e-13, P and L to 1e-13 of their size; H within a band, and on the
    satellite (quasi-periodic) no trend: < 5 % of the band.  (The two-body problem with
    spins is chaotic: its H error wanders with the state over long periods, so a linear
    fit over one window says nothing about drift there.)"""
    for case in ("pair", "satellite"):
        traj = long_runs[(case, name)]
        system = traj.system
        assert not np.any(traj.failed)
        assert float(np.max(system.orthogonality(traj.x))) <= 1e-13
        inv = traj.invariants()
        p = np.asarray(traj.x[1])
        L = np.stack([inv[f"L{c}"] for c in "xyz"], -1)
        scale = {"P": np.max(np.sum(np.abs(p), axis=(-2, -1))),
                 "L": np.max(np.linalg.norm(L, axis=-1))}  # fmt: skip
        for kind in "PL" if case == "pair" else "L":
            for c in "xyz":
                v = inv[f"{kind}{c}"]
                assert np.max(np.abs(v - v[0])) <= 1e-13 * scale[kind], (case, kind, c)
        H = inv["H"]
        band = np.max(np.abs(H - H[0]))
        assert 0 < band < 1e-5 * abs(H[0]), case
    energy = mi.diagnostics.drift(system, traj)["H"]
    assert abs(float(energy.trend)) < 0.05 * float(energy.band)


@pytest.mark.parametrize("integrator", [LGVI, RigidBodySplitting()], ids=["lgvi", "splitting"])
def test_check_finds_a_symplectic_map_that_keeps_the_momenta(integrator):
    """``check`` on T*SO(3)² × T*R⁶ in the chart (x, p, vec R, Π): Poisson (= symplectic
    on the leaf), the momenta, the Casimir and reversibility exact; H of order 3."""
    system, x0 = cases.pair(), cases.pair_state()
    rows = {r.name: r for r in mi.diagnostics.check(system, integrator, x0, 0.05)}
    for name in ("Poisson", "Casimir trRtR", "reversibility", "momentum Lx", "momentum Pz"):
        assert rows[name].verdict == "exact (round-off)", (name, rows[name])
    assert rows["energy H"].exponent is not None and rows["energy H"].exponent > 2.5


def test_batch_and_gradient_through_the_potential_parameters():
    """A batch runs like its members; jax.grad through 200 steps by the potential's
    parameter (the primary's μ) equals a central difference."""
    I = np.array([[1.0, 1.5, 2.0]]) * 1e-3

    def V(x, R, params):
        mu = params["mu"]
        return potentials.point_mass(x, mu, 1.0) + potentials.gravity_gradient(x, R, mu, I)

    x0 = (
        np.array([[1.0, 0, 0]]),
        np.array([[0, 1.0, 0]]),
        np.eye(3)[None],
        np.array([[0, 0, 2e-3]]),
    )

    def final(mu):
        system = RigidBodies(I, mass=1.0, potential=V, params={"mu": mu}, rotation_invariant=True)
        sol = mi.integrate(system, LGVI, x0, 0.01, 200)
        return sol.x[0][-1, 0, 0] + sol.x[3][-1, 0, 1]

    value_and_grad = jax.value_and_grad(final)
    grad = value_and_grad(1.0)[1]
    # the central difference of the values its compiled programs compute (mu is traced)
    fd = (value_and_grad(1.0 + 1e-6)[0] - value_and_grad(1.0 - 1e-6)[0]) / 2e-6
    assert abs(grad - fd) < 1e-7 * max(1.0, abs(fd))
    system = RigidBodies(I, mass=1.0, potential=V, params={"mu": 1.0}, rotation_invariant=True)
    batch = tuple(np.stack([a, a]) for a in x0)
    batch[1][1] *= 1.01
    run = mi.simulate(system, LGVI, batch, 0.01, 100, 10)
    one = mi.simulate(system, LGVI, tuple(a[1] for a in batch), 0.01, 100, 10)
    for a, b in zip(run.x, one.x, strict=True):
        assert np.max(np.abs(a[1] - b)) < 1e-14


def test_planar_molecules_and_a_step_too_large_for_the_branch():
    """Three-site (planar: I3 = I1 + I2, J3 = 0) molecules take the Moser–Veselov solve;
    a step far beyond the branch's reach fails as WRONG_BRANCH or NOT_CONVERGED."""
    sites = np.array([[0.0, -0.0656, 0.0], [0.757, 0.520, 0.0], [-0.757, 0.520, 0.0]])
    sites = sites - np.array([16.0, 1.0, 1.0]) @ sites / 18.0
    J = cases.tensor(sites, [16.0, 1.0, 1.0])
    water = RigidBodies(
        [J, J], mass=18.0, potential=lambda x, R: potentials.coulomb(x, R, sites, [-0.8, 0.4, 0.4])
    )
    x, p, R, Pi = water.example_state()
    traj = mi.simulate(water, LGVI, (x, p, R, Pi), 0.01, 1000, 100)
    assert not np.any(traj.failed)
    spin = (x, p, R, Pi * 0 + np.array([60.0, 40.0, 0.0]))
    with pytest.raises(mi.StepFailure) as info:
        mi.simulate(water, LGVI, spin, 4.0, 1, 1)
    assert info.value.failure is not None
    assert info.value.failure["reason"] in ("wrong-branch", "not-converged")


def test_serves_only_rigid_bodies():
    with pytest.raises(mi.UnsupportedError, match="LieGroupVariational cannot advance EulerTop"):
        mi.simulate(mi.systems.EulerTop([1, 2, 3]), LGVI, [0.1, 0.2, 0.3], 0.1, 1)
    assert mi.integrators.get("lie-group-variational") is LieGroupVariational
    assert jnp.ndim(haar_so(np.random.default_rng(0), 1, 3)) == 3


@pytest.mark.parametrize("integrator", [LGVI, RigidBodySplitting()], ids=["lgvi", "splitting"])
def test_float32_runs_stay_float32(integrator):
    """Under strict dtype promotion (conftest): no float64 constant leaks into a step;
    the invariants move at float32 round-off plus the method's error."""
    system = cases.pair()
    traj = mi.simulate(system, integrator, cases.pair_state(), 0.01, 50, 10, dtype="float32")
    for leaf in jax.tree.leaves(traj.x):
        assert leaf.dtype == np.float32 and np.all(np.isfinite(leaf))
    errors = mi.diagnostics.invariant_errors(system, traj)
    assert np.max(errors["H"]) < 1e-5 and np.max(errors["trRtR"]) < 1e-6
    assert float(np.max(system.orthogonality(jax.tree.map(np.float64, traj.x)))) < 1e-6


def test_transforms_of_the_system_itself():
    """The system passes through jit, tree maps (float32 casts) and derivatives by its
    inertia with its facts intact; ε = 0 sites leave the LJ gradient finite; the step takes a
    batch directly (each body of each member its own solve)."""
    system, x0 = cases.pair(), cases.pair_state()
    run = jax.jit(lambda s, x: mi.integrate(s, LGVI, x, 0.01, 5).x[0][-1])
    assert np.array_equal(run(system, x0), mi.integrate(system, LGVI, x0, 0.01, 5).x[0][-1])
    cast = jax.tree.map(lambda a: a.astype(np.float32), system)
    assert cast.state_fields == system.state_fields and cast.translation_invariant

    def moved(I):
        s = RigidBodies(I, mass=cases.MASS, potential=cases.mutual)
        return mi.integrate(s, LGVI, x0, 0.01, 20).x[0][-1, 0, 0]

    I0 = jnp.asarray(np.asarray(system.inertia))
    step = 1e-6 * np.eye(6).reshape(6, 2, 3)[0]
    tangent = jnp.asarray(step / 1e-6)
    derivative = jax.jvp(moved, (I0,), (tangent,))[1]  # traced inertia
    # the central difference of the values its compiled program computes
    fd = (jax.jvp(moved, (I0 + step,), (tangent,))[0]
          - jax.jvp(moved, (I0 - step,), (tangent,))[0]) / 2e-6  # fmt: skip
    assert abs(derivative - fd) < 1e-9  # fd: ~1e-10 round-off
    sites = np.array([[0.0, 0.0, 0.1], [0.3, 0.2, 0.0], [-0.2, 0.1, 0.0]])

    x, _, R, _ = (jnp.asarray(a) for a in system.example_state())

    def forces(eps):  # what a run differentiates by ε: the forces and torques
        F, M = jax.grad(potentials.lennard_jones, argnums=(0, 1))(x, R, sites, eps, 0.5)
        return jnp.sum(F) + jnp.sum(M)

    assert np.all(np.isfinite(jax.grad(forces)(jnp.array([0.15, 0.0, 0.0]))))
    batch = tuple(jnp.stack([jnp.asarray(a), jnp.asarray(a)]) for a in x0)
    step = jax.jit(LGVI.step)
    (y, *_), st = step(system, batch, 0.01)
    (one, *_), _ = step(system, tuple(jnp.asarray(a) for a in x0), 0.01)
    assert bool(st.ok) and np.max(np.abs(y[1] - one)) < 1e-15
