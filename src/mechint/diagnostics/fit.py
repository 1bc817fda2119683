"""Fitting y ≈ C h^p on a log-log scale, ignoring points at the round-off floor."""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class PowerLaw:
    exponent: float
    constant: float
    used: np.ndarray  # boolean mask of the points used in the fit


def fit_power_law(h, y, *, floor: float = 0.0, min_points: int = 3) -> PowerLaw:
    """Least-squares slope of log y against log h over the points with y > ``floor``.

    Raises ValueError when fewer than ``min_points`` points lie above the floor.
    """
    h, y = np.asarray(h, dtype=float), np.asarray(y, dtype=float)
    used = np.isfinite(y) & (y > floor)
    if used.sum() < min_points:
        raise ValueError(
            f"only {int(used.sum())} of {y.size} points lie above the floor {floor:g}; "
            f"need {min_points}: use larger step sizes"
        )
    p, logc = np.polyfit(np.log(h[used]), np.log(y[used]), 1)
    return PowerLaw(float(p), float(np.exp(logc)), used)
