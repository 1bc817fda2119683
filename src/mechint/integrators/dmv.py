r"""The discrete Moser–Veselov step of the three-dimensional body in three unknowns, and
its preprocessing to orders 4..10 (Hairer & Vilmart 2006).

Source: E. Hairer and G. Vilmart, *Preprocessed discrete Moser–Veselov algorithm for the
full dynamics of a rigid body*, J. Phys. A 39 (2006) 13225–13235 (their DMV code); the
Moser–Veselov map itself as in ``discrete_lagrangian`` (docs/math.md §3).

**The step in three unknowns.**  For n = 3, with body momentum m, principal moments
I = (J2+J3, J1+J3, J1+J2) and the body rotation W_k written by its quaternion
(1, c)/√(1 + |c|²) (c = tan(θ/2)·axis), the Moser–Veselov equation h hat(m_k) =
W J − J Wᵀ becomes three scalar equations

    c_i = (1 + |c|²) a_i + f_i c_j c_k,   a_i = h m_i / (2 I_i),   f_i = (I_j − I_k)/I_i

((i, j, k) cyclic), solved here by Newton with its 3×3 Jacobian written out
(I − 2 a cᵀ − K(c), K the derivative of f ⊙ (c_j c_k)) from Hairer–Vilmart's predictor;
then m_{k+1} = W_kᵀ m_k.  No generic Jacobian, no matrix exponential: this is the fast
step for one body (``DiscreteLagrangian`` uses it for every n = 3 body).

**Preprocessing.**  The map with the moments replaced by I^mod(h), 1/I^mod_i =
σ/I_i + δ, σ = 1 + Σ_k s_k(h²N, h²H), δ = Σ_k d_k(h²N, h²H) (N = |m|²/2,
H = Σ m_i²/(2I_i)), with s_k, d_k homogeneous of degree k in (h²N, h²H) and
coefficients symmetric functions of I (the tables below, Hairer–Vilmart's), agrees with
the exact flow to order 2k + 2 when the terms k = 1..K are kept.  Since the map keeps
|m|² and the energy of I^mod, which is σH + δN, it keeps H and |m|² exactly, so
I^mod is the same at both ends of a step: the preprocessed map is symmetric.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mechint.lie import so3
from mechint.maps import Reason, combine, finite, status

ORDERS = (2, 4, 6, 8, 10)


def _sums(I):
    """The symmetric functions of the moments that the coefficient tables use."""
    I1, I2, I3 = I[..., 0], I[..., 1], I[..., 2]

    def inv(p):
        return I1**-p + I2**-p + I3**-p

    def pw(p):
        return I1**p + I2**p + I3**p

    def mixed(a, b):  # Σ_cyclic (I_i^a + I_j^a) / I_k^b
        return (I1**a + I2**a) / I3**b + (I2**a + I3**a) / I1**b + (I3**a + I1**a) / I2**b

    return {
        "d": I1 * I2 * I3,
        **{f"i{p}": inv(p) for p in (1, 2, 3, 4)},
        **{f"s{p}": pw(p) for p in (1, 2, 3, 4)},
        **{f"x{a}{b}": mixed(a, b) for a, b in ((1, 1), (1, 2), (2, 1), (1, 3), (3, 1), (2, 2))},
    }


def coefficients(I, order: int):
    """[(s_k, d_k)] for k = 1..order/2 − 1: the coefficients of h^{2k}·N^{k−j}H^j,
    j = 0..k, in σ − 1 and δ (Hairer & Vilmart 2006, their DMV code)."""
    v = _sums(I)
    d, d2, d3, d4 = v["d"], v["d"] ** 2, v["d"] ** 3, v["d"] ** 4
    i1, i2, i3, i4 = v["i1"], v["i2"], v["i3"], v["i4"]
    s1, s2, s3, s4 = v["s1"], v["s2"], v["s3"], v["s4"]
    x11, x12, x21, x13, x31, x22 = (v[k] for k in ("x11", "x12", "x21", "x13", "x31", "x22"))
    table = [
        (
            [s1 / (6 * d), -i1 / 3],
            [-1 / (3 * d), s1 / (6 * d)],
        ),
        (
            [(s2 / d - i1) / (30 * d), (1 - x11) / (30 * d), (3 * s1 / d + 2 * i2) / 60],
            [-s1 / d2 / 60, i1 / d / 10 - s2 / d2 / 60, -(9 + x11) / d / 60],
        ),
        (
            [
                (4 * d + 17 * s3 - 15 * d * x11) / (2520 * d3),
                (9 * s1 + 10 * d * i2 - 6 * x21) / (420 * d2),
                ((6 * x12 - 100 * i1) * d + 53 * s2) / (2520 * d2),
                (15 - d * i3 - 2 * x11) / (630 * d),
            ],
            [
                (34 * d * i1 - 19 * s2) / (2520 * d3),
                (s3 + 2 * d * x11 - 85 * d) / (1260 * d3),
                (47 * s1 + 13 * x21 - 38 * d * i2) / (2520 * d2),
                (9 * d * i1 + d * x12 - 11 * s2) / (1260 * d2),
            ],
        ),
        (
            [
                (62 * s4 - 94 * d * x21 + 66 * d2 * i2 + 81 * d * s1) / (45360 * d4),
                (-77 * x31 + 75 * d * x12 + 214 * s2 - 240 * d * i1) / (22680 * d3),
                (26 * d * x22 + 55 * s3 + 204 * d - 50 * d2 * i3 - 59 * d * x11) / (7560 * d3),
                (137 * d * i2 - d * x13 + 3 * s1 - 69 * x21) / (11340 * d2),
                (2 * d2 * i4 + 5 * d * x12 - 171 * d * i1 + 159 * s2) / (45360 * d2),
            ],
            [
                (60 * x11 * d - 61 * s3 - 247 * d) / (45360 * d4),
                (54 * d * s1 - s4 + 218 * d * x21 - 426 * d2 * i2) / (45360 * d4),
                (125 * d * i1 - 5 * x31 - 130 * s2 + 4 * d * x12) / (7560 * d3),
                (67 * s3 - 735 * d - 15 * d * x22 + 87 * d * x11 + 34 * d2 * i3) / (22680 * d3),
                (165 * s1 - d * x13 - 9 * x21 - 145 * d * i2) / (45360 * d2),
            ],
        ),
    ]
    return table[: order // 2 - 1]


def modified_inertia(I, m, h, order: int):
    """I^mod(h) at the state m (moments as the last axis): 1/I^mod = σ/I + δ."""
    if order == 2:
        return jnp.broadcast_to(I, m.shape)
    N = 0.5 * h * h * jnp.sum(m * m, axis=-1)
    H = 0.5 * h * h * jnp.sum(m * m / I, axis=-1)
    sigma, delta = jnp.ones_like(N), jnp.zeros_like(N)
    for k, (s, d) in enumerate(coefficients(I, order), start=1):
        monomials = [N ** (k - j) * H**j for j in range(k + 1)]
        sigma = sigma + sum(c * x for c, x in zip(s, monomials, strict=True))
        delta = delta + sum(c * x for c, x in zip(d, monomials, strict=True))
    return 1.0 / (sigma[..., None] / I + delta[..., None])


def _entries(v):
    """The three entries of v along its last axis, as a tuple of arrays."""
    return (v[..., 0], v[..., 1], v[..., 2])


def _solve3(r, b):
    """A⁻¹b for 3×3 A by its adjugate, A as rows r of entries and b as entries (tuples of
    arrays of any one shape): a tuple of three entries."""
    cof = [
        [r[1][1] * r[2][2] - r[1][2] * r[2][1], r[0][2] * r[2][1] - r[0][1] * r[2][2],
         r[0][1] * r[1][2] - r[0][2] * r[1][1]],
        [r[1][2] * r[2][0] - r[1][0] * r[2][2], r[0][0] * r[2][2] - r[0][2] * r[2][0],
         r[0][2] * r[1][0] - r[0][0] * r[1][2]],
        [r[1][0] * r[2][1] - r[1][1] * r[2][0], r[0][1] * r[2][0] - r[0][0] * r[2][1],
         r[0][0] * r[1][1] - r[0][1] * r[1][0]],
    ]  # fmt: skip
    det = r[0][0] * cof[0][0] + r[0][1] * cof[1][0] + r[0][2] * cof[2][0]
    return tuple(sum(cof[i][j] * b[j] for j in range(3)) / det for i in range(3))


def _max_abs(v):
    """max_i |v_i| of a tuple of three entries."""
    return jnp.maximum(jnp.maximum(jnp.abs(v[0]), jnp.abs(v[1])), jnp.abs(v[2]))


def solve_c(m, I, h, *, rtol: float = 1e-14, max_iter: int = 20):
    """c of the body rotation of one Moser–Veselov step with moments I (see the module
    docstring); returns (c, converged, residual).

    Newton's iteration runs on the three entries of c as separate arrays, its residual,
    Jacobian and solve written on them: on a batch every operation is then elementwise
    on (B,) arrays, with no stacking, rolling or transposing of (B, 3) ones.  Measured
    on the 2-core CPU against the iteration on the stacked c, ``integrate`` of the free
    body under ``jax.jit`` (h = 0.01): 10⁵ bodies × 100 steps 5.4e6 -> 9.6e6 to 1.0e7
    body-steps/s; one body, 10⁵ steps, 1.4e6 -> 1.8e6 steps/s (order 10: 1.0e6 -> 1.2e6).
    Outside the iteration
    the stacked forms were faster (the residual on entries there: 7.5e6)."""
    rtol = max(rtol, 8.0 * float(jnp.finfo(m.dtype).eps))  # as ``solvers.Newton``
    av = 0.5 * h * m / I
    I1, I2, I3 = I[..., 0], I[..., 1], I[..., 2]
    f = ((I2 - I3) / I1, (I3 - I1) / I2, (I1 - I2) / I3)
    a, fv = _entries(av), jnp.stack(f, axis=-1)
    # Hairer–Vilmart's predictor: one Gauss–Seidel sweep from c = a
    c1 = a[0] + f[0] * a[1] * a[2]
    c2 = a[1] + f[1] * c1 * a[2]
    c3 = a[2] + f[2] * c1 * c2

    def entries(c):  # c_i − (1 + |c|²) a_i − f_i c_j c_k, (i, j, k) cyclic
        s = 1.0 + (c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        return tuple(c[i] - s * a[i] - f[i] * c[(i + 1) % 3] * c[(i + 2) % 3] for i in range(3))

    def residual(c):
        cj, ck = jnp.roll(c, -1, axis=-1), jnp.roll(c, -2, axis=-1)
        return c - (1.0 + jnp.sum(c * c, -1, keepdims=True)) * av - fv * cj * ck

    def jacobian(c):  # I − 2 a cᵀ − K(c), K the derivative of f_i c_j c_k
        x1, x2, x3 = c
        return (
            (1.0 - 2.0 * a[0] * x1, -2.0 * a[0] * x2 - f[0] * x3, -2.0 * a[0] * x3 - f[0] * x2),
            (-2.0 * a[1] * x1 - f[1] * x3, 1.0 - 2.0 * a[1] * x2, -2.0 * a[1] * x3 - f[1] * x1),
            (-2.0 * a[2] * x1 - f[2] * x2, -2.0 * a[2] * x2 - f[2] * x1, 1.0 - 2.0 * a[2] * x3),
        )

    def newton(_, c_start):  # its function is ``residual``, here on entries (``entries``)
        def cond(state):
            _, delta, k = state
            return (k < max_iter) & (delta > 0.0)

        def body(state):
            c, _, k = state
            d = _solve3(jacobian(c), entries(c))
            c_new = tuple(x - y for x, y in zip(c, d, strict=True))
            small = _max_abs(d) <= rtol * _max_abs(c_new)
            bad = ~finite(c_new)
            return c_new, jnp.where(small | bad, 0.0, 1.0).astype(m.dtype), k + 1

        one = jnp.ones((), m.dtype)
        start = _entries(c_start)
        return jnp.stack(jax.lax.while_loop(cond, body, (start, one, jnp.int32(0)))[0], axis=-1)

    # the implicit function theorem gives the derivatives (forward and reverse mode)
    c = jax.lax.custom_root(
        residual,
        jnp.stack([c1, c2, c3], axis=-1),
        newton,
        lambda g, y: jnp.linalg.solve(jax.jacfwd(g)(y), y),
    )
    res = jax.lax.stop_gradient(jnp.max(jnp.abs(residual(c))))
    scale = jnp.max(jnp.abs(c)) + jnp.max(jnp.abs(av))
    converged = jnp.isfinite(res) & (res <= 1e3 * rtol * jax.lax.stop_gradient(scale) + 1e-300)
    return c, converged, res


def rotation_entries(c):
    """The rows of entries of W = R((1, c)) = 1 + (2/α)(ĉ + ĉ²), α = 1 + |c|² (the
    rotation of the unnormalized quaternion (1, c)), from the entries of c.  Written on
    entries, so that the branch test reads them without a stacked W in between (10⁵ free
    bodies × 100 steps, the 2-core CPU: 9.5e6–1.0e7 -> 1.1e7 body-steps/s)."""
    c1, c2, c3 = c
    s = 2.0 / (1.0 + (c1 * c1 + c2 * c2 + c3 * c3))
    return (
        (1.0 + s * (-(c3 * c3) - c2 * c2), s * (-c3 + c2 * c1), s * (c2 + c3 * c1)),
        (s * (c3 + c1 * c2), 1.0 + s * (-(c3 * c3) - c1 * c1), s * (-c1 + c3 * c2)),
        (s * (-c2 + c1 * c3), s * (c1 + c2 * c3), 1.0 + s * (-(c2 * c2) - c1 * c1)),
    )


def step(m, I, h, order: int, *, rtol: float = 1e-14, max_iter: int = 20, check_branch=True):
    """One (preprocessed) Moser–Veselov step of the free body from body momentum m with
    principal moments I: (m_{k+1}, c, W_k, StepStatus)."""
    I_mod = modified_inertia(I, m, h, order)
    c, converged, res = solve_c(m, I_mod, h, rtol=rtol, max_iter=max_iter)
    q = jnp.concatenate([jnp.ones_like(c[..., :1]), -c], axis=-1)  # Wᵀ
    m_next = so3.rotate(q, m)
    w = rotation_entries(_entries(c))
    W = jnp.stack([jnp.stack(row, axis=-1) for row in w], axis=-2)
    st = status(converged, res, Reason.NOT_CONVERGED)
    if check_branch:
        J = 0.5 * jnp.sum(I_mod, axis=-1, keepdims=True) - I_mod
        st = combine([st, status(on_branch(w, J), res, Reason.WRONG_BRANCH)])
    return m_next, c, W, st


def on_branch(w, J):
    """Whether every eigenvalue of J⁻¹W has a positive real part (the branch W → I, see
    ``discrete_lagrangian``), W given by its rows of entries w (``rotation_entries``), for
    diagonal J ≥ 0 (a planar body, I_k = I_i + I_j, has J_k = 0).  The roots of
    det(sJ + W) = a3 s³ + a2 s² + a1 s + a0 must lie in the left half-plane: a2, a1,
    a0 > 0 and a2 a1 > a3 a0 (Routh–Hurwitz; as J_k → 0 one root goes to −∞ exactly when
    a2 > 0, and the conditions become the quadratic's).  For J > 0 it is
    ``solvers.linear.positive_stable(W / J[:, None])``."""
    w = jax.tree.map(jax.lax.stop_gradient, w)
    J1, J2, J3 = J[..., 0], J[..., 1], J[..., 2]
    a3 = J1 * J2 * J3
    a2 = J1 * J2 * w[2][2] + J1 * J3 * w[1][1] + J2 * J3 * w[0][0]
    a1 = (
        J1 * (w[1][1] * w[2][2] - w[1][2] * w[2][1])
        + J2 * (w[0][0] * w[2][2] - w[0][2] * w[2][0])
        + J3 * (w[0][0] * w[1][1] - w[0][1] * w[1][0])
    )
    a0 = (
        w[0][0] * (w[1][1] * w[2][2] - w[1][2] * w[2][1])
        - w[0][1] * (w[1][0] * w[2][2] - w[1][2] * w[2][0])
        + w[0][2] * (w[1][0] * w[2][1] - w[1][1] * w[2][0])
    )
    return (a2 > 0) & (a1 > 0) & (a0 > 0) & (a2 * a1 > a3 * a0)
