"""The command line's constrained systems: ``--system pendulum-chain``, ``--constraints
module:function`` around a registered separable system, ``--project``."""

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from tests.cli.helpers import invoke

SPHERE = ["--system", "harmonic-oscillator", "--omega", "1,2,3",
          "--constraints", "tests.systems.constrained_cases:unit_sphere"]  # fmt: skip


def test_a_preset_chain_and_a_user_constraint_run_and_match_the_library(tmp_path, capsys):
    out = tmp_path / "chain.nc"
    argv = ["run", "--system", "pendulum-chain", "--preset", "double-pendulum",
            "--integrator", "rattle", "--h", "0.01", "--steps", "200", "--save-every", "100",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert invoke(argv, capsys)[0] == 0
    system, x0 = mi.systems.PendulumChain.presets["double-pendulum"]()
    ref = mi.simulate(system, mi.integrators.Rattle(), x0, 0.01, 200, 100)
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["q"].values, np.asarray(ref.x[0]))
        assert float(ds["constraints"].max()) < 1e-15
        assert list(ds["dof"].values) == ["x1", "z1", "x2", "z2"]
        lam = ds["multipliers"]  # the rods' multipliers at every sample
        assert lam.dims == ("time", "constraint") and "constraint force" in lam.long_name
        assert np.array_equal(lam.values, np.asarray(system.multipliers(ref.x)))
    out = tmp_path / "sphere.nc"
    argv = ["run", *SPHERE, "--q0", "0.6,0.8,0", "--p0", "0,0,1", "--integrator", "composition",
            "--h", "0.01", "--steps", "100", "--out", str(out), "--quiet"]  # fmt: skip
    assert invoke(argv, capsys)[0] == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        q = ds["q"].values
        assert ds.attrs["integrator"] == "Composition" and ds.attrs["system"] == "Constrained"
        assert ds.attrs["parameter_system"] == "harmonic-oscillator"
    code, text, err = invoke([*argv, "--resume"], capsys)  # the run recognises its file
    assert code == 0 and "already complete" in text, err
    assert np.max(np.abs(np.sum(q**2, axis=-1) - 1.0)) < 1e-15


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--q0", "0.6,0.8,0.1", "--p0", "0,0,1"], "x0: is off the constraint manifold"),
        (["--q0", "0.6,0.8,0", "--p0", "0,0,1", "--integrator", "rk4"],
         "--integrator: RK4 cannot advance Constrained; its state must stay on the constraint"),
    ],
)  # fmt: skip
def test_bad_constrained_input_exits_2_with_one_line(tmp_path, capsys, extra, needle):
    argv = ["run", *SPHERE, "--integrator", "rattle", "--h", "0.01", "--steps", "10",
            "--out", str(tmp_path / "x.nc"), *extra]  # fmt: skip
    if extra.count("--integrator") == 1:
        i = argv.index("rattle")
        del argv[i - 1 : i + 1]
    code, _, err = invoke(argv, capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def test_project_moves_the_state_and_applies_only_to_constrained_systems(tmp_path, capsys):
    argv = ["run", *SPHERE, "--q0", "0.6,0.8,0.1", "--p0", "0,0,1", "--integrator", "shake",
            "--h", "0.01", "--steps", "10", "--out", str(tmp_path / "p.nc"), "--quiet",
            "--project"]  # fmt: skip
    assert invoke(argv, capsys)[0] == 0
    code, _, err = invoke(["run", "--system", "kepler", "--q0", "1,0", "--p0", "0,1",
                           "--integrator", "rattle", "--h", "0.1", "--steps", "1",
                           "--out", str(tmp_path / "k.nc"), "--project"], capsys)  # fmt: skip
    assert code == 2 and "--project: does not apply to kepler" in err
    code, _, err = invoke(["check", "--system", "euler-top", "--inertia", "1,2,3",
                           "--constraints", "tests.systems.constrained_cases:unit_sphere",
                           "--integrator", "rattle", "--h", "0.1"], capsys)  # fmt: skip
    assert code == 2 and "--system: EulerTop is not a separable canonical system" in err
    code, _, err = invoke(["check", *SPHERE[:4], "--constraints", "nowhere:g",
                           "--integrator", "rattle", "--h", "0.1"], capsys)  # fmt: skip
    assert code == 2 and "--constraints: cannot import 'nowhere:g'" in err


def test_a_jointed_chain_writes_its_joint_forces(tmp_path, capsys):
    """``rigid-bodies --preset link-chain-10`` by the LGVI: the file holds the states the
    library computes, bit for bit, and each joint's force at every sample, those of its
    own states; the joints at round-off."""
    out = tmp_path / "links.nc"
    argv = ["run", "--system", "rigid-bodies", "--preset", "link-chain-10", "--integrator",
            "lie-group-variational", "--h", "0.001", "--steps", "200", "--save-every", "100",
            "--out", str(out), "--quiet"]  # fmt: skip
    assert invoke(argv, capsys)[0] == 0
    system, x0 = mi.systems.RigidBodies.presets["link-chain-10"]()
    ref = mi.simulate(system, mi.integrators.LieGroupVariational(), x0, 0.001, 200, 100)
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["R"].values, np.asarray(ref.x[2]))
        assert float(ds["constraints"].max()) < 1e-15
        lam = ds["multipliers"]
        assert lam.dims == ("time", "joint", "axis")
        states = tuple(ds[k].values for k in ("x", "p", "R", "Pi"))
        want = np.asarray(system.multipliers(states))
        assert np.max(np.abs(lam.values - want)) < 1e-13 * np.max(np.abs(want))
        assert lam.values[0, 0, 2] < -0.5 * 10 * 0.1 * 9.81  # the top holds the chain up


def test_joints_on_the_command_line(tmp_path, capsys):
    """``rigid-bodies --joints`` with a user's potential: a state off the joints is
    refused (exit 2, one line), --project moves it there and the run keeps the joints; a
    bad joint and a map that knows no joints are refused."""
    base = ["run", "--system", "rigid-bodies", "--inertia", "0.1,0.1,0.01;0.1,0.1,0.01",
            "--mass", "1,1", "--potential", "tests.systems.constrained_cases:body_gravity",
            "--joints", "0:0,0,0.5:ground:0,0,0;1:0,0,0.5:0:0,0,-0.5",
            "--x0", "0.1,0,-0.5;0,0,-1.5", "--Pi0", "0,0.01,0;0,0,0", "--h", "0.001",
            "--steps", "200", "--save-every", "100", "--quiet"]  # fmt: skip
    out = tmp_path / "j.nc"
    lgvi = ["--integrator", "lie-group-variational", "--out", str(out)]
    code, _, err = invoke([*base, *lgvi], capsys)
    assert code == 2 and "x0: is off the joints' manifold" in err and err.count("\n") == 1
    assert invoke([*base, *lgvi, "--project"], capsys)[0] == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert float(ds["constraints"].max()) < 1e-15
        assert ds["multipliers"].shape == (3, 2, 3)
        assert "joints" in ds.attrs
    bad = [a.replace("ground", "floor") for a in base]
    code, _, err = invoke([*bad, *lgvi], capsys)
    assert code == 2 and "--joints: joint 1: 'floor' is not a body's index or ground" in err
    # joints that no state meets, or that repeat one another, are the joints' fault (not
    # the potential's or the inertia's), whatever the projection leaves
    cases = {"0:0,0,0.5:0:0,0,-0.5": "--joints",  # a body joined to itself
             "0:0,0,0.5:5:0,0,-0.5": "--joints",  # no body 5
             "0:0,0,0.5:ground:0,0,0;0:0,0,0.5:ground:0,0,0": "--joints: cannot be met",
             "0:0,0,0.5:ground:0,0,0;1:0,0,0.5:0:0,0,-0.5;1:0,0,-0.5:ground:3,0,-2":
                 "--joints: cannot be met"}  # fmt: skip
    for joints, needle in cases.items():
        other = [joints if a.startswith("0:0,0,0.5:ground") else a for a in base]
        code, _, err = invoke([*other, *lgvi, "--project"], capsys)
        assert code == 2 and err.startswith(f"mechint run: error: {needle}"), (joints, err)
    code, _, err = invoke([*base, "--project", "--integrator", "splitting", "--out", str(out)],
                          capsys)  # fmt: skip
    assert code == 2 and "use LieGroupVariational()" in err
