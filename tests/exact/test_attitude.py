"""The exact attitude g(t) of the Euler top: against a DOP853 run of (m, g), orthogonal,
g(t) m(t) = g0 m0 to round-off for long times, and the discrete Lagrangian map's attitude
converges to it at order 2."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi
from tests.exact.test_euler_top import CASES

EXTRA = {
    "sphere": ((2.0, 2.0, 2.0), (0.3, 0.4, 0.5), 100.0),
    "on-an-axis": ((3.0, 2.0, 1.0), (0.0, 0.0, 0.7), 100.0),
    "saddle": ((3.0, 2.0, 1.0), (0.0, 0.7, 0.0), 100.0),
    "near-an-axis": ((3.0, 2.0, 1.0), (1e-9, -2e-9, 0.7), 100.0),
    "negative-components": ((3.0, 2.0, 1.0), (-0.6, -0.3, -0.5), 100.0),
}


def _g0():
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))
    return q * np.sign(np.linalg.det(q))


def _dop853(inertia, m0, g0, t):
    inertia = np.asarray(inertia, float)

    def rhs(_, z):  # ṁ = m × ω, ġ = g hat(ω), in NumPy
        m, g = z[:3], z[3:].reshape(3, 3)
        w = m / inertia
        W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        return np.concatenate([np.cross(m, w), (g @ W).ravel()])

    z0 = np.concatenate([m0, g0.ravel()])
    sol = solve_ivp(rhs, (0, t[-1]), z0, method="DOP853", rtol=1e-13, atol=1e-13, t_eval=t)
    assert sol.success
    return sol.y.T[:, 3:].reshape(len(t), 3, 3)


REGIMES = {**CASES, **EXTRA}


def _times(T):
    return np.linspace(0.0, T / 2, 6)


@pytest.fixture(scope="module")
def exact_attitudes():
    """The exact attitude of every regime at its test's times, computed together: one
    compiled program serves them all, also where the suite drops its compiled programs
    between tests to bound its memory (each test would trace and load it again)."""
    return {
        name: mi.exact.euler_top_attitude(mi.systems.EulerTop(inertia), m0, _g0(), _times(T))[1]
        for name, (inertia, m0, T) in REGIMES.items()
    }


@pytest.mark.parametrize("name", REGIMES)
def test_attitude_matches_dop853_in_every_regime(name, exact_attitudes):
    """Up to t = 50 (5 on the separatrix).  DOP853's own error at these tolerances reaches
    7.6e-13 by t = 100 on the sphere, whose exact attitude is a plain rotation, hence the
    bound; ``test_the_attitude_solves_its_equation_to_round_off`` goes to round-off."""
    inertia, m0, T = REGIMES[name]
    g0 = _g0()
    t = _times(T)
    g = exact_attitudes[name]
    assert np.max(np.abs(g - _dop853(inertia, np.array(m0, float), g0, t))) < 5e-12


def test_orthogonal_and_spatial_momentum_fixed_for_long_times():
    g0 = _g0()
    t = np.array([0.0, 1.0, -50.0, 1e3, 1e4])
    cases = [*CASES.values(), *EXTRA.values()]
    for inertia, m0, _ in cases:
        m, g = mi.exact.euler_top_attitude(mi.systems.EulerTop(inertia), m0, g0, t)
        assert np.max(np.abs(np.swapaxes(g, -1, -2) @ g - np.eye(3))) < 1e-14
        spatial = np.einsum("tij,tj->ti", g, m)
        drift = np.max(np.abs(spatial - g0 @ np.array(m0)), axis=1)
        assert np.all(drift < 1e-13 * (1 + np.abs(t) / 1e3)), drift
        assert np.max(np.abs(g[0] - g0)) < 1e-15


def test_the_attitude_solves_its_equation_to_round_off():
    """ġ = g hat(I⁻¹m) by forward-mode differentiation of the exact attitude in t, with no
    integrator in the loop: every regime, states 1e-9 from an axis included."""
    import jax
    import jax.numpy as jnp

    flow = mi.exact.euler_top_attitude_flow

    @jax.jit
    def residual(inertia, m0, g0, t):
        m, g = flow(inertia, m0, g0, t)
        dg = jax.jacfwd(lambda s: flow(inertia, m0, g0, s)[1])(t)
        return jnp.max(jnp.abs(dg - g @ mi.lie.hat(m / inertia)))

    g0 = jnp.asarray(_g0())
    states = [*CASES.values(), *EXTRA.values(), ((3.0, 2.0, 1.0), (0.7, 1e-9, -2e-9), 0)]
    worst = 0.0
    for inertia, m0, _ in states:
        for t in (0.3, 10.0, -70.0, 1e3):
            r = residual(jnp.asarray(inertia), jnp.asarray(m0, dtype=float), g0, t)
            worst = max(worst, float(r) / (1 + np.linalg.norm(m0)))
    assert worst < 2e-14, worst


def test_batches_and_bad_attitudes():
    top = mi.systems.EulerTop((3.0, 2.0, 1.0))
    m0 = np.array([[0.3, 0.5, 0.8], [0.8, 0.1, -0.4]])
    m, g = mi.exact.euler_top_attitude(top, m0, np.eye(3), np.linspace(0, 5, 7))
    assert m.shape == (2, 7, 3) and g.shape == (2, 7, 3, 3)
    one = mi.exact.euler_top_attitude(top, m0[1], np.eye(3), np.linspace(0, 5, 7))[1]
    assert np.allclose(g[1], one, atol=1e-15)
    with pytest.raises(mi.InputError, match="g0"):
        mi.exact.euler_top_attitude(top, m0[0], 2 * np.eye(3), [1.0])


def test_the_discrete_lagrangian_attitude_converges_at_order_two():
    J = np.array([0.2, 0.7, 1.3])
    body = mi.systems.FreeRigidBody(J)
    m0 = np.array([0.3, 0.5, 0.8])
    g0 = _g0()
    T = 2.0
    _, exact = mi.exact.euler_top_attitude(body.euler_top(), m0, g0, [T])
    errors = []
    for h in (0.04, 0.02, 0.01):
        n = round(T / h)
        run = mi.simulate(
            body, mi.integrators.DiscreteLagrangian(), mi.lie.hat(m0), h, n, n, orientation=g0
        )
        errors.append(np.max(np.abs(run.orientation[-1] - exact[0])))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - 2) < 0.02), orders


def test_exact_flow_integrator_is_the_exact_solution_with_its_attitude():
    top = mi.systems.EulerTop((3.0, 2.0, 1.0))
    m0 = np.array([0.3, 0.5, 0.8])
    g0 = _g0()
    run = mi.simulate(top, mi.integrators.ExactFlow(), m0, 0.1, 1000, 100, orientation=g0)
    m, g = mi.exact.euler_top_attitude(top, m0, g0, run.t)
    ulp_a_step = 1000 * np.finfo(float).eps  # 1000 composed steps against one evaluation
    assert np.max(np.abs(run.x - m)) < ulp_a_step
    assert np.max(np.abs(run.orientation - g)) < 5 * ulp_a_step
    # the n = 3 free body, M = hat(m)
    body = mi.systems.FreeRigidBody((0.2, 0.7, 1.3))
    M = mi.simulate(body, mi.integrators.ExactFlow(), mi.lie.hat(m0), 0.1, 100, 100).x[-1]
    ref = mi.exact.euler_top(body.euler_top(), m0, [10.0])[0]
    assert np.max(np.abs(mi.lie.vee(M) - ref)) < 1e-13
    four = mi.systems.FreeRigidBody((1, 2, 3, 4))
    assert "n = 3" in (mi.integrators.ExactFlow().cannot_serve(four) or "")
