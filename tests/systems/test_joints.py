"""Rigid bodies held by spherical joints (``systems/joints.py``) under the constrained
LGVI, against RATTLE on the same bodies in matrix variables (``MatrixBodies``: shared
with the LGVI no code past the potential), SciPy's DOP853 on the index-1 equations, and
the statics of a hanging chain."""

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi
from mechint.errors import InputError, UnsupportedError
from mechint.systems import Joint, MatrixBodies, link_chain, link_chain_state
from mechint.systems.matrix_bodies import InMatrixVariables
from tests.conftest import cache_size

LGVI = mi.integrators.LieGroupVariational()
# RATTLE on the matrix variables, whose multipliers mix sizes (1/J of a slender body
# beside 1/m): its default solver (done where the updates stall at the rounding)
MATRIX_RATTLE = mi.integrators.Rattle()


def _tilted_chain(links=3):
    system = link_chain(links, length=1.0, radius=0.05, mass=1.0, gravity=9.81)
    k = np.arange(links)
    spins = np.stack([0.3 * np.cos(k), 0.8 * np.sin(k + 1), 0.05 * np.ones(links)], -1)
    return system, link_chain_state(system, 0.5 + 0.3 * k, 0.4 * k, spins)


def _site_springs(x, R):
    """Springs between sites of bodies 0 and 2 and of 1 and 2: invariant under
    translations and rotations."""
    a = x[0] + R[0] @ jnp.array([0.3, -0.2, 0.1])
    b = x[2] + R[2] @ jnp.array([-0.1, 0.4, 0.2])
    c = x[1] + R[1] @ jnp.array([0.2, 0.2, -0.3])
    return 2.0 * jnp.sum((a - b) ** 2) + 0.7 * jnp.sum((c - b) ** 2)


def _floating():
    """Three bodies with full inertia tensors (not principal), joined in a free chain,
    with springs: P and L are kept."""
    rng = np.random.default_rng(3)
    tensors = []
    for moments in ((1.0, 1.4, 2.1), (0.8, 1.5, 1.9), (1.2, 1.3, 2.0)):
        Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        tensors.append(Q @ np.diag(moments) @ Q.T)
    joints = [Joint(0, (0.5, 0.1, 0.0), 1, (-0.4, 0.0, 0.2)),
              Joint(1, (0.3, -0.5, 0.1), 2, (0.0, 0.45, -0.2))]  # fmt: skip
    system = mi.systems.RigidBodies(
        tensors, [1.0, 2.0, 1.5], _site_springs, joints=joints,
        translation_invariant=True, rotation_invariant=True,
    )  # fmt: skip
    return system, system.example_state()


def test_a_chain_hanging_at_rest_carries_its_weight():
    """Joint j of a chain hanging still carries the weight of the links below it: λ_j =
    −(n − j) m γ e_z (body j feels +(n − j) m γ e_z at its top), and a run stays at rest."""
    system = link_chain(4, length=0.3, radius=0.02, mass=0.5, gravity=9.81)
    x0 = link_chain_state(system, np.zeros(4))
    lam = np.asarray(system.multipliers(system.validate_state(x0)[0]))
    want = np.zeros((4, 3))
    want[:, 2] = -np.arange(4, 0, -1) * 0.5 * 9.81
    assert np.max(np.abs(lam - want)) < 1e-13 * 4 * 0.5 * 9.81
    traj = mi.simulate(system, LGVI, x0, 0.01, 100, 100)
    assert float(np.max(np.abs(np.asarray(traj.x[1])))) < 1e-14


def test_lgvi_with_joints_is_rattle_on_the_matrix_variables():
    """The constrained LGVI on bodies with full inertia tensors, joints between bodies and
    springs equals RATTLE on (x, R) under RᵀR = 1 and the joints, 200 steps, to round-off;
    both keep the joints, P and L."""
    system, x0 = _floating()
    matrix = MatrixBodies(system)
    h, n = 0.02, 200
    bodies = mi.simulate(system, LGVI, x0, h, n, 20)
    rattle = mi.simulate(matrix, MATRIX_RATTLE, matrix.from_bodies(x0), h, n, 20)
    assert int(bodies.failed_step) == int(rattle.failed_step) == -1
    for a, b in zip(bodies.x, matrix.to_bodies(rattle.x), strict=True):
        assert float(jnp.max(jnp.abs(a - b))) < 1e-12
    kept = mi.diagnostics.preserved_errors(bodies)
    for name in ("Px", "Py", "Pz", "Lx", "Ly", "Lz", "constraints", "constraint_rates"):
        assert np.max(kept[name]) < 1e-13, (name, kept[name])
    assert np.max(mi.diagnostics.invariant_errors(system, bodies)["H"]) > 1e-8


def test_order_two_and_four_against_dop853_on_the_index_one_equations():
    """A tilted, spinning 3-link chain at T = 0.5: the LGVI converges with order 2 and
    its Yoshida composition with order 4 to DOP853 (rtol 1e-13) on the index-1 field."""
    system, x0 = _tilted_chain()
    state = system.validate_state(x0)[0]
    field = jax.jit(lambda z: system.coordinates(system.vector_field(system.from_coordinates(z))))
    z0 = np.asarray(system.coordinates(state))
    ref = solve_ivp(lambda t, z: np.asarray(field(z)), (0, 0.5), z0, method="DOP853",
                    rtol=1e-13, atol=1e-13).y[:, -1]  # fmt: skip
    yoshida = mi.integrators.Composition(LGVI, "yoshida4")
    for integrator, order, ns in ((LGVI, 2, (20, 40, 80)), (yoshida, 4, (10, 20, 40))):
        errors = []
        for n in ns:
            end = mi.simulate(system, integrator, x0, 0.5 / n, n, n).x
            z = np.asarray(system.coordinates(tuple(a[-1] for a in end)))
            errors.append(np.max(np.abs(z - ref)))
        fit = mi.diagnostics.fit_power_law(0.5 / np.array(ns), errors, floor=1e-11)
        assert abs(fit.exponent - order) < 0.25, (integrator.name, fit.exponent, errors)


def test_joints_kept_and_energy_bounded_over_a_long_run():
    """A spinning rigid double pendulum in space (two links, one joint to the ground),
    10⁵ steps of 1 ms: the joints at round-off at every saved step, the energy in a band
    with no drift (a linear fit's change < 5 % of the band; over 10⁶ steps the benchmark
    measures 3 %)."""
    system = link_chain(2, length=1.0, radius=0.05, mass=1.0, gravity=9.81)
    spins = np.array([[0.3, 0.1, 0.05], [-0.2, 0.4, 0.1]])
    x0 = link_chain_state(system, np.array([1.0, -0.5]), np.array([0.0, 0.8]), spins)
    traj = mi.simulate(system, LGVI, x0, 1e-3, 100_000, 100)
    assert int(traj.failed_step) == -1
    inv = system.invariants(traj.x)
    assert float(jnp.max(inv["constraints"])) < 1e-14
    assert float(jnp.max(inv["constraint_rates"])) < 1e-14
    H = np.asarray(inv["H"])
    band = H.max() - H.min()
    t = np.asarray(traj.t)
    trend = np.polyfit(t, H, 1)[0] * (t[-1] - t[0])
    assert 0 < band < 1e-4 * abs(H[0])
    assert abs(trend) < 0.05 * band, (trend, band)


def test_symplectic_on_the_manifold_in_matrix_variables():
    """The jointed LGVI, read in the matrix variables, keeps the canonical form on the
    tangent space of the constraint manifold to round-off."""
    system, x0 = _tilted_chain()
    matrix = MatrixBodies(system)
    y0 = matrix.from_bodies(system.validate_state(x0)[0])
    defects, _ = mi.diagnostics.symplectic_defects(
        matrix, InMatrixVariables(LGVI), y0, [0.01, 0.05]
    )
    assert np.max(defects) < 1e-12, defects
    checks = {row.name: row for row in mi.diagnostics.check(system, LGVI, x0, 0.01)}
    assert checks["symplectic"].defect < 1e-12 and "Poisson" not in checks
    assert checks["integral constraints"].defect < 1e-13


def test_gradients_through_a_jointed_run_match_finite_differences():
    """jax.grad of a link's final height after 100 steps with respect to the gravity
    (a parameter of the potential), against central differences."""
    system0, x0 = _tilted_chain()

    def final(gravity):
        params = {"gravity": gravity, "mass": system0.params["mass"]}
        system = mi.systems.RigidBodies(system0.inertia, system0.mass, system0.potential,
                                        params, joints=system0.joints)  # fmt: skip
        return mi.integrate(system, LGVI, x0, 0.01, 100).x[0][-1, 2, 2]

    grad = float(jax.grad(final)(9.81))
    eps = 1e-5
    fd = (float(final(9.81 + eps)) - float(final(9.81 - eps))) / (2 * eps)
    assert grad == pytest.approx(fd, rel=1e-6)


def test_project_places_a_state_on_the_joints():
    """A chain state moved off its joints is refused with its residuals, and
    ``project`` returns it within round-off, moved by about the perturbation."""
    system, x0 = _tilted_chain()
    bad = (x0[0] + 1e-3, x0[1] + 0.01, x0[2], x0[3])
    with pytest.raises(InputError, match="off the joints' manifold"):
        system.validate_state(bad)
    fixed = system.project(bad)
    system.validate_state(fixed)
    assert 1e-4 < np.max(np.abs(fixed[0] - bad[0])) < 1e-2


def test_projecting_compiles_once_for_every_chain_of_one_structure():
    """``project`` (and ``example_state``, which projects) of chains of one structure
    (bodies, joints and their sites) and other masses and gravity run one compiled
    program: a call takes a millisecond, not the third of a second of a compile (a chain
    of 5 links, 2-core CPU)."""
    from mechint.systems import joints as jointing

    cast(Any, jointing.projected).clear_cache()  # JAX's (untyped) method
    chains = [link_chain(3), link_chain(3, mass=0.2, gravity=3.7)]
    states = [chain.example_state() for chain in chains]
    for chain, state in zip(chains, states, strict=True):
        pos, mom, R, Pi = state
        moved = chain.project((pos + 1e-4, mom + 1e-3, R, Pi))
        chain.validate_state(moved)
    assert cache_size(jointing.projected) == 1


def test_bad_joints_and_maps_that_do_not_know_joints():
    """Each bad input names its parameter, before any compile."""
    inertia, mass = [(1.0, 1.5, 2.0)] * 2, [1.0, 1.0]
    cases = [
        ([Joint(0, (0, 0, 1), 2, (0, 0, 0))], r"joints\[0\] \(b\): there is no body 2"),
        ([Joint(1, (0, 0, 1), 1, (0, 0, 0))], "joins body 1 to itself"),
        ([(0, (0, 0), "ground", (0, 0, 0))], r"joints \(site_a\): must be 3 finite numbers"),
        ([(0, (0, 0, 1), "floor", (0, 0, 0))], r"joints \(b\): must be a body's index"),
    ]  # fmt: skip
    for joints, message in cases:
        with pytest.raises(InputError, match=message):
            mi.systems.RigidBodies(inertia, mass, joints=joints)
    with pytest.raises(InputError, match="centres are fixed"):
        mi.systems.RigidBodies(inertia, None, joints=[Joint(0, (0, 0, 1), 1, (0, 0, 0))])
    with pytest.raises(InputError, match="translation_invariant"):
        mi.systems.RigidBodies(inertia, mass, lambda x, R: jnp.sum(x[:, 2]),
                               joints=[Joint(0, (0, 0, 1), "ground", (0, 0, 0))],
                               translation_invariant=True)  # fmt: skip
    system, x0 = _tilted_chain()
    assert system.constrained and not system.translation_invariant
    for integrator in (mi.integrators.Splitting(), mi.integrators.RK4()):
        with pytest.raises(UnsupportedError, match="constrain"):
            mi.simulate(system, integrator, x0, 0.01, 10)
    with pytest.raises(InputError, match="system: has constraints"):
        mi.systems.Forced(system, lambda t, x: jnp.zeros(54))
    planar = mi.systems.RigidBodies([(1.0, 1.0, 2.0)] * 2, mass,
                                    joints=[Joint(0, (0, 0, 1), 1, (0, 0, 0))])  # fmt: skip
    with pytest.raises(InputError, match="planar"):
        MatrixBodies(planar)


def test_float32_runs_stay_float32_on_the_joints():
    """A chain given and run in float32: accepted at float32's round-off (its rounding
    of a state on the joints is not refused), the run stays float32 and keeps the joints
    to a few float32 ulps of the chain's size."""
    system, x0 = _tilted_chain()
    x32 = tuple(np.asarray(a, np.float32) for a in x0)
    system.validate_state(x32)
    traj = mi.simulate(system, LGVI, x32, 0.01, 200, 20, dtype="float32")
    assert traj.x[0].dtype == np.float32 and int(traj.failed_step) == -1
    inv = traj.invariants()  # of the run's system, cast to float32
    assert float(np.max(inv["constraints"])) < 8 * np.finfo(np.float32).eps * 3.0
