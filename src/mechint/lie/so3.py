"""so(3) ≅ R³: the hat map hat(v) w = v × w and its inverse."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float


def hat(v: Float[ArrayLike, "... 3"]) -> Float[Array, "... 3 3"]:
    """hat(v) = [[0, -v3, v2], [v3, 0, -v1], [-v2, v1, 0]], so hat(v) w = v × w."""
    v = jnp.asarray(v)
    v1, v2, v3 = v[..., 0], v[..., 1], v[..., 2]
    z = jnp.zeros_like(v1)
    return jnp.stack(
        [
            jnp.stack([z, -v3, v2], axis=-1),
            jnp.stack([v3, z, -v1], axis=-1),
            jnp.stack([-v2, v1, z], axis=-1),
        ],
        axis=-2,
    )


def vee(A: Float[ArrayLike, "... 3 3"]) -> Float[Array, "... 3"]:
    """Inverse of ``hat`` on skew matrices: vee(hat(v)) = v."""
    A = jnp.asarray(A)
    return jnp.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], axis=-1)


def exp(w: Float[ArrayLike, "... 3"]) -> Float[Array, "... 3 3"]:
    """exp(hat(w)) by Rodrigues' formula, 1 + a hat(w) + b hat(w)², a = sin θ/θ,
    b = (1 − cos θ)/θ² = 2 sin²(θ/2)/θ², θ = |w|; by their series below θ² = 1e-8
    (smooth at w = 0, and accurate to round-off there)."""
    w = jnp.asarray(w)
    return jnp.eye(3, dtype=w.dtype) + expm1(w)


def expm1(w: Float[ArrayLike, "... 3"]) -> Float[Array, "... 3 3"]:
    """exp(hat(w)) − 1 = a hat(w) + b hat(w)² (``exp``), formed without the identity:
    R + R expm1(w) rounds R exp(hat(w)) once, relative to R, however small w is."""
    w = jnp.asarray(w)
    theta2 = jnp.sum(w * w, axis=-1)[..., None, None]
    small = theta2 < 1e-8
    theta = jnp.sqrt(jnp.where(small, 1.0, theta2))
    a = jnp.where(small, 1 - theta2 / 6, jnp.sin(theta) / theta)
    half = jnp.sin(0.5 * theta) / theta  # b = 2 sin²(θ/2)/θ²: no cancellation in 1 − cos θ
    b = jnp.where(small, 0.5 - theta2 / 24, 2.0 * half * half)
    W = hat(w)
    return a * W + b * (W @ W)


def dexpinv(u: Float[ArrayLike, "... 3"], v: Float[ArrayLike, "... 3"]) -> Float[Array, "... 3"]:
    """dexp_u⁻¹(v) = Σ_k B_k/k! ad_u^k v on so(3) ≅ R³ (ad_u v = u × v), in closed form:
    v − ½ u × v + c(θ) u × (u × v), c = (1 − (θ/2) cot(θ/2))/θ² (its series below θ² =
    1e-4: 1/12 + θ²/720 + θ⁴/30240).  Iserles, Munthe-Kaas, Nørsett, Zanna, Acta
    Numerica 9 (2000) 215, §2.3 and (B.10)."""
    u, v = jnp.asarray(u), jnp.asarray(v)
    theta2 = jnp.sum(u * u, axis=-1)[..., None]
    small = theta2 < 1e-4
    t2 = jnp.where(small, 1.0, theta2)
    half = 0.5 * jnp.sqrt(t2)
    c = jnp.where(small, 1 / 12 + theta2 / 720 + theta2 * theta2 / 30240,
                  (1 - half * jnp.cos(half) / jnp.sin(half)) / t2)  # fmt: skip
    uv = jnp.cross(u, v)
    return v - 0.5 * uv + c * jnp.cross(u, uv)


def quaternion(R: Float[ArrayLike, "... 3 3"]) -> Float[Array, "... 4"]:
    """A quaternion q = (w, u) of the rotation R, not normalized (Shepperd's method: of
    4w², 4u_i², the candidate 1 + tr R or 1 + 2R_ii − tr R that is largest is the stable
    one, and scaling by it leaves no square root).  ``rotate`` accepts it as it is."""
    R = jnp.asarray(R)
    r = [[R[..., i, j] for j in range(3)] for i in range(3)]
    tr = r[0][0] + r[1][1] + r[2][2]
    a, b, c = r[2][1] - r[1][2], r[0][2] - r[2][0], r[1][0] - r[0][1]  # 4w u
    d, e, f = r[0][1] + r[1][0], r[0][2] + r[2][0], r[1][2] + r[2][1]  # 4u_i u_j
    candidates = jnp.stack(
        [
            jnp.stack([1.0 + tr, a, b, c], axis=-1),
            jnp.stack([a, 1.0 + 2.0 * r[0][0] - tr, d, e], axis=-1),
            jnp.stack([b, d, 1.0 + 2.0 * r[1][1] - tr, f], axis=-1),
            jnp.stack([c, e, f, 1.0 + 2.0 * r[2][2] - tr], axis=-1),
        ],
        axis=-2,
    )
    pivots = jnp.stack([tr, r[0][0], r[1][1], r[2][2]], axis=-1)
    best = jnp.argmax(pivots, axis=-1)
    return jnp.take_along_axis(candidates, best[..., None, None], axis=-2)[..., 0, :]


def rotate(q: Float[Array, "... 4"], v: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
    """R(q) v for a quaternion q = (w, u) of any non-zero size:
    ((w² − |u|²) v + 2 (u·v) u + 2w u × v) / |q|², a rotation in exact arithmetic for
    every q, whose rounding is that of this formula (no fixed bias from a rounded unit q:
    repeated rotations keep |v| and v·v' to round-off that does not add up)."""
    w, u = q[..., :1], q[..., 1:]
    uu = jnp.sum(u * u, axis=-1, keepdims=True)
    out = (w * w - uu) * v + 2.0 * jnp.sum(u * v, -1, keepdims=True) * u + 2.0 * w * jnp.cross(u, v)
    return out / (w * w + uu)


def compose(p: Float[Array, "... 4"], q: Float[Array, "... 4"]) -> Float[Array, "... 4"]:
    """The Hamilton product p ⊗ q: R(p ⊗ q) = R(p) R(q) (q acts first)."""
    w1, u1, w2, u2 = p[..., :1], p[..., 1:], q[..., :1], q[..., 1:]
    w = w1 * w2 - jnp.sum(u1 * u2, axis=-1, keepdims=True)
    return jnp.concatenate([w, w1 * u2 + w2 * u1 + jnp.cross(u1, u2)], axis=-1)
