"""Tangent vectors by the exact tangent map of a step (``integrators.Tangent``), and the
chaos indicators read from them (``diagnostics.lyapunov``, ``diagnostics.megno``)."""

from __future__ import annotations

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.errors import InputError
from mechint.integrators.tangent import HEAD, initial_vectors

H = 0.05


def henon_heiles_start(y0: float, energy: float = 0.125):
    px0 = np.sqrt(2 * (energy - (0.5 * y0**2 - y0**3 / 3)))
    return np.array([0.0, y0]), np.array([px0, 0.0])


@pytest.fixture(scope="module")
def spectrum_run():
    """A chaotic and a regular Hénon–Heiles orbit, four vectors, 60 000 steps (T = 3000)."""
    system = mi.systems.HenonHeiles(1.0)
    x0 = tuple(np.stack(p) for p in zip(henon_heiles_start(-0.1), henon_heiles_start(0.3),
                                        strict=True))  # fmt: skip
    tangent = mi.integrators.Tangent(mi.integrators.StormerVerlet(), vectors=4)
    return system, x0, mi.simulate(system, tangent, x0, H, 60_000, save_every=10_000)


def test_benettin_against_the_jacobian_of_whole_blocks(spectrum_run):
    """The independent reference: the Jacobian of 10-step blocks of the plain map by
    ``jax.jacfwd`` of ``integrate``, QR every block, from the same first vectors.  The
    logarithms of growth agree to 1e-10 relative after 2000 steps."""
    system, x0, _ = spectrum_run
    z0 = jnp.concatenate([jnp.asarray(x0[0][0]), jnp.asarray(x0[1][0])])

    def block(z):
        sol = mi.integrate(system, mi.integrators.StormerVerlet(), (z[:2], z[2:]), H, 10,
                           checkpoint=False)  # fmt: skip
        return jnp.concatenate([sol.x[0][-1], sol.x[1][-1]])

    def one(carry, _):
        z, Q, logs = carry
        Q, R = jnp.linalg.qr(jax.jacfwd(block)(z) @ Q)
        d = jnp.diagonal(R)
        return (block(z), Q * jnp.sign(d), logs + jnp.log(jnp.abs(d))), None

    Q0 = jnp.asarray(initial_vectors(4, 4).T)
    z, Q, logs = jax.lax.scan(one, (z0, Q0, jnp.zeros(4)), None, length=200)[0]
    tangent = mi.integrators.Tangent(mi.integrators.StormerVerlet(), vectors=4)
    sol = mi.integrate(system, tangent, (x0[0][0], x0[1][0]), H, 2000)
    part = np.asarray(sol.x[1][-1])
    np.testing.assert_allclose(part[HEAD : HEAD + 4], logs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(part[HEAD + 4 :].reshape(4, 4), np.asarray(Q).T, atol=1e-10)
    assert part[1] == 2000  # the step count
    np.testing.assert_array_equal(np.concatenate([sol.x[0][0][-1], sol.x[0][1][-1]]), z)


def test_states_are_the_base_maps_bit_for_bit(spectrum_run):
    system, x0, run = spectrum_run
    plain = mi.simulate(system, mi.integrators.StormerVerlet(), x0, H, 60_000, save_every=10_000)
    for a, b in zip(jax.tree.leaves(run.x), jax.tree.leaves(plain.x), strict=True):
        np.testing.assert_array_equal(a, b)
    assert run.integrator == mi.integrators.StormerVerlet()  # not in the run's record
    assert run.tangent.shape == (2, 7, HEAD + 4 + 16)


def test_spectrum_pairs_sum_and_megno(spectrum_run):
    """Symplectic: on the chaotic orbit ± pairs to round-off after a warm-up of 1500
    (1.1e-3 without one, the start's misalignment over T), on the regular orbit (all
    exponents near 0, the vectors align only polynomially) like 1/T; the sum of all
    four at round-off either way.  MEGNO grows like λ t / 2 on the chaotic orbit and
    is near 2 on the regular one."""
    _, _, run = spectrum_run
    lam = mi.diagnostics.lyapunov(run, warm_up=1500.0)
    assert lam.shape == (2, 4)
    assert lam[0, 0] > 0.01  # chaotic
    assert abs(lam[0, 0] + lam[0, 3]) < 1e-14 and abs(lam[0, 1] + lam[0, 2]) < 1e-14
    assert abs(lam[1, 0] + lam[1, 3]) < 1e-4 and abs(lam[1, 1] + lam[1, 2]) < 1e-4
    for m in range(2):
        assert abs(lam[m].sum()) < 1e-15
    cold = mi.diagnostics.lyapunov(run)
    assert abs(cold[0, 0] + cold[0, 3]) > 1e-4
    history = mi.diagnostics.lyapunov(run, history=True, warm_up=1500.0)
    assert history.shape == (2, 7, 4) and np.all(np.isnan(history[:, :4]))
    np.testing.assert_array_equal(history[:, -1], lam)
    y = mi.diagnostics.megno(run, history=True)
    assert y.shape == (2, 7) and np.isnan(y[0, 0])
    assert abs(y[0, -1] / (cold[0, 0] * run.t[-1] / 2) - 1) < 0.3
    assert 1.0 < y[1, -1] < 2.1 and lam[1, 0] < 2e-3


def test_megno_limits_of_integrable_orbits():
    """⟨Y⟩ → 0 on an isochronous oscillator, → 2 on a Kepler ellipse (linear shear);
    the discrete MEGNO of the map, independent of h at the same time for the ellipse."""
    kep = mi.systems.Kepler()
    e = 0.5
    x0 = (np.array([1 - e, 0.0]), np.array([0.0, np.sqrt((1 + e) / (1 - e))]))
    tangent = mi.integrators.Tangent(mi.integrators.StormerVerlet())
    y = [mi.diagnostics.megno(mi.simulate(kep, tangent, x0, 2 * np.pi / n, 1000 * n))
         for n in (200, 400)]  # fmt: skip
    assert abs(y[0] - 2) < 5e-3 and abs(y[1] - y[0]) < 1e-3
    osc = mi.systems.HarmonicOscillator()
    run = mi.simulate(osc, tangent, osc.example_state(), 2 * np.pi / 200, 20_000)
    assert abs(mi.diagnostics.megno(run)) < 1e-6
    assert abs(mi.diagnostics.lyapunov(run)[0]) < 1e-8


def test_megno_sums_against_the_growth_of_each_step():
    """An ``integrate`` run saved every step: its per-step growth log|δ_j|/|δ_{j−1}|
    (differences of the summed logarithm) gives Y_n = (2/n) Σ (j − ½) log r_j and
    ⟨Y⟩_n = (1/n) Σ Y_j in NumPy, equal to what the map's steps summed."""
    system = mi.systems.HenonHeiles(1.0)
    sol = mi.integrate(system, mi.integrators.Tangent(mi.integrators.StormerVerlet()),
                       henon_heiles_start(-0.1), H, 400, save_every=1)  # fmt: skip
    part = np.asarray(sol.x[1])
    log_r = np.diff(part[:, HEAD])
    j = np.arange(1, 401)
    y = 2 * np.cumsum((j - 0.5) * log_r) / j
    np.testing.assert_allclose(mi.diagnostics.megno(sol.x[1], history=True)[1:],
                               np.cumsum(y) / j, rtol=1e-12)  # fmt: skip
    lam = mi.diagnostics.lyapunov(sol.x[1], t=sol.t)
    np.testing.assert_allclose(lam, part[-1, HEAD] / (400 * H), rtol=1e-15)
    # the vector stays a unit vector
    np.testing.assert_allclose(np.linalg.norm(part[:, HEAD + 1 :], axis=1), 1.0, rtol=1e-14)


def test_bad_input_before_any_compile():
    sv = mi.integrators.StormerVerlet()
    for k in (0, -1, True, 1.5):
        with pytest.raises(InputError, match="vectors"):
            mi.integrators.Tangent(sv, vectors=cast(Any, k))
    with pytest.raises(InputError, match="Tangent already"):
        mi.integrators.Tangent(mi.integrators.Tangent(sv))
    with pytest.raises(InputError, match=r"vectors.*dimension 4"):
        mi.integrate(mi.systems.HenonHeiles(1.0), mi.integrators.Tangent(sv, vectors=5),
                     henon_heiles_start(0.3), H, 10)  # fmt: skip
    system = mi.systems.HarmonicOscillator()
    plain = mi.simulate(system, sv, system.example_state(), 0.1, 10)
    with pytest.raises(InputError, match="no tangent vectors"):
        mi.diagnostics.megno(plain)
    with pytest.raises(InputError, match="no tangent vectors"):
        mi.diagnostics.lyapunov(plain)
    run = mi.simulate(system, mi.integrators.Tangent(sv), system.example_state(), 0.1, 10)
    for warm_up in (2.0, 1.0):  # (the run lasts 1.0: no time after either)
        with pytest.raises(InputError, match="warm_up"):
            mi.diagnostics.lyapunov(run, warm_up=warm_up)
    # a run backward in time: the growth over its duration
    back = mi.simulate(system, mi.integrators.Tangent(sv), system.example_state(), -0.1, 10)
    lam = mi.diagnostics.lyapunov(back)
    np.testing.assert_allclose(lam[0], np.asarray(back.tangent)[-1, HEAD], rtol=1e-14)
    with pytest.raises(InputError, match="t="):
        mi.diagnostics.lyapunov(np.zeros((3, 9)))


def test_heavy_top_spectrum():
    """A chaotic heavy top (χ off the integrable cases) by the order-2 splitting of its
    exact sub-flows, six vectors on (m, γ): the extreme pair λ1 = −λ6 (8.9e-6 apart
    after T = 3600), four exponents near 0 (the two Casimirs' directions, the energy and
    the flow), and the sum at round-off (a composition of exact flows keeps volume)."""
    top = mi.systems.HeavyTop(inertia=(1.0, 1.5, 2.0), chi=(1.0, 0.0, 0.5))
    x0 = (np.array([0.6, -0.8, 0.3]), np.array([0.0, 0.8, -0.6]))
    tangent = mi.integrators.Tangent(mi.integrators.RigidBodySplitting(order=2), vectors=6)
    run = mi.simulate(top, tangent, x0, 0.01, 400_000, save_every=40_000)
    lam = mi.diagnostics.lyapunov(run, warm_up=400.0)
    assert lam[0] > 0.05 and abs(lam[0] + lam[5]) < 1e-4
    assert np.all(np.abs(lam[1:5]) < 1e-3) and abs(lam.sum()) < 1e-13
