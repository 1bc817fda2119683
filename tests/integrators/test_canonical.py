"""Mechanical integrators on canonical systems (Marsden; docs/math.md §4): symplecticity,
orders, equalities between the methods, energy and momentum over long runs."""

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi

I = mi.integrators
S = mi.systems

SYMPLECTIC = [
    I.SymplecticEuler("A"),
    I.SymplecticEuler("B"),
    I.StormerVerlet(),
    I.ImplicitMidpoint(),
    I.Splitting(),
    I.Splitting(scheme="lie-trotter"),
    I.Composition(I.StormerVerlet(), "yoshida4"),
    I.Composition(I.StormerVerlet(), "kahan-li8"),
]
SYMPLECTIC_IDS = [
    "euler-A",
    "euler-B",
    "verlet",
    "midpoint",
    "strang",
    "lie-trotter",
    "yoshida4",
    "kahan-li8",
]

PENDULUM = (S.Pendulum(1.3), (np.array([1.2]), np.array([0.4])))
HENON_HEILES = (S.HenonHeiles(1.0), (np.array([0.1, -0.2]), np.array([0.3, 0.25])))


def _kepler(e=0.5):
    kepler = S.Kepler()
    return kepler, kepler.periapsis_state(e)


def _distance(x, y):
    return max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(x, y, strict=True)
    )


@pytest.mark.parametrize("integrator", SYMPLECTIC, ids=SYMPLECTIC_IDS)
@pytest.mark.parametrize("case", [PENDULUM, HENON_HEILES], ids=["pendulum", "henon-heiles"])
def test_symplectic_to_round_off(integrator, case):
    system, x = case
    assert integrator.traits.symplectic
    assert mi.diagnostics.symplectic_defect(system, integrator, x, 0.1) < 1e-13


@pytest.mark.parametrize("integrator", [I.RK4(), I.ExplicitEuler()], ids=["rk4", "euler"])
@pytest.mark.parametrize("case", [PENDULUM, HENON_HEILES], ids=["pendulum", "henon-heiles"])
def test_negative_control_is_not_symplectic(integrator, case):
    system, x = case
    assert not integrator.traits.symplectic
    # RK4's defect is O(h⁵): 2e-10 on the pendulum at h = 0.1, 2000 times the tolerance
    assert mi.diagnostics.symplectic_defect(system, integrator, x, 0.1) > 1e-11


ORDERS = [
    (I.SymplecticEuler("A"), 1),
    (I.SymplecticEuler("B"), 1),
    (I.StormerVerlet(), 2),
    (I.ImplicitMidpoint(), 2),
    (I.Splitting(scheme="lie-trotter"), 1),
    (I.Splitting(), 2),
    (I.Composition(I.StormerVerlet(), "yoshida4"), 4),
    (I.Composition(I.StormerVerlet(), "suzuki4"), 4),
    (I.Composition(I.StormerVerlet(), "yoshida6"), 6),
    (I.Composition(I.StormerVerlet(), "kahan-li6"), 6),
    (I.Composition(I.StormerVerlet(), "kahan-li8"), 8),
    (I.Composition(I.StormerVerlet(), "suzuki-umeno8"), 8),
    (I.Composition(I.StormerVerlet(), "sofroniou-spaletta10"), 10),
]


@pytest.mark.parametrize(
    ("integrator", "order"),
    ORDERS,
    ids=[
        *("euler-A", "euler-B", "verlet", "midpoint", "lie-trotter", "strang"),
        *("yoshida4", "suzuki4", "yoshida6", "kahan-li6", "kahan-li8"),
        *("suzuki-umeno8", "sofroniou-spaletta10"),
    ],
)
def test_observed_order_on_kepler(integrator, order):
    """Error at T = 2 (e = 0.5) against the exact Kepler solution, fitted above 1e-11
    (1e-13 at order 10)."""
    kepler, x0 = _kepler(0.5)
    T = 2.0
    ns = {8: [10, 14, 20, 28], 10: [7, 10, 14, 20]}.get(order, [25, 50, 100, 200])
    if getattr(getattr(integrator, "scheme", None), "name", None) == "suzuki-umeno8":
        ns = [20, 28, 40, 56]  # its error constant is larger: asymptotic from h = 0.1
    ns = np.array(ns)
    exact = np.concatenate(mi.exact.kepler(kepler, x0, T))
    errors = []
    for n in ns:
        traj = mi.simulate(kepler, integrator, x0, T / n, int(n), int(n))
        errors.append(np.max(np.abs(np.concatenate([traj.x[0][-1], traj.x[1][-1]]) - exact)))
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-11 if order < 10 else 1e-13)
    assert fit.used.sum() >= 3, errors
    assert abs(fit.exponent - order) < 0.3, (fit.exponent, errors)
    assert integrator.traits.order == order


def test_example_2_is_the_separable_form_of_the_midpoint_rule():
    """Marsden's Example 2, q = q0 + h(p + p0)/2, p = p0 − h V'((q + q0)/2), solved here
    by fixed-point iteration, equals ImplicitMidpoint (Example 3) on the pendulum."""
    system, (q0, p0) = PENDULUM
    h = 0.2
    w2 = float(system.omega) ** 2
    q, p = q0.copy(), p0.copy()
    for _ in range(200):
        q, p = q0 + h * (p + p0) / 2, p0 - h * w2 * np.sin((q + q0) / 2)
    y, status = I.ImplicitMidpoint().step(system, jax.tree.map(jnp.asarray, (q0, p0)), h)
    qm, pm = cast(tuple[Any, Any], y)  # a canonical state is (q, p)
    assert bool(status.ok)
    assert _distance((qm, pm), (q, p)) < 1e-15


def test_verlet_is_the_strang_splitting_and_two_half_symplectic_euler_steps():
    system, x = HENON_HEILES
    x = jax.tree.map(jnp.asarray, x)
    h = 0.3
    sv = I.StormerVerlet().step(system, x, h)[0]
    strang = I.Splitting((I.Kick(), I.Drift()), "strang").step(system, x, h)[0]
    half = I.SymplecticEuler("B").step(system, x, h / 2)[0]
    half = I.SymplecticEuler("A").step(system, half, h / 2)[0]
    assert _distance(sv, strang) < 1e-15
    assert _distance(sv, half) < 1e-15
    lie = I.Splitting(scheme="lie-trotter").step(system, x, h)[0]
    assert _distance(lie, I.SymplecticEuler("A").step(system, x, h)[0]) < 1e-15


def test_marsden_example_1_by_hand():
    system, (q0, p0) = PENDULUM
    h = 0.1
    q = q0 + h * p0
    p = p0 - h * float(system.omega) ** 2 * np.sin(q)
    got = I.SymplecticEuler("A").step(system, jax.tree.map(jnp.asarray, (q0, p0)), h)[0]
    assert _distance(got, (q, p)) < 1e-16


@pytest.mark.parametrize(
    "integrator",
    [I.SymplecticEuler("A"), I.SymplecticEuler("B"), I.StormerVerlet()],
    ids=["A", "B", "verlet"],
)
def test_general_hamiltonian_path_agrees_with_separable_path(integrator):
    """The implicit (Newton) form for any H(q, p) gives the explicit map when H is separable."""
    general = S.Hamiltonian(
        lambda q, p: 0.5 * jnp.sum(p * p) + 0.5 * jnp.sum(q * q) + 0.25 * jnp.sum(q**4), 2
    )
    separable = S.SeparableHamiltonian(
        lambda p: 0.5 * jnp.sum(p * p), lambda q: 0.5 * jnp.sum(q * q) + 0.25 * jnp.sum(q**4), 2
    )
    x0 = (np.array([0.3, -0.2]), np.array([0.1, 0.4]))
    a = mi.simulate(general, integrator, x0, 0.05, 200, 200).x
    b = mi.simulate(separable, integrator, x0, 0.05, 200, 200).x
    assert _distance(a, b) < 1e-13


def test_non_separable_hamiltonian_is_symplectic():
    """H = ½|p|²(1 + |q|²) + ½|q|²: the implicit forms are symplectic and of their order."""
    system = S.Hamiltonian(lambda q, p: 0.5 * (p @ p) * (1 + q @ q) + 0.5 * (q @ q), 2)
    x = (np.array([0.4, -0.3]), np.array([0.2, 0.5]))
    for integrator in (I.SymplecticEuler("A"), I.SymplecticEuler("B"), I.StormerVerlet()):
        assert mi.diagnostics.symplectic_defect(system, integrator, x, 0.1) < 1e-13


def _slope_and_band(t, err):
    slope = np.polyfit(t, err, 1)[0]
    return slope, float(np.max(err))


def test_verlet_energy_bounded_over_1e6_steps_rk4_drifts():
    """Kepler, e = 0.5, h = 0.01, 10⁶ steps (1600 orbits)."""
    kepler, x0 = _kepler(0.5)
    T = 10_000.0
    sv = mi.simulate(kepler, I.StormerVerlet(), x0, 0.01, 1_000_000, 1000)
    err = mi.diagnostics.invariant_errors(kepler, sv)
    slope, band = _slope_and_band(sv.t, err["H"])
    # no drift: the fitted trend over the whole run is a small part of the bounded band
    assert band < 1e-3
    assert abs(slope) * T < 0.05 * band, (slope * T, band)
    # late errors are no larger than early ones
    assert np.max(err["H"][-100:]) < 1.5 * np.max(err["H"][:100])
    # the angular momentum is a momentum map: kept to round-off over 10^6 steps
    assert np.max(err["L"]) < 1e-12

    rk = mi.simulate(kepler, I.RK4(), x0, 0.01, 1_000_000, 1000)
    err_rk = mi.diagnostics.invariant_errors(kepler, rk)["H"]
    slope_rk, band_rk = _slope_and_band(rk.t, err_rk)
    assert slope_rk * T > 0.8 * band_rk  # the error is a linear drift
    assert err_rk[-1] > 20 * err_rk[len(err_rk) // 50]  # 45x measured


@pytest.mark.parametrize(
    "integrator",
    [
        I.SymplecticEuler("A"),
        I.SymplecticEuler("B"),
        I.ImplicitMidpoint(),
        I.Splitting(),
        I.Composition(I.StormerVerlet(), "kahan-li6"),
    ],
    ids=["A", "B", "midpoint", "strang", "kahan-li6"],
)
def test_momentum_map_kept(integrator):
    kepler, x0 = _kepler(0.7)
    # calls of at most 64 saves: the compiled program of the order test above serves
    # this run too (the states are the same in any chunks)
    traj = mi.simulate(kepler, integrator, x0, 0.01, 20_000, 100, chunk_steps=6400)
    assert "L" in integrator.preserved(kepler, x0, 0.01)
    assert np.max(mi.diagnostics.invariant_errors(kepler, traj)["L"]) < 1e-13
    assert np.max(mi.diagnostics.preserved_errors(traj)["L"]) < 1e-13


def test_midpoint_keeps_the_oscillator_energy_exactly_verlet_does_not():
    ho = S.HarmonicOscillator([1.0, 3.0])
    x0 = (np.array([1.0, 0.2]), np.array([0.0, -0.5]))
    mid = mi.simulate(ho, I.ImplicitMidpoint(), x0, 0.1, 10_000, 100)
    sv = mi.simulate(ho, I.StormerVerlet(), x0, 0.1, 10_000, 100)
    assert np.max(mi.diagnostics.invariant_errors(ho, mid)["H"]) < 1e-13
    assert np.max(mi.diagnostics.invariant_errors(ho, sv)["H"]) > 1e-4
    # and the midpoint map of a linear system is the Cayley transform of h A
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.diag([1.0, 9.0]), np.zeros((2, 2))]])
    cay = np.linalg.solve(np.eye(4) - 0.05 * A, np.eye(4) + 0.05 * A)
    z = np.concatenate(x0)
    for _ in range(100):
        z = cay @ z
    assert np.max(np.abs(np.concatenate([mid.x[0][1], mid.x[1][1]]) - z)) < 1e-13
