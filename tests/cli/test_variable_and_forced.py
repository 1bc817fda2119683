"""The command line's forms of variable steps and forces: ``--integrator
reversible-adaptive --sigma``, ``--time-transform``, ``--force`` and ``--dissipation``."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from tests.cli.helpers import invoke, killed_run

MODULE = "mechint_user_functions"
SOURCE = textwrap.dedent('''
    import jax.numpy as jnp

    def sigma(x):
        """Steps that follow the orbital time scale, |q|^(3/2)."""
        q, p = x
        return jnp.sum(q * q) ** 0.75


    def g(q, p):
        """dt/ds = |q|^(3/2)."""
        return jnp.sum(q * q) ** 0.75


    def push(t, x):
        """A periodic force on p."""
        return 0.01 * jnp.cos(t) * jnp.ones_like(x[1])


    def damp(x):
        """Linear friction on dH/dp."""
        return 0.05 * jnp.eye(x[1].shape[-1])


    def negative_g(q, p):
        return -jnp.sum(q * q)


    def negative_sigma(x):
        return -jnp.sum(x[0] ** 2)


    def vector_sigma(x):
        return x[0] ** 2 + 1.0
''')


@pytest.fixture
def functions(tmp_path, monkeypatch):
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    import importlib

    return importlib.import_module(MODULE)


KEPLER = ["--system", "kepler", "--q0", "0.1,0", "--p0", "0,4.358898943540674", "--h", "0.01",
          "--save-every", "50", "--quiet"]  # fmt: skip
X0 = (np.array([0.1, 0.0]), np.array([0.0, 4.358898943540674]))  # e = 0.9, at periapsis


def _open(path):
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()


def test_variable_steps_from_the_command_line_are_the_librarys(functions, tmp_path, capsys):
    """``--integrator reversible-adaptive --sigma m:f`` and ``--time-transform m:g`` write
    the library's runs bit for bit (the clock (t, ρ) and the extended (q, t), (p, e));
    a reversible-adaptive run killed with samples in segments resumes from its clock, equal
    to the uninterrupted run in every variable and the checksum."""
    ra = mi.integrators.ReversibleAdaptive(mi.integrators.StormerVerlet(), functions.sigma)
    argv = ["run", *KEPLER, "--steps", "600", "--integrator", "reversible-adaptive",
            "--sigma", f"{MODULE}:sigma"]  # fmt: skip
    whole, part = tmp_path / "whole.nc", tmp_path / "part.nc"
    code, _, err = invoke([*argv, "--out", str(whole)], capsys)
    assert code == 0, err
    run = mi.simulate(mi.systems.Kepler(), ra, X0, 0.01, 600, 50)
    a = _open(whole)
    assert np.array_equal(a["q"].values, run.x[0]) and np.array_equal(a["clock"].values, run.clock)
    # the file's time is the run's physical time, as the library's (not the step grid)
    assert np.array_equal(a["time"].values, run.t) and a["time"].values[-1] != 6.0
    assert a.attrs["integrator"] == "ReversibleAdaptive"
    killed_run(part, mi.systems.Kepler(), ra, X0, 0.01, 600, 50, 250, 50)
    code, _, err = invoke([*argv, "--out", str(part), "--resume"], capsys)
    assert code == 0, err
    b = _open(part)
    assert set(a.variables) == set(b.variables)
    for k in a.variables:
        assert np.array_equal(a[k].values, b[k].values), k
    assert a.attrs["checksum"] == b.attrs["checksum"]

    tt = tmp_path / "tt.nc"
    options = ["--integrator", "stormer-verlet", "--time-transform", f"{MODULE}:g"]
    code, _, err = invoke(["run", *KEPLER, "--steps", "300", *options, "--out", str(tt)], capsys)
    assert code == 0, err
    system = mi.systems.TimeTransformed(mi.systems.Kepler(), functions.g)
    run = mi.simulate(system, mi.integrators.StormerVerlet(), X0, 0.01, 300, 50)
    c = _open(tt)
    assert np.array_equal(c["q"].values, run.x[0]) and np.array_equal(c["p"].values, run.x[1])
    assert np.array_equal(c["time"].values, run.t) and c["time"].values[-1] != 3.0
    assert c["q"].shape == (7, 3) and np.all(np.diff(c["q"].values[:, -1]) > 0)  # t grows
    # K = g (H + e), zero along the solution, stays near zero (a symplectic map of K)
    assert np.max(np.abs(c["K"].values)) < 1e-4
    # the file names its system (the wrapped one's name is a parameter beside it), and
    # a resumed run recognises it as its own
    assert (c.attrs["system"], c.attrs["parameter_system"]) == ("TimeTransformed", "Kepler")
    code, text, err = invoke(["run", *KEPLER, "--steps", "300", *options, "--out", str(tt),
                              "--resume"], capsys)  # fmt: skip
    assert code == 0 and "already complete" in text, err


def test_forces_from_the_command_line_are_the_librarys(functions, tmp_path, capsys):
    """``--force m:f --dissipation m:R``: the file is the library's ``Forced`` run, with
    the work, the dissipated energy and the energy balance (kept to round-off by the
    average vector field); a killed run resumes bit for bit; compare and check take them
    too."""
    out = tmp_path / "f.nc"
    argv = ["run", "--system", "pendulum", "--q0", "1", "--p0", "0", "--h", "0.01",
            "--steps", "500", "--save-every", "50", "--quiet", "--integrator",
            "average-vector-field", "--force", f"{MODULE}:push", "--dissipation",
            f"{MODULE}:damp", "--out", str(out)]  # fmt: skip
    code, _, err = invoke(argv, capsys)
    assert code == 0, err
    system = mi.systems.Forced(mi.systems.Pendulum(), functions.push, functions.damp)
    run = mi.simulate(system, mi.integrators.AverageVectorField(), ([1.0], [0.0]), 0.01, 500, 50)
    d = _open(out)
    assert np.array_equal(d["q"].values, run.x[0][0]) and np.array_equal(d["work"].values, run.x[2])
    assert d["dissipated"].values[-1] > 0 and d["work"].values[-1] != 0
    balance = d["H_balance"].values
    assert np.max(np.abs(balance - balance[0])) < 1e-13
    assert (d.attrs["system"], d.attrs["parameter_system"]) == ("Forced", "Pendulum")
    code, text, err = invoke([*argv, "--resume"], capsys)
    assert code == 0 and "already complete" in text, err
    # killed with samples in segments, resumed: its nested state (the system's, then the
    # clock, work and dissipation) rebuilt from the file, equal to the whole run
    part = tmp_path / "part.nc"
    killed_run(part, system, mi.integrators.AverageVectorField(), ([1.0], [0.0]), 0.01, 500,
               50, 250, 50)  # fmt: skip
    code, _, err = invoke([*argv[:-1], str(part), "--resume"], capsys)
    assert code == 0, err
    b = _open(part)
    for k in d.variables:
        assert np.array_equal(d[k].values, b[k].values), k
    assert d.attrs["checksum"] == b.attrs["checksum"]
    code, text, err = invoke(["compare", "--system", "pendulum", "--q0", "1", "--p0", "0",
                              "--integrators", "stormer-verlet,average-vector-field",
                              "--force", f"{MODULE}:push", "--T", "5", "--h", "0.01"],
                             capsys)  # fmt: skip
    assert code == 0 and "| average-vector-field |" in text, err


def test_the_forms_refuse_what_they_cannot_run_in_one_line(functions, tmp_path, capsys):
    base = ["run", *KEPLER, "--steps", "10", "--out", str(tmp_path / "x.nc")]
    cases = [
        (["--integrator", "reversible-adaptive"], "--sigma: is required by reversible-adaptive"),
        (["--integrator", "reversible-adaptive", "--sigma", f"{MODULE}:nope"], "--sigma"),
        (["--integrator", "reversible-adaptive", "--sigma", f"{MODULE}:sigma", "--base",
          "rk4"], "--base: RK4 is not symmetric"),
        (["--integrator", "kahan", "--sigma", f"{MODULE}:sigma"],
         "--sigma: does not apply to kahan"),
        (["--integrator", "stormer-verlet", "--time-transform", f"{MODULE}:g", "--force",
          f"{MODULE}:push"], "--time-transform: does not go with --force"),
        (["--integrator", "kahan", "--force", f"{MODULE}:push"], "--integrator: Kahan cannot"),
        (["--integrator", "stormer-verlet", "--force", "not a reference"], "--force"),
        # two transformations of time: the clock would report the fictive time as the time
        (["--integrator", "reversible-adaptive", "--sigma", f"{MODULE}:sigma",
          "--time-transform", f"{MODULE}:g"], "carries its own physical time"),
    ]  # fmt: skip
    for args, text in cases:
        code, _, err = invoke([*base, *args], capsys)
        assert code == 2 and err.count("\n") == 1 and text in err, (args, err)
    euler = ["run", "--system", "euler-top", "--inertia", "3,2,1", "--h", "0.01", "--steps",
             "10", "--out", str(tmp_path / "y.nc"), "--integrator", "kahan"]  # fmt: skip
    code, _, err = invoke([*euler, "--time-transform", f"{MODULE}:g"], capsys)
    assert code == 2 and "--system" in err and "not a canonical system" in err, err
    # a preset's state is its system's own: a wrapper is refused with it, not left out
    chain = ["run", "--system", "pendulum-chain", "--preset", "double-pendulum", "--h",
             "0.01", "--steps", "10", "--out", str(tmp_path / "z.nc"), "--integrator",
             "rattle"]  # fmt: skip
    wrappers = [("--force", f"{MODULE}:push"), ("--dissipation", f"{MODULE}:damp"),
                ("--time-transform", f"{MODULE}:g"),
                ("--constraints", "tests.systems.constrained_cases:unit_sphere")]  # fmt: skip
    for option, value in wrappers:
        code, _, err = invoke([*chain, option, value], capsys)
        assert code == 2 and f"{option}: does not go with --preset" in err, err
    assert not (tmp_path / "z.nc").exists()


def test_errors_of_the_functions_name_their_options(functions, tmp_path, capsys, monkeypatch):
    """The library's g, sigma, compensated and max_events are the options --time-transform,
    --sigma, --compensated and --crossings, in every command that takes them: one line,
    exit 2, no file written."""
    out = tmp_path / "x.nc"
    kepler = ["--system", "kepler", "--eccentricity", "0.5"]
    adaptive = ["--integrator", "reversible-adaptive", "--sigma"]
    run = ["run", *kepler, "--h", "0.01", "--steps", "10", "--out", str(out)]
    section = ["section", *kepler, "--surface", "q_2=0", "--h", "0.01", "--steps", "10",
               "--out", str(out)]  # fmt: skip
    cases = [
        ([*run, "--integrator", "stormer-verlet", "--time-transform", f"{MODULE}:negative_g"],
         "--time-transform: must be positive"),
        (["check", *kepler, "--integrator", "stormer-verlet", "--time-transform",
          f"{MODULE}:negative_g"], "--time-transform: must be positive"),
        (["check", *kepler, *adaptive, f"{MODULE}:negative_sigma"], "--sigma: must be positive"),
        ([*run, *adaptive, f"{MODULE}:vector_sigma"], "--sigma: must return a scalar"),
        ([*section, *adaptive, f"{MODULE}:negative_sigma"], "--sigma: must be positive"),
        (["compare", *kepler, "--integrators", "stormer-verlet,reversible-adaptive", "--sigma",
          f"{MODULE}:sigma", "--T", "1", "--h", "0.01", "--compensated"],
         "--compensated: reversible-adaptive's clock"),
        ([*run, *adaptive, f"{MODULE}:sigma", "--compensated"], "--compensated: reversible"),
    ]  # fmt: skip
    for args, text in cases:
        code, _, err = invoke(args, capsys)
        assert code == 2 and err.count("\n") == 1 and text in err, (args, err)
    monkeypatch.setattr("mechint.resources.available_memory", lambda: 10**4)
    code, _, err = invoke([*section, "--integrator", "stormer-verlet", "--crossings", "1000"],
                          capsys)  # fmt: skip
    assert code == 2 and err.startswith("mechint section: error: --crossings:"), err
    assert "max_events" not in err
    assert not out.exists()


def test_the_real_command_runs_them(functions, tmp_path):
    """The forms through the installed command in a fresh process."""
    out = tmp_path / "p.nc"
    proc = subprocess.run(
        [sys.executable, "-m", "mechint", "run", *KEPLER, "--steps", "100", "--integrator",
         "reversible-adaptive", "--sigma", f"{MODULE}:sigma", "--out", str(out)],
        capture_output=True, text=True, timeout=180, env=os.environ.copy(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    t = _open(out)["clock"].values[:, 0]
    assert t.shape == (3,) and np.all(np.diff(t) > 0)
    assert t[-1] < 100 * 0.01  # physical steps shorter than ε near periapsis


def test_a_quadratic_field_from_a_coefficients_file(tmp_path, capsys):
    """``--system quadratic-field --coefficients`` (.json or .npz): the library's run of
    the same coefficients bit for bit (the Euler top's field under Kahan's map); a file
    that is not one is refused in one line, naming the option, before any work; the
    same through the real command."""
    inertia = np.array([2.0, 1.0, 2.0 / 3.0])
    levi = np.zeros((3, 3, 3))
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi[i, j, k], levi[i, k, j] = 1.0, -1.0
    Q = levi / inertia[None, None, :]  # (m × I⁻¹m)_i = ε_ijk m_j m_k / I_k
    (tmp_path / "top.json").write_text(json.dumps({"Q": Q.tolist(), "c": [0.0, 0.0, 0.0]}))
    np.savez(tmp_path / "top.npz", Q=Q, B=np.zeros((3, 3)))
    argv = ["run", "--system", "quadratic-field", "--x0", "0.45,0,0.89", "--integrator",
            "kahan", "--h", "0.01", "--steps", "400", "--save-every", "100", "--quiet"]  # fmt: skip
    field = mi.systems.QuadraticField(Q)
    ref = mi.simulate(field, mi.integrators.Kahan(), [0.45, 0.0, 0.89], 0.01, 400, 100)
    for name in ("top.json", "top.npz"):
        out = tmp_path / f"{name}.nc"
        code, _, err = invoke([*argv, "--coefficients", str(tmp_path / name), "--out", str(out)],
                              capsys)  # fmt: skip
        assert code == 0, err
        assert np.array_equal(_open(out)["x"].values, ref.x), name
    # the field is the top's: Kahan's map on it is the top's map, to round-off
    top = mi.simulate(mi.systems.EulerTop(inertia), mi.integrators.Kahan(), [0.45, 0.0, 0.89],
                      0.01, 400, 100)  # fmt: skip
    assert np.max(np.abs(ref.x - top.x)) < 1e-13
    bad = {
        "missing.json": None,
        "q.txt": "1",
        "notjson.json": "{",
        "list.json": "[1, 2]",
        "noq.json": json.dumps({"B": [[0.0]]}),
        "extra.json": json.dumps({"Q": Q.tolist(), "D": 1}),
        "shape.json": json.dumps({"Q": [[1.0, 2.0]]}),
        "text.json": json.dumps({"Q": "abc"}),
    }
    for name, text in bad.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        code, _, err = invoke([*argv, "--coefficients", str(tmp_path / name), "--out",
                               str(tmp_path / "x.nc")], capsys)  # fmt: skip
        assert code == 2 and err.count("\n") == 1 and "--coefficients" in err, (name, err)
    proc = subprocess.run([sys.executable, "-m", "mechint", *argv, "--coefficients",
                           str(tmp_path / "top.npz"), "--out", str(tmp_path / "p.nc")],
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(_open(tmp_path / "p.nc")["x"].values, ref.x)
