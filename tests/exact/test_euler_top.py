"""The exact solution against SciPy DOP853 (rtol = atol = 1e-13) in every regime."""

import jax
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi

CASES = {
    # name: (inertia, m0, T)
    "about-smallest": ((2.0, 1.0, 2.0 / 3.0), (0.45, 0.0, 0.89), 100.0),
    "about-largest": ((2.0, 1.0, 2.0 / 3.0), (0.89, 0.1, 0.45), 100.0),
    "ascending-inertia": ((1.0, 2.0, 3.0), (0.3, 0.5, 0.8), 100.0),
    "odd-permutation": ((3.0, 1.0, 2.0), (0.5, 0.3, -0.2), 100.0),
    "near-separatrix-k2>0.98": ((2.0, 1.0, 2.0 / 3.0), (0.7, 0.005, 0.705), 100.0),
    "near-separatrix-other-side": ((2.0, 1.0, 2.0 / 3.0), (0.705, -0.002, 0.7), 100.0),
    "two-equal-I2=I3": ((2.0, 1.0, 1.0), (0.3, 0.4, 0.5), 100.0),
    "two-equal-I1=I2": ((1.0, 1.0, 2.0), (0.3, 0.4, -0.5), 100.0),
    # the separatrix: G² = 2 H I2 exactly; DOP853's own error grows like e^{λt} near the
    # saddle, so the comparison window is the one where DOP853 is still accurate
    "separatrix": ((9.0, 5.0, 1.0), (3.0, 0.2, 1.0), 10.0),
    "separatrix-reversed": ((1.0, 5.0, 9.0), (1.0, -0.3, 3.0), 10.0),
}


def _dop853(top, m0, t):
    a = np.asarray(top.coefficients)

    def rhs(_, m):  # ṁ_i = a_i m_j m_k in NumPy: independent of mechint's vector field
        return a * np.array([m[1] * m[2], m[2] * m[0], m[0] * m[1]])

    sol = solve_ivp(rhs, (0.0, t[-1]), m0, method="DOP853", rtol=1e-13, atol=1e-13, t_eval=t)
    assert sol.success
    return sol.y.T


def _k2(top, m0):
    """k² of the elliptic solution, from the formulas of mechint.exact (sorted axes)."""
    I = np.sort(np.asarray(top.inertia))[::-1]
    m = np.asarray(m0)[np.argsort(-np.asarray(top.inertia), kind="stable")]
    G2, H2 = m @ m, m @ (m / I)
    g, f = G2 - H2 * I[2], H2 * I[0] - G2
    k2 = g * (I[0] - I[1]) / ((I[1] - I[2]) * f)
    return k2 if k2 <= 1 else 1 / k2


@pytest.fixture(scope="module")
def exact():
    """The exact solution of every case at the times of the two tests below, computed
    together: one compiled program serves them all, also where the suite drops its
    compiled programs between tests to bound its memory (each test would trace and load
    it again)."""
    return {
        (name, n): mi.exact.euler_top(mi.systems.EulerTop(inertia), m0, np.linspace(0.0, T, n))
        for name, (inertia, m0, T) in CASES.items()
        for n in (1001, 301)
    }


@pytest.mark.parametrize("name", CASES)
def test_exact_solution_matches_dop853(name, exact):
    inertia, m0, T = CASES[name]
    top = mi.systems.EulerTop(inertia)
    t = np.linspace(0.0, T, 1001)
    assert np.max(np.abs(exact[name, 1001] - _dop853(top, np.array(m0), t))) < 1e-11


def test_regimes_are_classified_and_k2_is_large_where_claimed():
    names = {k: mi.exact.regime(mi.systems.EulerTop(v[0]), v[1]) for k, v in CASES.items()}
    assert names["about-smallest"] == "about-smallest"
    assert names["about-largest"] == "about-largest"
    assert names["separatrix"] == names["separatrix-reversed"] == "separatrix"
    assert names["two-equal-I2=I3"] == "symmetric"
    for key in ("near-separatrix-k2>0.98", "near-separatrix-other-side"):
        inertia, m0, _ = CASES[key]
        assert _k2(mi.systems.EulerTop(inertia), m0) > 0.98


@pytest.mark.parametrize("name", CASES)
def test_exact_solution_keeps_H_and_C(name, exact):
    inertia, _, _ = CASES[name]
    top = mi.systems.EulerTop(inertia)
    x = exact[name, 301]
    inv = top.invariants(x)
    for v in inv.values():
        v = np.asarray(v)
        assert np.max(np.abs(v - v[0])) < 1e-13 * abs(v[0])


def test_equilibria_and_sphere_do_not_move():
    t = np.linspace(0, 50, 11)
    top = mi.systems.EulerTop((3.0, 2.0, 1.0))
    for m0 in ([0.0, 1.3, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -1.0]):
        assert np.array_equal(mi.exact.euler_top(top, m0, t), np.tile(m0, (11, 1)))
    sphere = mi.systems.EulerTop((1.5, 1.5, 1.5))
    assert np.array_equal(mi.exact.euler_top(sphere, [0.1, 0.2, 0.3], t)[-1], [0.1, 0.2, 0.3])


def test_batch_and_time_shapes():
    top = mi.systems.EulerTop((2.0, 1.0, 0.5))
    m0 = np.array([[0.45, 0.0, 0.89], [0.89, 0.1, 0.45]])
    t = np.linspace(0, 3, 12).reshape(3, 4)
    out = mi.exact.euler_top(top, m0, t)
    assert out.shape == (2, 3, 4, 3)
    assert np.array_equal(out[1], mi.exact.euler_top(top, m0[1], t))


def test_exact_solution_is_a_flow():
    """φ_{s+t} = φ_t ∘ φ_s: an independent check of phase and sign conventions."""
    top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
    for m0 in ([0.45, 0.0, 0.89], [0.89, 0.1, 0.45], [-0.2, 0.7, -0.6]):
        mid = mi.exact.euler_top(top, m0, 7.3)
        assert (
            np.max(np.abs(mi.exact.euler_top(top, mid, 5.1) - mi.exact.euler_top(top, m0, 12.4)))
            < 1e-13
        )


def _grid(inertia):
    """1 − k² = 10^-j (j = 1..16) on both sides of the separatrix, states within 1e-12 of
    each axis (either sign), and random states."""
    rng = np.random.default_rng(7)
    inertia = np.asarray(inertia, float)
    order = np.argsort(-inertia)
    Is = inertia[order]
    a12, a23 = 1 / Is[1] - 1 / Is[0], 1 / Is[2] - 1 / Is[1]
    states = []
    for j in range(1, 17):
        for side in (1, -1):
            s = np.empty(3)
            s[order] = [0.5, 0.6, np.sqrt(0.25 * a12 / a23) * (1 + side * 10.0**-j)]
            states.append(s)
    for i in range(3):
        for sign in (1, -1):
            s = 1e-12 * rng.standard_normal(3)
            s[i] = sign
            states.append(s)
    return [*states, *rng.standard_normal((6, 3))]


@pytest.mark.parametrize("inertia", [(3.0, 2.0, 1.0), (1.0, 1.5, 4.0), (2.0, 5.0, 0.3)])
def test_within_ten_times_the_conditioning_against_mpmath(inertia):
    """Every state of the grid, t up to 1e4 (and negative): the error is at most 10× the
    spread of the 60-digit solution under one-ulp moves of m0 (or 2 ulp of |m| where that
    spread is smaller), with no state excluded."""
    from tests.exact import mp_euler_top

    top = mi.systems.EulerTop(inertia)
    states = _grid(inertia)
    times = np.array([-37.0, 1e3, 1e4])
    got = mi.exact.euler_top(top, np.array(states), times)
    worst, seen = 0.0, set()
    for b, m0 in enumerate(states):
        for k, t in enumerate(times):
            ref, width = mp_euler_top.spread(inertia, m0, t)
            floor = 2 * np.finfo(float).eps * np.linalg.norm(m0)
            worst = max(worst, np.max(np.abs(got[b, k] - ref)) / max(width, floor))
        seen.add(round(np.log10(max(mp_euler_top.exact(inertia, m0, 0.0)[1], 1e-30))))
    assert worst < 10.0, worst
    assert set(range(-16, 0)) <= seen  # the grid reached every decade of 1 − k²


def test_the_issue_example_near_the_unstable_axis():
    """I = (3, 2, 1), m0 = (1e-6, 1, 1e-6), t = 1000 (SciPy's path returned 5e106)."""
    from tests.exact import mp_euler_top

    top = mi.systems.EulerTop((3, 2, 1))
    m0 = np.array([1e-6, 1.0, 1e-6])
    got = mi.exact.euler_top(top, m0, [1000.0])[0]
    ref, _ = mp_euler_top.exact((3, 2, 1), m0, 1000.0)
    assert np.max(np.abs(got - ref)) < 1e-12 and abs(got[0] + 9.44e-5) < 1e-7


def test_traceable_flow_under_jit_vmap_and_grad():
    import jax
    import jax.numpy as jnp

    inertia = jnp.array([3.0, 2.0, 1.0])
    m0 = np.array([0.3, 0.5, 0.8])
    top = mi.systems.EulerTop((3, 2, 1))

    @jax.jit
    def value_and_jacobian(m, t):
        states = jnp.stack([m, -m])
        values = jax.vmap(mi.exact.euler_top_flow, in_axes=(None, 0, None))(inertia, states, t)
        jac = jax.jacfwd(mi.exact.euler_top_flow, argnums=(1, 2))(inertia, m, t)
        return values, jac

    values, (d_m0, d_t) = value_and_jacobian(jnp.asarray(m0), 5.0)
    assert np.allclose(values, mi.exact.euler_top(top, np.stack([m0, -m0]), [5.0])[:, 0])
    # d m(t)/d m0 against central differences of the exact solution
    step = 1e-6
    moved = np.concatenate([m0 + step * np.eye(3), m0 - step * np.eye(3)])
    out = mi.exact.euler_top(top, moved, [5.0])[:, 0]
    assert np.allclose(d_m0, ((out[:3] - out[3:]) / (2 * step)).T, atol=1e-8)
    # the time derivative is the vector field ṁ1 = (1/I3 − 1/I2) m2 m3
    m5 = values[0]
    assert abs(float(d_t[0]) - float(m5[1] * m5[2] * (1 / 1.0 - 1 / 2.0))) < 1e-12


def test_every_scale_and_the_traced_form():
    """Issue 36: the motion is scale-covariant, m(t; sI, r m0) = r m(r t/s; I, m0); inertia
    ≥ 1e103 used to give a wrong m(0) (0.88198 for 0.89) and |m0| ≥ 1e154 NaN.  Every scale
    of I and m0 from 1e-300 to 1e300 (where r t/s is a normal number) agrees with the unit
    solution to 1e-14, the attitude too (the traceable forms, one compiled call over all
    scales; the host form at the extremes), and the regime is the unit problem's.  The
    host form inside jax.jit was a raw JAX TypeError: it names the traceable form, which
    takes the system as every other function there does."""
    import jax

    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    m0, t, g0 = np.array([0.45, 0.1, 0.89]), np.array([0.0, 0.7, 13.0]), np.eye(3)
    ref_m = mi.exact.euler_top(top, m0, t)
    s, r = np.meshgrid(10.0 ** np.arange(-300, 301, 60), 10.0 ** np.arange(-300, 301, 60))
    s, r = s.ravel(), r.ravel()
    ts = t[None] * (s / r)[:, None]
    keep = np.all(np.isfinite(ts), axis=1) & (ts[:, 1] >= 1e-290)
    s, r, ts = s[keep], r[keep], ts[keep]
    inertia = np.asarray(top.inertia)[None] * s[:, None]

    @jax.jit
    def scaled(inertia, m, t):
        per_time = jax.vmap(mi.exact.euler_top_attitude_flow, in_axes=(None, None, None, 0))
        return jax.vmap(per_time, in_axes=(0, 0, None, 0))(inertia, m, g0, t)

    m, g = scaled(inertia, m0[None] * r[:, None], ts)
    unit = int(np.flatnonzero((s == 1.0) & (r == 1.0))[0])
    assert np.max(np.abs(np.asarray(m) / r[:, None, None] - ref_m)) < 1e-14
    assert np.max(np.abs(np.asarray(g) - np.asarray(g)[unit])) < 1e-14
    for big, k in ((1e103, 1.0), (1.0, 1e200), (1e-300, 1e-150), (1e300, 1e250)):
        scaled_top = mi.systems.EulerTop(np.asarray(top.inertia) * big)
        got = mi.exact.euler_top(scaled_top, m0 * k, t * big / k) / k
        assert np.max(np.abs(got - ref_m)) < 1e-14, (big, k)
        assert mi.exact.regime(scaled_top, m0 * k) == "about-smallest"
    with pytest.raises(mi.InputError, match=r"m0: is traced.*euler_top_flow"):
        jax.jit(lambda m: mi.exact.euler_top(top, m, 1.0))(m0)
    with pytest.raises(mi.InputError, match=r"t: is traced.*euler_top_attitude_flow"):
        jax.jit(lambda t: mi.exact.euler_top_attitude(top, m0, g0, t))(1.0)
    m1 = jax.jit(lambda m: mi.exact.euler_top_flow(top, m, 13.0))(m0)
    np.testing.assert_allclose(m1, ref_m[2], atol=1e-15)


def test_huge_times_stay_on_the_orbit_or_are_refused():
    """Up to 1e28 the state keeps its Casimir and energy to round-off (before: 4.6e-14 at
    t = 1e24, 2e-4 at 1e32: the reduction by the period left a residue of many periods);
    past 2^100 half periods the time is refused, naming t (the traceable flow: NaN)."""
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    m0 = np.array([0.45, 0.0, 0.89])
    ts = np.array([1e16, 1e20, 1e24, 1e28])
    m = mi.exact.euler_top(top, m0, ts)
    inertia = np.asarray(top.inertia)
    C0, H0 = m0 @ m0, 0.5 * np.sum(m0**2 / inertia)
    assert np.all(np.abs(np.sum(m * m, -1) / C0 - 1) < 4e-16)
    assert np.all(np.abs(0.5 * np.sum(m * m / inertia, -1) / H0 - 1) < 4e-16)
    with pytest.raises(mi.InputError, match="beyond 2\\^100 half periods") as caught:
        mi.exact.euler_top(top, m0, np.array([1.0, 1e32]))
    assert caught.value.parameter == "t"
    assert np.all(np.isnan(np.asarray(jax.jit(mi.exact.euler_top_flow)(top, m0, 1e40))))


@pytest.mark.parametrize(
    "m0",
    [(0.0, 1.0, 1e-200), (0.0, -1.0, 1e-200), (0.0, 1.0, -1e-200), (1e-200, 1.0, 0.0),
     (-3e-170, 0.7, 2e-180), (0.0, 1.0, 2.0**-600)],
)  # fmt: skip
def test_within_float64s_squares_of_the_saddle(m0):
    """States within 1e-154 of the unstable axis, where the separatrix distance's squares
    underflow: the motion leaves the saddle on the side each time takes, on the arc of the
    mode that grows there, and makes its excursion at the time DOP853 (absolute tolerance
    1e-300: it follows the small components by their own digits) finds, forward and
    backward; t = 0 returns m0 to 1e-150."""
    top = mi.systems.EulerTop((3.0, 2.0, 1.0))
    a = np.asarray(top.coefficients)

    def field(t, m):
        return [a[0] * m[1] * m[2], a[1] * m[2] * m[0], a[2] * m[0] * m[1]]

    m0 = np.array(m0)
    rate = abs(m0[1]) * np.sqrt(a[0] * a[2])  # the saddle's: m1, m3 grow as e^(rate t)
    depth = np.log(4.0 / np.max(np.abs(m0[[0, 2]]))) / rate  # ≈ the excursion's time
    times = np.array([0.0, 0.5 * depth, 0.98 * depth, depth, -depth, -1.01 * depth])
    exact = mi.exact.euler_top(top, m0, times)
    assert np.max(np.abs(exact[0] - m0)) < 1e-150
    for t, m in zip(times[1:], exact[1:], strict=True):
        ref = solve_ivp(field, (0.0, t), m0, method="DOP853", rtol=1e-13, atol=1e-300).y[:, -1]
        assert np.max(np.abs(m - ref)) < 1e-9, (t, m, ref)
