from typing import cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

import mechint as mi
from mechint.integrators.kahan import euler_top_step
from tests.conftest import INERTIAS


@pytest.mark.parametrize("inertia", INERTIAS.values(), ids=INERTIAS.keys())
def test_closed_form_equals_linear_solve_of_kahan_equations(inertia):
    top = mi.systems.EulerTop(inertia)
    a = top.coefficients
    rng = np.random.default_rng(0)
    for m in rng.normal(size=(5, 3)):
        h = 0.3
        m_next, status = euler_top_step(a, jnp.asarray(m), h)
        m1, m2, m3 = m
        B = jnp.array(
            [[0, a[0] * m3, a[0] * m2], [a[1] * m3, 0, a[1] * m1], [a[2] * m2, a[2] * m1, 0]]
        )
        ref = jnp.linalg.solve(jnp.eye(3) - 0.5 * h * B, m)
        assert bool(status.ok)
        assert np.max(np.abs(m_next - ref)) < 1e-14 * np.max(np.abs(ref))
        # and it satisfies Kahan's bilinear equations (m_i' − m_i)/h = (a_i/2)(m_j' m_k + m_j m_k')
        n1, n2, n3 = m_next
        res = np.array(
            [
                (n1 - m1) / h - a[0] / 2 * (n2 * m3 + m2 * n3),
                (n2 - m2) / h - a[1] / 2 * (n3 * m1 + m3 * n1),
                (n3 - m3) / h - a[2] / 2 * (n1 * m2 + m1 * n2),
            ]
        )
        assert np.max(np.abs(res)) < 1e-14


@pytest.mark.parametrize("inertia", INERTIAS.values(), ids=INERTIAS.keys())
def test_kahan_is_symmetric(inertia):
    top = mi.systems.EulerTop(inertia)
    step = jax.jit(mi.integrators.Kahan().step)
    for m in np.random.default_rng(1).normal(size=(10, 3)):
        fwd, _ = step(top, jnp.asarray(m), 0.1)
        back, _ = step(top, fwd, -0.1)
        assert np.max(np.abs(back - m)) < 1e-14 * max(1.0, np.max(np.abs(m)))


def test_kahan_integrals_kept_and_energy_bounded_over_1e5_steps(top, m0):
    errs = {}
    for h in (0.1, 0.05):
        traj = mi.simulate(top, mi.integrators.Kahan(), m0, h, 100_000, save_every=10)
        preserved = mi.diagnostics.preserved_errors(traj)
        assert set(preserved) == {"K1", "K2", "K3", "d1/d2", "d2/d3"}
        for name, err in preserved.items():
            assert np.max(err) < 1e-12, (h, name, np.max(err))
        errs[h] = mi.diagnostics.invariant_errors(top, traj)
        # H and C are not conserved but bounded: the last tenth is no worse than the first half
        for name in ("H", "C"):
            e = errs[h][name]
            n = e.size
            assert np.max(e) > 1e-7
            assert np.max(e[-n // 10 :]) <= 1.05 * np.max(e[: n // 2])
    # the deviation is O(h²)
    for name in ("H", "C"):
        ratio = np.max(errs[0.1][name]) / np.max(errs[0.05][name])
        assert 2**1.8 < ratio < 2**2.2, (name, ratio)


@pytest.mark.parametrize("inertia", INERTIAS.values(), ids=INERTIAS.keys())
def test_one_step_energy_defect_exact_iff_two_moments_equal(inertia):
    """Kahan's theorem, measured: energy preserved to round-off with two equal moments,
    defect O(h³) otherwise."""
    top = mi.systems.EulerTop(inertia)
    step = jax.jit(mi.integrators.Kahan().step)
    ms = jnp.asarray(np.random.default_rng(2).normal(size=(20, 3)))
    nxt, _ = jax.vmap(step, in_axes=(None, 0, None))(top, ms, 0.1)
    H0, H1 = top.hamiltonian(ms), top.hamiltonian(nxt)
    defect = float(np.max(np.abs(H1 - H0) / H0))
    equal = len(set(inertia)) < 3
    assert (defect < 1e-15) if equal else (defect > 1e-6), defect


def test_two_equal_moments_energy_error_is_round_off_over_long_runs():
    """H and C then change by at most a few ulps a step (the step is a fixed Cayley
    rotation, whose rounding repeats: the drift is linear, about 1 ulp a step)."""
    top = mi.systems.EulerTop(INERTIAS["two-equal"])
    steps = 20_000
    traj = mi.simulate(top, mi.integrators.Kahan(), [0.3, 0.8, -0.5], 0.1, steps, 100)
    errs = mi.diagnostics.invariant_errors(top, traj)
    ulp = np.finfo(float).eps
    assert np.max(errs["H"]) < 4 * ulp * steps and np.max(errs["C"]) < 4 * ulp * steps


def test_singular_kahan_matrix_stops_the_run_with_step_and_residual():
    top = mi.systems.EulerTop((2.0, 1.0, 0.5))
    m = np.array([1.0, -1.0, 1.0])
    a = np.asarray(top.coefficients)

    def det(eps):
        p, q, r = eps * a
        return 1 - q * r - p * r - p * q - 2 * p * q * r * m.prod()

    # the smallest step with a singular Kahan matrix (brentq's root, without full_output)
    eps_star = cast(float, brentq(det, 0.1, 10.0))
    with pytest.raises(mi.StepFailure) as info:
        mi.simulate(top, mi.integrators.Kahan(), m, 2 * eps_star, 10, 1)
    failure = info.value
    assert failure.step == 1
    assert failure.residual < 1e-12
    assert "singular" in str(failure) and "step 1" in str(failure)
    assert len(failure.trajectory.t) == 1  # x0 is kept
    assert np.array_equal(failure.last_state, m)


def test_a_state_that_overflows_is_not_finite_not_singular():
    """Issue 36: a float32 state whose terms overflow used to fail as "singular" with
    |det| as residual; it is NON_FINITE (residual inf), in the closed-form Euler-top step
    and in the general quadratic solve (the heavy top), while a truly singular step stays
    SINGULAR."""
    from mechint.maps import Reason

    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    heavy = mi.systems.HeavyTop((2.0, 1.0, 0.6667), (3e38, 0, 0))  # γ × χ overflows
    for system, x in ((top, np.array([1e19, 0, 1e19])),
                      (heavy, (np.array([0.45, 0, 0.89]), np.array([0.0, 10, 0])))):  # fmt: skip
        with pytest.raises(mi.StepFailure) as info:
            mi.simulate(system, mi.integrators.Kahan(), x, 0.01, 10, dtype="float32")
        assert info.value.code == Reason.NON_FINITE and info.value.residual == np.inf
        assert info.value.failure is not None
        assert info.value.failure["reason"].tolist() == "non-finite"
    # m along axis i with det = 1 − (h/2)² a_j a_k m_i² = 0: singular, residual |det|
    a = np.asarray(top.euler_coefficients())
    i = next(i for i in range(3) if a[(i + 1) % 3] * a[(i + 2) % 3] > 0)
    h = 0.01
    m = np.zeros(3)
    m[i] = np.sqrt(1 / (0.25 * h * h * a[(i + 1) % 3] * a[(i + 2) % 3]))
    _, st = mi.integrators.Kahan().step(top, m, h)
    assert not st.ok and int(st.reason) == Reason.SINGULAR and np.isfinite(st.residual)
