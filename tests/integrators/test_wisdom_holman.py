"""The Wisdom–Holman maps (``integrators.WisdomHolman``, ``SABA``): one step of every
coordinate system, kernel and corrector against REBOUND 5.2.2's from the same state
(rebound_outer_solar_system.json), exactness on two bodies, symplecticity, order 2 and
the momenta kept, close encounters failing the step, gradients through a run in reverse
and forward mode and against the map in mpmath, a run carrying the map's own coordinates,
events on the states it shows, a batch equal to its members, and bad settings refused."""

import importlib
import json
from pathlib import Path
from typing import Any, cast

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest

import mechint as mi
from mechint.integrators import wisdom_holman as wh
from tests.integrators.mp_wisdom_holman import wisdom_holman

I = mi.integrators
GOLDEN = json.loads((Path(__file__).with_name("rebound_outer_solar_system.json")).read_text())

CONFIGS = {
    "whfast jacobi default corr0": I.WisdomHolman(),
    "whfast jacobi default corr17": I.WisdomHolman(corrector=17),
    "whfast jacobi default corr17 corrector2": I.WisdomHolman(corrector=17, corrector2=True),
    "whfast jacobi modifiedkick corr17": I.WisdomHolman(kernel="modified-kick", corrector=17),
    "whfast jacobi composition corr17": I.WisdomHolman(kernel="composition", corrector=17),
    "whfast jacobi lazy corr17": I.WisdomHolman(kernel="lazy", corrector=17),
    "whfast democraticheliocentric": I.WisdomHolman(coordinates="democratic-heliocentric"),
    "whfast democraticheliocentric corr17": I.WisdomHolman(
        coordinates="democratic-heliocentric", corrector=17
    ),
    "whfast whds": I.WisdomHolman(coordinates="whds"),
    "saba 4": I.SABA(4),
    "saba cm_4": I.SABA(4, corrected=True),
    "saba 10_6_4": I.SABA("10,6,4"),
}


def _rows(rows):
    return np.array([[float.fromhex(v) for v in r] for r in rows])


def _rebound_state(rows):
    a = _rows(rows)
    return a[:, 0], (a[:, 1:4], a[:, 0:1] * a[:, 4:7])


@pytest.fixture(scope="module")
def outer():
    m, x0 = _rebound_state(GOLDEN["initial"])
    return mi.systems.NBody(m, 1.0), x0


# every map's sequence through one compiled program per coordinate system: the sequences
# padded to one length with empty rows (no drift, no kick)
ALL_KINDS = [wh.PLAIN, wh.MODIFIED, wh.LAZY, wh.SABA_CORRECTOR]


@jax.jit(static_argnames=("coordinates",))
def _sequence(system, x, h, fractions, kind, coordinates):
    kinds = ALL_KINDS if coordinates == "jacobi" else [wh.PLAIN]
    return wh.run(system, coordinates, x, h, fractions, kind, [wh.NONE, *kinds])[0]


def _padded(integrator, length=256):
    rows = wh.merged(integrator.ops())
    kinds = [wh.NONE, *(ALL_KINDS if _coordinates(integrator) == "jacobi" else [wh.PLAIN])]
    fractions, kind = wh.table(rows, kinds)
    pad = length - len(rows)
    return np.pad(fractions, ((0, pad), (0, 0))), np.pad(kind, (0, pad))


def _coordinates(integrator):
    return getattr(integrator, "coordinates", "jacobi")


def test_one_step_equals_rebound_in_every_configuration(outer):
    """≤ 1e-14 relative (max-norm of positions and of velocities), REBOUND's own operation
    order aside; the plain WH step through the driver equals its sequence's run."""
    system, x0 = outer
    m = np.asarray(system.masses)[:, None]
    h = GOLDEN["dt"]
    worst = {}
    for name, integrator in CONFIGS.items():
        fractions, kind = _padded(integrator)
        q, p = _sequence(system, x0, h, fractions, kind, _coordinates(integrator))
        ref = _rows(GOLDEN["one_step"][name])
        eq = np.max(np.abs(np.asarray(q) - ref[:, 1:4])) / np.max(np.abs(ref[:, 1:4]))
        ev = np.max(np.abs(np.asarray(p) / m - ref[:, 4:7])) / np.max(np.abs(ref[:, 4:7]))
        worst[name] = max(eq, ev)
    assert max(worst.values()) < 1e-14, worst
    traj = mi.simulate(system, I.WisdomHolman(), x0, h, 1, 1)
    ref = _rows(GOLDEN["one_step"]["whfast jacobi default corr0"])
    assert np.max(np.abs(traj.x[0][-1] - ref[:, 1:4])) / np.max(np.abs(ref[:, 1:4])) < 1e-14


def test_sequences_are_the_published_ones():
    """SABA's stages palindromic with drifts and kicks adding to 1; the composition kernel
    and every corrector's drifts adding to 1 and 0 (a corrector moves no time)."""
    for kind in (1, 2, 3, 4, "10,4", "8,6,4", "10,6,4"):
        seq = wh.saba_sequence(kind)
        assert seq == seq[::-1]
        assert sum(c for op, c in seq if op == "D") == pytest.approx(1, abs=1e-15)
        assert sum(c for op, c in seq if op == "I") == pytest.approx(1, abs=1e-15)
    for integrator in CONFIGS.values():
        rows = wh.merged(integrator.ops())
        assert sum(r[0] for r in rows) == pytest.approx(1, abs=1e-14)
    for order in (3, 5, 7, 11, 17):
        rows = wh.merged(wh.corrector_ops(order, 1.0))
        assert abs(sum(r[0] for r in rows)) < 1e-15 and abs(sum(r[1] for r in rows)) < 1e-15


def test_two_bodies_move_on_exact_kepler_orbits():
    """A star and one planet: the Jacobi splitting has no interaction, so 1000 steps are
    the exact flow (to round-off), untouched by a test particle beside them."""
    system, x0 = mi.systems.NBody.from_elements(
        [1.0, 1e-3, 0.0],
        {
            "a": [1.0, 3.0],
            "e": [0.3, 0.6],
            "i": [0.1, 0.5],
            "Omega": [1.0, 2.0],
            "omega": [0.5, 2.5],
            "M": [0.2, 1.0],
        },
    )
    traj = mi.simulate(system, I.WisdomHolman(), x0, 0.05, 1000, 1000)
    m = np.asarray(system.masses)
    w = np.array([m[0], m[1], 1.0])[:, None]
    r0 = x0[0][1] - x0[0][0]
    v0 = x0[1][1] / w[1] - x0[1][0] / w[0]
    r, v = mi.exact.kepler_flow(m[0] + m[1], r0, v0, 50.0)
    q, p = traj.x[0][-1], traj.x[1][-1]
    # 2000 Kepler solves of a few ulp each, the error sheared along the orbit: ~1e4 ulp
    assert np.max(np.abs(q[1] - q[0] - r)) < 5e-12
    assert np.max(np.abs(p[1] / w[1] - p[0] / w[0] - v)) < 5e-12


def test_symplectic_order_two_and_the_momenta_kept(outer):
    """DΦᵀ𝕁DΦ = 𝕁 to round-off (Jacobian by jax); |ΔE/E| after 1000 steps falls 4× when h
    halves (order 2); P and L kept to round-off."""
    system, x0 = outer

    def flat_step(z):
        x = system.from_coordinates(z)
        return system.coordinates(I.WisdomHolman().step(system, x, 0.5)[0])

    z0 = system.coordinates(tuple(jnp.asarray(a) for a in x0))
    D = np.asarray(jax.jit(jax.jacfwd(flat_step))(z0))
    d = D.shape[0] // 2
    J = np.block([[np.zeros((d, d)), np.eye(d)], [-np.eye(d), np.zeros((d, d))]])
    # relative to |DΦ|² (dq/dp = h/m reaches 500 here): round-off of the products' sums
    assert np.max(np.abs(D.T @ J @ D - J)) / np.max(np.abs(D)) ** 2 < 1e-15
    errors = []
    for h in (1.0, 0.5):
        traj = mi.simulate(system, I.WisdomHolman(), x0, h, int(400 / h), int(100 / h))
        inv = traj.invariants()
        errors.append(np.max(np.abs(inv["H"] - inv["H"][0])) / abs(inv["H"][0]))
        for k in ("Px", "Py", "Pz", "Lx", "Ly", "Lz"):
            scale = 1e-3 if k[0] == "P" else 1e-3 * 30
            assert np.max(np.abs(inv[k] - inv[k][0])) < 1e-15 * scale * 100, k
    assert 3.5 < errors[0] / errors[1] < 4.5, errors


def test_a_close_encounter_fails_the_step_and_spares_the_batch():
    """Two planets on crossing orbits with an encounter distance: the member fails with
    its reason; a member far from any encounter runs to the end."""
    masses = [1.0, 1e-3, 1e-3]
    el = {"a": [[1.0, 1.05], [1.0, 4.0]], "e": [[0.0, 0.1], [0.0, 0.0]],
          "M": [[0.0, 0.02], [0.0, 3.0]]}  # fmt: skip
    system, x0 = mi.systems.NBody.from_elements(masses, el, encounter=0.02)
    traj = mi.simulate(system, I.WisdomHolman(), x0, 0.01, 2000, 100, throw=False)
    assert list(traj.reason) == ["close-encounter", "ok"] and traj.failed_step[0] > 0
    with pytest.raises(mi.StepFailure, match="closer than"):  # the same compiled run
        mi.simulate(system, I.WisdomHolman(), x0, 0.01, 2000, 100)


def test_a_frozen_member_does_not_hold_the_batch_on_the_general_kepler_solve(monkeypatch):
    """A member that escapes on a fast hyperbola (its arc per step past the short-arc
    solve's |beta s^2| <= 1) stops there; its later steps, whose results the loop
    discards, start from a live member's state, so the general Kepler solve (one branch
    for the whole batch where any entry needs it) runs only around the escape, in the map
    and in its tangent (``Integrator.batch_branches``); the live member's states are
    those it has beside a live copy of itself, and the stopped member's end is NaN."""
    from mechint.exact import two_body

    taken = []
    general = two_body._general

    def counted(*args, **kwargs):
        jax.debug.callback(lambda: taken.append(1))
        return general(*args, **kwargs)

    monkeypatch.setattr(two_body, "_general", counted)
    masses = [1.0, 1e-3, 1e-3]
    el = {"a": [[1.0, 2.0], [1.0, 2.0]], "e": [[0.0, 0.0], [0.0, 0.0]], "M": [[0.0, 3.0]] * 2}
    system, x0 = mi.systems.NBody.from_elements(masses, el, escape=6.0)
    q, p = (np.array(a) for a in x0)
    p[0, 1] = p[0, 1] * 400.0  # member 0's inner planet leaves at 400 times circular speed
    q, p = jnp.asarray(q), jnp.asarray(p)
    steps, h = 200, 0.05
    tangent = I.Tangent(I.WisdomHolman())  # the map's drifts and their tangents
    run = jax.jit(lambda q, p: mi.integrate(system, tangent, (q, p), h, steps))
    both = jax.block_until_ready(run(q, p))
    failed = int(np.asarray(both.failed_step)[0])
    assert 0 < failed < 10 and int(np.asarray(both.failed_step)[1]) < 0
    assert 0 < len(taken) <= 12, len(taken)  # around the escape, not on every step
    # member 1 the same (bit for bit) beside a live copy of itself, member 0's end NaN
    live = run(q[jnp.array([1, 1])], p[jnp.array([1, 1])])
    for a, b in zip(jax.tree.leaves(both.x), jax.tree.leaves(live.x), strict=True):
        assert np.array_equal(np.asarray(a)[1], np.asarray(b)[1])
        assert np.isnan(np.asarray(a)[0, -1]).all() and np.isfinite(np.asarray(a)[0, 0]).all()


def test_gradients_through_a_run_reverse_equals_forward():
    """d(final positions)/d(planet masses, x0) by jax.grad through integrate equal forward
    mode (jvp) to 1e-10, and the derivative of the same map run in mpmath at 60 digits
    (``mp_wisdom_holman``; central differences of 1e-20) to 1e-9; the masses are traced
    leaves of the system."""
    base, x0 = mi.systems.NBody.from_elements(
        [1.0, 1e-3, 3e-4], {"a": [1.0, 1.6], "e": [0.05, 0.1], "i": [0.01, 0.03], "M": [0.0, 2.0]}
    )
    x0 = tuple(jnp.asarray(a) for a in x0)
    probe = jnp.asarray(np.random.default_rng(0).normal(size=(3, 3)))

    def loss(masses, q0):
        system = mi.systems.NBody(masses, test_particles=0)
        sol = mi.integrate(system, I.WisdomHolman(), (q0, x0[1]), h=0.05, steps=20,
                           checkpoint=False)  # fmt: skip
        return jnp.sum(sol.x[0][-1] * probe)

    masses = base.masses
    dm = jnp.asarray([0.0, 1.0, -2.0])
    dq = jnp.asarray(np.random.default_rng(1).normal(size=(3, 3)))

    # two programs (compiled 14 s and 19 s here; as one program, 42 s)
    forward = jax.jit(lambda m, q: jax.jvp(loss, (m, q), (dm, dq))[1])(masses, x0[0])
    g_m, g_q = jax.jit(jax.grad(loss, argnums=(0, 1)))(masses, x0[0])
    reverse = jnp.sum(g_m * dm) + jnp.sum(g_q * dq)
    assert abs(float(reverse - forward)) <= 1e-10 * abs(float(forward)), (reverse, forward)

    def mp_loss(eps):
        m = [mp.mpf(float(a)) + eps * float(b) for a, b in zip(masses, dm, strict=True)]
        q = [[mp.mpf(float(a)) + eps * float(b) for a, b in zip(qa, qb, strict=True)]
             for qa, qb in zip(x0[0], dq, strict=True)]  # fmt: skip
        v = [[mp.mpf(float(c)) / mk for c in pk] for pk, mk in zip(x0[1], m, strict=True)]
        qT: list = wisdom_holman(m, q, v, 0.05, 20)
        return mp.fsum(qT[i][c] * float(probe[i, c]) for i in range(3) for c in range(3))

    with mp.workdps(60):
        eps = mp.mpf("1e-20")
        exact = (mp_loss(eps) - mp_loss(-eps)) / (2 * eps)
    assert abs(float(forward) - float(exact)) <= 1e-9 * abs(float(exact)), (forward, exact)


def test_a_batch_equals_its_members_bit_for_bit(outer, monkeypatch):
    """A batch's members equal their runs alone, in the (B, N, 3) loop of a CPU and in a
    GPU's loop on the state's columns (forced here: ``integrate._columns_in_loops``,
    the loop's (5, 3) leaves as 15 columns each)."""
    from mechint.simulate import _advance

    loop = importlib.import_module("mechint.integrate")
    programs = [cast(Any, f) for f in (_advance, loop._integrate_concrete, loop._integrate)]
    system, x0 = outer
    rng = np.random.default_rng(2)
    qb = np.stack([x0[0], x0[0] * (1 + 1e-6 * rng.normal(size=x0[0].shape))])
    pb = np.stack([x0[1], x0[1]])
    saba = I.SABA(4, corrected=True)
    batch = mi.simulate(system, saba, (qb, pb), 0.5, 20, 10)
    monkeypatch.setattr(loop, "_columns_in_loops", lambda: True)
    monkeypatch.setattr(type(saba), "batch_columns", True)  # as WisdomHolman's
    for f in programs:  # the flags are read when the loops are traced
        f.clear_cache()
    try:
        columns = mi.simulate(system, saba, (qb, pb), 0.5, 20, 10)
    finally:
        for f in programs:
            f.clear_cache()
    for k in range(2):
        one = mi.simulate(system, saba, (qb[k], pb[k]), 0.5, 20, 10)
        for run in (batch, columns):
            dq, dp = (np.max(np.abs(run.x[i][k] - one.x[i])) for i in (0, 1))
            assert dq == 0 and dp == 0, (k, dq, dp)


def test_a_run_carries_the_maps_coordinates_and_shows_the_corrected_state(outer):
    """The loop of a run carries Jacobi coordinates from kernel to kernel and applies the
    corrector where a state is shown, never feeding it back: the samples are the same
    whatever the save interval, bit for bit; a run continued from ``loop_state`` equals
    the run in one go bit for bit; the shown states equal the corrector's inverse of
    the kernels' state to round-off, and the run is the map (C⁻¹ K C, ``step``) to
    round-off."""
    system, x0 = outer
    wh_ = I.WisdomHolman(corrector=5)
    h = 0.5
    every = mi.simulate(system, wh_, x0, h, 8, 1)
    sparse = mi.simulate(system, wh_, x0, h, 8, 4)
    first = mi.simulate(system, wh_, x0, h, 4, 4)
    rest = mi.simulate(system, wh_, (first.x[0][-1], first.x[1][-1]), h, 4, 4, t0=4 * h,
                       loop_state=first.loop_state)  # fmt: skip
    for i in (0, 1):
        assert np.array_equal(every.x[i][::4], sparse.x[i])
        assert np.array_equal(rest.x[i][-1], sparse.x[i][-1])
        assert np.array_equal(rest.loop_state[i], sparse.loop_state[i])

    @jax.jit
    def by_hand(x):
        z = wh_.enter(system, x, h)
        z = jax.lax.fori_loop(0, 8, lambda _, z: wh_.loop_step(system, z, h)[0], z)
        y = jax.lax.fori_loop(0, 8, lambda _, y: wh_.step(system, y, h)[0], x)
        return z, wh_.leave(system, z, h), y

    z, shown, stepped = by_hand(x0)
    scale = [np.max(np.abs(every.x[i][-1])) for i in (0, 1)]
    for i in (0, 1):
        assert np.max(np.abs(np.asarray(z[i]) - every.loop_state[i])) <= 4e-16 * scale[i]
        assert np.max(np.abs(np.asarray(shown[i]) - every.x[i][-1])) <= 4e-16 * scale[i]
        assert np.max(np.abs(np.asarray(stepped[i]) - every.x[i][-1])) <= 1e-13 * scale[i]
    # the loop's state is not the state: Jacobi coordinates before the corrector's inverse
    assert not np.allclose(every.loop_state[0], every.x[0][-1], rtol=1e-6, atol=0)
    with pytest.raises(mi.InputError, match="loop_state"):
        mi.simulate(system, wh_, x0, h, 4, loop_state=(x0[0][:2], x0[1][:2]))
    with pytest.raises(mi.InputError, match="loop_state"):
        mi.simulate(system, I.StormerVerlet(), x0, h, 4, loop_state=x0)


def test_periapsis_passages_are_located_on_the_shown_states():
    """A star and one planet (no interaction in the Jacobi splitting: the map is the exact
    flow, its loop a half step apart from the states it shows): periapsis passages (r·v
    rising through 0) located by an event fall one Kepler period apart from the first,
    at the time and distance Kepler's equation gives, to 1e-11 of the period and 1e-12
    of the distance."""
    a, e, mean = 1.0, 0.3, 2.0
    system, x0 = mi.systems.NBody.from_elements(
        [1.0, 1e-3], {"a": [a], "e": [e], "i": [0.1], "Omega": [0.2], "omega": [0.4], "M": [mean]}
    )
    m = np.asarray(system.masses)

    def radial(t, x):
        q, p = x
        return jnp.dot(q[1] - q[0], p[1] / m[1] - p[0] / m[0])

    event = mi.Event(radial, direction=1, name="periapsis")
    traj = mi.simulate(system, I.WisdomHolman(), x0, 0.05, 400, 400, events=event)
    c = traj.events["periapsis"]
    period = 2 * np.pi * np.sqrt(a**3 / (m[0] + m[1]))
    first = (2 * np.pi - mean) / (2 * np.pi) * period
    count = int(c.count)
    assert count == 3, count
    assert np.max(np.abs(c.t[:count] - (first + period * np.arange(count)))) < 1e-11 * period
    q = c.x[0][:count]
    r = np.linalg.norm(q[:, 1] - q[:, 0], axis=-1)
    assert np.max(np.abs(r - a * (1 - e))) < 1e-12


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: I.WisdomHolman(coordinates="heliocentric"), "coordinates"),
        (lambda: I.WisdomHolman(kernel="lazy", coordinates="whds"), "Jacobi"),
        (lambda: I.WisdomHolman(corrector=4), "corrector"),
        (lambda: I.WisdomHolman(corrector=cast(Any, 3.0)), "corrector"),
        (lambda: I.WisdomHolman(corrector=11, coordinates="whds"), "WHDS"),
        (
            lambda: I.WisdomHolman(corrector2=True, coordinates="democratic-heliocentric"),
            "corrector2",
        ),
        (lambda: I.SABA(5), "SABA"),
        (lambda: I.SABA("10,6,4", corrected=True), "no corrector"),
    ],
)
def test_bad_settings_are_refused(make, needle):
    with pytest.raises(mi.InputError, match=needle):
        make()


def test_only_planetary_systems_are_served():
    assert "NBody" in (I.WisdomHolman().cannot_serve(mi.systems.Kepler()) or "")
    with pytest.raises(mi.InputError):
        mi.simulate(mi.systems.Kepler(), I.SABA(), mi.systems.Kepler().periapsis_state(0.1), 0.1, 1)
