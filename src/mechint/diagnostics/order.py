"""Observed order of convergence, and drift of invariants along a trajectory."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from mechint.diagnostics.fit import fit_power_law
from mechint.diagnostics.invariants import invariant_errors
from mechint.errors import InputError
from mechint.simulate import simulate
from mechint.systems.base import PoissonSystem, System


def flatten_state(system: System, x) -> np.ndarray:
    """The state as one vector: the system's coordinates, or its leaves raveled."""
    x = jax.tree.map(jnp.asarray, x)
    if isinstance(system, PoissonSystem):
        return np.asarray(system.coordinates(x))
    return np.concatenate([np.ravel(np.asarray(a)) for a in jax.tree.leaves(x)])


@dataclasses.dataclass(frozen=True)
class OrderFit:
    """Global errors at T over step sizes, and the fitted order over the points used."""

    h: np.ndarray
    error: np.ndarray
    order: float
    constant: float
    used: np.ndarray  # which points lay above the round-off floor


def observed_order(
    system, integrator, x0, T: float, hs, reference, *, floor: float | None = None
) -> OrderFit:
    """Fit p in max|x_N − x(T)| ≈ C h^p, N = T/h, ignoring errors at the round-off floor.

    ``reference``: the exact state at T, or a function T ↦ state (e.g. from
    ``mechint.exact``).  Each T/h must be a whole number.  ``floor`` defaults to
    1e-12 × max(1, |x(T)|).  At least 3 points must lie above it.  A failed step raises
    ``StepFailure`` (no error is computed from it).
    """
    hs = np.asarray(hs, dtype=float)
    T = float(T)
    steps = np.rint(T / hs).astype(int)
    if np.any(steps < 1) or np.any(np.abs(steps * hs - T) > 1e-9 * abs(T)):
        raise InputError("hs", f"T/h must be a whole number for every h, got T/h = {T / hs}")
    ref = reference(T) if callable(reference) else reference
    ref = flatten_state(system, ref)
    if floor is None:
        floor = 1e-12 * max(1.0, float(np.max(np.abs(ref))))
    errors = []
    for h, n in zip(hs, steps, strict=True):
        traj = simulate(system, integrator, x0, float(h), int(n), int(n))
        last = jax.tree.map(lambda a: a[-1], traj.x)
        errors.append(float(np.max(np.abs(flatten_state(system, last) - ref))))
    errors = np.asarray(errors)
    fit = fit_power_law(hs, errors, floor=floor)
    return OrderFit(hs, errors, fit.exponent, fit.constant, fit.used)


@dataclasses.dataclass(frozen=True)
class InvariantDrift:
    """An invariant's relative error over a run: the fitted linear trend over the whole
    run (slope × duration) against the band (largest error).  ``bounded`` when the
    trend is less than half the band."""

    slope: np.ndarray
    trend: np.ndarray
    band: np.ndarray

    @property
    def bounded(self) -> np.ndarray:
        return np.abs(self.trend) < 0.5 * self.band


def drift(system, trajectory) -> dict[str, InvariantDrift]:
    """For each invariant: linear slope of its relative error against time, the trend over
    the run, and the band (per batch member for a batch)."""
    t = np.asarray(trajectory.t, dtype=float)
    duration = t[-1] - t[0]
    out = {}
    for name, err in invariant_errors(system, trajectory).items():
        err = np.asarray(err, dtype=float)
        flat = err.reshape(-1, err.shape[-1]).T
        slope = np.polyfit(t, flat, 1)[0].reshape(err.shape[:-1])
        out[name] = InvariantDrift(slope, slope * duration, err.max(axis=-1))
    return out
