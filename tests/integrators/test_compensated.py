"""Compensated summation (Kahan–Babuška; Hairer's GNI codes) of the midpoint rule's
increments on the harmonic oscillator, where the exact map keeps H: the round-off in H
grows like N ulp without it and like √N ulp with it."""

import jax
import numpy as np
import pytest

import mechint as mi

OSC = mi.systems.HarmonicOscillator()
X0 = (np.array([0.16209069]), np.array([0.18185949]))
EPS = np.finfo(float).eps


@pytest.fixture(scope="module")
def runs():
    midpoint = mi.integrators.ImplicitMidpoint()
    return {
        c: mi.simulate(OSC, midpoint, X0, 0.01, 10**6, 1000, compensated=c) for c in (False, True)
    }


def test_energy_round_off_grows_like_sqrt_n(runs):
    """Measured: 602 ulp after 10^6 steps (178 at N/4: linear) without, 5.8 ulp (4.2 at
    N/4) with compensation."""
    plain = mi.diagnostics.invariant_errors(OSC, runs[False])["H"] / EPS
    comp = mi.diagnostics.invariant_errors(OSC, runs[True])["H"] / EPS
    quarter = len(plain) // 4
    assert plain.max() > 200 and plain.max() / plain[: quarter + 1].max() > 2.5  # ~ N
    assert comp.max() < 20 and comp.max() / comp[: quarter + 1].max() < 2.5  # ~ √N
    # the same trajectory otherwise, and the run says it was compensated
    diff = np.abs(runs[True].x[0] - runs[False].x[0]).max()
    assert diff < 1e-11
    assert isinstance(runs[True].integrator, mi.integrators.Compensated)
    assert runs[True].x[0].shape == runs[False].x[0].shape


def test_default_increment_is_the_step_difference():
    """A map without its own increment gives Φ_h(x) − x (compensation then gains nothing,
    and changes nothing either)."""
    rk4 = mi.integrators.RK4()
    a = mi.simulate(OSC, rk4, X0, 0.1, 1000, 100)
    b = mi.simulate(OSC, rk4, X0, 0.1, 1000, 100, compensated=True)
    assert np.abs(a.x[0] - b.x[0]).max() < 1e-13


KEPLER = mi.systems.Kepler()


@pytest.mark.parametrize("scheme", ["yoshida4", "sofroniou-spaletta10"])
def test_compositions_of_verlet_form_their_increments(scheme):
    """Störmer–Verlet (separable H) and its compositions form the increment from the
    kicks and drifts; it is the step's: x + d = Φ_h(x) to round-off of x, at every h."""
    integ = mi.integrators.Composition(mi.integrators.StormerVerlet(), scheme)
    x = KEPLER.periapsis_state(0.5)
    for h in (0.3, 0.01, 1e-4):
        new, st = integ.step(KEPLER, x, h)
        d, st_d = integ.increment(KEPLER, x, h)
        assert bool(st.ok) and bool(st_d.ok)
        leaves = (jax.tree.leaves(v) for v in (x, new, d))
        for a, b, c in zip(*leaves, strict=True):
            a, b, c = (np.asarray(v) for v in (a, b, c))
            assert np.abs((a + c) - b).max() <= 8 * EPS * np.abs(a).max()
            assert np.abs(c).max() > 0.1 * h  # a real increment, of the size of h·f


def test_compensated_composition_keeps_the_angular_momentum_to_round_off():
    """Kepler (e = 0.5), Yoshida-4 of Störmer–Verlet, h = 0.002, 4·10⁴ steps: the map keeps
    L exactly, so its error is round-off alone.  Measured: 2.9e-14 plain, 2.6e-16
    compensated (110x); the energy error (truncation, 3.3e-10) is the same."""
    integ = mi.integrators.Composition(mi.integrators.StormerVerlet(), "yoshida4")
    x0 = KEPLER.periapsis_state(0.5)
    errs = {}
    for c in (False, True):
        traj = mi.simulate(KEPLER, integ, x0, 0.002, 40_000, 100, compensated=c)
        errs[c] = {
            k: float(v.max()) for k, v in mi.diagnostics.invariant_errors(KEPLER, traj).items()
        }
    assert errs[False]["L"] > 1e-14
    assert errs[True]["L"] < 2e-15 and errs[True]["L"] < errs[False]["L"] / 20
    assert abs(errs[True]["H"] - errs[False]["H"]) < 0.01 * errs[False]["H"]


def test_the_default_compensates_where_the_map_forms_its_increment_at_order_8():
    """``compensated=None``: on for maps that form their increment and are of order 8 or
    more (the high-order compositions of Verlet and of the midpoint rule), off for the
    others (order below 8, an increment by subtraction, a state that carries its clock),
    and on when a starting correction is given; the default run is the compensated run,
    bit for bit, and compensated=False the plain one."""
    I, S = mi.integrators, mi.systems
    top = S.EulerTop((2.0, 1.0, 0.6667))
    forced = S.Forced(KEPLER, lambda t, x: 0.01 * x[0])
    kl8 = I.Composition(I.StormerVerlet(), "kahan-li8")
    expected = {
        (kl8, KEPLER): True,
        (I.Composition(I.StormerVerlet(), "sofroniou-spaletta10"), KEPLER): True,
        (I.Composition(I.ImplicitMidpoint(), "kahan-li8"), top): True,
        (I.Composition(I.ImplicitMidpoint(), "kahan-li8"), forced): False,  # its clock
        (I.Composition(I.StormerVerlet(), "kahan-li6"), KEPLER): False,  # order 6
        (I.Composition(I.Kahan(), "kahan-li8"), top): False,  # increment by subtraction
        (I.StormerVerlet(), KEPLER): False,
        (I.ImplicitMidpoint(), top): False,
        (I.RK4(), KEPLER): False,
        (I.Compensated(kl8), KEPLER): False,  # wrapped already
    }
    for (integ, system), want in expected.items():
        assert integ.compensated_by_default(system) is want, (integ, system)
    x0 = KEPLER.periapsis_state(0.5)
    auto = mi.simulate(KEPLER, kl8, x0, 0.05, 200, 50)
    on = mi.simulate(KEPLER, kl8, x0, 0.05, 200, 50, compensated=True)
    off = mi.simulate(KEPLER, kl8, x0, 0.05, 200, 50, compensated=False)
    assert isinstance(auto.integrator, I.Compensated) and auto.compensation is not None
    assert off.integrator == kl8 and off.compensation is None
    for a, b, c in zip(jax.tree.leaves(auto.x), jax.tree.leaves(on.x), jax.tree.leaves(off.x),
                       strict=True):  # fmt: skip
        np.testing.assert_array_equal(a, b)
        assert 0 < np.abs(a - c).max() < 1e-12  # round-off apart
    # a correction given continues a compensated run, whatever the map's default
    rk4 = mi.simulate(OSC, I.RK4(), X0, 0.1, 10, 10, compensation=(np.zeros(1), np.zeros(1)))
    assert isinstance(rk4.integrator, I.Compensated)
    with pytest.raises(mi.InputError, match="compensation"):
        mi.simulate(OSC, I.RK4(), X0, 0.1, 10, compensated=False,
                    compensation=(np.zeros(1), np.zeros(1)))  # fmt: skip
    with pytest.raises(mi.InputError, match="compensated: must be True, False or None"):
        mi.simulate(OSC, I.RK4(), X0, 0.1, 10, compensated="yes")  # pyright: ignore[reportArgumentType]


def test_compensating_every_kick_and_drift_lowers_the_floor():
    """Kahan-Li-8 of Verlet on Kepler (e = 0.5), 100 orbits in 256 000 steps, 16 orbits
    turned (the round-off is a random walk: a median, not one draw), against the exact
    solution: compensating every kick and drift (``stages.advance_leapfrog``, what
    ``simulate`` runs) against adding the stages' summed increment once
    (``Integrator.compensated_step``, the stages one by one, as before).  Measured:
    6.8e-13 against 1.7e-12 in the median (48 orbits, 40-digit reference: 6.8e-13
    against 1.4e-12; ``benchmarks/round_off.py``): below issue 37's 1e-12.  The angular
    momentum, kept exactly by the map: 1.5 ulp against 3 at the end."""
    n = 16
    th = 0.1 + 2 * np.pi * np.arange(n) / n
    q, p = KEPLER.periapsis_state(0.5)
    turn = lambda v: np.stack([np.cos(th) * v[0] - np.sin(th) * v[1],  # noqa: E731
                               np.sin(th) * v[0] + np.cos(th) * v[1]], axis=1)  # fmt: skip
    x0 = (turn(q), turn(p))
    steps, T = 256_000, 200 * np.pi
    h = T / steps
    integ = mi.integrators.Composition(mi.integrators.StormerVerlet(), "kahan-li8")
    Q, P = mi.exact.kepler(KEPLER, x0, np.array([steps * h]))  # every orbit at once
    want = np.concatenate([np.asarray(Q)[:, -1], np.asarray(P)[:, -1]], axis=1)

    def summed_once(x):
        def body(c, _):
            y, e, _ = mi.maps.Integrator.compensated_step(integ, KEPLER, c[0], c[1], h)
            return (y, e), None

        zero = jax.tree.map(jax.numpy.zeros_like, x)
        return jax.lax.scan(body, (x, zero), None, length=steps)[0][0]

    every = [np.asarray(a)[:, -1] for a in
             mi.simulate(KEPLER, integ, x0, h, steps, 10, compensated=True).x]  # fmt: skip
    errors = {}
    for name, (q1, p1) in (("every", every), ("once", jax.jit(jax.vmap(summed_once))(x0))):
        z = np.concatenate([q1, p1], axis=1)
        L = lambda q, p: q[:, 0] * p[:, 1] - q[:, 1] * p[:, 0]  # noqa: E731
        errors[name] = (float(np.median(np.abs(z - want).max(axis=1))),
                        float(np.abs(L(q1, p1) - L(*x0)).max()))  # fmt: skip
    (every, L_every), (once, L_once) = errors["every"], errors["once"]
    assert every < 1e-12 and every < 0.7 * once, errors
    assert L_every <= L_once, errors
