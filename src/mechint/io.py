"""Trajectory ↔ xarray.Dataset ↔ NetCDF / CSV.

Longer than the house's 600 lines because a file's layout is one format: the variables,
their attributes and descriptions, NetCDF and CSV, written and read by the same tables.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from mechint._validate import reference
from mechint._version import __version__
from mechint.errors import InputError
from mechint.maps import Integrator

FORMATS = {".nc": "netcdf", ".csv": "csv"}


def _leaves(traj):
    leaves = jax.tree.leaves(traj.x)
    fields = traj.system.state_fields
    if len(leaves) != len(fields):
        raise ValueError("state leaves and system.state_fields disagree")
    out = [(name, dims, np.asarray(a)) for (name, dims), a in zip(fields, leaves, strict=True)]
    if traj.orientation is not None:
        out.append(("g", ("row", "col"), np.asarray(traj.orientation)))
    if getattr(traj, "clock", None) is not None:
        out.append(("clock", ("clock_entry",), np.asarray(traj.clock)))
    if getattr(traj, "tangent", None) is not None:
        out.append(("tangent", ("tangent_entry",), np.asarray(traj.tangent)))
    dims = getattr(traj.system, "multiplier_dims", None)
    if dims:  # a constrained system's multipliers at every sample (the constraint forces)
        from mechint.trajectory import multipliers

        out.append(
            ("multipliers", dims, multipliers(traj.system, traj.x, 2 if traj.batched else 1))
        )
    return out


def integrator_settings(integrator) -> str:
    """Every setting of ``integrator`` (its dataclass fields, nested) as JSON: what a
    resumed run must match besides the class (order, variant, scheme, solver tolerances).
    A map inside it (a composition's base, the map a wrapper runs) is named by its class
    too (``"class"``): Störmer–Verlet and the midpoint rule have the same fields."""
    settings = _plain(integrator) if dataclasses.is_dataclass(integrator) else {}
    return json.dumps(settings, sort_keys=True, default=str)  # Decimal coefficients as written


def run_record(system, integrator, h, save_every, steps_requested, dtype) -> dict:
    """What defines a run (the attributes a resumed run must match): the system and its
    parameters, the integrator and every setting, h, save_every, steps and dtype."""
    return {
        "system": type(system).__name__,
        "system_parameters": json.dumps(system.parameters()),
        "integrator": type(integrator).__name__,
        "integrator_settings": integrator_settings(integrator),
        "h": float(h),
        "save_every": int(save_every),
        "steps_requested": int(steps_requested),
        "dtype": str(dtype),
    }


def sample_arrays(traj) -> dict[str, np.ndarray]:
    """What a file holds per saved sample, by variable name: the time, the state fields,
    the attitude (when carried) and the invariants (time along axis 0, or 1 for a batch's
    arrays other than the time)."""
    arrays = {"time": np.asarray(traj.t, dtype=np.float64)}
    arrays.update({name: a for name, _dims, a in _leaves(traj)})
    arrays.update(traj.invariants())
    return arrays


def tail_arrays(traj) -> dict[str, np.ndarray]:
    """What a file holds per member at the run's end: the failure record (failed step,
    residual, reason) and, for a compensated run, the correction at the last sample
    (``<field>_compensation``), for a map with coordinates of its own the loop's state
    there (``<field>_loop``): what a resumed run continues from."""
    tail = {
        "failed_step": np.asarray(traj.failed_step, dtype=np.int64),
        "residual": np.asarray(traj.residual, dtype=np.float64),
        "reason": np.asarray(traj.reason).astype(str),
    }
    if traj.compensation is not None:
        axis = 1 if traj.batched else 0
        for (name, _dims), e in zip(_fields(traj.system, traj.orientation is not None),
                                    jax.tree.leaves(traj.compensation), strict=True):  # fmt: skip
            tail[f"{name}_compensation"] = np.take(np.asarray(e), -1, axis=axis)
    if getattr(traj, "loop_state", None) is not None:  # the map's own coordinates
        for (name, _dims), z in zip(traj.system.state_fields, jax.tree.leaves(traj.loop_state),
                                    strict=True):  # fmt: skip
            tail[f"{name}{LOOP}"] = np.asarray(z)
    stopped = np.asarray(getattr(traj, "stopped_step", -1), dtype=np.int64)
    if np.any(stopped >= 0):  # a terminal event ended a member's run: which, where
        shape = np.shape(tail["failed_step"])
        tail["stopped_step"] = np.broadcast_to(stopped, shape).copy()
        tail["stopped_by"] = np.broadcast_to(np.asarray(traj.stopped_by, dtype=str), shape).copy()
    for key, c in getattr(traj, "events", {}).items():  # the crossings of each event
        tail[f"{key}{CROSSING}time"] = np.asarray(c.t, dtype=np.float64)
        for (name, _dims), a in zip(traj.system.state_fields, jax.tree.leaves(c.x), strict=True):
            tail[f"{key}{CROSSING}{name}"] = np.asarray(a)
        tail[f"{key}{CROSSING}count"] = np.asarray(c.count, dtype=np.int64)
        tail[f"{key}{CROSSING}overflowed"] = np.asarray(c.overflowed, dtype=np.int8)
    return tail


# the map's own coordinates at the last sample, per state field: <field>_loop
LOOP = "_loop"

# an event's arrays in a file: <event>_crossing_time, _count, _overflowed, _<field>, along
# the dimension <event>_crossing (its max_events slots)
CROSSING = "_crossing_"


def tail_dims(system, name: str, member: tuple) -> tuple[str, ...]:
    """The dimensions of an end-of-run array (``tail_arrays``) in a file."""
    if name.endswith("_compensation"):
        return member + tuple(dict(_fields(system, True))[name.removesuffix("_compensation")])
    if name.endswith(LOOP):
        return member + tuple(dict(system.state_fields)[name.removesuffix(LOOP)])
    if CROSSING in name:
        key, _, what = name.rpartition(CROSSING)
        if what in ("count", "overflowed"):
            return member
        cross = (key + CROSSING.rstrip("_"),)
        return member + cross + (() if what == "time" else tuple(dict(system.state_fields)[what]))
    return member


def _fields(system, oriented: bool, clocked: bool = False, tangent: bool = False,
            multipliers: bool = False) -> list[tuple[str, tuple]]:  # fmt: skip
    """The state fields of a file (and the attitude ``g`` when carried, the clock of
    variable steps, the tangent part of ``integrators.Tangent``, a constrained system's
    multipliers)."""
    dims = getattr(system, "multiplier_dims", None) if multipliers else None
    return [*system.state_fields, *([("g", ("row", "col"))] if oriented else []),
            *([("clock", ("clock_entry",))] if clocked else []),
            *([("tangent", ("tangent_entry",))] if tangent else []),
            *([("multipliers", dims)] if dims else [])]  # fmt: skip


def metadata(traj) -> dict:
    """Attributes recorded with every saved trajectory: the run's record and a checksum
    of the record and everything the file holds (``checksum``)."""
    requested = int(traj.stats.get("steps_requested", traj.steps))
    dtype = str(jax.tree.leaves(traj.x)[0].dtype)
    record = run_record(traj.system, traj.integrator, traj.h, traj.save_every, requested, dtype)
    digest = Digest()
    for name, a in sample_arrays(traj).items():
        digest.update(name, a, 1 if traj.batched and name != "time" else 0)
    for name, a in tail_arrays(traj).items():
        digest.set(name, a)
    stopped = int(np.sum(np.asarray(getattr(traj, "stopped_step", -1)) >= 0))
    return file_attrs(record, traj.integrator, traj.steps, digest, stopped=stopped)


def file_attrs(record: dict, integrator, steps: int, digest: Digest, stopped: int = 0) -> dict:
    """The attributes of a run's file: its ``record`` (``run_record``), the integrator's
    order, the steps done, whether the run is complete (every member ran every step
    requested, or ended by a failure that ``failed_step`` records), how many members a
    terminal event ended (``stopped``, with ``stopped_step`` and ``stopped_by`` per
    member: such a run is finished but not complete, and not continued by ``--resume``),
    the checksum of record and data, the version that wrote it and when."""
    attrs = {
        **record,
        "integrator_order": int(integrator.traits.order),
        "steps": int(steps),
        "complete": int(steps >= record["steps_requested"] and not stopped),
    }
    if stopped:
        attrs["stopped"] = int(stopped)
    return {
        **attrs,
        "checksum": digest.value(attrs),
        "mechint_version": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


# the attributes a checksum covers: the run's record (not when or by which version)
CHECKED = ("system", "system_parameters", "integrator", "integrator_settings",
           "integrator_order", "dtype", "h", "steps", "steps_requested", "complete",
           "save_every")  # fmt: skip
# the checksum's scheme (a file of another scheme cannot be checked by this version):
# 3 covers every variable (invariants, failure record, compensation too); 2 covered the
# time and the state only
CHECKSUM_SCHEME = "sha256/3:"


class Digest:
    """The checksum of a run's file, fed slice by slice: SHA-256 of the record attributes
    in ``CHECKED``, per saved array (the times, the state fields, the attitude, the
    invariants) of its name, dtype, the shape of one sample and its bytes in time order,
    and per end-of-run array (``set``: the failure record, the compensation) of its
    name and values.  Fed whole or in slices along time, it gives the same value, so a
    run written as it goes and a trajectory written at once agree, and any change to
    the data or the record after it was written changes it.  NaN counts as one value
    whatever its bits (a reader that masks fill values gives back the canonical NaN)."""

    def __init__(self):
        self._arrays: dict[str, tuple[str, Any]] = {}
        self._tail: dict[str, str] = {}

    def set(self, name: str, a) -> None:
        """A value the file holds once per run (replaces an earlier one)."""
        a = np.asarray(a)
        if a.dtype.kind in "OUS":
            text = json.dumps(a.astype(str).tolist())
        else:
            a = np.where(np.isnan(a), np.asarray(np.nan, a.dtype), a) if a.dtype.kind in "fc" else a
            text = (
                f"{a.dtype.str}|{a.shape}|"
                + hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
            )
        self._tail[name] = text

    def update(self, name: str, a, time_axis: int = 0) -> None:
        a = np.moveaxis(np.asarray(a), time_axis, 0)
        key = f"{name}|{a.dtype.str}|{a.shape[1:]}"
        known, hasher = self._arrays.setdefault(name, (key, hashlib.sha256()))
        if known != key:
            raise ValueError(f"array {name!r} changed dtype or shape: {known} then {key}")
        if a.dtype.kind in "fc" and np.isnan(a).any():  # one NaN (readers may canonicalise)
            a = np.where(np.isnan(a), np.asarray(np.nan, a.dtype), a)
        hasher.update(np.ascontiguousarray(a).tobytes())

    def value(self, attrs: dict) -> str:
        digest = hashlib.sha256()
        record = {k: _python(attrs.get(k)) for k in CHECKED}
        digest.update(json.dumps(record, sort_keys=True, default=str).encode())
        for name in sorted(self._arrays):
            key, hasher = self._arrays[name]
            digest.update(f"{key}|{hasher.hexdigest()}|".encode())
        for name in sorted(self._tail):
            digest.update(f"{name}|{self._tail[name]}|".encode())
        return CHECKSUM_SCHEME + digest.hexdigest()


def _python(value):
    """A NumPy scalar as the Python number it holds (as a file's reader gives it)."""
    return value.item() if isinstance(value, np.generic) else value


def _plain(value, top: bool = True):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name), False) for f in dataclasses.fields(value)}
        if isinstance(value, Integrator) and not top:  # the outer class is ``integrator``
            out["class"] = type(value).__name__
        return out
    if isinstance(value, np.ndarray | jax.Array):
        return np.asarray(value).tolist()
    if callable(value) and not isinstance(value, type):  # (its repr holds its address)
        return reference(value)
    return value


FAILURE_ATTRS = {
    "failed_step": {"long_name": "step that failed (-1: none)", "units": "1"},
    "residual": {"long_name": "residual of the failed step (0: none)", "units": "1"},
    "reason": {"long_name": "why the step failed ('ok': it did not)"},
    "stopped_step": {
        "long_name": "step at whose end a terminal event ended the run (-1: none did)",
        "units": "1",
    },
    "stopped_by": {"long_name": "the terminal event that ended the run ('': none)"},
}


def dimension_coords(sizes: dict[str, int], labels: dict | None = None
                     ) -> dict[str, tuple[np.ndarray, dict]]:  # fmt: skip
    """Coordinates of every dimension but time: the batch member (from 0, as in the CSV
    ``sample`` column) and the components (from 1, as in the CSV names ``m_1``...), or
    the system's names for them (``labels``: ``System.dimension_labels``, the bodies)."""
    from mechint.systems.base import DIMENSIONS

    out = {}
    for dim, size in sizes.items():
        if dim == "time":
            continue
        attrs = {"long_name": DIMENSIONS.get(dim, dim)}
        if labels and dim in labels and len(labels[dim]) == size:
            out[dim] = (np.asarray(labels[dim], dtype=str), attrs)
            continue
        start = 0 if dim == "sample" else 1
        out[dim] = (np.arange(start, start + size), attrs)
    return out


def global_attrs() -> dict:
    """The attributes of every NetCDF file besides the run's record."""
    return {"Conventions": "CF-1.10", "source": f"mechint {__version__}", "comment": UNITS_NOTE}


def to_dataset(traj):
    """The trajectory as an ``xarray.Dataset`` (state variables plus invariants), every
    variable with its ``long_name`` and ``units``, every dimension with a coordinate."""
    lead = ("sample", "time") if traj.batched else ("time",)
    data, sizes = {}, {}
    system = traj.system
    for name, dims, arr in _leaves(traj):
        data[name] = (lead + tuple(dims), arr, describe(system, name))
        sizes.update(zip(lead + tuple(dims), np.shape(arr), strict=True))
    for name, values in traj.invariants().items():
        data[name] = (lead, values, describe(system, name))
    member = lead[:-1]
    data["failed_step"] = (member, np.asarray(traj.failed_step, dtype=np.int64),
                           FAILURE_ATTRS["failed_step"])  # fmt: skip
    data["residual"] = (member, np.asarray(traj.residual, dtype=np.float64),
                        FAILURE_ATTRS["residual"])  # fmt: skip
    data["reason"] = (member, np.asarray(traj.reason).astype(str), FAILURE_ATTRS["reason"])
    for name, a in tail_arrays(traj).items():
        if name.endswith(("_compensation", LOOP)) or CROSSING in name:
            data[name] = (tail_dims(system, name, member), a, describe(system, name))
        elif name.startswith("stopped_"):
            data[name] = (member, a, FAILURE_ATTRS[name])
    coords = {"time": ("time", traj.t, describe(system, "time"))}
    labels = system.dimension_labels()
    coords.update({d: (d, v, a) for d, (v, a) in dimension_coords(sizes, labels).items()})
    attrs = {**global_attrs(), **metadata(traj)}
    attrs.update(parameter_attrs(system, attrs))
    import xarray as xr  # imported when used: 40 MB and 0.25 s a process otherwise

    return xr.Dataset(data, coords=coords, attrs=attrs)


def check_writable(path, parameter: str = "out", formats=FORMATS) -> Path:
    """Fail before any work if ``path`` has an unknown extension or cannot be written."""
    try:
        return _check_writable(Path(path), parameter, formats)
    except OSError as exc:  # a name too long for the file system, a loop of links
        shown = str(path) if len(str(path)) <= 80 else str(path)[:77] + "..."
        raise InputError(parameter, f"cannot use {shown!r}: {exc.strerror}",
                         "choose a shorter path") from None  # fmt: skip


def _check_writable(p: Path, parameter: str, formats) -> Path:
    if p.is_symlink():  # a dangling link would be "created" as a stray file at its target
        raise InputError(parameter, f"{str(p)!r} is a symbolic link", "give the file's own path")
    if p.is_dir():
        raise InputError(parameter, f"{str(p)!r} is a directory", "give a file name")
    if p.exists() and not p.is_file():  # a FIFO or a device: opening it would block
        raise InputError(parameter, f"{str(p)!r} is not a regular file", "give a file name")
    if p.suffix.lower() not in formats:
        raise InputError(
            parameter,
            f"unknown file type {p.suffix or '(none)'!r} for {str(p)!r}",
            "use one of " + ", ".join(formats),
        )
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(
            parameter, f"folder {str(parent)!r} does not exist", "create it or choose another path"
        )
    existed = p.exists()
    try:
        with open(p, "ab"):
            pass
        if not existed:
            p.unlink()
    except OSError as exc:
        raise InputError(parameter, f"cannot write {str(p)!r}: {exc.strerror}") from None
    return p


def write_atomic(traj, path) -> None:
    """Write ``path`` so that a reader (or a process killed at any moment) sees the old
    file or the new one, never a torn one: NetCDF to a temporary file renamed over it;
    CSV likewise, its sidecar after it (``write_csv``)."""
    write(traj, path)


# the first bytes of an HDF5 (NetCDF-4) file whose superblock is at offset 0
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def replace_synced(tmp: Path, path: Path) -> None:
    """``tmp`` on disk (fsync), checked whole (an HDF5 signature for .nc), then renamed
    to ``path``."""
    with open(tmp, "rb+") as fh:
        if path.suffix.lower() == ".nc" and fh.read(8) != _HDF5_SIGNATURE:
            raise OSError(f"{tmp} was not written completely (no HDF5 signature); kept "
                          f"{path} as it was")  # fmt: skip
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def part_path(path: Path) -> Path:
    """The temporary name a file is written under before it takes ``path``."""
    return path.with_name(f".{path.name}.part{path.suffix}")


def write_netcdf(traj, path) -> None:
    """The trajectory as NetCDF-4 (``write_netcdf_slices``, as a streamed run writes it),
    atomically."""
    path = Path(path)
    arrays = sample_arrays(traj)
    layout = {k: (a.dtype, a.shape) for k, a in arrays.items()}
    tmp = part_path(path)
    write_netcdf_slices(tmp, traj.system, metadata(traj), traj.batched, len(traj.t), layout,
                        tail_arrays(traj), [arrays])  # fmt: skip
    replace_synced(tmp, path)


def write_netcdf_slices(path: Path, system, attrs: dict, batched: bool, total: int,
                        layout: dict, tail: dict, slices) -> None:  # fmt: skip
    """The one NetCDF writer: a run's file at ``path``, its samples given by ``slices``
    (dicts of arrays by name, in time order, ``total`` samples in all), ``layout`` the
    dtype and the shape of one slice of each per-sample array (the time, the state
    fields, ``g``, the invariants), ``tail`` the per-member end-of-run arrays
    (``tail_arrays``).  Every variable carries ``long_name`` and ``units``, every
    dimension a coordinate (CF conventions)."""
    import h5netcdf
    import h5py

    fields = _fields(system, "g" in layout, "clock" in layout, "tangent" in layout,
                     "multipliers" in layout)  # fmt: skip
    field_names = {name for name, _ in fields}
    invariants = [k for k in layout if k != "time" and k not in field_names]
    lead = ("sample", "time") if batched else ("time",)
    axis = len(lead) - 1
    member = lead[:-1]
    with h5netcdf.File(path, "w") as fh:
        dims = {"time": total}
        for name, cdims in fields:
            shape = layout[name][1]
            dims.update(zip(lead + tuple(cdims), (*shape[:axis], total, *shape[axis + 1 :]),
                            strict=True))  # fmt: skip
        for name, a in tail.items():  # the events' crossing dimensions
            dims.update(zip(tail_dims(system, name, member), np.shape(a), strict=True))
        fh.dimensions = dims
        fh.create_variable("time", ("time",), np.float64).attrs.update(describe(system, "time"))
        for dim, (values, dim_attrs) in dimension_coords(dims, system.dimension_labels()).items():
            if values.dtype.kind == "U":  # names (the bodies'): variable-length text
                var = fh.create_variable(dim, (dim,), h5py.string_dtype())
                var[...] = values.astype(object)
            else:
                var = fh.create_variable(dim, (dim,), values.dtype, data=values)
            var.attrs.update(dim_attrs)
        for name, cdims in fields:
            var = fh.create_variable(name, lead + tuple(cdims), layout[name][0])
            var.attrs.update(describe(system, name))
        for name in invariants:
            fh.create_variable(name, lead, layout[name][0]).attrs.update(describe(system, name))
        for name, a in tail.items():
            if name in ("reason", "stopped_by"):
                var = fh.create_variable(name, member, h5py.string_dtype())
                var[...] = np.asarray(a).astype(object)
            else:
                var = fh.create_variable(name, tail_dims(system, name, member),
                                         np.asarray(a).dtype, data=a)  # fmt: skip
            var.attrs.update(FAILURE_ATTRS.get(name) or describe(system, name))
        at = 0
        for part in slices:
            n = np.shape(part["time"])[0]
            s = slice(at, at + n)
            for name, a in part.items():
                var = fh.variables[name]
                if batched and name != "time":
                    var[:, s] = a
                else:
                    var[s] = a
            at += n
        if at != total:
            raise OSError(f"wrote {at} samples, expected {total}")
        attrs = {**global_attrs(), **attrs}
        fh.attrs.update({**attrs, **parameter_attrs(system, attrs)})


def parameter_attrs(system, taken) -> dict:
    """The system's parameters as attributes beside ``taken`` (the run's record and the
    file's metadata): a parameter named as one of those (a wrapped system's ``system``)
    is written as ``parameter_<name>``, so that it never replaces what the file says of
    its run (the record a resumed run must match)."""
    out = {}
    for key, value in system.parameters().items():
        out[f"parameter_{key}" if key in taken else key] = parameter_attr(value)
    return out


def parameter_attr(value):
    """A system parameter as a NetCDF attribute: numbers (a scalar or a vector) as
    floats, text as text, anything else (None, a flag, a table, a matrix) as its JSON
    text (never a number it is not: None is not NaN)."""
    if isinstance(value, str):
        return value
    if value is not None and not isinstance(value, bool | dict):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            arr = None
        if arr is not None and arr.ndim <= 1:
            return arr
    return json.dumps(value)


def write_csv(traj, path) -> None:
    """Plain CSV that ``pandas.read_csv`` and ``np.genfromtxt(names=True, delimiter=",")``
    read as is: a header line of column names (t, for a batch ``sample``, one column per
    state component and per invariant), then one row per saved sample (for a batch, the
    members of one time in turn).  The run's record (system, parameters, integrator,
    settings, h, provenance, checksum), the failure record and the columns' meaning and
    units go to the sidecar ``<name>.csv-metadata.json`` (W3C CSV on the Web;
    ``write_csv_metadata``).  The CSV is written under a temporary name and renamed, and
    only then the sidecar: a kill at any moment leaves no sidecar that claims more than
    its CSV holds."""
    path = Path(path)
    arrays = [(name, a) for name, _dims, a in _leaves(traj)]
    invariants = traj.invariants()
    block = csv_block(traj.t, arrays, invariants, traj.batched)
    names = csv_names(arrays, invariants, traj.batched)
    tmp = part_path(path)
    with open(tmp, "w") as fh:
        fh.write(csv_header(names))
        write_csv_rows(fh, block)
    replace_synced(tmp, path)
    fields = [n for n, _ in arrays]
    write_csv_metadata(path, metadata(traj), names, traj.system, fields, tail_arrays(traj))


def write_crossings_csv(traj, key: str, path) -> None:
    """The crossings of the event ``key`` as plain CSV (``mechint section``): one row per
    crossing, in each member's order (columns ``sample`` for a batch, ``crossing``, t,
    each state component and each invariant at the crossing), the run's record in the
    sidecar as ``write_csv`` writes it; written under a temporary name, renamed, then
    the sidecar."""
    from mechint.trajectory import invariants as invariants_of

    path = Path(path)
    c = traj.events[key]
    count = np.atleast_1d(np.asarray(c.count))
    fields = [name for name, _ in traj.system.state_fields]
    leaves = [np.asarray(a) for a in jax.tree.leaves(c.x)]
    if not traj.batched:  # one member: a leading axis of 1
        leaves = [a[None] for a in leaves]
    t = np.atleast_2d(np.asarray(c.t, dtype=np.float64))
    rows_of = [(b, k) for b, n in enumerate(count) for k in range(int(n))]
    members = np.array([b for b, _ in rows_of], dtype=int)
    index = np.array([k for _, k in rows_of], dtype=int)
    states = jax.tree.unflatten(jax.tree.structure(c.x), [a[members, index] for a in leaves])
    values = invariants_of(traj.system, states, 1) if rows_of else {}
    arrays = [(f, a) for f, a in zip(fields, jax.tree.leaves(states), strict=True)]
    names = ["sample"] if traj.batched else []
    names += ["crossing", *csv_names(arrays, values, False)]
    columns = [members[:, None].astype(float)] if traj.batched else []
    columns += [index[:, None].astype(float), t[members, index][:, None]]
    columns += [np.reshape(a, (len(rows_of), -1)) for _, a in arrays]
    columns += [np.reshape(np.asarray(v, dtype=np.float64), (len(rows_of), -1))
                for v in values.values()]  # fmt: skip
    tmp = part_path(path)
    with open(tmp, "w") as fh:
        fh.write(csv_header(names))
        write_csv_rows(fh, np.hstack(columns) if rows_of else np.zeros((0, len(names))))
    replace_synced(tmp, path)
    write_csv_metadata(path, metadata(traj), names, traj.system, fields, tail_arrays(traj))


def csv_names(arrays, invariants: dict, batched: bool) -> list[str]:
    """The CSV columns of ``arrays`` ((name, array) pairs, time leading, or after the
    member axis for a batch) and ``invariants``."""
    names = ["t", *(["sample"] if batched else [])]
    for name, a in arrays:
        shape = np.shape(a)[2 if batched else 1 :]
        names += [name + "".join(f"_{i + 1}" for i in idx) for idx in np.ndindex(*shape)]
    return names + list(invariants)


def csv_header(names: list[str]) -> str:
    return ",".join(names) + "\n"


def csv_metadata_path(path) -> Path:
    """The sidecar of a CSV file: ``run.csv`` → ``run.csv-metadata.json`` (the name CSV on
    the Web gives it)."""
    path = Path(path)
    return path.with_name(path.name + "-metadata.json")


UNITS_NOTE = (
    "mechint's models are nondimensional: every quantity is in the units its parameters and "
    "initial state were given in (time in the units of h); units = '1' (CF: dimensionless)"
)


def describe(system, name: str) -> dict:
    """CF-style attributes of a saved variable: ``long_name`` (``System.long_name``) and
    ``units``."""
    if name == "time":
        return {"long_name": "time", "units": "1"}
    if name == "g":
        return {"long_name": "attitude g ∈ SO(n): body frame to space frame", "units": "1"}
    if name == "clock":
        return {"long_name": "variable steps: physical time since the start, step density",
                "units": "1"}  # fmt: skip
    if name == "tangent":
        return {"long_name": "tangent vectors (integrators.Tangent): k, steps, MEGNO sums, "
                "log growth sums, orthonormal vectors", "units": "1"}  # fmt: skip
    if name.endswith("_compensation"):
        field = name.removesuffix("_compensation")
        return {
            "long_name": f"Kahan–Babuška correction of {describe(system, field)['long_name']}"
            " at the last sample (a resumed run continues from it)",
            "units": "1",
        }
    if name.endswith(LOOP):
        field = name.removesuffix(LOOP)
        return {
            "long_name": f"the map's own coordinates in place of {field} "
            f"({describe(system, field)['long_name']}) at the last sample (a resumed run "
            "continues from them)",
            "units": "1",
        }
    if CROSSING in name:
        key, _, what = name.rpartition(CROSSING)
        if what == "count":
            return {"long_name": f"number of crossings of event {key!r} kept", "units": "1"}
        if what == "overflowed":
            return {"long_name": f"1 where event {key!r} was crossed more often than kept",
                    "units": "1"}  # fmt: skip
        what = "time" if what == "time" else describe(system, what)["long_name"]
        return {"long_name": f"{what} at each crossing of event {key!r} (NaN past the count)",
                "units": "1"}  # fmt: skip
    return {"long_name": system.long_name(name), "units": "1"}


def write_csv_metadata(path, attrs: dict, names: list[str], system, fields: list[str],
                       tail: dict) -> None:  # fmt: skip
    """The sidecar of ``path`` (written whole, then renamed into place): the run's record
    and its end-of-run arrays (``tail``: failure record, compensation) under
    ``mechint``, and a CSV-on-the-Web table schema describing every column (``fields``:
    the state variables, whose components are the columns ``name_i..``)."""
    columns = []
    for name in names:
        column = {"name": name, "titles": name, "datatype": "double"}
        if name == "t":
            column |= {"dc:description": "time (in the units of h)", "unit": "1"}
        elif name == "sample":
            column |= {"datatype": "integer", "dc:description": "batch member"}
        elif name == "crossing":
            column |= {"datatype": "integer", "dc:description": "the crossing's number in its run"}
        else:
            field = next((f for f in fields if name.startswith(f + "_")), None)
            info = describe(system, field or name)
            index = name[len(field) + 1 :].replace("_", ", ") if field else ""
            column["dc:description"] = info["long_name"] + (f" [{index}]" if index else "")
            column["unit"] = info["units"]
        columns.append(column)
    sidecar = {
        "@context": "http://www.w3.org/ns/csvw",
        "url": Path(path).name,
        "dc:description": UNITS_NOTE,
        "tableSchema": {"columns": columns},
        "mechint": {k: _json_value(v) for k, v in attrs.items()}
        | {k: _json_array(v) for k, v in tail.items()},
    }
    out = csv_metadata_path(path)
    tmp = out.with_name(f".{out.name}.part")
    with open(tmp, "w") as fh:
        fh.write(json.dumps(sidecar, indent=1, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, out)


def _json_array(a) -> list:
    """An array as JSON lists, NaN as null (JSON has no NaN)."""
    a = np.asarray(a)
    if a.dtype.kind == "f" and np.isnan(a).any():
        return (
            [None if v != v else v for v in a.ravel().tolist()]
            if a.ndim <= 1
            else [_json_array(row) for row in a]
        )
    return a.tolist()


def _json_value(v):
    if isinstance(v, np.generic):
        return v.item()
    return v


def csv_block(t, arrays, invariants: dict, batched: bool) -> np.ndarray:
    """The CSV rows of these samples, time-major (for a batch, one row per member of each
    time), so that a run's rows can be written chunk after chunk."""
    t = np.asarray(t, dtype=np.float64)
    n = len(t)
    batch = np.shape(arrays[0][1])[0] if batched else 1
    if batched:
        lead = [np.repeat(t, batch), np.tile(np.arange(batch, dtype=float), n)]
    else:
        lead = [t]

    def flat(a):  # (time, ...) or (batch, time, ...) -> (time * batch, -1)
        a = np.moveaxis(np.asarray(a), 0, 1) if batched else np.asarray(a)
        return a.reshape(n * batch, -1)

    columns = [c[:, None] for c in lead]
    columns += [flat(a).astype(np.float64) for _name, a in arrays]
    columns += [flat(v).astype(np.float64) for v in invariants.values()]
    return np.hstack(columns)


def write_csv_rows(fh, block: np.ndarray) -> None:
    np.savetxt(fh, block, delimiter=",", fmt="%.17g")


def saved_attrs(path) -> dict | None:
    """The record of a file written by mechint (NetCDF attributes or CSV header), or None
    when ``path`` does not exist or is not such a file."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        if path.suffix.lower() == ".nc":
            import h5netcdf

            with h5netcdf.File(path, "r") as fh:
                attrs = {k: v.item() if isinstance(v, np.generic) else v
                         for k, v in fh.attrs.items()}  # fmt: skip
        else:
            sidecar = csv_metadata_path(path)
            if not sidecar.is_file():
                return None
            document = json.loads(sidecar.read_text())
            attrs = document.get("mechint", {}) if isinstance(document, dict) else None
    except (OSError, ValueError, RecursionError):  # RecursionError: a crafted deep nesting
        return None
    if not isinstance(attrs, dict):  # a sidecar that is a list, null, a number: not ours
        return None
    return attrs if "mechint_version" in attrs else None


def same_attr(stored, value) -> bool:
    """Whether a file's attribute equals ``value`` (a crafted file may hold an array, or
    anything, where mechint writes a number or a text: never equal, never an error)."""
    try:
        return bool(stored == value)
    except (ValueError, TypeError):
        return False


def check_stored(path, parameter: str) -> None:
    """Refuse (``InputError`` naming ``parameter``) a NetCDF file that declares more data
    than it stores, before anything reads it: every variable mechint writes is stored
    whole and uncompressed, so one whose stored bytes fall short of its declared size is
    unwritten space a reader would fill with fill values (a crafted 14 kB file can declare
    10¹¹ samples), or compressed by someone else.  Costs one pass over the file's headers."""
    import h5py

    name = repr(str(path))
    short: list[str] = []

    def visit(key, obj):
        if not isinstance(obj, h5py.Dataset) or obj.shape is None:
            return
        label = obj.attrs.get("NAME", b"")
        if isinstance(label, bytes) and label.startswith(b"This is a netCDF dimension"):
            return  # a dimension without values: nothing a reader reads
        if obj.id.get_storage_size() < obj.size * obj.dtype.itemsize:
            short.append(f"{key} {obj.shape}")

    try:
        with h5py.File(path, "r") as fh:
            fh.visititems(visit)
    except (OSError, ValueError) as exc:
        raise InputError(parameter, f"cannot read {name}: {exc}") from None
    if short:
        raise InputError(parameter, f"{name} declares more data than it stores "
                         f"({', '.join(short[:3])}): it was not written by mechint or was "
                         "cut short", "run it again without --resume (--overwrite)")  # fmt: skip


def read_csv(path) -> dict[str, np.ndarray]:
    """Columns of a CSV written by ``write_csv``, by name."""
    with open(path) as fh:
        names = fh.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {name: data[:, i] for i, name in enumerate(names)}


def write(traj, path) -> None:
    """NetCDF or CSV by extension, atomically."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        check_writable(path)
    if fmt == "netcdf":
        write_netcdf(traj, path)
    else:
        write_csv(traj, path)
