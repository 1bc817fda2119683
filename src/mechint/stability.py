r"""Stability maps of planetary systems: MEGNO ⟨Y⟩ and the largest Lyapunov exponent
over a grid of one body's orbital elements, as batched runs of a map with a tangent
vector (``integrators.Tangent``, by default around ``WisdomHolman()``).

``stability_map(masses, elements, body, {"a": [...], "e": [...]}, h=..., steps=...)``
starts one system per grid point (``NBody.from_elements``: the elements of every body
as given, the varied ones of ``body`` replaced by the grid's), runs them in batches of
at most ``max_batch`` members (in this process, or as tasks on a Dask cluster with
identical results) and returns an ``xarray.Dataset`` with a dimension per varied
element:

* ``megno``: ⟨Y⟩ at the run's end (``diagnostics.megno``): near 2 on quasi-periodic
  orbits, growing like λ t / 2 on chaotic ones;
* ``lyapunov``: the largest Lyapunov exponent (1 / the time unit of G) over the run;
* ``failed_step``, ``reason``: a step that failed (a close encounter where the system's
  ``encounter`` distance is set, a Kepler solve that did not converge), −1 / "ok";
* ``escaped``: the run ended when a body went farther than ``escape`` from the centre
  of mass (``NBody(escape=...)``, REBOUND's ``exit_max_distance``), with
  ``escape_time`` (the end of the step that took it there).

Where a member failed or escaped, ``megno`` and ``lyapunov`` are NaN: such an orbit is
not regular, and the map draws it apart (``plot.stability_figure``).  This is REBOUND's
MEGNO example (Sun, Jupiter and Saturn with Saturn's a and e varied, WHFast), run as one
batch per ``max_batch`` points instead of one process per point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from mechint import _validate, resources
from mechint._version import __version__
from mechint.errors import InputError
from mechint.maps import REASON_LABELS, Integrator, Reason

# the element names a grid may vary (as ``NBody.from_elements`` takes them)
ELEMENTS = ("a", "P", "e", "i", "Omega", "omega", "M", "lam", "tp")
# the members of one batch at most, by default
MAX_BATCH = 4096


@dataclasses.dataclass(frozen=True)
class _Task:
    """One batch of grid points: plain data, run here or on a Dask worker."""

    masses: tuple
    G: float
    x0: tuple  # the systems' barycentric (q, p), each (B, N, 3)
    integrator: Integrator
    h: float
    steps: int
    escape: float | None
    dtype: str
    first: int  # the batch's first grid point (flat index)
    count: int  # the points it holds (the rest repeat the first: one compiled program)


def run_task(task: _Task) -> dict:
    """One batch: the Tangent run of its systems, each member's ⟨Y⟩, largest exponent,
    failure and escape."""
    from mechint import diagnostics
    from mechint.simulate import simulate
    from mechint.systems.nbody import NBody

    system = NBody(list(task.masses), task.G, escape=task.escape)
    run = simulate(system, task.integrator, task.x0, task.h, task.steps, task.steps,
                   dtype=task.dtype, throw=False)  # only the end saved  # fmt: skip
    n = task.count
    failed = np.asarray(run.failed_step)[:n]
    reason = np.asarray(run.reason_code)[:n]
    escaped = reason == int(Reason.OUT_OF_DOMAIN)
    return {
        "first": task.first,
        "megno": np.asarray(diagnostics.megno(run))[:n],
        "lyapunov": np.asarray(diagnostics.lyapunov(run))[:n, 0],
        "failed_step": np.where(escaped, -1, failed),
        "reason": np.where(escaped, 0, reason),
        "escaped": escaped,
        "escape_time": np.where(escaped, task.h * failed, np.nan),
    }


def _grid(grid, elements: Mapping) -> dict[str, np.ndarray]:
    if not isinstance(grid, Mapping) or not 1 <= len(grid) <= 2:
        raise InputError("grid", f"expected one or two elements and their values, got "
                         f"{grid!r}"[:200], "e.g. {'a': numpy.linspace(7, 10, 100), "
                         "'e': numpy.linspace(0, 0.5, 100)}")  # fmt: skip
    out = {}
    for key, values in grid.items():
        if key not in ELEMENTS:
            raise InputError("grid", f"unknown element {key!r}", f"one of {', '.join(ELEMENTS)}")
        if key not in elements and key not in ("e", "i", "Omega", "omega"):
            raise InputError("grid", f"varies {key!r}, which the elements do not give",
                             f"give {key!r} in elements (the same size and phase "
                             "elements)")  # fmt: skip
        v = _validate.real_array(f"grid[{key!r}]", values)
        if v.ndim != 1 or v.size == 0:
            raise InputError("grid", f"{key!r} has no points (shape {v.shape})",
                             "give a list of at least one value")  # fmt: skip
        if not np.all(np.isfinite(v)):
            raise InputError("grid", f"{key!r} holds a value that is not finite")
        out[key] = v
    return out


def stability_map(
    masses,
    elements: Mapping,
    body: int,
    grid: Mapping,
    *,
    h: float,
    steps: int,
    G: float = 1.0,
    frame: str = "jacobi",
    integrator: Integrator | None = None,
    escape: float | None = None,
    max_batch: int = MAX_BATCH,
    dtype: str = "float64",
    scheduler: str | None = None,
    cluster: str | None = None,
    on_result=None,
):
    """MEGNO and the largest Lyapunov exponent over a grid of ``body``'s elements (see
    the module docstring); an ``xarray.Dataset``.

    ``masses``, ``elements``, ``G``, ``frame``: the system as ``NBody.from_elements``
    takes it (``elements``: each key a list of N−1 values, bodies 1..N−1); ``body``: the
    body whose elements vary (1..N−1); ``grid``: one or two element names and their
    values (a 2-D map is their outer product, the first name the first dimension);
    ``h``, ``steps``: the step and the number of steps; ``integrator``: the map
    (default ``WisdomHolman()``), run with one tangent vector; ``escape``: a distance
    from the centre of mass that ends a member's run (None: none); ``max_batch``: members
    per batch; ``scheduler`` / ``cluster``: run the batches on Dask
    (``"tcp://HOST:PORT"`` / ``"local:N"``); ``on_result``: called with each finished
    batch's number of points.  Checked before any run; a bad value raises
    ``InputError`` naming it."""
    import xarray as xr

    from mechint import integrators, sweeps
    from mechint.systems.nbody import NBody, read_elements, state_from_elements

    system = NBody(masses, G)
    n = system.n
    if isinstance(body, bool) or not isinstance(body, int | np.integer) or not 1 <= body < n:
        raise InputError("body", f"must be one of 1..{n - 1}, got {body!r}",
                         "the index of the body whose elements vary (0 is the central "
                         "body)")  # fmt: skip
    axes = _grid(grid, elements)
    base = read_elements(elements, n - 1)
    if any(v.ndim > 1 for v in base.values()):
        raise InputError("elements", "a batch of systems: the grid makes the batch",
                         f"one system's elements, ({n - 1},) each")  # fmt: skip
    shape = tuple(v.size for v in axes.values())
    points = int(np.prod(shape))
    resources.require_buffer("grid", points * 16.0, f"a grid of {points} points",
                             "a coarser grid")  # fmt: skip
    h = float(_validate.step_size(h))
    steps = _validate.count("steps", steps)
    escape = None if escape is None else float(_validate.positive_scalar("escape", escape))
    max_batch = _validate.count("max_batch", max_batch)
    if integrator is None:
        integrator = integrators.WisdomHolman()
    if not isinstance(integrator, Integrator):
        raise InputError("integrator", f"{integrator!r} is not a mechint integrator")
    if not isinstance(integrator, integrators.Tangent):
        integrator = integrators.Tangent(integrator)
    _validate.real_dtype(dtype)
    if cluster is not None:
        sweeps.cluster_size(cluster)
    # every point's elements: the given ones, body's varied ones from the grid
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    flat = {k: np.broadcast_to(v, (points, n - 1)).copy() for k, v in base.items()}
    for (key, _), values in zip(axes.items(), mesh, strict=True):
        flat[key][:, body - 1] = values.ravel()
    try:  # every point's elements valid (e ≥ 0, ...), and its state finite, before a run
        x0 = state_from_elements(np.asarray(system.masses), flat, G, frame)
    except InputError as exc:
        raise InputError(
            "grid", f"gives body {body} {exc.parameter} it refuses: {exc.problem}", exc.fix
        ) from None
    size = min(int(max_batch), points)
    work = []
    for first in range(0, points, size):
        pick = np.arange(first, first + size)
        pick = np.where(pick < points, pick, first)  # the last batch padded with its first
        work.append(_Task(tuple(float(m) for m in np.asarray(system.masses)), float(G),
                          (x0[0][pick], x0[1][pick]), integrator, h, steps, escape, dtype,
                          first, min(size, points - first)))  # fmt: skip
    out = {key: np.full(points, np.nan) for key in ("megno", "lyapunov", "escape_time")}
    out["failed_step"] = np.full(points, -1, dtype=np.int64)
    out["reason"] = np.zeros(points, dtype=np.int8)
    out["escaped"] = np.zeros(points, dtype=bool)

    def collect(result: dict) -> None:
        s = slice(result["first"], result["first"] + len(result["megno"]))
        for key in out:
            out[key][s] = result[key]
        if on_result is not None:
            on_result(len(result["megno"]))

    if scheduler is None and cluster is None:
        for task in work:
            collect(run_task(task))
    else:
        sweeps.on_dask(work, scheduler, cluster, collect, task=run_task)
    dims = tuple(axes)
    bad = (out["failed_step"] >= 0) | out["escaped"]
    labels = np.array([REASON_LABELS[int(c)] for c in out["reason"]])
    data = {
        "megno": (dims, np.where(bad, np.nan, out["megno"]).reshape(shape),
                  {"long_name": "MEGNO <Y> at the end of the run", "units": "1"}),
        "lyapunov": (dims, np.where(bad, np.nan, out["lyapunov"]).reshape(shape),
                     {"long_name": "largest Lyapunov exponent over the run",
                      "units": "1/time"}),
        "failed_step": (dims, out["failed_step"].reshape(shape),
                        {"long_name": "step that failed (-1: none)", "units": "1"}),
        "reason": (dims, labels.reshape(shape), {"long_name": "why the step failed"}),
        "escaped": (dims, out["escaped"].reshape(shape),
                    {"long_name": f"a body went farther than {escape} from the centre of "
                                  "mass"}),
        "escape_time": (dims, out["escape_time"].reshape(shape),
                        {"long_name": "time of the escape", "units": "time"}),
    }  # fmt: skip
    coords = {k: (k, v, {"long_name": f"{k} of body {body}"}) for k, v in axes.items()}
    attrs: dict[str, Any] = {
        "title": "MEGNO stability map",
        "source": f"mechint {__version__}",
        "masses": np.asarray(system.masses, dtype=np.float64),
        "G": float(G),
        "frame": frame,
        "body": int(body),
        "elements": repr({k: v.tolist() for k, v in base.items()})[:2000],
        "integrator": repr(integrator.base),
        "h": h,
        "steps": steps,
        "time": h * steps,
        "escape": float("nan") if escape is None else escape,
        "dtype": dtype,
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)


__all__ = ["ELEMENTS", "MAX_BATCH", "run_task", "stability_map"]
