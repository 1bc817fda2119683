"""What every system provides, and the state validation shared by all of them.

A system is an immutable JAX pytree (parameters are leaves, so one compiled run serves
every parameter value).  It provides

- ``name`` (CLI name), ``state_fields``: ``((var, dims), ...)`` naming the state leaves
  and their component dimensions (used by io), ``state_shape``: the shape of each leaf;
- ``vector_field(x)``, ``hamiltonian(x)``, ``casimirs(x) -> dict``,
  ``invariants(x) -> dict`` (Hamiltonian, Casimirs and other first integrals),
  ``quadratic_invariants`` (names of invariants quadratic in x: kept by implicit midpoint),
  ``poisson_tensor(x)``;
- ``parameters() -> dict`` (plain floats/lists, for metadata) and ``validate_state``.

Every method works on batched states (leading axes) as well.
"""

from __future__ import annotations

import numpy as np

from mechint._validate import real_array
from mechint.errors import InputError


def validate_vector_state(name: str, value, dim: int) -> tuple[np.ndarray, bool]:
    """A state in R^dim or a batch (B, dim) of them; returns (array, batched)."""
    arr = real_array(name, value)
    if arr.ndim == 1 and arr.shape[0] == dim:
        return arr, False
    if arr.ndim == 2 and arr.shape[1] == dim and arr.shape[0] >= 1:
        return arr, True
    raise InputError(
        name,
        f"expected {dim} numbers (or a batch of shape (B, {dim})), got shape {arr.shape}",
    )


def state_pair(name: str, value, first, second) -> tuple[tuple, bool]:
    """A structured state (X, Y): both validated, batched alike."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        pair = f"({first[0]}, {second[0]})"
        raise InputError(name, f"expected a pair {pair}, got {type(value).__name__}")
    X, bx = first[1](f"{name}[0] ({first[0]})", value[0])
    Y, by = second[1](f"{name}[1] ({second[0]})", value[1])
    if bx != by or (bx and X.shape[0] != Y.shape[0]):
        raise InputError(
            name,
            f"{first[0]} and {second[0]} must both be single states or batches of one size, "
            f"got shapes {X.shape} and {Y.shape}",
        )
    return (X, Y), bx
