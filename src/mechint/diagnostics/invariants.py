"""Errors of a trajectory's invariants against their initial values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mechint._compiled import compiled
from mechint.maps import innermost
from mechint.systems.base import System


def _errors(values: dict, relative: bool, scales: dict | None = None) -> dict[str, np.ndarray]:
    first = {k: np.asarray(v)[..., :1] for k, v in values.items()}
    scales = None if scales is None else {k: np.asarray(v)[..., :1] for k, v in scales.items()}
    return errors(values, first, relative, scales)


def errors(values: dict, reference: dict, relative: bool = True,
           scales: dict | None = None) -> dict[str, np.ndarray]:  # fmt: skip
    """|I − I_ref| (relative to |I_ref| unless ``relative=False``, or to the size of the
    terms I sums where ``scales`` gives it and it is larger: ``System.invariant_scales``
    at the reference state; |I_ref| = 0 with no scale counting as 1) for every invariant
    in both ``values`` and ``reference`` (arrays that broadcast): the one home of how
    mechint measures an invariant's error (diagnostics, and the drift summary of a
    streamed run, ``runfile``)."""
    out = {}
    with np.errstate(invalid="ignore", over="ignore"):
        for name, v in values.items():
            if name not in reference:
                continue
            v, ref = np.asarray(v, dtype=np.float64), np.asarray(reference[name], np.float64)
            err = np.abs(v - ref)
            if relative:
                size = np.abs(ref)
                if scales and name in scales:
                    size = np.maximum(size, np.asarray(scales[name], np.float64))
                err = err / np.where(size > 0, size, 1.0)
            out[name] = err
    return out


def scales_at(system, x) -> dict[str, np.ndarray]:
    """``system.invariant_scales`` of states x (any leading axes; float64), on the host."""
    if type(system).invariant_scales is System.invariant_scales:
        return {}
    return compiled(_scales64, system, x)


def _scales64(system, x) -> dict:
    return _float64(system).invariant_scales(_float64(x))


def _float64(tree):
    return jax.tree.map(lambda a: jnp.asarray(a, dtype=jnp.float64), tree)


def invariant_errors(system, trajectory, *, relative: bool = True) -> dict[str, np.ndarray]:
    """|I(x_k) − I(x_0)| (relative to |I(x_0)| unless ``relative=False``) for every
    invariant of ``system``, over the saved samples (per batch member).  The invariants
    are evaluated in float64 (float32 runs included)."""
    values = compiled(_invariants64, system, trajectory.x)
    return _errors(values, relative, scales_at(system, trajectory.x))


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
    return _errors(values, relative, scales_at(trajectory.system, trajectory.x))
