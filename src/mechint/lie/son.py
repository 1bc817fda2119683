"""so(n) and Symm(n): coordinates, commutators, the Cayley map, re-orthogonalization.

Coordinates (docs/math.md §3): a skew M ∈ so(n) is read by its entries M_jk, j < k, and a
symmetric P ∈ Symm(n) by P_jk, j ≤ k, both row by row (upper triangle).  For n = 3,
so_vee(hat(m)) = (M_12, M_13, M_23) = (−m3, m2, −m1).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint.solvers.linear import matmul, solve


def skew(A: Float[Array, "... n n"]) -> Float[Array, "... n n"]:
    """(A − Aᵀ)/2."""
    return 0.5 * (A - jnp.swapaxes(A, -1, -2))


def sym(A: Float[Array, "... n n"]) -> Float[Array, "... n n"]:
    """(A + Aᵀ)/2."""
    return 0.5 * (A + jnp.swapaxes(A, -1, -2))


def commutator(A: Float[Array, "... n n"], B: Float[Array, "... n n"]) -> Float[Array, "... n n"]:
    """[A, B] = AB − BA."""
    return A @ B - B @ A


def so_dim(n: int) -> int:
    """dim so(n) = n(n−1)/2."""
    return n * (n - 1) // 2


def sym_dim(n: int) -> int:
    """dim Symm(n) = n(n+1)/2."""
    return n * (n + 1) // 2


def so_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices (j, k), j < k, of the so(n) coordinates."""
    return np.triu_indices(n, 1)


def sym_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices (j, k), j ≤ k, of the Symm(n) coordinates."""
    return np.triu_indices(n, 0)


def so_vee(M: Float[Array, "... n n"]) -> Float[Array, "... d"]:
    """The coordinates M_jk, j < k, of a skew matrix."""
    j, k = so_index(M.shape[-1])
    return M[..., j, k]


def so_hat(v: Float[Array, "... d"], n: int) -> Float[Array, "... n n"]:
    """The skew n×n matrix with upper-triangle entries ``v`` (inverse of ``so_vee``)."""
    j, k = so_index(n)
    M = jnp.zeros((*v.shape[:-1], n, n), dtype=v.dtype)
    M = M.at[..., j, k].set(v)
    return M - jnp.swapaxes(M, -1, -2)


def sym_vee(P: Float[Array, "... n n"]) -> Float[Array, "... d"]:
    """The coordinates P_jk, j ≤ k, of a symmetric matrix."""
    j, k = sym_index(P.shape[-1])
    return P[..., j, k]


def sym_hat(v: Float[Array, "... d"], n: int) -> Float[Array, "... n n"]:
    """The symmetric n×n matrix with upper-triangle entries ``v`` (inverse of ``sym_vee``)."""
    j, k = sym_index(n)
    P = jnp.zeros((*v.shape[:-1], n, n), dtype=v.dtype)
    P = P.at[..., j, k].set(v)
    return P + jnp.swapaxes(P, -1, -2) - P * jnp.eye(n, dtype=v.dtype)


def cayley(X: Float[Array, "... n n"]) -> Float[Array, "... n n"]:
    """cay(X) = (I − X/2)⁻¹(I + X/2): maps so(n) into SO(n); cay(X) = I + X + X²/2 + O(X³)."""
    eye = jnp.eye(X.shape[-1], dtype=X.dtype)
    return solve(eye - 0.5 * X, eye + 0.5 * X, pivot=False)


def orthonormalize(g: Float[Array, "... n n"]) -> Float[Array, "... n n"]:
    """One Newton-Schulz step toward the polar factor: g(3I − gᵀg)/2.

    For g orthogonal up to δ = gᵀg − I it returns a matrix orthogonal up to O(δ²) and
    moves g by O(δ): it removes accumulated round-off and nothing else.
    """
    eye = jnp.eye(g.shape[-1], dtype=g.dtype)
    return 0.5 * matmul(g, 3.0 * eye - matmul(jnp.swapaxes(g, -1, -2), g))
