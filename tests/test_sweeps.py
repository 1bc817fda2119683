"""Parameter sweeps: grid × integrators × h × states, embedded or on a Dask cluster."""

import os
import time
from typing import Any, cast

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from mechint import sweeps
from tests.cli.helpers import invoke
from tests.conftest import release_all


def _spawned_children() -> list[str]:
    """Our child processes started by multiprocessing (Dask's workers), from /proc."""
    me, out = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = fh.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                spawned = b"spawn_main" in fh.read()
        except OSError:
            continue
        if ppid == me and spawned:
            out.append(pid)
    return out


@pytest.fixture
def lean():
    """This process gives back its compiled programs before the test starts Dask workers
    (two more processes of ~350 MB each)."""
    release_all()


@pytest.fixture(autouse=True)
def _workers_gone():
    """A test's Dask worker processes have exited before the next test starts (their
    memory counts against the suite's budget)."""
    yield
    deadline = time.monotonic() + 30
    while _spawned_children() and time.monotonic() < deadline:
        time.sleep(0.05)


EXPERIMENT = {
    "steps": 200,
    "save_every": 50,
    "h": [0.01, 0.02],
    "integrators": ["kahan", "rigid-body-splitting"],
    "system": {"name": "euler-top", "grid": {"inertia": [[2, 1, 0.6667], [3, 2, 1]]}},
    "initial": {"random": {"count": 5, "seed": 3, "C": 0.5}},
}


@pytest.fixture(scope="module")
def embedded():
    return sweeps.sweep(EXPERIMENT)


def test_sweep_equals_direct_runs(embedded):
    exp = sweeps.load(EXPERIMENT)
    assert embedded["m"].dims == ("inertia", "integrator", "h", "sample", "save", "axis")
    assert embedded["m"].shape == (2, 2, 2, 5, 5, 3)
    for gi, inertia in enumerate(EXPERIMENT["system"]["grid"]["inertia"]):
        top = mi.systems.EulerTop(inertia)
        for ii, name in enumerate(exp.integrators):
            for hi, h in enumerate(exp.h):
                ref = mi.simulate(top, mi.integrators.get(name)(), exp.initial, h, 200, 50)
                assert np.array_equal(embedded["m"].values[gi, ii, hi], ref.x)
    assert np.allclose(
        embedded["time"].sel(h=0.02).values, 0.02 * 50 * np.arange(5), rtol=0, atol=0
    )
    assert np.all(embedded["failed_step"].values == -1)
    assert embedded["compensated"].values.tolist() == [False, False]  # neither forms d


def test_the_sums_are_each_maps_default_or_the_experiments_and_recorded():
    """A composition of order 8 on Kepler sums compensated by default, plainly with
    ``compensated = false``: equal to ``simulate``'s runs bit for bit, the dataset's
    ``compensated`` coordinate saying which, and the experiment's key changing with it (a
    partial sweep is not resumed with the other sums)."""
    kepler = mi.systems.Kepler()
    q0, p0 = kepler.periapsis_state(0.5)
    doc = {"steps": 100, "h": 0.05, "integrators": [{"name": "composition",
           "scheme": "kahan-li8"}], "system": {"name": "kepler"},
           "initial": {"q": [q0.tolist()], "p": [p0.tolist()]}}  # fmt: skip
    kl8 = mi.integrators.Composition(mi.integrators.StormerVerlet(), "kahan-li8")
    keys = set()
    for given, want in ((None, True), (False, False)):
        exp = doc if given is None else {**doc, "compensated": given}
        ds = sweeps.sweep(exp)
        ref = mi.simulate(kepler, kl8, (q0[None], p0[None]), 0.05, 100, 100, compensated=given)
        assert ds["compensated"].values.tolist() == [want]
        assert np.array_equal(ds["q"].values[0, 0, 0], ref.x[0][0])
        keys.add(sweeps.experiment_key(sweeps.load(exp)))
    assert len(keys) == 2


def test_random_sample_lies_on_the_casimir_level_set(embedded):
    C = embedded["C"].values[..., 0]
    assert np.max(np.abs(C - 0.5)) < 1e-15
    # the splitting keeps C along every run
    kept = embedded["C"].sel(integrator="rigid-body-splitting").values
    assert np.max(np.abs(kept - 0.5)) < 1e-14


def test_batches_split_by_max_batch_agree_to_round_off(embedded):
    """Bit-for-bit equality needs the same batches (XLA vectorizes a batch of 2 and one
    of 5 differently); other batchings agree to round-off."""
    small = sweeps.sweep({**EXPERIMENT, "max_batch": 2})
    assert np.max(np.abs(small["m"].values - embedded["m"].values)) < 1e-13


def test_so_n_random_states_share_every_casimir():
    exp = {
        "steps": 10,
        "h": [0.05],
        "integrators": ["discrete-lagrangian"],
        "system": {"name": "quadratic-potential-top", "J": [1.0, 2.0, 3.0, 4.0]},
        "initial": {
            "M": [[0, 1, 0, 0.5], [-1, 0, 0.3, 0], [0, -0.3, 0, 0.2], [-0.5, 0, -0.2, 0]],
            "P": [[1, 0.2, 0, 0], [0.2, 2, 0, 0], [0, 0, -1, 0.1], [0, 0, 0.1, 0.5]],
            "random": {"count": 4, "seed": 0},
        },
    }
    ds = sweeps.sweep(exp)
    for name in ("trP1", "trP2", "trP3", "trP4"):
        v = ds[name].values[..., 0].ravel()
        assert np.ptp(v) < 1e-13 * max(1.0, np.abs(v).max()), name
    assert np.ptp(ds["M"].values[0, 0, :, 0, 0, 1]) > 0.1  # the states do differ


def test_states_are_checked_as_each_integrators_start():
    """SHAKE's start is any momentum at positions on the manifold (``validate_start``):
    a SHAKE sweep from such states loads and runs, one that also runs RATTLE is refused naming
    ``initial``, and a position off the manifold is refused for SHAKE too."""
    exp = {**CHAIN, "steps": 10, "h": [0.01],
           "system": {**CHAIN["system"], "grid": {"lengths": [[1.0, 1.0]]}}}  # fmt: skip
    q, p = CHAIN["initial"]["q"], [[0.3, 0.0, 0.0, 0.1]]  # p off the hidden constraints
    shake = {**exp, "integrators": ["shake"], "initial": {"q": q, "p": p}}
    np.testing.assert_array_equal(cast(tuple, sweeps.load(shake).initial)[1], p)
    ds = sweeps.sweep(shake)  # and it runs, as `mechint run` runs such a start
    assert ds.attrs["complete"] == 1 and int(ds["failed_step"].max()) == -1
    with pytest.raises(mi.InputError, match=r"initial: is off the constraint manifold"):
        sweeps.load({**exp, "integrators": ["shake", "rattle"], "initial": {"q": q, "p": p}})
    with pytest.raises(mi.InputError, match=r"initial: is off the constraint manifold"):
        sweeps.load({**exp, "integrators": ["shake"],
                     "initial": {"q": [[0.9, -0.5, 1.75, -0.12]], "p": p}})  # fmt: skip


@pytest.mark.slow
def test_local_dask_cluster_is_bit_for_bit_the_embedded_run(embedded, lean):
    on_dask = sweeps.sweep(EXPERIMENT, cluster="local:2")
    for name in embedded.data_vars:
        assert np.array_equal(on_dask[name].values, embedded[name].values), name


def test_cli_sweep_writes_the_dataset(tmp_path, capsys, embedded):
    toml = tmp_path / "e.toml"
    toml.write_text(
        "steps = 200\nsave_every = 50\nh = [0.01, 0.02]\n"
        'integrators = ["kahan", "rigid-body-splitting"]\n'
        '[system]\nname = "euler-top"\n[system.grid]\ninertia = [[2, 1, 0.6667], [3, 2, 1]]\n'
        "[initial.random]\ncount = 5\nseed = 3\nC = 0.5\n"
    )
    out = tmp_path / "r.nc"
    code, stdout, err = invoke(["sweep", str(toml), "--out", str(out)], capsys)
    assert code == 0, err
    assert "0 failed runs" in stdout
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["m"].values, embedded["m"].values)


# a parameter both fixed and on the grid (the grid's values would replace the fixed one)
FIXED_AND_GRID = {"system": {"name": "euler-top", "inertia": [2, 1, 0.6667],
                             "grid": {"inertia": [[3, 2, 1]]}}}  # fmt: skip

# a double pendulum's state on the manifold of its first grid point's lengths only
CHAIN = {"system": {"name": "pendulum-chain", "masses": [1.0, 1.0], "gravity": 9.81, "dim": 2,
                    "grid": {"lengths": [[1.0, 1.0], [1.5, 1.0]]}},
         "integrators": ["rattle"],
         "initial": {"q": [[0.8414709848078965, -0.5403023058681398, 1.7507684116335782,
                            -0.1241554693209974]], "p": [[0.0, 0.0, 0.0, 0.0]]}}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"stepz": 3}, "unknown keys"),
        ({"initial": {"m": [0.1, 0.2, 0.3]}}, "list of states"),
        ({"initial": {"x": [[0.1, 0.2, 0.3]]}}, "unknown state fields"),
        ({"system": {"name": "spinning-top"}}, "system.name"),
        ({"system": {"name": "euler-top", "grid": {"inertia": []}}}, "system.grid.inertia"),
        ({"integrators": ["leapfrog"]}, "integrators"),
        ({"save_every": 7}, "save_every"),
        ({"system": {"name": "pendulum"}, "initial": {"random": {"count": 2}}}, "not defined"),
        ({"compensated": "yes"}, "compensated: must be true or false"),
        (FIXED_AND_GRID, r"system.grid.inertia: is also fixed"),
        # each grid point's system checks the states (a chain's lengths move its manifold)
        (CHAIN, r"off the constraint manifold.*at the grid point \{'lengths': \[1.5, 1.0\]\}"),
    ],
)
def test_bad_experiments_name_the_key(change, needle):
    with pytest.raises(mi.InputError, match=needle):
        sweeps.load({**EXPERIMENT, **change})


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_loses_and_duplicates_nothing(lean):
    """SIGKILL one of two workers while the sweep runs: Dask reruns its tasks and the result
    equals the embedded run bit for bit (no state lost, none counted twice)."""
    import os
    import signal
    import threading
    import time

    from dask.distributed import Client, LocalCluster

    slow = {**EXPERIMENT, "steps": 100_000, "save_every": 10_000, "max_batch": 5}
    slow["system"] = {
        "name": "euler-top",
        "grid": {"inertia": [[2, 1, 0.6667], [3, 2, 1], [4, 2, 1]]},
    }
    reference = sweeps.sweep(slow)
    no_dashboard = cast(str, None)  # None turns it off (Dask's default ":8787" types it str)
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=no_dashboard,
    )  # fmt: skip
    with cluster, Client(cluster) as client:
        # a Client made without asynchronous=True answers at once (typed as either)
        workers = cast(dict[str, int], client.run(os.getpid))
        victim = sorted(workers)[0]
        killed = {}
        stop = threading.Event()

        def kill_once_busy():  # the kill lands while the victim holds a task, not on a timer
            while not stop.is_set():
                if cast(dict[str, Any], client.processing()).get(victim):
                    killed["at"] = time.monotonic()
                    os.kill(workers[victim], signal.SIGKILL)
                    return
                time.sleep(0.002)

        watcher = threading.Thread(target=kill_once_busy)
        watcher.start()
        result = sweeps.sweep(slow, scheduler=cluster.scheduler_address)
        finished = time.monotonic()
        stop.set()
        watcher.join()
    assert "at" in killed and killed["at"] < finished  # the kill happened mid-sweep
    for name in reference.data_vars:
        assert np.array_equal(result[name].values, reference[name].values), name


def test_killed_sweep_keeps_finished_tasks_and_resumes_bit_for_bit(tmp_path, capsys):
    import signal
    import subprocess
    import sys
    import time

    toml = tmp_path / "long.toml"
    toml.write_text(
        "steps = 1000000\nsave_every = 100000\nh = [0.001, 0.002, 0.004]\n"
        'integrators = ["kahan"]\n[system]\nname = "euler-top"\n'
        "[system.grid]\ninertia = [[2, 1, 0.6667], [3, 2, 1], [4, 2, 1]]\n"
        "[initial.random]\ncount = 3\nseed = 1\nC = 0.5\n"
    )
    out = tmp_path / "long.nc"
    cmd = [sys.executable, "-m", "mechint", "sweep", str(toml), "--out", str(out)]
    proc = subprocess.Popen([*cmd, "--checkpoint-every", "0"], stdout=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert out.exists()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    with xr.open_dataset(out, engine="h5netcdf") as partial:
        done = partial["task_done"].values.astype(bool)
        assert partial.attrs["complete"] == 0 and 0 < done.sum() < done.size
    code, _, err = invoke(["sweep", str(toml), "--out", str(out), "--resume"], capsys)
    assert code == 0, err
    reference = sweeps.sweep(toml)
    with xr.open_dataset(out, engine="h5netcdf") as final:
        assert final.attrs["complete"] == 1
        for name in reference.data_vars:
            assert np.array_equal(final[name].values, reference[name].values), name
    other = tmp_path / "other.toml"
    other.write_text(toml.read_text().replace("seed = 1", "seed = 2"))
    code, _, err = invoke(["sweep", str(other), "--out", str(out), "--resume"], capsys)
    assert code == 2 and "another experiment" in err


@pytest.mark.parametrize("listener", ["closed port", "not dask"])
def test_an_unreachable_scheduler_is_one_line_within_the_timeout(listener, monkeypatch):
    """Issue 18.7: a closed port, or a listener that never speaks Dask's protocol, is an
    InputError naming the scheduler after the connect timeout (seconds; a quarter second
    here), never a traceback or a hang."""
    import socket

    monkeypatch.setattr(sweeps, "_CONNECT_TIMEOUT", 0.25)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    if listener == "closed port":
        server.close()
    else:
        server.listen()  # accepts connections, answers nothing
    try:
        start = time.monotonic()
        with pytest.raises(mi.InputError, match="no Dask scheduler answered") as info:
            sweeps.sweep(EXPERIMENT, scheduler=f"tcp://127.0.0.1:{port}")
        assert time.monotonic() - start < 8, time.monotonic() - start
        assert info.value.parameter == "scheduler"
    finally:
        server.close()
