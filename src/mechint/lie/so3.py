"""so(3) ≅ R³: the hat map hat(v) w = v × w and its inverse."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float


def hat(v: Float[Array, "... 3"]) -> Float[Array, "... 3 3"]:
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


def vee(A: Float[Array, "... 3 3"]) -> Float[Array, "... 3"]:
    """Inverse of ``hat`` on skew matrices: vee(hat(v)) = v."""
    A = jnp.asarray(A)
    return jnp.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], axis=-1)
