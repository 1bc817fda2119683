"""Trajectory ↔ xarray.Dataset ↔ NetCDF / CSV."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
from pathlib import Path

import jax
import numpy as np

from mechint._version import __version__
from mechint.errors import InputError

FORMATS = {".nc": "netcdf", ".csv": "csv"}


def _leaves(traj):
    leaves = jax.tree.leaves(traj.x)
    fields = traj.system.state_fields
    if len(leaves) != len(fields):
        raise ValueError("state leaves and system.state_fields disagree")
    out = [(name, dims, np.asarray(a)) for (name, dims), a in zip(fields, leaves, strict=True)]
    if traj.orientation is not None:
        out.append(("g", ("row", "col"), np.asarray(traj.orientation)))
    return out


def integrator_settings(integrator) -> str:
    """Every setting of ``integrator`` (its dataclass fields, nested) as JSON: what a
    resumed run must match besides the class (order, variant, scheme, solver tolerances)."""
    settings = _plain(integrator) if dataclasses.is_dataclass(integrator) else {}
    return json.dumps(settings, sort_keys=True)


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


def metadata(traj) -> dict:
    """Attributes recorded with every saved trajectory: the run's record and a checksum
    of the record and the saved data (``checksum``)."""
    requested = int(traj.stats.get("steps_requested", traj.steps))
    record = {
        **run_record(traj.system, traj.integrator, traj.h, traj.save_every, requested,
                     str(jax.tree.leaves(traj.x)[0].dtype)),
        "integrator_order": int(traj.integrator.traits.order),
        "steps": int(traj.steps),
        "complete": int(traj.steps >= requested),
    }  # fmt: skip
    return {
        **record,
        "checksum": checksum(record, traj.t, [(n, a) for n, _, a in _leaves(traj)]),
        "mechint_version": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


# the attributes a checksum covers: the run's record (not when or by which version)
CHECKED = ("system", "system_parameters", "integrator", "integrator_settings",
           "integrator_order", "dtype", "h", "steps", "steps_requested", "complete",
           "save_every")  # fmt: skip


def checksum(attrs: dict, t, arrays) -> str:
    """SHA-256 of the record attributes in ``CHECKED`` and of the saved times and arrays
    ((name, array) pairs: names, dtypes, shapes and bytes): any change to a file's data
    or record after it was written changes it."""
    digest = hashlib.sha256()
    record = {k: attrs.get(k) for k in CHECKED}
    digest.update(json.dumps(record, sort_keys=True, default=str).encode())
    for name, a in [("time", t), *arrays]:
        a = np.ascontiguousarray(a)
        digest.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        digest.update(a.tobytes())
    return "sha256:" + digest.hexdigest()


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray | jax.Array):
        return np.asarray(value).tolist()
    return value


def to_dataset(traj):
    """The trajectory as an ``xarray.Dataset`` (state variables plus invariants)."""
    lead = ("sample", "time") if traj.batched else ("time",)
    data = {}
    for name, dims, arr in _leaves(traj):
        data[name] = (lead + tuple(dims), arr)
    for name, values in traj.invariants().items():
        data[name] = (lead, values)
    member = lead[:-1]
    data["failed_step"] = (member, np.asarray(traj.failed_step, dtype=np.int64))
    data["residual"] = (member, np.asarray(traj.residual, dtype=np.float64))
    data["reason"] = (member, np.asarray(traj.reason).astype(str))
    coords = {"time": traj.t}
    attrs = metadata(traj)
    for key, value in traj.system.parameters().items():
        attrs[key] = np.asarray(value, dtype=float)
    import xarray as xr  # imported when used: 40 MB and 0.25 s a process otherwise

    return xr.Dataset(data, coords=coords, attrs=attrs)


def check_writable(path, parameter: str = "out", formats=FORMATS) -> Path:
    """Fail before any work if ``path`` has an unknown extension or cannot be written."""
    p = Path(path)
    if p.is_dir():
        raise InputError(parameter, f"{str(p)!r} is a directory", "give a file name")
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
    """Write to a temporary file beside ``path``, then rename it over ``path``: a reader
    (or a process killed at any moment) sees the old file or the new one, never a torn
    one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.part{path.suffix}")
    write(traj, tmp)
    with open(tmp, "rb+") as fh:  # on disk before it takes the name, and whole
        if tmp.suffix.lower() == ".nc" and fh.read(8) != _HDF5_SIGNATURE:
            raise OSError(f"{tmp} was not written completely (no HDF5 signature); kept "
                          f"{path} as it was")  # fmt: skip
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# the first bytes of an HDF5 (NetCDF-4) file whose superblock is at offset 0
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def write_netcdf(traj, path) -> None:
    to_dataset(traj).to_netcdf(path, engine="h5netcdf")


def write_csv(traj, path) -> None:
    """Wide CSV: '# key: value' metadata lines, then t[, sample], one column per component."""
    columns, names = [], ["t"]
    n = len(traj.t)
    batched = traj.batched
    batch = jax.tree.leaves(traj.x)[0].shape[0] if batched else 1
    if batched:
        names.append("sample")
        columns.append(np.repeat(np.arange(batch), n).astype(float))
        columns.insert(0, np.tile(traj.t, batch))
    else:
        columns.insert(0, traj.t)
    for name, _dims, arr in _leaves(traj):
        flat = arr.reshape(batch * n, -1)
        shape = arr.shape[(2 if batched else 1) :]
        for j, idx in enumerate(np.ndindex(*shape)):
            names.append(name + "".join(f"_{i + 1}" for i in idx))
            columns.append(flat[:, j])
    for name, values in traj.invariants().items():
        names.append(name)
        columns.append(np.asarray(values).reshape(-1))
    header = "\n".join(f"{k}: {v}" for k, v in metadata(traj).items())
    np.savetxt(
        path,
        np.column_stack(columns),
        delimiter=",",
        fmt="%.17g",
        header=header + "\n" + ",".join(names),
        comments="# ",
    )


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
            attrs = {}
            with open(path, errors="replace") as fh:
                for line in fh:
                    if not line.startswith("# ") or ": " not in line:
                        break
                    key, value = line[2:].rstrip("\n").split(": ", 1)
                    attrs[key] = value
    except (OSError, ValueError):
        return None
    return attrs if "mechint_version" in attrs else None


def read_csv(path) -> dict[str, np.ndarray]:
    """Columns of a CSV written by ``write_csv``, by name."""
    with open(path) as fh:
        header = [line for line in fh if line.startswith("#")]
    names = header[-1][2:].strip().split(",")
    data = np.loadtxt(path, delimiter=",", comments="#", ndmin=2)
    return {name: data[:, i] for i, name in enumerate(names)}


def write(traj, path) -> None:
    """NetCDF or CSV by extension."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        check_writable(path)
    (write_netcdf if fmt == "netcdf" else write_csv)(traj, path)
