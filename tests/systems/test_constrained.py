"""``systems.Constrained``: the manifold, the projection, the multipliers, the declared
momentum maps, and every bad input refused before any compile."""

from typing import cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.errors import InputError
from tests.systems.constrained_cases import double_pendulum, spherical_pendulum

R = mi.integrators.Rattle()


def _free(dof=3, T=None):
    return mi.systems.SeparableHamiltonian(
        T or (lambda p: 0.5 * jnp.sum(p**2)), lambda q: q[-1], dof=dof
    )


def _sphere(q):
    return jnp.sum(q**2) - 1.0


def test_the_manifold_its_residuals_and_the_multipliers():
    """Hanging at rest: λ = mγ/(2L) holds the weight (G = 2qᵀ); a state from angles is on
    T*Q to round-off, and the residual invariants are 0 there."""
    system = mi.systems.PendulumChain([2.0], [1.5], gravity=3.0, dim=3)
    rest = (np.array([0.0, 0.0, -1.5]), np.zeros(3))
    assert float(system.multipliers(rest)[0]) == pytest.approx(2.0 * 3.0 / (2 * 1.5), rel=1e-15)
    q, p = system.vector_field(rest)
    assert np.max(np.abs(np.asarray(q))) == 0 and np.max(np.abs(np.asarray(p))) < 1e-15
    system, x0 = double_pendulum()
    inv = system.invariants(x0)
    assert float(inv["constraints"]) < 1e-15 and float(inv["constraint_rates"]) < 1e-15
    assert system.m == 2 and system.dof == 4 and system.tangent_basis(x0).shape == (8, 4)


def test_project_moves_a_state_onto_the_manifold_in_the_metric_of_M():
    system, x0 = double_pendulum()
    rng = np.random.default_rng(1)
    off = (x0[0] + 0.1 * rng.standard_normal(4), x0[1] + rng.standard_normal(4))
    q, p = system.project(off)
    g, g_dot = (np.asarray(a) for a in system.residuals((q, p)))
    assert np.max(np.abs(g)) < 1e-14 and np.max(np.abs(g_dot)) < 1e-14
    # p moved along the constraint forces Gᵀν only (the M⁻¹-orthogonal projection)
    G = np.asarray(system.constraint_jacobian(jnp.asarray(q)))
    nu, *_ = np.linalg.lstsq(G.T, off[1] - p, rcond=None)
    assert np.max(np.abs(G.T @ nu - (off[1] - p))) < 1e-13
    batch = system.project(tuple(np.stack([a, a]) for a in off))
    np.testing.assert_allclose(batch[0][1], q, rtol=1e-14)
    with pytest.raises(InputError, match="x0: could not be projected"):
        system.project((np.full(4, 1e-9), np.zeros(4)))  # G W Gᵀ singular at q = 0


def test_a_state_off_the_manifold_is_refused_with_its_residuals():
    system, x0 = double_pendulum()
    with pytest.raises(
        InputError, match=r"x0: is off the constraint manifold: max \|g\(q\)\| = 0,"
    ):
        mi.simulate(system, R, (x0[0], x0[1] + 1.0), 0.01, 1)
    bad = (np.stack([x0[0], x0[0] * 1.05]), np.stack([x0[1], x0[1]]))
    with pytest.raises(InputError, match=r"\(member 1\).*system.project\(x0\)"):
        mi.simulate(system, R, bad, 0.01, 1)


def test_a_start_where_the_constraints_lose_rank_is_refused():
    """On the cone q₀² + q₁² − q₂² = 0 (full rank away from its vertex), a state at the
    vertex is on the manifold with G = 0 there: refused naming x0 (RATTLE's first step
    would fail on a singular G W Gᵀ); in a batch, that member fails at its first step
    with its own record and the others run. Constraints of scales
    orders apart (gradients of 10⁻⁵ and 10³) are not taken for rank-deficient."""
    cone = mi.systems.Constrained(_free(), lambda q: (q[0] ** 2 + q[1] ** 2 - q[2] ** 2)[None])
    vertex = (np.zeros(3), np.array([1.0, 0.0, 1.0]))
    with pytest.raises(InputError, match=r"x0: is at a singular point .* rank 0 < m = 1"):
        mi.simulate(cone, R, vertex, 0.01, 1)
    # in a batch, that member fails at its first step with its own record; the others run
    ok = (np.array([0.6, 0.8, 1.0]), np.array([0.8, -0.6, 0.0]))
    batch = tuple(np.stack(pair) for pair in zip(ok, vertex, strict=True))
    run = mi.simulate(cone, R, batch, 0.01, 5, throw=False)
    assert np.array_equal(run.failed_step, [-1, 1]) and run.reason[1] == "not-converged"
    scaled = mi.systems.Constrained(
        _free(), lambda q: jnp.stack([1e-5 * (q[0] - 0.1), 1e3 * (q[1] ** 2 + q[2] ** 2 - 1.0)])
    )
    start = (np.array([0.1, 0.6, 0.8]), np.array([0.0, 0.8, -0.6]))
    assert scaled.validate_state(start)[1] is False


def _raises(match, *args, **kwargs):
    with pytest.raises(InputError, match=match):
        mi.systems.Constrained(*args, **kwargs)


def test_bad_input_is_refused_naming_the_parameter():
    _raises(r"system: .*not a separable", mi.systems.Hamiltonian(lambda q, p: q @ p, 3), _sphere)
    _raises(r"system: .*time dependent", mi.systems.SeparableHamiltonian(
        lambda p: 0.5 * p @ p, lambda t, q: q[0] * t, 3, time_dependent=True), _sphere)  # fmt: skip
    _raises(r"system: its kinetic energy T\(p\) is not quadratic",
            _free(T=lambda p: jnp.sum(p**4)), _sphere)  # fmt: skip
    _raises("constraints: must be a function", _free(), 3.0)
    _raises(r"constraints: must return shape \(m,\)", _free(), lambda q: jnp.outer(q, q))
    _raises("constraints: gives m = 3 constraints on 3 coordinates", _free(), lambda q: q)
    _raises("constraints: could not be evaluated", _free(), lambda q: q[7] @ q[:2])
    _raises("constraints: .*not finite", _free(), lambda q: jnp.log(-jnp.sum(q**2))[None])
    _raises(r"constraints: are redundant: G = dg/dq has rank 1 < m = 2",
            _free(), lambda q: jnp.stack([_sphere(q), 2.0 * _sphere(q)]))  # fmt: skip
    _raises("params: ", _free(), lambda q, k: _sphere(q) * k, params="a")
    _raises("momenta: must be a dict", _free(), _sphere, momenta=[lambda q, p: 0.0])
    _raises(r"momenta: names \['H'\] are taken", _free(), _sphere, momenta={"H": lambda q, p: 0.0})
    _raises(
        "momenta: Lx is not conserved",
        _free(),
        _sphere,
        momenta={"Lx": lambda q, p: q[1] * p[2] - q[2] * p[1]},
    )  # gravity breaks it
    _raises("momenta: E is not a momentum map of a linear symmetry", _free(), _sphere,
            momenta={"E": lambda q, p: 0.5 * p @ p + q[2]})  # fmt: skip
    system = mi.systems.Constrained(
        _free(), _sphere, momenta={"Lz": lambda q, p: q[0] * p[1] - q[1] * p[0]}
    )
    assert system.momentum_maps == ("Lz",) and system.m == 1
    with pytest.raises(InputError, match="lengths"):
        mi.systems.PendulumChain([1.0, 1.0], [1.0, -1.0])
    with pytest.raises(InputError, match="dim"):
        mi.systems.PendulumChain([1.0], dim=4)


def test_params_are_leaves_one_compiled_run_serves_every_value():
    """Two rod lengths run by one compiled program (the lengths are traced), each on its
    own manifold."""
    runs = []
    for length in (1.0, 2.5):
        system = mi.systems.PendulumChain([1.0], [length], gravity=1.0, dim=3)
        x0 = mi.systems.hanging_state(system, [0.5], [0.0], [0.0], [1.0])
        runs.append(mi.simulate(system, R, x0, 0.01, 100, 100))
        q = np.asarray(runs[-1].x[0][-1])
        assert abs(np.linalg.norm(q) - length) < 1e-14 * length
    assert not np.allclose(np.asarray(runs[0].x[0]), np.asarray(runs[1].x[0]))


@pytest.mark.parametrize("what", ["lengths", "gravity", "angles"])
def test_gradients_through_a_run_match_finite_differences(what):
    """jax.grad of a final coordinate of 200 RATTLE steps of the double pendulum (the
    structured derivative of chunks of ≥ 64 steps) with respect to the rods' length, the
    gravity and the starting angle, against central differences."""

    def final(theta):
        lengths = jnp.stack([1.0, theta]) if what == "lengths" else jnp.array([1.0, 0.5])
        gravity = theta if what == "gravity" else 9.81
        angles = jnp.stack([theta, -0.5]) if what == "angles" else jnp.array([1.0, -0.5])
        system = mi.systems.PendulumChain([1.0, 2.0], lengths, gravity, dim=2)
        x0 = mi.systems.hanging_state(system, angles, jnp.array([0.3, 1.2]))
        return mi.integrate(system, R, x0, 0.01, 200).x[0][-1, 3]

    theta = {"lengths": 0.5, "gravity": 9.81, "angles": 1.0}[what]
    grad = float(jax.grad(final)(theta))
    eps = 1e-6 * theta
    fd = (float(final(theta + eps)) - float(final(theta - eps))) / (2 * eps)
    assert grad == pytest.approx(fd, rel=1e-7, abs=1e-9)


def test_an_event_on_a_constrained_run():
    """The spherical pendulum's crossings of the plane x = 0, located on RATTLE's runs at
    h = 0.01 and 0.0025 (one compiled program): they agree to RATTLE's O(h²) phase error."""
    system, x0 = spherical_pendulum()
    event = mi.Event(lambda t, x: x[0][0], name="x")
    times = []
    for integrator, h in ((R, 0.01), (mi.integrators.Composition(R, "kahan-li8"), 0.005)):
        n = round(10.0 / h)
        traj = mi.simulate(system, integrator, x0, h, n, n, events=[event])
        c = traj.events["x"]
        times.append(np.asarray(c.t)[: int(c.count)])
    assert len(times[0]) == len(times[1]) >= 2
    assert np.max(np.abs(times[0] - times[1])) < 1e-3  # RATTLE's O(h²) phase error


def test_reverse_mode_through_runs_equals_a_plain_scan_for_every_parameter():
    """jax.grad with respect to all the double pendulum's parameters and h at once,
    through ``integrate`` (chunks of ≥ 64 steps take the structured derivative) and
    through a plain ``lax.scan`` of the step: the same to 1e-12.  (XLA's CPU compiler
    once miscompiled the transposed pivoting of Newton's implicit-function solve here:
    24-45 % off; ``solvers.newton`` now transposes it as a solve with Jᵀ.)"""
    R = mi.integrators.Rattle()

    def build(theta):
        system = mi.systems.PendulumChain(theta[0:2], theta[2:4], theta[4], dim=2)
        return system, mi.systems.hanging_state(
            system, jnp.array([1.0, -0.5]), jnp.array([0.3, 1.2])
        )

    def by_integrate(theta):
        system, x0 = build(theta)
        return mi.integrate(system, R, x0, theta[5], 200).x[0][-1, 3]

    def by_scan(theta):
        system, x0 = build(theta)
        step = lambda x, _: (R.step(system, x, theta[5])[0], None)  # noqa: E731
        return cast(tuple, jax.lax.scan(step, x0, None, 200)[0])[0][3]

    theta = jnp.array([1.0, 2.0, 1.0, 0.5, 9.81, 0.01])
    a, b = np.asarray(jax.grad(by_integrate)(theta)), np.asarray(jax.grad(by_scan)(theta))
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_review_cases_a_state_at_rest_float32_and_bad_sizes():
    """RATTLE's step from a chain hanging still (rates that are rounding of p ≈ 0)
    continues; a float32 run stays float32 on the manifold; a squared constraint, a
    gravity of two numbers and oversized systems are refused naming the parameter."""
    R = mi.integrators.Rattle()
    chain = mi.systems.PendulumChain([1.0, 2.0], [1.0, 0.5], 9.81, dim=2)
    rest = mi.systems.hanging_state(chain, [0.0, 0.0])
    one = mi.simulate(chain, R, rest, 0.01, 1, 1)
    again = mi.simulate(chain, R, tuple(np.asarray(a[-1]) for a in one.x), 0.01, 10, 10)
    assert int(np.sum(again.failed)) == 0
    system, x0 = double_pendulum()
    run = mi.simulate(system, R, x0, 0.01, 20, 10, dtype="float32")
    assert run.x[0].dtype == np.float32 and np.all(np.isfinite(np.asarray(run.x[0])))
    mi.simulate(system, R, tuple(np.asarray(a[-1]) for a in run.x), 0.01, 1, 1, dtype="float32")
    _raises(
        "constraints: G = dg/dq has rank 0 < m = 1 on the manifold",
        _free(),
        lambda q: _sphere(q) ** 2,
    )
    with pytest.raises(InputError, match="gravity: must be one finite number"):
        mi.systems.PendulumChain([1.0], gravity=np.array([1.0, 2.0]))
    with pytest.raises(InputError, match="masses: at most 1000 rods"):
        mi.systems.PendulumChain(np.ones(1001))
    with pytest.raises(InputError, match="molecules: at most 64"):
        mi.systems.RigidWater(65)
    with pytest.raises(InputError, match="x0: is off the constraint manifold"):
        mi.diagnostics.symplectic_defects(system, R, (x0[0], x0[1] + 1.0), [0.1])
