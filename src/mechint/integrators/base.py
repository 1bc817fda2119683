"""What every integrator provides.

An integrator is a frozen (hashable) dataclass: its fields are settings, so the driver
can use it as a static argument and compile once per (system type, integrator).  It has

- ``name`` (CLI name) and ``traits`` (declared properties, read by the tests);
- ``check(system)``: raise ``UnsupportedError`` before any step if it cannot serve it;
- ``step(system, x, h) -> (x_next, StepStatus)``: one pure step x_k ↦ Φ_h(x_k);
- ``preserved(system, x, h) -> dict``: the quantities this map keeps exactly on this
  system (to round-off), evaluated at x;
- ``failure``: a phrase saying what a failed status means.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from mechint.errors import UnsupportedError


class StepStatus(NamedTuple):
    ok: Bool[Array, ""]
    residual: Float[Array, ""]


def ok_status(x) -> StepStatus:
    """Status of an explicit step: fails only if the new state is not finite."""
    import jax

    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in jax.tree.leaves(x)]))
    return StepStatus(finite, jnp.where(finite, 0.0, jnp.inf))


@dataclasses.dataclass(frozen=True)
class Traits:
    """Declared properties of a one-step map.

    ``order``: classical order; ``symmetric``: Φ_{-h} = Φ_h⁻¹; ``symplectic``: for canonical
    systems; ``poisson``: for the system's own Poisson tensor in general; ``explicit``.
    Which invariants are kept exactly depends on the system: see ``preserved``.
    """

    order: int
    symmetric: bool
    explicit: bool
    symplectic: bool = False
    poisson: bool = False


def require(integrator, system, supported: tuple[type, ...]) -> None:
    """Raise ``UnsupportedError`` unless ``system`` is an instance of one of ``supported``."""
    if not isinstance(system, supported):
        names = ", ".join(cls.__name__ for cls in supported)
        raise UnsupportedError(
            "integrator",
            f"{type(integrator).__name__} cannot advance {type(system).__name__}",
            f"it serves: {names}",
        )


def require_vector_field(integrator, system) -> None:
    """Generic integrators need ``system.vector_field``."""
    if not callable(getattr(system, "vector_field", None)):
        raise UnsupportedError(
            "system",
            f"{type(system).__name__} has no vector_field, so "
            f"{type(integrator).__name__} cannot advance it",
        )
