"""Transit times and radial velocities of planetary systems (``systems.nbody.transits``,
``radial_velocity``, ``elements_state``) against exact orbits, a reference integration
and an mpmath integration of the same map."""

from __future__ import annotations

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.errors import InputError
from mechint.systems import nbody
from mechint.systems.nbody import GAUSS_G, NBody
from tests.systems.mp_transits import transit_times

I = mi.integrators
# two planets near the 2:1 resonance (transit-timing variations), edge-on, days
MASSES = np.array([1.0, 3e-5, 3e-5])
ELEMENTS = {"P": [10.0, 20.3], "e": [0.02, 0.03], "i": [np.pi / 2, np.pi / 2 - 0.01],
            "Omega": [0.0, 0.01], "omega": [0.3, 1.0], "M": [0.3, 2.0]}  # fmt: skip
COMP10 = I.Composition(I.StormerVerlet(), "sofroniou-spaletta10")


def _times(sol, planet):
    c = sol.events[f"transit_{planet}"]
    return np.asarray(c.t)[: int(c.count)]


def test_kepler_orbits_transit_once_a_period_in_front():
    """Test particles on exact Kepler orbits about the star (the star alone has mass):
    mid-transits at t0 + nP for every observer direction, never at the occultations."""
    P = np.array([10.0, 17.0])
    el = {"P": P, "e": [0.0, 0.3], "i": [np.pi / 2, 1.2], "Omega": [0.0, 0.7],
          "omega": [0.0, 2.0], "M": [0.3, -1.0]}  # fmt: skip
    system, x0 = NBody.from_elements([1.0, 0.0, 0.0], el, GAUSS_G)
    for observer in ((0, 0, 1), (0.3, -0.4, 0.8)):
        n = np.asarray(observer) / np.linalg.norm(observer)
        events = [nbody.transits(system, k, observer=observer) for k in (1, 2)]
        sol = mi.integrate(system, COMP10, x0, 0.05, 2000, events=events)  # 100 days
        for k in (1, 2):
            t = _times(sol, k)
            whole = int(100 // P[k - 1])
            assert len(t) in (whole, whole + 1) and np.all(np.abs(np.diff(t) - P[k - 1]) < 1e-9)
            # the planet at that time: in front, its sky separation at a minimum
            x = jax.tree.map(lambda a: np.asarray(a)[0], sol.events[f"transit_{k}"].x)
            d, dv = x[0][k] - x[0][0], x[1][k] - x[1][0] / 1.0
            assert d @ n > 0
            sky = (d - (d @ n) * n) @ (dv - (dv @ n) * n)
            assert abs(sky) < 1e-12 * np.linalg.norm(d) * np.linalg.norm(dv)
    assert nbody.transits(system, 1) is nbody.transits(system, 1)  # one compiled run


def test_transit_times_against_a_reference_integration():
    """Two planets over 10³ days: the Wisdom–Holman map with its corrector at h = 0.1 and
    the order-10 composition at h = 0.2 against the composition at h = 0.05 (its error
    (1/4)^10 of the h = 0.2 run's, below round-off: as good a reference as h = 0.02, at
    less than half the steps), all located by the same events: within 1e-9 days."""
    system, x0 = NBody.from_elements(MASSES, ELEMENTS, GAUSS_G)
    events = [nbody.transits(system, k) for k in (1, 2)]

    def times(integrator, h):
        sol = mi.integrate(system, integrator, x0, h, round(1000 / h), events=events,
                           max_events=128)  # fmt: skip
        return [_times(sol, k) for k in (1, 2)]

    ref = times(COMP10, 0.05)
    assert [len(t) for t in ref] == [100, 49]
    for integrator, h in ((COMP10, 0.2), (I.WisdomHolman(corrector=17, kernel="lazy"), 0.1)):
        got = times(integrator, h)
        for a, b in zip(got, ref, strict=True):
            assert a.shape == b.shape and np.max(np.abs(a - b)) < 1e-9, (integrator, h)
    # the transit-timing variations are there: not a fixed period
    assert np.ptp(np.diff(ref[0])) > 1e-4


def test_transit_time_derivatives_against_mpmath():
    """d(transit times)/d(masses, an initial coordinate) by ``jax.jacrev`` through
    ``integrate`` (the implicit function theorem at each crossing) against central
    differences of a 40-digit integration of the same Störmer–Verlet map: 1e-8
    relative."""
    system, x0 = NBody.from_elements(MASSES, ELEMENTS, GAUSS_G)
    h, steps = 0.25, 160  # 40 days: 4 transits of planet 1, 2 of planet 2
    ev = (nbody.transits(system, 1), nbody.transits(system, 2))

    def times(theta):
        m = jnp.concatenate([jnp.asarray(MASSES[:1]), theta[:2]])
        q = jnp.asarray(x0[0]).at[1, 0].add(theta[2])
        sol = mi.integrate(NBody(m, GAUSS_G), I.StormerVerlet(), (q, jnp.asarray(x0[1])), h,
                           steps, events=ev, max_events=8)  # fmt: skip
        return jnp.concatenate([sol.events["transit_1"].t[:4], sol.events["transit_2"].t[:2]])

    theta = jnp.array([MASSES[1], MASSES[2], 0.0])
    got = np.asarray(times(theta))
    J = np.asarray(jax.jacrev(times)(theta))
    import mpmath as mp

    def mp_times(th):  # mpf in, mpf out
        q = [[mp.mpf(float(v)) for v in row] for row in x0[0]]
        q[1][0] += th[2]
        p = [[mp.mpf(float(v)) for v in row] for row in x0[1]]
        m = [mp.mpf(1), th[0], th[1]]
        return [v for k in (1, 2) for v in transit_times(q, p, m, GAUSS_G, h, steps, k)]

    with mp.workdps(40):
        base = [mp.mpf(float(v)) for v in theta]
        np.testing.assert_allclose(got, [float(v) for v in mp_times(base)], rtol=0, atol=1e-11)
        for j, delta in enumerate((mp.mpf("1e-15"), mp.mpf("1e-15"), mp.mpf("1e-13"))):
            up, down = list(base), list(base)
            up[j] += delta
            down[j] -= delta
            fd = [(a - b) / (2 * delta) for a, b in zip(mp_times(up), mp_times(down),
                                                          strict=True)]  # fmt: skip
            np.testing.assert_allclose(J[:, j], [float(v) for v in fd], rtol=1e-8,
                                       err_msg=f"parameter {j}")  # fmt: skip


def test_radial_velocity_and_elements_state():
    """The star's line-of-sight velocity (−v·n̂, receding positive) at save times, and the
    state of elements as a JAX function: equal to ``from_elements``, its derivative in
    P by the chain rule equal to central differences."""
    system, x0 = NBody.from_elements(MASSES, ELEMENTS, GAUSS_G)
    q, p = nbody.elements_state(MASSES, ELEMENTS, GAUSS_G)
    np.testing.assert_allclose(np.asarray(q), x0[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(p), x0[1], rtol=0, atol=1e-19)
    rv = nbody.radial_velocity(system, x0)
    assert float(rv) == pytest.approx(-x0[1][0, 2] / MASSES[0], rel=1e-15)
    batch = (np.stack([x0[0]] * 3), np.stack([x0[1]] * 3))
    assert nbody.radial_velocity(system, batch, observer=(0, 0, 2)).shape == (3,)

    def z1(P1):
        return nbody.elements_state(MASSES, {**ELEMENTS, "P": jnp.stack([P1, 20.3])},
                                    GAUSS_G)[0][1, 0]  # fmt: skip

    d = float(jax.grad(z1)(10.0))
    fd = (float(z1(10.0 + 1e-5)) - float(z1(10.0 - 1e-5))) / 2e-5
    assert d == pytest.approx(fd, rel=1e-6)


def test_bad_input():
    system, _ = NBody.from_elements(MASSES, ELEMENTS, GAUSS_G)
    for kwargs, name in ((dict(planet=3), "planet"), (dict(planet=0), "planet"),
                         (dict(planet=1, star=5), "star"), (dict(planet=True), "planet"),
                         (dict(planet=1, observer=(0, 0, 0)), "observer"),
                         (dict(planet=1, observer=(0, 1)), "observer"),
                         (dict(planet=1, observer=(0, np.nan, 1)), "observer")):  # fmt: skip
        with pytest.raises(InputError) as info:
            nbody.transits(system, **cast(Any, kwargs))
        assert info.value.parameter == name
    with pytest.raises(InputError, match="where"):
        mi.Event(lambda t, x: x[0][0], where=cast(Any, 3))
    with pytest.raises(InputError, match="elements"):
        nbody.elements_state(MASSES, {"a": [1.0, 2.0]})
