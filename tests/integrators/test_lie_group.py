"""Lie group methods (issue 35): Runge–Kutta–Munthe-Kaas, the commutator-free CF4 and
Magnus, on attitude kinematics with a given ω(t) and on a rigid body with a
time-dependent torque (``Forced(RigidBodies)``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.diagnostics.comparison import dop853_path
from mechint.errors import InputError, UnsupportedError
from mechint.integrators.lie_group import CommutatorFreeScheme

S, I, D = mi.systems, mi.integrators, mi.diagnostics


def _omega(t):
    return jnp.array([jnp.sin(t), 0.5 * jnp.cos(2 * t), 0.3 + 0.2 * jnp.sin(0.5 * t)])


def _torque(t, x):
    """A body torque with zero mean (on Π; nothing on R's coordinates)."""
    tau = 0.2 * jnp.array([jnp.sin(t), jnp.cos(1.3 * t), 0.5 * jnp.sin(0.7 * t)])
    return jnp.concatenate([jnp.zeros(9), tau])


ATTITUDE = S.AttitudeKinematics(_omega)
BODY = S.RigidBodies([[1.0, 2.0, 3.0]])
SATELLITE = S.Forced(BODY, _torque)


def _flat(x):
    return np.concatenate([np.ravel(np.asarray(a)) for a in jax.tree.leaves(x)])


def _order(system, integrator, x0, T, hs):
    ref = _flat(jax.tree.map(lambda a: a[-1], dop853_path(system, x0, np.array([0.0, T]))))
    errors = []
    for h in hs:
        n = round(T / h)
        traj = mi.simulate(system, integrator, x0, h, n, n)
        errors.append(np.max(np.abs(_flat(jax.tree.map(lambda a: a[-1], traj.x)) - ref)))
    return D.fit_power_law(hs, np.array(errors)).exponent, errors


CASES = [(I.RKMK(), ATTITUDE), (I.CommutatorFree(), ATTITUDE), (I.Magnus(), ATTITUDE),
         (I.RKMK(), SATELLITE), (I.CommutatorFree(), SATELLITE)]  # fmt: skip
CASE_IDS = ["rkmk-attitude", "cf4-attitude", "magnus-attitude", "rkmk-torqued-body",
            "cf4-torqued-body"]  # fmt: skip


@pytest.mark.parametrize(("integrator", "system"), CASES, ids=CASE_IDS)
def test_observed_order_4_against_dop853(integrator, system):
    """Order 4 (fitted over h = 0.2 … 0.025 to T = 4) against DOP853 at rtol 1e-13:
    the attitude under ω(t), and the body, its attitude, the clock and the work under
    a time-dependent torque.  (CF4 with its two exponentials in the other order fits
    order 2: their order matters, and this test sees it.)"""
    order, errors = _order(system, integrator, system.example_state(), 4.0,
                           np.array([0.2, 0.1, 0.05, 0.025]))  # fmt: skip
    assert abs(order - 4) < 0.15, (order, errors)


@pytest.mark.parametrize("integrator", [I.RKMK(), I.CommutatorFree(), I.RK4()],
                         ids=["rkmk", "cf4", "rk4"])  # fmt: skip
def test_the_attitude_stays_a_rotation_over_1e5_steps_of_a_torqued_body(integrator):
    """‖RᵀR − 1‖ (max entry) ≤ 1e-13 after 10⁵ steps (h = 0.01) under the
    time-dependent torque, for both Lie group maps (measured 3.2e-14 and 2.6e-14: the
    rounding of each step's exp, about ε per radian turned); RK4 leaves SO(3) by
    1.4e-8."""
    traj = mi.simulate(SATELLITE, integrator, SATELLITE.example_state(), 0.01, 100_000, 100_000)
    defect = float(np.max(BODY.orthogonality(traj.x[0])))
    if isinstance(integrator, I.RK4):
        assert defect > 1e-9, defect  # measured 1.4e-8
    else:
        assert defect < 1e-13, defect
        np.testing.assert_allclose(traj.x[1][-1], 1000.0, rtol=1e-11)


def test_the_clock_is_exact_in_plain_and_compensated_runs():
    """Each step adds h to the state's clock by Kahan's compensated sum: after 10⁵ steps
    of 0.01 it reads 1000 to an ulp, plainly and compensated (a plain t + h would be off
    by 8e-10); the attitude stays a rotation in both."""
    for compensated in (False, True):
        traj = mi.simulate(ATTITUDE, I.Magnus(), ATTITUDE.example_state(), 0.01, 100_000,
                           100_000, compensated=compensated)  # fmt: skip
        assert abs(traj.x[1][-1] - 1000.0) <= 1.2e-13, (compensated, traj.x[1][-1] - 1000)
        assert float(np.max(ATTITUDE.orthogonality(traj.x))) < 1e-13


def test_schemes_are_checked_and_bad_input_is_refused():
    with pytest.raises(ValueError, match="order conditions"):  # not RK4 when abelian
        CommutatorFreeScheme(stages=((0, ()), (0, ((0, 0.5),)), (0, ((1, 0.5),)),
                                     (1, ((0, -0.5), (2, 1.0)))),
                             output=((0.25, 1 / 6, 1 / 6, -1 / 12), (-1 / 12, 1 / 6, 1 / 6, 0.5)),
                             order=4)  # fmt: skip
    with pytest.raises(InputError, match="order"):
        I.RKMK(order=3)
    with pytest.raises(UnsupportedError, match="rotation matrices"):
        mi.integrate(S.Kepler(), I.RKMK(), S.Kepler().example_state(), 0.01, 10)
    with pytest.raises(UnsupportedError, match="not depend on the state"):
        mi.integrate(SATELLITE, I.Magnus(), SATELLITE.example_state(), 0.01, 10)
    with pytest.raises(InputError, match="rotation matrices"):
        S.Forced(BODY, lambda t, x: jnp.ones(12))
    with pytest.raises(InputError, match="omega"):
        S.AttitudeKinematics(lambda t: jnp.ones(2))
    with pytest.raises(InputError, match="rotation"):
        ATTITUDE.validate_state(np.eye(3) * 2.0)
