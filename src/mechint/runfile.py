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

Longer than the house's 600 lines because a kill-safe file is one mechanism: writing,
segments, merging, reading and resuming share the invariants (what a file may claim,
its checksums) that the kill tests check at every stage.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
import zipfile
from pathlib import Path
from typing import Any

import jax
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
    first: dict  # the first sample's arrays by name (state fields, then g), time axis kept
    last: dict  # the last sample's arrays by name
    digest: io.Digest  # fed with every saved array (--out, then the segments)
    segments: list  # (path, first sample, count), in order
    merged: int  # samples in --out
    inv0: dict  # the invariants of sample 0 (float64)
    worst: dict  # the largest relative invariant errors so far
    t0: float  # the time of sample 0
    tail: dict  # the end-of-run arrays as last written (failure record, compensation)
    batched: bool
    scale0: dict = dataclasses.field(default_factory=dict)  # invariant_scales of sample 0

    def start(self, system) -> tuple[Any, Any, Any]:
        """Where the run continues: (state, attitude or None, compensation or None) at
        the last sample on file."""
        axis = 1 if self.batched else 0
        one = {k: np.take(np.asarray(a), 0, axis=axis) for k, a in self.last.items()}
        names = [name for name, _ in system.state_fields]
        x = _tree(system, [one[k] for k in names])
        g = one.get("g")
        e = None
        if f"{names[0]}_compensation" in self.tail:
            e = _tree(system, [self.tail[f"{k}_compensation"] for k in names])
            if g is not None:
                e = (e, self.tail["g_compensation"])
        return x, g, e

    def clock(self):
        """The clock (t, ρ) of variable steps at the last sample on file (per member), or
        None for a run with constant steps."""
        if "clock" not in self.last:
            return None
        return np.take(np.asarray(self.last["clock"]), 0, axis=1 if self.batched else 0)

    def loop_state(self, system):
        """The map's own coordinates at the last sample on file (``Trajectory.loop_state``),
        or None for a map without them."""
        names = [name for name, _ in system.state_fields]
        if f"{names[0]}{io.LOOP}" not in self.tail:
            return None
        return _tree(system, [self.tail[f"{k}{io.LOOP}"] for k in names])

    @property
    def failed(self) -> bool:
        return bool(np.any(np.asarray(self.tail["failed_step"]) >= 0))


def _tree(system, leaves: list):
    return system.state_from_fields(leaves)


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
        self.tail: dict = {}
        self.tail_on_file: str = ""  # the tail's digest when it was last merged
        self.batched = False
        self.last_write = time.monotonic()
        self.last_time: float | None = None  # the time of the last sample appended
        if resumed is None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.digest, self.segments, self.merged, self.samples = io.Digest(), [], 0, 0
            self.inv0, self.worst, self.scale0 = None, {}, {}
            self.skip = 0
        else:
            self.digest, self.segments = resumed.digest, list(resumed.segments)
            self.merged, self.samples = resumed.merged, resumed.samples
            self.inv0, self.worst = resumed.inv0, dict(resumed.worst)
            self.scale0 = resumed.scale0
            self.t0 = resumed.t0
            self.tail = dict(resumed.tail)
            self.tail_on_file = _tail_key(self.tail)
            self.batched = resumed.batched
            self.skip = 1  # the run continues from the last sample on file

    # --- writing -------------------------------------------------------------------
    @property
    def t_end(self) -> float:
        """The time of the last sample: the last one appended (a variable-step run's
        physical time), else that of the grid."""
        if self.last_time is not None:
            return self.last_time
        return self.t0 + self.h * (self.save_every * max(0, self.samples - 1))

    @property
    def steps(self) -> int:
        return max(0, self.samples - 1) * self.save_every

    def append(self, traj) -> None:
        """Add the samples of ``traj`` (the next chunk of the run) and its end-of-run
        record (failure, compensation)."""
        arrays = io.sample_arrays(traj)
        self.batched = traj.batched
        axis = 1 if traj.batched else 0
        self.tail = io.tail_arrays(traj)
        if self.skip:
            arrays = {k: _take(a, slice(self.skip, None), 0 if k == "time" else axis)
                      for k, a in arrays.items()}  # fmt: skip
            self.skip = 0
        n = np.shape(arrays["time"])[0]
        if n == 0:
            return
        # the times of the whole run's grid (a resumed run's own t0 would round apart); of
        # one trajectory of variable steps, its physical times, as the library's run has
        index = np.arange(self.samples, self.samples + n, dtype=np.float64)
        arrays["time"] = self.t0 + self.h * (self.save_every * index)
        elapsed = None if traj.batched else traj.elapsed()
        if elapsed is not None:
            arrays["time"] = self.t0 + np.asarray(elapsed, np.float64)[-n:]
        self.last_time = float(arrays["time"][-1])
        fields = {name for name, _ in io._fields(self.system, True, multipliers=True)}
        if self.inv0 is None:  # sample 0: the size of each invariant's terms there
            self.scale0 = _scales0(self.system, arrays, axis)
        self._track({k: a for k, a in arrays.items() if k != "time" and k not in fields}, axis)
        self.pending.append({"arrays": arrays, "count": n})
        self.samples += n
        big = sum(int(np.size(a)) for p in self.pending for a in p["arrays"].values())
        first = self.merged == 0 and not self.segments  # --out exists from the first chunk
        if first or time.monotonic() - self.last_write >= self.every or big > SLICE_NUMBERS:
            self.checkpoint()

    def record_failure(self, failure: dict) -> None:
        """The run's failure record (``StepFailure.failure``), written at ``close`` even
        when no new sample came with it."""
        self.tail = {**self.tail, **{k: np.asarray(v) for k, v in failure.items()}}

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
        if self.merged and _tail_key(self.tail) != self.tail_on_file:
            self._merge()  # a failure recorded after the last sample: the file says so
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
        _worst(self.worst, values, self.inv0, self.scale0)

    def _write_segment(self) -> None:
        axis = 1 if self.batched else 0
        first = self.samples - sum(p["count"] for p in self.pending)
        names = list(self.pending[0]["arrays"])
        arrays = {k: _join([p["arrays"][k] for p in self.pending], 0 if k == "time" else axis)
                  for k in names}  # fmt: skip
        count = sum(p["count"] for p in self.pending)
        for name, a in arrays.items():
            self.digest.update(name, a, 0 if name == "time" else axis)
        meta = {"record": self.record, "first": first, "count": count,
                "sha256": _segment_hash(arrays, self.tail)}  # fmt: skip
        self.dir.mkdir(exist_ok=True)
        path = self.dir / f"{first:020d}.npz"
        tmp = self.dir / f".{first:020d}.part.npz"
        with open(tmp, "wb") as fh:
            payload: dict[str, Any] = {
                "meta": np.asarray(json.dumps(meta)),
                **{f"a/{k}": a for k, a in arrays.items()},
                **{f"t/{k}": a for k, a in self.tail.items()},
            }
            np.savez(fh, **payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        self.segments.append((path, first, count))
        self.pending = []

    def _merge(self) -> None:
        total = self.merged + sum(count for _, _, count in self.segments)
        for name, a in self.tail.items():
            self.digest.set(name, a)
        attrs = io.file_attrs(self.record, self.integrator, (total - 1) * self.save_every,
                              self.digest)  # fmt: skip
        tmp = io.part_path(self.out)
        sources = _Sources(self.out if self.merged else None, self.csv, self.segments)
        if self.csv:
            _write_csv(tmp, attrs, sources, self.batched, self.system)
            io.replace_synced(tmp, self.out)
            # the sidecar only once its CSV is whole and in place: it never claims more
            io.write_csv_metadata(self.out, attrs, sources.csv_names, self.system,
                                  sources.csv_fields, self.tail)  # fmt: skip
        else:
            layout = sources.layout()
            io.write_netcdf_slices(tmp, self.system, attrs, self.batched, total, layout,
                                   self.tail, sources.netcdf_slices(list(layout),
                                                                    self.batched))  # fmt: skip
            io.replace_synced(tmp, self.out)
        for path, _, _ in self.segments:
            path.unlink(missing_ok=True)
        self.segments, self.merged = [], total
        self.tail_on_file = _tail_key(self.tail)

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
        fields = [name for name, _dims in system.state_fields]
        with h5netcdf.File(out, "r") as fh:
            attrs = {k: v.item() if isinstance(v, np.generic) else v
                     for k, v in fh.attrs.items()}  # fmt: skip
            # the parts of the state the wrappers carry: the attitude, the clock of
            # variable steps, Tangent's vectors (a continued run starts from them)
            fields += [k for k in ("g", "clock", "tangent") if k in fh.variables]
            batched = "sample" in fh.variables[fields[0]].dimensions
            axis = 1 if batched else 0
            merged = fh.variables["time"].shape[0]
            names = ["time", *fields] + [
                k for k in fh.variables
                if k not in fields and k != "time" and "time" in fh.variables[k].dimensions
            ]  # fmt: skip
            variables = {k: fh.variables[k] for k in names}
            per = sum(int(np.prod(v.shape)) // max(merged, 1) for v in variables.values())
            step = max(1, SLICE_NUMBERS // max(per, 1))
            inv0, worst, scale0 = None, {}, {}
            first: dict = {}
            last: dict = {}
            t0 = float(variables["time"][0])
            tail = {k: np.asarray(v[...]) for k, v in fh.variables.items()
                    if k in ("failed_step", "residual", "reason", "stopped_step") or
                    k.endswith(("_compensation", io.LOOP)) or io.CROSSING in k}  # fmt: skip
            tail["reason"] = tail["reason"].astype(str)
            if "stopped_by" in fh.variables:
                tail["stopped_by"] = np.asarray(fh.variables["stopped_by"][...]).astype(str)
            for name, a in tail.items():
                digest.set(name, a)
            for a in range(0, merged, step):
                s = slice(a, min(merged, a + step))
                values = {}
                for name, var in variables.items():
                    part = var[:, s] if (batched and name != "time") else var[s]
                    digest.update(name, part, 0 if name == "time" else axis)
                    if name in fields and a == 0:
                        first[name] = _take(part, slice(0, 1), axis)
                    if name in fields and s.stop == merged:
                        last[name] = _take(part, slice(-1, None), axis)
                    if name != "time" and name not in fields:
                        values[name] = np.asarray(part, dtype=np.float64)
                if inv0 is None:
                    inv0 = {k: _take(v, slice(0, 1), axis) for k, v in values.items()}
                    scale0 = _scales0(system, first, axis)
                _worst(worst, values, inv0, scale0)
        found = digest.value(attrs)
        segments, samples = [], merged
        folder = segment_dir(Path(out))
        for path in sorted(folder.glob("[0-9]*.npz")) if folder.is_dir() else []:
            _check_segment(path)
            with np.load(path, allow_pickle=False) as seg:
                meta = json.loads(str(seg["meta"]))
                if meta["first"] + meta["count"] <= merged:  # merged before a kill
                    continue
                if meta["first"] != samples:
                    raise ValueError(f"segment {path.name} starts at sample {meta['first']}, "
                                     f"not {samples}")  # fmt: skip
                if any(attrs.get(k) != v for k, v in meta["record"].items()):
                    raise ValueError(f"segment {path.name} belongs to another run")
                arrays = {k[2:]: seg[k] for k in seg.files if k.startswith("a/")}
                seg_tail = {k[2:]: seg[k] for k in seg.files if k.startswith("t/")}
                if _segment_hash(arrays, seg_tail) != meta["sha256"]:
                    raise ValueError(f"segment {path.name} was changed after it was written")
            tail = seg_tail
            for name, a in arrays.items():
                digest.update(name, a, 0 if name == "time" else axis)
            last = {name: _take(arrays[name], slice(-1, None), axis) for name in fields}
            values = {k: np.asarray(v, np.float64) for k, v in arrays.items()
                      if k != "time" and k not in fields}  # fmt: skip
            _worst(worst, values, inv0 or {}, scale0)
            segments.append((path, meta["first"], meta["count"]))
            samples += meta["count"]
        return Resumed(attrs, found, samples, first, last, digest, segments, merged,
                       inv0 or {}, worst, t0, tail, batched, scale0)  # fmt: skip

    @staticmethod
    def resume(out: Path, system, record: dict, x0, g0, parameter: str = "--resume") -> Resumed:
        """The run on file at ``out`` (and its segments) if it is the beginning of the run
        ``record`` (``io.run_record``) from ``x0`` (and attitude ``g0``), untouched since it
        was written and not failed; else ``InputError`` naming ``parameter`` (the files
        are left as they are)."""
        from mechint.errors import InputError

        name = repr(str(out))
        if out.suffix.lower() != ".nc" or not out.is_file():
            raise InputError(parameter, f"needs an existing NetCDF (.nc) file at --out, {name}")
        # what costs nothing first: the file stores what it declares, and its record is
        # this run's (a crafted or foreign file is refused before its data is read)
        io.check_stored(out, parameter)
        attrs = io.saved_attrs(out)
        if attrs is None:
            raise InputError(parameter, f"{name} is not a run written by mechint")
        again = "run it again without --resume (--overwrite)"
        for key, value in record.items():
            if not io.same_attr(attrs.get(key), value):
                fix = "give the same options as the interrupted run"
                flag = _sums_differ(attrs, record) if key == "integrator" else None
                if flag is not None:
                    fix += f": {flag} (the file's sums)"
                raise InputError(
                    parameter,
                    f"{name} was written by another run ({key} = {attrs.get(key)!r}, "
                    f"this run: {value!r})",
                    fix,
                )
        try:
            resumed = RunFile.read(out, system)
        except (OSError, KeyError, ValueError, TypeError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(parameter, f"cannot read a mechint run from {name}: {exc}") from None
        attrs = resumed.attrs
        if "checksum" not in attrs:
            raise InputError(parameter, f"{name} has no checksum (written before mechint 0.1.0 "
                             "recorded one), so its data cannot be trusted to continue",
                             again)  # fmt: skip
        if not str(attrs["checksum"]).startswith(io.CHECKSUM_SCHEME):
            raise InputError(parameter, f"{name} was written by an older mechint, whose "
                             "checksum this version does not compute", again)  # fmt: skip
        if attrs["checksum"] != resumed.found:
            raise InputError(parameter, f"{name} was changed after it was written (its data "
                             "or record disagree with its checksum)", again)  # fmt: skip
        done = int(attrs["steps"])
        save_every = int(record["save_every"])
        if done % save_every or resumed.merged != done // save_every + 1:
            raise InputError(parameter, f"{name} holds {resumed.merged} samples, which is not "
                             f"{done} steps saved every {save_every}")  # fmt: skip
        if "stopped_step" in resumed.tail:
            raise InputError(parameter, f"{name} holds a run that a terminal event ended "
                             "(stopped_step, stopped_by): there is nothing to continue",
                             again)  # fmt: skip
        if resumed.failed:
            step = int(np.max(resumed.tail["failed_step"]))
            raise InputError(parameter, f"{name} holds a run that failed (at step {step}): "
                             "continuing would fail again", "change h or the integrator, and "
                             "run it again with --overwrite")  # fmt: skip
        axis = 1 if resumed.batched else 0
        fields = [f for f, _ in system.state_fields]
        same = (
            np.array_equal(
                np.take(resumed.first[k], 0, axis), np.asarray(b, resumed.first[k].dtype)
            )
            for k, b in zip(fields, jax.tree.leaves(x0), strict=True)
        )
        if not all(same):
            raise InputError(parameter, f"{name} starts from another initial state")
        has_g = "g" in resumed.first
        if (g0 is None) == has_g or (
            g0 is not None
            and not np.array_equal(np.take(resumed.first["g"], 0, axis), np.asarray(g0))
        ):
            raise InputError(parameter, f"{name} starts from another attitude (--orientation)")
        return resumed


def _check_segment(path: Path) -> None:
    """A segment holds its arrays stored, not compressed (``np.savez``), each as large as
    its header declares: a member that is compressed, larger than the file, or whose
    header declares more than it holds is not what mechint wrote (a zip bomb, or a 1 kB
    array declaring 10¹¹ numbers); ValueError before anything is decompressed or
    allocated."""
    if not path.is_file():  # a FIFO would block the reader
        raise ValueError(f"segment {path.name} is not a regular file")
    size = path.stat().st_size
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or info.file_size > size:
                raise ValueError(
                    f"segment {path.name} holds {info.filename!r} compressed or "
                    f"larger than the file, which mechint does not write"
                )
            with archive.open(info) as member:
                read = (np.lib.format.read_array_header_1_0
                        if np.lib.format.read_magic(member) == (1, 0)
                        else np.lib.format.read_array_header_2_0)  # fmt: skip
                shape, _, dtype = read(member)
            if int(np.prod(shape, dtype=object)) * dtype.itemsize > info.file_size:
                raise ValueError(f"segment {path.name}: {info.filename!r} declares shape "
                                 f"{shape}, more than it holds")  # fmt: skip


def _dims_shape(block, dims) -> tuple:
    """The shape of one sample of a state field whose components are the columns of
    ``block`` (one dimension, or a square matrix for two)."""
    k = block.shape[1]
    if len(dims) == 2:
        n = round(k**0.5)
        return (n, n)
    return (k,) if dims else ()


def _worst(worst: dict, values: dict, inv0: dict, scale0: dict | None = None) -> None:
    """The largest relative error of each invariant so far (``diagnostics.errors``, with
    the size of its terms at sample 0 where the system gives it; a failed member's NaN
    samples are not counted: its failure is recorded apart)."""
    from mechint.diagnostics.invariants import errors

    for k, err in errors(values, inv0, scales=scale0).items():
        finite = err[np.isfinite(err)]
        worst[k] = max(worst.get(k, 0.0), float(np.max(finite)) if finite.size else 0.0)


def _scales0(system, arrays: dict, axis: int) -> dict:
    """``System.invariant_scales`` at sample 0 of ``arrays`` (the state fields by name,
    their time axis kept), float64; {} for a system without them."""
    from mechint.diagnostics.invariants import scales_at

    names = [name for name, _ in system.state_fields]
    if not all(k in arrays for k in names):
        return {}
    x = _tree(system, [_take(np.asarray(arrays[k]), slice(0, 1), axis) for k in names])
    return scales_at(system, x)


def _take(a, s: slice, axis: int):
    a = np.asarray(a)
    index = [slice(None)] * a.ndim
    index[axis] = s
    return a[tuple(index)]


def _join(parts, axis: int):
    return np.concatenate([np.asarray(p) for p in parts], axis=axis)


def _tail_key(tail: dict) -> str:
    return _segment_hash({}, tail)


def _segment_hash(arrays: dict, tail: dict) -> str:
    digest = io.Digest()
    for name, a in arrays.items():
        digest.update(name, a)
    for name, a in tail.items():
        digest.set(name, a)
    return digest.value({})


class _Sources:
    """The samples of a merge in order, by slices: the old file's, then each segment's."""

    def __init__(self, old: Path | None, csv: bool, segments):
        self.old, self.csv, self.segments = old, csv, segments
        self.csv_names: list[str] = []
        self.csv_fields: list[str] = []

    def layout(self) -> dict:
        """The dtype and shape of every per-sample array, in the order they were written:
        from the first segment, or from the old file when there is none (a merge that
        only records a failure)."""
        if self.segments:
            with np.load(self.segments[0][0], allow_pickle=False) as seg:
                return {k[2:]: (seg[k].dtype, seg[k].shape)
                        for k in seg.files if k.startswith("a/")}  # fmt: skip
        import h5netcdf

        with h5netcdf.File(self.old, "r") as fh:
            out = {}
            for k, var in fh.variables.items():
                if "time" in var.dimensions:
                    dims = zip(var.dimensions, var.shape, strict=True)
                    shape = tuple(1 if d == "time" else n for d, n in dims)
                    out[k] = (var.dtype, shape)
            return out

    def netcdf_slices(self, names, batched):
        import h5netcdf

        if self.old is not None:
            with h5netcdf.File(self.old, "r") as fh:
                n = fh.variables["time"].shape[0]
                per = sum(int(np.prod(fh.variables[k].shape)) // max(n, 1) for k in names)
                step = max(1, SLICE_NUMBERS // max(per, 1))
                for a in range(0, n, step):
                    s = slice(a, min(n, a + step))
                    yield {k: (fh.variables[k][:, s] if batched and k != "time"
                               else fh.variables[k][s]) for k in names}  # fmt: skip
        for path, _, _ in self.segments:
            with np.load(path, allow_pickle=False) as seg:
                out = {k[2:]: seg[k] for k in seg.files if k.startswith("a/")}
            yield out

    def csv_old_rows(self):
        if self.old is None:
            return
        with open(self.old) as fh:
            fh.readline()  # the header
            yield from fh

    def segment_blocks(self, system):
        """(state arrays as (name, array) pairs, invariants, time) of each segment."""
        fields = {name for name, _ in io._fields(system, True, multipliers=True)}
        for path, _, _ in self.segments:
            with np.load(path, allow_pickle=False) as seg:
                arrays = {k[2:]: seg[k] for k in seg.files if k.startswith("a/")}
            t = arrays.pop("time")
            rest = [(k, a) for k, a in arrays.items() if k in fields]
            invariants = {k: a for k, a in arrays.items() if k not in fields}
            yield rest, invariants, t


def _write_csv(tmp: Path, attrs: dict, sources: _Sources, batched: bool, system) -> None:
    """The CSV rows of the old file and the segments, to ``tmp`` (its sidecar is written
    once it is in place)."""
    with open(tmp, "w") as fh:
        header_written = False
        if not sources.segments and sources.old is not None:  # the old rows alone
            with open(sources.old) as old:
                header = old.readline()
            sources.csv_names = header.strip().split(",")
            sources.csv_fields = [
                f for f, _ in io._fields(system, True, multipliers=True)
                if any(n == f or n.startswith(f + "_") for n in sources.csv_names)
            ]  # fmt: skip
            fh.write(header)
            for line in sources.csv_old_rows():
                fh.write(line)
        for rest, invariants, t in sources.segment_blocks(system):
            if not header_written:
                sources.csv_names = io.csv_names(rest, invariants, batched)
                sources.csv_fields = [name for name, _ in rest]
                fh.write(io.csv_header(sources.csv_names))
                header_written = True
                for line in sources.csv_old_rows():
                    fh.write(line)
            io.write_csv_rows(fh, io.csv_block(t, rest, invariants, batched))


def _sums_differ(attrs: dict, record: dict) -> str | None:
    """The option that makes this run's record the file's (``--compensated`` or
    ``--no-compensated``) when the two differ by the compensated sums alone, else None."""
    try:
        theirs, ours = (json.loads(str(r.get("integrator_settings"))) for r in (attrs, record))
    except ValueError:
        return None

    def wrapped(outer: dict, inner: dict, name) -> bool:  # Compensated(inner) == outer
        return outer == {"base": {**inner, "class": name}}

    if attrs.get("integrator") == "Compensated" and wrapped(theirs, ours, record["integrator"]):
        return "--compensated"
    if record["integrator"] == "Compensated" and wrapped(ours, theirs, attrs.get("integrator")):
        return "--no-compensated"
    return None
