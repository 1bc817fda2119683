"""The figures of ``mechint run --plot`` and ``mechint demo``."""

from __future__ import annotations

import jax
import numpy as np
from matplotlib.figure import Figure

from mechint.diagnostics import invariant_errors, preserved_errors

FIGURE_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
_FLOOR = 1e-17  # exact zeros drawn at this level on log axes


def _log_positive(err):
    return np.maximum(np.asarray(err, dtype=float), _FLOOR)


def trajectory_figure(traj, member: int = 0) -> Figure:
    """State components over time and the relative errors of the invariants (log scale)."""
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax_x, ax_e = fig.subplots(1, 2)
    pick = (lambda a: a[member]) if traj.batched else (lambda a: a)
    for (name, _dims), leaf in zip(traj.system.state_fields, jax.tree.leaves(traj.x), strict=True):
        arr = pick(np.asarray(leaf)).reshape(len(traj.t), -1)
        for j in range(arr.shape[1]):
            ax_x.plot(traj.t, arr[:, j], lw=1, label=f"{name}{j + 1}")
    ax_x.set(xlabel="t", title="state")
    ax_x.legend(loc="upper right", fontsize=8)
    errs = {**invariant_errors(traj.system, traj), **preserved_errors(traj)}
    for name, err in errs.items():
        ax_e.semilogy(traj.t, _log_positive(pick(err)), lw=1, label=name)
    ax_e.set(xlabel="t", ylabel="relative error", title="invariants")
    if errs:
        ax_e.legend(loc="lower right", fontsize=8, ncols=2)
    else:
        ax_e.text(0.5, 0.5, "no known invariants", ha="center", transform=ax_e.transAxes)
    name = type(traj.integrator).__name__
    fig.suptitle(f"{traj.system!r} — {name}, h = {traj.h:g}, {traj.steps} steps")
    return fig


def momentum_sphere_figure(curves, points=None, title: str = "") -> Figure:
    """Curves on the momentum sphere |m| = const (intersections with energy ellipsoids),
    with optional integrator points drawn over them.

    ``curves``: list of (n, 3) arrays (exact solutions); ``points``: list of (n, 3) arrays.
    """
    fig = Figure(figsize=(6.4, 6.0), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    radius = float(np.linalg.norm(curves[0][0]))
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 48), np.linspace(0, np.pi, 24))
    ax.plot_surface(
        radius * np.cos(u) * np.sin(v),
        radius * np.sin(u) * np.sin(v),
        radius * np.cos(v),
        color="0.92",
        alpha=0.35,
        linewidth=0,
    )
    for c in curves:
        ax.plot(c[:, 0], c[:, 1], c[:, 2], color="0.35", lw=0.8)
    for p in points or []:
        ax.plot(p[:, 0], p[:, 1], p[:, 2], ".", ms=1.5)
    ax.set(xlabel="m1", ylabel="m2", zlabel="m3", title=title)
    ax.set_box_aspect((1, 1, 1))
    ax.view_init(elev=25, azim=-20)
    return fig


def invariant_error_figure(t, errors: dict[str, dict[str, np.ndarray]], title: str = "") -> Figure:
    """One panel per quantity; ``errors[method][quantity]`` is an error series over ``t``."""
    quantities = list(dict.fromkeys(q for e in errors.values() for q in e))
    if not quantities:
        fig = Figure(figsize=(4.2, 3.8), layout="constrained")
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no known invariants", ha="center", transform=ax.transAxes)
        fig.suptitle(title)
        return fig
    fig = Figure(figsize=(4.2 * len(quantities), 3.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(quantities), sharey=True))
    for ax, q in zip(axes, quantities, strict=True):
        for method, errs in errors.items():
            if q in errs:
                ax.loglog(t[1:], _log_positive(errs[q][1:]), lw=1.2, label=method)
        ax.set(xlabel="t", title=f"|Δ{q}| / |{q}(0)|")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel(f"relative error (exact zeros at {_FLOOR:g})")
    axes[-1].legend(loc="upper left", fontsize=8)
    fig.suptitle(title)
    return fig
