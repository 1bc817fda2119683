"""Figures (matplotlib, object API only; never imported by the core)."""

from mechint.plot.figures import (
    FIGURE_FORMATS,
    invariant_error_figure,
    momentum_sphere_figure,
    section_figure,
    stability_figure,
    trajectory_figure,
)

__all__ = [
    "FIGURE_FORMATS",
    "invariant_error_figure",
    "momentum_sphere_figure",
    "section_figure",
    "stability_figure",
    "trajectory_figure",
]
