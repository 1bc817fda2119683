"""Issue 34: integrals found from orbits (the HK basis method), Kahan's modified energy and
invariant measures, Kahan on every field of degree ≤ 2, the Zhukovsky–Volterra gyrostat."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from tests.cli.helpers import invoke

KAHAN = mi.integrators.Kahan()
TOP = mi.systems.EulerTop((2.0, 1.0, 0.6667))
M0 = np.array([0.45, 0.1, 0.89])
SQUARES = {"m1^2": lambda m: m[0] ** 2, "m2^2": lambda m: m[1] ** 2,
           "m3^2": lambda m: m[2] ** 2, "1": lambda m: jnp.ones_like(m[0])}  # fmt: skip


def test_kahans_euler_top_integrals_are_found_and_are_the_known_ones():
    """Basis (m1², m2², m3², 1): a two-dimensional null space whose echelon rows are the
    kept ratios of ``EulerTop.kahan_integrals``: d_i = c_i d_3 (c_i = d_i/d_3, d_n =
    1 − ε² a_{n+1} a_{n+2} m_n²) reads m_i² − c_i (a_i/a_3) m3² + (c_i − 1)/(ε² a_j a_k) = 0."""
    h = 0.1
    found = mi.diagnostics.find_integrals(TOP, KAHAN, M0, h, SQUARES)
    assert found.dimension == 2 and found.verified == (True,)
    assert found.gap[0] > 1e6 and found.residual[0] < 1e-13
    assert found.pivots[0] == (0, 1)
    a = np.asarray(TOP.coefficients)
    eps2 = (h / 2) ** 2
    kept = {k: float(v) for k, v in TOP.kahan_integrals(jnp.asarray(M0), h).items()}
    c = {0: kept["d1/d2"] * kept["d2/d3"], 1: kept["d2/d3"]}
    for i, row in enumerate(found.coefficients[0]):
        j, k = (i + 1) % 3, (i + 2) % 3
        want = np.zeros(4)
        want[i] = 1.0
        want[2] = -c[i] * a[i] / a[2]
        want[3] = (c[i] - 1) / (eps2 * a[j] * a[k])
        np.testing.assert_allclose(row, want, rtol=1e-12, atol=1e-12)
    # the same from a batch: one orbit each, the second its own level set
    both = mi.diagnostics.find_integrals(TOP, KAHAN, np.stack([M0, 0.5 * M0[::-1]]), h, SQUARES)
    assert both.dimensions == (2, 2) and both.dimension == 2
    np.testing.assert_allclose(both.coefficients[0], found.coefficients[0], rtol=1e-12)


def test_the_continuous_flow_finds_the_systems_own_integrals():
    """The exact Euler top (and DOP853 on the Hénon–Heiles flow): H and C in the degree-2
    monomials, H in the degree-3 ones; RK4 keeps neither, and the search says so."""
    basis = mi.diagnostics.monomials(TOP, 2)
    assert list(basis)[:4] == ["m1^2", "m1*m2", "m1*m3", "m2^2"] and list(basis)[-1] == "1"
    flow = mi.diagnostics.find_integrals(TOP, None, M0, 0.1, basis)
    assert flow.dimension == 2 and flow.gap[0] > 1e6
    # every relation is a combination of H − H0 and C − C0: squares and the constant only
    for row in flow.coefficients[0]:
        value = dict(zip(flow.names, row, strict=True))
        others = [abs(c) for n, c in value.items() if n not in ("m1^2", "m2^2", "m3^2", "1")]
        assert max(others) < 1e-9, value
        at_start = sum(value[f"m{i + 1}^2"] * M0[i] ** 2 for i in range(3)) + value["1"]
        assert abs(at_start) < 1e-12
    # the same relations at any size of the state (pivots and checks in the column scale)
    for k in (1e-9, 1e8):
        scaled = mi.diagnostics.find_integrals(TOP, None, M0 * k, 0.1 / k, basis)
        assert scaled.pivots == flow.pivots and scaled.dimension == 2
        assert scaled.expressions(0, 6)[0].startswith("m1^2 - ")
        constant = scaled.coefficients[0][0, -1] / k**2  # m1² + … + γ k² = 0
        assert abs(constant / flow.coefficients[0][0, -1] - 1) < 1e-9
    rk4 = mi.diagnostics.find_integrals(TOP, mi.integrators.RK4(), M0, 0.1, basis)
    assert rk4.dimension == 0 and "no integral" in rk4.decision
    hh = mi.systems.HenonHeiles()
    x = (np.array([0.1, -0.2]), np.array([0.3, 0.25]))
    energy = mi.diagnostics.find_integrals(hh, None, x, 0.1, mi.diagnostics.monomials(hh, 3),
                                           stride=8)  # fmt: skip
    assert energy.dimension == 1 and energy.gap[0] > 1e6


def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(mi.InputError, match=r"basis\['v'\]: must return a scalar"):
        mi.diagnostics.find_integrals(TOP, KAHAN, M0, 0.1, {"v": lambda m: m})
    with pytest.raises(mi.InputError, match="give at least 5"):
        mi.diagnostics.find_integrals(TOP, KAHAN, M0, 0.1, SQUARES, points=4)
    with pytest.raises(mi.InputError, match="non-empty dict"):
        mi.diagnostics.find_integrals(TOP, KAHAN, M0, 0.1, [])
    with pytest.raises(mi.InputError, match="degree: 30 gives"):
        mi.diagnostics.monomials(mi.systems.HeavyTop((1, 2, 3), (0.1, 0.2, 0.3)), 30)
    # an orbit that fails is reported, not searched: Kahan's step is singular there
    a = np.asarray(TOP.coefficients)
    i = next(i for i in range(3) if a[(i + 1) % 3] * a[(i + 2) % 3] > 0)
    m = np.zeros(3)
    m[i] = 1 / np.sqrt(0.25 * 0.01 * a[(i + 1) % 3] * a[(i + 2) % 3])
    with pytest.raises(mi.StepFailure, match="singular"):
        mi.diagnostics.find_integrals(TOP, KAHAN, m, 0.1, SQUARES)


def test_kahan_keeps_the_modified_energy_and_measure_of_a_cubic_hamiltonian():
    """Celledoni, McLachlan, Owren, Quispel (2013): for a cubic H with a constant S Kahan's
    map keeps H̃ = H + (h/3)∇Hᵀ(𝟙 − (h/2)f')⁻¹f and dz/det(𝟙 − (h/2)f').  Hénon–Heiles and
    a random cubic on R⁴ with a degenerate constant S: H̃ to 1e-14 over 10⁴ steps while
    H moves by O(h²); the measure defect at round-off while det DΦ − 1 is not."""
    rng = np.random.default_rng(7)
    T = rng.standard_normal((4, 4, 4))
    A = rng.standard_normal((4, 4))
    S = A - A.T
    S[3], S[:, 3] = 0.0, 0.0  # a Casimir: z4

    def cubic(z):
        return 0.5 * z @ z + 0.1 * jnp.einsum("ijk,i,j,k->", T, z, z, z)

    poisson = mi.systems.PoissonHamiltonian(cubic, S, degree=3)
    hh = mi.systems.HenonHeiles()
    h = 0.05
    for system, x in ((hh, (np.array([0.1, -0.2]), np.array([0.3, 0.25]))),
                      (poisson, np.array([0.2, -0.1, 0.15, 0.05]))):  # fmt: skip
        assert KAHAN.cannot_serve(system) is None
        traj = mi.simulate(system, KAHAN, x, h, 10_000, 100)
        H = np.asarray(system.hamiltonian(traj.x))
        kept = np.asarray(KAHAN.preserved(system, traj.x, h)["H~"])
        assert np.max(np.abs(kept - kept[0])) < 1e-14 * max(1.0, abs(kept[0])), system
        assert np.ptp(H) > 1e-8  # H itself moves
        for hs in (0.1, 0.05):
            rho = KAHAN.invariant_density(system, hs)
            assert mi.diagnostics.measure_defect(system, KAHAN, x, hs, rho) < 1e-15
            assert mi.diagnostics.measure_defect(system, KAHAN, x, hs, lambda _: 1.0) > 1e-10


def test_kahans_invariant_measure_on_the_euler_top():
    """Petrera–Suris: ρ = 1/d1², kept to round-off for every h, while Lebesgue measure
    moves by O(h³) (det DΦ − 1)."""
    scaling = mi.diagnostics.defect_exponent(
        lambda s, i, x, h: mi.diagnostics.measure_defect(s, i, x, h, lambda _: 1.0),
        TOP, KAHAN, M0, [0.2, 0.1, 0.05, 0.025])  # fmt: skip
    assert scaling.exponent is not None and round(scaling.exponent) == 3
    for h in (0.4, 0.1, 0.01):
        rho = KAHAN.invariant_density(TOP, h)
        assert mi.diagnostics.measure_defect(TOP, KAHAN, M0, h, rho) < 1e-15


@pytest.mark.parametrize("n", [3, 4])
def test_kahan_serves_the_clebsch_top_and_every_field_of_degree_two(n):
    """Kahan's map on the Clebsch top (a quadratic field: quadratic H, linear bracket),
    n = 3 and 4: the field's third derivative vanishes; one step is the polarized form
    (z' − z)/h = Q(z, z') + ½B(z + z') + c; on e(3) four relations of degree 2 hold."""
    from mechint.systems.base import field_degree

    system = mi.systems.ClebschTop(tuple(float(j) for j in range(1, n + 1)))
    assert field_degree(system) == 2 and KAHAN.cannot_serve(system) is None
    x = jax.tree.map(jnp.asarray, system.example_state())
    h = 0.05

    @jax.jit
    def checks(system, x):
        def f(z):
            return system.coordinates(system.vector_field(system.from_coordinates(z)))

        z = system.coordinates(x)
        zero = jnp.zeros_like(z)
        third = jax.jacfwd(jax.jacfwd(jax.jacfwd(f)))(z)
        y, st = KAHAN.step(system, x, h)
        z1 = system.coordinates(y)
        Q, B = 0.5 * jax.hessian(f)(zero), jax.jacfwd(f)(zero)
        polar = jnp.einsum("ijk,j,k->i", Q, z, z1) + 0.5 * B @ (z + z1) + f(zero)
        return jnp.max(jnp.abs(third)), st.ok, jnp.max(jnp.abs((z1 - z) / h - polar))

    third, ok, polar = checks(system, x)
    assert float(third) < 1e-12 and bool(ok) and float(polar) < 1e-13
    if n == 3:
        found = mi.diagnostics.find_integrals(system, KAHAN, x, 0.1,
                                              mi.diagnostics.monomials(system, 2))  # fmt: skip
        assert found.dimension == 4 and found.gap[0] > 1e6
    else:
        assert KAHAN.preserved(system, x, h) == {}  # none known in closed form for n ≠ 3


@pytest.mark.parametrize("h", [0.1, 0.5])
def test_kahans_clebsch_integral_in_closed_form(h):
    """``ClebschTop.kahan_integrals`` (n = 3): K = Σ J_i(a_i m_i² − p_i²/a_i) /
    (1 + ε²(|ω|² − |p|²)) kept by Kahan's map to round-off over 10⁴ steps (measured
    ≤ 1.5e-14) from a generic state with random moments, while H moves by O(h²)."""
    rng = np.random.default_rng(4)
    system = mi.systems.ClebschTop(tuple(rng.uniform(0.5, 3.0, 3)))
    M, p = system.example_state()
    A = 0.1 * rng.standard_normal((3, 3))
    x0 = (np.asarray(M) + A - A.T, np.asarray(p) + 0.1 * rng.standard_normal(3))
    traj = mi.simulate(system, KAHAN, x0, h, 10_000, 100)
    K = np.asarray(KAHAN.preserved(system, traj.x, h)["K"])
    H = np.asarray(system.hamiltonian(traj.x))
    assert np.max(np.abs(K - K[0])) < 1e-13 * abs(K[0])
    assert np.ptp(H) > 1e-5 * abs(H[0])  # H is not kept: K is Kahan's own


def test_the_zhukovsky_volterra_gyrostat():
    """ṁ = m × (I⁻¹m + β) = hat(m)∇H; β = 0 is the Euler top; midpoint keeps H and C;
    Kahan's map with β along one axis keeps two relations among (m_i², m_i, 1), with two
    non-zero components one rational integral (closed forms kept over 10⁴ steps)."""
    zv = mi.systems.ZhukovskyVolterra((2.0, 1.0, 0.6667), (0.0, 0.0, 0.3))
    # an equilibrium (m ∥ β along an axis) is a step like any other (rhs = 0: not singular)
    _, st = KAHAN.step(zv, jnp.array([0.0, 0.0, 1.0]), 0.1)
    assert bool(st.ok) and float(st.residual) == 0.0
    m = jnp.asarray(M0)
    grad = jax.grad(lambda m: zv.hamiltonian(m))(m)
    np.testing.assert_allclose(zv.vector_field(m), zv.poisson_tensor(m) @ grad, atol=1e-15)
    euler = mi.systems.ZhukovskyVolterra((2.0, 1.0, 0.6667), (0.0, 0.0, 0.0))
    np.testing.assert_allclose(euler.vector_field(m), TOP.vector_field(m), atol=1e-15)
    traj = mi.simulate(zv, mi.integrators.ImplicitMidpoint(), M0, 0.1, 1000)
    errors = mi.diagnostics.invariant_errors(zv, traj)
    assert max(float(np.max(v)) for v in errors.values()) < 1e-13
    basis = {**SQUARES, "m1": lambda m: m[0], "m2": lambda m: m[1], "m3": lambda m: m[2]}
    found = mi.diagnostics.find_integrals(zv, KAHAN, M0, 0.1, basis)
    assert found.dimension == 2 and found.gap[0] > 1e6
    # their closed forms (the module docstring), β along the third and the first axis
    # (two integrals), with β_2 = 0 and β_3 = 0 (one), kept over 10⁴ steps; none declared
    # with three non-zero β_i
    cases = (((0.0, 0.0, 0.3), {"K1", "K2"}), ((0.4, 0.0, 0.0), {"K2", "K3"}),
             ((0.1, 0.0, 0.3), {"K2"}), ((0.1, 0.2, 0.0), {"K3"}))  # fmt: skip
    for beta, keys in cases:
        system = mi.systems.ZhukovskyVolterra((2.0, 1.0, 0.6667), beta)
        traj = mi.simulate(system, KAHAN, M0, 0.1, 10_000, 100)
        kept = KAHAN.preserved(system, traj.x, 0.1)
        assert set(kept) == keys
        for v in kept.values():
            assert float(np.max(np.abs(v - v[0]))) < 1e-13 * float(np.abs(v[0])), beta
    three_axes = mi.systems.ZhukovskyVolterra((2.0, 1.0, 0.6667), (0.1, 0.2, 0.3))
    assert KAHAN.preserved(three_axes, M0, 0.1) == {}
    # the continuous flow: H and C
    flow = mi.diagnostics.find_integrals(zv, None, M0, 0.1, basis)
    assert flow.dimension == 2
    # two non-zero β_i: a near-integral (singular value O(h⁴): a modified H or C) beside the
    # exact relation on the orbit, the level set of K_2 (numerator − K_2 · denominator,
    # both quadratic), which it leaves ill-determined: candidates found, none verified,
    # and the search says why
    two = mi.systems.ZhukovskyVolterra((2.0, 1.0, 0.6667), (0.1, 0.0, 0.3))
    near = mi.diagnostics.find_integrals(two, KAHAN, M0, 0.1, mi.diagnostics.monomials(two, 2))
    assert near.found == (2,) and near.dimension == 0 and near.verified == (False,)
    assert "near-integrals of the map" in near.decision


def test_a_search_too_long_or_too_large_is_refused_before_any_step(capsys, monkeypatch):
    """Points × stride beyond the steps a search takes, or samples beyond memory: one line
    naming --points or --stride, before the orbit is run; the SVD holds no points × points
    matrix (a million points: 7.3 TiB)."""
    import sys

    from mechint.diagnostics.integrals import _svd

    def no_run(*args, **kwargs):
        raise AssertionError("the orbit was run")

    monkeypatch.setattr(sys.modules["mechint.simulate"], "simulate", no_run)
    argv = ["integrals", "--system", "euler-top", "--inertia", "2,1,0.6667", "--integrator",
            "kahan"]  # fmt: skip
    for extra, option in ((["--points", "1000000000"], "--points"),
                          (["--stride", "1000000000"], "--stride"),
                          (["--points", "3000000", "--stride", "2"], "--stride")):  # fmt: skip
        code, _, err = invoke([*argv, *extra], capsys)
        assert code == 2 and err.startswith(f"mechint integrals: error: {option}:"), err
        assert err.count("\n") == 1 and "a search takes" in err, err
    monkeypatch.setattr("mechint.resources.available_memory", lambda: 10**4)
    code, _, err = invoke(argv, capsys)
    assert code == 2 and "--points:" in err and "of memory" in err, err
    values = np.ones((1_000_000, 4))
    values[:, 1] = np.arange(1e6)
    rel, vt, _ = _svd(values)
    assert vt.shape == (4, 4) and rel[0] == 1.0


def test_the_integrals_command_prints_and_writes_json(tmp_path, capsys):
    import json

    out = tmp_path / "i.json"
    argv = ["integrals", "--system", "euler-top", "--inertia", "2,1,0.6667", "--x0",
            "0.45,0.1,0.89", "--integrator", "kahan", "--degree", "2",
            "--json", str(out)]  # fmt: skip
    code, text, err = invoke(argv, capsys)
    assert code == 0, err
    assert "dimension 2 on every orbit, a clear gap" in text and "m1^2 - " in text
    doc = json.loads(out.read_text())
    assert doc["dimension"] == 2 and len(doc["coefficients"][0]) == 2
    code, _, err = invoke([*argv[:-4], "--degree", "2", "--points", "3"], capsys)
    assert code == 2 and "--points: 3 orbit points" in err
    code, _, err = invoke(["integrals", "--system", "pendulum", "--integrator", "kahan"], capsys)
    assert code == 2 and "not a quadratic field" in err
