"""Events and save times (``mechint.events``): crossings located on the map itself.

Against independent references: the exact flow of the harmonic oscillator (crossing
times and their derivative in closed form), DOP853's dense-output events at rtol 1e-13
(the Hénon–Heiles section q1 = 0, p1 > 0; the chaotic heavy top's γ3 = 0 is
``examples/heavy_top.py``'s, tested in ``tests/test_examples.py``), a run
whose steps end exactly at the save times; a batch of 10³ as one by one, bit for bit;
``simulate`` in chunks as ``integrate``; terminal events, overflow, failures; the
crossings in files.
"""

import dataclasses
import json
import traceback
from typing import Any, ClassVar, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi
from mechint import Event
from mechint.errors import InputError, StepFailure

I = mi.integrators
S = mi.systems

HH = S.HenonHeiles()
SS10 = I.Composition(scheme="sofroniou-spaletta10")


def q1(t, x):
    return x[0][0]


UP = Event(q1, direction=1)
DOWN_END = Event(q1, direction=-1, terminal=True, name="down")


def _hh_field(t, z):
    q, p = z[:2], z[2:]
    return np.concatenate([p, [-q[0] - 2 * q[0] * q[1], -q[1] - q[0] ** 2 + q[1] ** 2]])


def _hh_starts(n, seed=0):
    rng = np.random.default_rng(seed)
    q = np.stack([np.zeros(n), rng.uniform(-0.1, 0.1, n)], 1)
    p = np.stack([rng.uniform(0.3, 0.4, n), rng.uniform(-0.05, 0.05, n)], 1)
    return q, p


X0 = (np.array([0.0, 0.1]), np.array([0.35, 0.0]))


@dataclasses.dataclass(frozen=True)
class Rotation(I.Integrator):
    """The harmonic oscillator's exact flow (ω = 1), as a user's map: the solution
    itself, so crossing times are closed-form."""

    name: ClassVar[str] = "rotation"
    traits = mi.maps.EXACT_TRAITS

    def cannot_serve(self, system):
        return None if isinstance(system, S.HarmonicOscillator) else "the oscillator only"

    def step(self, system, x, h):
        (q, p), c, s = x, jnp.cos(h), jnp.sin(h)
        new = (c * q + s * p, c * p - s * q)
        return new, mi.maps.ok_status(new)


HO = S.HarmonicOscillator()


def test_crossings_of_the_exact_flow_and_their_derivative_are_closed_form():
    """q(t) = q0 cos t + p0 sin t: q = 0 at t* = π − atan(q0 / p0) (+ kπ), and
    dt*/dq0 = −p0 / (q0² + p0²), from the exact flow (the map is the solution)."""
    both = Event(q1, name="q")

    def crossings(q0):
        x0 = (jnp.array([q0]), jnp.array([1.0]))
        return mi.integrate(HO, Rotation(), x0, 0.3, 50, events=[both], max_events=4)

    sol = crossings(0.5)
    c = sol.events["q"]
    exact = np.pi - np.arctan(0.5) + np.pi * np.arange(4)
    assert int(c.count) == 4 and not bool(c.overflowed)
    assert np.max(np.abs(np.asarray(c.t) - exact)) < 8 * np.finfo(float).eps * 12
    assert np.max(np.abs(np.asarray(c.x[0]))) < 4e-16  # on the surface
    grad = jax.grad(lambda q0: crossings(q0).events["q"].t[1])(0.5)
    assert abs(float(grad) + 1.0 / 1.25) < 1e-12


def _dop853(T, x0, direction=1):
    def event(t, z):
        return z[0]

    event.direction = direction  # pyright: ignore[reportFunctionMemberAccess]
    ref = solve_ivp(_hh_field, (0, T), np.concatenate(x0), method="DOP853", rtol=1e-13,
                    atol=1e-15, events=event)  # fmt: skip
    t, z = ref.t_events[0], ref.y_events[0]
    return t[t > 0], z[t > 0]  # a crossing is in (0, h]: not the start


def test_henon_heiles_section_agrees_with_dop853_and_lies_on_the_surface():
    sol = mi.integrate(HH, SS10, X0, 0.02, 3000, events=[UP], max_events=16)
    c = sol.events["q1"]
    t_ref, z_ref = _dop853(60.0, X0)
    n = int(c.count)
    assert n == len(t_ref) == 9
    z = np.concatenate([np.asarray(c.x[0]), np.asarray(c.x[1])], -1)[:n]
    assert np.max(np.abs(np.asarray(c.t[:n]) - t_ref)) < 2e-12
    assert np.max(np.abs(z - z_ref)) < 1e-12
    assert np.max(np.abs(z[:, 0])) < 1e-17  # q1 = 0 to round-off (|q| ~ 0.3)
    assert np.all(z[:, 2] > 0)  # upwards: p1 > 0
    assert np.all(np.isnan(np.asarray(c.t[n:])))


def test_a_batch_finds_the_crossings_one_by_one_does_bit_for_bit():
    starts = _hh_starts(1000)
    batch = mi.integrate(HH, I.StormerVerlet(), starts, 0.05, 400, events=[UP], max_events=8)
    c = batch.events["q1"]
    assert np.all(np.asarray(c.count) >= 2)
    for i in range(1000):
        own = mi.integrate(HH, I.StormerVerlet(), jax.tree.map(lambda a, i=i: a[i], starts),
                           0.05, 400, events=[UP], max_events=8).events["q1"]  # fmt: skip
        same = np.array_equal(np.asarray(own.t), np.asarray(c.t[i]), equal_nan=True)
        assert same and int(own.count) == int(c.count[i]), i
    # under vmap, in the caller's jit (the traced path, another program): the same
    # crossings to round-off
    one = jax.jit(lambda x: mi.integrate(HH, I.StormerVerlet(), x, 0.05, 400, events=[UP],
                                         max_events=8).events["q1"])  # fmt: skip
    under = jax.jit(jax.vmap(one))(starts)
    assert np.array_equal(np.asarray(under.count), np.asarray(c.count))
    assert np.nanmax(np.abs(np.asarray(under.t) - np.asarray(c.t))) < 1e-13


def test_simulate_in_chunks_records_what_integrate_does():
    starts, verlet = _hh_starts(20), I.StormerVerlet()
    sol = mi.integrate(HH, verlet, starts, 0.01, 3000, 50, events=[UP, DOWN_END])
    traj = mi.simulate(HH, verlet, starts, 0.01, 3000, 50, events=[UP, DOWN_END],
                       chunk_steps=20 * 100, throw=False)  # fmt: skip
    assert traj.stats["calls"] > 3
    for key in ("q1", "down"):
        a, b = traj.events[key], sol.events[key]
        assert np.array_equal(a.t, np.asarray(b.t), equal_nan=True)
        assert np.array_equal(a.x[1], np.asarray(b.x[1]), equal_nan=True)
        assert np.array_equal(a.count, np.asarray(b.count))
    assert np.array_equal(traj.x[0], np.asarray(sol.x[0]), equal_nan=True)
    # every member ended at its first downward crossing: NaN after it, the run stopped
    end = traj.events["down"].t[:, 0]
    assert np.all(traj.events["down"].count == 1)
    after = traj.t[None, :] > end[:, None] + 0.01
    assert np.all(np.isnan(traj.x[0][..., 0][after]))
    assert np.all(np.isfinite(traj.x[0][..., 0][traj.t[None, :] <= end[:, None]]))
    assert traj.stats["calls"] < 3000 // 100  # stopped when every member had ended
    # the crossing before the end is the upward one: q1 = 0 with p1 < 0 at the end
    assert np.all(traj.events["down"].x[1][:, 0, 0] < 0)


def test_overflow_is_reported_and_the_first_crossings_are_kept():
    full = mi.integrate(HH, I.StormerVerlet(), X0, 0.05, 2000, events=[UP], max_events=64)
    few = mi.integrate(HH, I.StormerVerlet(), X0, 0.05, 2000, events=[UP], max_events=3)
    n = int(full.events["q1"].count)
    assert n > 3 and not bool(full.events["q1"].overflowed)
    assert int(few.events["q1"].count) == 3 and bool(few.events["q1"].overflowed)
    assert np.array_equal(np.asarray(few.events["q1"].t), np.asarray(full.events["q1"].t[:3]))
    # simulate locates only the slots in use (rounded up to a power of two) and pads
    # the rest with NaN; an overflowing run keeps its capacity and says so
    for cap, ref in ((10_000, full), (3, few)):
        got = mi.simulate(HH, I.StormerVerlet(), X0, 0.05, 2000, 2000, events=[UP],
                          max_events=cap).events["q1"]  # fmt: skip
        want = ref.events["q1"]
        assert got.t.shape == (cap,) and int(got.count) == int(want.count)
        assert bool(got.overflowed) == bool(want.overflowed)
        k = min(cap, 64)
        assert np.array_equal(got.t[:k], np.asarray(want.t)[:k], equal_nan=True)
        assert np.all(np.isnan(got.t[k:])) and np.all(np.isnan(got.x[0][k:]))


def test_a_zero_at_a_step_counts_once_and_directions_select():
    """x on the surface exactly at a step: one crossing, found at τ = h."""
    # the exact flow from q = -1 at t = 0 reaches q = 0 at π/2: take h = π/20, ten steps
    x0 = (np.array([-1.0]), np.array([0.0]))
    t10 = float(np.pi / 20 * np.float64(10))  # t_10 by the loop's time rule
    zero_at_step = Event(lambda t, x: t - t10, name="t")
    both, up, down = Event(q1, name="b"), Event(q1, 1, name="u"), Event(q1, -1, name="d")
    sol = mi.integrate(HO, Rotation(), x0, np.pi / 20, 80,
                       events=[zero_at_step, both, up, down])  # fmt: skip
    e = sol.events
    assert int(e["t"].count) == 1 and float(e["t"].t[0]) == t10
    assert int(e["b"].count) == 4 and int(e["u"].count) == 2 and int(e["d"].count) == 2
    assert np.allclose(np.asarray(e["u"].t[:2]), [np.pi / 2, 5 * np.pi / 2], atol=1e-14)
    assert np.allclose(np.asarray(e["d"].t[:2]), [3 * np.pi / 2, 7 * np.pi / 2], atol=1e-14)


def test_save_at_equals_runs_that_stop_at_those_times():
    times = np.array([0.0, 0.005, 0.01, 1.2345, 3.0, 7.77777, 10.0])
    sol = mi.integrate(HH, SS10, X0, 0.01, 1000, save_at=times)
    assert np.array_equal(np.asarray(sol.t), times)
    for i, T in enumerate(times[1:], 1):
        n = int(np.ceil(T / 0.01 - 1e-9))
        ref = mi.integrate(HH, SS10, X0, T / n, n)
        err = max(float(np.max(np.abs(np.asarray(a[-1]) - np.asarray(b[i]))))
                  for a, b in zip(ref.x, sol.x, strict=True))  # fmt: skip
        assert err < 8e-15, (T, err)
    plain = mi.simulate(HH, SS10, X0, 0.01, 1000, save_at=times, chunk_steps=300,
                        compensated=False)  # fmt: skip
    assert plain.save_every == 0 and np.array_equal(plain.t, times)
    assert np.array_equal(plain.x[0], np.asarray(sol.x[0]))
    # compensated (the default at order 10): the states at the times, as integrate gives
    # them for the Compensated map (p to an ulp: the partial step is another program's
    # arithmetic, 1e-19 apart in the tests' compile settings), and the corrections
    traj = mi.simulate(HH, SS10, X0, 0.01, 1000, save_at=times, chunk_steps=300)
    comp = mi.integrate(HH, I.Compensated(SS10), X0, 0.01, 1000, save_at=times)
    assert isinstance(traj.integrator, I.Compensated) and traj.compensation is not None
    assert np.asarray(traj.x[1]).shape == (len(times), 2)
    assert np.array_equal(traj.x[0], np.asarray(comp.x[0]))
    np.testing.assert_allclose(traj.x[1], comp.x[1], rtol=4.5e-16, atol=0)  # 2 ulp
    assert 0 < np.abs(np.asarray(traj.compensation[0])).max() < 1e-16  # an ulp's fraction
    # the time's derivative: d x(T)/dh is O(h^10) for a fixed T between steps
    g = jax.grad(lambda h: mi.integrate(HH, SS10, X0, h, 100, save_at=[0.505]).x[0][0, 0])(0.01)
    assert abs(float(g)) < 1e-11


def test_a_failure_keeps_the_crossings_and_save_times_before_it():
    """Above E = 1/6 the Hénon–Heiles orbit escapes and explicit Euler's state
    overflows (a non-finite step): the record holds what came before the failing step,
    and NaN for the save time after it."""
    x0 = (np.array([0.0, 0.0]), np.array([0.7, 0.3]))
    with pytest.raises(StepFailure) as info:
        mi.simulate(HH, I.ExplicitEuler(), x0, 0.05, 4000, events=[UP], save_at=[1.0, 150.0])
    failed = info.value
    part = failed.trajectory
    assert part is not None and part.t.tolist() == [1.0]
    steps = failed.step
    if int(part.events["q1"].count):
        assert np.nanmax(part.events["q1"].t) < steps * 0.05
    # samples every 100 steps: a crossing between the last sample and the failing step
    # (t = 6, step 120 of 171) is kept all the same
    six = Event(lambda t, x: t - 6.0, direction=1, name="six")
    with pytest.raises(StepFailure) as info:
        mi.simulate(HH, I.ExplicitEuler(), x0, 0.05, 4000, 100, events=[six])
    part = info.value.trajectory
    assert part is not None and part.events["six"].count == 1
    assert part.events["six"].t[0] == pytest.approx(6.0, abs=1e-14)
    traj = mi.simulate(HH, I.ExplicitEuler(), x0, 0.05, 4000, events=[UP], save_at=[1.0, 150.0],
                       throw=False)  # fmt: skip
    assert np.isfinite(traj.x[0][0]).all() and np.isnan(traj.x[0][1]).all()


def test_crossings_are_written_to_files_and_checksummed(tmp_path):
    traj = mi.simulate(HH, I.StormerVerlet(), _hh_starts(3), 0.05, 400, 20, events=[UP],
                       max_events=6)  # fmt: skip
    traj.save(tmp_path / "a.nc")
    traj.save(tmp_path / "a.csv")
    import xarray as xr

    with xr.open_dataset(tmp_path / "a.nc") as ds:
        assert np.array_equal(ds["q1_crossing_time"].values, traj.events["q1"].t, equal_nan=True)
        assert np.array_equal(ds["q1_crossing_p"].values, traj.events["q1"].x[1], equal_nan=True)
        assert ds["q1_crossing_count"].values.tolist() == traj.events["q1"].count.tolist()
        assert ds["q1_crossing_time"].dims == ("sample", "q1_crossing")
    side = json.loads((tmp_path / "a.csv-metadata.json").read_text())["mechint"]
    assert side["q1_crossing_count"] == traj.events["q1"].count.tolist()
    # the checksum covers the crossings: another record gives another file checksum
    other = mi.simulate(HH, I.StormerVerlet(), _hh_starts(3, seed=1), 0.05, 400, 20,
                        events=[UP], max_events=6)  # fmt: skip
    other.save(tmp_path / "b.nc")
    with xr.open_dataset(tmp_path / "a.nc") as a, xr.open_dataset(tmp_path / "b.nc") as b:
        assert a.attrs["checksum"] != b.attrs["checksum"]


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"events": [Event(lambda t, x: x[0])]}, "events"),  # a vector, not a scalar
        ({"events": [Event(lambda t, x: x[2])]}, "events"),  # fails on the state
        ({"events": [UP, Event(q1)]}, "events"),  # two named q1
        ({"events": lambda t, x: x[0][0]}, "events"),  # not an Event
        ({"events": [UP], "max_events": 0}, "max_events"),
        ({"save_at": [2.0, 1.0]}, "save_at"),
        ({"save_at": [10.5]}, "save_at"),
        ({"save_at": [-0.1]}, "save_at"),
        ({"save_at": [[1.0]]}, "save_at"),
        ({"save_at": [np.nan]}, "save_at"),
        ({"save_at": [1.0], "save_every": 10}, "save_every"),
        # issue 57 items 3 and 20: a comparison or a complex number is no condition;
        # max_events checked with or without events; booleans or complex numbers no times
        ({"events": [Event(lambda t, x: x[0][0] > 0)]}, "events"),
        ({"events": [Event(lambda t, x: x[0][0] + 1j)]}, "events"),
        ({"max_events": "abc"}, "max_events"),
        ({"max_events": -5}, "max_events"),
        ({"save_at": [1.0 + 0.5j]}, "save_at"),
        ({"save_at": [True]}, "save_at"),
        # more events than a run watches (each compiled into the loop)
        ({"events": [Event(q1, name=f"e{i}") for i in range(65)]}, "events"),
    ],
)
def test_bad_events_and_save_times_are_refused_before_any_step(kwargs, parameter):
    for run in (mi.simulate, mi.integrate):
        with pytest.raises(InputError) as info:
            run(HH, I.StormerVerlet(), X0, 0.01, 1000, **kwargs)
        assert info.value.parameter == parameter


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [({"direction": 2}, "direction"), ({"direction": True}, "direction"),
     ({"terminal": 1}, "terminal"), ({"name": "a b"}, "name")],
)  # fmt: skip
def test_bad_event_settings_are_refused(kwargs, parameter):
    with pytest.raises(InputError) as info:
        Event(q1, **kwargs)
    assert info.value.parameter == parameter
    with pytest.raises(InputError, match="condition"):
        Event(cast(Any, "q1"))


def test_times_on_the_step_grid_from_any_t0_are_results():
    """Save times and time conditions exactly on the grid t0 + k h, t0 ≠ 0 (the host and
    a compiled program may round t0 + k h differently): every state is a result, every
    crossing located, in float64 and in float32 under jit."""
    t0, h, n = 0.3, 0.07, 200
    grid = t0 + np.arange(1, n + 1) * h
    sol = mi.integrate(HH, I.StormerVerlet(), X0, h, n, t0=t0, save_at=grid)
    traj = mi.simulate(HH, I.StormerVerlet(), X0, h, n, t0=t0, save_at=grid)
    assert np.all(np.isfinite(np.asarray(sol.x[0]))) and np.all(np.isfinite(traj.x[0]))
    # t = 6 h with h = 0.1 (0.6000000000000001): 5 h + h rounds below it, where a bracket
    # re-evaluated at t_5 + h instead of the loop's t_6 missed the crossing it had seen
    T = 6 * 0.1
    at_T = Event(lambda t, x: t - T, direction=1, terminal=True, name="T")
    c = mi.integrate(HH, I.StormerVerlet(), X0, 0.1, 20, events=[at_T]).events["T"]
    assert int(c.count) == 1 and float(c.t[0]) == T
    x32 = jax.tree.map(lambda a: a.astype(np.float32), X0)
    run = jax.jit(lambda x: mi.integrate(HH, I.StormerVerlet(), x, 0.1, 100,
                                         save_at=0.1 * np.arange(1, 100)).x[0])  # fmt: skip
    assert np.all(np.isfinite(np.asarray(run(x32))))


def test_a_failed_member_records_no_crossing_after_its_failure():
    """Explicit Euler fails at step 171 (t = 8.55); a time condition at t = 9 is crossed
    by the clock, not by the frozen member: no crossing is recorded."""
    x0 = (np.array([0.0, 0.0]), np.array([0.7, 0.3]))
    late = Event(lambda t, x: t - 9.0, direction=1, name="late")
    sol = mi.integrate(HH, I.ExplicitEuler(), x0, 0.05, 400, events=[late])
    assert int(sol.failed_step) > 0 and int(sol.events["late"].count) == 0


def test_terminal_steps_keep_what_happened_before_the_end():
    """q = cos t (the exact rotation, h = 0.5) ends at q = 0, t = π/2, inside the step
    [1.5, 2]: a save time at 1.55 is a result, 1.9 is not; a second terminal event later
    in the same step did not happen."""
    end = Event(q1, direction=-1, terminal=True, name="end")
    x0 = (np.array([1.0]), np.array([0.0]))
    sol = mi.integrate(HO, Rotation(), x0, 0.5, 10, events=[end], save_at=[1.0, 1.55, 1.9])
    q = np.asarray(sol.x[0][:, 0])
    assert abs(float(sol.events["end"].t[0]) - np.pi / 2) < 1e-15
    assert abs(q[1] - np.cos(1.55)) < 1e-15 and np.isnan(q[2])
    later = Event(lambda t, x: t - 1.9, direction=1, terminal=True, name="later")
    sol = mi.integrate(HO, Rotation(), x0, 0.5, 10, events=[end, later])
    assert int(sol.events["end"].count) == 1 and int(sol.events["later"].count) == 0


def test_buffers_that_cannot_fit_are_refused_before_any_work():
    """10¹² event slots, 10⁶ slots × 10⁶ members, 10⁷ save times × 10⁶ members: an
    InputError naming the parameter with the size (before: MemoryError, an int32
    overflow deep in JAX, or minutes of work)."""
    up = Event(lambda t, x: x[0][1], name="up")
    many = (np.zeros((10**6, 1)), np.ones((10**6, 1)))
    cases = [((X0, {"events": [up], "max_events": 10**12}), "max_events"),
             ((many, {"events": [up], "max_events": 10**6}), "max_events"),
             ((many, {"save_at": np.linspace(0.0, 1.0, 10**7)}), "save_at")]  # fmt: skip
    for (x0, kw), name in cases:
        for run in (mi.simulate, mi.integrate):
            system = HH if x0 is X0 else HO
            with pytest.raises(InputError, match="memory is available") as caught:
                run(system, I.StormerVerlet(), x0, 0.01, 100, **kw)
            assert caught.value.parameter == name


def test_a_save_time_at_the_terminal_crossing_is_a_result():
    """A save time at exactly a terminal event's time counts (before: NaN): inside a step
    (t = 0.333, h = 0.01, 0.1, 0.3) and where the crossing falls on a step's end (t = 1.5,
    h = 0.5), with simulate and integrate, alone and in a batch; a time past it does not;
    the located crossing's own time, at t0 up to 10⁴."""
    x0 = (np.array([1.0]), np.array([0.0]))
    for T, h in ((0.333, 0.01), (0.333, 0.1), (0.333, 0.3), (1.5, 0.5)):
        end = Event(lambda t, x, T=T: t - T, direction=1, terminal=True, name="end")
        times = [T, T + 0.25 * h]
        for run in (mi.simulate, mi.integrate):
            q = np.asarray(run(HO, Rotation(), x0, h, 40, events=[end], save_at=times).x[0])
            assert abs(q[0, 0] - np.cos(T)) < 1e-15 and np.isnan(q[1, 0]), (T, h, run)
        batch = (np.array([[1.0], [0.5]]), np.array([[0.0], [0.1]]))
        qb = np.asarray(mi.simulate(HO, Rotation(), batch, h, 40, events=[end],
                                    save_at=times).x[0])  # fmt: skip
        assert np.all(np.isfinite(qb[:, 0])) and np.all(np.isnan(qb[:, 1])), (T, h)
    # the located crossing's own time, far from t = 0 (it rounds at ulp(t), not ulp(h))
    ev = Event(lambda t, x: x[0][0], terminal=True, name="q")
    for t0 in (0.0, 100.0, 1e4):
        located = float(
            mi.simulate(HO, I.StormerVerlet(), x0, 0.1, 30, events=[ev], t0=t0).events["q"].t[0]
        )
        q = mi.simulate(
            HO, I.StormerVerlet(), x0, 0.1, 30, events=[ev], save_at=[located], t0=t0
        ).x[0]
        assert abs(float(q[0, 0])) < 1e-12, (t0, q)


def test_save_at_keeps_the_wrappers_parts():
    """The attitude carried along (and a compensated run's correction) at the save times:
    the states at a step's time equal the regular samples there, bit for bit (before,
    the wrappers were peeled twice and the run returned the wrong arrays)."""
    top = S.EulerTop((1.0, 1.5, 2.0))
    m0 = np.array([0.45, 0.0, 0.89])
    dl = I.DiscreteLagrangian()
    at = mi.simulate(top, dl, m0, 0.01, 100, orientation=np.eye(3), save_at=[0.5, 0.733])
    regular = mi.simulate(top, dl, m0, 0.01, 50, 50, orientation=np.eye(3))
    assert np.shape(at.x) == (2, 3) and np.shape(at.orientation) == (2, 3, 3)
    assert np.array_equal(at.x[0], regular.x[-1])
    assert np.array_equal(at.orientation[0], regular.orientation[-1])
    R = np.asarray(at.orientation[1])
    assert np.abs(R.T @ R - np.eye(3)).max() < 1e-14 and np.all(np.isfinite(at.x))


def test_a_run_ended_by_a_terminal_event_says_so_in_the_trajectory_and_the_file(tmp_path):
    """The stop is recorded (step, event) per member; the file is not ``complete``, keeps
    the record, and ``--resume`` refuses it: nothing claims steps that were not run."""
    import xarray as xr

    from mechint import io
    from mechint.errors import InputError
    from mechint.runfile import RunFile

    kepler = mi.systems.Kepler()
    x0 = kepler.periapsis_state(0.5)
    at = mi.Event(lambda t, x: t - 0.333, terminal=True, name="clock")
    down = mi.Event(lambda t, x: x[0][1] - 0.3, terminal=True, name="q2")
    never = mi.Event(lambda t, x: x[0][0] - 5.0, terminal=True, name="far")
    xb = (np.stack([x0[0], x0[0]]), np.stack([x0[1], 0.5 * x0[1]]))
    traj = mi.simulate(kepler, mi.integrators.StormerVerlet(), xb, 0.01, 100, 10,
                       events=[at, down, never])  # fmt: skip
    t_q2 = traj.events["q2"].t[:, 0]
    first = np.where(t_q2 < 0.333, "q2", "clock")
    assert list(traj.stopped_by) == list(first) and len(set(first)) == 2, (t_q2, first)
    t_end = np.where(first == "q2", t_q2, 0.333)
    assert np.array_equal(traj.stopped_step, np.floor(t_end / 0.01).astype(int) + 1)
    assert np.all(traj.stopped) and not np.any(traj.failed)
    assert "2 stopped by a terminal event" in repr(traj)
    path = tmp_path / "ended.nc"
    traj.save(path)
    attrs = io.saved_attrs(path)
    assert attrs is not None and attrs["complete"] == 0 and attrs["stopped"] == 2
    with xr.open_dataset(path) as ds:
        assert np.array_equal(ds["stopped_step"].values, traj.stopped_step)
        assert list(ds["stopped_by"].values) == list(first)
    record = io.run_record(kepler, mi.integrators.StormerVerlet(), 0.01, 10, 100, "float64")
    with pytest.raises(InputError, match="terminal event ended"):
        RunFile.resume(path, kepler, record, xb, None)
    # a run no terminal event ended: no stop recorded, complete
    plain = mi.simulate(kepler, mi.integrators.StormerVerlet(), x0, 0.01, 100, 10, events=[never])
    assert not np.any(plain.stopped)
    plain.save(path)
    attrs = io.saved_attrs(path)
    assert attrs is not None and attrs["complete"] == 1 and "stopped" not in attrs


@dataclasses.dataclass(frozen=True)
class Scaled(I.Integrator):
    """Störmer–Verlet on Kepler whose loop carries coordinates of its own, (q, p/√(μ|q|)),
    as the Wisdom–Holman maps carry theirs: a zero state's are NaN, and μ enters them."""

    name: ClassVar[str] = "scaled-stormer-verlet"
    traits = I.StormerVerlet.traits
    own_coordinates: ClassVar[bool] = True

    def cannot_serve(self, system):
        return None if isinstance(system, S.Kepler) else "Kepler only"

    def step(self, system, x, h):
        return I.StormerVerlet().step(system, x, h)

    def enter(self, system, x, h):
        q, p = x
        return q, p / jnp.sqrt(system.mu * jnp.sqrt(jnp.sum(q * q)))

    def leave(self, system, z, h):
        q, u = z
        return q, u * jnp.sqrt(system.mu * jnp.sqrt(jnp.sum(q * q)))

    def loop_step(self, system, z, h):
        x, st = self.step(system, self.leave(system, z, h), h)
        return self.enter(system, x, h), st


def test_reverse_mode_with_empty_slots_is_finite():
    """Reverse mode with respect to the system's parameters through a run whose event
    buffers have empty slots (zeros: for Kepler a singular state) equals forward mode:
    an empty slot's NaN sends no derivative back (0 · NaN would).  Also for a map whose
    loop carries coordinates of its own (the recorded loop states, of the crossings and
    the save times, are shown after the loop, the empty slots' too, with μ in them)."""
    event = mi.Event(lambda t, x: x[0][1], direction=1, name="up")
    x0 = ([0.5, 0.0], [0.0, np.sqrt(3.0)])  # e = 0.5

    def times(mu, integrator=None, save_at=None):
        integrator = I.StormerVerlet() if integrator is None else integrator
        sol = mi.integrate(mi.systems.Kepler(mu), integrator, x0, 0.01, 2000, events=event,
                           max_events=8, save_at=save_at)  # fmt: skip
        return jnp.concatenate([sol.events["up"].t[:3], sol.x[0][:, 0], sol.x[1][:, 1]])

    mu = jnp.asarray(1.0)
    # the same points as the plain map's (its own coordinates shown after the loop)
    np.testing.assert_allclose(times(mu, Scaled(), [3.05, 7.5]),
                               times(mu, save_at=[3.05, 7.5]), rtol=1e-12)  # fmt: skip
    for f in (times, lambda mu: times(mu, Scaled(), [3.05, 7.5])):
        value, back = jax.vjp(f, mu)
        weights = jnp.arange(1.0, value.size + 1.0)
        back = back(weights)[0]  # the sum weighted 1, 2, 3, ...
        ahead = jnp.sum(weights * jax.jvp(f, (mu,), (jnp.ones_like(mu),))[1])
        assert int(np.sum(np.isfinite(value))) == value.size and np.all(np.isfinite(back))
        np.testing.assert_allclose(back, ahead, rtol=1e-12)


def test_the_solver_brackets_an_end_found_at_the_root_at_the_next_evaluation(monkeypatch):
    """Illinois' regula falsi puts an end on the root to round-off within a few steps,
    and then its points fall on that end; the least step (2 ulp inside) brackets the root
    at the next evaluation.  On 4000 smooth crossings of each kind in [0, 1] every
    bracket closes within 16 evaluations (the solver without the least step: up to 44,
    by bisections) on the root to a few ulp and the function's own rounding, with the
    value and the state of the evaluation there."""
    from mechint import events

    monkeypatch.setattr(events, "_MAX_ITERATIONS", 16)
    rng = np.random.default_rng(0)
    n = 4000
    r = jnp.asarray(rng.uniform(0.05, 0.95, n))
    w = jnp.asarray(rng.uniform(0.5, 3.0, n))
    kinds = {
        "sin": lambda t: jnp.sin(w * (t - r)) * (1 + t),
        "exp": lambda t: jnp.exp(w * t) - jnp.exp(w * r),
        "line": lambda t: (t - r) * w,
    }
    for name, f in kinds.items():
        a, b = jnp.zeros(n), jnp.ones(n)
        # the state each evaluation returns is its τ: the state carried to the root is
        # the one evaluated there
        tau, ok, _, f_tau, x_tau = jax.jit(lambda f=f, a=a, b=b: events._bracket_roots(
            lambda t: (f(t), {"t": t}), a, f(a), {"t": a}, b, a == 0))()  # fmt: skip
        assert bool(jnp.all(ok)), (name, int(jnp.sum(~ok)))
        assert bool(jnp.all(x_tau["t"] == tau)) and bool(jnp.all(jnp.abs(f_tau) <= 1e-12))
        # the computed f's zero lies within its rounding over its slope (4 eps / w) of r
        bound = 8 * jnp.spacing(r) + 4 * np.finfo(np.float64).eps / w
        off = float(jnp.max(jnp.abs(tau - r) / bound))
        assert off <= 1, (name, off)
    # a bracket that closes on a jump of f (a map whose partial step does not start at
    # its state) is not a root: not converged, however small f is on either side of it
    for jump in (0.3, 2e-3 * (1 + w)):
        a, b = jnp.zeros(n), jnp.ones(n)

        def f(t, jump=jump):
            return jnp.sign(t - r) * jump + (t - r) * w

        ok = jax.jit(lambda a=a, b=b, f=f: events._bracket_roots(
            lambda t: (f(t), {"t": t}), a, f(a), {"t": a}, b, a == 0))()[1]  # fmt: skip
        assert not bool(jnp.any(ok)), int(jnp.sum(ok))


_TRACES: list[str] = []


@dataclasses.dataclass(frozen=True)
class _CountedRotation(I.Integrator):
    """``Rotation``, noting where each trace of its step comes from (``tag``: a new
    program each)."""

    name: ClassVar[str] = "counted-rotation"
    traits = mi.maps.EXACT_TRAITS
    tag: int = 0

    def cannot_serve(self, system):
        return None

    def step(self, system, x, h):
        names = {f.name for f in traceback.extract_stack()}
        _TRACES.append("rates" if "_at_roots_jvp" in names else
                       "locate" if "locate" in names else "run")  # fmt: skip
        return Rotation().step(system, x, h)


def test_locating_crossings_traces_the_step_once_and_a_differentiated_run_twice():
    """The crossings are located by the bracketing solver, whose evaluations give the
    crossing's state too: locating them takes one trace of the map's step (the program's
    size, its compile time), and only a run that is differentiated takes a second one,
    for the rates at the roots (the implicit function theorem's); its derivative is the
    closed form's (the crossings of q = sin(t + φ))."""
    x0 = (jnp.asarray([0.0]), jnp.asarray([1.0]))
    up = Event(lambda t, x: x[0][0] - 0.5, direction=1, name="up")

    def traces(tag, grad=False):
        def first(phase):
            x = (jnp.sin(phase) + 0 * x0[0], jnp.cos(phase) + 0 * x0[1])
            sol = mi.integrate(HO, _CountedRotation(tag), x, 0.1, 100, events=[up])
            return sol.events["up"].t[0]

        _TRACES.clear()
        value = jax.grad(first)(0.0) if grad else first(0.0)
        return (_TRACES.count("locate"), _TRACES.count("rates")), float(value)

    counts, t = traces(1)
    assert counts == (1, 0) and abs(t - np.pi / 6) < 1e-13, (counts, t)
    counts, dt = traces(2, grad=True)
    assert counts == (1, 1) and abs(dt + 1.0) < 1e-12, (counts, dt)  # t = arcsin(1/2) − φ


def test_second_derivatives_of_a_crossing_are_the_closed_forms():
    """q = A sin(t + φ) crosses q = 1/2 upward at t = arcsin(1/(2A)) − φ with p = (A² −
    1/4)^½: the second derivatives in A of the located time and momentum (forward over
    reverse, and reverse over reverse) are the closed forms' to 1e-12 (the implicit
    function theorem's derivatives taken at the roots as they move)."""
    up = Event(lambda t, x: x[0][0] - 0.5, direction=1, name="up")
    phase = -0.3

    def crossing(A):
        x = (A * jnp.sin(phase) * jnp.ones(1), A * jnp.cos(phase) * jnp.ones(1))
        c = mi.integrate(HO, Rotation(), x, 0.1, 100, events=[up]).events["up"]
        return jnp.stack([c.t[0], c.x[1][0, 0]])

    A = 1.3
    c, s = 0.5 / A, np.sqrt(A * A - 0.25)
    # d²/dA² arcsin(1/(2A)) and d²/dA² (A² − 1/4)^½
    exact = np.array([c * (2 - c * c) / (A * A * (1 - c * c) ** 1.5), -0.25 / s**3])
    for second in (jax.jacfwd(jax.jacrev(crossing)), jax.jacrev(jax.jacrev(crossing))):
        got = np.asarray(jax.jit(second)(A))
        assert np.max(np.abs(got - exact)) <= 1e-12 * np.max(np.abs(exact)), (got, exact)
