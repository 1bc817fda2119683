"""Errors of a trajectory's invariants against their initial values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechint._compiled import compiled
from mechint.maps import innermost


def _errors(values: dict, relative: bool) -> dict[str, np.ndarray]:
    return errors(values, {k: np.asarray(v)[..., :1] for k, v in values.items()}, relative)


def errors(values: dict, reference: dict, relative: bool = True) -> dict[str, np.ndarray]:
    """|I − I_ref| (relative to |I_ref| unless ``relative=False``, |I_ref| = 0 counting
    as 1) for every invariant in both ``values`` and ``reference`` (arrays that
    broadcast): the one home of how mechint measures an invariant's error (diagnostics,
    and the drift summary of a streamed run, ``runfile``)."""
    out = {}
    with np.errstate(invalid="ignore", over="ignore"):
        for name, v in values.items():
            if name not in reference:
                continue
            v, ref = np.asarray(v, dtype=np.float64), np.asarray(reference[name], np.float64)
            err = np.abs(v - ref)
            if relative:
                err = err / np.where(np.abs(ref) > 0, np.abs(ref), 1.0)
            out[name] = err
    return out


def _float64(tree):
    return jax.tree.map(lambda a: jnp.asarray(a, dtype=jnp.float64), tree)


def invariant_errors(system, trajectory, *, relative: bool = True) -> dict[str, np.ndarray]:
    """|I(x_k) − I(x_0)| (relative to |I(x_0)| unless ``relative=False``) for every
    invariant of ``system``, over the saved samples (per batch member).  The invariants
    are evaluated in float64 (float32 runs included)."""
    return _errors(compiled(_invariants64, system, trajectory.x), relative)


def _invariants64(system, x) -> dict:
    return _float64(system).invariants(_float64(x))


def _preserved64(integrator, system, x, h) -> dict:
    return integrator.preserved(_float64(system), _float64(x), h)


def preserved_errors(trajectory, *, relative: bool = True) -> dict[str, np.ndarray]:
    """The same for the quantities the run's integrator claims to keep exactly (e.g. the
    Kahan integrals K_k at the run's h).  A compensated run's map keeps what its base
    keeps, on the trajectory's states (x without the correction)."""
    values = compiled(
        _preserved64, trajectory.system, trajectory.x, trajectory.h,
        static=(innermost(trajectory.integrator),),
    )  # fmt: skip
    return _errors(values, relative)
