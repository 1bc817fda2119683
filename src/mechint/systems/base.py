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
