"""The exact solution against SciPy DOP853 (rtol = atol = 1e-13) in every regime."""

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


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_exact_solution_matches_dop853(case):
    inertia, m0, T = case
    top = mi.systems.EulerTop(inertia)
    t = np.linspace(0.0, T, 1001)
    exact = mi.exact.euler_top(top, m0, t)
    assert np.max(np.abs(exact - _dop853(top, np.array(m0), t))) < 1e-11


def test_regimes_are_classified_and_k2_is_large_where_claimed():
    names = {k: mi.exact.regime(mi.systems.EulerTop(v[0]), v[1]) for k, v in CASES.items()}
    assert names["about-smallest"] == "about-smallest"
    assert names["about-largest"] == "about-largest"
    assert names["separatrix"] == names["separatrix-reversed"] == "separatrix"
    assert names["two-equal-I2=I3"] == "symmetric"
    for key in ("near-separatrix-k2>0.98", "near-separatrix-other-side"):
        inertia, m0, _ = CASES[key]
        assert _k2(mi.systems.EulerTop(inertia), m0) > 0.98


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_exact_solution_keeps_H_and_C(case):
    inertia, m0, T = case
    top = mi.systems.EulerTop(inertia)
    x = mi.exact.euler_top(top, m0, np.linspace(0, T, 301))
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
