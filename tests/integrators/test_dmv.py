"""The preprocessed discrete Moser–Veselov map (Hairer & Vilmart 2006) and the n = 3
step in three unknowns: the same map as the generic so(n) solve, observed orders 2..10
against the exact solution (attitude included) and against DOP853 for bodies in a
potential, H and |m|² kept, Poisson, and failure reported rather than returned."""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi
from mechint.integrators import dmv
from mechint.lie import so3

I = mi.integrators
BODY = mi.systems.FreeRigidBody((0.3, 0.7, 1.1))
TOP = BODY.euler_top()
M0 = np.array([0.3, -0.5, 0.9])
EPS = np.finfo(float).eps


def test_three_unknowns_equal_the_generic_solve():
    """m_{k+1} and W_k from c agree with the Newton solve on SO(3) (the map of every
    release before) to 1e-15, over random states and steps up to h|ω| ≈ 2."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal((200, 3))
    h = rng.uniform(1e-4, 1.0, 200)
    DL = I.DiscreteLagrangian()
    M = so3.hat(jnp.asarray(m))

    @jax.jit
    @jax.vmap
    def both(M, m, h):
        W, st = DL.solve_W(BODY.J, M, None, h)
        JW = BODY.J[:, None] * W
        m_next, _, W3, st3 = dmv.step(m, dmv_moments, h, 2)
        return so3.vee((JW - JW.T) / h), W, m_next, W3, st.ok, st3.ok

    dmv_moments = jnp.sum(BODY.J) - BODY.J
    m_gen, W_gen, m_fast, W_fast, ok, ok3 = both(M, jnp.asarray(m), jnp.asarray(h))
    # both fail on the same steps (too large for the branch W → I), and only those
    assert np.array_equal(ok, ok3) and 100 < ok.sum() < 200
    assert float(jnp.max(jnp.abs(m_gen - m_fast)[ok])) < 1e-14
    assert float(jnp.max(jnp.abs(W_gen - W_fast)[ok])) < 1e-14


@pytest.fixture(scope="module")
def exact_at_4():
    """The exact (m, g) at T = 4, once for every order below (its compiled program is
    not traced and loaded again where the suite drops its programs between tests)."""
    return mi.exact.euler_top_attitude(TOP, M0, np.eye(3), 4.0)


@pytest.mark.parametrize("order", [2, 4, 6, 8, 10])
def test_observed_order_with_the_attitude(order, exact_at_4):
    """(m, g) at T = 4 against the exact solution with its attitude (elliptic integrals
    of the third kind); the Euler top and the so(3) body give the same numbers."""
    T = 4.0
    ns = np.array([6, 8, 11, 16] if order == 10 else [10, 14, 20, 28, 40])
    m_ex, g_ex = exact_at_4
    DL = I.DiscreteLagrangian(order=order)
    errors = []
    for n in ns:
        body = mi.simulate(BODY, DL, so3.hat(M0), T / n, int(n), int(n), orientation=np.eye(3))
        top = mi.simulate(TOP, DL, M0, T / n, int(n), int(n), orientation=np.eye(3))
        m = np.asarray(so3.vee(body.x[-1]))
        assert np.max(np.abs(m - top.x[-1])) < 1e-14
        assert np.max(np.abs(body.orientation[-1] - top.orientation[-1])) < 1e-14
        errors.append(max(np.max(np.abs(m - m_ex)), np.max(np.abs(body.orientation[-1] - g_ex))))
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=5e-14)
    assert fit.used.sum() >= 4 and abs(fit.exponent - order) < 0.3, (fit.exponent, errors)
    assert DL.traits.order == order


def _dop853(system, x0, T):
    leaves, tree = jax.tree.flatten(x0)
    shapes = [np.shape(a) for a in leaves]

    def f(_, y):
        parts, k = [], 0
        for s in shapes:
            parts.append(y[k : k + int(np.prod(s))].reshape(s))
            k += int(np.prod(s))
        v = system.vector_field(jax.tree.unflatten(tree, [jnp.asarray(p) for p in parts]))
        return np.concatenate([np.ravel(a) for a in jax.tree.leaves(v)])

    y0 = np.concatenate([np.ravel(a) for a in leaves])
    return solve_ivp(f, (0, T), y0, method="DOP853", rtol=2.3e-14, atol=1e-15).y[:, -1]


_rng = np.random.default_rng(0)
_A = _rng.standard_normal((3, 3))
_B = 0.3 * _rng.standard_normal((3, 3))
POTENTIAL = {
    "heavy-top": (
        mi.systems.HeavyTop((1.0, 1.5, 2.0), (1.8, -0.9, 3.6)),
        (np.array([0.9, -1.5, 2.7]), np.array([0.6, 0.0, 0.8])),
    ),
    "quadratic-potential": (
        mi.systems.QuadraticPotentialTop((0.3, 0.7, 1.1)),
        (1.5 * (_A - _A.T), 9.0 * _B @ _B.T),
    ),
    "clebsch": (
        mi.systems.ClebschTop((0.3, 0.7, 1.1)),
        (1.5 * (_A - _A.T), np.array([1.2, -0.6, 1.5])),
    ),
}


@cache
def _reference(case: str, T: float) -> np.ndarray:
    """DOP853's state at T (the quadratic potential's serves two orders below)."""
    system, x0 = POTENTIAL[case]
    return _dop853(system, x0, T)


@pytest.mark.parametrize(
    ("case", "order"),
    [("heavy-top", 4), ("quadratic-potential", 6), ("clebsch", 8), ("quadratic-potential", 10)],
)
def test_observed_order_in_a_potential(case, order):
    """Strang splitting with the potential's exact kick, composed to the order, against
    DOP853 at its tightest tolerance (T = 2)."""
    system, x0 = POTENTIAL[case]
    T = 2.0
    ns = np.array([6, 8, 11, 16, 22] if order > 6 else [11, 16, 22, 32, 45])
    ref = _reference(case, T)
    DL = I.DiscreteLagrangian(order=order)
    errors = []
    for n in ns:
        traj = mi.simulate(system, DL, x0, T / n, int(n), int(n))
        last = np.concatenate([np.ravel(a[-1]) for a in jax.tree.leaves(traj.x)])
        errors.append(np.max(np.abs(last - ref)))
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-12)
    assert fit.used.sum() >= 3 and abs(fit.exponent - order) < 0.35, (fit.exponent, errors)
    # what it keeps: the Casimirs (and no claim on H)
    kept = DL.preserved(system, x0, 0.1)
    assert set(kept) == set(system.casimirs(x0)) and "H" not in kept


def test_preprocessed_map_keeps_h_and_m2_and_is_poisson():
    """H and |m|² over 10^5 steps of order 10 stay at round-off that does not add up
    (a random walk of about an ulp a step: measured 2e-14), and the map is Poisson."""
    DL = I.DiscreteLagrangian(order=10)
    # in calls of 64 saves: the compiled program of the next test's run (3 saves, in a
    # 64-save chunk) serves this one too; the states are the same in any chunks
    traj = mi.simulate(TOP, DL, M0, 0.2, 100_000, 1000, chunk_steps=64_000)
    err = mi.diagnostics.invariant_errors(TOP, traj)
    eps = np.finfo(float).eps
    assert np.max(err["H"]) < 10 * eps * np.sqrt(1e5) and np.max(err["C"]) < 10 * eps * np.sqrt(1e5)
    assert set(DL.preserved(TOP, M0, 0.2)) == {"H", "C"}
    assert DL.traits.poisson
    assert mi.diagnostics.poisson_defect(TOP, DL, M0, 0.3) < 1e-14


def test_a_step_too_large_fails_and_says_so():
    """Beyond the branch continuous with W → I the step fails (never a wrong answer)."""
    DL = I.DiscreteLagrangian(order=10)
    traj = mi.simulate(TOP, DL, 4.0 * M0, 2.5, 3, throw=False)
    assert int(traj.failed_step) >= 0
    assert str(traj.reason) in ("wrong-branch", "not-converged")


def test_order_is_checked_and_limited_to_n3():
    with pytest.raises(mi.InputError, match="order"):
        I.DiscreteLagrangian(order=3)
    why = I.DiscreteLagrangian(order=4).cannot_serve(mi.systems.FreeRigidBody((1.0, 2.0, 3.0, 4.0)))
    assert why is not None and "n = 3" in why
    assert (
        I.DiscreteLagrangian(order=2).cannot_serve(mi.systems.FreeRigidBody((1.0, 2, 3, 4))) is None
    )
    flat = mi.systems.EulerTop((3.0, 1.0, 1.0))  # I1 = I2 + I3: J1 = 0
    why = I.DiscreteLagrangian().cannot_serve(flat)
    assert why is not None and "not positive" in why


def _hard_states(inertia):
    """States with 1 − k² = 10^-j (j = 1, 8, 16) on both sides of the separatrix, and
    one within 1e-12 of the unstable axis (the grid of tests/exact)."""
    inertia = np.asarray(inertia, float)
    order = np.argsort(-inertia)
    Is = inertia[order]
    a12, a23 = 1 / Is[1] - 1 / Is[0], 1 / Is[2] - 1 / Is[1]
    states = []
    for j in (1, 8, 16):
        for side in (1, -1):
            s = np.empty(3)
            s[order] = [0.5, 0.6, np.sqrt(0.25 * a12 / a23) * (1 + side * 10.0**-j)]
            states.append(s)
    s = np.empty(3)
    s[order] = [1e-12, 1.0, -1e-12]
    return np.array([*states, s])


@pytest.mark.parametrize("flat", [False, True])
def test_hard_corners_against_mpmath(flat):
    """Near-separatrix states (1 − k² down to 1e-16), the unstable axis, and a near-flat
    body (I3 = I1 + I2 − 2.5e-10: J3 = 1.25e-10, J⁻¹W with eigenvalues 1e10 apart),
    T = 4 against the 60-digit solution: the fitted orders hold (2, 6, 10), H and |m|²
    stay within round-off, no step fails; and the map scales (m → s m, h → h/s, s up to
    1e±8) to round-off."""
    from tests.exact import mp_euler_top

    inertia = (1.0, 1.5, 2.5 - 2.5e-10) if flat else (1.0, 1.5, 2.0)
    top = mi.systems.EulerTop(inertia)
    m0 = _hard_states(inertia)
    T = 4.0
    ref = np.array([mp_euler_top.exact(inertia, m, T)[0] for m in m0])
    energy = jax.jit(jax.vmap(top.hamiltonian))
    H0, C0 = np.asarray(energy(m0)), np.sum(m0 * m0, -1)
    for order, ns in ((2, (8, 16)), (6, (8, 16)), (10, (4, 8))):
        DL = I.DiscreteLagrangian(order=order)
        errors = []
        for n in ns:
            traj = mi.simulate(top, DL, m0, T / n, n, n)
            m = np.asarray(traj.x[:, -1])
            errors.append(np.max(np.abs(m - ref), axis=-1))
            assert np.max(np.abs(np.asarray(energy(m)) - H0)) < 20 * EPS
            assert np.max(np.abs(np.sum(m * m, -1) - C0)) < 20 * EPS
        e1, e2 = errors
        above = e2 > 1e-13  # away from round-off (the unstable axis barely moves)
        assert above.sum() >= 6
        fitted = np.log(e1[above] / e2[above]) / np.log(ns[1] / ns[0])
        assert np.all(fitted > order - 0.3), (order, fitted)
        assert np.all(e2[~above] < 1e-13)
    # huge and tiny scales: Φ_{h/s}(s m) = s Φ_h(m)
    m, h = jnp.asarray(m0), 0.5
    base = jax.jit(jax.vmap(lambda m, h: dmv.step(m, jnp.asarray(inertia), h, 10)[0], (0, None)))
    ref_step = np.asarray(base(m, h))
    for s in (1e-8, 1e8):
        got = np.asarray(base(s * m, h / s)) / s
        assert np.max(np.abs(got - ref_step)) < 8 * EPS
