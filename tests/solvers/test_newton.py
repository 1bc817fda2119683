import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi


def test_newton_reaches_round_off_on_a_known_root():
    def residual(z):
        return jnp.stack([z[0] ** 2 + z[1] ** 2 - 4.0, z[0] - z[1]])

    z, status = mi.solvers.Newton().solve(residual, jnp.array([1.0, 0.5]))
    assert bool(status.converged)
    assert np.max(np.abs(z - np.sqrt(2.0))) < 1e-15
    assert float(status.residual) < 1e-14
    assert int(status.iterations) <= 8


def test_newton_on_a_pytree_under_vmap():
    def residual(z):
        a, b = z
        return (a**3 - 8.0, b - 2 * a)

    solve = jax.vmap(lambda s: mi.solvers.Newton().solve(residual, (s, s)))
    (a, b), status = solve(jnp.array([1.0, 3.0, 5.0]))
    assert np.all(status.converged)
    assert np.allclose(a, 2.0, rtol=0, atol=1e-15) and np.allclose(b, 4.0, rtol=0, atol=1e-14)


def test_newton_reports_failure_instead_of_a_wrong_answer():
    _z, status = mi.solvers.Newton(max_iter=2).solve(lambda z: z**3 - 8.0, jnp.array(50.0))
    assert not bool(status.converged)
    assert float(status.residual) > 1.0
    # no real root: x² + 1 = 0
    _, status = mi.solvers.Newton().solve(lambda z: z**2 + 1.0, jnp.array(0.5))
    assert not bool(status.converged)


@pytest.mark.parametrize("kw", [{"max_iter": 0}, {"rtol": -1.0}, {"atol": 2.0}])
def test_bad_solver_settings(kw):
    with pytest.raises(mi.InputError):
        mi.solvers.Newton(**kw)


def test_midpoint_newton_failure_stops_run(top, m0):
    integ = mi.integrators.ImplicitMidpoint(solver=mi.solvers.Newton(max_iter=1))
    with pytest.raises(mi.StepFailure, match="Newton did not converge") as info:
        mi.simulate(top, integ, m0, 0.1, 100, 10)
    assert info.value.step == 1
    assert info.value.residual > 0
