"""Diagnostics of any map: one-step defects, their exponents in h, order and drift."""

from typing import Any, cast

import numpy as np
import pytest

import mechint as mi

D = mi.diagnostics
I = mi.integrators
HS = 0.2 * 2.0 ** -np.arange(5)
M0 = np.array([0.45, -0.3, 0.89])


@pytest.mark.parametrize(
    ("inertia", "verdict"),
    [
        ((3.0, 2.0, 1.0), "O(h^3)"),
        ((2.0, 1.0, 2.0 / 3.0), "O(h^3)"),
        ((2.0, 2.0, 1.0), "exact (round-off)"),
        ((1.0, 3.0, 3.0), "exact (round-off)"),
    ],
)
def test_kahans_theorem_poisson_iff_energy_preserving(inertia, verdict):
    """Distinct moments: both defects O(h³); two equal moments: both at round-off."""
    top = mi.systems.EulerTop(inertia)
    poisson = D.defect_exponent(D.poisson_defect, top, I.Kahan(), M0, HS)
    energy = D.defect_exponent(D.energy_defect, top, I.Kahan(), M0, HS)
    assert poisson.verdict == verdict, poisson
    assert energy.verdict == verdict, energy
    if verdict != "exact (round-off)":
        assert poisson.exponent is not None and energy.exponent is not None
        assert abs(poisson.exponent - 3) < 0.2 and abs(energy.exponent - 3) < 0.2
        assert poisson.used.sum() == len(HS)


def test_midpoint_keeps_H_and_C_but_is_not_poisson():
    top = mi.systems.EulerTop((3.0, 2.0, 1.0))
    mid = I.ImplicitMidpoint()
    assert D.defect_exponent(D.energy_defect, top, mid, M0, HS).exact
    casimir = D.defect_exponent(lambda *a: D.casimir_defects(*a)["C"], top, mid, M0, HS)
    assert casimir.exact
    poisson = D.defect_exponent(D.poisson_defect, top, mid, M0, HS)
    assert not poisson.exact and poisson.exponent is not None and poisson.exponent > 2.5, poisson


def test_suris_map_is_poisson_and_a_broken_map_is_caught():
    from tests.systems.rigid_cases import case

    # n = 3: the n = 4 top's Poisson property and reversibility are measured in
    # tests/integrators/test_discrete_lagrangian.py; this is the diagnostics' own path
    system, x = case("qpt", 3)
    dl = I.DiscreteLagrangian()
    assert D.poisson_defect(system, dl, x, 0.1) < 1e-12
    assert D.reversibility_defect(system, dl, x, 0.1) < 1e-13

    class SignFlipped(I.DiscreteLagrangian):
        def step(self, system, x, h):
            y, st = super().step(system, x, h)
            M1, P1 = cast(tuple[Any, Any], y)  # this system's state is (M, P)
            return (-M1, P1), st

    assert D.poisson_defect(system, SignFlipped(), x, 0.1) > 1e-2


def test_momentum_and_reversibility_on_kepler():
    kepler = mi.systems.Kepler()
    x = kepler.periapsis_state(0.5)
    assert D.defect_exponent(
        lambda *a: D.momentum_defect(*a)["L"], kepler, I.StormerVerlet(), x, HS
    ).exact
    rk4 = D.defect_exponent(lambda *a: D.momentum_defect(*a)["L"], kepler, I.RK4(), x, HS)
    assert not rk4.exact and rk4.exponent is not None, rk4
    assert rk4.exponent > 4.5, rk4  # O(h⁵) or better, not round-off
    assert D.reversibility_defect(kepler, I.StormerVerlet(), x, 0.1) < 1e-15
    euler = D.defect_exponent(D.reversibility_defect, kepler, I.SymplecticEuler(), x, HS)
    assert euler.exponent is not None and abs(euler.exponent - 2) < 0.3, euler
    with pytest.raises(mi.UnsupportedError, match="momentum"):
        D.momentum_defect(mi.systems.Pendulum(), I.StormerVerlet(), ([1.0], [0.0]), 0.1)


def test_observed_order_reports_the_points_used():
    top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
    m0 = np.array([0.45, 0.0, 0.89])
    hs = 4.0 / np.array([8, 10, 14, 20, 160, 320])
    fit = D.observed_order(
        top, I.RigidBodySplitting(8), m0, 4.0, hs, lambda T: mi.exact.euler_top(top, m0, T)
    )
    assert abs(fit.order - 8) < 0.3, fit
    # the smallest steps reach the round-off floor and are left out of the fit
    assert fit.used[0] and not fit.used[-1] and fit.used.sum() >= 3, fit
    with pytest.raises(mi.InputError, match="whole number"):
        D.observed_order(top, I.Kahan(), m0, 1.0, [0.3], np.zeros(3))


def test_drift_separates_bounded_from_drifting():
    kepler = mi.systems.Kepler()
    x0 = kepler.periapsis_state(0.5)
    sv = D.drift(kepler, mi.simulate(kepler, I.StormerVerlet(), x0, 0.02, 50_000, 100))
    rk = D.drift(kepler, mi.simulate(kepler, I.RK4(), x0, 0.02, 50_000, 100))
    assert sv["H"].bounded and not rk["H"].bounded
    assert rk["H"].trend > 0.8 * rk["H"].band


def test_a_user_written_map_on_a_user_system_is_measured():
    """Any Integrator subclass is measured, e.g. the explicit midpoint rule
    (RK2) on a user's separable Hamiltonian: not symplectic, not reversible, O(h³) energy
    defect; Störmer-Verlet on the same system is both."""
    import dataclasses

    import jax
    import jax.numpy as jnp

    @dataclasses.dataclass(frozen=True)
    class ExplicitMidpoint(I.Integrator):
        traits = I.Traits(order=2, symmetric=False, explicit=True)

        def cannot_serve(self, system):
            return None

        def step(self, system, x, h):
            f = system.vector_field
            half = jax.tree.map(lambda a, v: a + 0.5 * h * v, x, f(x))
            y = jax.tree.map(lambda a, v: a + h * v, x, f(half))
            return y, mi.maps.ok_status(y)

    quartic = mi.systems.SeparableHamiltonian(
        lambda p: 0.5 * jnp.sum(p * p), lambda q: 0.25 * jnp.sum(q**4), 1
    )
    x = (np.array([0.8]), np.array([0.3]))
    rows = {r.name: r for r in D.check(quartic, ExplicitMidpoint(), x, 0.2)}
    assert rows["symplectic"].verdict == "O(h^3)", rows["symplectic"]
    assert rows["energy H"].verdict == "O(h^3)", rows["energy H"]
    assert not rows["reversibility"].scaling.exact  # O(h⁴) measured: the h³ terms cancel for RK2
    verlet = {r.name: r for r in D.check(quartic, I.StormerVerlet(), x, 0.2)}
    assert verlet["symplectic"].verdict == verlet["reversibility"].verdict == "exact (round-off)"


def test_defects_below_round_off_at_small_h_are_not_called_exact():
    """RK4 keeps nothing exactly: at h = 1e-3 .. 6e-5 its one-step defects on Kepler, and
    its own error, are below round-off, a verdict of the step sizes ("below round-off at
    these h"), never "exact"; at h = 0.2 .. 0.0125 they are O(h^p).  Störmer–Verlet's L,
    kept, is exact at steps that resolve the map; its declared symplectic form is exact
    at any h, the momentum it does not declare only where the steps resolve the map."""
    kepler = mi.systems.Kepler()
    x = kepler.periapsis_state(0.5)
    small = 1e-3 * 2.0 ** -np.arange(5)
    rk4 = D.defect_exponent(D.energy_defect, kepler, I.RK4(), x, small)
    assert rk4.at_floor and not rk4.exact, rk4
    assert rk4.verdict == "below round-off at these h: larger h resolve it"
    assert D.defect_exponent(D.energy_defect, kepler, I.RK4(), x, HS).verdict.startswith("O(h^")
    rows = {r.name: r.verdict for r in D.check(kepler, I.RK4(), x, 1e-3)}
    assert all(v == "below round-off at these h: larger h resolve it" for v in rows.values())
    rows = {r.name: r.verdict for r in D.check(kepler, I.StormerVerlet(), x, 1e-5)}
    assert rows["symplectic"] == "exact (round-off)"
    assert rows["momentum L"] == "below round-off at these h: larger h resolve it"
    rows = {r.name: r.verdict for r in D.check(kepler, I.StormerVerlet(), x, 1e-2)}
    assert rows["momentum L"] == "exact (round-off)"


def test_check_flags_a_declaration_the_measurement_contradicts():
    """A user's explicit Euler declared symplectic, symmetric and of order 2: check's
    verdicts say which declarations the measurement contradicts (symplectic, symmetric,
    and the order: H, L and A1 change at O(h^2) a step where order 2 allows O(h^3));
    Störmer–Verlet's true declarations get no such clause."""
    import dataclasses
    from typing import ClassVar

    import jax

    import mechint as mi
    from mechint.maps import Integrator, Traits, ok_status

    @dataclasses.dataclass(frozen=True)
    class Claimed(Integrator):
        name: ClassVar[str] = "claimed"
        traits = Traits(order=2, symmetric=True, explicit=True, symplectic=True)

        def cannot_serve(self, system):
            return None

        def step(self, system, x, h):
            y = jax.tree.map(lambda a, b: a + h * b, x, system.vector_field(x))
            return y, ok_status(y)

    kepler = mi.systems.Kepler()
    x0 = kepler.periapsis_state(0.5)
    rows = {r.name: r.verdict for r in mi.diagnostics.check(kepler, Claimed(), x0, 0.01)}
    assert rows["symplectic"].endswith("contradicts the declared trait: symplectic")
    assert rows["reversibility"].endswith("contradicts the declared trait: symmetric")
    for name in ("energy H", "momentum L", "integral A1"):
        assert rows[name].startswith("O(h^2) — contradicts the declared order 2"), rows[name]
    assert "contradicts" not in rows["integral A2"]  # O(h^3): within order 2
    honest = mi.diagnostics.check(kepler, mi.integrators.StormerVerlet(), x0, 0.01)
    assert not any("contradicts" in r.verdict for r in honest)
