"""mechint.special against mpmath: a few ulp over m ∈ [0, 1] with the complement m1 down to
1e-300 and |u| up to 10⁶·K, in float64 and float32, under jit, vmap and grad."""

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest

from mechint import special

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)


def _params(dtype: type[np.floating] = np.float64, top=300, step=23, extra=(2, 8, 15, 16, 17, 300)):
    """(m, m1): m1 = 10^-j (m near 1) and m = 10^-j (m near 0), both exact."""
    out = [(dtype(0.0), dtype(1.0)), (dtype(0.5), dtype(0.5)), (dtype(1.0), dtype(0.0))]
    for j in sorted({*range(1, top + 1, step), *extra}):
        small = dtype(10.0**-j)
        if small == 0:
            continue
        out += [(dtype(1) - small, small), (small, dtype(1) - small)]
    return out


def _mp_m(m, m1):
    """The parameter mpmath sees: the accurate one of the pair decides."""
    return 1 - mp.mpf(float(m1)) if m > m1 else mp.mpf(float(m))


def _real(x) -> mp.mpf:
    """An mpmath result that is real for these arguments (mpmath types it mpf | mpc)."""
    assert isinstance(x, mp.mpf), x
    return x


def _dps(m, m1):
    return 30 + int(max(0.0, -np.log10(max(float(min(m, m1)), 1e-320))))


def _ulps(got, want, eps):
    got, want = float(got), float(want)
    if got == want:
        return 0.0
    return abs(got - want) / max(abs(want), 1e-300) / eps


_ellipj = jax.jit(special.ellipj)
_integrals = jax.jit(
    lambda phi, m, m1: (
        special.ellipkinc(phi, m, m1),
        special.ellipeinc(phi, m, m1),
        special.ellipk(m, m1),
        special.ellipe(m, m1),
    )
)
_pi = jax.jit(special.ellippi)


def test_jacobi_functions_within_4_ulp_everywhere():
    """Including u = K and 2K as floats, where cn or sn is 1e-64 and ill-conditioned."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for m, m1 in _params():
        with mp.workdps(_dps(m, m1)):
            mm = _mp_m(m, m1)
            K = _real(mp.ellipk(mm))
            us = [rng.uniform(0, 1), rng.uniform(-1e3, 1e3)]
            if mp.isfinite(K):
                Kf = float(K)
                us += [rng.uniform(0, 4 * Kf), rng.uniform(-1e6, 1e6) * Kf, Kf, 2 * Kf]
            for u in us:
                sn, cn, dn, amp = _ellipj(u, m, m1)
                want = [mp.ellipfun(f, u, m=mm) for f in ("sn", "cn", "dn")]
                ws, wc, wd = want
                slopes = (wc * wd, ws * wd, mm * ws * wc)  # |f'(u)|
                for got, w, slope in zip((sn, cn, dn), want, slopes, strict=True):
                    # a few ulp of the value, plus the reduction's own ε²·|u f'(u)| (2K is
                    # carried in double-double): the bound that matters at zeros of sn, cn
                    scale = abs(float(w)) + EPS64 * abs(u * float(slope)) + 1e-300
                    worst = max(worst, abs(float(got) - float(w)) / (EPS64 * scale))
                if mp.isfinite(K):
                    n = int(_real(mp.nint(u / (2 * K))))
                    r = u - 2 * n * K
                    w = n * mp.pi + mp.atan2(mp.ellipfun("sn", r, m=mm), mp.ellipfun("cn", r, m=mm))
                    worst = max(worst, _ulps(amp, w, EPS64))
    assert worst < 4.0, worst


def test_legendre_integrals_within_4_ulp_everywhere():
    rng = np.random.default_rng(1)
    worst = {}
    for m, m1 in _params(step=75, extra=(2, 16, 17, 300)):
        with mp.workdps(_dps(m, m1)):
            mm = _mp_m(m, m1)
            phis = [rng.uniform(0, 0.1), rng.uniform(0, np.pi / 2), np.pi / 2 - 1e-9, np.pi / 2]
            if m1 > 0:
                phis += [rng.uniform(-10, 10), rng.uniform(-1e4, 1e4)]
            for phi in phis:
                F, E, K, Ec = _integrals(phi, m, m1)
                for name, got, want in [
                    ("F", F, mp.ellipf(phi, mm)),
                    ("E(phi)", E, mp.ellipe(phi, mm)),
                    ("K", K, mp.ellipk(mm)),
                    ("E", Ec, mp.ellipe(mm)),
                ]:
                    worst[name] = max(worst.get(name, 0.0), _ulps(got, want, EPS64))
                for n in (-1.0, -0.3, 0.3, 0.9):
                    if abs(phi) <= np.pi / 2 or n < 1:
                        got = _pi(n, phi, m, m1)
                        err = _ulps(got, mp.ellippi(n, phi, mm), EPS64)
                        worst["Pi"] = max(worst.get("Pi", 0.0), err)
    pi = worst.pop("Pi")
    assert max(worst.values()) < 4.0 and pi < 8.0, (worst, pi)


def test_pi_for_large_negative_characteristic_within_measured_bound():
    """Π(n; φ|m) = F + (n/3) s³ R_J cancels for n ≪ −1: measured up to 11·√|n| ulp."""
    worst = 0.0
    for n in (-10.0, -50.0):
        for m, m1 in [(0.3, 0.7), (1 - 1e-13, 1e-13)]:
            with mp.workdps(50):
                for phi in (0.4, 1.2, -9.3):
                    got = _pi(n, phi, m, m1)
                    worst = max(
                        worst, _ulps(got, mp.ellippi(n, phi, _mp_m(m, m1)), EPS64) / abs(n) ** 0.5
                    )
    assert worst < 20.0, worst


def test_float32_within_4_ulp():
    rng = np.random.default_rng(2)
    f32 = np.float32
    worst = 0.0
    for m, m1 in _params(f32, top=37, step=4, extra=(36,)):
        with mp.workdps(60):
            mm = _mp_m(m, m1)
            K = _real(mp.ellipk(mm))
            us = [rng.uniform(0, 1)] + (
                [rng.uniform(-1e3, 1e3) * float(K)] if mp.isfinite(K) else []
            )
            for u in us:
                out = _ellipj(f32(u), m, m1)
                assert all(v.dtype == jnp.float32 for v in out)
                for got, f in zip(out[:3], ("sn", "cn", "dn"), strict=True):
                    worst = max(worst, _ulps(got, mp.ellipfun(f, float(f32(u)), m=mm), EPS32))
    assert worst < 4.0, worst


def test_complement_carries_the_digits_one_minus_m_loses():
    """At m1 = 1e-300 (m rounds to 1) K is finite and sn, cn, dn are not the m = 1 limit."""
    K = float(special.ellipk(1.0, 1e-300))
    with mp.workdps(340):
        assert _ulps(K, mp.ellipk(1 - mp.mpf(1e-300)), EPS64) < 2
    assert float(special.ellipk(1.0, 0.0)) == np.inf
    sn, cn, dn, _ = special.ellipj(K, 1.0, 1e-300)  # the quarter period: sn = 1, cn ~ 1e-150
    assert float(sn) == 1.0 and 0 < float(cn) < 1e-149 and abs(float(dn) / 1e-150 - 1) < 1e-14


def test_vmap_and_grad_match_mpmath_derivatives():
    u = jnp.linspace(-3.0, 40.0, 64)
    batched = jax.vmap(special.ellipj, in_axes=(0, None, None))(u, 0.9, 0.1)
    single = [special.ellipj(v, 0.9, 0.1) for v in u[:3]]
    for k in range(4):
        assert np.allclose(batched[k][:3], [s[k] for s in single], rtol=4 * EPS64, atol=0)
    cases = [("sn", 0, 0.7, 0.3), ("cn", 1, 2.7, 0.9), ("dn", 2, 11.0, 0.999)]

    @jax.jit
    def derivatives():  # every gradient in one compiled function
        out = [
            jax.grad(lambda u, m, k=k: special.ellipj(u, m)[k], argnums=(0, 1))(u0, m0)
            for _, k, u0, m0 in cases
        ]
        dF = jax.grad(lambda phi, m: special.ellipkinc(phi, m), argnums=(0, 1))(1.1, 0.6)
        return out, dF

    grads, dF = derivatives()
    for (name, _, u0, m0), (du, dm) in zip(cases, grads, strict=True):
        with mp.workdps(30):
            want_u = mp.diff(lambda x: mp.ellipfun(name, x, m=m0), u0)  # noqa: B023
            want_m = mp.diff(lambda x: mp.ellipfun(name, u0, m=x), m0)  # noqa: B023
        assert abs(float(du) - float(want_u)) < 1e-12 * (1 + abs(float(want_u)))
        assert abs(float(dm) - float(want_m)) < 1e-10 * (1 + abs(float(want_m)))
    with mp.workdps(30):
        assert abs(float(dF[0]) - float(1 / mp.sqrt(1 - 0.6 * mp.sin(1.1) ** 2))) < 1e-14
        assert abs(float(dF[1]) - float(mp.diff(lambda x: mp.ellipf(1.1, x), 0.6))) < 1e-12


@pytest.mark.parametrize("x", [(1.0, 2.0, 3.0), (1e-300, 1.0, 2.0), (0.0, 1e-200, 1.0)])
def test_carlson_forms_against_mpmath(x: tuple[float, float, float]):
    with mp.workdps(60):
        assert _ulps(special.elliprf(*x), mp.elliprf(*x), EPS64) < 4
        assert _ulps(special.elliprd(*x), mp.elliprd(*x), EPS64) < 4
        assert _ulps(special.elliprj(*x, 0.7), mp.elliprj(*x, 0.7), EPS64) < 4


def test_carlson_forms_diverge_where_they_do_and_read_subnormal_arguments():
    """+∞ where two of x, y, z are 0 (R_F, R_J), where x = y = 0 or z = 0 (R_D), where
    p = 0 (R_J): before, 2.04e6 and 6.9e6; subnormal arguments read from their bits by R_F
    and R_D (XLA's CPU code reads them as 0: R_F(1e-310, 1e-310, 1) was 2.04e6, true
    357.6), within 4 ulp of mpmath, in float64 and float32; R_J reads a lone subnormal
    x, y or z among moderate arguments, and is NaN where it cannot."""
    f = jax.jit(lambda x, y, z, p: (special.elliprf(x, y, z), special.elliprd(x, y, z),
                                    special.elliprj(x, y, z, p)))  # fmt: skip
    for args in [(0.0, 0.0, 1.0, 1.0), (0.0, 2.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)]:
        assert all(np.isposinf(np.asarray(v)) for v in f(*args)), args
    assert np.isposinf(f(1.0, 2.0, 0.0, 1.0)[1]) and np.isposinf(f(1.0, 2.0, 3.0, 0.0)[2])
    # every combination of subnormal, tiny, unit and huge arguments with a subnormal one
    scales = [0.0, 1e-320, 3e-310, 1e-300, 1e-160, 1.0, 7.0, 1e100]
    rng = np.random.default_rng(3)
    points = [tuple(rng.choice(scales, 4)) for _ in range(400)]
    points = [a for a in points if any(0 < v < 2.2e-308 for v in a) and a[2] > 0
              and sum(v == 0 for v in a[:3]) < 2 and a[3] > 0][:60]  # fmt: skip
    assert len(points) == 60
    # one subnormal of x, y, z among moderate arguments: R_J within 4 ulp
    points += [(1e-310, 0.5, 1.0, 0.7), (2.0, 3e-315, 1e-20, 1e25), (7.0, 0.1, 1e-320, 3.0)]
    read = 0
    with mp.workdps(60):
        for x, y, z, p in points:
            rf, rd, rj = f(x, y, z, p)
            assert _ulps(rf, mp.elliprf(x, y, z), EPS64) < 4, (x, y, z)
            assert _ulps(rd, mp.elliprd(x, y, z), EPS64) < 4, (x, y, z)
            subnormal = [0 < v < 2.2e-308 for v in (x, y, z, p)]
            moderate = [2.0**-102 <= v <= 2.0**102 for v in (x, y, z, p)]
            lone = sum(subnormal) == 1 and not subnormal[3]
            if lone and all(m for m, s in zip(moderate, subnormal, strict=True) if not s):
                assert _ulps(rj, mp.elliprj(x, y, z, p), EPS64) < 4, (x, y, z, p)
                read += 1
            else:  # (no silent wrong value: up to 30 % off before)
                assert np.isnan(rj), (x, y, z, p)
        x32 = (np.float32(1e-40), np.float32(1e-40), np.float32(1.0))  # subnormal in float32
        got = jax.jit(special.elliprf)(*x32)
        assert got.dtype == jnp.float32
        assert _ulps(got, mp.elliprf(*(float(v) for v in x32)), EPS32) < 4
    assert read >= 3


# --- Carlson's forms over the whole float64 range: hard corners first, then a seeded sample ---

# (x, y, z, p); R_F and R_D take (x, y, z) (R_D needs z > 0)
_CORNERS = [
    (1.0, 100.0, 1.0, 0.16),  # the points: 60 and 238 ulp before
    (445.0, 1e4, 1e4, 1e-4),
    (2.0, 3.0, 5.0, 1e-12),  # p ≪ x, y, z: 1 + e = 2√β/d → 0, R_C near its log singularity
    (73.95, 0.4466, 11.62, 4.98e-219),
    (1.0, 2.0, 3.0, 1e-300),
    (0.0, 1.0, 2.0, 1e-200),  # a zero argument, with p ≪, between and ≫
    (3.0, 0.0, 1e-30, 2.0),
    (0.0, 0.5, 1.0, 1e250),
    (1.0, 2.0, 3.0, 1e200),  # p ≫ x, y, z: traded for q ∈ [x, y]
    (0.3, 1.0, 2.5, 64.5),  # either side of the swap at p = 64 max(x, y, z)
    (0.3, 1.0, 2.5, 63.5),
    (1e-150, 1e150, 1.0, 1e-150),  # spread 1e±150 and 1e±300
    (1e-300, 1e300, 1e300, 1e-250),
    (1e300, 1e-300, 1e-300, 1e-300),
    (2.5e-300, 1.7e308, 1.1e-100, 8e307),  # next to overflow
    (1.0, 1.0 + 1e-12, 1.0 - 1e-12, 1.0 + 2e-12),  # near-equal, equal
    (0.25, 0.2501, 0.2499, 0.25005),
    (1e-200, 1e-200, 1e-200, 1e-200),
    (1e190, 1e190, 1e190, 1e190),
]


def _carlson_sample(n=240, seed=4):
    """Every argument log-uniform over 1e-300..1e300, then a quarter each with p ≪ x, y, z,
    with one of x, y, z zero, and nearly equal; all four spread over the scales."""
    rng = np.random.default_rng(seed)
    v = 10.0 ** rng.uniform(-300, 300, (n, 4))
    q = n // 4
    v[:q, 3] = np.maximum(v[:q, :3].min(axis=1) * 10.0 ** rng.uniform(-200, -1, q), 1e-300)
    v[2 * q : 3 * q] = 10.0 ** rng.uniform(-200, 200, (q, 1)) * rng.uniform(0.999, 1.001, (q, 4))
    v[np.arange(q, 2 * q), rng.integers(0, 3, q)] = 0.0
    return [tuple(float(t) for t in row) for row in v]


def _mp_carlson(args):
    """(R_F, R_D, R_J) by mpmath, with the digits that its 1 + e loses for p ≪ x, y, z."""
    x, y, z, p = args
    with mp.workdps(40):
        rf = _real(mp.elliprf(x, y, z))
        rd = _real(mp.elliprd(x, y, z)) if z > 0 else None
    with mp.workdps(40 + int(max(0.0, np.log10(max(x, y, z)) - np.log10(p)))):
        return rf, rd, _real(mp.elliprj(x, y, z, p))


_CARLSON_POINTS = _CORNERS + _carlson_sample()
_carlson = jax.jit(
    lambda x, y, z, p: (
        special.elliprf(x, y, z),
        special.elliprd(x, y, jnp.where(z > 0, z, 1.0)),
        special.elliprj(x, y, z, p),
    )
)


def _carlson_ulps(got, want) -> float:
    """Error in units of ε·|want| for results in the normal range above 1e-290 (below it XLA
    flushes subnormal terms to zero); there, and past overflow, the result must be 0 or ∞."""
    w = float(want)
    if abs(w) < 1e-290 or not np.isfinite(w):
        assert float(got) == w or abs(float(got) - w) < 1e-290, (got, want)
        return 0.0
    return _ulps(got, want, EPS64)


def test_carlson_forms_within_4_ulp_over_the_whole_range():
    """R_F, R_D, R_J (and the R_C inside R_J) against mpmath: the hard corners, then 240
    seeded points spread over 1e±300.  Measured here 2.4, 1.7, 2.3 ulp (3.1, 2.4, 3.0 over
    29 000 such points); R_J was 238 ulp at (445, 1e4, 1e4, 1e-4), and ∞ or NaN for
    p < 1e-16·min(x, y, z), for p ≫ max(x, y, z) or for arguments past 1e±150."""
    x, y, z, p = (jnp.asarray(c) for c in zip(*_CARLSON_POINTS, strict=True))
    rf, rd, rj = _carlson(x, y, z, p)
    # mpmath's values here, not at import: every process that collects the tests imported
    # this module (4 s of mpmath each), the one that runs this test computes them once
    reference = [_mp_carlson(a) for a in _CARLSON_POINTS]
    worst: dict[str, float] = {"R_F": 0.0, "R_D": 0.0, "R_J": 0.0}
    for i, (args, (wf, wd, wj)) in enumerate(zip(_CARLSON_POINTS, reference, strict=True)):
        for name, got, want in (("R_F", rf[i], wf), ("R_D", rd[i], wd), ("R_J", rj[i], wj)):
            if want is not None:
                err = _carlson_ulps(got, want)
                assert err < 4.0, (name, args, err)
                worst[name] = max(worst[name], err)
    assert max(worst.values()) < 4.0, worst


def test_carlson_rj_float32_and_gradients_against_mpmath():
    """float32 stays float32 and within 4 of its ulp; gradients (including the swapped
    p ≫ x, y, z and the tie x = y = z, where each argument gets the whole derivative)
    match mpmath's."""
    pts = [(1.0, 2.0, 3.0, 0.7), (0.3, 1.0, 2.5, 700.0), (445.0, 1e4, 1e4, 1e-4), (0.5,) * 4]
    rj32 = jax.jit(jax.vmap(special.elliprj))
    got32 = rj32(*(jnp.asarray(c, jnp.float32) for c in zip(*pts, strict=True)))
    assert got32.dtype == jnp.float32
    grad = jax.jit(jax.vmap(jax.grad(special.elliprj, argnums=(0, 1, 2, 3))))
    grads = grad(*(jnp.asarray(c) for c in zip(*pts, strict=True)))
    with mp.workdps(30):
        for i, args in enumerate(pts):
            assert _ulps(got32[i], _real(mp.elliprj(*args)), EPS32) < 4.0
            for k in range(4):

                def moved(t, k=k, args=args):
                    return mp.elliprj(*[t if j == k else a for j, a in enumerate(args)])

                d = float(_real(mp.diff(moved, mp.mpf(args[k]))))
                assert abs(float(grads[k][i]) - d) < 1e-12 * abs(d), (args, k)
