r"""Jacobi elliptic functions and Legendre elliptic integrals in JAX.

Every function takes the parameter ``m`` **and**, optionally, its complement ``m1 = 1 − m``
as a separate input: near m = 1 the complement carries the digits that ``1 − m`` would lose
(pass ``m1 = 1e-300`` and ``m = 1``).  Without ``m1`` it is formed as ``1 − m``.  Both must
lie in [0, 1] and add up to 1 up to rounding; nothing is checked (the functions are pure and
run under ``jit``, ``vmap`` and ``grad``).

* ``ellipk(m, m1)``, ``ellipe(m, m1)``: K(m) and E(m).
* ``ellipj(u, m, m1)``: (sn, cn, dn, am) of u for |u| ≤ 2^100·2K (reduced by the half
  period 2K, itself carried to twice the working precision, so |u| = 10⁶·K costs no
  digits); NaN beyond, where that precision no longer determines the residue.
* ``ellipkinc(phi, m, m1)``, ``ellipeinc(phi, m, m1)``: F(φ|m), E(φ|m) for any real φ.
* ``ellippi(n, phi, m, m1)``: Π(n; φ|m) = ∫₀^φ dθ / ((1 − n sin²θ) √(1 − m sin²θ)),
  for n sin²φ < 1 (no principal values).
* ``elliprf``, ``elliprd``, ``elliprj``: Carlson's symmetric integrals (DLMF §19.16), within
  3.1, 2.4, 3.0 ulp of mpmath (float64, measured over 29 000 points: corners and spreads up
  to the whole float range) wherever the result is above 1e-290; below that XLA's flushing
  of subnormals costs up to ~10 × 2.2e-308 absolute.

Methods (each chosen so that no step subtracts nearly equal numbers):

* K by the arithmetic-geometric mean K = π / (2 AGM(1, √m1)), in double-double arithmetic.
* sn, cn, dn: u is reduced to r ∈ [0, K/2] by the half period, parity and the reflection
  sn(K − s) = cn s / dn s, cn(K − s) = √m1 sn s / dn s, dn(K − s) = √m1 / dn s. On [0, K/2]:
  for m ≤ ½ the Fourier series in the nome q (DLMF 22.11.1–3), with q/m from Jacobi's
  series in λ = m / (2 (1 + m1^¼)² (1 + m1^½)); for m > ½ the same theta functions after
  Jacobi's imaginary transformation, sums of sech and tanh with spacing 2K and scale
  π/(2K') (K' = K(m1)), which tend to sech u, tanh u as m → 1.  Both series converge like
  e^{−π j} or faster, so a fixed number of terms gives full precision.
* R_F, R_D, R_J: Carlson's duplication (fixed iteration counts, enough for any ratios of
  the arguments), each R_C term of R_J from ratios of positive sums (so p ≪ x, y, z costs
  nothing) and p ≫ x, y, z traded for p ∈ [x, y] by DLMF 19.20.14 (see ``elliprj``).
* F, E, Π: Carlson's forms, with E(φ|m) = m1 F + m s c / Δ + (m m1 s³ / 3) R_D(1, c², Δ²)
  (s = sin φ, c = cos φ, Δ² = c² + m1 s²: all terms non-negative) and φ reduced by π.

Longer than the house's 600 lines because it is one family: Carlson's symmetric
integrals and the elliptic functions built on them share their argument reductions
and derivative rules.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = [
    "am",
    "ellipe",
    "ellipeinc",
    "ellipj",
    "ellipk",
    "ellipkinc",
    "ellipkinc_sc",
    "ellippi",
    "elliprd",
    "elliprf",
    "elliprj",
]

# Jacobi's series of the nome: q = λ + 2λ⁵ + 15λ⁹ + ... (OEIS A002103), here q/λ in λ⁴
_NOME = (1.0, 2.0, 15.0, 150.0, 1707.0, 20910.0)


def _float(*xs):
    dtype = jnp.result_type(float, *xs)
    return [jnp.asarray(x, dtype) for x in xs]


def _complement(m, m1):
    if m1 is None:
        (m,) = _float(m)
        return m, 1.0 - m
    m, m1 = _float(m, m1)
    return jnp.broadcast_arrays(m, m1)


def _eps(dtype) -> float:
    return float(jnp.finfo(dtype).eps)


def _is64(dtype) -> bool:
    return jnp.finfo(dtype).bits == 64


# --- double-double helpers (error-free transformations; no FMA needed) -------------------


# XLA's simplifier rewrites (c + x) − c to x when c is a constant, which would zero every
# error term below; an optimization barrier on the inputs hides constants from it.
def _two_sum(a, b):
    a, b = lax.optimization_barrier((a, b))
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _fast_two_sum(a, b):
    a, b = lax.optimization_barrier((a, b))
    s = a + b
    return s, b - (s - a)


def _split(a):
    a = lax.optimization_barrier(a)
    c = (134217729.0 if _is64(a.dtype) else 4097.0) * a
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _dd_add(ah, al, bh, bl):
    s, e = _two_sum(ah, bh)
    return _fast_two_sum(s, e + al + bl)


def _dd_mul(ah, al, bh, bl):
    p, e = _two_prod(ah, bh)
    return _fast_two_sum(p, e + ah * bl + al * bh)


def _dd_sqrt(ah, al):
    # scale tiny arguments by an even power of two so no error term underflows
    big, half = (2.0**400, 2.0**-200) if _is64(ah.dtype) else (2.0**40, 2.0**-20)
    tiny = ah < (1e-200 if _is64(ah.dtype) else 1e-20)
    ah, al = jnp.where(tiny, ah * big, ah), jnp.where(tiny, al * big, al)
    x = jnp.sqrt(ah)
    safe = jnp.where(x > 0, x, 1.0)
    p, e = _two_prod(x, x)
    corr = ((ah - p) - e + al) / (2 * safe)
    hi, lo = _fast_two_sum(x, jnp.where(x > 0, corr, 0.0))
    return jnp.where(tiny, hi * half, hi), jnp.where(tiny, lo * half, lo)


def _dd_div(ah, al, bh, bl):
    q1 = ah / bh
    p, e = _dd_mul(q1, jnp.zeros_like(q1), bh, bl)
    r, rl = _dd_add(ah, al, -p, -e)
    q2 = (r + rl) / bh
    return _fast_two_sum(q1, q2)


def _pi_dd(dtype):
    hi = np.asarray(math.pi, dtype)
    lo = (
        np.asarray(math.pi - float(hi), dtype)
        if not _is64(dtype)
        else np.asarray(1.2246467991473532e-16, dtype)
    )
    return jnp.asarray(hi), jnp.asarray(lo)


def _agm_iterations(dtype) -> int:
    # ln(a/b) halves per step while b << a, then quadratic convergence: enough for b = √1e-300
    return 16 if _is64(dtype) else 10


def _agm(b):
    """AGM(1, b) for b in [0, 1] (b = 0 gives 0)."""

    def step(_, ab):
        a, b = ab
        return 0.5 * (a + b), jnp.sqrt(a * b)

    a, b = lax.fori_loop(0, _agm_iterations(b.dtype), step, (jnp.ones_like(b), b))
    return 0.5 * (a + b)


def _ellipk_dd(m, m1):
    """K as (hi, lo), by the AGM in double-double arithmetic.  The complement is taken as
    1 − m exactly (a double-double) when m ≤ ½ and as m1 otherwise: each from the input that
    carries its digits."""
    zero = jnp.zeros_like(m1)
    ch, cl = _two_sum(jnp.ones_like(m), -m)
    small = m <= m1
    ch, cl = jnp.where(small, ch, m1), jnp.where(small, cl, 0.0)
    bh, bl = _dd_sqrt(ch, cl)

    def step(_, carry):
        ah, al, bh, bl = carry
        sh, sl = _dd_add(ah, al, bh, bl)
        gh, gl = _dd_mul(ah, al, bh, bl)
        return (0.5 * sh, 0.5 * sl, *_dd_sqrt(gh, gl))

    start = (jnp.ones_like(m1), zero, bh, bl)
    ah, al, bh, bl = lax.fori_loop(0, _agm_iterations(m1.dtype), step, start)
    mh, ml = _dd_add(ah, al, bh, bl)  # 2·AGM
    ph, pl = _pi_dd(m1.dtype)
    finite = ch > 0  # K(1) = ∞
    kh, kl = _dd_div(ph, pl, jnp.where(finite, mh, 1.0), jnp.where(finite, ml, 0.0))
    return jnp.where(finite, kh, jnp.inf), jnp.where(finite, kl, 0.0)


def ellipk(m, m1=None):
    """K(m) = ∫₀^{π/2} dθ / √(1 − m sin²θ); K(1) = ∞."""
    m, m1 = _complement(m, m1)
    return _ellipk_dd(m, m1)[0]


# --- Carlson's symmetric integrals by duplication ----------------------------------------
#
# R_F, R_D and R_J are homogeneous of degree −½, −3/2, −3/2.  Every product below is grouped
# so that it overflows or underflows only where its term is negligible or the result itself
# is out of range (see _prescale).


def _dup_iterations(dtype) -> int:
    # the log-ratio of the arguments halves per step (11 steps bring any two float64s within
    # a factor 4), then |1 − v/A| drops by 4 per step: 20 steps leave it below 1e-4 (14 in
    # float32), where the fifth-order series is exact to rounding
    return 20 if _is64(dtype) else 14


def _lam(sx, sy, sz):
    return sx * sy + sy * sz + sz * sx


# XLA's CPU code reads a subnormal number as 0 (denormals-are-zero): the helpers below
# read one from its bits instead, v = mantissa · 2^(minexp − nmant).


def _bits(v):
    """(the bits of v as an integer, the mantissa field, whether v is a positive subnormal)."""
    info = jnp.finfo(v.dtype)
    b = lax.bitcast_convert_type(v, jnp.int64 if info.bits == 64 else jnp.int32)
    mant = b & ((1 << info.nmant) - 1)
    sub = (b > 0) & ((b >> info.nmant) == 0)  # positive, exponent field 0, mantissa ≠ 0
    return b, mant, sub


def _is_zero(v):
    """v is ±0 (a subnormal is not, though it compares equal to 0 on a CPU).  (Not as a
    test of the bits against 0: LLVM turns that back into a float comparison.)"""
    return (v == 0) & (_bits(v)[1] == 0)


def _sqrt_any(x):
    """√x, also of a subnormal x (the root of one is normal)."""
    info = jnp.finfo(x.dtype)
    _, mant, sub = _bits(x)
    e = info.minexp - info.nmant  # x = mant · 2^e for a subnormal x: −1074, −149
    odd = e % 2
    m = mant.astype(x.dtype) * (2.0 if odd else 1.0)
    root = jnp.sqrt(m) * 2.0 ** ((e - odd) // 2)
    return jnp.where(sub, root, jnp.sqrt(x))


def _prescale(*args):
    """The arguments scaled by a power of 4, s, and s itself: by 1/16 where one is within 16
    of overflow (so that sums of five of them stay finite), by 2^(maxexp/2) where all are
    below 2^(−maxexp/2) (so that products of three square roots stay normal; a subnormal
    argument scaled from its bits).  A result of degree −k is s^k times the function of
    the scaled arguments."""
    top = args[0]
    for v in args[1:]:
        top = jnp.maximum(top, v)
    info = jnp.finfo(top.dtype)
    half = info.maxexp // 2  # 512, 64: even
    up = jnp.where(top < 2.0**-half, 2.0**half, 1.0)
    scale = jnp.where(top > 2.0 ** (2 * half - 4), 1 / 16, up).astype(top.dtype)
    lifted = 2.0 ** (info.minexp - info.nmant + half)  # 2^e · 2^half, normal

    def scaled(v):
        _, mant, sub = _bits(v)
        lift = jnp.where(scale > 1, mant.astype(v.dtype) * lifted, v)  # (× 1 would flush v)
        return jnp.where(sub, lift, v * scale)

    return scale, [scaled(v) for v in args]


def _diverges(value, *conditions):
    """value, +∞ where any condition holds (an integral whose arguments make it diverge)."""
    bad = conditions[0]
    for c in conditions[1:]:
        bad = bad | c
    return jnp.where(bad, jnp.inf, value)


def _two_zero(x, y, z):
    """At least two of x, y, z are 0."""
    zx, zy, zz = _is_zero(x), _is_zero(y), _is_zero(z)
    return (zx & zy) | (zy & zz) | (zx & zz)


def _unscale(value, scale):
    """value · scale^(3/2): the result of degree −3/2 from the scaled arguments."""
    return value * (jnp.sqrt(scale) * scale)


def _sort3(x, y, z):
    """x, y, z in increasing order by selection, a permutation (so that at ties each input
    keeps its whole gradient, not halves as min and max would give)."""
    rx = (y < x).astype(jnp.int32) + (z < x).astype(jnp.int32)
    ry = (x <= y).astype(jnp.int32) + (z < y).astype(jnp.int32)
    return [jnp.where(rx == k, x, jnp.where(ry == k, y, z)) for k in range(3)]


@jax.custom_jvp
def _sqrt(x):
    """√x whose derivative at x = 0 is large but finite: an argument held at 0 (a zero
    tangent, as sorting or selecting gives it) then keeps a zero tangent, not 0·∞."""
    return _sqrt_any(x)


@_sqrt.defjvp
def _sqrt_jvp(primals, tangents):
    s = _sqrt_any(primals[0])
    return s, tangents[0] * (0.5 / jnp.maximum(s, jnp.finfo(s.dtype).tiny))


def _rf_tail(x, y, z):
    """R_F of nearly equal arguments: the fifth-order series (DLMF 19.36.1)."""
    a = (x + y + z) / 3
    safe = jnp.where(a > 0, a, 1.0)
    X, Y = 1 - x / safe, 1 - y / safe
    Z = -(X + Y)
    e2 = X * Y - Z * Z
    e3 = X * Y * Z
    series = 1 - e2 / 10 + e3 / 14 + e2 * e2 / 24 - 3 * e2 * e3 / 44
    return jnp.where(a > 0, series / jnp.sqrt(safe), jnp.inf)


def elliprf(x, y, z):
    """R_F(x, y, z) for x, y, z ≥ 0, at most one of them zero (DLMF 19.16.1; +∞ where two
    are); subnormal arguments are read exactly."""
    x, y, z = jnp.broadcast_arrays(*_float(x, y, z))
    two_zero = _two_zero(x, y, z)
    scale, (x, y, z) = _prescale(x, y, z)

    def step(_, xyz):
        x, y, z = xyz
        lam = _lam(_sqrt(x), _sqrt(y), _sqrt(z))
        return 0.25 * (x + lam), 0.25 * (y + lam), 0.25 * (z + lam)

    x, y, z = lax.fori_loop(0, _dup_iterations(x.dtype), step, (x, y, z))
    return _diverges(jnp.sqrt(scale) * _rf_tail(x, y, z), two_zero)


def _rd_tail(X, Y, Z):
    e2 = X * Y - 6 * Z * Z
    e3 = (3 * X * Y - 8 * Z * Z) * Z
    e4 = 3 * (X * Y - Z * Z) * Z * Z
    e5 = X * Y * Z**3
    return (
        1 - 3 * e2 / 14 + e3 / 6 + 9 * e2 * e2 / 88 - 3 * e4 / 22 - 9 * e2 * e3 / 52 + 3 * e5 / 26
    )


def elliprd(x, y, z):
    """R_D(x, y, z) = R_J(x, y, z, z) for x, y ≥ 0 (not both zero), z > 0 (DLMF 19.16.5; +∞
    where x = y = 0 or z = 0); subnormal arguments are read exactly."""
    x, y, z = jnp.broadcast_arrays(*_float(x, y, z))
    infinite = (_is_zero(x) & _is_zero(y)) | _is_zero(z)
    scale, (x, y, z) = _prescale(x, y, z)

    def step(_, carry):
        x, y, z, total, err, fac = carry
        sz = _sqrt(z)
        lam = _lam(_sqrt(x), _sqrt(y), sz)
        total, more = _two_sum(total, (fac / (z + lam)) / sz)  # compensated: 20 terms
        return 0.25 * (x + lam), 0.25 * (y + lam), 0.25 * (z + lam), total, err + more, fac / 4

    zero = jnp.zeros_like(x)
    start = (x, y, z, zero, zero, jnp.ones_like(x))
    x, y, z, total, err, fac = lax.fori_loop(0, _dup_iterations(x.dtype), step, start)
    a = (x + y + 3 * z) / 5
    X, Y = 1 - x / a, 1 - y / a
    Z = -(X + Y) / 3
    err = jnp.where(jnp.isfinite(total), err, 0.0)  # ∞ − ∞ where a term overflows
    value = (fac * _rd_tail(X, Y, Z) / a) / jnp.sqrt(a) + 3 * err + 3 * total
    return _diverges(_unscale(value, scale), infinite)


# R_C(1, 1 + e) = Σ (−e)^k / (2k + 1): the series for |e| ≤ ¼, to e^27 (¼^28/57 < ε/8)
_RC_SERIES = tuple((-1.0) ** k / (2 * k + 1) for k in range(28))


def _rc1(e, s):
    """R_C(1, 1 + e) for e > −1, given also s = 1 + e to full relative precision (it keeps
    the digits that forming 1 + e loses as e → −1): the series for |e| ≤ ¼, else
    atan(√e)/√e for e > 0 and, for e < 0 with w = √−e, atanh(w)/w = log1p(u)/(2w) with
    u = 2w/(1 − w) (1 − w exact for w ≥ ½), or 2w(1 + w)/s for e < −½ (1 − w = s/(1 + w)).
    Within 1.3 ulp (XLA's own atanh is off by 70 ulp near 0.41)."""
    small = jnp.abs(e) <= 0.25
    pos = e > 0
    ep = jnp.where(pos & ~small, e, 1.0)
    neg = ~pos & ~small
    w = jnp.sqrt(jnp.where(neg, -e, 0.5))
    near = e < -0.5  # each form sees safe values in the other's lanes (finite gradients)
    wh = jnp.where(near, 0.5, w)
    u = jnp.where(near, 2 * w * (1 + w) / jnp.where(neg, s, 0.5), 2 * wh / (1 - wh))
    es = jnp.where(small, e, 0.0)
    series = _RC_SERIES[-1]
    for c in _RC_SERIES[-2::-1]:
        series = c + es * series
    se = jnp.sqrt(ep)
    circ = jnp.arctan(se) / se
    hyp = jnp.log1p(u) / (2 * w)
    return jnp.where(small, series, jnp.where(pos, circ, hyp))


# p beyond _HUGE_P·max(x, y, z) is swapped for q ∈ [x, y] by DLMF 19.20.14 (see elliprj)
_HUGE_P = 64.0


def _rj_direct(x, y, z, p, fac):
    """fac·R_J(x, y, z, p) by duplication for x ≤ y ≤ z, p ≤ _HUGE_P·z, and R_F(x, y, z) from
    the same iterates (fac scales every term: fac·R_J may be finite where R_J is not).  The
    R_C terms use e = Π (p − v)/(√p + √v)², from the differences, and 1 + e = 2/(1 + r),
    r = (p Σ√v + √(xyz))/(√p (p + λ)), a ratio of positive sums: the two carry R_C(1, 1 + e)
    to full precision for every e ∈ (−1, 1).  In the last 6 steps (4 in float32) |e| < 1e-3
    for any arguments (their spread has collapsed), and a short series serves."""

    def step(full):
        def body(_, carry):
            x, y, z, p, total, err, fac = carry
            sx, sy, sz, sp = _sqrt(x), _sqrt(y), _sqrt(z), _sqrt(p)
            lam = _lam(sx, sy, sz)
            a, b, c = sp + sx, sp + sy, sp + sz
            e = ((p - x) / (a * a)) * ((p - y) / (b * b)) * ((p - z) / (c * c))
            if full:
                pl = p + lam
                r = sp * (sx + sy + sz) / pl + (sy * sz / pl) * (sx / sp)
                rc = _rc1(e, 2 / (1 + r))
            else:
                rc = 1 + e * (-1 / 3 + e * (1 / 5 + e * (-1 / 7 + e / 9)))
            # fac/(ab), then /c: a, b ≥ √p and fac ≤ y (see elliprj), so no spurious overflow
            total, more = _two_sum(total, (fac / (a * b)) * rc / c)
            x, y, z, p = (0.25 * (v + lam) for v in (x, y, z, p))
            return x, y, z, p, total, err + more, 0.25 * fac

        return body

    n, cheap = _dup_iterations(x.dtype), (6 if _is64(x.dtype) else 4)
    start = (x, y, z, p, jnp.zeros_like(x), jnp.zeros_like(x), fac)
    carry = lax.fori_loop(0, n - cheap, step(True), start)
    x, y, z, p, total, err, fac = lax.fori_loop(n - cheap, n, step(False), carry)
    a = (x + y + z + 2 * p) / 5
    X, Y, Z = 1 - x / a, 1 - y / a, 1 - z / a
    P = -(X + Y + Z) / 2
    e2 = X * Y + X * Z + Y * Z - 3 * P * P
    e3 = X * Y * Z + 2 * e2 * P + 4 * P**3
    e4 = (2 * X * Y * Z + e2 * P + 3 * P**3) * P
    e5 = X * Y * Z * P * P
    tail = (
        1 - 3 * e2 / 14 + e3 / 6 + 9 * e2 * e2 / 88 - 3 * e4 / 22 - 9 * e2 * e3 / 52 + 3 * e5 / 26
    )
    err = jnp.where(jnp.isfinite(total), err, 0.0)  # ∞ − ∞ where a term overflows
    return (fac * tail / a) / jnp.sqrt(a) + 6 * err + 6 * total, _rf_tail(x, y, z)


def _rj_unreliable(x, y, z, p):
    """Where R_J's duplication cannot read a subnormal argument: p subnormal, two
    subnormal, or one of x, y, z subnormal with another argument outside 2^(±maxexp/10)
    (its R_C terms take differences and squares of roots that XLA's CPU arithmetic
    flushes to 0: measured up to 30 % off there, within 2.6 ulp of mpmath with the other
    three within 1e±30 in float64)."""
    args = (x, y, z, p)
    sub = [_bits(v)[2] for v in args]
    bound = 2.0 ** (jnp.finfo(x.dtype).maxexp // 10)
    moderate = [(v >= 1 / bound) & (v <= bound) for v in args]
    read = jnp.zeros(x.shape, bool)
    for i in range(3):  # a lone subnormal x, y or z among moderate arguments is read right
        others = [moderate[j] for j in range(4) if j != i]
        read = read | (sub[i] & others[0] & others[1] & others[2])
    return (sub[0] | sub[1] | sub[2] | sub[3]) & ~read


def elliprj(x, y, z, p):
    """R_J(x, y, z, p) for x, y, z ≥ 0 (at most one zero) and p > 0 (DLMF 19.16.2; no
    Cauchy principal values for p < 0); +∞ where two of x, y, z or p are 0; NaN where a
    subnormal argument (below 2.2e-308 in float64) cannot be read (``_rj_unreliable``).

    For p > 64·max(x, y, z), where duplication would need log₄(p/max) more steps, the
    arguments are sorted x ≤ y ≤ z and DLMF 19.20.14 trades p for q = x + (y − x)(p − z)/
    (p − y) ∈ [x, y]: (p − y) R_J(p) = 3 R_F + (y − q) R_J(q) − 3√y R_C(xz, pq), whose
    last term is below a fifth of the first (no cancellation)."""
    x, y, z, p = jnp.broadcast_arrays(*_float(x, y, z, p))
    infinite = _two_zero(x, y, z) | _is_zero(p)
    subnormal = _rj_unreliable(x, y, z, p)
    scale, (x, y, z, p) = _prescale(x, y, z, p)
    x, y, z = _sort3(x, y, z)
    huge = p > _HUGE_P * z
    ph = jnp.where(huge, p, 2 * z)  # any p > z serves the other branch
    q = x + (y - x) * ((ph - z) / (ph - y))
    # (y − x) R_J(q) ~ 1/√z stays finite where R_J(q) ~ 1/(q√z) need not
    value, rf = _rj_direct(x, y, z, jnp.where(huge, q, p), jnp.where(huge, y - x, 1.0))
    # √y R_C(xz, pq) = √(y/q) R_C(t, 1)/√p with t = (x/q)(z/p) ≤ 1/64 and
    # R_C(t, 1) = acos(√t)/√(1 − t) = atan2(√(1 − t), √t)/√(1 − t) (DLMF 19.2.18)
    qs = jnp.where(q > 0, q, 1.0)
    t = (x / qs) * (z / ph)
    root_t = _sqrt(x) / jnp.sqrt(qs) * jnp.sqrt(z / ph)
    rc = jnp.arctan2(jnp.sqrt(1 - t), root_t) / jnp.sqrt(1 - t)
    ymq = (z - y) / (ph - y) * value  # (y − q) R_J(q)
    swapped = (3 * rf + ymq - 3 * jnp.sqrt(y / qs) * (rc / jnp.sqrt(ph))) / (ph - y)
    value = _unscale(jnp.where(huge, swapped, value), scale)
    return _diverges(jnp.where(subnormal, jnp.nan, value), infinite)


# --- Legendre's integrals -----------------------------------------------------------------


def _reduce_by_pi(phi):
    """φ = jπ + r with |r| ≤ π/2, r to working precision (π in double-double)."""
    ph, pl = _pi_dd(phi.dtype)
    j = jnp.round(phi / ph)
    p, e = _two_prod(j, ph)
    r = ((phi - p) - e) - j * pl
    return j, r


def _amplitude(phi, m, m1, *more):
    """The inputs of an incomplete integral broadcast together, with φ = jπ ± r reduced:
    (m, m1, *more, j, sign, s = sin r, c = cos r, Δ² = c² + m1 s²), r ∈ [0, π/2]."""
    m, m1 = _complement(m, m1)
    phi, *more = _float(phi, *more)
    phi, m, m1, *more = jnp.broadcast_arrays(phi, m, m1, *more)
    j, r = _reduce_by_pi(phi)
    sgn = jnp.where(r < 0, -1.0, 1.0).astype(phi.dtype)
    s, c = jnp.sin(jnp.abs(r)), jnp.maximum(jnp.cos(jnp.abs(r)), 0.0)
    return m, m1, *more, j, sgn, s, c, c * c + m1 * s * s


def ellipkinc(phi, m, m1=None):
    """F(φ|m) = ∫₀^φ dθ / √(1 − m sin²θ), for any real φ."""
    m, m1, j, sgn, s, c, d2 = _amplitude(phi, m, m1)
    part = s * elliprf(c * c, d2, jnp.ones_like(s))
    whole = jnp.where(j == 0, 0.0, 2 * j * ellipk(m, m1))
    return whole + sgn * part


def ellipkinc_sc(s, c, m, m1=None):
    """F(φ|m) for φ ∈ [−π, π] given by s ∝ sin φ and c ∝ cos φ (any common positive
    scale; not both zero).  Near φ = ±π/2 this keeps the digits of cos φ that forming φ
    would lose: F = s R_F(c², c² + m1 s², 1) for c ≥ 0, and 2K − that for c < 0.  At
    m = 1 (m1 = 0), F = asinh(|s|/c) for c > 0, which holds where c² underflows
    (a cos φ of 1e-200: F = 461.2, not ∞)."""
    m, m1 = _complement(m, m1)
    s, c = _float(s, c)
    s, c, m, m1 = jnp.broadcast_arrays(s, c, m, m1)
    rho = jnp.hypot(s, c)
    rho = jnp.where(rho > 0, rho, 1.0)
    s, c = s / rho, c / rho
    a, c2 = jnp.abs(s), c * c
    part = a * elliprf(c2, c2 + m1 * a * a, jnp.ones_like(s))
    c_safe = jnp.where(c > 0, c, 1.0)
    part = jnp.where((m1 == 0) & (c > 0), jnp.arcsinh(a / c_safe), part)
    value = jnp.where(c >= 0, part, 2 * ellipk(m, m1) - part)
    return jnp.where(s < 0, -value, value)


def ellipe(m, m1=None):
    """E(m) = ∫₀^{π/2} √(1 − m sin²θ) dθ; E(1) = 1."""
    m, m1 = _complement(m, m1)
    one = jnp.ones_like(m)
    safe = jnp.where(m1 > 0, m1, 1.0)
    value = m1 * ellipk(m, m1) + m * m1 * elliprd(one, jnp.zeros_like(m), safe) / 3
    return jnp.where(m1 > 0, value, 1.0)


def ellipeinc(phi, m, m1=None):
    """E(φ|m) = ∫₀^φ √(1 − m sin²θ) dθ, for any real φ."""
    m, m1, j, sgn, s, c, d2 = _amplitude(phi, m, m1)
    c2 = c * c
    one = jnp.ones_like(s)
    f = s * elliprf(c2, d2, one)
    safe_d2 = jnp.where(d2 > 0, d2, 1.0)
    ratio = jnp.where(d2 > 0, c / jnp.sqrt(safe_d2), 1.0)  # c/Δ → 1 as m → 1 at c = 0
    rd = jnp.where((m1 > 0) & (d2 > 0), elliprd(one, c2, safe_d2), 0.0)
    part = jnp.where(m1 > 0, m1 * f, 0.0) + m * s * ratio + m * m1 * s**3 * rd / 3
    whole = jnp.where(j == 0, 0.0, 2 * j * ellipe(m, m1))
    return whole + sgn * part


def ellippi(n, phi, m, m1=None):
    """Π(n; φ|m) = ∫₀^φ dθ / ((1 − n sin²θ) √(1 − m sin²θ)) for n sin²φ < 1 (any real φ
    when n < 1)."""
    m, m1, n, j, sgn, s, c, d2 = _amplitude(phi, m, m1, n)
    c2 = c * c
    one = jnp.ones_like(s)
    part = s * elliprf(c2, d2, one) + n * s**3 * elliprj(c2, d2, one, 1 - n * s * s) / 3
    zero = jnp.zeros_like(s)
    safe = jnp.where(m1 > 0, m1, 1.0)
    complete = elliprf(zero, safe, one) + n * elliprj(zero, safe, one, 1 - n) / 3
    complete = jnp.where(m1 > 0, complete, jnp.inf)  # Π(n|1) = ∞
    whole = jnp.where(j == 0, 0.0, 2 * j * complete)
    return whole + sgn * part


# --- Jacobi's elliptic functions ----------------------------------------------------------


def _terms(dtype) -> int:
    return 13 if _is64(dtype) else 7  # q ≤ e^{−π}: q^13 < 1e-17


def _small_m(r, m, m1, K):
    """sn, cn, dn on r ∈ [0, K/2] for m ≤ ½: Fourier series in the nome (DLMF 22.11)."""
    r4 = jnp.sqrt(jnp.sqrt(m1))
    lam_m = 1 / (2 * (1 + r4) ** 2 * (1 + jnp.sqrt(m1)))  # λ/m
    lam = m * lam_m
    l4 = lam**4
    qm = lam_m * sum(c * l4**i for i, c in enumerate(_NOME))  # q/m
    q = m * qm
    zeta = (jnp.pi / 2) * r / K

    def term(j, carry):
        sn, cn, dn, qj = carry
        q2 = qj * qj * q  # q^{2j+1}
        odd = (2 * j + 1).astype(r.dtype) * zeta
        sn = sn + qj * jnp.sin(odd) / (1 - q2)
        cn = cn + qj * jnp.cos(odd) / (1 + q2)
        dn = dn + jnp.where(
            j > 0, qj * jnp.cos((2 * j).astype(r.dtype) * zeta) / (1 + qj * qj), 0.0
        )
        return sn, cn, dn, qj * q

    zero = jnp.zeros_like(r)
    sn, cn, dn, _ = lax.fori_loop(0, _terms(r.dtype), term, (zero, zero, zero, jnp.ones_like(q)))
    pre = (2 * jnp.pi / K) * jnp.sqrt(qm)
    return pre * sn, pre * cn, jnp.pi / (2 * K) + (2 * jnp.pi / K) * dn


def _large_m(r, r_lo, m, m1, K):
    """sn, cn, dn on r ∈ [0, K/2] for m > ½: theta functions after Jacobi's imaginary
    transformation, dn = b Σ sech(b (r − 2jK)), b = π/(2K') (and likewise cn, sn).
    ``r_lo`` is the low part of r: the leading sech and tanh get a first-order correction,
    so that e^{−r}, tiny near the quarter period when m → 1, keeps its relative digits."""
    b = jnp.pi / (2 * _agm_kprime(m))
    x, x_lo = _two_prod(b, r)
    x_lo = x_lo + b * r_lo
    period = 2 * b * K  # ≥ π
    th = jnp.tanh(x)
    sech0 = _sech(x) * (1 - th * x_lo)
    dn = sech0
    cn = sech0
    sn = th + (1 - th * th) * x_lo
    sinh2 = jnp.sinh(2 * x)

    def term(j, carry):
        sn, cn, dn = carry
        jp = j.astype(r.dtype) * period
        sa, sc = _sech(jp - x), _sech(jp + x)
        sign = jnp.where(j % 2 == 1, -1.0, 1.0)
        tail = jnp.where(sa * sc > 0, sinh2 * sa * sc, 0.0)  # m = 1: sinh 2x = ∞ times 0
        return sn + sign * tail, cn + sign * (sa + sc), dn + (sa + sc)

    sn, cn, dn = lax.fori_loop(1, _terms(r.dtype), term, (sn, cn, dn))
    k = jnp.sqrt(m)
    return b * sn / k, b * cn / k, b * dn


def _sech(x):
    """sech x for x ≥ 0 as 2e^{−x}/(1 + e^{−2x}): one exponential, so its relative error
    does not grow with x (XLA's cosh loses ε·x)."""
    e = jnp.exp(-x)
    return 2 * e / (1 + e * e)


def _agm_kprime(m):
    """K' / 1 = K(1 − m) from m itself (√m into the AGM): no complement formed."""
    return jnp.pi / (2 * _agm(jnp.sqrt(m)))


def _core(r, r_lo, m, m1, K):
    """sn, cn, dn on r ∈ [0, K/2], choosing the series by m ≤ ½."""
    small = m <= m1
    # each branch sees safe inputs, so the other's NaN or ∞ never reaches a gradient
    ms, m1s = jnp.where(small, m, 0.25), jnp.where(small, m1, 0.75)
    ml, m1l = jnp.where(small, 0.75, m), jnp.where(small, 0.25, m1)
    Ks = jnp.where(small, K, 1.6857503548125961)  # K(¼), K(¾): any finite value serves
    Kl = jnp.where(small, 2.1565156474996432, K)
    rs, rl = jnp.where(small, r, 0.0), jnp.where(small, 0.0, r)
    a = _small_m(rs, ms, m1s, Ks)
    b = _large_m(rl, jnp.where(small, 0.0, r_lo), ml, m1l, Kl)
    return tuple(jnp.where(small, p, q) for p, q in zip(a, b, strict=True))


# |u| up to this many half periods 2K is reduced to its residue (K in double-double holds
# about 106 bits: beyond, the residue is not determined and the functions are NaN)
_REDUCE_MAX = 2.0**100


def _reduce(u, m, m1):
    """u = 2Kn + r with |r| ≤ K, K and r in double-double; returns n, whether n is odd,
    r (high and low), K and K − |r| (high and low).
    Two passes: the first n, from u/(2 K_hi), leaves |r| up to |u| 2^-53 (its n·K_lo
    term), the second brings that within K (|u| ≤ 2^100·2K; NaN beyond)."""
    kh, kl = _ellipk_dd(m, m1)
    finite = jnp.isfinite(kh)
    kh_s, kl_s = jnp.where(finite, kh, 1.0), jnp.where(finite, kl, 0.0)

    def take(uh, ul):  # (uh, ul) − 2K round((uh)/(2 K_hi)), in double-double
        n = jnp.where(finite, jnp.round(uh / (2 * kh_s)), 0.0)
        p, e = _two_prod(n, 2 * kh_s)
        rh, rl = _two_sum(uh - p, ul - (e + n * 2 * kl_s))  # uh − p is exact (Sterbenz)
        return n, rh, rl

    n1, rh, rl = take(u, jnp.zeros_like(u))
    n2, rh, rl = take(rh, rl)
    n = n1 + n2  # (rounded where |n1| ≥ 2^53: n's parity is returned apart)
    odd = jnp.mod(n1, 2) != jnp.mod(n2, 2)
    inside = jnp.abs(u) <= _REDUCE_MAX * 2 * kh_s
    rh = jnp.where(inside | ~jnp.isfinite(u), rh, jnp.nan)
    sgn = jnp.where(rh < 0, -1.0, 1.0)
    rest_h, rest_l = _two_sum(kh_s - sgn * rh, kl_s - sgn * rl)  # kh − |rh| is exact
    rest_h, rest_l = jnp.where(finite, rest_h, jnp.inf), jnp.where(finite, rest_l, 0.0)
    return n, odd, rh, rl, kh, rest_h, rest_l


def ellipj(u, m, m1=None):
    """(sn, cn, dn, am)(u|m) for any real u; m1 = 1 − m given separately near m = 1."""
    return _ellipj_parts(u, m, m1)[:4]


def _ellipj_parts(u, m, m1=None):
    """ellipj's values and its reduction u = 2Kn + r: (sn, cn, dn, am, n, sign r)."""
    m, m1 = _complement(m, m1)
    (u,) = _float(u)
    u, m, m1 = jnp.broadcast_arrays(u, m, m1)
    n, odd_n, r, r_lo, K, rest, rest_lo = _reduce(u, m, m1)
    a = jnp.abs(r)
    reflect = rest < a  # a > K/2: evaluate at s = K − a
    arg = jnp.where(reflect, rest, a)
    arg_lo = jnp.where(reflect, rest_lo, jnp.where(r < 0, -r_lo, r_lo))
    s, c, d = _core(arg, arg_lo, m, m1, K)
    root = jnp.sqrt(m1)
    d_safe = jnp.where(d > 0, d, 1.0)
    sn = jnp.where(reflect, c / d_safe, s)
    cn = jnp.where(reflect, root * s / d_safe, c)
    dn = jnp.where(reflect, root / d_safe, d)
    sgn = jnp.where(r < 0, -1.0, 1.0)
    odd = jnp.where(odd_n, -1.0, 1.0)
    phase = sgn * jnp.arctan2(sn, cn)
    ph, pl = _pi_dd(u.dtype)
    amp = (n * ph + phase) + n * pl
    return odd * sgn * sn, odd * cn, dn, amp, n, sgn


def am(u, m, m1=None):
    """The amplitude am(u|m): sn = sin am, cn = cos am, continuous in u."""
    return ellipj(u, m, m1)[3]
