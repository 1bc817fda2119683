"""``exact.kepler_flow`` against an independent mpmath solution (tests/exact/mp_kepler.py)
on the hard corners of every conic, in float64 and float32; its derivatives (implicit
function theorem) against finite differences and reverse mode; its symplecticity."""

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest

import mechint as mi
from tests.exact.mp_kepler import conditioning, orbit_states, ref_flow

kepler_flow = jax.jit(mi.exact.kepler_flow)


def _cases():
    """(name, mu, q0, v0, t): two states of each corner, one compiled call for all."""
    rng = np.random.default_rng(5)
    out = []

    def ell(name, e, t_periods, mu=1.0):
        q, v = orbit_states(rng, e, 2, rp=1.0 - e if e < 1 else 1.0, mu=mu)
        a = 1.0
        period = 2 * np.pi * np.sqrt(a**3 / mu)
        for k in range(2):
            out.append((name, mu, q[k], v[k], t_periods[k] * period))

    def open_(name, e, ts, rp=1.0):
        q, v = orbit_states(rng, e, 2, rp=rp)
        for k in range(2):
            out.append((name, 1.0, q[k], v[k], ts[k]))

    ell("circular, half a period", 0.0, (0.31, -0.47))
    ell("e = 0.5, three periods", 0.5, (2.7, -1.9))
    ell("e = 0.9999", 0.9999, (0.6, -1.2))
    ell("periapsis 1e-8 a", 1 - 1e-8, (0.4, -0.9))
    ell("1e4 periods", 0.3, (9.6e3, -9.9e3))
    ell("mu = 1e-10", 0.5, (1.3, -0.4), mu=1e-10)
    ell("mu = 1e10", 0.5, (1.3, -0.4), mu=1e10)
    open_("e = 1 - 1e-12", 1 - 1e-12, (3.0, -2e4))
    open_("e = 1 + 1e-12", 1 + 1e-12, (0.02, 7e5))
    open_("e = 10", 10.0, (4.0, -3e6))
    open_("near-radial hyperbola", 1 + 1e-8, (1e-9, -2.0), rp=1e-8)
    out.append(("beta = 0 exactly", 2.0, np.array([1.0, 0, 0]), np.array([0, 2.0, 0]), 37.0))
    return out


CASES = _cases()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_flow_is_exact_to_its_conditioning_on_every_conic(dtype):
    """Error ≤ max(4 ulp, 2 × the problem's conditioning limit) (the exact flow's change from
    a 1-ulp move of its inputs: short arcs allow 4 ulp, 10⁴ periods or a periapsis of
    1e-8 a amplify their inputs' rounding by 10⁵-10⁸); in float32 the same in its ulp."""
    mu = np.array([c[1] for c in CASES], dtype)
    q0 = np.array([c[2] for c in CASES], dtype)
    v0 = np.array([c[3] for c in CASES], dtype)
    t = np.array([c[4] for c in CASES], dtype)
    q, v = (np.asarray(a) for a in kepler_flow(mu, q0, v0, t))
    assert q.dtype == dtype
    at0 = kepler_flow(mu, q0, v0, np.zeros_like(t))  # t = 0: the state itself, exactly
    assert np.array_equal(at0[0], q0) and np.array_equal(at0[1], v0)
    eps = float(np.finfo(dtype).eps)
    worst = []
    for i, (name, *_rest) in enumerate(CASES):
        args = (float(mu[i]), [float(x) for x in q0[i]], [float(x) for x in v0[i]], float(t[i]))
        qr, vr = ref_flow(*args)
        cq, cv = conditioning(*args, 2.0**-52)  # ulp out per ulp in
        for got, ref, cond in ((q[i], qr, cq), (v[i], vr, cv)):
            scale = max(abs(c) for c in ref)
            err = float(max(abs(mp.mpf(float(a)) - b) for a, b in zip(got, ref, strict=True)))
            ulp = err / float(scale) / eps
            bound = max(4.0, 2.0 * cond)
            if dtype == np.float32:  # the float32 inputs' rounding of the float64 case
                bound = max(bound, 8.0)
            worst.append((ulp / bound, name, ulp, cond))
    assert max(worst)[0] <= 1.0, sorted(worst)[-3:]


def test_a_planar_state_flows_as_in_space():
    q0 = np.array([[1.0, 0.2, -0.1]])
    v0 = np.array([[0.1, 0.9, 0.2]])
    q2, v2 = kepler_flow(1.5, q0[0, :2], v0[0, :2], 2.3)
    q3, v3 = kepler_flow(1.5, np.array([*q0[0, :2], 0.0]), np.array([*v0[0, :2], 0.0]), 2.3)
    assert np.allclose(q2, q3[:2], rtol=0, atol=1e-15) and np.allclose(v2, v3[:2], atol=1e-15)


def test_derivatives_by_the_implicit_function_theorem():
    """jacfwd against 4th-order central differences (1e-8 relative, their own accuracy),
    the state transition matrix symplectic (1e-14), and d/dt the vector field (v, −μq/r³)
    (reverse mode through the flow: tests/integrators/test_wisdom_holman.py)."""

    def flat(x):
        q, v = mi.exact.kepler_flow(x[0], x[1:4], x[4:7], x[7])
        return jnp.concatenate([q, v])

    jac, f = jax.jit(jax.jacfwd(flat)), jax.jit(flat)
    J = np.block([[np.zeros((3, 3)), np.eye(3)], [-np.eye(3), np.zeros((3, 3))]])
    rng = np.random.default_rng(7)
    for e, t in ((0.5, 1.3), (10.0, 3.0), (1 + 1e-12, 5.0)):
        q0, v0 = orbit_states(rng, e, 1, rp=0.7 if e < 1 else 1.0, mu=1.3)
        x = np.concatenate([[1.3], q0[0], v0[0], [t]])
        jf = np.asarray(jac(x))
        fd = np.zeros_like(jf)
        for j in range(8):
            h = 1e-5 * (np.linalg.norm(x[1:4] if j < 4 else x[4:7]) if 1 <= j < 7 else abs(x[j]))
            d = np.zeros(8)
            d[j] = h
            fd[:, j] = (8 * (f(x + d) - f(x - d)) - (f(x + 2 * d) - f(x - 2 * d))) / (12 * h)
        scale = np.max(np.abs(jf))
        assert np.max(np.abs(jf - fd)) / scale < 1e-8, e
        M = jf[:, 1:7]
        assert np.max(np.abs(M.T @ J @ M - J)) / max(1.0, scale**2) < 1e-14, e
        z = np.asarray(f(x))
        r = np.linalg.norm(z[:3])
        assert np.allclose(jf[:, 7], np.concatenate([z[3:], -1.3 * z[:3] / r**3]), rtol=1e-13)


def test_second_derivatives_through_the_tangent_rule():
    """The tangent rule is itself differentiable, in forward and reverse mode (a run's
    gradient through events located by ``jax.jvp``; the general solve's tangent starts
    from its values' anomaly, whose own derivative is the implicit-function one): a
    short arc and two general ones, the derivative of the directional derivative
    against 4th-order central differences of it (1e-9 relative), forward over forward
    equal to reverse over forward (1e-13)."""
    rng = np.random.default_rng(7)
    xs = []
    for e, t in ((0.5, 0.05), (0.5, 1.3), (10.0, 3.0)):
        q0, v0 = orbit_states(rng, e, 1, rp=0.7 if e < 1 else 1.0, mu=1.3)
        xs.append(np.concatenate([[1.3], q0[0], v0[0], [t]]))
    xs = np.array(xs)
    d, w = rng.normal(size=8), rng.normal(size=6)

    def flat(x):
        return jnp.concatenate(mi.exact.kepler_flow(x[0], x[1:4], x[4:7], x[7]))

    def first(x):  # the flow's derivative along d, read out along w
        return jax.jvp(flat, (x,), (d,))[1] @ w

    def second(x):
        return jax.jvp(first, (x,), (d,))[1], jax.grad(first)(x) @ d

    forward, reverse = (np.asarray(a) for a in jax.jit(jax.vmap(second))(xs))
    h = 1e-4 * (np.abs(xs) + 1.0)
    pts = np.stack([xs[:, None, :] + k * h[:, None, :] * np.eye(8) for k in (2, 1, -1, -2)])
    f = np.asarray(jax.jit(jax.vmap(first))(pts.reshape(-1, 8))).reshape(4, 3, 8)
    fd = np.sum((8 * (f[1] - f[2]) - (f[0] - f[3])) / (12 * h) * d, axis=1)
    assert np.all(np.abs(forward - fd) <= 1e-9 * np.abs(fd)), (forward, fd)
    assert np.all(np.abs(reverse - forward) <= 1e-13 * np.abs(forward)), (reverse, forward)
    from mechint.exact import two_body

    ok = jax.jit(two_body._short_arc)(xs[:, 0], xs[:, 1:4], xs[:, 4:7], xs[:, 7])[2]
    assert np.asarray(ok).tolist() == [True, False, False], "one short arc, two general"


def _short_cases():
    """(name, mu, q0, v0, t): arcs short enough for the short-arc solve, on every conic
    and scale (``t`` a fraction of r0/|v0|, both signs)."""
    rng = np.random.default_rng(11)
    out = []
    corners = [("circular", 0.0, 1.0, 1.0), ("e = 0.5", 0.5, 0.5, 1.0),
               ("e = 0.9999", 0.9999, 1e-4, 1.0), ("periapsis 1e-8 a", 1 - 1e-8, 1e-8, 1.0),
               ("e = 1 - 1e-12", 1 - 1e-12, 1.0, 1.0), ("e = 1 + 1e-12", 1 + 1e-12, 1.0, 1.0),
               ("e = 10", 10.0, 1.0, 1.0), ("near-radial hyperbola", 1 + 1e-8, 1e-8, 1.0),
               ("mu = 1e-10", 0.3, 1.0, 1e-10), ("mu = 1e10", 0.3, 1.0, 1e10)]  # fmt: skip
    for name, e, rp, mu in corners:
        q, v = orbit_states(rng, e, 4, rp=rp, mu=mu)
        for k, frac in enumerate((0.05, -0.3, 0.6, -0.01)):
            r, w = np.linalg.norm(q[k]), np.linalg.norm(v[k])
            t = frac * min(r / w, np.sqrt(r**3 / mu))  # the faster of r/|v| and r^1.5/μ^.5
            out.append((name, mu, q[k], v[k], t))
    return out


SHORT = _short_cases()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_short_arcs_are_exact_to_their_conditioning(dtype):
    """The short-arc solve (the one a step of a planetary map takes) takes every case
    whose scales lie within its range (|q0|, μ, |v0|², |t| within 2^(±maxexp/4): float32
    leaves the largest and smallest to the general solve) and is as accurate as the
    general one (the bound of the test above)."""
    from mechint.exact import two_body

    mu, q0, v0, t = (np.array([c[i] for c in SHORT], dtype) for i in range(1, 5))
    ok = np.asarray(jax.jit(two_body._short_arc)(mu, q0, v0, t)[2])
    big = 2.0 ** (np.finfo(dtype).maxexp // 4)
    r0, vv = np.linalg.norm(q0.astype(float), axis=-1), np.sum(v0.astype(float) ** 2, -1)
    inside = (r0 <= big) & (r0 >= 1 / big) & (mu <= big) & (mu >= 1 / big) & (vv <= big)
    inside &= np.abs(t) <= big
    assert inside.sum() >= (len(SHORT) if dtype == np.float64 else 28)
    assert ok[inside].all(), [c[0] for c, o in zip(SHORT, ok, strict=True) if not o]
    q, v = (np.asarray(a) for a in kepler_flow(mu, q0, v0, t))
    eps = float(np.finfo(dtype).eps)
    worst = []
    for i, (name, *_rest) in enumerate(SHORT):
        args = (float(mu[i]), [float(x) for x in q0[i]], [float(x) for x in v0[i]], float(t[i]))
        qr, vr = ref_flow(*args)
        cq, cv = conditioning(*args, 2.0**-52)
        for got, ref, cond in ((q[i], qr, cq), (v[i], vr, cv)):
            scale = max(abs(c) for c in ref)
            err = float(max(abs(mp.mpf(float(a)) - b) for a, b in zip(got, ref, strict=True)))
            ulp = err / float(scale) / eps
            bound = max(4.0, 2.0 * cond, 8.0 if dtype == np.float32 else 0.0)
            worst.append((ulp / bound, name, ulp, cond))
    assert max(worst)[0] <= 1.0, sorted(worst)[-3:]


def test_each_arc_takes_the_same_path_alone_as_in_a_batch(monkeypatch):
    """Short arcs, long arcs (the general solve) and arcs past the short-arc solve's
    range (|β s²| > 1, huge scales) mixed in one batch, in ``vmap`` and alone: the same
    state for each to round-off (XLA compiles a batch and a single state as different
    programs, docs/concepts.md), the general solve's where the short one cannot vouch:
    on those entries alone, gathered in blocks of ``_gathered(n)`` (8, or 1/128 of a large
    batch): 2 of 10 and 10 of 18 here, 70 of 78 (nine blocks) and 10 of 2048, whose blocks
    take 16."""
    from mechint.exact import two_body

    sizes = []  # the size of each general solve a compiled call runs
    solve = two_body._general

    def counted(*args, **kwargs):
        n = args[0].size
        jax.debug.callback(lambda: sizes.append(n))
        return solve(*args, **kwargs)

    monkeypatch.setattr(two_body, "_general", counted)

    mixed = SHORT[:8] + CASES[:8] + [("past |z| = 1", 1.0, np.array([1.0, 0, 0]),
                                      np.array([0, 1.0, 0]), 1.2)]  # fmt: skip
    mixed.append(("huge", 1e200, np.array([1e120, 0, 0]), np.array([0, 1e40, 0]), 1e80))
    mu, q0, v0, t = (np.array([c[i] for c in mixed]) for i in range(1, 5))
    general = jax.jit(two_body._general)(mu, q0, v0, t)
    short = jax.jit(two_body._short_arc)(mu, q0, v0, t)
    ok = np.asarray(short[2])
    assert not ok[8:].any() and ok[:8].all()
    assert (two_body._gathered(78), two_body._gathered(2048)) == (8, 16)
    eps = np.finfo(np.float64).eps

    def close(a, b, ulps=4):
        return np.max(np.abs(a - b)) <= ulps * eps * np.max(np.abs(b))

    alone = [kepler_flow(mu[i], q0[i], v0[i], t[i]) for i in range(len(mixed))]
    picks = [
        (np.array([*range(8), 10, len(mixed) - 1]), [8]),  # 2 need it: one block
        (np.arange(len(mixed)), [8, 8]),  # 10: two blocks
        (np.concatenate([np.arange(8), np.tile(np.arange(8, 18), 7)]), [8] * 9),  # 70: 9 blocks
        (np.concatenate([np.arange(8, 18), np.resize(np.arange(8), 2038)]), [16]),  # 10 of 2048
    ]
    for pick, ran in picks:
        args = (mu[pick], q0[pick], v0[pick], t[pick])
        whole = kepler_flow(*args) if len(pick) <= len(mixed) else None
        sizes.clear()
        mapped = jax.block_until_ready(jax.jit(jax.vmap(mi.exact.kepler_flow))(*args))
        assert sizes == ran, (len(pick), sizes)
        for j, i in enumerate(pick[:18]):
            path = (short[0][i], short[1][i]) if ok[i] else (general[0][i], general[1][i])
            for k, (b, c, d) in enumerate(zip(mapped, alone[i], path, strict=True)):
                assert close(b[j], c) and close(d, c), mixed[i][0]
                assert whole is None or close(whole[k][j], c), mixed[i][0]


def test_a_batchs_tangents_are_its_arcs_and_reverse_mode_their_transpose():
    """A batch's tangents (vmap of jvp) on short and long arcs (70 of 78 need the general
    solve), each arc's as alone to round-off (8 ulp) and as the general solve's direct
    ``jvp`` on the long ones (1e-9); reverse mode through the batch is finite and the
    transpose of forward (⟨w, J d⟩ = ⟨Jᵀ w, d⟩ to 1e-12): on long arcs of nearly
    parabolic orbits (e = 0.9999, periapsis 10⁻⁸ a) the short-arc tangent, not taken
    there, once gave reverse mode infinities times zero."""
    from mechint.exact import two_body

    mixed = SHORT[:8] + CASES[:10]
    pick = np.concatenate([np.arange(8), np.tile(np.arange(8, 18), 7)])
    mu, q0, v0, t = (np.array([mixed[i][k] for i in pick]) for k in range(1, 5))
    rng = np.random.default_rng(3)
    dmu, dq, dv, dt = (rng.normal(size=a.shape) for a in (mu, q0, v0, t))
    w = rng.normal(size=(2, *q0.shape))

    def forward(*p):
        return jax.jvp(jax.vmap(mi.exact.kepler_flow), p, (dmu, dq, dv, dt))[1]

    def pulled(*p):
        return jax.grad(lambda *p: jnp.sum(jnp.stack(jax.vmap(mi.exact.kepler_flow)(*p)) * w),
                        argnums=(0, 1, 2, 3))(*p)  # fmt: skip

    got = jax.block_until_ready(jax.jit(forward)(mu, q0, v0, t))
    one = jax.jit(lambda *p: jax.jvp(mi.exact.kepler_flow, p[:4], p[4:])[1])
    direct = jax.jit(lambda *p: jax.jvp(lambda *a: two_body._general(*a)[:2], p[:4], p[4:])[1])
    eps = np.finfo(np.float64).eps
    for j in range(18):
        args = (mu[j], q0[j], v0[j], t[j], dmu[j], dq[j], dv[j], dt[j])
        alone = one(*args)
        for b, c in zip(got, alone, strict=True):
            assert np.max(np.abs(b[j] - c)) <= 8 * eps * np.max(np.abs(c)), mixed[pick[j]][0]
        if j >= 8:
            for b, c in zip(got, direct(*args), strict=True):
                assert np.max(np.abs(b[j] - c)) <= 1e-9 * np.max(np.abs(c)), mixed[pick[j]][0]
    back = jax.jit(pulled)(mu, q0, v0, t)
    assert all(np.all(np.isfinite(np.asarray(b))) for b in back)
    lhs = np.sum(np.stack(got) * w)
    rhs = sum(np.sum(np.asarray(b) * d) for b, d in zip(back, (dmu, dq, dv, dt), strict=True))
    assert abs(lhs - rhs) <= 1e-12 * np.sum(np.abs(np.stack(got) * w)), (lhs, rhs)


def _equations(closed) -> int:
    """The equations of a traced program, those of its loops' and branches' bodies too."""
    count = 0

    def walk(jaxpr):
        nonlocal count
        for eqn in jaxpr.eqns:
            count += 1
            for param in eqn.params.values():
                for sub in param if isinstance(param, list | tuple) else [param]:
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(closed.jaxpr)
    return count


def test_a_batched_drift_holds_one_copy_of_the_general_solve():
    """The program of a drift on a batch (the general solve in gathered blocks), alone
    and under ``vmap`` (a batch of planetary systems), is within 10% of the program of a
    few arcs (the general solve over the whole array): one copy of the general solve,
    where a second (the whole array's, beside the blocks) made it 1.9 times as large and
    added a second to its compile."""
    f = mi.exact.kepler_flow

    def arcs(n):
        return jnp.ones(n), jnp.ones((n, 3)), jnp.ones((n, 3)), jnp.full(n, 0.1)

    few = _equations(jax.make_jaxpr(f)(*arcs(5)))
    for n in (20, 4096):
        for program in (f, jax.vmap(f)):
            size = _equations(jax.make_jaxpr(program)(*arcs(n)))
            assert size <= 1.1 * few, (n, size, few)


def test_short_arc_tangents_against_mpmath():
    """The flow's tangent on short arcs (the implicit-function rule on the short-arc solve,
    the one a planetary map's tangent takes) against mpmath's directional derivative
    (central difference of 1e-25 at 60 digits) within 32 ulp of the tangent's scale on
    every corner; a batch mixing short and long arcs gives each entry its own path's
    tangent (the short arc's where that solve vouches, the general solve's elsewhere)."""
    from mechint.exact import two_body

    mu, q0, v0, t = (np.array([c[i] for c in SHORT]) for i in range(1, 5))
    rng = np.random.default_rng(3)
    dirs = [rng.normal(size=np.shape(a)) for a in (mu, q0, v0, t)]
    dirs = [dirs[0] * mu, dirs[1] * np.linalg.norm(q0, axis=-1, keepdims=True),
            dirs[2] * np.linalg.norm(v0, axis=-1, keepdims=True), dirs[3] * np.abs(t)]  # fmt: skip
    tangent = jax.jit(lambda *a: jax.jvp(mi.exact.kepler_flow, a, tuple(dirs))[1])
    dq, dv = (np.asarray(a) for a in tangent(mu, q0, v0, t))
    worst = []
    with mp.workdps(60):
        step = mp.mpf(10) ** -25
        for i, (name, *_rest) in enumerate(SHORT):
            moved = []
            for sign in (1, -1):
                args = [mp.mpf(float(mu[i])) + sign * step * mp.mpf(float(dirs[0][i]))]
                for x, d in ((q0[i], dirs[1][i]), (v0[i], dirs[2][i])):
                    args.append([mp.mpf(float(a)) + sign * step * mp.mpf(float(b))
                                 for a, b in zip(x, d, strict=True)])  # fmt: skip
                args.append(mp.mpf(float(t[i])) + sign * step * mp.mpf(float(dirs[3][i])))
                moved.append(ref_flow(*args))
            ref = [(a - b) / (2 * step) for k in (0, 1)
                   for a, b in zip(moved[0][k], moved[1][k], strict=True)]  # fmt: skip
            got = [*dq[i], *dv[i]]
            scale = max(abs(r) for r in ref)
            err = max(abs(mp.mpf(float(a)) - b) for a, b in zip(got, ref, strict=True))
            worst.append((float(err / scale) / np.finfo(np.float64).eps, name))
    assert max(worst)[0] <= 32.0, sorted(worst)[-3:]

    # mixed with arcs the short solve refuses: one branch for the batch, each its path's
    mixed = [*SHORT[:6], CASES[2], CASES[5]]
    mu, q0, v0, t = (np.array([c[i] for c in mixed]) for i in range(1, 5))
    ok = np.asarray(jax.jit(two_body._short_arc)(mu, q0, v0, t)[2])
    assert ok[:6].all() and not ok[6:].any()
    ones = (np.ones_like(mu), np.ones_like(q0), np.ones_like(v0), np.ones_like(t))
    got = jax.jit(lambda *a: jax.jvp(mi.exact.kepler_flow, a, ones)[1])(mu, q0, v0, t)
    one = (1.0, np.ones(3), np.ones(3), 1.0)
    mapped = jax.jit(jax.vmap(lambda *a: jax.jvp(mi.exact.kepler_flow, a, one)[1]))(mu, q0, v0, t)

    def general_tangent(*a):  # the general solve's, from the anomaly it found
        anomaly = jax.lax.stop_gradient(two_body._general(*a)[2])
        return jax.jvp(lambda *a: two_body._general(*a, anomaly=anomaly)[:2], a, ones)[1]

    general = jax.jit(general_tangent)(mu, q0, v0, t)

    def short_tangent(mu, q0, v0, t):
        s = two_body._short_arc(mu, q0, v0, t)[3]
        return two_body._short_tangent((mu, q0, v0, t), s, ones)[:2]

    short = jax.jit(short_tangent)(mu, q0, v0, t)
    for a, b, g, s in zip(got, mapped, general, short, strict=True):
        want = np.where(ok[:, None], s, g)
        scale = np.max(np.abs(want), axis=-1, keepdims=True)
        assert np.all(np.abs(np.asarray(a) - want) <= 4 * 2.2e-16 * scale)
        assert np.all(np.abs(np.asarray(b) - want) <= 4 * 2.2e-16 * scale)
