from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi


def test_newton_reaches_round_off_on_a_known_root():
    def residual(z, r2):
        return jnp.stack([z[0] ** 2 + z[1] ** 2 - r2, z[0] - z[1]])

    z, status = mi.solvers.Newton().solve(residual, jnp.array([1.0, 0.5]), 4.0)
    assert bool(status.converged)
    assert np.max(np.abs(z - np.sqrt(2.0))) < 1e-15
    assert float(status.residual) < 1e-14
    assert int(status.iterations) <= 8


def test_newton_on_a_pytree_under_vmap():
    def residual(z, _):
        a, b = z
        return (a**3 - 8.0, b - 2 * a)

    solve = jax.vmap(lambda s: mi.solvers.Newton().solve(residual, (s, s)))
    z, status = solve(jnp.array([1.0, 3.0, 5.0]))
    a, b = cast(tuple[Any, Any], z)  # the root has the guess's structure
    assert np.all(status.converged)
    assert np.allclose(a, 2.0, rtol=0, atol=1e-15) and np.allclose(b, 4.0, rtol=0, atol=1e-14)


def test_newton_reports_failure_instead_of_a_wrong_answer():
    _z, status = mi.solvers.Newton(max_iter=2).solve(lambda z, c: z**3 - c, jnp.array(50.0), 8.0)
    assert not bool(status.converged)
    assert float(status.residual) > 1.0
    # no real root: x² + 1 = 0
    _, status = mi.solvers.Newton().solve(lambda z, _: z**2 + 1.0, jnp.array(0.5))
    assert not bool(status.converged)


def test_rounding_ends_a_stalled_solve_and_changes_no_other():
    """A residual whose terms are 10⁶ and its root about 0.3: its rounding (an ulp of
    10⁶, 1.2e-10) moves the updates by 10⁻¹⁰, never within rtol of ‖z‖, so without
    ``rounding`` the solve runs out of iterations at a residual of an ulp; with it, it is
    done once the updates stop shrinking with every |G_i| under its rounding, at the
    root the same equations have without the large terms. A residual above the rounding,
    or updates still halving (a double root), still fail; a residual of any shape takes
    it; on a well-scaled root the iterate and count are those without it."""

    def residual(z, big):
        return jnp.stack([(big + z[0] + 0.5 * z[1]) - big - 1 / 3,
                          (big - z[1] + 0.3 * z[0] + 1e-3 * z[0] ** 2) - big - 1 / 7])  # fmt: skip

    z0, big = jnp.zeros(2), 1e6
    exact, _ = mi.solvers.Newton().solve(residual, z0, 0.0)
    _, plain = mi.solvers.Newton().solve(residual, z0, big)
    assert not bool(plain.converged) and float(plain.residual) < 2e-10  # the false failure
    rounding = 4 * np.finfo(float).eps * big
    z, status = mi.solvers.Newton().solve(residual, z0, big, rounding=rounding)
    assert bool(status.converged) and int(status.iterations) <= 6
    assert np.max(np.abs(np.asarray(z) - np.asarray(exact))) < 4 * np.finfo(float).eps * big
    _, capped = mi.solvers.Newton(max_iter=3).solve(residual, z0, big, rounding=rounding)
    assert not bool(capped.converged)  # the updates still shrinking at the cap
    # a residual of any shape, its rounding a scalar or of the residual's shape
    targets = jnp.array([[1 / 3, 1 / 7], [1 / 9, 1 / 11]])

    def square(z, big):
        return (big + z + 0.1 * z**2) - big - targets

    z0 = jnp.zeros((2, 2))
    for bound in (rounding, np.full((2, 2), rounding)):
        _, status = mi.solvers.Newton().solve(square, z0, big, rounding=bound)
        assert bool(status.converged), bound
    # Newton's halving steps at a double root are not a stall: z² + 10⁻³⁰ has |G| under
    # the rounding from z ~ 1e-10 on, where the updates are still half of z
    _, double = mi.solvers.Newton(max_iter=100).solve(
        lambda z, a: z**2 + a, jnp.array([1.0]), 1e-30, rounding=1e-20
    )
    assert not bool(double.converged)

    def circle(z, r2):
        return jnp.stack([z[0] ** 2 + z[1] ** 2 - r2, z[0] - z[1]])

    ref = mi.solvers.Newton().solve(circle, jnp.array([1.0, 0.5]), 4.0)
    got = mi.solvers.Newton().solve(circle, jnp.array([1.0, 0.5]), 4.0, rounding=1e-15)
    assert np.array_equal(np.asarray(ref[0]), np.asarray(got[0]))
    assert int(ref[1].iterations) == int(got[1].iterations)


def test_the_root_is_differentiated_by_the_implicit_function_theorem():
    """z(a, b) with z³ + b z − a = 0: dz/da = 1/(3z² + b), dz/db = −z/(3z² + b), in
    reverse and forward mode, from a guess that does not depend on (a, b); second
    derivatives too (the rule is itself differentiable)."""

    def root(a, b):
        z, _ = mi.solvers.Newton().solve(
            lambda z, p: z**3 + p[1] * z - p[0], jnp.array(1.0), (a, b)
        )
        return cast(jax.Array, z)  # the root has the guess's structure

    a, b = 10.0, 2.0
    z = float(root(a, b))
    assert abs(z**3 + b * z - a) < 1e-13
    d = 3 * z * z + b
    ga, gb = jax.jit(jax.grad(root, argnums=(0, 1)))(a, b)
    assert abs(float(ga) - 1 / d) < 1e-15 and abs(float(gb) + z / d) < 1e-15
    fa = jax.jvp(lambda a: root(a, b), (a,), (1.0,))[1]
    assert abs(float(fa) - 1 / d) < 1e-15
    # d²z/da² = −6z (dz/da)³
    gaa = jax.grad(jax.grad(root))(a, b)
    assert abs(float(gaa) + 6 * z / d**3) < 1e-15


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


def test_second_derivatives_through_a_run_of_an_implicit_map():
    """Three implicit midpoint steps on Hénon–Heiles inside ``integrate`` (a loop): the
    second derivative by ``jax.hessian`` (forward over reverse) and by forward over
    forward equal the same three steps composed in Python, differentiated forward over
    forward, to 1e-13 (with the iterations outside the root's custom derivative, JAX's
    reverse pass through the loop held the roots fixed: 2.9e-5 for 0.236); reverse
    over reverse either raises or gives that value too, never another."""
    I, HH = mi.integrators, mi.systems.HenonHeiles()

    def start(a):
        return jnp.array([0.0, 0.1]) * a, jnp.array([0.35, 0.0]) * a

    def out(q, p):
        return q[1] + p[0] ** 2

    def run(a):
        sol = mi.integrate(HH, I.ImplicitMidpoint(), start(a), 0.05, 3)
        return out(sol.x[0][-1], sol.x[1][-1])

    def unrolled(a):
        x = start(a)
        for _ in range(3):
            x = I.ImplicitMidpoint().step(HH, x, 0.05)[0]
        return out(*x)

    a = 1.1
    exact = float(jax.jacfwd(jax.jacfwd(unrolled))(a))
    assert abs(exact - 0.236191262457) < 1e-11  # central differences of the gradient
    for second in (jax.hessian(run), jax.jacfwd(jax.jacfwd(run))):
        assert abs(float(second(a)) - exact) <= 1e-13 * abs(exact)
    try:
        value = float(jax.grad(jax.grad(run))(a))
    except ValueError as e:  # JAX: no reverse mode through a while loop
        assert "while_loop" in str(e)
    else:
        assert abs(value - exact) <= 1e-13 * abs(exact)
