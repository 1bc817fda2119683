"""Long runs lose nothing: a killed ``mechint run`` leaves a valid file of its completed
chunks, and ``--resume`` ends bit for bit where an uninterrupted run ends."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from tests.cli.helpers import invoke

STEPS, EVERY, H = 40_000_000, 100_000, 0.001
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


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=str)
def test_killed_run_keeps_its_chunks_and_resumes_bit_for_bit(sig, tmp_path, reference, capsys):
    out = tmp_path / "run.nc"
    cmd = [sys.executable, "-m", "mechint", *ARGS, "--out", str(out)]
    # SIGINT as a terminal sends it, even when this test runs in a background job
    # (where SIGINT is inherited as ignored)
    proc = subprocess.Popen(
        cmd,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert out.exists(), proc.stderr.read() if proc.poll() is not None else "no checkpoint"
    proc.send_signal(sig)  # at once: the rest of the run takes about a second
    proc.wait(timeout=60)
    if sig != signal.SIGKILL:
        assert proc.returncode == 130 and "--resume" in proc.stderr.read()

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
