r"""Structural defects of a one-step map at a state, with DΦ from ``jax.jacfwd``.

The map is written in the system's coordinates z (``PoissonSystem.coordinates`` /
``from_coordinates``: the state itself for vectors, independent entries for matrices),
where ``poisson_tensor`` is given.  Forward mode differentiates through implicit solves
(Newton loops), so every integrator can be measured.  The Jacobians are compiled once per
(system type, integrator) with the system traced, and vmapped over step sizes
(``onestep.jacobians``); a failed step raises ``StepFailure``.

- ``poisson_defect``: max |DΦ(z) Π(z) DΦ(z)ᵀ − Π(Φ(z))|  (0 for a Poisson map);
- ``symplectic_defect``: max |DΦᵀ 𝕁 DΦ − 𝕁| for canonical systems (Π = 𝕁 constant),
  each entry relative to max(1, (|DΦ|ᵀ|𝕁||DΦ|)) (its round-off's scale); for a
  constrained system (``systems.Constrained``) on its manifold T*Q: max |(DΦU)ᵀ 𝕁 (DΦU)
  − Uᵀ𝕁U| with U an orthonormal basis of the tangent space of T*Q at the state (𝕁
  restricted to T*Q, the form the constrained flow keeps).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mechint._compiled import compiled
from mechint.diagnostics.onestep import jacobians, raise_if_failed
from mechint.errors import UnsupportedError
from mechint.maps import Integrator, StepStatus
from mechint.systems.base import PoissonSystem, System
from mechint.systems.canonical import Canonical
from mechint.systems.constrained import Constrained


def _poisson(system: System) -> PoissonSystem:
    if not isinstance(system, PoissonSystem):
        raise UnsupportedError(
            "system",
            f"{type(system).__name__} has no Poisson tensor in coordinates, so its structure "
            "is unknown",
        )
    return system


def jacobian(system: System, integrator: Integrator, x, h):
    """(z, Φ(z), DΦ(z)) of one step in the system's coordinates."""
    z, z1, D, st = jacobians(_poisson(system), integrator, x, [h])
    raise_if_failed([h], st)
    return z, z1[0], D[0]


def poisson_defects(system: System, integrator: Integrator, x, hs) -> tuple[np.ndarray, StepStatus]:
    """max |DΦ Π(x) DΦᵀ − Π(Φ(x))| for each h in ``hs`` (NaN where the step failed)."""
    if isinstance(system, Constrained) or getattr(system, "joints", ()):
        raise UnsupportedError(
            "system",
            "a constrained system's structure is the canonical form restricted to its "
            "manifold, not a Poisson tensor of the ambient space",
            "measure symplectic_defect instead (it restricts to the manifold)",
        )
    system = _poisson(system)
    z, z1, D, st = jacobians(system, integrator, x, hs)
    values = np.asarray(compiled(_poisson_residual, system, z, z1, D))
    return np.where(np.asarray(st.ok), values, np.nan), st


def _poisson_residual(system, z, z1, D):
    Pi = system.poisson_tensor(system.from_coordinates(z))
    lhs = D @ Pi @ jnp.swapaxes(D, -1, -2)
    rhs = system.poisson_tensor(system.from_coordinates(z1))
    return jnp.max(jnp.abs(lhs - rhs), axis=(-2, -1))


def _symplectic_residual(system, z, D):
    """max over entries of |DΦᵀ𝕁DΦ − 𝕁| over max(1, the same sum of |products|): the
    round-off of an entry is relative to the terms it sums, which a badly scaled state
    makes large (dq/dp = h/m for a body of mass 1e-8).  On a constrained system, of
    (DΦU)ᵀ𝕁(DΦU) − Uᵀ𝕁U for U the tangent space of its manifold at z."""
    x = system.from_coordinates(z)
    Jc = target = system.poisson_tensor(x)
    if isinstance(system, Constrained):
        U = system.tangent_basis(x)
        D, target = D @ U, U.T @ Jc @ U
    A = jnp.abs(D)
    size = jnp.swapaxes(A, -1, -2) @ jnp.abs(Jc) @ A
    defect = jnp.abs(jnp.swapaxes(D, -1, -2) @ Jc @ D - target) / jnp.maximum(1.0, size)
    return jnp.max(defect, axis=(-2, -1))


def symplectic_defects(
    system: System, integrator: Integrator, x, hs
) -> tuple[np.ndarray, StepStatus]:
    """max |DΦᵀ 𝕁 DΦ − 𝕁| for each h in ``hs``, each entry relative to the size of the
    products it sums where that exceeds 1 (canonical systems; NaN where it failed).
    Rigid bodies with joints are measured in their matrix variables (``MatrixBodies``),
    where the map is canonical on the constraint manifold."""
    if getattr(system, "joints", ()):
        from mechint.systems.matrix_bodies import InMatrixVariables, MatrixBodies

        matrix = MatrixBodies(system)  # type: ignore[arg-type]
        x = matrix.from_bodies(system.validate_state(x)[0])
        return symplectic_defects(matrix, InMatrixVariables(integrator), x, hs)
    if not isinstance(system, Canonical | Constrained):
        raise UnsupportedError(
            "system",
            f"{type(system).__name__} is not canonical; measure poisson_defect instead",
        )
    if isinstance(system, Constrained):  # the tangent space is that of T*Q at x
        system.validate_state(x)
    z, _, D, st = jacobians(system, integrator, x, hs)
    values = np.asarray(compiled(_symplectic_residual, system, z, D))
    return np.where(np.asarray(st.ok), values, np.nan), st


def poisson_defect(system: System, integrator: Integrator, x, h) -> float:
    """max |DΦ Π(x) DΦᵀ − Π(Φ(x))| for one step of size h from the state x."""
    values, st = poisson_defects(system, integrator, x, [h])
    raise_if_failed([h], st)
    return float(values[0])


def symplectic_defect(system: System, integrator: Integrator, x, h) -> float:
    """max |DΦᵀ 𝕁 DΦ − 𝕁| for one step of size h (canonical systems)."""
    values, st = symplectic_defects(system, integrator, x, [h])
    raise_if_failed([h], st)
    return float(values[0])


def measure_defect(system: System, integrator: Integrator, x, h, density) -> float:
    """|det DΦ(z) ρ(Φ(x)) − ρ(x)| / |ρ(x)| for one step of size h from the state x: zero
    exactly when the measure ρ(z) dz (z the system's coordinates) is kept by the map at
    x.  ``density``: a function of the state (one sample) returning ρ, e.g.
    ``Kahan().invariant_density(system, h)``.  Fit its exponent over several h with
    ``defect_exponent`` as for the other one-step defects."""
    if not callable(density):
        raise UnsupportedError("density", f"must be a function of the state, got {density!r}")
    z, z1, D = jacobian(system, integrator, x, h)
    system = _poisson(system)
    before = float(np.asarray(density(system.from_coordinates(jnp.asarray(z)))))
    after = float(np.asarray(density(system.from_coordinates(jnp.asarray(z1)))))
    if not (np.isfinite(before) and np.isfinite(after)):
        raise UnsupportedError("density", f"is not finite at the step's ends ({before}, {after})")
    value = abs(float(np.linalg.det(D)) * after - before)
    return value / abs(before) if before != 0.0 else value
