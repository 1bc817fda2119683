"""``mi.integrate``: a pure run under jit, vmap and grad, through every integrator family.

For each family (explicit, Kahan, midpoint, symplectic Euler and Verlet through Newton,
the discrete Lagrangian map on all three so(n) systems, splittings, compositions, the
exact flow) the derivative of a loss of the final state with respect to x0, the
system's parameters and h, in reverse mode, agrees with forward mode (jvp) to 1e-10
and with central differences to 1e-6.  Directions in x0 are drawn in the system's own
coordinates (skew M, symmetric P), so they stay on the state space.
"""

import sys
from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.errors import InputError
from mechint.maps import Reason

I = mi.integrators
S = mi.systems


def _quartic(q, p, k):
    """A non-separable H: symplectic Euler and Verlet solve it by Newton."""
    return 0.5 * jnp.sum(p**2) * (1.0 + k[0] * q[0] ** 2) + 0.5 * k[1] * jnp.sum(q**2)


# (id, system from parameters, parameters, integrator, steps, h)
CASES = [
    ("explicit-euler", S.EulerTop, jnp.array([2.0, 1.0, 0.7]), I.ExplicitEuler(), 8, 0.02),
    ("rk4", S.HenonHeiles, jnp.array(0.9), I.RK4(), 8, 0.1),
    ("kahan", S.EulerTop, jnp.array([2.0, 1.0, 0.7]), I.Kahan(), 8, 0.1),
    ("kahan-lv", lambda a: S.LotkaVolterra(*a), jnp.array([1.0, 0.5, 0.7, 1.2]), I.Kahan(), 8, 0.1),
    ("midpoint", S.EulerTop, jnp.array([2.0, 1.0, 0.7]), I.ImplicitMidpoint(), 8, 0.1),
    (
        "symplectic-euler",
        lambda k: S.Hamiltonian(_quartic, 2, params=k),
        jnp.array([0.3, 1.2]),
        I.SymplecticEuler(),
        8,
        0.05,
    ),
    (
        "verlet-newton",
        lambda k: S.Hamiltonian(_quartic, 2, params=k),
        jnp.array([0.3, 1.2]),
        I.StormerVerlet(),
        8,
        0.05,
    ),
    ("verlet", S.Kepler, jnp.array(1.1), I.StormerVerlet(), 8, 0.05),
    ("strang", S.HenonHeiles, jnp.array(0.9), I.Splitting(), 8, 0.1),
    ("yoshida4", S.Kepler, jnp.array(1.1), I.Composition(I.StormerVerlet(), "yoshida4"), 8, 0.05),
    (
        "rigid-body-splitting",
        S.EulerTop,
        jnp.array([2.0, 1.0, 0.7]),
        I.RigidBodySplitting(),
        8,
        0.1,
    ),
    ("exact-flow", S.EulerTop, jnp.array([2.0, 1.0, 0.7]), I.ExactFlow(), 2, 0.3),
    ("gauss3", S.Kepler, jnp.array(1.1), I.Gauss(3), 4, 0.1),
    (
        "gonzalez",
        lambda k: S.Hamiltonian(_quartic, 2, params=k, degree=4),
        jnp.array([0.3, 1.2]),
        I.DiscreteGradient(),
        6,
        0.05,
    ),
    ("dl-free", S.FreeRigidBody, jnp.array([1.0, 2.0, 3.5]), I.DiscreteLagrangian(), 8, 0.1),
    (
        "dl-free-n4",
        S.FreeRigidBody,
        jnp.array([1.0, 1.6, 2.5, 3.5]),
        I.DiscreteLagrangian(),
        8,
        0.1,
    ),
    (
        "dl-potential",
        S.QuadraticPotentialTop,
        jnp.array([1.0, 2.0, 3.5]),
        I.DiscreteLagrangian(),
        8,
        0.1,
    ),
    ("dl-clebsch", S.ClebschTop, jnp.array([1.0, 2.0, 3.5]), I.DiscreteLagrangian(), 8, 0.1),
]


def _state(system):
    if isinstance(system, S.Hamiltonian):
        return (np.array([0.4, -0.3]), np.array([0.2, 0.5]))
    if isinstance(system, S.Kepler):
        return system.periapsis_state(0.3)
    if isinstance(system, S.HenonHeiles):
        return (np.array([0.1, -0.2]), np.array([0.3, 0.25]))
    return system.example_state()


def _loss_fn(build, integrator, steps):
    """Loss of the final state: a fixed random linear functional of every entry."""

    def loss(x0, params, h):
        sol = mi.integrate(build(params), integrator, x0, h, steps, checkpoint=False)
        leaves = jax.tree.leaves(jax.tree.map(lambda a: a[-1], sol.x))
        weights = [
            jnp.cos(jnp.arange(a.size, dtype=a.dtype) + 1.0).reshape(a.shape) for a in leaves
        ]
        return sum(jnp.sum(w * a) for w, a in zip(weights, leaves, strict=True))

    return loss


def _directions(system, x0, params, rng):
    """Unit directions in x0 (the system's coordinates), in the parameters and in h."""
    z = np.asarray(system.coordinates(jax.tree.map(jnp.asarray, x0)))
    dz = rng.standard_normal(z.shape)
    dx = system.from_coordinates(jnp.asarray(dz / np.linalg.norm(dz)))
    dx = jax.tree.map(lambda a, b: jnp.asarray(a, dtype=jnp.asarray(b).dtype), dx, x0)
    zero_x = jax.tree.map(lambda a: jnp.zeros(jnp.shape(a)), x0)
    dp = rng.standard_normal(np.shape(params))
    dp = jnp.asarray(dp / np.linalg.norm(dp))
    zero_p = jnp.zeros_like(params)
    return {
        "x0": (dx, zero_p, 0.0),
        "params": (zero_x, dp, 0.0),
        "h": (zero_x, zero_p, 1.0),
    }


_EPS = 1e-5


def _shift(step, a, d):
    return a + step * d


@pytest.mark.parametrize(
    ("build", "params", "integrator", "steps", "h"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_gradients_agree_with_forward_mode_and_differences(build, params, integrator, steps, h):
    loss = _loss_fn(build, integrator, steps)
    system = build(params)
    x0 = jax.tree.map(jnp.asarray, _state(system))
    value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
    forward = jax.jit(lambda x, p, hh, v: jax.jvp(loss, (x, p, hh), v))
    # every argument float64 and not weakly typed (jnp.array(0.9) and Python floats are):
    # one compiled jvp serves the directions and the differences alike
    params = jnp.asarray(params, dtype=jnp.float64)
    at = (x0, params, jnp.asarray(h, dtype=jnp.float64))
    zero = jax.tree.map(jnp.zeros_like, at)
    value, grads = value_and_grad(*at)
    assert np.isfinite(float(value))
    rng = np.random.default_rng(7)
    for name, v in _directions(system, x0, params, rng).items():
        v = (v[0], v[1], jnp.asarray(v[2], dtype=jnp.float64))
        reverse = sum(
            jnp.sum(g * d) for g, d in zip(jax.tree.leaves(grads), jax.tree.leaves(v), strict=True)
        )
        value_f, tangent = forward(*at, v)
        assert float(value_f) == pytest.approx(float(value), rel=1e-14, abs=1e-14)
        scale = max(abs(float(tangent)), 1e-3)
        assert abs(float(reverse) - float(tangent)) <= 1e-10 * scale, name
        # central differences, the values from the compiled jvp (zero tangent)
        plus, minus = (jax.tree.map(partial(_shift, s * _EPS), at, v) for s in (1.0, -1.0))
        fd = (float(forward(*plus, zero)[0]) - float(forward(*minus, zero)[0])) / (2 * _EPS)
        assert abs(fd - float(tangent)) <= 1e-6 * scale, (name, fd, float(tangent))


SYMPLECTIC = [
    ("symplectic-euler", I.SymplecticEuler()),
    ("verlet-newton", I.StormerVerlet()),
    ("midpoint", I.ImplicitMidpoint()),
    ("yoshida4", I.Composition(I.StormerVerlet(), "yoshida4")),
    ("gauss2", I.Gauss(2)),
]


@pytest.mark.parametrize("integrator", [s[1] for s in SYMPLECTIC], ids=[s[0] for s in SYMPLECTIC])
def test_tangent_map_of_a_symplectic_map_is_symplectic(integrator):
    """DΦᵀ 𝕁 DΦ = 𝕁 to 1e-13 for Φ = 20 steps on a non-separable Hamiltonian."""
    system = S.Hamiltonian(_quartic, 2, params=jnp.array([0.3, 1.2]))

    @jax.jit
    def flow(z):
        sol = mi.integrate(system, integrator, (z[:2], z[2:]), 0.05, 20, checkpoint=False)
        return jnp.concatenate([sol.x[0][-1], sol.x[1][-1]])

    D = np.asarray(jax.jacfwd(flow)(jnp.array([0.4, -0.3, 0.2, 0.5])))
    Jc = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.eye(2), np.zeros((2, 2))]])
    assert np.max(np.abs(D.T @ Jc @ D - Jc)) < 1e-13
    assert np.max(np.abs(D - np.eye(4))) > 1e-2  # a map that moves


def test_jit_vmap_grad_over_a_batch_of_parameters():
    x0 = np.array([1.0, 0.5, -0.3])

    def loss(inertia):
        sol = mi.integrate(S.EulerTop(inertia), I.Kahan(), x0, 0.05, 50)
        return jnp.sum(sol.x[-1] * jnp.array([1.0, 2.0, 3.0]))

    batch = jnp.array([[2.0, 1.0, 0.7], [1.5, 1.1, 0.6], [3.0, 2.0, 1.0]])
    grads = jax.jit(jax.vmap(jax.grad(loss)))(batch)
    one = jax.jit(jax.grad(loss))
    for row, g in zip(batch, grads, strict=True):
        np.testing.assert_allclose(g, one(row), rtol=1e-13, atol=1e-15)


_MP_STEP = 1e-15  # central difference step of the mpmath derivatives


@cache
def _kahan_run_mp(inertia, j: int, sign: int, x0, h, steps: int):
    """Kahan's trajectory of the Euler top in mpmath (32 digits), inertia j shifted by
    sign × _MP_STEP: an array of ``steps + 1`` states of mpf (shared by the tests)."""
    mp = pytest.importorskip("mpmath")
    with mp.workdps(32):
        I_ = [mp.mpf(v) + sign * mp.mpf(_MP_STEP) * (i == j) for i, v in enumerate(inertia)]
        m, out = [mp.mpf(v) for v in x0], []
        out.append(m)
        for _ in range(steps):
            num, det = _kahan_step_mp(I_, m, mp.mpf(h))
            m = [n / det for n in num]
            out.append(m)
    return np.array(out, dtype=object)


@pytest.mark.parametrize("save_every", [3000, 6])
def test_checkpointed_and_stored_reverse_mode_match_mpmath(save_every, monkeypatch):
    """Reverse mode over 3000 Kahan steps, checkpointed chunks and every step stored,
    with one sample (a save interval longer than a chunk) and a save interval of whole
    saves per chunk that leaves a partial chunk: both agree with mpmath's derivative (32
    digits) to 8 N ulp (the measured error is ≈ 1.5 N ulp; the two differ by the
    rounding of the chunk starts), and integrate's states equal simulate's bit for bit."""
    x0, inertia, h, steps = (1.0, 0.5, -0.3), (2.0, 1.0, 0.7), 0.01, 3000
    w = np.array([1.0, 2.0, 3.0])
    # chunks of 256 steps: 11 whole chunks and a partial one in each layout
    monkeypatch.setattr(sys.modules["mechint.integrate"], "_CHUNK_MIN", 256)

    def loss(inertia, checkpoint):
        sol = mi.integrate(S.EulerTop(inertia), I.Kahan(), jnp.asarray(x0), h, steps,
                           save_every, checkpoint=checkpoint)  # fmt: skip
        return jnp.sum(sol.x[-1] ** 2 * w) + 1e-3 * jnp.sum(sol.x[len(sol.x) // 2])

    n_saves = steps // save_every
    half = (n_saves + 1) // 2 * save_every  # the step of sample len(sol.x) // 2
    mp, want = pytest.importorskip("mpmath"), []
    with mp.workdps(32):
        for j in range(3):
            ends = [_kahan_run_mp(inertia, j, sign, x0, h, steps) for sign in (1, -1)]
            value = [sum(w * ms[-1] ** 2) + sum(ms[half]) / 1000 for ms in ends]
            want.append(float((value[0] - value[1]) / (2 * mp.mpf(_MP_STEP))))
    want = np.array(want)
    for checkpoint in (True, False):
        got = jax.jit(jax.grad(lambda i, c=checkpoint: loss(i, c)))(jnp.asarray(inertia))
        err = np.max(np.abs(got - want)) / np.max(np.abs(want))
        assert err < 8 * steps * np.finfo(float).eps, (checkpoint, err)
    if save_every != 3000:
        return
    sol = mi.integrate(S.EulerTop(jnp.asarray(inertia)), I.Kahan(), np.asarray(x0), h, steps, 1000)
    traj = mi.simulate(S.EulerTop(jnp.asarray(inertia)), I.Kahan(), np.asarray(x0), h, steps, 1000)
    np.testing.assert_array_equal(np.asarray(sol.x), traj.x)
    np.testing.assert_array_equal(np.asarray(sol.t), traj.t)


# (case, scale of the second batch member's x0: 60 makes midpoint's Newton fail at step 76)
STRUCTURED = [("kahan", 1.01), ("midpoint", 60.0), ("strang", 1.01)]


@pytest.mark.parametrize(("case", "scale"), STRUCTURED, ids=[c[0] for c in STRUCTURED])
def test_structured_derivative_equals_ad_through_the_loop(case, scale, monkeypatch):
    """Chunks of ≥ 64 steps are differentiated by the step Jacobians' linear recurrence
    (``integrate._chunk``).  On a batch of two members (for midpoint the second fails
    at step 76 and is frozen there, its tangent constant after), reverse and forward
    mode agree with JAX's AD through the loop itself to 1e-12 (checkpointed and
    stored), over a linearly implicit, a Newton and a splitting step, one and two-array
    states (the step derivatives of every family: the test above)."""
    _, build, params, integrator, _, h = next(c for c in CASES if c[0] == case)
    system = build(params)
    x0 = jax.tree.map(jnp.asarray, _state(system))
    batch = jax.tree.map(lambda a: jnp.stack([a, a * scale]), x0)
    steps, every = 96, 8  # chunks of 64 steps: one whole (8 saves) and one partial
    monkeypatch.setattr(sys.modules["mechint.integrate"], "_CHUNK_MIN", 64)
    at = (batch, params, jnp.asarray(h))

    def derivatives(checkpoint):
        def loss(x, p, hh):
            sol = mi.integrate(build(p), integrator, x, hh, steps, every, checkpoint=checkpoint)
            return sum(jnp.sum(jnp.nan_to_num(a) * jnp.cos(jnp.arange(a.size)).reshape(a.shape))
                       for a in jax.tree.leaves(sol.x))  # fmt: skip

        @jax.jit
        def both(x, p, hh):
            return jax.grad(loss, argnums=(0, 1, 2))(x, p, hh), jax.jvp(loss, (x, p, hh), at)[1]

        return jax.tree.leaves(both(*at))

    # checkpointing is the same remat around any step: checked on the cheapest
    got = {
        ck: derivatives(ck) for ck in ((True, False) if case in ("kahan", "strang") else (False,))
    }
    monkeypatch.setattr(sys.modules["mechint.integrate"], "_STRUCTURED_MIN", 10**9)
    want = derivatives(False)
    for ck, values in got.items():
        for a, b in zip(values, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(b)),
                                       err_msg=f"{case}, checkpoint={ck}")  # fmt: skip
    failed = mi.integrate(system, integrator, batch, h, steps, every).failed_step
    assert failed.tolist() == ([-1, 76] if case == "midpoint" else [-1, -1])


def test_failure_is_data_under_jit():
    """A member that blows up reports its step and reason, its later samples are NaN;
    the healthy member runs to the end; nothing raises under jit."""
    x0 = np.array([[1.0, 0.5, -0.3], [1e150, 1e150, 1e150]])
    run = jax.jit(lambda x: mi.integrate(S.EulerTop(), I.ExplicitEuler(), x, 0.1, 40, 10))
    sol = run(jnp.asarray(x0))
    assert sol.x.shape == (2, 5, 3)
    assert int(sol.failed_step[0]) == -1 and bool(sol.ok[0])
    assert np.all(np.isfinite(np.asarray(sol.x[0])))
    step = int(sol.failed_step[1])
    assert 1 <= step <= 10
    assert Reason(int(sol.reason[1])) is Reason.NON_FINITE
    assert np.all(np.isnan(np.asarray(sol.x[1, 1:])))
    np.testing.assert_array_equal(np.asarray(sol.x[1, 0]), x0[1])


def test_a_failures_residual_is_the_failing_steps_own():
    """The loop records the failing step and reason; the residual is filled in after it
    (in the program under a transform, by the host on concrete input, per chunk in
    simulate).  All three give the status the map itself reports at the state the
    failing step started from; a healthy member has residual 0."""
    top = S.EulerTop((1.0, 2.0, 3.0))
    midpoint = I.ImplicitMidpoint()
    x0 = np.array([[0.3, 0.2, 0.1], [3.0, 2.0, 4.0]])
    h = 5.0
    eager = mi.integrate(top, midpoint, x0, h, 40, 10)
    traced = jax.jit(lambda x: mi.integrate(top, midpoint, x, h, 40, 10))(jnp.asarray(x0))
    traj = mi.simulate(top, midpoint, x0, h, 40, 10, throw=False)
    step = int(eager.failed_step[1])
    assert step >= 1 and int(eager.failed_step[0]) == -1
    before = mi.integrate(top, midpoint, x0[1], h, step - 1).x[-1]  # the frozen state
    own = midpoint.step(top, before, jnp.asarray(h))[1]
    assert not bool(own.ok) and Reason(int(own.reason)) is Reason.NOT_CONVERGED
    for got in (eager, traced):
        assert (
            int(got.failed_step[1]) == step and Reason(int(got.reason[1])) is Reason.NOT_CONVERGED
        )
        assert float(got.residual[1]) == float(own.residual) > 0
        assert float(got.residual[0]) == 0.0
    assert int(traj.failed_step[1]) == step and float(traj.residual[1]) == float(own.residual)
    assert float(traj.residual[0]) == 0.0


def test_concrete_input_inside_a_callers_transform():
    """Inputs closed over (concrete) but the call staged into the caller's jit or scan:
    the same Solution as the eager call, the failure's residual included."""
    top = S.EulerTop((1.0, 2.0, 3.0))
    midpoint = I.ImplicitMidpoint()
    x0 = np.array([[0.3, 0.2, 0.1], [3.0, 2.0, 4.0]])
    eager = mi.integrate(top, midpoint, x0, 5.0, 40, 10)
    staged = jax.jit(lambda: mi.integrate(top, midpoint, x0, 5.0, 40, 10))()
    for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(staged), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert float(staged.residual[1]) > 0
    total = jax.lax.scan(
        lambda c, _: (c + mi.integrate(top, midpoint, x0[0], 0.1, 40, 10).x.sum(), None),
        0.0, None, length=2,
    )[0]  # fmt: skip
    alone = float(mi.integrate(top, midpoint, x0[0], 0.1, 40, 10).x.sum())
    assert abs(float(total) - 2 * alone) <= 1e-12 * abs(alone)


def test_concrete_input_is_validated_and_traced_input_is_shape_checked():
    top = S.EulerTop()
    with pytest.raises(InputError, match="save_every"):
        mi.integrate(top, I.Kahan(), np.ones(3), 0.1, 10, 3)
    with pytest.raises(InputError, match="x0"):
        mi.integrate(top, I.Kahan(), np.ones(4), 0.1, 10)
    with pytest.raises(InputError, match="inertia"):
        jax.jit(lambda i: S.EulerTop(i).inertia)(jnp.ones(4))
    with pytest.raises(InputError, match="x0"):
        jax.jit(lambda x: mi.integrate(top, I.Kahan(), x, 0.1, 10).x)(jnp.ones(4))
    # a traced non-positive inertia is not checked: the run says what happened
    sol = jax.jit(lambda i: mi.integrate(S.EulerTop(i), I.Kahan(), np.ones(3), 0.1, 10))(
        jnp.array([1.0, 0.0, 2.0])
    )
    assert int(sol.failed_step) >= 1
    shown = []
    jax.jit(lambda i: shown.append(repr(S.EulerTop(i))) or i)(jnp.ones(3))
    assert shown == ["EulerTop(inertia=<traced>)"]


def _kahan_step_mp(inertia, m, h):
    """(numerator, det) of Kahan's step of the Euler top in mpmath (the closed form,
    m' = numerator / det), at any precision."""
    I1, I2, I3 = inertia
    a = ((I2 - I3) / (I2 * I3), (I3 - I1) / (I3 * I1), (I1 - I2) / (I1 * I2))
    p, q, r = (h / 2 * ai for ai in a)
    m1, m2, m3 = m
    s1, s2, s3 = q * r * m1**2, p * r * m2**2, p * q * m3**2
    det = 1 - s1 - s2 - s3 - 2 * p * q * r * m1 * m2 * m3
    num = (
        m1 * (1 + s2 + s3 - s1) + 2 * p * m2 * m3,
        m2 * (1 + s3 + s1 - s2) + 2 * q * m3 * m1,
        m3 * (1 + s1 + s2 - s3) + 2 * r * m1 * m2,
    )
    return num, det


def _kahan_loss_mp(inertia, m, h, w):
    """(w · numerator, det) of Kahan's step (``_kahan_step_mp``)."""
    num, det = _kahan_step_mp(inertia, m, h)
    return sum(wi * ni for wi, ni in zip(w, num, strict=True)), det


@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_gradient_near_a_singular_kahan_step_matches_mpmath(delta):
    """A hard corner: h a relative ``delta`` below the step size h* at which Kahan's
    linear system is singular (det = 0), where m' and its derivatives grow like 1/det
    and 1/det².  Reverse mode through ``integrate`` agrees with mpmath's derivative of
    the closed form (50 digits) to a tolerance set by the conditioning: 64 ulp / |det|."""
    mp = pytest.importorskip("mpmath")
    inertia, m0 = (2.0, 1.0, 2.0 / 3.0), (0.45, -0.3, 0.89)
    w = (0.3, -0.7, 1.1)
    with mp.workdps(50):
        f = lambda hh: _kahan_loss_mp([mp.mpf(v) for v in inertia], [mp.mpf(v) for v in m0],  # noqa: E731
                                      hh, w)[1]  # fmt: skip
        h_star = mp.findroot(f, 10.0)
        h = float(h_star * (1 - delta))
        args = [mp.mpf(v) for v in (*inertia, *m0, h)]

        def loss_mp(*v):
            num, det = _kahan_loss_mp(v[:3], v[3:6], v[6], w)
            return num / det

        want = np.array([float(mp.diff(loss_mp, args, tuple(int(i == k) for i in range(7))))
                         for k in range(7)])  # fmt: skip
        det = float(_kahan_loss_mp(args[:3], args[3:6], args[6], w)[1])

    def loss(inertia, m, h):
        sol = mi.integrate(S.EulerTop(inertia), I.Kahan(), m, h, 1)
        return jnp.dot(jnp.asarray(w), sol.x[-1])

    got = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(
        jnp.asarray(inertia), jnp.asarray(m0), jnp.asarray(h)
    )
    got = np.concatenate([np.ravel(g) for g in got])
    assert 0 < abs(det) < 100 * delta  # the corner is reached (det ≈ 35 delta here)
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    assert err < 64 * np.finfo(float).eps / abs(det), (err, det)
