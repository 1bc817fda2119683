"""Variable steps that keep the structure: the Poincaré time transformation
(``systems.TimeTransformed``) and Hairer–Söderlind's reversible step-size control
(``integrators.ReversibleAdaptive``), on the eccentric Kepler problem against its exact
solution (``mechint.exact``).

What is measured: the transformed maps are symplectic on the extended phase space to
round-off; the adaptive map is symmetric (ε ↦ −ε inverts it) to round-off; at the same
number of steps both are far more accurate than fixed steps at e = 0.9; their energy
error stays in a band without drift; a run ends at a physical time exactly (a terminal
event on t); σ or g ≤ 0 is refused at x0 and fails a step during a run.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.errors import InputError
from mechint.maps import Reason

I = mi.integrators
S = mi.systems

KEPLER = S.Kepler()
X0 = KEPLER.periapsis_state(0.9)
PERIOD = 2 * np.pi  # a = 1


def sigma(x):
    """σ = r^{3/2}: steps follow the local orbital time scale."""
    return jnp.sum(x[0] ** 2) ** 0.75


def g(q, p):
    return jnp.sum(q**2) ** 0.75


ADAPTIVE = I.ReversibleAdaptive(I.StormerVerlet(), sigma)
TRANSFORMED = S.TimeTransformed(KEPLER, g)


def _fictive_period(e):
    """∮ dt / σ over one orbit (a = 1), σ = r^{3/2}: ``Kepler.fictive_period``."""
    return KEPLER.fictive_period(KEPLER.periapsis_state(e), g)


def _at(T):
    return mi.Event(lambda t, x: t - T, direction=1, terminal=True, name="end")


def test_time_transformed_maps_are_symplectic_on_the_extended_space():
    z0 = TRANSFORMED.validate_state(X0)[0]
    assert z0[0][-1] == 0.0 and z0[1][-1] == 0.5  # t = 0, e = −H = 1/2
    omega = np.kron(np.array([[0.0, 1.0], [-1.0, 0.0]]), np.eye(3))

    def step(z):  # Störmer–Verlet on the non-separable K: Newton, differentiated at its root
        new = I.StormerVerlet().step(TRANSFORMED, (z[:3], z[3:]), 0.05)[0]
        return jnp.concatenate(jax.tree.leaves(new))

    J = jax.jacfwd(step)(jnp.concatenate(z0))
    assert np.max(np.abs(J.T @ omega @ J - omega)) < 4 * np.finfo(float).eps * 10


def test_a_traced_base_state_is_extended_as_a_concrete_one():
    """Under jit or grad, a state of Kepler given to its time transformation is extended
    by (t, e) = (0, −H) as a concrete one is: the same run, and the derivative of its
    physical time in the initial momentum's scale (central difference: 1e-6)."""
    sv = I.StormerVerlet()

    def elapsed(scale):
        x = (jnp.asarray(X0[0]), jnp.asarray(X0[1]) * scale)
        return mi.integrate(TRANSFORMED, sv, x, 0.05, 8).x[0][-1, -1]

    value, slope = jax.jvp(elapsed, (1.0,), (1.0,))  # forward mode: cheaper to compile
    assert abs(float(value) - float(elapsed(1.0))) < 1e-15  # the concrete run
    d = 1e-6
    fd = (float(elapsed(1.0 + d)) - float(elapsed(1.0 - d))) / (2 * d)
    assert abs(float(slope) - fd) < 1e-6 * max(1.0, abs(fd)), (slope, fd)


def test_reversible_adaptive_is_symmetric_and_refuses_a_non_symmetric_base():
    x = ADAPTIVE.wrap(X0, ADAPTIVE.start(KEPLER, X0, None, False, 1))
    there = ADAPTIVE.step(KEPLER, x, 0.03)[0]
    back = ADAPTIVE.step(KEPLER, there, -0.03)[0]
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(x), strict=True):
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) < 1e-13 * max(1.0, np.max(np.abs(b)))
    assert ADAPTIVE.traits.symmetric and ADAPTIVE.traits.explicit
    with pytest.raises(InputError, match="symmetric"):
        I.ReversibleAdaptive(I.SymplecticEuler(), sigma)


def _error(sol, T):
    c = sol.events["end"]
    ref = np.asarray(KEPLER.exact_solution(X0, np.array([T]))[0]).reshape(-1)
    q = np.asarray(c.x[0]).reshape(-1)[:2]
    assert int(np.asarray(c.count).reshape(-1)[0]) == 1
    assert abs(float(np.asarray(c.t).reshape(-1)[0]) - T) <= 4 * np.finfo(float).eps * T
    return float(np.max(np.abs(q - ref)))


def test_variable_steps_beat_fixed_steps_at_equal_cost():
    """5 orbits of e = 0.9, 4000 steps an orbit: fixed-step Verlet's position error is
    O(0.1) (the periapsis passage is under-resolved); both variable-step maps reach a
    hundredfold smaller error with the same number of steps, each measured at its own
    final physical time; a terminal event on t ends the adaptive run at T exactly."""
    T, n = 5 * PERIOD, 4000 * 5
    fixed = mi.integrate(KEPLER, I.StormerVerlet(), X0, T / n, n)
    ref = np.asarray(KEPLER.exact_solution(X0, np.array([T]))[0]).reshape(-1)
    err_fixed = float(np.max(np.abs(np.asarray(fixed.x[0][-1]) - ref)))
    eps = _fictive_period(0.9) / 4000
    errors = []
    for system, integrator in ((KEPLER, ADAPTIVE), (TRANSFORMED, I.StormerVerlet())):
        sol = mi.integrate(system, integrator, X0, eps, n)
        x = jax.tree.leaves(sol.x)[0][-1][:2]  # q (an extended state's q ends with t)
        t_end = float(sol.t[-1])  # the physical time (one trajectory)
        assert abs(t_end - T) < 0.05 * T
        exact = np.asarray(KEPLER.exact_solution(X0, np.array([t_end]))[0]).reshape(-1)
        errors.append(float(np.max(np.abs(np.asarray(x) - exact))))
    assert err_fixed > 0.05
    assert max(errors) < 1e-2 * err_fixed, (err_fixed, errors)
    ra = mi.integrate(KEPLER, ADAPTIVE, X0, eps, int(1.05 * n), events=[_at(T)])
    assert _error(ra, T) < 1e-2 * err_fixed


def _drift(t, H, segments=20):
    """(band of |H − H0| over the run, the trend over the run of a line through the
    bands of ``segments`` equal parts: immune to the samples' phase on the orbit)."""
    dH = np.abs(H - H[0])
    parts = np.array_split(np.arange(len(t)), segments)
    tops = [dH[p].max() for p in parts]
    trend = np.polyfit([t[p].mean() for p in parts], tops, 1)[0] * (t[-1] - t[0])
    return float(np.max(dH)), float(trend)


def test_the_energy_error_stays_in_a_band_without_drift():
    """200 orbits at e = 0.9: the trend of |H − H0| over the run is below 5 % of its band
    (a drifting map's trend is its whole band)."""
    steps, eps = 200 * 400, _fictive_period(0.9) / 400
    ra = mi.simulate(KEPLER, ADAPTIVE, X0, eps, steps, 20)
    tt = mi.simulate(TRANSFORMED, I.StormerVerlet(), X0, eps, steps, 20)
    for traj in (ra, tt):
        band, trend = _drift(traj.t, traj.invariants()["H"])
        assert traj.t[-1] > 190 * PERIOD  # physical times, read from the run's clock
        assert band < 5e-3 and abs(trend) < 0.05 * band, (band, trend)
    assert np.array_equal(ra.t, ra.clock[:, 0])
    assert np.max(np.abs(tt.invariants()["K"])) < 1e-2


def test_a_batch_keeps_each_members_clock_and_its_file_holds_it(tmp_path):
    xb = jax.tree.map(lambda a, b: np.stack([a, b]), X0, KEPLER.periapsis_state(0.5))
    traj = mi.simulate(KEPLER, ADAPTIVE, xb, 0.02, 400, 40)
    one = mi.simulate(KEPLER, ADAPTIVE, KEPLER.periapsis_state(0.5), 0.02, 400, 40)
    assert np.array_equal(traj.t, 0.02 * (40 * np.arange(11.0)))  # the fictive time
    assert np.array_equal(traj.clock[1], one.clock) and np.array_equal(one.t, one.clock[:, 0])
    traj.save(tmp_path / "a.nc")
    import xarray as xr

    with xr.open_dataset(tmp_path / "a.nc") as ds:
        assert np.array_equal(ds["clock"].values, traj.clock)
    # continued from the last states and clocks: the same run bit for bit, the batch
    # (simulate) and one member (integrate); a clock for a map that carries none refused
    half = mi.simulate(KEPLER, ADAPTIVE, xb, 0.02, 200, 40)
    last = jax.tree.map(lambda a: a[:, -1], half.x)
    rest = mi.simulate(KEPLER, ADAPTIVE, last, 0.02, 200, 40, clock=half.clock[:, -1])
    for a, b in zip(jax.tree.leaves(rest.x), jax.tree.leaves(traj.x), strict=True):
        assert np.array_equal(a, b[:, 200 // 40 :])
    assert np.array_equal(rest.clock, traj.clock[:, 200 // 40 :])
    sol = mi.integrate(KEPLER, ADAPTIVE, jax.tree.map(lambda a: a[1], last), 0.02, 200, 40,
                       clock=half.clock[1, -1])  # fmt: skip
    base, clock = sol.x  # integrate's states carry the clock
    pairs = [*zip(jax.tree.leaves(base), jax.tree.leaves(one.x), strict=True), (clock, one.clock)]
    for a, b in pairs:
        assert np.max(np.abs(a - b[200 // 40 :])) <= 1e-15 * np.max(np.abs(b))
    with pytest.raises(mi.InputError, match=r"clock.*carries no clock"):
        mi.simulate(KEPLER, I.StormerVerlet(), X0, 0.02, 10, clock=[0.0, 1.0])


def test_step_size_functions_that_are_not_positive_fail_or_are_refused():
    with pytest.raises(InputError) as info:
        mi.simulate(KEPLER, I.ReversibleAdaptive(I.StormerVerlet(), lambda x: x[0][0] - 1.0),
                    X0, 0.01, 10)  # fmt: skip
    assert info.value.parameter == "sigma"
    with pytest.raises(InputError) as info:
        S.TimeTransformed(KEPLER, lambda q, p: q[0] - 1.0).validate_state(X0)
    assert info.value.parameter == "g"

    # positive at x0, not where the orbit goes (q1 < 0): the step that gets there fails
    def half_plane(q, p):
        return jnp.where(q[0] > 0, 1.0, -1.0)

    sol = mi.integrate(S.TimeTransformed(KEPLER, half_plane), I.StormerVerlet(), X0, 0.05, 400)
    # Newton meets K = NaN (g ≤ 0) and does not converge
    assert int(sol.failed_step) > 0 and int(sol.reason) == Reason.NOT_CONVERGED
    bad = I.ReversibleAdaptive(I.StormerVerlet(), lambda x: half_plane(*x))
    sol = mi.integrate(KEPLER, bad, X0, 0.05, 400)
    assert int(sol.failed_step) > 0 and int(sol.reason) == Reason.STEP_SIZE
    with pytest.raises(InputError, match="variable steps"):
        mi.integrate(KEPLER, ADAPTIVE, X0, 0.05, 400, save_at=[1.0])


@pytest.mark.parametrize("batched", [False, True])
def test_a_step_size_function_that_is_not_a_scalar_is_refused(batched):
    """σ(x) is one number per state: a vector (here (q1², q2²), 0 at periapsis) is refused
    naming sigma and its shape, for one state and a batch alike, never read as its least
    component."""
    x0 = jax.tree.map(lambda a: np.stack([a, a]), X0) if batched else X0
    with pytest.raises(InputError, match=r"sigma: must return a scalar.*shape \(2,\)"):
        mi.integrate(KEPLER, I.ReversibleAdaptive(I.StormerVerlet(), lambda x: x[0] ** 2),
                     x0, 0.01, 10)  # fmt: skip


def test_check_measures_the_adaptive_map_on_its_clock():
    """``check`` steps a wrapper's extended state started as a run starts it: the energy
    defect is that of the map's own step from (x0, ρ = 1/σ(x0)), the map is symmetric to
    round-off and not symplectic."""
    rows = {r.name: r for r in mi.diagnostics.check(KEPLER, ADAPTIVE, X0, 0.05, halvings=2)}
    x = ADAPTIVE.wrap(X0, ADAPTIVE.start(KEPLER, X0, None, False, 1))
    y = ADAPTIVE.unwrap(ADAPTIVE.step(KEPLER, x, 0.05)[0])[0]
    h0, h1 = float(KEPLER.hamiltonian(X0)), float(KEPLER.hamiltonian(y))
    assert rows["energy H"].defect == pytest.approx(abs(h1 - h0) / abs(h0), rel=1e-12)
    assert rows["reversibility"].verdict == "exact (round-off)"
    assert rows["symplectic"].defect > 1e-3


def test_a_step_to_where_g_is_not_positive_fails():
    """The midpoint rule evaluates g between a step's ends only: a step that lands where
    g ≤ 0 fails (``out-of-domain``, residual −g) and no saved sample is such a state
    (before: g = −0.47 kept as a valid sample, K = NaN)."""
    tt = S.TimeTransformed(KEPLER, lambda q, p: q[0] + 0.3)
    x0 = KEPLER.periapsis_state(0.5)
    traj = mi.simulate(tt, I.ImplicitMidpoint(), x0, 1.0, 12, 1, throw=False)
    k = int(traj.failed_step)
    assert k > 0 and list(np.atleast_1d(traj.reason)) == ["out-of-domain"]
    q = np.asarray(traj.x[0])
    valid = q[:k]  # the states before the failed step: g > 0 at each
    assert np.all(valid[:, 0] + 0.3 > 0) and np.all(
        np.isfinite(np.asarray(traj.invariants()["K"])[:k])
    )


def test_a_time_transformed_run_gives_the_base_state_and_the_physical_time():
    """``Trajectory.base_state`` is the base system's (q, p) without (t, e) and
    ``physical_time`` each member's own time (t0 + the state's t), for one run and a
    batch; a ReversibleAdaptive batch reads its clocks, a fixed-step run its t."""
    x0 = KEPLER.periapsis_state(0.5)
    xb = jax.tree.map(lambda a: np.stack([a, 1.01 * a]), x0)
    one = mi.simulate(TRANSFORMED, I.StormerVerlet(), x0, 0.05, 100, 20)
    batch = mi.simulate(TRANSFORMED, I.StormerVerlet(), xb, 0.05, 100, 20, t0=2.0)
    for run, lead in ((one, ()), (batch, (2,))):
        q, p = run.base_state
        assert q.shape == p.shape == (*lead, 6, 2)
        assert np.array_equal(q, np.asarray(run.x[0])[..., :2])
        assert np.array_equal(p, np.asarray(run.x[1])[..., :2])
    assert np.array_equal(one.physical_time, one.t)
    assert np.array_equal(batch.physical_time, 2.0 + np.asarray(batch.x[0])[..., 2])
    assert np.array_equal(batch.physical_time[0], 2.0 + one.physical_time)
    ra = mi.simulate(KEPLER, ADAPTIVE, xb, 0.02, 40, 20)
    assert np.array_equal(ra.physical_time, ra.clock[..., 0]) and ra.base_state is ra.x
    fixed = mi.simulate(KEPLER, I.StormerVerlet(), xb, 0.05, 40, 20)
    assert np.array_equal(fixed.physical_time, np.broadcast_to(fixed.t, (2, 3)))


def test_the_fictive_period_is_the_closed_form_and_a_run_of_it_is_one_orbit():
    """``Kepler.fictive_period`` for g = r^{3/2} is ∫ (1 − e cos E)^{-1/2} dE (a = 1; a
    trapezoid of 2·10⁶ points, exact to round-off for this periodic integrand) to 1e-15
    at e = 0 .. 0.99; a time-transformed run of that fictive time is one orbit (t = 2π
    to O(Δs²)); an unbound state and a g that is not positive on the orbit are refused."""
    E = np.linspace(0.0, 2 * np.pi, 2_000_001)
    for e in (0.0, 0.5, 0.9, 0.99):
        x0 = KEPLER.periapsis_state(e)
        S = KEPLER.fictive_period(x0, g)
        assert abs(S - np.trapezoid((1 - e * np.cos(E)) ** -0.5, E)) < 1e-15 * S
    S = KEPLER.fictive_period(X0, g)
    run = mi.simulate(TRANSFORMED, I.StormerVerlet(), X0, S / 4000, 4000, 4000)
    assert abs(run.t[-1] - PERIOD) < 1e-5
    with pytest.raises(InputError, match="bound orbit"):
        KEPLER.fictive_period((np.array([1.0, 0.0]), np.array([0.0, 2.0])), g)
    with pytest.raises(InputError, match="g: must be positive"):
        KEPLER.fictive_period(X0, lambda q, p: q[0])
