"""Kahan's method for any quadratic vector field (one linear solve a step)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi

KAHAN = mi.integrators.Kahan()


def _random_field(n=4, seed=3):
    rng = np.random.default_rng(seed)
    return mi.systems.QuadraticField(
        0.3 * rng.standard_normal((n, n, n)),
        0.3 * rng.standard_normal((n, n)),
        0.2 * rng.standard_normal(n),
    )


def _final(system, integrator, x0, T, n):
    return mi.simulate(system, integrator, x0, T / n, int(n), int(n)).x[-1]


def test_generic_step_equals_the_euler_top_closed_form():
    top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
    field = mi.systems.QuadraticField(np.asarray(top.quadratic_form()[0]))
    m = np.random.default_rng(0).standard_normal((200, 3))
    a = mi.simulate(top, KAHAN, m, 0.1, 1).x[:, -1]
    b = mi.simulate(field, KAHAN, m, 0.1, 1).x[:, -1]
    assert np.max(np.abs(a - b) / np.abs(a).max(axis=-1, keepdims=True)) < 1e-15


def test_random_4d_field_is_order_2_and_symmetric():
    field = _random_field()
    x0 = np.array([0.3, -0.2, 0.5, 0.1])
    T = 1.0
    ref = solve_ivp(
        lambda t, x: np.asarray(field.vector_field(jnp.asarray(x))),
        (0, T),
        x0,
        method="DOP853",
        rtol=1e-13,
        atol=1e-14,
    ).y[:, -1]
    ns = np.array([20, 40, 80, 160])
    errors = [_final(field, KAHAN, x0, T, n) - ref for n in ns]
    errors = [np.max(np.abs(e)) for e in errors]
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-12)
    assert fit.used.sum() >= 3 and abs(fit.exponent - 2) < 0.2, (fit.exponent, errors)
    step = jax.jit(KAHAN.step)
    fwd, _ = step(field, jnp.asarray(x0), 0.1)
    back, _ = step(field, fwd, -0.1)
    assert np.max(np.abs(back - x0)) < 1e-15


def test_function_input_is_polarized_and_equals_the_tensor():
    field = _random_field(3, seed=5)
    Q = np.asarray(field.Q)
    as_function = mi.systems.QuadraticField(
        lambda x: jnp.einsum("ijk,j,k->i", Q, x, x), np.asarray(field.B), np.asarray(field.c)
    )
    assert np.max(np.abs(np.asarray(as_function.Q) - Q)) < 1e-15
    with pytest.raises(mi.InputError, match="homogeneous quadratic"):
        mi.systems.QuadraticField(lambda x: x * x + 1.0, dim=3)
    with pytest.raises(mi.InputError, match="dim"):
        mi.systems.QuadraticField(lambda x: x * x)


def test_riccati_map_is_exact_and_its_pole_is_a_failed_step():
    """ẋ = x²: Kahan's map x/(1 − hx) is the exact flow; at hx = 1 the solve is singular."""
    field = mi.systems.QuadraticField([[[1.0]]])
    traj = mi.simulate(field, KAHAN, [0.5], 0.01, 150, 10)
    exact = 0.5 / (1.0 - traj.t * 0.5)
    assert np.max(np.abs(traj.x[:, 0] - exact) / exact) < 1e-13
    with pytest.raises(mi.StepFailure, match="step 1 failed"):
        mi.simulate(field, KAHAN, [2.0], 0.5, 3)


def test_lotka_volterra_structure():
    lv = mi.systems.LotkaVolterra(1.0, 0.5, 0.8, 1.2)
    x = jnp.asarray([[1.3, 2.1], [0.4, 0.9]])
    grad = jax.vmap(jax.grad(lambda x: lv.hamiltonian(x)))(x)
    via_bracket = jnp.einsum("bij,bj->bi", lv.poisson_tensor(x), grad)
    assert np.max(np.abs(via_bracket - lv.vector_field(x))) < 1e-15
    Q, B, c = lv.quadratic_form()
    from mechint.systems.quadratic_field import field

    assert np.max(np.abs(field(Q, B, c, x) - lv.vector_field(x))) < 1e-15
    with pytest.raises(mi.InputError, match="> 0"):
        lv.validate_state([1.0, -1.0])


def test_kahan_orbits_do_not_spiral_on_lotka_volterra_explicit_euler_does():
    lv = mi.systems.LotkaVolterra(1.0, 1.0, 1.0, 1.0)
    x0 = [2.0, 1.0]
    h = 0.1
    traj = mi.simulate(lv, KAHAN, x0, h, 1_000_000, 1000)
    err = np.abs(lv.hamiltonian(traj.x) - lv.hamiltonian(jnp.asarray(x0)))
    slope = np.polyfit(traj.t, err, 1)[0]
    band = float(np.max(err))
    assert band < 5e-3  # O(h²), bounded
    assert abs(slope) * traj.t[-1] < 0.05 * band, (slope * traj.t[-1], band)
    assert np.max(err[-100:]) < 1.5 * np.max(err[:100])
    # explicit Euler spirals outward: V grows monotonically, orbit after orbit
    euler = mi.simulate(lv, mi.integrators.ExplicitEuler(), x0, h, 500, 5)
    V = np.asarray(lv.hamiltonian(euler.x))
    peaks = V[::20]
    assert np.all(np.diff(peaks) > 0) and V[-1] - V[0] > 20 * band
