"""Long runs lose nothing: a killed ``mechint run`` leaves a valid file of its completed
chunks, and ``--resume`` ends bit for bit where an uninterrupted run ends."""

import dataclasses
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from mechint import io
from tests.cli.helpers import invoke, killed_run

# long enough that a signal sent after the first checkpoint lands before the run ends
# (about a second of Kahan steps on the 2-core machine)
STEPS, EVERY, H = 80_000_000, 100_000, 0.001
ARGS = [
    "run", "--system", "euler-top", "--inertia", "2,1,0.6667", "--x0", "0.45,0,0.89",
    "--integrator", "kahan", "--h", str(H), "--steps", str(STEPS), "--save-every", str(EVERY),
    "--quiet", "--checkpoint-every", "0",
]  # fmt: skip


@pytest.fixture(scope="module")
def reference():
    top = mi.systems.EulerTop((2, 1, 0.6667))
    return mi.simulate(top, mi.integrators.Kahan(), [0.45, 0, 0.89], H, STEPS, EVERY)


def _open(path):
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()


@pytest.mark.parametrize(
    ("sig", "count"),
    [(signal.SIGKILL, 1), (signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGTERM, 5)],
    ids=["KILL", "INT", "TERM", "TERM-x5"],
)
def test_killed_run_keeps_its_chunks_and_resumes_bit_for_bit(
    sig, count, tmp_path, reference, capsys
):
    """Signals set a flag read between chunks (never an exception inside a JAX callback,
    where Python would drop it): one INT or TERM ends the run with its checkpoint and exit
    130; a burst exits at once on the second, the file holding the last checkpoint."""
    out = tmp_path / "run.nc"
    cmd = [sys.executable, "-m", "mechint", *ARGS, "--out", str(out)]

    def child():
        # SIGINT as a terminal sends it, even when this test runs in a background job
        # (where SIGINT is inherited as ignored); and the run yields the processor to this
        # test, so that on a loaded machine the signal still lands in its first chunks
        # (not after a run that finished before this test was scheduled again)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.nice(19)

    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, preexec_fn=child)
    stderr = proc.stderr
    assert stderr is not None

    def checkpointed() -> bool:  # --out holds x0 from the start; wait for a chunk more
        attrs = io.saved_attrs(out)
        return attrs is not None and int(attrs["steps"]) > 0

    deadline = time.monotonic() + 120
    while not checkpointed() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert checkpointed(), stderr.read() if proc.poll() is not None else "no checkpoint"
    for _ in range(count):  # at once: the rest of the run takes about a second
        proc.send_signal(sig)
        time.sleep(0.002)
    proc.wait(timeout=60)
    if sig != signal.SIGKILL:
        assert proc.returncode == 130 and "--resume" in stderr.read()

    partial = _open(out)
    done = int(partial.attrs["steps"])
    assert partial.attrs["complete"] == 0 and 0 < done < STEPS, done
    n = done // EVERY + 1
    assert partial.sizes["time"] == n
    assert np.array_equal(partial["m"].values, reference.x[:n])  # every completed chunk

    code, _, err = invoke([*ARGS, "--out", str(out), "--resume"], capsys)
    assert code == 0, err
    final = _open(out)
    assert final.attrs["complete"] == 1 and final.attrs["steps"] == STEPS
    assert np.array_equal(final["m"].values, reference.x)
    assert np.array_equal(final["time"].values, reference.t)
    assert np.array_equal(final["H"].values, np.asarray(reference.invariants()["H"]))


def test_resume_refuses_another_run_and_reports_a_complete_one(tmp_path, capsys):
    out = tmp_path / "short.nc"
    short = [*ARGS[: ARGS.index("--steps")], "--steps", "1000", "--save-every", "100", "--quiet"]
    assert invoke([*short, "--out", str(out)], capsys)[0] == 0
    code, stdout, _ = invoke([*short, "--out", str(out), "--resume"], capsys)
    assert code == 0 and "already complete" in stdout
    other = [a if a != str(H) else "0.002" for a in short]
    code, _, err = invoke([*other, "--out", str(out), "--resume"], capsys)
    assert code == 2 and "--resume" in err and "h = 0.001" in err
    code, _, err = invoke([*short, "--out", str(tmp_path / "none.nc"), "--resume"], capsys)
    assert code == 2 and "--resume" in err


def _unfinished(path, integrator, done=300, total=1000, every=100):
    """A run stopped after ``done`` of ``total`` steps, written as ``mechint run`` writes
    its checkpoints (the Euler top, h = 0.01)."""
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    traj = mi.simulate(top, integrator, [0.45, 0.0, 0.89], 0.01, done, every)
    traj = dataclasses.replace(traj, stats={**traj.stats, "steps_requested": total})
    io.write_atomic(traj, path)
    return path


RUN = ["run", "--system", "euler-top", "--inertia", "2,1,0.6667", "--x0", "0.45,0,0.89",
       "--h", "0.01", "--steps", "1000", "--save-every", "100", "--quiet"]  # fmt: skip


def test_resume_compares_every_integrator_setting(tmp_path, capsys):
    """Issue 18.1: a run of rigid-body-splitting order 2 is not continued at order 4."""
    out = _unfinished(tmp_path / "split.nc", mi.integrators.RigidBodySplitting(order=2))
    before = out.read_bytes()
    split = [*RUN, "--integrator", "rigid-body-splitting", "--out", str(out), "--resume"]
    code, _, err = invoke([*split, "--order", "4"], capsys)
    assert code == 2 and "integrator_settings" in err and err.count("\n") == 1, err
    assert out.read_bytes() == before  # refused: the file untouched
    code, _, err = invoke([*split, "--order", "2"], capsys)
    assert code == 0, err
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.attrs["complete"] == 1 and ds.attrs["steps"] == 1000


@pytest.mark.parametrize(
    "tamper",
    ["last state", "steps attribute", "no checksum", "invariant", "failure record", "residual"],
)
def test_resume_refuses_a_file_changed_after_it_was_written(tamper, tmp_path, capsys):
    """Issue 18.4: the checksum of the record and the data, kept in the file, is checked
    before a run continues: an edited state or attribute is refused, the file untouched.
    Issue 31.3: the checksum covers every variable --resume keeps: an invariant (H[0])
    and the failure record too."""
    import h5netcdf

    out = _unfinished(tmp_path / "kahan.nc", mi.integrators.Kahan())
    with h5netcdf.File(out, "a") as fh:
        if tamper == "last state":
            m = fh.variables["m"]
            m[-1, 0] = np.nextafter(m[-1, 0], 1.0)  # one ulp
        elif tamper == "invariant":
            H = fh.variables["H"]
            H[0] = np.nextafter(H[0], 1.0)
        elif tamper == "failure record":
            fh.variables["reason"][...] = np.asarray("singular", dtype=object)
        elif tamper == "residual":
            fh.variables["residual"][...] = 1e-3
        elif tamper == "steps attribute":
            fh.attrs["steps"] = 500
        else:
            del fh.attrs["checksum"]
    before = out.read_bytes()
    code, _, err = invoke([*RUN, "--integrator", "kahan", "--out", str(out), "--resume"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert ("no checksum" if tamper == "no checksum" else "changed after it was written") in err
    assert out.read_bytes() == before


def test_one_writer_per_file_and_an_unfinished_run_is_kept(tmp_path, capsys):
    """Issue 18.5: a second run on a --out that another run holds is refused; a new run
    over an unfinished one needs --overwrite (or --resume)."""
    import fcntl
    import os

    out = _unfinished(tmp_path / "kahan.nc", mi.integrators.Kahan())
    kahan = [*RUN, "--integrator", "kahan", "--out", str(out)]
    code, _, err = invoke(kahan, capsys)
    assert code == 2 and "unfinished run (300 of 1000 steps)" in err and "--overwrite" in err
    # a CSV run's: not offered --resume, which takes NetCDF files only
    csv = _unfinished(tmp_path / "kahan.csv", mi.integrators.Kahan())
    code, _, err = invoke([*kahan[:-1], str(csv)], capsys)
    assert code == 2 and "unfinished run (300 of 1000 steps)" in err and "--overwrite" in err
    assert "continue it with --resume" not in err, err
    lock = os.open(tmp_path / ".kahan.nc.lock", os.O_RDWR | os.O_CREAT)
    try:  # another process holding the lock, as a running ``mechint run`` does
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, b"4242")
        for extra in ([], ["--resume"], ["--overwrite"]):
            code, _, err = invoke([*kahan, *extra], capsys)
            assert code == 2 and "another mechint run (pid 4242)" in err, err
    finally:
        os.close(lock)
    code, _, err = invoke([*kahan, "--overwrite"], capsys)
    assert code == 0, err
    assert not (tmp_path / ".kahan.nc.lock").exists()
    code, _, err = invoke(kahan, capsys)  # a complete run may be replaced
    assert code == 0, err


def test_a_resumed_run_that_fails_numbers_its_failure_from_the_start(tmp_path, capsys):
    """A run killed after 40 steps and resumed fails at step 58 of the whole run (not
    18 of the resumed part): the message and the file say 58, as an uninterrupted run's."""

    argv = [*RUN, "--integrator", "explicit-euler", "--out", str(tmp_path / "f.nc")]
    argv[argv.index("--h") + 1] = "0.5"
    argv[argv.index("--save-every") + 1] = "1"
    argv[argv.index("--steps") + 1] = "100"
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    euler = mi.integrators.ExplicitEuler()
    killed_run(tmp_path / "f.nc", top, euler, [0.45, 0.0, 0.89], 0.5, 100, 1, 40, 10)
    code, _, err = invoke([*argv, "--resume"], capsys)
    assert code == 1 and "step 58 failed" in err, err
    ds = _open(tmp_path / "f.nc")
    assert int(ds["failed_step"]) == 58 and ds.sizes["time"] == 58
    code, _, err = invoke([*argv[:-1], str(tmp_path / "g.nc")], capsys)
    assert code == 1 and "step 58 failed" in err
    whole = _open(tmp_path / "g.nc")
    for k in whole.variables:
        assert np.array_equal(whole[k].values, ds[k].values), k
    # the failed run's file is kept, named as failed (not "continue it with --resume")
    code, _, err = invoke([*argv[:-1], str(tmp_path / "g.nc")], capsys)
    assert code == 2 and "holds a run that failed at step 58 (of 100)" in err, err
    assert "--resume" not in err and _open(tmp_path / "g.nc").equals(whole)
    # a CSV run's too (its failure record is in the sidecar)
    for _ in range(2):
        code, _, err = invoke([*argv[:-1], str(tmp_path / "g.csv")], capsys)
    assert code == 2 and "holds a run that failed at step 58 (of 100)" in err, err
    assert "--resume" not in err


def test_a_compensated_run_resumes_bit_for_bit(tmp_path, capsys):
    """Issue 31.4: the compensation term of the last sample is saved in the file (and
    its segments) and a resumed --compensated run starts from it: the file equals the
    uninterrupted run's, every variable bit for bit (the midpoint rule on the Euler top
    and on Kepler, 30,000 steps; killed after 17,000)."""

    cases = [
        (["--system", "euler-top", "--inertia", "2,1,0.6667", "--x0", "0.45,0,0.89"],
         mi.systems.EulerTop((2.0, 1.0, 0.6667)), [0.45, 0.0, 0.89]),
        (["--system", "kepler", "--eccentricity", "0.5"], mi.systems.Kepler(),
         mi.systems.Kepler().periapsis_state(0.5)),
    ]  # fmt: skip
    midpoint = mi.integrators.ImplicitMidpoint()
    for options, system, x0 in cases:
        argv = ["run", *options, "--integrator", "midpoint", "--h", "0.05", "--steps", "30000",
                "--save-every", "10", "--compensated", "--quiet"]  # fmt: skip
        whole, part = tmp_path / "whole.nc", tmp_path / "part.nc"
        code, _, err = invoke([*argv, "--out", str(whole)], capsys)
        assert code == 0, err
        writer = killed_run(part, system, midpoint, x0, 0.05, 30000, 10, 17000, 3000,
                            compensated=True)  # fmt: skip
        assert writer.segments  # some samples only in segments
        code, _, err = invoke([*argv, "--out", str(part), "--resume"], capsys)
        assert code == 0, err
        a, b = _open(whole), _open(part)
        assert set(a.variables) == set(b.variables)
        assert any(str(k).endswith("_compensation") for k in a.variables)
        for k in a.variables:
            assert np.array_equal(a[k].values, b[k].values), k
        assert a.attrs["checksum"] == b.attrs["checksum"]
        whole.unlink()
        part.unlink()


def test_a_long_save_interval_still_stops_within_a_second_of_a_signal(tmp_path):
    """Issue 31.6: a run whose one save interval is 10^11 steps (hours) is run in calls
    of at most about a second, so SIGINT and SIGTERM end it within a second or so, with
    its file holding x0 (complete = 0) and exit 130."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = tmp_path / f"long{int(sig)}.nc"
        argv = [*ARGS, "--out", str(out)]
        argv[argv.index("--steps") + 1] = "100000000000"
        argv[argv.index("--save-every") + 1] = "100000000000"
        argv.remove("--checkpoint-every")
        argv.remove("0")

        def child():
            signal.signal(signal.SIGINT, signal.SIG_DFL)

        proc = subprocess.Popen([sys.executable, "-m", "mechint", *argv], stderr=subprocess.PIPE,
                                text=True, preexec_fn=child)  # fmt: skip
        stderr = proc.stderr
        assert stderr is not None
        try:  # the run would last for hours: it never outlives the test
            deadline = time.monotonic() + 120
            while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.02)
            assert out.exists(), stderr.read() if proc.poll() is not None else "no file"
            time.sleep(1.0)  # well inside the interval's calls
            sent = time.monotonic()
            proc.send_signal(sig)
            proc.wait(timeout=60)
            waited = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, stderr.read()
        # calls of <= 1 s (--checkpoint-every 1), then the last checkpoint and the exit
        # (0.3-0.5 s measured on an idle machine, 1.2-1.9 s with both cores busy)
        assert waited < 5.0, waited
        ds = _open(out)
        assert ds.attrs["complete"] == 0 and ds.sizes["time"] == 1


def test_a_wisdom_holman_run_resumes_from_its_own_coordinates_bit_for_bit(tmp_path, capsys):
    """A map that carries its own coordinates (the Wisdom–Holman map with a corrector:
    Jacobi coordinates, the corrector applied only to what is shown) saves them at the
    last sample (``q_loop``, ``p_loop``) and a resumed run starts its loop from them:
    the file equals the uninterrupted run's, every variable bit for bit (three bodies,
    corrector 5, 400 steps; killed after 160)."""
    masses = [1.0, 0.001, 0.0003]
    q0 = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.1]])
    p0 = np.array([[0.0, 0.0, 0.0], [0.0, 0.001, 0.0], [-0.0002, 0.0, 0.0]])
    rows = ";".join(",".join(map(str, r)) for r in q0), ";".join(",".join(map(str, r)) for r in p0)
    argv = ["run", "--system", "nbody", "--masses", ",".join(map(str, masses)), "--q0", rows[0],
            "--p0", rows[1], "--integrator", "wisdom-holman", "--corrector", "5", "--h", "0.05",
            "--steps", "400", "--save-every", "10", "--quiet"]  # fmt: skip
    whole, part = tmp_path / "whole.nc", tmp_path / "part.nc"
    code, _, err = invoke([*argv, "--out", str(whole)], capsys)
    assert code == 0, err
    wh = mi.integrators.WisdomHolman(corrector=5)
    writer = killed_run(part, mi.systems.NBody(masses), wh, (q0, p0), 0.05, 400, 10, 160, 50)
    assert writer.segments
    code, _, err = invoke([*argv, "--out", str(part), "--resume"], capsys)
    assert code == 0, err
    a, b = _open(whole), _open(part)
    assert set(a.variables) == set(b.variables) and {"q_loop", "p_loop"} <= set(a.variables)
    for k in a.variables:
        assert np.array_equal(a[k].values, b[k].values), k
    assert a.attrs["checksum"] == b.attrs["checksum"]


def test_a_constrained_run_resumes_with_its_multipliers_bit_for_bit(tmp_path, capsys):
    """A run of a constrained system (RATTLE and SHAKE on the double pendulum, the LGVI on
    the link chain) killed with samples in segments and resumed: the file equals the
    uninterrupted run's, every variable (the multipliers too) and the checksum."""
    cases = [
        (["--system", "pendulum-chain", "--preset", "double-pendulum", "--integrator",
          "rattle", "--h", "0.01"], "double-pendulum", mi.integrators.Rattle(), 0.01),
        # SHAKE's states leave the hidden constraints: it continues from its last as it is
        (["--system", "pendulum-chain", "--preset", "double-pendulum", "--integrator",
          "shake", "--h", "0.01"], "double-pendulum", mi.integrators.Shake(), 0.01),
        (["--system", "rigid-bodies", "--preset", "link-chain-10", "--integrator",
          "lie-group-variational", "--h", "0.001"], "link-chain-10",
         mi.integrators.LieGroupVariational(), 0.001),
    ]  # fmt: skip
    for options, preset, integrator, h in cases:
        argv = ["run", *options, "--steps", "600", "--save-every", "10", "--quiet"]
        whole, part = tmp_path / "whole.nc", tmp_path / "part.nc"
        code, _, err = invoke([*argv, "--out", str(whole)], capsys)
        assert code == 0, err
        owner = mi.systems.PendulumChain if preset == "double-pendulum" else mi.systems.RigidBodies
        system, x0 = owner.presets[preset]()
        writer = killed_run(part, system, integrator, x0, h, 600, 10, 330, 60)
        assert writer.segments
        code, _, err = invoke([*argv, "--out", str(part), "--resume"], capsys)
        assert code == 0, err
        a, b = _open(whole), _open(part)
        assert "multipliers" in a.variables and set(a.variables) == set(b.variables)
        for k in a.variables:
            assert np.array_equal(a[k].values, b[k].values), (preset, k)
        assert a.attrs["checksum"] == b.attrs["checksum"]
        whole.unlink()
        part.unlink()
