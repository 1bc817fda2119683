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
