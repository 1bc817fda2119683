r"""Exact free-rigid-body motion by Jacobi elliptic functions (docs/math.md §1, §5), in JAX.

Sort the axes so that I1 > I2 > I3 (an odd permutation reverses time) and write
a_ij = 1/I_j − 1/I_i > 0 (j > i),

    β1 = m2² + m1² a13/a23,   β3 = m2² + m3² a13/a12,   B = m3² a23 − m1² a12.

B is the signed distance from the separatrix, computed as m3² I1 (I2 − I3) − m1² I3 (I1 − I2)
with error-free differences and products (double-double), so it is zero only when the
inputs lie on the separatrix to that precision.  With c the axis the
motion circulates about (c = 3 when B > 0, c = 1 when B < 0) and f the other outer axis,

    m_f = A_f cn(u),  m2 = A2 sn(u),  m_c = s_c A_c dn(u),  u = λt + u0,
    A1² = m1² + m2² a23/a13,  A3² = m3² + m2² a12/a13,  A2² = min(β1, β3),
    k² = min(β1, β3)/max(β1, β3),  1 − k² = a13 |B| / (a12 a23 max(β1, β3)),
    λ = −s_c √(a12 a23 max(β1, β3)),  u0 = F(φ0 | k²),  sin φ0 = m2/A2,  cos φ0 = m_f/A_f.

Every amplitude and the complement 1 − k² are sums of non-negative terms, and the
complement goes to the elliptic functions as it is (``mechint.special``), so nothing
cancels near the separatrix or the axes.  On the separatrix (k = 1) sn = tanh,
cn = dn = sech and the sign of m_f is kept apart.  With two equal moments I_j = I_k the
body precesses uniformly: m_i is constant and (m_j + i m_k)(t) = (m_j + i m_k)(0)
exp(−i a_j m_i t); a spherical body and an equilibrium do not move.
See Celledoni, Fassò, Säfström, Zanna, SIAM J. Sci. Comput. 30 (2008).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mechint import special
from mechint._validate import real_array, rotations, traced
from mechint.errors import InputError
from mechint.lie import so3

__all__ = ["attitude_flow", "euler_top", "euler_top_attitude", "flow", "regime"]


def euler_top(system, m0, t) -> np.ndarray:
    """Exact m(t) of the Euler top ``system`` from m(0) = ``m0``.

    ``m0``: (3,) or a batch (B, 3); ``t``: times (any shape, any sign).  Returns an array of
    shape ``t.shape + (3,)`` (or ``(B,) + t.shape + (3,)``).  One compiled function serves
    every state and time (``flow``, ``mi.exact.euler_top_flow``, is its traceable form)."""
    _untraced("euler_top", "euler_top_flow", m0=m0, t=t)
    inertia = np.asarray(system.inertia, dtype=float)
    m0, batched = system.validate_state(m0, "m0")
    t = real_array("t", t)
    rows = m0 if batched else m0[None]
    out = _evaluate(_batched, jnp.asarray(inertia), rows, None, t)[0]
    _within_reach(out, t)
    return out if batched else out[0]


def _within_reach(out, t) -> None:
    """InputError naming t where a finite time gave NaN: beyond 2^100 half periods of
    the elliptic functions (``special.ellipj``), where float64's double-double period no
    longer determines the phase (about 1e30 periods: the state would leave the orbit)."""
    bad = np.isnan(out).any(axis=-1) & np.isfinite(t)
    if bad.any():
        first = float(np.broadcast_to(t, bad.shape)[bad].flat[0])
        raise InputError("t", f"{int(bad.sum())} time(s) beyond 2^100 half periods of the "
                         f"motion (the first t = {first:g}): the phase is not determined there",
                         "times within about 1e30 periods")  # fmt: skip


def _untraced(name: str, traceable: str, **arrays) -> None:
    """The host functions (validated, compiled once, returning NumPy) cannot run on traced
    values: InputError pointing to the traceable form instead of JAX's TypeError."""
    for key, value in arrays.items():
        if any(traced(leaf) for leaf in jax.tree.leaves(value)):
            raise InputError(key, f"is traced (inside jax.jit, vmap or grad), and "
                             f"mi.exact.{name} validates and evaluates on the host",
                             f"call its traceable form mi.exact.{traceable}(system, m0, ...) "
                             "there")  # fmt: skip


def _inertia(system):
    """The moments of an Euler top ``system``, or ``system`` itself when it is an array."""
    return jnp.asarray(getattr(system, "inertia", system))


def _evaluate(fn, inertia, rows, g0s, t):
    """Run ``fn`` (inertia, rows[, g0s], times) over rows padded to a power of two and times
    in blocks of 8 (one at a time for batches of 1024 or more): a handful of shapes, so one
    compile serves nearly every call."""
    nb, flat = rows.shape[0], t.reshape(-1)
    pad = _bucket(nb) - nb
    rows_p = jnp.asarray(np.concatenate([rows, np.repeat(rows[:1], pad, axis=0)]))
    args = [rows_p]
    if g0s is not None:
        args.append(jnp.asarray(np.concatenate([g0s, np.repeat(g0s[:1], pad, axis=0)])))
    block = 8 if rows_p.shape[0] < 1024 else 1
    pieces = []
    for start in range(0, max(flat.size, 1), block):
        chunk = np.zeros(block)
        part = flat[start : start + block]
        chunk[: part.size] = part
        out = fn(inertia, *args, jnp.asarray(chunk))
        pieces.append([np.asarray(o)[:nb, : part.size] for o in out])
    return [
        np.concatenate(parts, axis=1).reshape(nb, *t.shape, *parts[0].shape[2:])
        for parts in zip(*pieces, strict=True)
    ]


def _bucket(n: int, least: int = 8) -> int:
    """The power of two ≥ n (and ≥ ``least``, so that small calls share one compile)."""
    return max(least, 1 << max(0, (n - 1).bit_length()))


def flow(system, m0, t):
    """The exact flow m0 ↦ m(t) of the Euler top ``system`` (or of its principal moments
    given as an array) for one state (3,) and one time: pure JAX, traceable under jit,
    vmap and grad (in m0, t and the inertia).  No validation."""
    return _solution(_inertia(system), jnp.asarray(m0), jnp.asarray(t))


def regime(system, m0) -> str:
    """'stationary', 'spherical', 'symmetric', 'about-largest', 'about-smallest' or
    'separatrix': the case of the exact solution that applies to ``m0``."""
    _untraced("regime", "euler_top_flow", m0=m0)
    inertia = np.asarray(system.inertia, dtype=float)
    m0, batched = system.validate_state(m0, "m0")
    if batched:
        raise InputError("m0", "regime takes one state, not a batch")
    code = int(_regime_code(jnp.asarray(inertia), jnp.asarray(m0)))
    return _REGIMES[code]


_REGIMES = ("spherical", "symmetric", "stationary", "separatrix", "about-smallest",
            "about-largest")  # fmt: skip


def _sorted(I, m):
    perm = jnp.argsort(-I, stable=True)
    return perm, I[perm], m[perm]


def _rates(Is):
    I1, I2, I3 = Is[0], Is[1], Is[2]
    return (I1 - I2) / (I1 * I2), (I1 - I3) / (I1 * I3), (I2 - I3) / (I2 * I3)


def _distance(ms, Is):
    """B·I1·I2·I3 = m3² I1 (I2 − I3) − m1² I3 (I1 − I2) in double-double (error-free
    differences and products), so it is zero exactly when the inputs lie on the separatrix
    to that precision; returned as a float with the same sign."""
    I1, I2, I3 = Is[0], Is[1], Is[2]
    zero = jnp.zeros_like(I1)
    d23h, d23l = special._two_sum(I2, -I3)
    d12h, d12l = special._two_sum(I1, -I2)
    p3h, p3l = special._two_prod(ms[2], ms[2])
    p1h, p1l = special._two_prod(ms[0], ms[0])
    ah, al = special._dd_mul(*special._dd_mul(p3h, p3l, I1, zero), d23h, d23l)
    bh, bl = special._dd_mul(*special._dd_mul(p1h, p1l, I3, zero), d12h, d12l)
    return special._dd_add(ah, al, -bh, -bl)[0]


class _Setup(NamedTuple):
    """What every time of one state shares: sorted axes, rates, the separatrix distance B
    (times I1 I2 I3), the regime's code (an index of ``_REGIMES``) and the permutation's
    parity."""

    perm: jax.Array
    Is: jax.Array
    ms: jax.Array
    rates: tuple
    B: jax.Array
    code: jax.Array
    parity: jax.Array


def _setup(I, m) -> _Setup:
    perm, Is, ms = _sorted(I, m)
    B = _distance(ms, Is)
    sphere = (Is[0] == Is[1]) & (Is[1] == Is[2])
    symmetric = (Is[0] == Is[1]) | (Is[1] == Is[2])
    code = jnp.select(
        [sphere, symmetric, (ms[0] == 0) & (ms[2] == 0), B == 0, B > 0],
        [0, 1, 2, 3, 4],
        5,
    )
    parity = jnp.round(jnp.linalg.det(jnp.eye(3, dtype=m.dtype)[perm]))
    return _Setup(perm, Is, ms, _rates(Is), B, code, parity)


def _unit(I, m, t):
    """The problem at unit scale: I/2^a, m/2^b, t·2^(b−a) with 2^a, 2^b the binary scales
    of the largest moment and the largest |m_i| (powers of two, so exact).  The motion is
    scale-covariant, m(t; sI, r m0) = r m(r t/s; I, m0), and every product of the solution
    (m², the double-double separatrix distance, the rates) stays far from overflow and
    underflow at any scale of I and m0 float64 holds.  Returns (I, m, t, 2^b)."""
    a = jnp.frexp(jnp.max(jnp.abs(I)))[1]
    b = jnp.frexp(jnp.max(jnp.abs(m)))[1]  # 0 for m = 0
    return jnp.ldexp(I, -a), jnp.ldexp(m, -b), jnp.ldexp(t, b - a), jnp.ldexp(jnp.ones_like(t), b)


def _regime_code(I, m):
    I, m, _, _ = _unit(I, m, jnp.zeros((), m.dtype))
    return _setup(I, m).code


def _solution(I, m, t):
    I, m, t, scale = _unit(I, m, t)
    st = _setup(I, m)
    return scale * _state(I, m, t, st, _circulating(st, st.parity * t))


def _state(I, m, t, st: _Setup, y):
    """m(t) in original axes from the sorted-axes solution y, or the closed forms."""
    general = jnp.zeros_like(m).at[st.perm].set(y)
    symmetric = _precession(I, m, t, st.Is, st.perm)
    return jnp.select(
        [st.code == 0, st.code == 1, st.code == 2],
        [m, symmetric, m],
        general,
    )


def _safe(x, ok, fill=1.0):
    return jnp.where(ok, x, fill)


def _circulating(st: _Setup, t, with_angle=False):
    """The elliptic (or, on the separatrix, hyperbolic) solution in sorted axes; with
    ``with_angle`` also ψ(t) − ψ(0), the attitude's rotation about the angular momentum
    (see ``_attitude``)."""
    ms, Is = st.ms, st.Is
    a12, a13, a23 = st.rates
    ok = (a12 > 0) & (a23 > 0)  # not symmetric (those states take another branch)
    a12, a23 = _safe(a12, ok), _safe(a23, ok)
    m1, m2, m3 = ms[0], ms[1], ms[2]
    B = st.B / (Is[0] * Is[1] * Is[2])
    beta1 = m2 * m2 + m1 * m1 * (a13 / a23)
    beta3 = m2 * m2 + m3 * m3 * (a13 / a12)
    about3 = B >= 0
    big = jnp.maximum(beta1, beta3)
    small = jnp.minimum(beta1, beta3)
    big_s = _safe(big, big > 0)
    k2 = small / big_s
    k2c = a13 * jnp.abs(B) / (a12 * a23 * big_s)
    A1s = m1 * m1 + m2 * m2 * (a23 / a13)
    A3s = m3 * m3 + m2 * m2 * (a12 / a13)
    A1, A3 = jnp.sqrt(A1s), jnp.sqrt(A3s)
    A2 = jnp.sqrt(small)
    mf, mc = jnp.where(about3, m1, m3), jnp.where(about3, m3, m1)
    Af, Ac = jnp.where(about3, A1, A3), jnp.where(about3, A3, A1)
    sc = jnp.where(mc < 0, -1.0, 1.0)
    # Within 2^-500 of the saddle (0, ±A2, 0) B's squares underflow (B = 0 or a
    # subnormal) although the state is in general off the separatrix: in the normalised e = m_f/A_f,
    # c = m_c/A_c the motion there is linear, a mode (e, c) ∝ (s, 1) growing forward in
    # time and one ∝ (−s, 1) growing backward (s = sign m2; Euler's equations, ṁ_f ∝ m2
    # m_c).  Each side of t leaves the saddle on the separatrix arc of the mode that
    # grows on that side, with that mode's amplitude as sech u0 = cos φ0 (a turning point
    # e = 0 splits c evenly: u0 = K(k) ≈ ln(4/k'), k' = |c|).  The mode that decays is
    # left out, an error below |c| + |e|, which is below 2^-500 |m|.
    e_n = mf / _safe(Af, Af > 0)
    c_n = mc / _safe(Ac, Ac > 0)
    tiny = 2.0**-500
    near = (jnp.abs(e_n) < tiny) & (jnp.abs(c_n) < tiny) & (Af > 0) & (Ac > 0)
    on = (B == 0) | near  # the separatrix: cn = dn = sech > 0, the sign of m_f kept apart
    sf = jnp.where(on & (mf < 0), -1.0, 1.0)
    x2 = jnp.where(A2 > 0, m2 / _safe(A2, A2 > 0), 0.0)  # sin φ0
    xf = jnp.where(Af > 0, sf * mf / _safe(Af, Af > 0), 1.0)  # cos φ0
    s2 = jnp.where(m2 < 0, -1.0, 1.0)
    forward = t >= 0
    amp = jnp.where(forward, c_n + s2 * e_n, c_n - s2 * e_n) / 2
    s_amp = jnp.where(amp < 0, -1.0, 1.0)
    sc = jnp.where(near, s_amp, sc)
    sf = jnp.where(near, jnp.where(forward, s2, -s2) * s_amp, sf)
    xf = jnp.where(near, jnp.abs(amp), xf)
    lam = -sc * sf * jnp.sqrt(a12 * a23 * big)
    k2 = jnp.where(on, 1.0, k2)
    k2c = jnp.where(on, 0.0, k2c)
    u0 = special.ellipkinc_sc(x2, xf, k2, k2c)  # from sin and cos: φ0 itself loses digits
    sn, cn, dn, _, n, sgn = special._ellipj_parts(lam * t + u0, k2, k2c)
    yf, y2, yc = sf * Af * cn, A2 * sn, sc * Ac * dn
    y1, y3 = jnp.where(about3, yf, yc), jnp.where(about3, yc, yf)
    y = jnp.stack([y1, y2, y3])
    if not with_angle:
        return y
    # ψ' = G (m_f²/I_f + m2²/I2)/(m_f² + m2²) = G/I_f + G κ (A2²/A_f²) sn²/(1 − ν sn²),
    # κ = 1/I2 − 1/I_f; its integral is J(u) = ∫ sn²/(1 − ν sn²) du, a Carlson R_J
    Afs = jnp.where(about3, A1s, A3s)
    Afs_safe = _safe(Afs, Afs > 0)
    gap = jnp.where(about3, a12 * (m1 * m1 / a23 + m2 * m2 / a13),
                    a23 * (m3 * m3 / a12 + m2 * m2 / a13))  # A2² − A_f² ≥ 0, summed  # fmt: skip
    nu = -gap / Afs_safe
    kappa = jnp.where(about3, a12, -a23)
    If = jnp.where(about3, Is[0], Is[2])
    G = jnp.sqrt(m1 * m1 + m2 * m2 + m3 * m3)
    one = jnp.ones_like(G)
    zero = jnp.zeros_like(G)
    safe_c = _safe(k2c, k2c > 0)
    whole = jnp.where(k2c > 0, special.elliprj(zero, safe_c, one, 1 - nu) / 3, jnp.inf)

    def partial(s, c, d2):  # ∫₀^φ sin²/((1 − ν sin²)Δ) for |φ| ≤ π/2, from |sin φ|, cos φ
        return s**3 * special.elliprj(c * c, d2, one, 1 - nu * s * s) / 3

    J_u = jnp.where(n == 0, 0.0, 2 * n * whole) + sgn * partial(jnp.abs(sn), jnp.abs(cn), dn * dn)
    rho0 = _safe(jnp.hypot(x2, xf), jnp.hypot(x2, xf) > 0)
    s0, c0 = jnp.abs(x2) / rho0, xf / rho0
    p0 = partial(s0, jnp.abs(c0), c0 * c0 + k2c * s0 * s0)
    J_0 = jnp.where(x2 < 0, -1.0, 1.0) * jnp.where(c0 >= 0, p0, 2 * whole - p0)
    # on the separatrix sn = tanh, and J has a closed form that holds for every u (the
    # R_J form would need dn = sech u, which underflows for u > 745):
    # J(u) = (u − atan(a tanh u)/a)/(1 − ν), a = √(−ν)
    a = jnp.sqrt(-nu)
    a_s = _safe(a, a > 1e-4)

    def on_separatrix(v):
        T = jnp.tanh(v)
        arc = jnp.where(a > 1e-4, jnp.arctan(a_s * T) / a_s, T * (1 - a * a * T * T / 3))
        return (v - arc) / (1 - nu)

    u = lam * t + u0
    J_u = jnp.where(on, on_separatrix(jnp.where(on, u, 0.0)), J_u)
    J_0 = jnp.where(on, on_separatrix(jnp.where(on, u0, 0.0)), J_0)
    coeff = G * kappa * (small / Afs_safe) / _safe(lam, lam != 0)
    psi = G * t / If + jnp.where(small > 0, coeff * (J_u - J_0), 0.0)
    return y, psi


def _precession(I, m, t, Is, perm):
    """Two equal moments: uniform precession about the distinct axis i (original axes)."""
    i = jnp.where(Is[0] == Is[1], perm[2], perm[0])
    j, k = (i + 1) % 3, (i + 2) % 3
    Ii, Ik = I[i], I[k]
    a_j = (Ik - Ii) / (Ik * Ii)
    angle = -a_j * m[i] * t
    c, s = jnp.cos(angle), jnp.sin(angle)
    mj, mk = m[j], m[k]
    out = jnp.zeros_like(m).at[i].set(m[i])
    out = out.at[j].set(mj * c - mk * s)
    return out.at[k].set(mj * s + mk * c)


def euler_top_attitude(system, m0, g0, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact (m(t), g(t)) of the Euler top from m(0) = ``m0`` and attitude g(0) = ``g0``:
    g maps body to space, ġ = g hat(I⁻¹m), so g(t) m(t) = g0 m0 for all t.  ``m0``: (3,)
    or (B, 3); ``g0``: (3, 3) or (B, 3, 3); ``t``: times (any shape).  Returns arrays of
    shape t.shape + (3,) and t.shape + (3, 3) (with a leading B for a batch).

    With the angular momentum's direction as third row, P(t) = [ (e_c × m)/ρ ; m × (e_c × m)
    /(Gρ) ; m/G ] (c the axis m circulates about, ρ² = G² − m_c² > 0), the attitude is
    g(t) = g0 P(0)ᵀ R_3(ψ(t)) P(t) with ψ' = G (m_i²/I_i + m_j²/I_j)/(m_i² + m_j²), whose
    integral is an elliptic integral of the third kind (Celledoni, Fassò, Säfström, Zanna
    2008).  Symmetric and spherical bodies and equilibria use the closed forms."""
    _untraced("euler_top_attitude", "euler_top_attitude_flow", m0=m0, g0=g0, t=t)
    inertia = np.asarray(system.inertia, dtype=float)
    m0, batched = system.validate_state(m0, "m0")
    t = real_array("t", t)
    rows = m0 if batched else m0[None]
    g = rotations("g0", g0, 3, True, rows.shape[0])
    m, gt = _evaluate(_batched_attitude, jnp.asarray(inertia), rows, g, t)
    _within_reach(m, t)
    return (m, gt) if batched else (m[0], gt[0])


def attitude_flow(system, m0, g0, t):
    """(m0, g0) ↦ (m(t), g(t)) of the Euler top ``system`` (or its principal moments as an
    array) for one state and one time: pure JAX (jit, vmap, grad)."""
    m0, g0, t = (jnp.asarray(v) for v in (m0, g0, t))
    return _attitude(_inertia(system), m0, g0, t)


def _frame(m, c):
    """P with rows (e_c × m)/ρ, m × (e_c × m)/(Gρ), m/G, in original axes (c traced)."""
    i, j = (c + 1) % 3, (c + 2) % 3
    mi, mj, mc = m[i], m[j], m[c]
    rho2 = mi * mi + mj * mj
    rho = jnp.sqrt(_safe(rho2, rho2 > 0))
    G = jnp.sqrt(rho2 + mc * mc)
    G = _safe(G, G > 0)
    rows_primed = jnp.array(
        [
            [-mj / rho, mi / rho, 0.0 * mc],
            [-mi * mc / (G * rho), -mj * mc / (G * rho), rho2 / (G * rho)],
            [mi / G, mj / G, mc / G],
        ]
    )
    P = jnp.zeros((3, 3), dtype=m.dtype)
    P = P.at[:, i].set(rows_primed[:, 0])
    P = P.at[:, j].set(rows_primed[:, 1])
    return P.at[:, c].set(rows_primed[:, 2])


def _attitude(I, m, g0, t):
    """(m(t), g(t)): the state and the attitude from one evaluation of the solution."""
    I, m, t, scale = _unit(I, m, t)
    st = _setup(I, m)
    perm, Is, ms, B, code = st.perm, st.Is, st.ms, st.B, st.code
    y, psi = _circulating(st, st.parity * t, with_angle=True)
    psi = st.parity * psi
    m_t = jnp.zeros_like(m).at[perm].set(y)
    c = jnp.where(B >= 0, perm[2], perm[0])
    Rz = jnp.array(
        [[jnp.cos(psi), -jnp.sin(psi), 0.0], [jnp.sin(psi), jnp.cos(psi), 0.0], [0.0, 0.0, 1.0]]
    )
    general = g0 @ _frame(m, c).T @ Rz @ _frame(m_t, c)
    # closed forms: sphere and equilibria turn uniformly; a symmetric body turns about m
    # at rate G/I⊥ and about its axis at rate (1/I_i − 1/I⊥) m_i
    uniform = g0 @ so3.exp(t * m / I)
    i = jnp.where(Is[0] == Is[1], perm[2], perm[0])
    I_perp = jnp.where(Is[0] == Is[1], Is[0], Is[2])
    e_i = jnp.zeros_like(m).at[i].set(1.0)
    spin = (1 / I[i] - 1 / I_perp) * m[i]
    symmetric = g0 @ so3.exp(t * m / I_perp) @ so3.exp(t * spin * e_i)
    off = jnp.where(B >= 0, jnp.abs(ms[0]) + jnp.abs(ms[1]), jnp.abs(ms[1]) + jnp.abs(ms[2]))
    axis = off == 0  # m exactly along the circulation axis: an equilibrium (ρ = 0)
    g = jnp.select(
        [(code == 0) | (code == 2) | axis, code == 1],
        [uniform, symmetric],
        general,
    )
    return scale * _state(I, m, t, st, y), g


@jax.jit
def _batched_attitude(I, rows, g0s, t):
    per_time = jax.vmap(lambda m, g, s: _attitude(I, m, g, s), in_axes=(None, None, 0))
    return jax.vmap(per_time, in_axes=(0, 0, None))(rows, g0s, t)


@jax.jit
def _batched(I, rows, t):
    per_time = jax.vmap(_solution, in_axes=(None, None, 0))
    return (jax.vmap(per_time, in_axes=(None, 0, None))(I, rows, t),)
