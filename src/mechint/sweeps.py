"""Parameter sweeps: a grid of systems × integrators × step sizes × initial conditions,
run in vmapped batches (in this process, or on a Dask cluster), returned as one
``xarray.Dataset`` with a dimension per swept parameter.

An experiment (a TOML file, or the same as a dict)::

    steps = 1000
    save_every = 100
    h = [0.01, 0.02]
    integrators = ["kahan", "midpoint", {name = "rigid-body-splitting", order = 4}]

    [system]
    name = "euler-top"
    [system.grid]                    # each key: a list of values, one dimension each
    inertia = [[2, 1, 0.6667], [3, 2, 1]]

    [initial]                        # explicit states, one list per state field ...
    m = [[0.45, 0, 0.89], [0.89, 0.1, 0.45]]
    # ... or a seeded random sample on a Casimir level set:
    # [initial.random]
    # count = 1000
    # seed = 0
    # C = 0.5                        # euler-top: uniform on the sphere |m|²/2 = C

The random sample is the system's own (``LevelSetSampler``): for the rigid bodies on
so(n), Q·x·Qᵀ (and Qp) for Haar-random Q ∈ SO(n) around the one explicit state given, so
every Casimir is the same.  An integrator is a name, or a table with its ``name`` and
settings (the same table as the CLI's options, ``integrators.SETTINGS``).  Optional:
``compensated = true / false`` (as ``simulate``'s; left out, each map's default: on at
order >= 8 for maps that form their increment), recorded as the output's ``compensated``
coordinate along ``integrator``; ``dtype``; ``max_batch``.

Each (grid point, integrator, h, batch of at most ``max_batch`` states) is one task,
a pure function of plain data: run in a loop here, or mapped over a Dask cluster
(``scheduler="tcp://..."`` or ``cluster="local:N"``), with identical results.  A member
whose step fails keeps its samples up to the failure (NaN after) with its
``failed_step``, ``residual`` and ``reason``; every healthy member runs to the end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import itertools
import json
import tomllib
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, cast

import jax
import numpy as np

from mechint import _validate, integrators, io, plugins, resources, systems
from mechint._version import __version__
from mechint.errors import InputError
from mechint.integrators.registry import relabel
from mechint.maps import REASON_LABELS
from mechint.plan import compensates
from mechint.simulate import simulate
from mechint.systems.base import LevelSetSampler

# the largest experiment file read (a TOML text, not data)
_LARGEST_EXPERIMENT = 1 << 24
_TOP_KEYS = {"steps", "save_every", "h", "integrators", "system", "initial", "max_batch", "dtype",
             "compensated"}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Experiment:
    system: str
    fixed: dict
    grid: dict
    integrators: tuple  # names, or (name, ((setting, value), ...)) pairs
    h: tuple
    steps: int
    save_every: int
    initial: object  # a tuple of arrays (one per state field, leading sample axis)
    max_batch: int = 100_000
    dtype: str = "float64"
    compensated: bool | None = None  # as simulate's: None, each map's default


def load(source) -> Experiment:
    """An ``Experiment`` from a TOML path or a dict; every error names the key."""
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise InputError("experiment", f"file {str(path)!r} not found")
        if path.stat().st_size > _LARGEST_EXPERIMENT:
            raise InputError("experiment", f"{str(path)!r} is larger than an experiment file "
                             f"({_LARGEST_EXPERIMENT // 2**20} MiB)")  # fmt: skip
        try:
            doc = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise InputError("experiment", f"{str(path)!r} is not valid TOML: {why}") from None
    else:
        doc = dict(source)
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise InputError(
            "experiment", f"unknown keys {sorted(unknown)}", f"use {sorted(_TOP_KEYS)}"
        )
    for key in ("steps", "h", "integrators", "system", "initial"):
        if key not in doc:
            raise InputError(key, "is required in the experiment")
    spec = dict(doc["system"])
    name = spec.pop("name", None)
    cls = relabel("system.name", systems.get, name)
    grid = dict(spec.pop("grid", {}))
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise InputError(f"system.grid.{key}", "must be a non-empty list of values")
        if key in spec:  # the grid's value would silently replace the fixed one
            raise InputError(f"system.grid.{key}", f"is also fixed (system.{key} = "
                             f"{spec[key]!r})", "give it either a value or a grid")  # fmt: skip
    for key in ("integrators", "h"):
        if isinstance(doc[key], list) and not doc[key]:
            raise InputError(key, "is an empty list", "give at least one value")
    if not isinstance(doc["integrators"], list):
        raise InputError("integrators", f"expected a list, got {doc['integrators']!r}")
    names = tuple(_integrator_spec(spec) for spec in doc["integrators"])
    hs = tuple(_validate.step_size(v, "h") for v in np.atleast_1d(doc["h"]).tolist())
    steps = _validate.count("steps", doc["steps"])
    save_every = _validate.save_every(steps, doc.get("save_every", steps))
    exp = Experiment(
        system=name, fixed=spec, grid=grid, integrators=names, h=hs, steps=steps,
        save_every=save_every, initial=None,
        max_batch=_validate.count("max_batch", doc.get("max_batch", 100_000)),
        dtype=doc.get("dtype", "float64"),
        compensated=_compensated(doc.get("compensated")),
    )  # fmt: skip
    _validate.real_dtype(exp.dtype)
    first = _build(cls, exp, _grid_points(exp)[0])
    for spec in names:
        _make_integrator(spec, first)

    def starts(system, x):
        """x checked as every integrator's start on ``system`` (``validate_start``: SHAKE
        takes any momentum at positions on the manifold)."""
        checks = [_make_integrator(spec, system).validate_start(system, x, "initial")
                  for spec in names]  # fmt: skip
        return checks[-1]

    def fits(one, count: int) -> None:  # memory only: the output's disk is the caller's
        estimate = footprint(dataclasses.replace(exp, initial=one), count)
        resources.require_fits(estimate, steps, save_every, None, parameter="save_every",
                               members="initial.random.count")  # fmt: skip

    initial = _initial(first, doc["initial"], fits, partial(starts, first))
    if not (isinstance(doc["initial"], Mapping) and "random" in doc["initial"]):
        # explicit states are every grid point's start: each point's system checks them
        # (a constrained system's geometry moves its manifold), before any run
        for point in _grid_points(exp)[1:]:
            system = _build(cls, exp, point)
            try:
                starts(system, initial)
            except InputError as exc:
                raise InputError(exc.parameter, f"{exc.problem}, at the grid point {point}",
                                 "give states that every grid point's system takes (a "
                                 "constrained system's lengths move its manifold: sweep "
                                 "one geometry at a time)") from None  # fmt: skip
    return dataclasses.replace(exp, initial=initial)


def _compensated(value) -> bool | None:
    """The experiment's ``compensated`` (true, false, or absent: each map's default)."""
    if value is None or isinstance(value, bool):
        return value
    raise InputError("compensated", f"must be true or false, got {value!r}",
                     "or leave it out: each map's default (on at order >= 8)")  # fmt: skip


def _integrator_spec(spec):
    """A name, or (name, sorted settings) from a table {name = ..., setting = ...}."""
    if isinstance(spec, str):
        relabel("integrators", integrators.get, spec)
        return spec
    if not isinstance(spec, dict) or "name" not in spec:
        raise InputError("integrators", f"expected a name or a table with a name, got {spec!r}")
    spec = dict(spec)
    name = spec.pop("name")
    cls = relabel("integrators", integrators.get, name)
    name = name if plugins.is_reference(name) else cls.name  # a reference stays one
    return (name, tuple(sorted((k, str(v)) for k, v in spec.items())))


def _make_integrator(spec, system):
    """The integrator of a spec (errors name ``integrators.<setting>``)."""
    name, settings = (spec, ()) if isinstance(spec, str) else spec
    try:
        return integrators.build(name, system, dict(settings))
    except InputError as exc:
        raise InputError(f"integrators.{exc.parameter}", exc.problem, exc.fix) from None


def integrator_label(spec) -> str:
    """The coordinate label of an integrator spec: its name, settings in brackets."""
    if isinstance(spec, str):
        return spec
    name, settings = spec
    return name + "(" + ", ".join(f"{k}={v}" for k, v in settings) + ")"


def _grid_points(exp: Experiment) -> list[dict]:
    keys = list(exp.grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*exp.grid.values())]


def _build(cls, exp: Experiment, point: dict):
    kwargs = {**exp.fixed, **point}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise InputError("system", f"{cls.name} does not take {sorted(kwargs)}: {exc}") from None


def _initial(system, spec: dict, fits=None, validate=None):
    """The experiment's initial states: explicit ones checked by ``validate`` (default
    ``system.validate_state``), or a random sample of the system's level set."""
    spec = dict(spec)
    random = spec.pop("random", None)
    fields = [f for f, _ in system.state_fields]
    if set(spec) - set(fields):
        raise InputError(
            "initial", f"unknown state fields {sorted(set(spec) - set(fields))}", f"use {fields}"
        )
    if random is None:
        missing = [f for f in fields if f not in spec]
        if missing:
            raise InputError("initial", f"missing state fields {missing}")
        x = tuple(_validate.real_array(f"initial.{f}", spec[f]) for f in fields)
        validate = validate or partial(system.validate_state, name="initial")
        x, batched = validate(x[0] if len(x) == 1 else x)
        if not batched:
            raise InputError("initial", "give a list of states (one per sample)")
        return x
    if not isinstance(system, LevelSetSampler):
        raise InputError(
            "initial.random",
            f"a random sample on the Casimir level set is not defined for {system.name}",
            "give explicit states",
        )
    random = dict(random)
    unknown = set(random) - {"count", "seed", *system.level_set_keys}
    if unknown:
        raise InputError("initial.random", f"unknown keys {sorted(unknown)}",
                         f"use {sorted({'count', 'seed', *system.level_set_keys})}")  # fmt: skip
    count = _validate.count("initial.random.count", random.pop("count", 1))
    seed = _validate.count("initial.random.seed", random.pop("seed", 0), 0)
    if fits is not None:  # one state first: the sample's size is checked before it is drawn
        fits(system.sample_level_set(np.random.default_rng(seed), 1, {**spec, **random}), count)
    return system.sample_level_set(np.random.default_rng(seed), count, {**spec, **random})


def tasks(exp: Experiment) -> list[tuple]:
    """Plain-data tasks (index, system name, parameters, integrator, h, steps, save_every,
    states, dtype, compensated): one per grid point × integrator × h × batch of states."""
    count = jax.tree.leaves(exp.initial)[0].shape[0]
    out = []
    for gi, point in enumerate(_grid_points(exp)):
        for ii, integ in enumerate(exp.integrators):
            for hi, h in enumerate(exp.h):
                for start in range(0, count, exp.max_batch):
                    stop = min(count, start + exp.max_batch)
                    x = jax.tree.map(lambda a, s=start, e=stop: a[s:e], exp.initial)
                    params = {**exp.fixed, **point}
                    index = (gi, ii, hi, start)
                    task = (index, exp.system, params, integ, h, exp.steps, exp.save_every)
                    out.append((*task, x, exp.dtype, exp.compensated))
    return out


def run_task(task):
    """Run one task; returns (index, saved states, per state: failed step (−1: none),
    residual, reason code).  Every healthy member runs to the end."""
    index, name, params, spec, h, steps, every, x, dtype, compensated = task
    system = systems.get(name)(**params)
    traj = simulate(system, _make_integrator(spec, system), x, h, steps, every, dtype=dtype,
                    throw=False, compensated=compensated)  # fmt: skip
    codes = np.asarray(traj.reason_code, dtype=np.int8)
    return index, traj.x, (np.asarray(traj.failed_step), np.asarray(traj.residual), codes)


def sweep(
    experiment,
    *,
    scheduler: str | None = None,
    cluster: str | None = None,
    on_result=None,
    previous=None,
):
    """Run an experiment (``Experiment``, TOML path or dict); returns an xarray.Dataset.

    ``on_result(make)`` is called as each task finishes, with a function that assembles
    the dataset of every task finished so far (``task_done`` marks them): ``mechint
    sweep`` writes its checkpoints from it.  ``previous``: such a partial dataset of the
    same experiment; its finished tasks are taken from it, not run again.
    """
    exp = experiment if isinstance(experiment, Experiment) else load(experiment)
    work = tasks(exp)
    results = [] if previous is None else finished_results(exp, previous, work)
    done = {r[0] for r in results}
    todo = [t for t in work if t[0] not in done]

    def collect(result):
        results.append(result)
        if on_result is not None:
            on_result(lambda: _assemble(exp, list(results)))

    if scheduler is None and cluster is None:
        for t in todo:
            collect(run_task(t))
    elif todo:
        on_dask(todo, scheduler, cluster, collect)
    return _assemble(exp, results)


def footprint(exp: Experiment, count: int | None = None) -> resources.Footprint:
    """Memory and disk of the experiment's dataset (every sample of every run, with its
    invariants), estimated before any task runs; ``count``: the number of initial states
    when ``exp.initial`` holds only the first."""
    first = _build_first(exp)
    members = jax.tree.leaves(exp.initial)[0].shape[0] if count is None else count
    runs = members * len(exp.integrators) * len(exp.h) * int(np.prod([len(v) for v in
                                                                   exp.grid.values()]))  # fmt: skip
    one = jax.tree.map(lambda a: np.asarray(a)[0], exp.initial)
    per_run = resources.footprint(first, one, exp.steps, exp.save_every, dtype=exp.dtype)
    return resources.Footprint(per_run.samples * runs, per_run.file_bytes * runs,
                               per_run.memory_bytes * runs)  # fmt: skip


def checksum(ds) -> str:
    """SHA-256 of a sweep dataset's experiment, completion and every variable (sorted by
    name): a resumed sweep takes only a file that is as it was written."""
    digest = io.Digest()
    for name in sorted(ds.variables):
        values = np.asarray(ds[name].values)
        digest.update(name, values.astype(str) if values.dtype.kind in "OU" else values)
    return digest.value(
        {"system": ds.attrs.get("experiment"), "complete": ds.attrs.get("complete")}
    )


def experiment_key(exp: Experiment) -> str:
    """A canonical text of the experiment (recorded in the output; --resume compares it)."""
    doc = dataclasses.asdict(dataclasses.replace(exp, initial=None))
    doc["initial"] = [np.asarray(a).tolist() for a in jax.tree.leaves(exp.initial)]
    return json.dumps(doc, sort_keys=True, default=str)


def finished_results(exp: Experiment, ds, work) -> list:
    """The results of the tasks ``ds`` (a partial sweep of ``exp``) marks as done."""
    if ds.attrs.get("experiment") != experiment_key(exp):
        raise InputError("resume", "the file holds another experiment", "run it afresh")
    fields = [name for name, _ in _build_first(exp).state_fields]
    grid_shape = [len(v) for v in exp.grid.values()]
    done = np.asarray(ds["task_done"].values)
    out = []
    for index, *_rest, x, _dtype, _compensated in work:
        gi, ii, hi, start = index
        g = np.unravel_index(gi, grid_shape) if grid_shape else ()
        stop = start + jax.tree.leaves(x)[0].shape[0]
        at = (*g, ii, hi, slice(start, stop))
        if np.all(done[at]):
            leaves = tuple(np.asarray(ds[f].values[at]) for f in fields)
            saved = leaves[0] if len(leaves) == 1 else leaves
            fail = tuple(np.asarray(ds[k].values[at]) for k in ("failed_step", "residual"))
            codes = np.asarray([REASON_LABELS.index(r) for r in ds["reason"].values[at]])
            out.append((index, saved, (*fail, codes.astype(np.int8))))
    return out


def _build_first(exp: Experiment):
    return _build(systems.get(exp.system), exp, _grid_points(exp)[0])


def cluster_size(cluster: str, parameter: str = "cluster") -> int:
    """N of "local:N" (N >= 1 workers), else InputError."""
    kind, _, n = str(cluster).partition(":")
    if kind != "local" or not n.isdigit() or int(n) < 1:
        raise InputError(parameter, f"expected local:N with N >= 1, got {cluster!r}")
    return int(n)


def on_dask(work, scheduler, cluster, collect, task=None):
    """``task`` (default ``run_task``) of every item of ``work`` on a Dask cluster (a
    running ``scheduler``, or a ``cluster="local:N"`` started here), each result passed
    to ``collect`` as it finishes."""
    task = run_task if task is None else task
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover
        raise InputError(
            "scheduler", "needs dask.distributed", "pip install 'dask[distributed]'"
        ) from None
    if cluster is not None:
        local = LocalCluster(
            n_workers=cluster_size(cluster),
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=cast(Any, None),  # no dashboard (dask accepts None)
        )
        with local, Client(local) as client:
            _gather(client, work, collect, task)
        return
    try:
        # Dask's own connect timeout does not cover a listener that accepts and never
        # answers (measured: hung past 100 s): the handshake is bounded here first
        asyncio.run(_probe(scheduler))
        client = Client(scheduler, timeout=_CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:  # a closed port, or a listener that is not Dask
        raise InputError(
            "scheduler",
            f"no Dask scheduler answered at {scheduler} within {_CONNECT_TIMEOUT} s "
            f"({type(exc).__name__})",
            "start one (dask scheduler) or check the address",
        ) from None
    with client:
        _gather(client, work, collect, task)


# seconds to wait for a scheduler to answer
_CONNECT_TIMEOUT = 5


async def _probe(scheduler: str) -> None:
    """Connect to ``scheduler`` and complete Dask's handshake within the timeout."""
    from distributed.comm.core import connect

    comm = await asyncio.wait_for(connect(scheduler, timeout=_CONNECT_TIMEOUT), _CONNECT_TIMEOUT)
    await comm.close()


def _gather(client, work, collect, task) -> None:
    from dask.distributed import as_completed

    for future in as_completed(client.map(task, work, pure=False, retries=3)):
        collect(future.result())


def _assemble(exp: Experiment, results):
    cls = systems.get(exp.system)
    points = _grid_points(exp)
    count = jax.tree.leaves(exp.initial)[0].shape[0]
    n_saves = exp.steps // exp.save_every + 1
    lead = [len(v) for v in exp.grid.values()] + [len(exp.integrators), len(exp.h), count, n_saves]
    first = _build(cls, exp, points[0])
    fields = first.state_fields
    shapes = [np.asarray(a).shape[1:] for a in jax.tree.leaves(exp.initial)]
    data = [np.full((*lead, *s), np.nan, dtype=exp.dtype) for s in shapes]
    failed = np.full(lead[:-1], -1, dtype=np.int64)
    residual = np.zeros(lead[:-1])
    reason = np.zeros(lead[:-1], dtype=np.int8)
    task_done = np.zeros(lead[:-1], dtype=bool)
    grid_shape = [len(v) for v in exp.grid.values()]
    for (gi, ii, hi, start), saved, fail in results:
        g = np.unravel_index(gi, grid_shape) if grid_shape else ()
        for arr, leaf in zip(data, jax.tree.leaves(saved), strict=True):
            arr[(*g, ii, hi, slice(start, start + leaf.shape[0]))] = leaf
        at = (*g, ii, hi, slice(start, start + len(fail[0])))
        failed[at], residual[at], reason[at] = fail
        task_done[at] = True
    dims = [*exp.grid, "integrator", "h", "sample", "save"]
    ds = {}
    sizes = {}
    for (name, cdims), arr in zip(fields, data, strict=True):
        ds[name] = (dims + list(cdims), arr, io.describe(first, name))
        sizes.update(zip(cdims, arr.shape[len(dims) :], strict=True))
    ds["failed_step"] = (dims[:-1], failed, io.FAILURE_ATTRS["failed_step"])
    ds["residual"] = (dims[:-1], residual, io.FAILURE_ATTRS["residual"])
    ds["reason"] = (dims[:-1], np.asarray(REASON_LABELS, dtype=object)[reason].astype(str),
                    io.FAILURE_ATTRS["reason"])  # fmt: skip
    ds["task_done"] = (dims[:-1], task_done, {"long_name": "whether the task ran"})
    # invariants at every grid point (parameters differ)
    for gi, point in enumerate(points):
        system = _build(cls, exp, point)
        g = np.unravel_index(gi, grid_shape) if grid_shape else ()
        x = tuple(a[g] for a in data)
        inv = system.invariants(x[0] if len(x) == 1 else x)
        for key, val in inv.items():
            if key not in ds:
                ds[key] = (dims, np.full(lead, np.nan), io.describe(first, key))
            ds[key][1][g] = np.asarray(val)
    coords = {
        "integrator": ("integrator", [integrator_label(spec) for spec in exp.integrators],
                       {"long_name": "integrator"}),
        "compensated": ("integrator", np.array([
            compensates(_make_integrator(spec, first), first, exp.compensated)
            for spec in exp.integrators], dtype=bool),
            {"long_name": "increments added by compensated summation"}),
        "h": ("h", np.asarray(exp.h, dtype=float), {"long_name": "time step", "units": "1"}),
        "sample": ("sample", np.arange(count), {"long_name": "initial state (batch member)"}),
        "save": ("save", np.arange(n_saves), {"long_name": "saved sample"}),
        "time": (("h", "save"), np.outer(exp.h, exp.save_every * np.arange(n_saves, dtype=float)),
                 io.describe(first, "time")),
    }  # fmt: skip
    coords.update(
        {d: (d, v, a) for d, (v, a) in io.dimension_coords(sizes, first.dimension_labels()).items()}
    )
    for key, values in exp.grid.items():
        numbers = np.asarray([np.asarray(v, dtype=float) for v in values])
        about = {"long_name": f"swept parameter {key}", "units": "1"}
        if numbers.ndim == 1:  # a number per grid point: the coordinate itself
            coords[key] = (key, numbers, about)
        else:  # a vector per grid point: its index, and the numbers beside it
            component = f"{key}_component"
            coords[key] = (key, np.arange(len(numbers)), {"long_name": f"{key} (grid index)"})
            coords[component] = (component, np.arange(1, numbers.shape[1] + 1),
                                 {"long_name": f"component of {key}"})  # fmt: skip
            coords[f"{key}_value"] = ((key, component), numbers, about)
    attrs = {**io.global_attrs(), "system": exp.system, "steps": exp.steps,
             "save_every": exp.save_every}  # fmt: skip
    attrs["experiment"] = experiment_key(exp)
    attrs["complete"] = int(bool(task_done.all()))
    attrs["mechint_version"] = __version__
    attrs["created"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    attrs.update({k: str(v) for k, v in exp.fixed.items()})
    import xarray as xr  # imported when used (see io.to_dataset)

    return xr.Dataset(ds, coords=coords, attrs=attrs)
