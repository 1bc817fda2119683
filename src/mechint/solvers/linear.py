"""Dense linear solves, fast for the small systems of one step (vmap-friendly).

For n <= ``UNROLL_MAX`` the solve is Gauss–Jordan elimination with partial pivoting
written as n unrolled, element-wise array operations (the pivot search and the row swap
as chains of selects: no gather, no argmax, which XLA compiles several times slower): a
LAPACK call costs about 350 ns however small the system, and under ``vmap`` a batch of
small systems becomes a few fused vector operations instead of one call per member.
Larger systems use ``jnp.linalg.solve`` (LAPACK / cuSOLVER).  Measured on the 2-core CPU
(``benchmarks/solve.py``: ns a solve, one solve a step in a scan of 10⁴ / a vmapped batch
of 10⁵):

    n           2        3        4        5        6        8
    unrolled   22/3     24/21   162/172  269/402  441/662  621/1480
    LAPACK    337/160  363/205  373/257  413/493  422/560  449/752

Above n = 5 the unrolled form loses in batches, and its program (which grows with n²)
compiles slower than LAPACK's one call.
"""

from __future__ import annotations

import functools
import itertools
import operator

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

UNROLL_MAX = 5
UNROLL_MAX_NO_PIVOT = 6
MATMUL_UNROLL_MAX = 10


def matmul(A: Float[Array, "... n k"], B: Float[Array, "... k m"]) -> Float[Array, "... n m"]:
    """A @ B for the small matrices of one step, as k element-wise products (unrolled).

    Under ``vmap`` XLA's CPU backend turns ``A @ B`` of a batch of small matrices into
    one tiny GEMM per member: 4×4, measured on the 2-core CPU, batch 10⁴ (ns a member
    for A B A): 820 with ``@``, 19 unrolled; 6×6: 819 and 65; 3×3: 20 and 7.  Larger
    inner dimensions (k > ``MATMUL_UNROLL_MAX``) use ``@``.
    """
    k = A.shape[-1]
    if k > MATMUL_UNROLL_MAX:
        return A @ B
    return functools.reduce(
        operator.add, (A[..., :, i : i + 1] * B[..., i : i + 1, :] for i in range(k))
    )


def solve(
    A: Float[Array, "... n n"],
    b: Float[Array, "... n k"] | Float[Array, "... n"],
    *,
    pivot: bool = True,
):
    """x with A x = b (b a vector or a matrix of right-hand sides); no error under jit:
    a singular A gives non-finite entries, which callers turn into a failed status.

    ``pivot=False`` skips row exchanges: safe (and faster) when A's symmetric part is
    positive definite, e.g. I − X/2 with X skew in the Cayley map, or A close to a
    positive diagonal; it is unrolled up to n = ``UNROLL_MAX_NO_PIVOT`` (6×6, batch 10⁴:
    95 ns a member, against 340 with pivoting and 390 by LAPACK; 10×10: 2500 against
    LAPACK's 740)."""
    n = A.shape[-1]
    vector = b.ndim == A.ndim - 1
    if n > (UNROLL_MAX if pivot else UNROLL_MAX_NO_PIVOT):
        if vector:
            return jnp.linalg.solve(A, b[..., None])[..., 0]
        return jnp.linalg.solve(A, b)
    B = b[..., None] if vector else b
    idx = jnp.arange(n)[:, None]
    for i in range(n):
        if pivot and i < n - 1:
            # partial pivoting: r = the first row k >= i with the largest |A[k, i]| ...
            best = jnp.abs(A[..., i : i + 1, i : i + 1])
            r = jnp.full(best.shape, i)
            for k in range(i + 1, n):
                candidate = jnp.abs(A[..., k : k + 1, i : i + 1])
                better = candidate > best
                r = jnp.where(better, k, r)
                best = jnp.where(better, candidate, best)
            # ... and rows i and r exchanged (per batch member)
            A, B = _swap(A, i, r), _swap(B, i, r)
        diag = A[..., i : i + 1, i : i + 1]
        rowA, rowB = A[..., i : i + 1, :] / diag, B[..., i : i + 1, :] / diag
        factor = A[..., :, i : i + 1]
        is_i = idx == i
        A = jnp.where(is_i, rowA, A - factor * rowA)
        B = jnp.where(is_i, rowB, B - factor * rowB)
    return B[..., 0] if vector else B


def _swap(X, i: int, r):
    """Swap row i with row r >= i (shape (..., 1, 1), per batch member) of X (..., n, k)."""
    row_i = X[..., i : i + 1, :]
    row_r = row_i
    for k in range(i + 1, X.shape[-2]):
        row_r = jnp.where(r == k, X[..., k : k + 1, :], row_r)
    idx = jnp.arange(X.shape[-2])[:, None]
    return jnp.where(idx == i, row_r, jnp.where(idx == r, row_i, X))


def inverse(A: Float[Array, "... n n"]) -> Float[Array, "... n n"]:
    """A⁻¹ by ``solve``."""
    return solve(A, jnp.broadcast_to(jnp.eye(A.shape[-1], dtype=A.dtype), A.shape))


MINORS_MAX = 4


def _minor(Y: Array, rows: tuple[int, ...], cols: tuple[int, ...]) -> Array:
    """det Y[rows, cols] by Laplace expansion along the first row: every term takes one
    entry from each row, so a scaled row scales every term alike (no cancellation
    between rows of different sizes)."""
    if len(rows) == 1:
        return Y[..., rows[0], cols[0]]
    terms = [
        Y[..., rows[0], col] * _minor(Y, rows[1:], cols[:pos] + cols[pos + 1 :])
        for pos, col in enumerate(cols)
    ]
    out = terms[0]
    for pos, term in enumerate(terms[1:], start=1):
        out = out - term if pos % 2 else out + term
    return out


def _characteristic(Y):
    """The coefficients e_0 = 1, e_1, ..., e_n of det(sI + Y) = Σ e_k s^{n−k}, and whether
    they are trusted.

    n <= ``MINORS_MAX``: e_k is the sum of the k×k principal minors (Laplace), accurate
    however differently the rows of Y are scaled (Y = J⁻¹W with a near-flat body has
    eigenvalues 1e10 apart).  Larger n: Newton's identities from the power sums tr Y^k,
    which cancel when the eigenvalues are far apart: where a coefficient is smaller than
    10³ ulps of the terms it came from, it is not trusted.
    """
    n = Y.shape[-1]
    one = jnp.ones(Y.shape[:-2], dtype=Y.dtype)
    if n <= MINORS_MAX:
        e = [one]
        for k in range(1, n + 1):
            minors = [_minor(Y, rows, rows) for rows in itertools.combinations(range(n), k)]
            total = minors[0]
            for m in minors[1:]:
                total = total + m
            e.append(total)
        return e, jnp.ones(Y.shape[:-2], dtype=bool)
    power, p = Y, []
    for k in range(1, n + 1):
        power = Y if k == 1 else matmul(power, Y)
        p.append(jnp.trace(power, axis1=-2, axis2=-1))
    e, trusted = [one], jnp.ones(Y.shape[:-2], dtype=bool)
    tiny = 1e3 * jnp.finfo(Y.dtype).eps
    for k in range(1, n + 1):
        terms = [((-1) ** (i - 1)) * e[k - i] * p[i - 1] for i in range(1, k + 1)]
        e.append(functools.reduce(operator.add, terms) / k)
        size = functools.reduce(operator.add, [jnp.abs(t) for t in terms]) / k
        trusted = trusted & (jnp.abs(e[k]) > tiny * size)
    return e, trusted


def positive_stable(Y: Float[Array, "... n n"]):
    """True where every eigenvalue of Y has a positive real part (no eigenvalues computed).

    The characteristic polynomial det(sI + Y) = Σ e_k s^{n−k} (``_characteristic``) must
    be Hurwitz: every entry of the first column of its Routh array positive.  Eigenvalues
    within round-off of the imaginary axis may be reported either way; where the
    coefficients cannot be trusted (n > ``MINORS_MAX`` with eigenvalues far apart) the
    answer is False: a failure reported, never a wrong branch accepted.
    """
    n = Y.shape[-1]
    # a yes/no answer has no derivative: none is carried (smaller programs under jax.grad)
    e, ok = _characteristic(jax.lax.stop_gradient(Y))
    zero = jnp.zeros_like(e[0])
    width = n // 2 + 1
    row0 = [e[j] if j <= n else zero for j in range(0, 2 * width, 2)]
    row1 = [e[j] if j <= n else zero for j in range(1, 2 * width + 1, 2)]
    ok = ok & (row0[0] > 0) & (row1[0] > 0)
    for _ in range(n - 1):
        row2 = [
            (row1[0] * row0[j + 1] - row0[0] * row1[j + 1]) / row1[0] for j in range(width - 1)
        ] + [zero]
        ok = ok & (row2[0] > 0)
        row0, row1 = row1, row2
    return ok
