"""Marsden's energy integrators (AVF, Gonzalez and Itoh–Abe discrete gradients) and
Gauss–Legendre collocation: the numbers issue 14 asks for."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.integrators.tableau import GAUSS, CollocationTableau

S, I = mi.systems, mi.integrators

ENERGY_MAPS = [I.AverageVectorField(), I.DiscreteGradient(), I.DiscreteGradient("itoh-abe")]
ENERGY_IDS = ["avf", "gonzalez", "itoh-abe"]
SYSTEMS = [
    ("pendulum", S.Pendulum(), (np.array([1.0]), np.array([0.5]))),
    ("kepler-e0.7", S.Kepler(), S.Kepler().periapsis_state(0.7)),
    ("henon-heiles", S.HenonHeiles(), (np.array([0.1, -0.2]), np.array([0.3, 0.25]))),
]


@pytest.mark.parametrize("integrator", ENERGY_MAPS, ids=ENERGY_IDS)
@pytest.mark.parametrize(("name", "system", "x0"), SYSTEMS, ids=[s[0] for s in SYSTEMS])
def test_energy_maps_keep_H_over_1e4_steps(integrator, name, system, x0):
    """Relative energy error ≤ 1e-13 over 10^4 steps (h = 0.01; measured ≤ 4e-14, two
    of them polynomial-exact, the others through the checked 8-node quadrature); on
    Kepler, Gonzalez's map in the rotation invariants keeps L to 1e-13 as well (measured
    5e-15) while the AVF and Itoh–Abe do not."""
    # in calls of 64 saves: the compiled program of the order runs below (one save, in
    # a 64-save chunk) serves this run too; the states are the same in any chunks
    traj = mi.simulate(system, integrator, x0, 0.01, 10_000, 100, chunk_steps=6400)
    errors = mi.diagnostics.invariant_errors(system, traj)
    assert np.max(errors["H"]) < 1e-13, np.max(errors["H"])
    if "L" in errors:
        keeps_L = "L" in integrator.preserved(system, x0, 0.01)
        assert keeps_L == (integrator == I.DiscreteGradient())
        assert (np.max(errors["L"]) < 1e-13) == keeps_L, np.max(errors["L"])


@pytest.mark.parametrize(
    ("integrator", "order"), list(zip(ENERGY_MAPS, [2, 2, 1], strict=True)), ids=ENERGY_IDS
)
def test_energy_map_orders_on_kepler(integrator, order):
    """Observed orders against the exact Kepler solution (e = 0.3, T = 2): AVF 2,
    Gonzalez 2, Itoh–Abe 1 (test_traits measures them on the Euler top, where H is
    quadratic)."""
    kepler = S.Kepler()
    x0 = kepler.periapsis_state(0.3)
    exact = mi.exact.kepler(kepler, x0, 2.0)
    ns = np.array([50, 100, 200, 400])
    errors = []
    for n in ns:
        x = jax.tree.map(lambda a: a[-1], mi.simulate(kepler, integrator, x0, 2.0 / n, n, n).x)
        errors.append(max(float(np.max(np.abs(a - b))) for a, b in zip(x, exact, strict=True)))
    fit = mi.diagnostics.fit_power_law(2.0 / ns, errors, floor=1e-13)
    assert abs(fit.exponent - order) < 0.15, (fit.exponent, errors)


def test_avf_and_gonzalez_on_a_quadratic_H_are_the_midpoint_rule():
    """With H quadratic, ∫∇H over the segment is ∇H at the midpoint and Gonzalez's
    correction vanishes: both maps are the implicit midpoint rule (to round-off)."""
    system = S.HarmonicOscillator(jnp.array([1.0, 2.3]))
    x0 = (np.array([0.3, -0.1]), np.array([0.2, 0.4]))
    want = mi.simulate(system, I.ImplicitMidpoint(), x0, 0.1, 200, 200).x
    for integrator in ENERGY_MAPS[:2]:
        got = mi.simulate(system, integrator, x0, 0.1, 200, 200).x
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)


def test_an_unconverged_quadrature_fails_the_step():
    """A pendulum step so long that ∇H = sin q swings over many periods along the
    segment: the 8-node rule is not exact to round-off there, and the step fails (data,
    not a silently drifting energy); every step that succeeds keeps H."""
    pendulum = S.Pendulum()
    x0 = (jnp.array([0.0]), jnp.array([30.0]))
    sol = mi.integrate(pendulum, I.AverageVectorField(), x0, 1.0, 1)
    assert int(sol.failed_step) == 1
    assert I.Reason(int(sol.reason)) is I.Reason.NOT_CONVERGED
    small = mi.integrate(pendulum, I.AverageVectorField(), x0, 0.01, 1)
    assert bool(small.ok)
    H = pendulum.hamiltonian(jax.tree.map(lambda a: a[-1], small.x))
    assert abs(float(H) - float(pendulum.hamiltonian(x0))) < 1e-13 * 450
    # the check's floor counts the rounding of the nodes' moving coordinates only: a
    # large coordinate that stays put (q₂ = 1e12) does not hide the failure
    wavy = S.Hamiltonian(lambda q, p: 0.5 * jnp.sum(p**2) + jnp.cos(100.0 * q[0]) / 1e4, dof=2)
    for far in (0.0, 1e12):
        x = (jnp.array([0.0, far]), jnp.array([1.0, 0.0]))
        sol = mi.integrate(wavy, I.AverageVectorField(), x, 0.1, 1)
        assert int(sol.failed_step) == 1, far


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_gauss_orders_symplecticity_and_quadratic_invariants(stages):
    """Gauss(s): observed order 2s on Kepler (e = 0.5, T = 2); symplectic defect
    ≤ 1e-13 at h = 0.1; the Euler top's H and C (quadratic) kept to 1e-13 over 10^4
    steps."""
    kepler = S.Kepler()
    x0 = kepler.periapsis_state(0.5)
    exact = mi.exact.kepler(kepler, x0, 2.0)
    ns = np.array([10, 20, 40, 80]) if stages < 4 else np.array([8, 12, 16, 24])
    errors = []
    for n in ns:
        x = jax.tree.map(lambda a: a[-1], mi.simulate(kepler, I.Gauss(stages), x0, 2.0 / n, n, n).x)
        errors.append(max(float(np.max(np.abs(a - b))) for a, b in zip(x, exact, strict=True)))
    fit = mi.diagnostics.fit_power_law(2.0 / ns, errors, floor=1e-12)
    assert fit.used.sum() >= 3 and abs(fit.exponent - 2 * stages) < 0.3, (fit.exponent, errors)
    defects, _ = mi.diagnostics.symplectic_defects(kepler, I.Gauss(stages), x0, [0.1])
    assert defects[0] < 1e-13
    top = S.EulerTop((2.0, 1.0, 2.0 / 3.0))
    # calls of 64 saves: the program of test_traits' Gauss runs on the top serves this one
    traj = mi.simulate(top, I.Gauss(stages), top.example_state(), 0.1, 10_000, 100,
                       chunk_steps=6400)  # fmt: skip
    for name, err in mi.diagnostics.invariant_errors(top, traj).items():
        assert np.max(err) < 1e-13, (name, np.max(err))


def test_gauss_tableaus_are_verified_on_construction():
    """The stored coefficients meet B(2s), C(s), D(s), symplecticity and symmetry to
    4e-16; one digit changed in one coefficient is refused."""
    for s, table in GAUSS.items():
        assert table.order == 2 * s and table.stages == s
        assert max(table.defects().values()) <= 4e-16
    t = GAUSS[3]
    a = tuple(tuple(row) for row in t.a)
    bad = (a[0], (a[1][0], "0.2222222222222232222222222", a[1][2]), a[2])
    with pytest.raises(ValueError, match="fails"):
        dataclasses.replace(t, a=bad)
    with pytest.raises(ValueError, match="imply"):
        CollocationTableau(t.a, t.b, t.c, B=8, C=3, D=3)
    with pytest.raises(mi.InputError, match="stages"):
        I.Gauss(5)
    with pytest.raises(mi.InputError, match="variant"):
        I.DiscreteGradient("midpoint")


def _quartic_top(m):
    """H = ½ m·I⁻¹m + (m·I⁻¹m)²/4 on so(3)*: not quadratic."""
    e = jnp.sum(m * m / jnp.array([2.0, 1.0, 2.0 / 3.0]))
    return 0.5 * e + 0.25 * e**2


def _top_in_a_field(m, g):
    """A heavy top with a non-polynomial potential on e(3)*."""
    return (
        0.5 * jnp.sum(m * m / jnp.array([2.0, 1.5, 1.0]))
        + jnp.exp(0.3 * g[2])
        + 0.2 * jnp.cos(g[0])
    )


LIE_POISSON = [
    ("so3-quartic", S.LiePoissonHamiltonian(_quartic_top, "so3", degree=4)),
    ("e3-exp-cos", S.LiePoissonHamiltonian(_top_in_a_field, "e3")),
]


@pytest.mark.parametrize("system", [c[1] for c in LIE_POISSON], ids=[c[0] for c in LIE_POISSON])
def test_lie_poisson_hamiltonian_structure(system):
    """Π∇H is the vector field and every Casimir's gradient is in Π's kernel (at a
    random state), as for the built-in systems."""
    rng = np.random.default_rng(3)
    z = jnp.asarray(rng.standard_normal(3 if system.algebra == "so3" else 6))
    x = system.from_coordinates(z)
    P = system.poisson_tensor(x)
    grad = jax.grad(lambda z: system.hamiltonian(system.from_coordinates(z)))(z)
    f = system.coordinates(system.vector_field(x))
    np.testing.assert_allclose(P @ grad, f, atol=1e-14)
    np.testing.assert_allclose(P, -P.T, atol=0)
    for name in system.casimirs(x):
        dC = jax.grad(lambda z, n=name: system.casimirs(system.from_coordinates(z))[n])(z)
        assert np.max(np.abs(P @ dC)) < 1e-14, name


@pytest.mark.parametrize(
    ("system", "integrator"),
    [(LIE_POISSON[0][1], ENERGY_MAPS[0]), (LIE_POISSON[1][1], ENERGY_MAPS[0]),
     (LIE_POISSON[1][1], ENERGY_MAPS[1]), (LIE_POISSON[0][1], ENERGY_MAPS[2])],
    ids=["so3-quartic-avf", "e3-exp-cos-avf", "e3-exp-cos-gonzalez", "so3-quartic-itoh-abe"],
)  # fmt: skip
def test_energy_casimir_map_keeps_H_and_the_quadratic_casimirs(system, integrator):
    """The AVF with Π at the midpoint on so(3)* (quartic H, exact 2-node rule) and e(3)*
    (exp and cos in γ: 8 nodes, checked), and the discrete gradients with Π at the
    midpoint: H and every Casimir (all quadratic here) to 1e-13 relative over 10^4 steps.
    The AVF is not a Poisson map (defect O(h^3), measured)."""
    x0 = system.example_state()
    traj = mi.simulate(system, integrator, x0, 0.01, 10_000, 100)
    errors = mi.diagnostics.invariant_errors(system, traj)
    assert set(errors) == {"H", *system.casimirs(x0)}
    for name, err in errors.items():
        assert np.max(err) < 1e-13, (name, np.max(err))
    assert set(integrator.preserved(system, x0, 0.01)) == set(errors)
    if integrator != I.AverageVectorField():
        return
    defects, _ = mi.diagnostics.poisson_defects(system, integrator, x0,
                                                [0.2, 0.1, 0.05])  # fmt: skip
    slope = np.polyfit(np.log([0.2, 0.1, 0.05]), np.log(defects), 1)[0]
    assert abs(slope - 3) < 0.3, (defects, slope)


def test_energy_casimir_map_on_quadratic_H_is_midpoint_and_higher_casimirs_drift():
    """On a quadratic H on so(3)* (the Euler top's) the energy–Casimir map is the
    midpoint rule.  On so(5), where that is the map (the free body's H is quadratic),
    H and tr M² are exact while the quartic Casimir tr M⁴ drifts: only quadratic
    Casimirs are exact.  (On so(4), tr M⁴ = ½(tr M²)² − 4 Pf(M)² with the Pfaffian
    quadratic, so it is kept there.)"""
    inertia = jnp.array([2.0, 1.0, 2.0 / 3.0])
    top = S.LiePoissonHamiltonian(lambda m: 0.5 * jnp.sum(m * m / inertia), "so3", degree=2)
    m0 = top.example_state()
    got = mi.simulate(top, I.AverageVectorField(), m0, 0.1, 100, 100).x
    want = mi.simulate(top, I.ImplicitMidpoint(), m0, 0.1, 100, 100).x
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
    body = S.FreeRigidBody((1.0, 1.6, 2.5, 3.5, 4.1))
    traj = mi.simulate(body, I.ImplicitMidpoint(), body.example_state(), 0.2, 2000, 100)
    errors = {k: float(np.max(v)) for k, v in mi.diagnostics.invariant_errors(body, traj).items()}
    assert errors["H"] < 1e-13 and errors["trM2"] < 1e-13, errors
    assert errors["trM4"] > 1e-8, errors


# -- a constant skew structure S (PoissonHamiltonian) ------------------------------------
_GAMMA = np.array([1.0, -0.5, 2.0])  # circulations of three point vortices


def _vortices(z):
    """Kirchhoff's H = −(1/4π) Σ_{i<j} Γ_iΓ_j ln|r_i − r_j| of three vortices in the plane."""
    r = z.reshape(3, 2)
    pairs = [(0, 1), (0, 2), (1, 2)]
    return -sum(_GAMMA[i] * _GAMMA[j] * jnp.log(jnp.sum((r[i] - r[j]) ** 2)) for i, j in pairs) / (
        8 * np.pi
    )


def _vortex_structure() -> np.ndarray:
    """S = ⊕ Γ_i⁻¹ 𝕁: Γ_i ẋ_i = ∂H/∂y_i, Γ_i ẏ_i = −∂H/∂x_i."""
    S_ = np.zeros((6, 6))
    for i, g in enumerate(_GAMMA):
        S_[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = np.array([[0.0, 1.0], [-1.0, 0.0]]) / g
    return S_


VORTICES = S.PoissonHamiltonian(_vortices, _vortex_structure())
VORTEX_X0 = np.array([1.0, 0.0, -0.5, 0.8, 0.2, -0.7])


def _impulse(z):
    """The linear impulse Σ Γ_i r_i: a linear first integral (translations), not a
    Casimir (S is invertible)."""
    return np.einsum("i,...ij->...j", _GAMMA, np.asarray(z).reshape(*np.shape(z)[:-1], 3, 2))


@pytest.mark.parametrize("integrator", ENERGY_MAPS, ids=ENERGY_IDS)
def test_energy_maps_with_a_constant_structure_keep_H_and_linear_integrals(integrator):
    """Three point vortices (S = ⊕ Γ_i⁻¹ 𝕁, not canonical; H logarithmic, so the checked
    8-node rule): H to 1e-13 relative over 10^4 steps (measured ≤ 3e-14).  The AVF also
    keeps the linear impulse Σ Γ_i r_i (cᵀS∇H ≡ 0 integrates to cᵀS∫∇H = 0); the
    discrete gradients do not (cᵀSΔ ≠ 0 in Gonzalez's correction; measured 1.6e-3)."""
    traj = mi.simulate(VORTICES, integrator, VORTEX_X0, 0.01, 10_000, 100)
    assert np.max(mi.diagnostics.invariant_errors(VORTICES, traj)["H"]) < 1e-13
    moved = np.max(np.abs(_impulse(traj.x) - _impulse(VORTEX_X0)))
    if integrator == I.AverageVectorField():
        assert moved < 1e-13, moved
    else:
        assert moved > 1e-9, moved
    assert set(integrator.preserved(VORTICES, VORTEX_X0, 0.01)) == {"H"}


def test_constant_structure_poisson_defects():
    """Symplectic Runge–Kutta maps are Poisson for a constant S (declared through
    ``poisson_on``; midpoint measured ≤ 1e-14); the energy maps are not: the AVF's
    defect is O(h^3) (fitted over h = 0.2, 0.1, 0.05; measured 3.02; Gonzalez's 3.02 and
    Itoh–Abe's 2.0 measured once, for the note)."""
    hs = [0.2, 0.1, 0.05]
    for integrator in [I.Gauss(2), I.Gauss(3), *ENERGY_MAPS, I.RK4()]:
        assert integrator.poisson_on(VORTICES) == isinstance(integrator, I.Gauss)
    for integrator, slope in [(I.ImplicitMidpoint(), None), (ENERGY_MAPS[0], 3)]:
        defects, _ = mi.diagnostics.poisson_defects(VORTICES, integrator, VORTEX_X0, hs)
        assert integrator.poisson_on(VORTICES) == (slope is None)
        if slope is None:
            assert np.max(defects) < 1e-14, (integrator.name, defects)
        else:
            fitted = np.polyfit(np.log(hs), np.log(defects), 1)[0]
            assert abs(fitted - slope) < 0.2, (integrator.name, defects, fitted)


def test_a_degenerate_structure_has_linear_casimirs_and_they_are_kept():
    """S = hat(c) (rank 2): ker S = span(c) gives the Casimir C1 = ĉ·z, computed from
    S.  The AVF with a non-polynomial H keeps H and C1 to 1e-13 over 10^4 steps;
    midpoint keeps C1 (linear) but not H."""
    c = np.array([0.3, -0.2, 0.9])

    def H(z):
        return 0.5 * jnp.sum(z * z * jnp.array([1.0, 2.0, 3.0])) + 0.3 * jnp.cos(z[0])

    system = S.PoissonHamiltonian(H, np.asarray(mi.lie.hat(c)))
    assert system.casimir_names == ("C1",)
    np.testing.assert_allclose(np.abs(system.kernel[0]), np.abs(c) / np.linalg.norm(c), atol=1e-15)
    x0 = np.array([0.3, 0.2, -0.4])
    for integrator, kept in [(I.AverageVectorField(), {"H", "C1"}), (I.ImplicitMidpoint(), {"C1"})]:
        assert set(integrator.preserved(system, x0, 0.05)) == kept
        traj = mi.simulate(system, integrator, x0, 0.05, 10_000, 100)
        errors = mi.diagnostics.invariant_errors(system, traj)
        for name, err in errors.items():
            assert (np.max(err) < 1e-13) == (name in kept), (integrator.name, name, np.max(err))


@pytest.mark.parametrize(
    ("S_", "match"),
    [
        (np.array([[0.0, 1.0], [1.0, 0.0]]), "skew"),
        (np.zeros((3, 3)), "zero"),
        (np.ones((2, 3)), "square"),
        (np.array([[0.0, np.nan], [-np.nan, 0.0]]), "S"),
        ([[0.0]], "square"),
    ],
)
def test_poisson_hamiltonian_refuses_a_bad_structure(S_, match):
    with pytest.raises(mi.InputError, match=match):
        S.PoissonHamiltonian(lambda z: jnp.sum(z**2), S_)
    with pytest.raises(mi.InputError, match="H"):
        S.PoissonHamiltonian(lambda z: z, np.array([[0.0, 1.0], [-1.0, 0.0]]))
