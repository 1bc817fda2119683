import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from mechint import sweeps
from mechint.cli.main import main
from mechint.io import csv_metadata_path, read_csv
from tests.cli.helpers import invoke, killed_run
from tests.systems import rigid_bodies_cases as cases

BASE = [
    "run",
    "--system",
    "euler-top",
    "--inertia",
    "2,1,0.6667",
    "--x0",
    "0.45,0,0.89",
    "--integrator",
    "kahan",
    "--h",
    "0.01",
    "--steps",
    "1000",
    "--save-every",
    "100",
]


def _run(argv, capsys):
    return invoke(argv, capsys)


def test_run_writes_netcdf_matching_the_library(tmp_path, capsys):
    out = tmp_path / "run.nc"
    code, stdout, _ = _run([*BASE, "--out", str(out), "--plot", str(tmp_path / "run.png")], capsys)
    assert code == 0
    assert "wrote" in stdout and "11 samples" in stdout
    top = mi.systems.EulerTop((2, 1, 0.6667))
    ref = mi.simulate(top, mi.integrators.Kahan(), [0.45, 0, 0.89], 0.01, 1000, 100)
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["m"].values, ref.x)
        assert ds.attrs["integrator"] == "Kahan"
    assert (tmp_path / "run.png").stat().st_size > 10_000


def test_run_writes_csv_by_extension_and_batches(tmp_path, capsys):
    out = tmp_path / "run.csv"
    argv = [*BASE, "--out", str(out), "--quiet"]
    argv[argv.index("0.45,0,0.89")] = "0.45,0,0.89;0.89,0.1,0.45"
    code, stdout, _ = _run(argv, capsys)
    assert code == 0 and stdout == ""
    cols = read_csv(out)
    assert cols["t"].shape == (22,) and set(cols["sample"]) == {0.0, 1.0}


def test_x0_from_npy_file(tmp_path, capsys):
    np.save(tmp_path / "x0.npy", np.array([0.45, 0.0, 0.89]))
    argv = [*BASE, "--out", str(tmp_path / "a.nc"), "--quiet"]
    argv[argv.index("0.45,0,0.89")] = str(tmp_path / "x0.npy")
    assert _run(argv, capsys)[0] == 0


def _replace(option, value):
    argv = list(BASE)
    if value is None:
        i = argv.index(option)
        del argv[i : i + 2]
    else:
        argv[argv.index(option) + 1] = value
    return argv


BAD = [
    (_replace("--inertia", "2,1"), "--inertia"),
    (_replace("--inertia", "2,-1,0.5"), "--inertia"),
    (_replace("--inertia", "2,0,0.5"), "--inertia"),
    (_replace("--inertia", "2,nan,0.5"), "--inertia"),
    (_replace("--inertia", "2,x,0.5"), "--inertia"),
    (_replace("--inertia", None), "--inertia"),
    (_replace("--x0", "1,2"), "--x0"),
    (_replace("--x0", "1,inf,2"), "--x0"),
    (_replace("--x0", "missing.npy"), "--x0"),
    (_replace("--h", "0"), "--h"),
    (_replace("--h", "-0.1"), "--h"),
    (_replace("--h", "inf"), "--h"),
    (_replace("--h", "abc"), "--h"),
    (_replace("--steps", "0"), "--steps"),
    (_replace("--steps", "1.5"), "--steps"),
    (_replace("--save-every", "7"), "--save-every"),
    (_replace("--save-every", "0"), "--save-every"),
    (_replace("--system", "spinning-top"), "euler-top"),
    (_replace("--integrator", "leapfrog"), "kahan, midpoint, rk4, explicit-euler"),
    # issue 18.3: refused up front, never started (the divisor suggested in milliseconds)
    (_replace("--steps", "1000000000000"), "saved samples need about"),
    ([*_replace("--steps", str(10**15)), "--save-every", "7"], "such as 8"),
    ([*BASE, "--dtype", "float16"], "--dtype"),
]


@pytest.mark.parametrize("argv, needle", BAD, ids=[n for _, n in BAD])
def test_bad_input_exits_2_with_one_line_naming_the_parameter(tmp_path, capsys, argv, needle):
    out = tmp_path / "never.nc"
    code, _stdout, stderr = _run([*argv, "--out", str(out)], capsys)
    assert code == 2
    assert stderr.count("\n") == 1 and needle in stderr, stderr
    assert "Traceback" not in stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "out, needle",
    [
        ("no/such/folder/run.nc", "does not exist"),
        ("run.txt", "unknown file type"),
        (".", "directory"),
    ],
)
def test_unwritable_output_is_rejected(tmp_path, capsys, monkeypatch, out, needle):
    monkeypatch.chdir(tmp_path)
    code, _, stderr = _run([*BASE, "--out", out], capsys)
    assert code == 2 and "--out" in stderr and needle in stderr


def test_a_potential_module_is_imported_only_for_an_otherwise_valid_command(
    tmp_path, capsys, monkeypatch
):
    """--steps -1 or an unwritable --out is refused before the --potential module is
    imported (importing it runs it); a valid command imports it."""
    (tmp_path / "marker_potential.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_suffix('.ran').touch()\n"
        "def V(x, R):\n    return 0.0 * x.sum()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    base = ["run", "--system", "rigid-bodies", "--inertia", "1,1.5,2", "--mass", "1",
            "--potential", "marker_potential:V", "--integrator", "lie-group-variational",
            "--h", "0.01", "--x0", "0,0,0", "--p0", "0,0,0", "--Pi0", "0.1,0.2,0.3"]  # fmt: skip
    ran = tmp_path / "marker_potential.ran"
    for bad in (["--steps", "-1", "--out", str(tmp_path / "a.nc")],
                ["--steps", "10", "--out", str(tmp_path / "no" / "a.nc")]):  # fmt: skip
        code, _, err = invoke([*base, *bad], capsys)
        assert code == 2 and err.count("\n") == 1 and not ran.exists(), err
    code, _, err = invoke([*base, "--steps", "10", "--out", str(tmp_path / "a.nc")], capsys)
    assert code == 0 and ran.exists(), err


def test_options_take_both_spellings_and_a_typo_gets_a_suggestion(tmp_path, capsys):
    """--save_every for --save-every and --rotation-invariant for --rotation_invariant run
    as the other spelling does; a near miss (--stepz) is one line naming the option and
    what it may mean, through the installed command too."""
    a, b = tmp_path / "a.nc", tmp_path / "b.nc"
    spelled = [*[("--save_every" if x == "--save-every" else x) for x in BASE], "--quiet"]
    assert _run([*BASE, "--quiet", "--out", str(a)], capsys)[0] == 0
    assert _run([*spelled, "--out", str(b)], capsys)[0] == 0
    with xr.open_dataset(a) as da, xr.open_dataset(b) as db:
        assert da.sizes["time"] == db.sizes["time"] == 11
    bodies = ["run", "--system", "rigid-bodies", "--inertia", "1,1.5,2", "--Pi0", "0.1,0.2,0.3",
              "--integrator", "lie-group-variational", "--h", "0.01", "--steps", "2",
              "--quiet"]  # fmt: skip
    for flag in ("--rotation-invariant", "--rotation_invariant"):
        code, _, err = _run([*bodies, flag, "true", "--out", str(tmp_path / f"{flag}.nc")],
                            capsys)  # fmt: skip
        assert code == 0, err
    typo = [x if x != "--steps" else "--stepz" for x in BASE]
    code, _, err = _run([*typo, "--out", str(tmp_path / "c.nc")], capsys)
    assert code == 2 and "unrecognized option --stepz; did you mean --steps?" in err, err
    p = subprocess.run([sys.executable, "-m", "mechint", *typo, "--out", str(tmp_path / "c.nc")],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "did you mean --steps" in p.stderr


def test_bad_plot_path(tmp_path, capsys):
    code, _, stderr = _run([*BASE, "--out", str(tmp_path / "a.nc"), "--plot", "a.jpgx"], capsys)
    assert code == 2 and "--plot" in stderr


def test_failed_run_keeps_samples_and_exits_1(tmp_path, capsys):
    out = tmp_path / "fail.nc"
    argv = [*BASE, "--out", str(out), "--quiet"]
    for option, value in [
        ("--integrator", "explicit-euler"),
        ("--h", "0.05"),
        ("--steps", "20000"),
        ("--save-every", "10"),
    ]:
        argv[argv.index(option) + 1] = value
    code, _, stderr = _run(argv, capsys)
    assert code == 1
    assert "step 4576 failed" in stderr and "written to" in stderr
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.sizes["time"] == 458 and np.all(np.isfinite(ds["m"].values))
        assert int(ds["failed_step"]) == 4576 and str(ds["reason"].values) == "non-finite"


@pytest.mark.parametrize("suffix", [".nc", ".csv"])
@pytest.mark.parametrize(
    ("changes", "failed", "samples"),
    [
        ({"--x0": "0.45,0,0.89;1e200,1e200,1e200", "--h": "0.1"}, [-1, 1], 1),
        ({"--integrator": "explicit-euler", "--h": "0.5"}, 58, 58),
        # no sample in the failing chunk: the failure alone is recorded
        ({"--integrator": "explicit-euler", "--h": "0.5", "--x0": "4.5e99,3e99,8.9e99"}, 2, 2),
        # one save interval run in pieces: x0 on file, then the failure
        (
            {
                "--integrator": "explicit-euler",
                "--h": "0.5",
                "--steps": "2097152",
                "--save-every": "2097152",
            },
            58,
            1,
        ),
    ],
    ids=["batch-kahan", "euler-h0.5", "no-sample-with-it", "pieces"],
)
def test_a_failed_run_records_its_failure_in_its_file(suffix, changes, failed, samples, tmp_path,
                                                       capsys):  # fmt: skip
    """Issue 31.2: a run that fails at a step exits 1, and its file says which member
    failed, where and why (NetCDF variables; the CSV's sidecar), with the samples before
    the failure; the file is checksummed with the failure, and is not continued."""
    out = tmp_path / f"fail{suffix}"
    argv = [*BASE, "--out", str(out), "--quiet"]
    argv[argv.index("--save-every") + 1] = "1"
    for option, value in changes.items():
        argv[argv.index(option) + 1] = value
    code, _, err = _run(argv, capsys)
    assert code == 1, err
    if suffix == ".nc":
        with xr.open_dataset(out, engine="h5netcdf") as ds:
            got, reason = ds["failed_step"].values, ds["reason"].values.astype(str)
            held = ds.sizes["time"]
    else:
        record = json.loads(csv_metadata_path(out).read_text())["mechint"]
        got, reason = np.asarray(record["failed_step"]), np.asarray(record["reason"])
        held = len(np.unique(read_csv(out)["t"]))
    assert np.array_equal(got, failed), got
    assert np.array_equal(reason == "ok", np.asarray(failed) < 0), reason
    assert held == samples and "failure are written" in err, err
    if suffix == ".nc":
        code, _, err = _run([*argv, "--resume"], capsys)
        assert code == 2 and "failed (at step" in err and err.count("\n") == 1, err


def test_entry_point_and_argparse_errors_are_one_line(capsys):
    proc = subprocess.run(
        [sys.executable, "-m", "mechint", "run", "--system", "euler-top"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "required" in proc.stderr
    assert "Traceback" not in proc.stderr
    # the entry point is the process above's; --version of the same main, in this process
    # (a second interpreter and JAX start-up would cost seconds)
    code, out, _ = invoke(["--version"], capsys)
    assert code == 0 and mi.__version__ in out


def test_run_quadratic_potential_top_with_orientation(tmp_path):
    out = tmp_path / "qpt.nc"
    with pytest.raises(SystemExit) as info:
        main(
            [
                "run",
                "--system",
                "quadratic-potential-top",
                "--J",
                "1,2,3",
                "--M0",
                "0,1,0;-1,0,0.5;0,-0.5,0",
                "--A",
                "1,0,0;0,2,0;0,0,-1",
                "--orientation",
                "identity",
                "--integrator",
                "discrete-lagrangian",
                "--h",
                "0.05",
                "--steps",
                "200",
                "--save-every",
                "20",
                "--out",
                str(out),
                "--quiet",
            ]
        )
    assert info.value.code == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        g, P = ds["g"].values, ds["P"].values
        A = np.diag([1.0, 2.0, -1.0])
        assert np.max(np.abs(np.swapaxes(g, 1, 2) @ A @ g - P)) < 1e-13


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--system", "clebsch", "--M0", "0,1;-1,0", "--p0", "1,2"], "--J: required"),
        (
            ["--system", "clebsch", "--J", "1,2", "--M0", "0,1;1,0", "--p0", "1,2"],
            "--M0: is not skew",
        ),
        (
            ["--system", "quadratic-potential-top", "--J", "1,2", "--M0", "0,1;-1,0"],
            "--P0: required",
        ),
        (
            ["--system", "clebsch", "--J", "1,2", "--M0", "0,1;-1,0", "--p0", "1,2,3"],
            "--p0: expected 2",
        ),
    ],
)
def test_rigid_body_input_errors_are_one_line(args, message, tmp_path, capsys):
    common = ["--integrator", "discrete-lagrangian", "--h", "0.1", "--steps", "10"]
    with pytest.raises(SystemExit) as info:
        main(["run", *args, *common, "--out", str(tmp_path / "x.nc")])
    rc = info.value.code
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err and err.count("\n") == 1


def test_run_kepler_composition_matches_the_library(tmp_path, capsys):
    out = tmp_path / "kepler.nc"
    argv = ["run", "--system", "kepler", "--eccentricity", "0.5", "--integrator", "composition"]
    argv += ["--scheme", "kahan-li8", "--h", "0.05", "--steps", "400", "--save-every", "100"]
    code, stdout, _ = _run([*argv, "--out", str(out)], capsys)
    assert code == 0 and "max|ΔL|/|L|" in stdout
    kepler = mi.systems.Kepler()
    integrator = mi.integrators.Composition(mi.integrators.StormerVerlet(), "kahan-li8")
    ref = mi.simulate(kepler, integrator, kepler.periapsis_state(0.5), 0.05, 400, 100)
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["q"].values, ref.x[0])
        assert np.array_equal(ds["p"].values, ref.x[1])
        assert "q_compensation" in ds.variables  # compensated by default at order 8
    # --no-compensated: the plain sums, as the library's compensated=False
    code, _, err = _run([*argv, "--out", str(out), "--overwrite", "--no-compensated"], capsys)
    assert code == 0, err
    plain = mi.simulate(kepler, integrator, kepler.periapsis_state(0.5), 0.05, 400, 100,
                        compensated=False)  # fmt: skip
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["q"].values, plain.x[0])
        assert "q_compensation" not in ds.variables
    # resumed with the other sums: refused in one line naming the option that matches
    code, _, err = _run([*argv, "--out", str(out), "--resume"], capsys)
    assert code == 2 and "--no-compensated (the file's sums)" in err and err.count("\n") == 1
    # another base map with the same fields (midpoint for Verlet) is another run too
    other = [*argv, "--out", str(out), "--resume", "--no-compensated", "--base", "midpoint"]
    code, _, err = _run(other, capsys)
    assert code == 2 and '"class": "StormerVerlet"' in err and "file's sums" not in err


@pytest.mark.parametrize(
    "args",
    [
        "--system pendulum --omega 1.5 --q0 1 --p0 0 --integrator symplectic-euler --variant B",
        "--system henon-heiles --q0 0.1,0.2 --p0 0.3,-0.2 --integrator splitting",
        "--system harmonic-oscillator --omega 1,2 --q0 1,0 --p0 0,1 --integrator midpoint",
        "--system lotka-volterra --abcd 1,0.5,0.8,1.2 --x0 2,1 --integrator kahan",
        "--system euler-top --inertia 2,1,0.6667 --x0 0.45,0,0.89 --integrator "
        "rigid-body-splitting --order 4",
    ],
    ids=["pendulum", "henon-heiles", "oscillator", "lotka-volterra", "rigid-body-splitting"],
)
def test_run_canonical_and_quadratic_systems(args, tmp_path, capsys):
    argv = ["run", *args.split(), "--h", "0.05", "--steps", "100", "--out", str(tmp_path / "r.nc")]
    code, stdout, stderr = _run(argv, capsys)
    assert code == 0, stderr
    assert "wrote" in stdout


CANONICAL_BAD = [
    ("--system kepler --eccentricity 1.2 --integrator stormer-verlet", "--eccentricity"),
    ("--system kepler --q0 1,0 --integrator stormer-verlet", "--p0: required"),
    ("--system kepler --q0 1,0 --p0 0,1,2 --integrator stormer-verlet", "--p0: expected 2"),
    ("--system kepler --q0 0,0 --p0 0,1 --integrator stormer-verlet", "--q0"),
    ("--system pendulum --mu 2 --q0 1 --p0 0 --integrator stormer-verlet", "--mu"),
    ("--system pendulum --omega -1 --q0 1 --p0 0 --integrator stormer-verlet", "--omega"),
    ("--system pendulum --q0 1 --p0 0 --integrator stormer-verlet --order 4", "--order"),
    ("--system pendulum --q0 1 --p0 0 --integrator composition --scheme foo", "--scheme"),
    ("--system pendulum --q0 1 --p0 0 --integrator composition --base rk4", "--base"),
    ("--system pendulum --q0 1 --p0 0 --integrator symplectic-euler --variant C", "--variant"),
    ("--system pendulum --q0 1 --p0 0 --integrator kahan", "not a quadratic field"),
    ("--system lotka-volterra --abcd 1,2,3 --x0 2,1 --integrator kahan", "--abcd"),
    ("--system lotka-volterra --x0 2,-1 --integrator kahan", "--x0"),
]


@pytest.mark.parametrize(("args", "needle"), CANONICAL_BAD, ids=[n for _, n in CANONICAL_BAD])
def test_canonical_input_errors_are_one_line(args, needle, tmp_path, capsys):
    out = tmp_path / "never.nc"
    argv = ["run", *args.split(), "--h", "0.05", "--steps", "10", "--out", str(out)]
    code, _, stderr = _run(argv, capsys)
    assert code == 2
    assert stderr.count("\n") == 1 and needle in stderr, stderr
    assert not out.exists()


def _machine(monkeypatch, memory: float, disk: float):
    """A machine with ``memory`` bytes available and ``disk`` bytes free."""
    import types

    from mechint import resources

    monkeypatch.setattr(resources, "available_memory", lambda: int(memory))
    monkeypatch.setattr(resources.shutil, "disk_usage",
                        lambda _: types.SimpleNamespace(free=int(disk)))  # fmt: skip


def _prepare(argv):
    from mechint.cli import run
    from mechint.cli.main import build_parser, negative_values

    return run.prepare(build_parser().parse_args(negative_values(argv)))


def test_an_estimate_that_does_not_fit_names_a_save_interval_that_does(
    capsys, tmp_path, monkeypatch
):
    """Issue 18.3: 10^9 saved samples of the Euler top (48 GB of file, 96 GB with the
    merge's copy) on a 50 GB disk are refused before any work, with a --save-every whose
    run fits; that one is accepted."""
    from mechint import resources

    _machine(monkeypatch, memory=16e9, disk=50e9)
    argv = [*_replace("--steps", "1000000000"), "--out", str(tmp_path / "a.nc")]
    code, _, err = _run([*argv, "--save-every", "1"], capsys)
    assert code == 2 and err.count("\n") == 1 and "of disk" in err, err
    suggested = int(err.split("--save-every ")[-1].split()[0])
    assert 10**9 % suggested == 0
    _prepare([*argv, "--save-every", str(suggested)])  # accepted
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    full = resources.footprint(top, np.array([0.45, 0.0, 0.89]), 10**9, 1)
    assert full.file_bytes == (10**9 + 1) * 48  # m (3), H, C and t: 8 bytes each


def test_a_streamed_run_is_judged_by_what_it_holds(capsys, tmp_path, monkeypatch):
    """Issue 31.8: ``mechint run`` streams its samples to the file, so 4·10^8 saved
    samples (19.2 GB of file, 57.6 GB if they were all held) fit a machine of 8 GB of
    memory and 100 GB of disk; the library's estimate of a run kept in memory does not."""
    from mechint import resources

    _machine(monkeypatch, memory=8e9, disk=100e9)
    argv = [*_replace("--steps", "400000000"), "--save-every", "1",
            "--out", str(tmp_path / "a.nc")]  # fmt: skip
    plan, _, _ = _prepare(argv)  # accepted: no error
    assert plan.steps == 4 * 10**8
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    x0 = np.array([0.45, 0.0, 0.89])
    held = resources.footprint(top, x0, 4 * 10**8, 1)
    streamed = resources.footprint(top, x0, 4 * 10**8, 1, streamed=True)
    assert held.memory_bytes > 5e10 and streamed.memory_bytes < 3e8
    with pytest.raises(mi.InputError, match="of memory"):
        resources.require_fits(held, 4 * 10**8, 1, None)


def test_a_killed_run_resumes_on_the_disk_that_held_it(capsys, tmp_path, monkeypatch):
    """Issue 31.8: the disk a resumed run needs counts its own file and segments as
    space it has (they are replaced); a disk too small is told how much to free, not
    to save fewer samples (which would be another run)."""
    from mechint.runfile import segment_dir

    out = tmp_path / "k.nc"
    argv = [*_replace("--steps", "20000"), "--save-every", "1", "--quiet", "--out", str(out)]
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    killed_run(out, top, mi.integrators.Kahan(), [0.45, 0.0, 0.89], 0.01, 20000, 1, 15000, 2000)
    on_disk = out.stat().st_size + sum(p.stat().st_size for p in segment_dir(out).glob("*.npz"))
    final = 20001 * 48
    # free space: what the finished run needs (twice its file, with the 0.8 share) less
    # what the killed run holds, and a little more
    _machine(monkeypatch, memory=8e9, disk=(2 * final) / 0.8 - on_disk + 4096)
    code, _, err = _run([*argv, "--resume"], capsys)
    assert code == 0, err
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.attrs["complete"] == 1 and ds.sizes["time"] == 20001
    # without the killed run's own bytes, the same disk would not do
    _machine(monkeypatch, memory=8e9, disk=(2 * final) / 0.8 - on_disk - 4096)
    killed_run(out, top, mi.integrators.Kahan(), [0.45, 0.0, 0.89], 0.01, 20000, 1, 15000, 2000)
    on_disk2 = out.stat().st_size + sum(p.stat().st_size for p in segment_dir(out).glob("*.npz"))
    _machine(monkeypatch, memory=8e9, disk=(2 * final) / 0.8 - on_disk2 - 4096)
    code, _, err = _run([*argv, "--resume"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--resume" in err and "free" in err, err


def test_default_save_every_keeps_the_file_small_and_says_so(tmp_path, capsys):
    """No --save-every: about 10^4 samples (a divisor of steps), the choice printed;
    the summary reports the compile time apart from the steps'."""
    argv = [a for a in BASE if a not in ("--save-every", "100")]
    argv[argv.index("1000")] = "1000000"
    out = tmp_path / "run.nc"
    code, stdout, stderr = _run([*argv, "--out", str(out)], capsys)
    assert code == 0
    assert "saving every 100 steps (10001 samples; --save-every to choose)" in stderr
    assert "10001 samples" in stdout and "s compiling)" in stdout
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.sizes["time"] == 10001 and ds.attrs["save_every"] == 100
    assert out.stat().st_size < 2_000_000  # every step saved: about 100 MB


@pytest.mark.parametrize("command", ["run", "check", "compare", "sweep"])
def test_help_examples_paste_into_a_shell(command, capsys):
    """Each example of --help is printed on lines joined by ' \\' continuations; joined
    back as a shell does, it parses."""
    import shlex

    from mechint.cli.main import build_parser

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    examples = text.split("example")[1].split(":", 1)[1].replace(" \\\n", " ")
    commands = [line.strip() for line in examples.splitlines() if line.strip()]
    assert commands and all(c.startswith(f"mechint {command} ") for c in commands)
    for c in commands:
        args = build_parser().parse_args(shlex.split(c)[1:])
        assert args.command == command


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("Kahan", "'kahan'"),
        ("verlet", "'stormer-verlet'"),
        ("DiscreteLagrangian", "'discrete-lagrangian'"),
        ("midpont", "'midpoint'"),
    ],
)
def test_an_unknown_integrator_suggests_the_intended_one(given, meant, tmp_path, capsys):
    argv = [*BASE, "--out", str(tmp_path / "a.nc")]
    argv[argv.index("kahan")] = given
    code, _, stderr = _run(argv, capsys)
    assert code == 2 and stderr.count("\n") == 1
    assert f"--integrator: unknown integrator {given!r}; did you mean {meant}?" in stderr


def test_rigid_bodies_from_the_command_line_and_a_sweep(tmp_path, capsys):
    """A user's potential by reference ("module:function") on the command line and in an
    experiment: the file holds the run of the library, attitudes included; the sweep is
    the same run; a reference that does not import is one line and exit 2."""
    out = tmp_path / "top.nc"
    argv = [
        "run", "--system", "rigid-bodies", "--inertia", "2,1.5,1",
        "--potential", "tests.systems.rigid_bodies_cases:_heavy",
        "--R0", "1,0,0,0,0.6,-0.8,0,0.8,0.6", "--Pi0", "0.45,-0.3,0.89",
        "--integrator", "lie-group-variational", "--h", "0.05", "--steps", "200",
        "--save-every", "20", "--out", str(out),
    ]  # fmt: skip
    code, _, err = _run(argv, capsys)
    assert code == 0, err
    system = mi.systems.RigidBodies([[2, 1.5, 1]], potential=cases._heavy)
    R0 = np.array([[[1, 0, 0], [0, 0.6, -0.8], [0, 0.8, 0.6]]])
    ref = mi.simulate(system, mi.integrators.LieGroupVariational(), (R0, [[0.45, -0.3, 0.89]]),
                      0.05, 200, 20)  # fmt: skip
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["R"].values, ref.x[0])
        assert np.array_equal(ds["Pi"].values, ref.x[1])
        assert ds.attrs["potential"] == "tests.systems.rigid_bodies_cases:_heavy"
    experiment = {
        "steps": 200, "save_every": 20, "h": [0.05], "integrators": ["lie-group-variational"],
        "system": {"name": "rigid-bodies", "inertia": [[2, 1.5, 1]],
                   "potential": "tests.systems.rigid_bodies_cases:_heavy"},
        "initial": {"R": [R0.tolist()], "Pi": [[[0.45, -0.3, 0.89]]]},
    }  # fmt: skip
    ds = sweeps.sweep(experiment)
    assert np.max(np.abs(ds["Pi"].values.reshape(-1, 3) - ref.x[1].reshape(-1, 3))) < 1e-14
    bad = [*argv[:6], "tests.systems.rigid_bodies_cases:nothing", *argv[7:]]
    code, _, err = _run(bad, capsys)
    assert code == 2 and "--potential" in err and len(err.strip().splitlines()) == 1


def test_r0_as_a_quaternion_euler_angles_or_a_rounded_matrix(tmp_path, capsys):
    """--R0 per body as 9 numbers (a matrix rounded to 6 digits is re-orthogonalised, with
    a note saying by how much), 4 (a quaternion w,x,y,z of any length) or 3 (yaw, pitch,
    roll, radians): the file's first attitudes are those rotations; other widths, a zero
    quaternion and a matrix far from SO(3) are one line and exit 2."""
    from mechint import attitude

    q = np.array([0.8, 0.2, -0.4, 0.4])
    angles = np.array([0.3, -0.2, 1.1, -0.5, 0.4, 0.1])  # two bodies
    rounded = np.round(np.asarray(attitude.from_euler(angles[:3])), 6)
    two = np.asarray(attitude.from_euler(angles.reshape(2, 3)))
    cases_ = {
        "quaternion": ("1.6,0.4,-0.8,0.8", np.asarray(attitude.from_quaternion(q))[None]),
        "euler": (",".join(map(str, angles)), two),
        "rounded": (",".join(map(str, rounded.ravel())), None),
    }
    for name, (text, want) in cases_.items():
        bodies = "2,1.5,1" if name != "euler" else "2,1.5,1;2,1.5,1"
        pi0 = "0.45,-0.3,0.89" if name != "euler" else "0.45,-0.3,0.89,0.1,0.2,0.3"
        out = tmp_path / f"{name}.nc"
        argv = ["run", "--system", "rigid-bodies", "--inertia", bodies, "--R0", text, "--Pi0",
                pi0, "--integrator", "lie-group-variational", "--h", "0.05", "--steps", "4",
                "--out", str(out), "--quiet"]  # fmt: skip
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code, _, err = _run(argv, capsys)
        assert code == 0, err
        notes = [str(w.message) for w in caught if w.category is mi.SpecialCaseWarning]
        with xr.open_dataset(out, engine="h5netcdf") as ds:
            R = ds["R"].values[0]
        if want is not None:
            assert np.max(np.abs(R - want)) < 4e-16, name
            assert not notes, notes
        else:  # (the command prints it as one "note:" line: test_hostile)
            assert len(notes) == 1 and notes[0].startswith("--R0 re-orthogonalised: max"), notes
            assert np.max(np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3))) < 1e-15
            assert np.max(np.abs(R - rounded)) < 1e-6
    for text in ("1,2", "0,0,0,0", "1,0,0,0,1,0,0,0,0.9"):
        code, _, err = _run(["run", "--system", "rigid-bodies", "--inertia", "2,1.5,1", "--R0",
                             text, "--Pi0", "0.1,0.2,0.3", "--integrator",
                             "lie-group-variational", "--h", "0.05", "--steps", "4", "--out",
                             str(tmp_path / "bad.nc")], capsys)  # fmt: skip
        assert code == 2 and "--R0" in err and len(err.strip().splitlines()) == 1, (text, err)


def test_a_planetary_preset_and_a_bodies_file_run_and_name_the_bodies(tmp_path, capsys):
    """--preset outer-solar-system runs HLW's outer solar system (its file's ``body``
    coordinate holds the names, its first sample the preset's state); a bodies file of the
    same bodies by positions and velocities starts from the same positions and ends within
    round-off of it; one by orbital elements starts from ``from_elements``' state.  A bad
    file, an unknown preset or a preset with the system's own options: one line, exit 2."""
    common = ["--integrator", "wisdom-holman", "--h", "50", "--steps", "20", "--save-every",
              "10", "--quiet"]  # fmt: skip
    system, x0 = mi.systems.nbody.outer_solar_system()
    names = system.names
    assert names is not None
    a, b = tmp_path / "a.nc", tmp_path / "b.nc"
    code, _, err = invoke(["run", "--system", "nbody", "--preset", "outer-solar-system", *common,
                           "--out", str(a)], capsys)  # fmt: skip
    assert code == 0, err
    m = np.asarray(system.masses)
    rows = [{"name": n, "mass": float(mk), "q": q.tolist(), "v": (p / mk).tolist()}
            for n, mk, q, p in zip(names, m, x0[0], x0[1], strict=True)]  # fmt: skip
    (tmp_path / "oss.json").write_text(json.dumps({"G": float(system.G), "bodies": rows}))
    code, _, err = invoke(["run", "--system", "nbody", "--bodies", str(tmp_path / "oss.json"),
                           *common, "--out", str(b)], capsys)  # fmt: skip
    assert code == 0, err
    with xr.open_dataset(a) as da, xr.open_dataset(b) as db:
        assert list(da["body"].values) == list(names) == list(db["body"].values)
        assert np.array_equal(da["q"].values[0], x0[0]) and np.array_equal(db["q"].values[0], x0[0])
        scale = np.max(np.abs(da["q"].values[-1]))
        assert np.max(np.abs(da["q"].values[-1] - db["q"].values[-1])) < 1e-14 * scale
    keys = ("a", "e", "i", "Omega", "omega", "M")
    elements = {"frame": "heliocentric", "bodies": [
        {"name": "star", "mass": 1.0},
        {"name": "b", "mass": 1e-3, **dict(zip(keys, (1.0, 0.1, 0.1, 0.2, 0.3, 0.4), strict=True))},
        {"name": "c", "mass": 0.0, **dict(zip(keys, (2.0, 0.2, 0.0, 0.0, 1.0, 2.0), strict=True))},
    ]}  # fmt: skip
    (tmp_path / "el.json").write_text(json.dumps(elements))
    read, x1 = mi.systems.NBody.read_bodies(tmp_path / "el.json")
    _, want = mi.systems.NBody.from_elements(
        [1.0, 1e-3, 0.0], {"a": [1.0, 2.0], "e": [0.1, 0.2], "i": [0.1, 0.0],
                           "Omega": [0.2, 0.0], "omega": [0.3, 1.0], "M": [0.4, 2.0]},
        frame="heliocentric")  # fmt: skip
    assert read.names == ("star", "b", "c") and read.n_test == 1
    assert np.array_equal(x1[0], want[0]) and np.array_equal(x1[1], want[1])
    (tmp_path / "bad.json").write_text('{"bodies": [{"mass": 1}, {"mass": "x", "q": [0, 0]}]}')
    typo = json.loads((tmp_path / "el.json").read_text()) | {"escpae": 2.0}
    (tmp_path / "typo.json").write_text(json.dumps(typo))  # not run without its escape
    cases = [
        (["--bodies", str(tmp_path / "typo.json")], "--bodies: unknown key 'escpae'"),
        (["--preset", "inner-solar-system"], "--preset"),
        (["--preset", "outer-solar-system", "--masses", "1,1"], "--masses"),
        (["--bodies", str(tmp_path / "bad.json")], "--bodies"),
        (["--bodies", str(tmp_path / "missing.json")], "--bodies"),
        # a state's errors name the option that gave it
        (["--masses", "1,1e-3", "--q0", "0,0,0;1,0,0", "--p0", "0,0,0;0,nan,0"], "--p0: all"),
        (["--masses", "1,1e-3", "--q0", "0,0,0;0,0,0", "--p0", "0,0,0;0,1,0"], "--q0: bodies"),
    ]
    for extra, needle in cases:
        code, _, err = invoke(["run", "--system", "nbody", *extra, *common, "--out",
                               str(tmp_path / "c.nc")], capsys)  # fmt: skip
        assert code == 2 and err.count("\n") == 1 and needle in err, (extra, err)
        assert not (tmp_path / "c.nc").exists()
    code, _, err = invoke([*BASE[:3], "--bodies", str(tmp_path / "oss.json"), *BASE[7:], "--out",
                           str(tmp_path / "c.nc")], capsys)  # fmt: skip
    assert code == 2 and "--bodies" in err and "does not apply" in err, err
