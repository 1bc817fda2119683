"""Suris's map: the W equation, isospectrality, reversibility, order, Poisson property."""

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi
from mechint.lie import cayley, so_dim, so_hat, so_vee
from mechint.maps import Reason
from mechint.systems import rigid
from tests.systems.rigid_cases import case

EPS = np.finfo(float).eps

DL = mi.integrators.DiscreteLagrangian()


@pytest.mark.parametrize(("kind", "n"), [("qpt", 3), ("qpt", 4), ("qpt", 5), ("clebsch", 3)])
def test_W_is_a_rotation_solving_its_equation(kind, n):
    system, x = case(kind, n)
    M = jnp.asarray(x[0])
    P = jnp.asarray(x[1]) if kind == "qpt" else jnp.outer(x[1], x[1])
    h = 0.1
    W, status = jax.jit(DL.solve_W)(system.J, M, P, h)
    assert bool(status.ok)
    assert np.max(np.abs(W.T @ W - np.eye(n))) < 1e-14
    assert abs(float(jnp.linalg.det(W)) - 1.0) < 1e-14
    Q = np.eye(n) - 0.5 * h * h * np.asarray(P)
    J = np.diag(np.asarray(system.J))
    res = h * np.asarray(M) - (Q @ W @ J - J @ W.T @ Q)
    assert np.max(np.abs(res)) <= 1e-13
    assert float(status.residual) <= 1e-13


@pytest.mark.parametrize("n", [3, 4, 6])
def test_the_written_out_jacobian_and_unpivoted_solve_give_the_generic_newton_root(n):
    """``_jacobian`` equals jax.jacfwd of the residual to round-off, and the solve it
    drives (no row exchanges) finds the root the generic Newton (jacfwd, pivoting)
    finds, to 1e-14, over random states and steps up to h = 0.6, failing on the same
    steps."""
    from mechint.integrators.discrete_lagrangian import _jacobian, _residual

    rng = np.random.default_rng(n)
    batch = 64
    J = jnp.asarray(rng.uniform(0.5, 2.0, n))
    A, B = rng.normal(size=(2, batch, n, n))
    M = jnp.asarray(A - np.swapaxes(A, 1, 2))
    P = jnp.asarray(0.5 * (B + np.swapaxes(B, 1, 2)))
    h = jnp.asarray(rng.uniform(0.02, 0.6, batch))
    Q = jnp.eye(n) - 0.5 * (h * h)[:, None, None] * P
    W = jax.vmap(cayley)(h[:, None, None] * M)

    def both(W, Q, M, h):
        args = (Q, J, M, h)
        ref = jax.jacfwd(lambda d: _residual(W + W @ so_hat(d, n), args))(jnp.zeros(so_dim(n)))
        return ref, _jacobian(W, args)

    ref, ours = jax.jit(jax.vmap(both))(W, Q, M, h)
    assert np.max(np.abs(ref - ours)) <= 4 * EPS * np.max(np.abs(ref))

    generic = mi.solvers.Newton(rtol=1e-14, max_iter=20)

    def solve_generic(M, P, h):
        Q = jnp.eye(n) - 0.5 * h * h * P
        return generic.solve(
            _residual,
            cayley(h * rigid.omega(M, J)),
            (Q, J, M, h),
            retract=lambda W, d: W @ cayley(so_hat(d, n)),
            tangent=jnp.zeros(so_dim(n)),
        )

    W1, st1 = jax.jit(jax.vmap(lambda M, P, h: DL.solve_W(J, M, P, h)))(M, P, h)
    W2, st2 = jax.jit(jax.vmap(solve_generic))(M, P, h)
    ok1, ok2 = np.asarray(st1.ok), np.asarray(st2.converged)
    assert ok1.sum() >= batch // 2  # the comparison covers most of the batch
    newton_ok = ok1 | (np.asarray(st1.reason) != int(Reason.NOT_CONVERGED))
    assert np.array_equal(newton_ok, ok2)
    assert np.max(np.abs(W1 - W2)[ok1]) < 1e-14


@pytest.mark.parametrize("n", [3, 4, 5])
def test_isospectral_over_1e4_steps(n):
    system, x0 = case("qpt", n)
    h = 0.05
    # in calls of 64 saves (both runs): the compiled program of the order runs below (one
    # save, in a 64-save chunk) serves them too; the states are the same in any chunks
    traj = mi.simulate(system, DL, x0, h, 10_000, 100, chunk_steps=6400)
    kept = mi.diagnostics.preserved_errors(traj, relative=False)
    values = DL.preserved(system, x0, h)
    # H(M, P̃) is a difference of kinetic and potential terms: measure it against their size
    M0, P0 = (jnp.asarray(a) for a in x0)
    terms = float(system.hamiltonian((M0, jnp.zeros_like(P0)))) + abs(
        float(system.hamiltonian((jnp.zeros_like(M0), DL.modified_P(system, (M0, P0), h))))
    )
    # a coefficient of tr K^k is a sum of products: its round-off scale is the same sum
    # taken over |entries|
    Pt = DL.modified_P(system, (M0, P0), h)
    bound = rigid.lax_coefficients(jnp.abs(M0), jnp.abs(Pt), system.J)
    for name, err in kept.items():
        scale = abs(float(values[name]))
        if name == "H~":
            scale = terms
        elif name.startswith("L"):
            k, d = (int(v) for v in name[1:-1].split("_"))
            scale = float(bound[k - 1, d])
        assert np.max(err) < 1e-11 * scale, (name, np.max(err) / scale)
    # the spectrum of K(λ) = P̃ + λM + λ²J² itself, for several λ
    first = jax.tree.map(lambda a: a[0], traj.x)
    last = jax.tree.map(lambda a: a[-1], traj.x)
    for lam in (0.5, 1.0, 3.0):
        K0, K1 = (np.asarray(DL.lax_matrix(system, s, h, lam)) for s in (first, last))
        c0, c1 = np.poly((np.eye(n) - K0) / h**2), np.poly((np.eye(n) - K1) / h**2)
        assert np.max(np.abs(c1 - c0) / np.maximum(np.abs(c0), 1.0)) < 1e-11
    # the spectrum of P, and H(M, P) off by O(ε²) only
    ev = np.linalg.eigvalsh(traj.x[1])
    assert np.max(np.abs(ev - ev[0])) < 1e-12 * np.max(np.abs(ev[0]))
    dH = mi.diagnostics.invariant_errors(system, traj)["H"].max()
    half = mi.simulate(system, DL, x0, h / 2, 20_000, 200, chunk_steps=12_800)
    dH_half = mi.diagnostics.invariant_errors(system, half)["H"].max()
    assert 1e-7 < dH and 3.0 < dH / dH_half < 5.0


@pytest.mark.parametrize(("kind", "n"), [("qpt", 3), ("qpt", 4), ("clebsch", 3), ("free", 5)])
def test_stepping_back_undoes_a_step(kind, n):
    system, x0 = case(kind, n)
    # a step there and one back, by the compiled program of the order runs below (h and
    # the steps are traced); a failed step raises StepFailure
    fwd = mi.simulate(system, DL, x0, 0.1, 1, 1)
    back = mi.simulate(system, DL, jax.tree.map(lambda a: a[-1], fwd.x), -0.1, 1, 1)
    assert not (fwd.failed or back.failed)
    back = jax.tree.map(lambda a: a[-1], back.x)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(x0), strict=True):
        assert np.max(np.abs(a - b)) < 1e-13


def _reference(system, x0, T):
    z0 = np.asarray(system.coordinates(jax.tree.map(jnp.asarray, x0)))
    f = jax.jit(lambda z: system.coordinates(system.vector_field(system.from_coordinates(z))))
    sol = solve_ivp(
        lambda t, z: np.asarray(f(z)), (0, T), z0, method="DOP853", rtol=1e-13, atol=1e-13
    )
    return sol.y[:, -1]


@pytest.mark.parametrize(("kind", "n"), [("qpt", 3), ("qpt", 4), ("clebsch", 3), ("clebsch", 4)])
def test_order_two_without_time_shift(kind, n):
    system, x0 = case(kind, n)
    T = 1.0
    exact = _reference(system, x0, T)
    ns = np.array([10, 20, 40, 80])
    errors = []
    for N in ns:
        traj = mi.simulate(system, DL, x0, T / N, int(N), int(N))
        last = jax.tree.map(lambda a: jnp.asarray(a[-1]), traj.x)
        errors.append(np.max(np.abs(np.asarray(system.coordinates(last)) - exact)))
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-12)
    assert abs(fit.exponent - 2.0) < 0.1, (fit.exponent, errors)


def test_free_body_n3_keeps_H_and_casimir_of_the_euler_top():
    body, M0 = case("free", 3)
    top = body.euler_top()
    # calls of 64 saves: test_traits' program for this map on the free body serves this run
    traj = mi.simulate(body, DL, M0, 0.1, 10_000, 100, chunk_steps=6400)
    m = mi.lie.vee(jnp.asarray(traj.x))
    # round-off: at most about one ulp of drift a step (measured 4.7e-13 for H)
    for name, values in top.invariants(m).items():
        err = np.abs(np.asarray(values) - float(values[0])) / float(values[0])
        assert np.max(err) < np.finfo(float).eps * 10_000, name


@pytest.mark.parametrize(("kind", "n"), [("qpt", 3), ("qpt", 4), ("clebsch", 3), ("free", 4)])
def test_the_map_is_poisson(kind, n):
    system, x = case(kind, n)
    assert mi.diagnostics.poisson_defect(system, DL, x, 0.1) < 1e-12


def test_a_sign_flipped_map_is_not_poisson():
    """Negative control: M_{k+1} with the wrong sign of its P-term is not Poisson."""
    system, (M, P) = case("qpt", 3)

    class Broken(mi.integrators.DiscreteLagrangian):
        def step(self, system, x, h):
            y, st = super().step(system, x, h)
            M1, P1 = cast(tuple[Any, Any], y)  # this system's state is (M, P)
            return (M1 + h * (system.J[:, None] * x[1] - x[1] * system.J), P1), st

    assert mi.diagnostics.poisson_defect(system, Broken(), (M, P), 0.1) > 1e-4


@jax.jit
def _continued_W(J, M, P, h):
    """The branch W(ε) from W(0) = I, followed in 400 small increments of ε (independent
    of the integrator's own start cay(εΩ) and branch test); returns (W, all converged)."""
    n = M.shape[-1]
    newton = mi.solvers.Newton()

    def piece(i, carry):
        W, ok = carry
        e = h * (i + 1) / 400

        def residual(W, e):
            U = (jnp.eye(n) - 0.5 * e * e * P) @ W * J
            return so_vee(U - U.T - e * M)

        W, st = newton.solve(
            residual,
            W,
            e,
            retract=lambda W, d: W @ cayley(so_hat(d, n)),
            tangent=jnp.zeros(so_dim(n)),
        )
        return W, ok & st.converged

    return jax.lax.fori_loop(0, 400, piece, (jnp.eye(n), jnp.asarray(True)))


def test_branch_is_the_one_continuous_with_the_identity_or_an_error():
    """Wherever the step reports success, W is the continuation of W = I; where the branch
    ends (fold) or the solve lands on another branch, the status is a failure."""
    system, (M, P) = case("qpt", 3, seed=5)
    M, P = jnp.asarray(M) * 4, jnp.asarray(P) * 4
    solve = jax.jit(DL.solve_W)
    seen = {"ok": 0, "failed": 0}
    for h in np.linspace(0.1, 2.5, 13):
        W, status = solve(system.J, M, P, float(h))
        if bool(status.ok):
            seen["ok"] += 1
            ref, converged = _continued_W(system.J, M, P, float(h))
            assert bool(converged) and np.max(np.abs(W - ref)) < 1e-10, h
        else:
            seen["failed"] += 1
    assert seen["ok"] >= 3 and seen["failed"] >= 3, seen


def test_too_large_a_step_stops_the_run_with_the_step_number():
    system, x0 = case("qpt", 4)
    with pytest.raises(mi.StepFailure) as info:
        mi.simulate(system, DL, (x0[0] * 20, x0[1] * 20), 0.5, 100, 10)
    exc = info.value
    assert exc.step >= 1 and exc.trajectory is not None
    assert "decrease h" in str(exc)


def test_orientation_stays_orthogonal_and_consistent_with_P():
    rng = np.random.default_rng(11)
    n = 3
    system, (M0, _) = case("qpt", n)
    A = rng.normal(size=(n, n))
    A = A + A.T
    g0 = np.linalg.qr(rng.normal(size=(n, n)))[0]
    g0[:, 0] *= np.sign(np.linalg.det(g0))
    P0 = system.body_potential(A, g0)
    traj = mi.simulate(system, DL, (M0, P0), 0.05, 100_000, 1000, orientation=g0)
    g = traj.orientation
    assert g.shape == (101, n, n)
    assert np.max(np.abs(np.swapaxes(g, 1, 2) @ g - np.eye(n))) < 1e-13
    assert np.max(np.abs(np.swapaxes(g, 1, 2) @ A @ g - traj.x[1])) < 1e-11
    ds = traj.to_xarray()
    assert ds["g"].dims == ("time", "row", "col")


def test_orientation_is_refused_by_maps_without_rotation(top, m0):
    with pytest.raises(mi.InputError, match="orientation"):
        mi.simulate(top, mi.integrators.Kahan(), m0, 0.1, 10, orientation=np.eye(3))
    system, x0 = case("qpt", 3)
    with pytest.raises(mi.InputError, match="not a rotation"):
        mi.simulate(system, DL, x0, 0.1, 10, orientation=np.diag([1.0, 1.0, -1.0]))


def test_batches_run_under_vmap_like_single_runs():
    system, (M, P) = case("clebsch", 4)
    Ms = np.stack([M, 0.5 * M, -M])
    ps = np.stack([P, 2 * P, P])
    batch = mi.simulate(system, DL, (Ms, ps), 0.05, 200, 50)
    assert batch.x[0].shape == (3, 5, 4, 4)
    single = mi.simulate(system, DL, (Ms[1], ps[1]), 0.05, 200, 50)
    # vmapped and single programs round differently: a random walk of a few ulps a step
    assert np.max(np.abs(batch.x[0][1] - single.x[0])) < 10 * EPS * np.sqrt(200)


def test_unsupported_system_is_refused_before_any_step(top, m0):
    with pytest.raises(mi.UnsupportedError, match="DiscreteLagrangian cannot advance EulerTop"):
        mi.simulate(top, DL, m0, 0.1, 10)
