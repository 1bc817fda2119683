"""The figures of ``mechint run --plot`` and ``mechint demo``."""

from __future__ import annotations

import jax
import numpy as np
from matplotlib.figure import Figure

from mechint.diagnostics import invariant_errors, preserved_errors
from mechint.maps import innermost, wrappers

FIGURE_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
_FLOOR = 1e-17  # exact zeros drawn at this level on log axes


def _log_positive(err):
    return np.maximum(np.asarray(err, dtype=float), _FLOOR)


# The state panel shows at most this many saved samples (the start of a long run), so
# that oscillations stay readable; the invariants panel shows the whole run.
_STATE_WINDOW = 400


def trajectory_figure(traj, member: int = 0) -> Figure:
    """The state's components at the start of the run, and the running maximum of each
    invariant's relative error over the whole run (log scale)."""
    if hasattr(traj.system, "principal_momentum") and "R" in traj.system.rotation_fields():
        return rigid_bodies_figure(traj, member)
    fig = Figure(figsize=(11, 4.6), layout="constrained")
    ax_x, ax_e = fig.subplots(1, 2)
    pick = (lambda a: a[member]) if traj.batched else (lambda a: a)
    window = min(len(traj.t), _STATE_WINDOW)
    k = 0
    for (name, _dims), leaf in zip(traj.system.state_fields, jax.tree.leaves(traj.x), strict=True):
        arr = pick(np.asarray(leaf)).reshape(len(traj.t), -1)
        for j in range(arr.shape[1]):
            ls = STYLES[k // 10 % len(STYLES)][0]
            ax_x.plot(traj.t[:window], arr[:window, j], lw=1, ls=ls, color=f"C{k % 10}",
                      label=f"{name}{j + 1}")  # fmt: skip
            k += 1
    shown = "" if window == len(traj.t) else f" (first {window} of {len(traj.t)} samples)"
    ax_x.set(xlabel="t", title="state" + shown)
    if k <= 12:
        ax_x.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    _invariants_panel(ax_e, traj, pick)
    name = ", ".join(  # e.g. "Composition, compensated"
        [type(innermost(traj.integrator)).__name__, *(w.name for w in wrappers(traj.integrator))]
    )
    fig.suptitle(f"{traj.system!r} — {name}, h = {traj.h:g}, {traj.steps} steps")
    return fig


def _invariants_panel(ax_e, traj, pick) -> None:
    """The running maximum of each invariant's relative error over the whole run."""
    errs = {**invariant_errors(traj.system, traj), **preserved_errors(traj)}
    every = max(1, len(traj.t) // 8)
    for i, (name, err) in enumerate(errs.items()):
        ls, marker = STYLES[i % len(STYLES)]
        running = np.maximum.accumulate(_log_positive(pick(err)))
        offset = (i * every) // max(len(errs), 1)  # curves that coincide show every marker
        ax_e.semilogy(traj.t, running, lw=1.2, ls=ls, color=f"C{i % 10}", label=name,
                      marker=marker, markevery=(offset, every), ms=4)  # fmt: skip
    ax_e.set(xlabel="t", ylabel=f"relative error, running max (zeros at {_FLOOR:g})",
             title="invariants")  # fmt: skip
    ax_e.grid(True, which="major", alpha=0.3)
    if errs:
        ax_e.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    else:
        ax_e.text(0.5, 0.5, "no known invariants", ha="center", transform=ax_e.transAxes)


# Bodies drawn at most in the per-body panels of ``rigid_bodies_figure``.
_BODIES_DRAWN = 4


def rigid_bodies_figure(traj, member: int = 0) -> Figure:
    """``systems.RigidBodies``: the centres' paths in the x–y plane (when the centres
    move), each body's attitude as yaw, pitch and roll (the "321" angles of R, degrees)
    and its body angular velocity Ω = 𝕁⁻¹Π over the start of the run, and the invariants'
    errors over the whole run; each on its own axes, with legends (the first four
    bodies)."""
    from mechint import attitude

    system = traj.system
    pick = (lambda a: a[member]) if traj.batched else (lambda a: a)
    x = jax.tree.map(lambda a: pick(np.asarray(a)), traj.x)
    pos, _, R, Pi = system.parts(x)
    window = min(len(traj.t), _STATE_WINDOW)
    t = traj.t[:window]
    n = min(system.bodies, _BODIES_DRAWN)
    fig = Figure(figsize=(11, 8), layout="constrained")
    (ax_c, ax_a), (ax_w, ax_e) = fig.subplots(2, 2)
    if pos is not None:
        for b in range(n):
            ax_c.plot(pos[:, b, 0], pos[:, b, 1], lw=1, color=f"C{b}", label=f"body {b}")
            ax_c.plot(pos[0, b, 0], pos[0, b, 1], "o", ms=4, color=f"C{b}")
        ax_c.set(xlabel="x_1", ylabel="x_2", title="centres (the whole run; o: start)",
                 aspect="equal")  # fmt: skip
        ax_c.legend(fontsize=8)
    else:
        ax_c.text(0.5, 0.5, "the centres are fixed", ha="center", transform=ax_c.transAxes)
        ax_c.set_axis_off()
    angles = np.degrees(np.unwrap(np.asarray(attitude.euler_angles(R[:window, :n], "321")), axis=0))
    omega = np.asarray(system.angular_velocity(Pi[:window]))[:, :n]
    for b in range(n):
        for j, (label, ls) in enumerate((("yaw", "-"), ("pitch", "--"), ("roll", ":"))):
            ax_a.plot(t, angles[:, b, j], lw=1, ls=ls, color=f"C{b}", label=f"{b}: {label}")
            ax_w.plot(t, omega[:, b, j], lw=1, ls=ls, color=f"C{b}", label=f"{b}: Ω{j + 1}")
    shown = "" if window == len(traj.t) else f" (first {window} of {len(traj.t)} samples)"
    ax_a.set(xlabel="t", ylabel="degrees", title="attitude: yaw, pitch, roll (321)" + shown)
    ax_w.set(xlabel="t", ylabel="rad / time", title="body angular velocity Ω" + shown)
    for ax in (ax_a, ax_w):
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    _invariants_panel(ax_e, traj, pick)
    more = f", bodies 0–{n - 1} of {system.bodies} drawn" if system.bodies > n else ""
    name = ", ".join(
        [type(innermost(traj.integrator)).__name__, *(w.name for w in wrappers(traj.integrator))]
    )
    fig.suptitle(f"RigidBodies, N = {system.bodies} — {name}, h = {traj.h:g}, "
                 f"{traj.steps} steps{more}")  # fmt: skip
    return fig


# Line styles and markers told apart in print and without colour (cycled).
STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ("-", "v"), ("--", "P"))


def momentum_sphere_figure(
    curves, points=None, title: str = "", points_label: str = "map", curves_label: str = "exact"
) -> Figure:
    """Curves on the momentum sphere |m| = const (intersections with energy ellipsoids),
    with optional integrator points drawn over them: each orbit in its own colour (the
    exact curve a thin line, the map's points dots with a dark edge), a legend saying
    which is which.

    ``curves``: list of (n, 3) arrays (exact solutions); ``points``: list of (n, 3) arrays.
    """
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(6.4, 6.4), layout="constrained")
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
    colours = colormaps["tab20"](np.linspace(0, 1, 20))
    for k, c in enumerate(curves):
        ax.plot(c[:, 0], c[:, 1], c[:, 2], color=colours[k % 20], lw=0.9, alpha=0.9)
    for k, p in enumerate(points or []):
        ax.scatter(p[:, 0], p[:, 1], p[:, 2], s=9, color=colours[k % 20], edgecolors="0.15",
                   linewidths=0.3, depthshade=False)  # fmt: skip
    ticks = [-radius, 0.0, radius]
    ax.set(xlabel="m1", ylabel="m2", zlabel="m3", xticks=ticks, yticks=ticks, zticks=ticks)
    ax.set_title(title, fontsize=10)
    ax.set_box_aspect((1, 1, 1))
    ax.view_init(elev=25, azim=-20)
    handles = [Line2D([], [], color="0.3", lw=1.2, label=curves_label)]
    if points:
        handles.append(Line2D([], [], ls="", marker="o", ms=4, color="0.6",
                              markeredgecolor="0.15", label=points_label))  # fmt: skip
    ax.legend(handles=handles, loc="upper left", fontsize=8)
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
    n = len(t) - 1

    def marks(k: int) -> list[int]:  # about ten markers, evenly spaced on the log axis
        where = np.geomspace(1, max(n, 1), 10) * (1 + 0.2 * k / max(len(errors), 1))
        return sorted({min(int(w) - 1, n - 1) for w in where if w <= n})

    for ax, q in zip(axes, quantities, strict=True):
        for k, (method, errs) in enumerate(errors.items()):
            if q in errs:
                ls, marker = STYLES[k % len(STYLES)]
                ax.loglog(t[1:], _log_positive(errs[q][1:]), lw=1.1, ls=ls, marker=marker,
                          ms=4, markevery=marks(k), color=f"C{k}",
                          label=method)  # fmt: skip
        ax.set(xlabel="t", title=f"|Δ{q}| / |{q}(0)|")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel(f"relative error (exact zeros at {_FLOOR:g})")
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:  # every method, even one drawn only in a later panel
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=9)
    fig.suptitle(title)
    return fig


def section_figure(system, traj, axes, surface: str, energy: float | None = None) -> Figure:
    """A Poincaré section: two components of the state at every recorded crossing of
    ``traj.events["section"]`` (``axes``: two (leaf, component) pairs), one colour per
    run; ``energy``, where the states were drawn at one, in the title."""
    c = traj.events["section"]
    names = [name for name, _ in system.state_fields]
    leaves = [np.asarray(a) for a in jax.tree.leaves(c.x)]
    lead = np.ndim(c.count)  # 1 for a batch

    def values(pair):
        leaf, j = pair
        a = leaves[leaf]
        return a.reshape((*a.shape[: lead + 1], -1))[..., j]

    x, y = values(axes[0]), values(axes[1])
    fig = Figure(figsize=(5.2, 5.0), layout="constrained")
    ax = fig.subplots()
    x, y = np.atleast_2d(x), np.atleast_2d(y)
    for k in range(x.shape[0]):
        ax.plot(x[k], y[k], ".", ms=1.2)
    at = "" if energy is None else f" at E = {energy:g}"
    title = f"{type(system).__name__}{at}: section {surface}, {int(np.sum(c.count))} points"
    ax.set(xlabel=f"{names[axes[0][0]]}_{axes[0][1] + 1}",
           ylabel=f"{names[axes[1][0]]}_{axes[1][1] + 1}", title=title)  # fmt: skip
    return fig


def stability_figure(ds, clip: tuple[float, float] = (1.0, 5.0)) -> Figure:
    """A MEGNO stability map (``stability.stability_map``'s dataset): ⟨Y⟩ over the grid,
    clipped to ``clip`` (regular near 2 in green, chaotic in red, as REBOUND's example
    draws it), members that escaped or failed in black; a 1-D grid as a curve."""
    from matplotlib.colors import ListedColormap

    dims = list(ds["megno"].dims)
    y = ds["megno"].values
    bad = ds["escaped"].values | (ds["failed_step"].values >= 0)
    what = f"{int(np.sum(bad))} escaped or failed" if np.any(bad) else "none escaped"
    title = (f"MEGNO ⟨Y⟩, body {ds.attrs['body']}, t = {ds.attrs['time']:g} "
             f"({ds.attrs['steps']} steps): {what}")  # fmt: skip
    fig = Figure(figsize=(6.4, 5.0), layout="constrained")
    ax = fig.subplots()
    if len(dims) == 1:
        ds = ds.sortby(dims[0])
        y = ds["megno"].values
        bad = ds["escaped"].values | (ds["failed_step"].values >= 0)
        x = ds[dims[0]].values
        ax.plot(x, np.clip(y, *clip), ".-", ms=3)
        ax.plot(x[bad], np.full(int(np.sum(bad)), clip[1]), "kx", label="escaped or failed")
        ax.set(xlabel=dims[0], ylabel="⟨Y⟩ (clipped)", ylim=clip, title=title)
        if np.any(bad):
            ax.legend()
        return fig
    ds = ds.sortby(dims)  # cell centres in order (a grid may list its values in any order)
    y = ds["megno"].values
    bad = ds["escaped"].values | (ds["failed_step"].values >= 0)
    x, z = ds[dims[0]].values, ds[dims[1]].values
    mesh = ax.pcolormesh(x, z, np.clip(y, *clip).T, cmap="RdYlGn_r", vmin=clip[0],
                         vmax=clip[1], shading="nearest")  # fmt: skip
    if np.any(bad):
        ax.pcolormesh(x, z, np.where(bad, 1.0, np.nan).T, cmap=ListedColormap(["black"]),
                      shading="nearest")  # fmt: skip
    fig.colorbar(mesh, ax=ax, label=f"⟨Y⟩ (clipped to [{clip[0]:g}, {clip[1]:g}]; black: "
                 "escaped or failed)")  # fmt: skip
    ax.set(xlabel=dims[0], ylabel=dims[1], title=title)
    return fig
