"""A run streamed to its file (issue 18): memory bounded by a chunk, checkpoints O(chunk)
amortised, the same file as a trajectory written at once, and segments that a resumed
run takes only when every checksum agrees."""

import itertools

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from mechint import io, runfile
from mechint.runfile import RunFile
from tests.cli.helpers import invoke

TOP = mi.systems.EulerTop((2.0, 1.0, 0.6667))
X0 = np.array([[0.45, 0.0, 0.89], [0.89, 0.1, 0.45]])


def _stream(out, system, integrator, x0, h, steps, every, chunk, **kw):
    """A run streamed to ``out`` in chunks of ``chunk`` body-steps, a checkpoint each."""
    writer = RunFile(out, system, integrator, h, every, steps, "float64", every=0.0, **kw)
    merges = []
    merge = writer._merge

    def counted():
        merges.append(writer.merged + sum(c for _, _, c in writer.segments))
        merge()

    writer._merge = counted
    traj = mi.simulate(system, integrator, x0, h, steps, every, keep=False,
                       on_chunk=writer.append, chunk_steps=chunk)  # fmt: skip
    writer.close()
    return traj, merges


def _same_file(a, b, system: mi.systems.System = TOP):
    """The same file: every variable bit for bit, the invariants (computed chunk by chunk
    in one, at once in the other: issue 31.5) and the checksum included."""
    with xr.open_dataset(a, engine="h5netcdf") as da, xr.open_dataset(b, engine="h5netcdf") as db:
        assert set(da.variables) == set(db.variables)
        for k in db.variables:
            assert da[k].dims == db[k].dims, k
            assert np.array_equal(da[k].values, db[k].values), k
        assert {k: str(v) for k, v in da.attrs.items() if k != "created"} == {
            k: str(v) for k, v in db.attrs.items() if k != "created"
        }


@pytest.mark.parametrize("batched", [False, True], ids=["one", "batch"])
def test_a_streamed_run_writes_the_file_of_the_whole_trajectory(batched, tmp_path):
    """Chunks of 200 body-steps (51 checkpoints): the NetCDF and CSV files equal those of
    the trajectory written at once, checksum included, and the merges double the file."""
    x0 = X0 if batched else X0[0]
    kahan = mi.integrators.Kahan()
    whole = mi.simulate(TOP, kahan, x0, 0.01, 5000, 10)
    whole.save(tmp_path / "whole.nc")
    whole.save(tmp_path / "whole.csv")
    last, merges = _stream(tmp_path / "s.nc", TOP, kahan, x0, 0.01, 5000, 10, 200)
    _same_file(tmp_path / "s.nc", tmp_path / "whole.nc")
    assert not runfile.segment_dir(tmp_path / "s.nc").exists()
    # each merge at least doubles the file (but the last): about log2(chunks) merges
    assert all(b >= 2 * a for a, b in itertools.pairwise(merges[:-1])), merges
    assert len(merges) <= 8, merges
    # keep=False: the returned trajectory is the last sample, with the whole run's steps
    assert last.steps == 5000 and len(last.t) == 1 and last.t[0] == whole.t[-1]
    axis = 1 if batched else 0
    assert np.array_equal(np.take(last.x, [-1], axis), np.take(whole.x, [-1], axis))
    _stream(tmp_path / "s.csv", TOP, kahan, x0, 0.01, 5000, 10, 200)
    lines = [(tmp_path / f).read_text().splitlines() for f in ("s.csv", "whole.csv")]
    assert [a for a in lines[0] if "created" not in a] == [
        b for b in lines[1] if "created" not in b
    ]
    assert io.read_csv(tmp_path / "s.csv").keys() == io.read_csv(tmp_path / "whole.csv").keys()


def test_the_attitude_and_a_structured_state_stream_too(tmp_path):
    """The free rigid body on so(4) with its attitude g_k: the streamed file equals the
    whole trajectory's (fields m and g, every sample)."""
    body = mi.systems.FreeRigidBody([1.0, 2.0, 3.0, 4.5])
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 4))
    m0 = a - a.T
    dl = mi.integrators.DiscreteLagrangian()
    whole = mi.simulate(body, dl, m0, 0.05, 400, 4, orientation=np.eye(4))
    whole.save(tmp_path / "whole.nc")
    writer = RunFile(tmp_path / "s.nc", body, dl, 0.05, 4, 400, "float64", every=0.0)
    mi.simulate(body, dl, m0, 0.05, 400, 4, orientation=np.eye(4), keep=False,
                on_chunk=writer.append, chunk_steps=40)  # fmt: skip
    writer.close()
    _same_file(tmp_path / "s.nc", tmp_path / "whole.nc", body)


RUN = ["run", "--system", "euler-top", "--inertia", "2,1,0.6667", "--x0", "0.45,0,0.89",
       "--integrator", "kahan", "--h", "0.01", "--steps", "6000", "--save-every", "10",
       "--quiet"]  # fmt: skip


def _killed(out, steps_done):
    """What a run killed after ``steps_done`` steps leaves: --out and segments beside it
    (checkpoints of 300 steps, the last ones not yet merged)."""
    writer = RunFile(out, TOP, mi.integrators.Kahan(), 0.01, 10, 6000, "float64", every=0.0)
    mi.simulate(TOP, mi.integrators.Kahan(), X0[0], 0.01, steps_done, 10, keep=False,
                on_chunk=writer.append, chunk_steps=300)  # fmt: skip
    return writer  # never closed: the process died


def test_resume_takes_the_file_and_its_segments_bit_for_bit(tmp_path, capsys):
    out = tmp_path / "run.nc"
    writer = _killed(out, 3900)
    assert writer.segments and writer.merged < writer.samples  # some samples only in segments
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.attrs["complete"] == 0 and ds.attrs["steps"] == writer.on_file
    code, _, err = invoke([*RUN, "--out", str(out), "--resume"], capsys)
    assert code == 0, err
    whole = mi.simulate(TOP, mi.integrators.Kahan(), X0[0], 0.01, 6000, 10)
    whole.save(tmp_path / "whole.nc")
    _same_file(out, tmp_path / "whole.nc")
    assert not runfile.segment_dir(out).exists()


@pytest.mark.parametrize("tamper", ["segment data", "segment gap", "foreign segment"])
def test_resume_refuses_segments_that_do_not_belong(tamper, tmp_path, capsys):
    out = tmp_path / "run.nc"
    writer = _killed(out, 3900)
    path = writer.segments[-1][0]
    if tamper == "segment data":
        with np.load(path) as seg:
            arrays = dict(seg)
        arrays["a/m"][-1, 0] = np.nextafter(arrays["a/m"][-1, 0], 1.0)
        np.savez(path, **arrays)
        needle = "changed after it was written"
    elif tamper == "segment gap":
        writer.segments[0][0].unlink()
        needle = "starts at sample"
    else:
        other = RunFile(tmp_path / "other.nc", TOP, mi.integrators.Kahan(), 0.02, 10, 6000,
                        "float64", every=0.0)  # fmt: skip
        mi.simulate(TOP, mi.integrators.Kahan(), X0[0], 0.02, 3900, 10, keep=False,
                    on_chunk=other.append, chunk_steps=300)  # fmt: skip
        for p in runfile.segment_dir(out).glob("*.npz"):
            p.unlink()
        for p, first, _ in other.segments:
            if first >= writer.merged:
                p.rename(runfile.segment_dir(out) / p.name)
        needle = "another run"
    before = out.read_bytes()
    code, _, err = invoke([*RUN, "--out", str(out), "--resume"], capsys)
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert out.read_bytes() == before


def test_a_merged_segment_left_by_a_kill_is_skipped(tmp_path, capsys):
    """Killed between the rename of a merged file and the removal of its segments: the
    segments already in the file are not taken twice."""
    out = tmp_path / "run.nc"
    writer = _killed(out, 3900)
    kept = [(p, p.read_bytes()) for p, _, _ in writer.segments]
    writer.checkpoint(merge=True)  # merged, segments removed ...
    for p, data in kept:  # ... but as if the kill came before their removal
        p.write_bytes(data)
    code, _, err = invoke([*RUN, "--out", str(out), "--resume"], capsys)
    assert code == 0, err
    whole = mi.simulate(TOP, mi.integrators.Kahan(), X0[0], 0.01, 6000, 10)
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["m"].values, whole.x) and ds.attrs["complete"] == 1


def test_a_plot_of_a_long_run_reads_a_bounded_sample(tmp_path):
    whole = mi.simulate(TOP, mi.integrators.Kahan(), X0, 0.01, 5000, 1)
    whole.save(tmp_path / "w.nc")
    drawn = RunFile.trajectory(tmp_path / "w.nc", TOP, mi.integrators.Kahan(), most=1000)
    assert drawn.x.shape == (2, 834, 3) and drawn.t[1] == 0.06
    assert np.array_equal(drawn.x, whole.x[:, ::6])


def test_invariants_do_not_depend_on_how_the_run_was_chunked(tmp_path):
    """Issue 31.5: the invariant columns of two runs that differ only in their chunks
    (one of 2^22 steps, 73 and 300 steps) are the same bits, Kepler and the Euler top."""
    kepler = mi.systems.Kepler()
    cases = [(TOP, mi.integrators.Kahan(), X0, 0.01, 20_000, 10),
             (kepler, mi.integrators.StormerVerlet(), kepler.periapsis_state(0.5), 0.01,
              20_000, 10)]  # fmt: skip
    for system, method, x0, h, steps, every in cases:
        whole = mi.simulate(system, method, x0, h, steps, every)
        reference = whole.invariants()
        for chunk in (730, 3000):
            parts = []
            mi.simulate(system, method, x0, h, steps, every, keep=False,
                        on_chunk=parts.append, chunk_steps=chunk)  # fmt: skip
            assert len(parts) > 5
            axis = 1 if whole.batched else 0
            for k, v in reference.items():
                streamed = np.concatenate([p.invariants()[k] for p in parts], axis=axis)
                assert np.array_equal(streamed, v), (type(system).__name__, chunk, k)


class _Killed(BaseException):
    """A kill, injected at one filesystem operation of a run's writing."""


def _kill_at(monkeypatch, at: int | None):
    """Count the run's filesystem operations (renames, removals, fsyncs, CSV rows written)
    and kill the run at operation number ``at``; returns the counter."""
    import os as os_module

    from mechint import io as io_module

    count = [0]

    def point():
        count[0] += 1
        if at is not None and count[0] == at:
            raise _Killed

    def wrap(fn):
        def wrapped(*a, **k):
            point()
            out = fn(*a, **k)
            point()
            return out

        return wrapped

    monkeypatch.setattr(os_module, "replace", wrap(os_module.replace))
    monkeypatch.setattr(os_module, "fsync", wrap(os_module.fsync))
    monkeypatch.setattr(io_module, "write_csv_rows", wrap(io_module.write_csv_rows))
    return count


@pytest.mark.parametrize("suffix", [".csv", ".nc"])
def test_a_kill_at_any_operation_leaves_no_file_that_claims_more_than_it_holds(
    suffix, tmp_path, monkeypatch
):
    """Issue 31.1: a run is killed at every one of its filesystem operations in turn
    (the writes of segments, CSV rows, fsyncs and renames of every merge).  After each
    kill, the file's record never claims more than it holds: its rows are the first
    rows of the whole run's file, byte for byte, as many as its steps say (all of them
    only where it says complete); and a plain rerun refuses to discard samples that the
    file does not hold."""
    from mechint.cli import guard

    kahan = mi.integrators.Kahan()
    steps, every = 1500, 10
    whole = mi.simulate(TOP, kahan, X0[0], 0.01, steps, every)
    whole.save(tmp_path / f"whole{suffix}")
    reference = (tmp_path / f"whole{suffix}").read_bytes().decode(errors="replace")

    merges = []

    def attempt(at, folder):
        out = folder / f"run{suffix}"
        count = _kill_at(monkeypatch, at)
        try:
            merges[:] = _stream(out, TOP, kahan, X0[0], 0.01, steps, every, 150)[1]
        except _Killed:
            pass
        finally:
            monkeypatch.undo()
        return out, count[0]

    # the whole run: ten chunks (x0 and 15 samples, then 15 each), merged into 16, 46,
    # 106 and (at close) 151 samples: the first merge, two that double the file and the
    # last one's rest, every kind of operation a kill below interrupts
    _, total = attempt(None, tmp_path)
    assert merges == [16, 46, 106, 151] and total > 50, (merges, total)
    rows = reference.splitlines()
    for at in range(1, total + 1):
        folder = tmp_path / f"kill{at}"
        folder.mkdir()
        out, _ = attempt(at, folder)
        attrs = io.saved_attrs(out)
        if attrs is None:  # killed before the first merge: no file claims anything
            held = 0
        else:
            held = int(attrs["steps"]) // every + 1
            if suffix == ".csv":
                lines = out.read_text().splitlines()
                assert len(lines) - 1 >= held, (at, len(lines) - 1, held)
                assert lines[: held + 1] == rows[: held + 1], at
            else:
                with xr.open_dataset(out, engine="h5netcdf") as ds:
                    assert ds.sizes["time"] == held, at
                    assert np.array_equal(ds["m"].values, whole.x[:held]), at
                    assert np.array_equal(ds["H"].values, whole.invariants()["H"][:held]), at
            assert int(attrs["complete"]) == (held == steps // every + 1), at
        unmerged = [p for p in runfile.segment_dir(out).glob("[0-9]*.npz")] if (
            runfile.segment_dir(out).is_dir()) else []  # fmt: skip
        try:
            guard.keep_unfinished(out)
            refused = False
        except mi.InputError:
            refused = True
        if not refused:  # a plain rerun may replace it only when nothing would be lost
            assert held == steps // every + 1 or not unmerged, (at, held, unmerged)
