"""The small unrolled solves and the positive-stability test, against LAPACK."""

import jax.numpy as jnp
import numpy as np
import pytest

from mechint.solvers import solve
from mechint.solvers.linear import positive_stable


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9])
def test_solve_matches_lapack(n):
    rng = np.random.default_rng(n)
    A = rng.normal(size=(20, n, n)) + 2 * np.eye(n)
    b = rng.normal(size=(20, n))
    x = np.asarray(solve(jnp.asarray(A), jnp.asarray(b)))
    assert np.max(np.abs(np.einsum("bij,bj->bi", A, x) - b)) < 1e-12
    # pivoting matters: a zero leading entry
    P = np.roll(np.eye(n), 1, axis=0)
    y = np.asarray(solve(jnp.asarray(P), jnp.asarray(b[0])))
    assert np.allclose(P @ y, b[0], rtol=0, atol=1e-15)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 10])
def test_positive_stable_agrees_with_eigenvalues(n):
    rng = np.random.default_rng(10 + n)
    Y = rng.normal(size=(300, n, n)) + rng.uniform(-1, 3, size=(300, 1, 1)) * np.eye(n)
    re = np.linalg.eigvals(Y).real
    clear = np.min(np.abs(re), axis=-1) > 1e-6
    truth = np.all(re > 0, axis=-1)
    got = np.asarray(positive_stable(jnp.asarray(Y)))
    assert np.array_equal(got[clear], truth[clear])
    assert truth.any() and (~truth).any()


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_positive_stable_with_rows_scaled_far_apart(n):
    """Y = D W, D a positive diagonal spanning up to 1e12 (the near-flat body's J⁻¹W):
    up to n = 4 the answer is the eigenvalues' (the principal minors cannot cancel
    across rows); above, it is that answer or False, never a false True."""
    rng = np.random.default_rng(20 + n)
    batch = 400
    A = rng.normal(size=(batch, n, n)) * rng.uniform(0, 2, size=(batch, 1, 1))
    X = A - np.swapaxes(A, 1, 2)  # W = cay(X): rotations from small to large
    W = np.linalg.solve(np.eye(n) - X / 2, np.eye(n) + X / 2)
    D = 10.0 ** rng.uniform(-12, 0, size=(batch, n))
    Y = D[:, :, None] * W
    re = np.linalg.eigvals(Y).real
    scale = np.max(np.abs(np.linalg.eigvals(Y)), axis=-1)
    clear = np.min(np.abs(re), axis=-1) > 1e-9 * scale
    truth = np.all(re > 0, axis=-1)
    got = np.asarray(positive_stable(jnp.asarray(Y)))
    assert truth[clear].any() and (~truth[clear]).any()
    if n <= 4:
        assert np.array_equal(got[clear], truth[clear])
    else:
        assert not np.any(got & ~truth)
