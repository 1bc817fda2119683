"""Canonical systems: structure, first integrals, exact solutions, input errors."""

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi

S = mi.systems

MODELS = [
    (S.HarmonicOscillator([1.0, 2.5]), ([0.3, -1.0], [0.5, 0.2])),
    (S.Pendulum(1.7), ([2.0], [0.3])),
    (S.Kepler(1.3), ([0.9, -0.2], [0.3, 1.1])),
    (S.HenonHeiles(0.8), ([0.1, 0.2], [-0.3, 0.15])),
]
IDS = ["oscillator", "pendulum", "kepler", "henon-heiles"]


@pytest.mark.parametrize(("system", "x"), MODELS, ids=IDS)
def test_vector_field_is_canonical_gradient_of_H(system, x):
    """(q̇, ṗ) = 𝕁∇H, with ∇H from the generic Hamiltonian(H) of the same energy."""
    x = tuple(jnp.asarray(a) for a in x)
    generic = S.Hamiltonian(system.energy, system.dof)
    z = system.coordinates(x)
    Pi = system.poisson_tensor(x)
    grad = np.concatenate(generic.gradient(*x))
    assert np.max(np.abs(Pi @ grad - system.coordinates(system.vector_field(x)))) < 1e-15
    assert np.max(np.abs(system.coordinates(system.from_coordinates(z)) - z)) == 0.0


@pytest.mark.parametrize(("system", "x"), MODELS, ids=IDS)
def test_first_integrals_are_constant_along_dop853(system, x):
    field = jax.jit(lambda z: system.coordinates(system.vector_field(system.from_coordinates(z))))

    def f(t, z):
        return np.asarray(field(jnp.asarray(z)))

    z0 = np.concatenate(x)
    sol = solve_ivp(f, (0, 5), z0, method="DOP853", rtol=1e-13, atol=1e-13, t_eval=[0, 2.5, 5])
    values = system.invariants(system.from_coordinates(jnp.asarray(sol.y.T)))
    for name, v in values.items():
        v = np.asarray(v)
        assert np.max(np.abs(v - v[0])) < 1e-11 * max(1.0, abs(v[0])), name


def test_kepler_exact_solution_against_dop853_and_its_invariants():
    kepler = S.Kepler(1.3)
    x0 = (np.array([0.9, -0.2]), np.array([-0.3, -1.1]))  # clockwise (L < 0)
    t = np.linspace(0, 30, 13)
    q, p = mi.exact.kepler(kepler, x0, t)
    mu = 1.3

    def f(t, z):
        return np.r_[z[2:], -mu * z[:2] / np.linalg.norm(z[:2]) ** 3]

    sol = solve_ivp(f, (0, 30), np.r_[x0], method="DOP853", rtol=1e-13, atol=1e-13, t_eval=t)
    assert np.max(np.abs(sol.y.T - np.c_[q, p])) < 1e-9  # DOP853's own error over 30 units
    inv = kepler.invariants((jnp.asarray(q), jnp.asarray(p)))
    for name, v in inv.items():
        v = np.asarray(v)
        assert np.max(np.abs(v - v[0])) < 1e-13, name
    # the orbit closes after one period 2π a^{3/2}/√μ
    a = -mu / (2 * float(kepler.hamiltonian(tuple(jnp.asarray(v) for v in x0))))
    period = 2 * np.pi * a**1.5 / np.sqrt(mu)
    qT, pT = mi.exact.kepler(kepler, x0, period)
    assert np.max(np.abs(np.r_[qT, pT] - np.r_[x0[0], x0[1]])) < 1e-13


def test_periapsis_state_has_the_requested_orbit():
    kepler = S.Kepler(2.0)
    q, p = kepler.periapsis_state(0.6, a=1.5)
    inv = kepler.invariants((jnp.asarray(q), jnp.asarray(p)))
    e = np.hypot(float(inv["A1"]), float(inv["A2"])) / 2.0
    assert abs(e - 0.6) < 1e-15
    assert abs(float(kepler.hamiltonian((jnp.asarray(q), jnp.asarray(p)))) + 2.0 / 3.0) < 1e-15


def test_harmonic_oscillator_exact_solution():
    ho = S.HarmonicOscillator([1.0, 3.0])
    x0 = ([1.0, 0.2], [0.0, -0.5])
    q, _ = mi.exact.harmonic_oscillator(ho, x0, np.array([0.0, 0.7]))
    expect_q = np.array([np.cos(0.7), 0.2 * np.cos(2.1) - 0.5 / 3 * np.sin(2.1)])
    assert np.max(np.abs(q[1] - expect_q)) < 1e-15
    assert np.max(np.abs(q[0] - x0[0])) == 0.0


def test_input_errors_name_the_parameter():
    with pytest.raises(mi.InputError, match=r"omega.*> 0"):
        S.Pendulum(-1.0)
    with pytest.raises(mi.InputError, match="mu"):
        S.Kepler(cast(Any, [1.0, 2.0]))  # not a scalar, on purpose
    with pytest.raises(mi.InputError, match=r"T.*scalar"):
        S.SeparableHamiltonian(lambda p: p**2, lambda q: jnp.sum(q), 2)
    with pytest.raises(mi.InputError, match=r"V.*function"):
        S.SeparableHamiltonian(lambda p: jnp.sum(p**2), 3.0)
    with pytest.raises(mi.InputError, match=r"H.*could not be evaluated"):
        S.Hamiltonian(lambda q, p: q @ jnp.ones(3) + p[0], 2)
    with pytest.raises(mi.InputError, match=r"q.*2 numbers"):
        S.Kepler().validate_state(([1.0, 0.0, 0.0], [0.0, 1.0]))
    with pytest.raises(mi.InputError, match="singularity"):
        S.Kepler().validate_state(([0.0, 0.0], [0.0, 1.0]))
    with pytest.raises(mi.InputError, match=r"e.*bound"):
        S.Kepler().periapsis_state(1.0)
    with pytest.raises(mi.InputError, match="not bound"):
        mi.exact.kepler(S.Kepler(), ([1.0, 0.0], [0.0, 2.0]), 1.0)
    with pytest.raises(mi.UnsupportedError, match="StormerVerlet cannot advance EulerTop"):
        mi.simulate(S.EulerTop(), mi.integrators.StormerVerlet(), [1.0, 0.0, 0.0], 0.1, 1)


# -- time-dependent Hamiltonians on the extended phase space ---------------------------------
def _T(p, prm=None):
    return 0.5 * jnp.sum(p**2)


def _V_driven(t, q, prm):
    """The driven oscillator: V(t, q) = q²/2 − A q cos(ω t)."""
    return 0.5 * jnp.sum(q**2) - prm["A"] * jnp.sum(q) * jnp.cos(prm["w"] * t)


def _H_driven(t, q, p, prm):
    return _T(p) + _V_driven(t, q, prm)


DRIVEN = {"A": 0.7, "w": 1.9}
SEPARABLE_DRIVEN = S.SeparableHamiltonian(_T, _V_driven, dof=1, params=DRIVEN, time_dependent=True)
GENERAL_DRIVEN = S.Hamiltonian(_H_driven, dof=1, params=DRIVEN, time_dependent=True)


def _driven_exact(t, t0, q0, p0, A=DRIVEN["A"], w=DRIVEN["w"]):
    """q'' + q = A cos(ω t) from (q0, p0) at t0 (ω ≠ 1), and e = −∫∂V/∂t dt, from
    K = H(t) + e constant with e(t0) = 0."""
    c = A / (1.0 - w**2)
    a = q0 - c * np.cos(w * t0)
    b = p0 + c * w * np.sin(w * t0)
    s = t - t0
    q = a * np.cos(s) + b * np.sin(s) + c * np.cos(w * t)
    p = -a * np.sin(s) + b * np.cos(s) - c * w * np.sin(w * t)
    H = lambda t, q, p: 0.5 * p**2 + 0.5 * q**2 - A * q * np.cos(w * t)  # noqa: E731
    return q, p, H(t0, q0, p0) - H(t, q, p)


@pytest.mark.parametrize("system", [SEPARABLE_DRIVEN, GENERAL_DRIVEN], ids=["separable", "general"])
def test_time_dependent_hamiltonian_against_the_exact_driven_oscillator(system):
    """q'' + q = A cos(ω t) from t0 = 0.4 as H(t, q, p) on the extended phase space: the
    state of dof 1 is extended with t = t0 and e = 0, the time advances with the steps,
    K = H(t) + e is the invariant H (kept by the AVF to round-off of the coordinates:
    2.9e-13 at t = 500, where the time's ulp moves H by 1.5e-13; bounded by the
    symplectic maps), and the orders against the exact solution (with e = −∫∂V/∂t dt)
    are 2 (Störmer–Verlet, explicit on the separable K; the midpoint rule on the other)
    and 4 (Yoshida's composition)."""
    I, D = mi.integrators, mi.diagnostics
    t0, x0, T = 0.4, ([0.8], [-0.3]), 3.0
    base = I.StormerVerlet() if system is SEPARABLE_DRIVEN else I.ImplicitMidpoint()
    for integrator, order in ((base, 2), (I.Composition(base, "yoshida4"), 4)):
        errors = []
        ns = np.array([30, 60, 120, 240])
        for n in ns:
            sol = mi.simulate(system, integrator, x0, T / n, int(n), int(n), t0=t0)
            (q, t), (p, e) = (np.asarray(a)[-1] for a in sol.x)  # noqa: RUF100
            assert abs(t - (t0 + T)) < 1e-13 and abs(float(sol.t[-1]) - (t0 + T)) < 1e-13
            q_ex, p_ex, e_ex = _driven_exact(t0 + T, t0, 0.8, -0.3)
            errors.append(max(abs(q - q_ex), abs(p - p_ex), abs(e - e_ex)))
        fit = D.fit_power_law(T / ns, errors, floor=1e-13)
        assert abs(fit.exponent - order) < 0.15, (integrator, fit.exponent, errors)
    long = mi.simulate(system, I.AverageVectorField(), x0, 0.05, 10_000, 100, t0=t0)
    K = np.asarray(long.invariants()["H"])
    # round-off of the coordinates: the time's ulp moves H(t) by ε t |∂H/∂t| (t ≤ 500)
    floor = np.finfo(float).eps * (t0 + 500.0) * DRIVEN["A"] * DRIVEN["w"]
    assert np.max(np.abs(K - K[0])) < 8 * floor, (np.max(np.abs(K - K[0])), floor)
    sv = mi.simulate(system, base, x0, 0.05, 10_000, 100, t0=t0)
    K = np.asarray(sv.invariants()["H"])
    assert 1e-6 < np.max(np.abs(K - K[0])) < 1e-2  # bounded O(h²): symplectic in (q, t, p, e)


def test_time_dependent_states_and_errors():
    """A state of dof + 1 entries carries its own time; a resumed state keeps it; a V
    without the time argument, a time-dependent system given to Forced, a declared
    degree that H(t, q, p) does not have and Gonzalez's gradient (its time would not
    advance at rate 1) are refused naming the fix."""
    system = SEPARABLE_DRIVEN
    assert system.dof == 2 and "time_dependent=True" in repr(system)
    (q, p), batched = system.validate_state(([0.8], [-0.3]))
    assert not batched and q.tolist() == [0.8, 0.0] and p.tolist() == [-0.3, 0.0]
    (q, _), batched = system.validate_state(([[0.8], [0.1]], [[-0.3], [0.2]]))
    assert batched and q.shape == (2, 2)
    own, fresh = (np.array([0.8, 5.0]), np.zeros(2)), (np.array([0.8, 0.0]), np.zeros(2))
    assert system.starting_state(own, 1.0)[0].tolist() == [0.8, 5.0]
    assert system.starting_state(fresh, 1.0)[0].tolist() == [0.8, 1.0]
    with pytest.raises(mi.InputError, match="expected 1 numbers, or 2"):
        system.validate_state(([0.8, 1.0, 2.0], [0.1]))
    with pytest.raises(mi.InputError, match=r"V\(t, \.\.\.\)"):
        S.SeparableHamiltonian(_T, lambda q: jnp.sum(q**2), dof=1, time_dependent=True)
    with pytest.raises(mi.InputError, match="time-dependent"):
        S.Forced(system, lambda t, x: jnp.zeros(2))
    with pytest.raises(mi.InputError, match="not a polynomial of degree 2"):  # cos ωt
        S.Hamiltonian(_H_driven, dof=1, params=DRIVEN, degree=2, time_dependent=True)
    with pytest.raises(mi.UnsupportedError, match="Gonzalez"):
        mi.simulate(system, mi.integrators.DiscreteGradient(), ([0.8], [-0.3]), 0.1, 2)
