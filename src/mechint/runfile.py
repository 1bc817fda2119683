"""A run's file, written as the run goes: memory bounded by a chunk, each checkpoint
O(chunk) (amortised), and a file that a kill at any moment leaves whole.

HDF5 (NetCDF-4) cannot be appended in place safely: a process killed while it holds the
file open for writing leaves it unreadable (measured: 3 kills of 3, "bad object header
version number", with a flush after every append).  So a run writes each checkpoint as
a *segment* (the new samples, their invariants and a SHA-256 of them, as ``.npz``
written under a temporary name and renamed) in a folder beside ``--out``, and *merges*
the segments into ``--out`` (a new file built by slices from the old one and the
segments, then renamed over it) when the segments hold as many samples as ``--out``:
each merge at least doubles the file, so all merges together copy a sample at most
about twice, and memory never holds more than a slice.  ``--out`` is at every moment a
whole file, ``complete = 0`` until the run ends; the segments hold the rest, and
``--resume`` takes both, after checking every checksum.

Both formats are written this way; NetCDF files can be continued (``--resume``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from mechint import io

# numbers per slice of a merge (and per segment at most): bounds the memory of a run
SLICE_NUMBERS = 1 << 21
# a stop (SIGINT, SIGTERM, a failed step) merges the segments when the copy is at most
# this many bytes (a few seconds); a larger run keeps them for --resume
STOP_MERGE_BYTES = 1 << 30


def segment_dir(out: Path) -> Path:
    return out.with_name(f".{out.name}.chunks")


@dataclasses.dataclass
class Resumed:
    """What a file and its segments hold, checked (``RunFile.read``)."""

    attrs: dict  # the attributes of --out
    found: str  # the checksum of what --out holds (== attrs["checksum"] unless changed)
    samples: int  # samples in --out and the segments together
    first: list  # the first sample's arrays (state leaves, then g)
    last: list  # the last sample's arrays
    digest: io.Digest  # fed with every saved array (--out, then the segments)
    segments: list  # (path, first sample, count), in order
    merged: int  # samples in --out
    inv0: dict  # the invariants of sample 0 (float64)
    worst: dict  # the largest relative invariant errors so far
    t0: float  # the time of sample 0
    failure: tuple  # failed_step, residual, reason per member, as last written


class RunFile:
    """Streams a run to ``out`` (NetCDF .nc or CSV .csv): ``append`` each chunk's
    Trajectory (``simulate(..., keep=False, on_chunk=...)``), ``checkpoint`` (on time,
    or on demand), ``close`` at the end or on a stop."""

    def __init__(self, out, system, integrator, h, save_every, steps, dtype, *, t0=0.0,
                 every: float = 1.0, resumed: Resumed | None = None):  # fmt: skip
        self.out = Path(out)
        self.csv = self.out.suffix.lower() == ".csv"
        self.system, self.integrator = system, integrator
        self.h, self.save_every, self.t0, self.every = float(h), int(save_every), t0, every
        self.record = io.run_record(system, integrator, h, save_every, steps, dtype)
        self.dir = segment_dir(self.out)
        self.pending: list[dict] = []
        self.failure = None
        self.batched = False
        self.last_write = time.monotonic()
        if resumed is None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.digest, self.segments, self.merged, self.samples = io.Digest(), [], 0, 0
            self.inv0, self.worst = None, {}
            self.skip = 0
        else:
            self.digest, self.segments = resumed.digest, list(resumed.segments)
            self.merged, self.samples = resumed.merged, resumed.samples
            self.inv0, self.worst = resumed.inv0, dict(resumed.worst)
            self.t0 = resumed.t0
            self.failure = resumed.failure
            self.batched = np.ndim(resumed.failure[0]) > 0
            self.skip = 1  # the run continues from the last sample on file

    # --- writing -------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return max(0, self.samples - 1) * self.save_every

    def append(self, traj) -> None:
        """Add the samples of ``traj`` (the next chunk of the run)."""
        arrays = {name: a for name, _dims, a in io._leaves(traj)}
        invariants = traj.invariants()
        self.batched = traj.batched
        axis = 1 if traj.batched else 0
        if self.skip:
            arrays = {k: _take(a, slice(self.skip, None), axis) for k, a in arrays.items()}
            invariants = {k: _take(v, slice(self.skip, None), axis) for k, v in invariants.items()}
            self.skip = 0
        n = np.shape(next(iter(arrays.values())))[axis]
        if n == 0:
            return
        index = np.arange(self.samples, self.samples + n, dtype=np.float64)
        chunk = {"time": self.t0 + self.h * (self.save_every * index), **arrays}
        self._track(invariants, axis)
        self.pending.append({"arrays": chunk, "invariants": invariants, "count": n})
        self.samples += n
        self.failure = (traj.failed_step, traj.residual, traj.reason)
        big = sum(int(np.size(a)) for p in self.pending for a in p["arrays"].values())
        if time.monotonic() - self.last_write >= self.every or big > SLICE_NUMBERS:
            self.checkpoint()

    def checkpoint(self, merge: bool = False) -> None:
        """Write the pending samples as a segment; merge the segments into the file when
        they hold as many samples as it does (or when ``merge``)."""
        if self.pending:
            self._write_segment()
        held = sum(count for _, _, count in self.segments)
        if self.segments and (merge or held >= self.merged):
            self._merge()
        self.last_write = time.monotonic()

    def close(self, stopped: bool = False) -> None:
        """The last checkpoint: everything merged into the file (on a stop, only when the
        copy is small; else the segments stay for --resume)."""
        if stopped:
            self.checkpoint()  # the pending samples on disk first
            if self._held_bytes() > STOP_MERGE_BYTES:
                return
        self.checkpoint(merge=True)
        if not self.segments:
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def on_file(self) -> int:
        """Steps held in the file itself (the rest is in segments)."""
        return max(0, self.merged - 1) * self.save_every

    def _held_bytes(self) -> int:
        """Bytes a merge would copy: the file and the segments on disk."""
        paths = [self.out, *(path for path, _, _ in self.segments)]
        return sum(p.stat().st_size for p in paths if p.exists())

    def _track(self, invariants: dict, axis: int) -> None:
        """The largest relative errors of the invariants against sample 0 (float64)."""
        values = {k: np.asarray(v, dtype=np.float64) for k, v in invariants.items()}
        if self.inv0 is None:
            self.inv0 = {k: _take(v, slice(0, 1), axis) for k, v in values.items()}
        _worst(self.worst, values, self.inv0)

    def _write_segment(self) -> None:
        axis = 1 if self.batched else 0
        first = self.samples - sum(p["count"] for p in self.pending)
        names = list(self.pending[0]["arrays"])
        arrays = {k: _join([p["arrays"][k] for p in self.pending], 0 if k == "time" else axis)
                  for k in names}  # fmt: skip
        invariants = {k: _join([p["invariants"][k] for p in self.pending], axis)
                      for k in self.pending[0]["invariants"]}  # fmt: skip
        count = sum(p["count"] for p in self.pending)
        for name, a in arrays.items():
            self.digest.update(name, a, 0 if name == "time" else axis)
        meta = {"record": self.record, "first": first, "count": count,
                "sha256": _segment_hash(arrays, invariants)}  # fmt: skip
        failed_step, residual, reason = self.failure  # pyright: ignore[reportGeneralTypeIssues]
        self.dir.mkdir(exist_ok=True)
        path = self.dir / f"{first:020d}.npz"
        tmp = self.dir / f".{first:020d}.part.npz"
        with open(tmp, "wb") as fh:
            payload: dict[str, np.ndarray] = {
                "meta": np.asarray(json.dumps(meta)),
                "failed_step": np.asarray(failed_step, dtype=np.int64),
                "residual": np.asarray(residual, dtype=np.float64),
                "reason": np.asarray(reason).astype(str),
                **{f"a/{k}": a for k, a in arrays.items()},
                **{f"i/{k}": v for k, v in invariants.items()},
            }
            np.savez(fh, **payload)  # pyright: ignore[reportArgumentType]
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        self.segments.append((path, first, count))
        self.pending = []

    def _merge(self) -> None:
        total = self.merged + sum(count for _, _, count in self.segments)
        attrs = io.file_attrs(self.record, self.integrator, (total - 1) * self.save_every,
                              self.digest)  # fmt: skip
        tmp = self.out.with_name(f".{self.out.name}.part{self.out.suffix}")
        sources = _Sources(self.out if self.merged else None, self.csv, self.segments)
        if self.csv:
            _write_csv(tmp, attrs, sources, self.batched, self.out, self.system)
        else:
            _write_netcdf(tmp, attrs, sources, self.system, self.batched, total, self.failure)
        with open(tmp, "rb+") as fh:  # on disk before it takes the name, and whole
            os.fsync(fh.fileno())
        os.replace(tmp, self.out)
        for path, _, _ in self.segments:
            path.unlink(missing_ok=True)
        self.segments, self.merged = [], total

    # --- reading -------------------------------------------------------------------
    @staticmethod
    def trajectory(out: Path, system, integrator, most: int = 100_000):
        """The run in the NetCDF or CSV file ``out`` as a Trajectory of at most ``most``
        samples (every k-th, the first and the last among them): what a figure of a
        long run draws, read without loading the file."""
        from mechint.trajectory import Trajectory

        if Path(out).suffix.lower() == ".csv":
            cols = io.read_csv(out)
            batched = "sample" in cols
            n_members = int(cols["sample"].max()) + 1 if batched else 1
            t = cols["t"][::n_members]
            stride = max(1, -(-len(t) // most))
            leaves = []
            for name, dims in system.state_fields:
                keys = [k for k in cols if k == name or k.startswith(name + "_")]
                block = np.column_stack([cols[k] for k in keys])
                block = block.reshape(len(t), n_members, *_dims_shape(block, dims))[::stride]
                leaves.append(np.moveaxis(block, 1, 0) if batched else block[:, 0])
            x = leaves[0] if len(leaves) == 1 else tuple(leaves)
            attrs = io.saved_attrs(out) or {}
            t = t[::stride]
        else:
            import h5netcdf

            with h5netcdf.File(out, "r") as fh:
                n = fh.variables["time"].shape[0]
                stride = max(1, -(-n // most))
                t = np.asarray(fh.variables["time"][::stride])
                leaves = []
                for name, _dims in system.state_fields:
                    var = fh.variables[name]
                    batched = "sample" in var.dimensions
                    leaves.append(np.asarray(var[:, ::stride] if batched else var[::stride]))
                x = leaves[0] if len(leaves) == 1 else tuple(leaves)
                attrs = {k: v.item() if isinstance(v, np.generic) else v
                         for k, v in fh.attrs.items()}  # fmt: skip
        return Trajectory(system=system, integrator=integrator, h=float(attrs["h"]), t=t,
                          x=x, steps=int(attrs["steps"]),
                          save_every=int(attrs["save_every"]) * stride)  # fmt: skip

    @staticmethod
    def read(out: Path, system) -> Resumed:
        """The run in the NetCDF file ``out`` and its segments, read by slices: every
        array checksummed (``found``, to compare with ``attrs["checksum"]``), every
        segment checked against its own SHA-256 and its place in the run.  Raises
        ValueError (OSError, KeyError) on what cannot be read."""
        import h5netcdf

        digest = io.Digest()
        with h5netcdf.File(out, "r") as fh:
            attrs = {k: v.item() if isinstance(v, np.generic) else v
                     for k, v in fh.attrs.items()}  # fmt: skip
            names = [name for name, _dims in system.state_fields]
            if "g" in fh.variables:
                names.append("g")
            variables = {"time": fh.variables["time"]} | {k: fh.variables[k] for k in names}
            batched = "sample" in variables[names[0]].dimensions
            axis = 1 if batched else 0
            merged = variables["time"].shape[0]
            invariants = [
                k
                for k in fh.variables
                if k not in variables and "time" in fh.variables[k].dimensions
            ]
            per = sum(int(np.prod(v.shape)) // max(merged, 1) for v in variables.values())
            step = max(1, SLICE_NUMBERS // max(per, 1))
            inv0, worst = None, {}
            first = last = None
            t0 = float(variables["time"][0])
            failure = tuple(
                np.asarray(fh.variables[k][...]) for k in ("failed_step", "residual", "reason")
            )
            for a in range(0, merged, step):
                s = slice(a, min(merged, a + step))
                for name, var in variables.items():
                    part = var[:, s] if (batched and name != "time") else var[s]
                    digest.update(name, part, 0 if name == "time" else axis)
                    if name != "time" and a == 0:
                        first = [*(first or []), _take(part, slice(0, 1), axis)]
                    if name != "time" and s.stop == merged:
                        last = [*(last or []), _take(part, slice(-1, None), axis)]
                values = {k: np.asarray(fh.variables[k][:, s] if batched else
                                        fh.variables[k][s], dtype=np.float64)
                          for k in invariants}  # fmt: skip
                if inv0 is None:
                    inv0 = {k: _take(v, slice(0, 1), axis) for k, v in values.items()}
                _worst(worst, values, inv0)
        found = digest.value(attrs)
        segments, samples = [], merged
        folder = segment_dir(Path(out))
        for path in sorted(folder.glob("[0-9]*.npz")) if folder.is_dir() else []:
            with np.load(path, allow_pickle=False) as seg:
                meta = json.loads(str(seg["meta"]))
                if meta["first"] + meta["count"] <= merged:  # merged before a kill
                    continue
                if meta["first"] != samples:
                    raise ValueError(f"segment {path.name} starts at sample {meta['first']}, "
                                     f"not {samples}")  # fmt: skip
                keys = {k: meta["record"].get(k) for k in meta["record"]}
                if any(attrs.get(k) != v for k, v in keys.items()):
                    raise ValueError(f"segment {path.name} belongs to another run")
                arrays = {k[2:]: seg[k] for k in seg.files if k.startswith("a/")}
                values = {k[2:]: seg[k] for k in seg.files if k.startswith("i/")}
                if _segment_hash(arrays, values) != meta["sha256"]:
                    raise ValueError(f"segment {path.name} was changed after it was written")
                failure = tuple(seg[k] for k in ("failed_step", "residual", "reason"))
            for name, a in arrays.items():
                digest.update(name, a, 0 if name == "time" else axis)
            last = [_take(arrays[name], slice(-1, None), axis) for name in names]
            _worst(worst, {k: np.asarray(v, np.float64) for k, v in values.items()},
                   inv0 or {})  # fmt: skip
            segments.append((path, meta["first"], meta["count"]))
            samples += meta["count"]
        return Resumed(attrs, found, samples, first or [], last or [], digest, segments,
                       merged, inv0 or {}, worst, t0, failure)  # fmt: skip


def _dims_shape(block, dims) -> tuple:
    """The shape of one sample of a state field whose components are the columns of
    ``block`` (one dimension, or a square matrix for two)."""
    k = block.shape[1]
    if len(dims) == 2:
        n = round(k**0.5)
        return (n, n)
    return (k,) if dims else ()


def _worst(worst: dict, values: dict, inv0: dict) -> None:
    for k, v in values.items():
        if k not in inv0:
            continue
        ref = inv0[k]
        err = np.abs(v - ref) / np.where(np.abs(ref) > 0, np.abs(ref), 1.0)
        worst[k] = max(worst.get(k, 0.0), float(np.max(err)) if err.size else 0.0)


def _take(a, s: slice, axis: int):
    a = np.asarray(a)
    index = [slice(None)] * a.ndim
    index[axis] = s
    return a[tuple(index)]


def _join(parts, axis: int):
    return np.concatenate([np.asarray(p) for p in parts], axis=axis)


def _segment_hash(arrays: dict, invariants: dict) -> str:
    digest = io.Digest()
    for name, a in {**arrays, **{f"i/{k}": v for k, v in invariants.items()}}.items():
        digest.update(name, a)
    return digest.value({})


class _Sources:
    """The samples of a merge in order, by slices: the old file's, then each segment's
    (``slices`` yields (arrays, invariants) dicts, time along axis 0 for "time", else
    along the run's time axis)."""

    def __init__(self, old: Path | None, csv: bool, segments):
        self.old, self.csv, self.segments = old, csv, segments

    def netcdf_slices(self, names, invariants, batched):
        import h5netcdf

        if self.old is not None:
            with h5netcdf.File(self.old, "r") as fh:
                n = fh.variables["time"].shape[0]
                per = sum(int(np.prod(fh.variables[k].shape)) // max(n, 1)
                          for k in names + invariants)  # fmt: skip
                step = max(1, SLICE_NUMBERS // max(per, 1))
                for a in range(0, n, step):
                    s = slice(a, min(n, a + step))
                    read = {k: (fh.variables[k][:, s] if batched and k != "time"
                                else fh.variables[k][s]) for k in names + invariants}  # fmt: skip
                    yield read
        for path, _, _ in self.segments:
            with np.load(path, allow_pickle=False) as seg:
                out = {k[2:]: seg[k] for k in seg.files if k.startswith(("a/", "i/"))}
            yield out

    def csv_old_rows(self):
        if self.old is None:
            return
        with open(self.old) as fh:
            fh.readline()  # the header
            yield from fh

    def segment_blocks(self):
        for path, _, _ in self.segments:
            with np.load(path, allow_pickle=False) as seg:
                arrays = [(k[2:], seg[k]) for k in seg.files if k.startswith("a/")]
                invariants = {k[2:]: seg[k] for k in seg.files if k.startswith("i/")}
            t = dict(arrays).pop("time")
            rest = [(k, a) for k, a in arrays if k != "time"]
            yield rest, invariants, t


def _write_csv(tmp: Path, attrs: dict, sources: _Sources, batched: bool, out: Path,
               system) -> None:  # fmt: skip
    """The CSV (to ``tmp``, which becomes ``out``) and the sidecar of ``out``."""
    with open(tmp, "w") as fh:
        header_written = False
        for rest, invariants, t in sources.segment_blocks():
            if not header_written:
                names = io.csv_names(rest, invariants, batched)
                fields = [name for name, _ in rest]
                io.write_csv_metadata(out, attrs, names, system, fields)
                fh.write(io.csv_header(names))
                header_written = True
                for line in sources.csv_old_rows():
                    fh.write(line)
            io.write_csv_rows(fh, io.csv_block(t, rest, invariants, batched))


def _write_netcdf(tmp: Path, attrs: dict, sources: _Sources, system, batched: bool,
                  total: int, failure) -> None:  # fmt: skip
    """The file ``io.to_dataset(...).to_netcdf`` writes, built by slices."""
    import h5netcdf

    fields = list(system.state_fields)
    # what the variables are: from the first segment (every merge has one)
    with np.load(sources.segments[0][0], allow_pickle=False) as seg:
        shapes = {k[2:]: (seg[k].dtype, seg[k].shape) for k in seg.files if k.startswith("a/")}
        invariants = {k[2:]: seg[k].dtype for k in seg.files if k.startswith("i/")}
    if "g" in shapes:
        fields.append(("g", ("row", "col")))
    lead = ("sample", "time") if batched else ("time",)
    axis = len(lead) - 1
    failed_step, residual, reason = failure
    with h5netcdf.File(tmp, "w") as fh:
        dims = {}
        for name, cdims in fields:
            dtype, shape = shapes[name]
            dims.update(zip(lead + tuple(cdims), (*shape[:axis], total, *shape[axis + 1 :]),
                            strict=True))  # fmt: skip
        fh.dimensions = dims
        fh.create_variable("time", ("time",), np.float64).attrs.update(io.describe(system, "time"))
        for dim, (values, dim_attrs) in io.dimension_coords(dims).items():
            fh.create_variable(dim, (dim,), values.dtype, data=values).attrs.update(dim_attrs)
        for name, cdims in fields:
            var = fh.create_variable(name, lead + tuple(cdims), shapes[name][0])
            var.attrs.update(io.describe(system, name))
        for name, dtype in invariants.items():
            fh.create_variable(name, lead, dtype).attrs.update(io.describe(system, name))
        member = lead[:-1]
        fh.create_variable("failed_step", member, np.int64,
                           data=np.asarray(failed_step, dtype=np.int64)
                           ).attrs.update(io.FAILURE_ATTRS["failed_step"])  # fmt: skip
        fh.create_variable("residual", member, np.float64,
                           data=np.asarray(residual, dtype=np.float64)
                           ).attrs.update(io.FAILURE_ATTRS["residual"])  # fmt: skip
        import h5py

        text = fh.create_variable("reason", member, h5py.string_dtype())
        text[...] = np.asarray(reason).astype(object)
        text.attrs.update(io.FAILURE_ATTRS["reason"])
        names = ["time"] + [name for name, _ in fields]
        at = 0
        for part in sources.netcdf_slices(names, list(invariants), batched):
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
            raise OSError(f"merged {at} samples, expected {total}")
        fh.attrs.update({**io.global_attrs(), **attrs})
        for key, value in system.parameters().items():
            fh.attrs[key] = np.asarray(value, dtype=float)
