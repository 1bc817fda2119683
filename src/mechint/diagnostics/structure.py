r"""Structural defects of a one-step map at a state, with DΦ from ``jax.jacfwd``.

The map is written in the system's coordinates z (``system.coordinates`` /
``from_coordinates``: the state itself for vectors, independent entries for matrices),
where ``system.poisson_tensor`` is given.  Forward mode differentiates through implicit
solves (Newton loops), so every integrator can be measured.

- ``poisson_defect``: max |DΦ(z) Π(z) DΦ(z)ᵀ − Π(Φ(z))|  (0 for a Poisson map);
- ``symplectic_defect``: max |DΦᵀ 𝕁 DΦ − 𝕁| for canonical systems (Π = 𝕁 constant).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mechint.errors import UnsupportedError


def _map_in_coordinates(system, integrator, x, h):
    for attr in ("coordinates", "from_coordinates", "poisson_tensor"):
        if not callable(getattr(system, attr, None)):
            raise UnsupportedError(
                "system", f"{type(system).__name__} has no {attr}, so its structure is unknown"
            )
    integrator.check(system)
    z = system.coordinates(jax.tree.map(jnp.asarray, x))

    def phi(z):
        return system.coordinates(integrator.step(system, system.from_coordinates(z), h)[0])

    return z, phi


def jacobian(system, integrator, x, h):
    """(z, Φ(z), DΦ(z)) of one step in the system's coordinates."""
    z, phi = _map_in_coordinates(system, integrator, x, h)
    return z, phi(z), jax.jacfwd(phi)(z)


def poisson_defect(system, integrator, x, h) -> float:
    """max |DΦ Π(x) DΦᵀ − Π(Φ(x))| for one step of size h from the state x."""
    z, z1, D = jacobian(system, integrator, x, h)
    lhs = D @ system.poisson_tensor(system.from_coordinates(z)) @ D.T
    rhs = system.poisson_tensor(system.from_coordinates(z1))
    return float(jnp.max(jnp.abs(lhs - rhs)))


def symplectic_defect(system, integrator, x, h) -> float:
    """max |DΦᵀ 𝕁 DΦ − 𝕁| for one step of size h (canonical systems)."""
    if not hasattr(system, "dof"):
        raise UnsupportedError(
            "system",
            f"{type(system).__name__} is not canonical; measure poisson_defect instead",
        )
    z, _, D = jacobian(system, integrator, x, h)
    Jc = system.poisson_tensor(system.from_coordinates(z))
    return float(jnp.max(jnp.abs(D.T @ Jc @ D - Jc)))
