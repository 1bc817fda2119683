"""RATTLE and SHAKE (``integrators/rattle.py``) against the angle formulations of the same
pendulums (SciPy's DOP853, independent of mechint), and what the maps declare."""

import dataclasses
from typing import ClassVar, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.errors import UnsupportedError
from mechint.maps import ImplicitIntegrator, Traits
from tests.systems.constrained_cases import (
    double_pendulum,
    double_pendulum_reference,
    spherical_pendulum,
    spherical_pendulum_reference,
)

R = mi.integrators.Rattle()


def _end(traj):
    return tuple(np.asarray(a[-1]) for a in traj.x)


@pytest.fixture(scope="module")
def double():
    system, x0 = double_pendulum()
    return system, x0, double_pendulum_reference(2.0)


@pytest.fixture(scope="module")
def spherical():
    system, x0 = spherical_pendulum()
    return system, x0, spherical_pendulum_reference(5.0)


@pytest.mark.parametrize(
    ("scheme", "order", "ns"),
    [(None, 2, (20, 40, 80, 160)), ("yoshida4", 4, (20, 40, 80, 160)),
     ("yoshida6", 6, (20, 40, 80, 160)), ("kahan-li8", 8, (14, 20, 28, 40))],
)  # fmt: skip
def test_observed_orders_against_the_angle_equations(spherical, scheme, order, ns):
    """The spherical pendulum in Cartesian coordinates by RATTLE and its compositions
    converges to the angle formulation's state at T = 5 with the declared order (±0.25)."""
    system, x0, ref = spherical
    integrator = R if scheme is None else mi.integrators.Composition(R, scheme)
    assert integrator.traits.order == order and integrator.traits.constrained
    errors = []
    for n in ns:
        q, p = _end(mi.simulate(system, integrator, x0, 5.0 / n, n, n))
        errors.append(max(np.max(np.abs(q - ref[0])), np.max(np.abs(p - ref[1]))))
    fit = mi.diagnostics.fit_power_law(5.0 / np.array(ns), errors, floor=1e-12)
    assert fit.used.sum() >= 3, errors
    assert abs(fit.exponent - order) < 0.25, (fit.exponent, errors)


def test_double_pendulum_agrees_with_its_angle_equations(double):
    """The chaotic double pendulum: RATTLE's order-8 composition at h = 1/160 lands on the
    angle formulation's state at T = 2 (its error constants change sign with h there, so
    the orders are fitted on the spherical pendulum above)."""
    system, x0, ref = double
    k8 = mi.integrators.Composition(R, "kahan-li8")
    q, p = _end(mi.simulate(system, k8, x0, 2.0 / 320, 320, 320))
    # the reference's own error (DOP853 at 1e-13, chaotic) is ~1e-12 of |p| ~ 5
    assert max(np.max(np.abs(q - ref[0])), np.max(np.abs(p - ref[1]))) < 5e-11


def test_shake_has_rattles_positions_and_first_order_momenta(double, spherical):
    """SHAKE's positions are RATTLE's (Leimkuhler & Skeel) to round-off over 800 steps of
    the double pendulum, and its momenta projected onto the hidden constraint (in M's
    metric) are RATTLE's; unprojected they leave it by O(h): order 1 against the
    spherical pendulum's angle equations."""
    system, x0, _ = double
    shake = mi.integrators.Shake()
    for n in (100, 800):
        (qa, pa), (qb, pb) = (_end(mi.simulate(system, m, x0, 2.0 / n, n, n)) for m in (R, shake))
        assert np.max(np.abs(qa - qb)) < 1e-12
        assert np.max(np.abs(system.project((qb, pb))[1] - pa)) < 1e-12
    system, x0, ref = spherical
    errors = [np.max(np.abs(_end(mi.simulate(system, shake, x0, 5.0 / n, n, n))[1] - ref[1]))
              for n in (40, 80, 160, 320)]  # fmt: skip
    fit = mi.diagnostics.fit_power_law(5.0 / np.array([40, 80, 160, 320]), errors)
    assert abs(fit.exponent - 1.0) < 0.1, (fit.exponent, errors)
    assert set(shake.preserved(system, x0, 0.1)) == {"constraints", "Lz"}
    assert set(R.preserved(system, x0, 0.1)) == {"constraints", "constraint_rates", "Lz"}


def test_spherical_pendulum_and_the_index_1_field_agree_with_the_angle_equations():
    """RATTLE's order-8 composition and DOP853 on ``Constrained.vector_field`` (the index-1
    field) both land on the angle formulation's state at T = 5."""
    from scipy.integrate import solve_ivp

    system, x0 = spherical_pendulum()
    ref = spherical_pendulum_reference(5.0)
    k8 = mi.integrators.Composition(R, "kahan-li8")
    q, p = _end(mi.simulate(system, k8, x0, 5.0 / 500, 500, 500))
    assert max(np.max(np.abs(q - ref[0])), np.max(np.abs(p - ref[1]))) < 1e-10
    field = jax.jit(lambda z: jnp.concatenate(system.vector_field((z[:3], z[3:]))))
    sol = solve_ivp(lambda t, z: np.asarray(field(jnp.asarray(z))), (0.0, 5.0),
                    np.concatenate(x0), method="DOP853", rtol=1e-13, atol=1e-13)  # fmt: skip
    assert np.max(np.abs(sol.y[:, -1] - np.concatenate(ref))) < 1e-10


def test_constraints_at_every_step_and_a_bounded_energy_over_1e6_steps(double):
    """10⁶ RATTLE steps of the (chaotic) double pendulum, every state saved: both
    residuals ≤ 1e-13 of their scales at every step, the energy in a band with no drift
    (a linear fit's change over the run < 5 % of the band)."""
    system, x0, _ = double
    traj = mi.simulate(system, R, x0, 1e-3, 1_000_000, 1)
    assert traj.failed_step is None or int(np.max(traj.failed_step)) < 0
    inv = jax.jit(system.invariants)
    scales = jax.jit(system.invariant_scales)
    worst = {"constraints": 0.0, "constraint_rates": 0.0}
    energies = []
    for start in range(0, 1_000_001, 200_000):
        x = tuple(jnp.asarray(a[start : start + 200_000]) for a in traj.x)
        values, size = inv(x), scales(x)
        for name in worst:
            rel = np.asarray(values[name]) / np.maximum(np.asarray(size[name]), 1e-300)
            worst[name] = max(worst[name], float(np.max(rel)))
        energies.append(np.asarray(values["H"]))
    assert max(worst.values()) <= 1e-13, worst
    H = np.concatenate(energies)
    band = np.ptp(H)
    slope = np.polyfit(np.asarray(traj.t), H, 1)[0]
    assert abs(slope) * float(traj.t[-1]) < 0.05 * band, (slope, band)
    assert band < 1e-3 * abs(H[0])  # O(h²) = 1e-6 scaled by the motion


@dataclasses.dataclass(frozen=True)
class _EuclideanRattle(ImplicitIntegrator):
    """A negative control: RATTLE's positions with the velocities projected orthogonally
    in the Euclidean metric (not M's): on T*Q, and not symplectic where M ≠ 1."""

    name: ClassVar[str] = "euclidean-rattle"
    traits = Traits(order=2, symmetric=False, explicit=False, constrained=True)

    def cannot_serve(self, system):
        return None

    def step(self, system, x, h):
        x1, st = R.step(system, x, h)
        q1 = cast(tuple, x1)[0]
        p_hat = cast(tuple, mi.integrators.Shake().step(system, x, h)[0])[1]
        G = system.constraint_jacobian(q1)
        m = system.system.params["masses"]
        v = (p_hat.reshape(m.shape[0], -1) / m[:, None]).reshape(-1)
        v = v - G.T @ jnp.linalg.solve(G @ G.T, G @ v)
        return (q1, (v.reshape(m.shape[0], -1) * m[:, None]).reshape(-1)), st


def test_symplectic_on_the_manifold_and_a_negative_control(double):
    """DΦ restricted to the tangent space of T*Q keeps the canonical form to round-off for
    RATTLE and its compositions (and for SHAKE's map out of T*Q); a projection in the
    wrong metric breaks it measurably."""
    system, x0, _ = double
    hs = [0.01, 0.1]
    for integrator in (R, mi.integrators.Composition(R, "yoshida4"), mi.integrators.Shake()):
        defects, _ = mi.diagnostics.symplectic_defects(system, integrator, x0, hs)
        assert np.max(defects) < 1e-13, (integrator.name, defects)
    control = _EuclideanRattle()
    defects, _ = mi.diagnostics.symplectic_defects(system, control, x0, hs)
    assert np.min(defects) > 1e-6, defects
    checks = {row.name: row for row in mi.diagnostics.check(system, R, x0, 0.05)}
    assert checks["symplectic"].defect < 1e-13
    assert checks["reversibility"].defect < 1e-13


def test_momentum_about_the_vertical_is_kept():
    """A spinning spherical double pendulum: Lz kept to round-off by RATTLE, SHAKE and a
    composition over 10⁴ steps, as declared; H is not."""
    system = mi.systems.PendulumChain([1.0, 0.5], [1.0, 0.7], 1.0, dim=3)
    x0 = mi.systems.hanging_state(system, [0.8, 1.4], [0.1, -0.3], [0.0, 1.0], [0.7, -0.4])
    for integrator in (R, mi.integrators.Shake(), mi.integrators.Composition(R, "yoshida4")):
        traj = mi.simulate(system, integrator, x0, 0.02, 10_000, 100)
        assert "Lz" in integrator.preserved(system, x0, 0.02)
        kept = mi.diagnostics.preserved_errors(traj)
        assert np.max(kept["Lz"]) < 1e-12, integrator.name
        assert np.max(kept["constraints"]) < 1e-13, integrator.name
        assert np.max(mi.diagnostics.invariant_errors(system, traj)["H"]) > 1e-7


def test_a_step_too_large_fails_with_its_reason_not_off_the_manifold(double):
    system, x0, _ = double
    traj = mi.simulate(system, R, x0, 0.5, 40, 1, throw=False)
    assert traj.failed_step is not None
    assert int(np.asarray(traj.failed_step)) >= 0
    assert str(np.asarray(traj.reason)) == mi.maps.Reason.NOT_CONVERGED.label
    shown = np.asarray(~np.isnan(np.asarray(traj.x[0])).any(axis=1), dtype=bool)  # before it
    assert shown[0] and not shown[-1]
    g, g_dot = system.residuals(tuple(jnp.asarray(np.asarray(a)[shown]) for a in traj.x))
    assert np.max(np.abs(np.asarray(g))) < 1e-13 and np.max(np.abs(np.asarray(g_dot))) < 1e-13


def test_a_batch_is_its_members(double):
    """A batch's members are their single runs to round-off (the batched Newton solves
    and products sum in another order: 5e-15 measured)."""
    system, x0, _ = double
    rng = np.random.default_rng(0)
    states = [system.project((x0[0] + 0.05 * rng.standard_normal(4), x0[1])) for _ in range(3)]
    batch = tuple(np.stack([s[i] for s in states]) for i in range(2))
    traj = mi.simulate(system, R, batch, 0.01, 200, 50)
    for k, s in enumerate(states):
        one = mi.simulate(system, R, s, 0.01, 200, 50)
        for a, b in zip(traj.x, one.x, strict=True):
            np.testing.assert_allclose(np.asarray(a)[k], np.asarray(b), rtol=1e-13)


def test_refused_by_the_maps_that_do_not_know_constraints(double):
    system, x0, _ = double
    for name in ("rk4", "stormer-verlet", "midpoint", "splitting"):
        with pytest.raises(UnsupportedError, match="constraint manifold"):
            mi.simulate(system, mi.integrators.build(name, system), x0, 0.01, 10)
    assert set(mi.integrators.serving(system)) == {"composition", "rattle", "shake"}
    composition = mi.integrators.build("composition", system)
    assert isinstance(composition, mi.integrators.Composition) and composition.base == R
    with pytest.raises(UnsupportedError, match="Constrained"):
        mi.simulate(mi.systems.Kepler(), R, mi.systems.Kepler().periapsis_state(0.3), 0.1, 1)


def test_masses_and_lengths_orders_apart_run_at_round_off():
    """Masses 100 and 0.01, or rods of 1 and 10⁻³: the small multiplier's update is the
    rounding of the large one's and never reaches rtol of it, so the position solve is
    also done where its updates stop shrinking with every constraint met to a few ulps
    of its terms. RATTLE and SHAKE run 2000 steps of both (they failed at the first
    steps without it), the constraints at round-off and RATTLE's energy error O(h²)
    (quartered at h/2)."""
    # (the short rod swings at about 140 rad/s: its steps 10x shorter, for O(h²) to show)
    for masses, lengths, step in (([100.0, 0.01], [1.0, 1.0], 1e-3),
                                  ([1.0, 1.0], [1.0, 1e-3], 1e-4)):  # fmt: skip
        system = mi.systems.PendulumChain(masses=masses, lengths=lengths, gravity=9.81, dim=2)
        x0 = mi.systems.hanging_state(system, angles=[1.0, 2.0], rates=[0.0, 1.0])
        drift = []
        for integrator, h in ((R, step), (mi.integrators.Shake(), step), (R, step / 2)):
            n = round(2000 * step / h)  # 2000 steps of ``step``, sampled every 100
            run = mi.simulate(system, integrator, x0, h, n, n // 20)
            g = np.asarray(run.invariants()["constraints"])
            assert np.max(np.abs(g)) < 1e-15 * max(lengths) ** 2, (masses, lengths, g)
            H = np.asarray(run.invariants()["H"])
            drift.append(np.max(np.abs(H - H[0])))
        assert 3.5 < drift[0] / drift[2] < 4.5, (masses, lengths, drift)
