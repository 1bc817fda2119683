import json

import numpy as np
import xarray as xr

import mechint as mi
from mechint.io import read_csv, saved_attrs


def test_netcdf_roundtrip_records_provenance(tmp_path, top, m0):
    traj = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 1000, 100)
    path = tmp_path / "run.nc"
    traj.to_netcdf(path)
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        assert np.array_equal(ds["m"].values, traj.x)
        assert np.array_equal(ds["time"].values, traj.t)
        # the stored invariants are the system's, evaluated as one compiled program (which
        # may round differently from eager evaluation, by an ulp or two)
        H = np.asarray(top.hamiltonian(traj.x))
        assert np.max(np.abs(ds["H"].values - H) / H) < 4 * np.finfo(float).eps
        assert ds.attrs["system"] == "EulerTop"
        assert ds.attrs["integrator"] == "Kahan"
        assert ds.attrs["h"] == 0.01 and ds.attrs["steps"] == 1000
        assert ds.attrs["save_every"] == 100
        assert ds.attrs["mechint_version"] == mi.__version__
        assert json.loads(ds.attrs["system_parameters"])["inertia"][1] == 1.0
        assert np.allclose(ds.attrs["inertia"], [2.0, 1.0, 2.0 / 3.0])


def test_batched_dataset_has_sample_dimension(top):
    x0 = np.array([[0.45, 0.0, 0.89], [0.89, 0.1, 0.45]])
    ds = mi.simulate(top, mi.integrators.Kahan(), x0, 0.01, 100, 10).to_xarray()
    assert ds["m"].dims == ("sample", "time", "axis")
    assert ds["m"].shape == (2, 11, 3)
    assert ds["C"].dims == ("sample", "time")
    assert json.loads(ds.attrs["integrator_settings"]) == {}


def test_midpoint_settings_are_recorded(top, m0):
    ds = mi.simulate(top, mi.integrators.ImplicitMidpoint(), m0, 0.01, 10).to_xarray()
    settings = json.loads(ds.attrs["integrator_settings"])
    assert settings["solver"]["max_iter"] == 30


def test_a_functions_setting_is_recorded_by_name_the_same_in_every_process():
    """A map's function setting (a variable step's sigma) is recorded as "module:qualname",
    which another process records alike (its repr holds its address, which made every
    killed variable-step run of the command line impossible to resume)."""
    from mechint.io import integrator_settings
    from tests.systems.constrained_cases import unit_sphere

    wrapped = mi.integrators.ReversibleAdaptive(mi.integrators.StormerVerlet(), unit_sphere)
    settings = json.loads(integrator_settings(wrapped))
    assert settings["sigma"] == "tests.systems.constrained_cases:unit_sphere"
    assert "0x" not in integrator_settings(wrapped)


def test_csv_roundtrip(tmp_path, top, m0):
    traj = mi.simulate(top, mi.integrators.RK4(), m0, 0.01, 100, 10)
    path = tmp_path / "run.csv"
    traj.to_csv(path)
    cols = read_csv(path)
    assert list(cols) == ["t", "m_1", "m_2", "m_3", "H", "C"]
    assert np.array_equal(cols["t"], traj.t)
    assert np.array_equal(np.stack([cols["m_1"], cols["m_2"], cols["m_3"]], 1), traj.x)
    # plain CSV: pandas and genfromtxt read it as is; the record is in the sidecar
    import pandas as pd

    frame = pd.read_csv(path)
    assert list(frame.columns) == list(cols) and np.array_equal(frame["m_2"], traj.x[:, 1])
    table = np.genfromtxt(path, names=True, delimiter=",")
    assert table.dtype.names == tuple(cols) and np.array_equal(table["H"], cols["H"])
    sidecar = json.loads((tmp_path / "run.csv-metadata.json").read_text())
    assert sidecar["url"] == "run.csv" and sidecar["mechint"]["integrator"] == "RK4"
    described = {c["name"]: c["dc:description"] for c in sidecar["tableSchema"]["columns"]}
    assert described["m_2"] == "body angular momentum [2]"
    assert described["H"] == "energy (the Hamiltonian)"
    attrs = saved_attrs(path)
    assert attrs is not None and attrs["checksum"] == sidecar["mechint"]["checksum"]


def test_netcdf_describes_every_variable_and_dimension(tmp_path):
    """CF attributes: long_name and units on every variable, a coordinate on every
    dimension, readable names of the invariants (the Lax integrals of an so(4) body)."""
    import xarray as xr

    body = mi.systems.QuadraticPotentialTop((1.0, 2.0, 3.0, 4.5))
    x0 = body.example_state()
    x0 = (np.stack([x0[0], 0.5 * x0[0]]), np.stack([x0[1], x0[1]]))
    traj = mi.simulate(body, mi.integrators.DiscreteLagrangian(), x0, 0.05, 10, 5)
    traj.save(tmp_path / "run.nc")
    ds = xr.open_dataset(tmp_path / "run.nc")
    assert set(ds.dims) <= set(ds.coords)
    for name, var in ds.data_vars.items():
        assert var.attrs.get("long_name", name) != name, name
        if name != "reason":
            assert var.attrs["units"] == "1"
    assert "Lax integral" in ds["L3_2"].attrs["long_name"]
    assert ds.attrs["Conventions"].startswith("CF-") and "mechint_version" in ds.attrs
    assert list(ds["row"].values) == [1, 2, 3, 4] and list(ds["sample"].values) == [0, 1]


def test_invariants_of_a_large_state_take_small_blocks():
    """A sample of many numbers is evaluated in blocks of fewer samples (a power of two
    within 2^22 numbers: 10⁵ free bodies padded to 1024 samples took 6.9 GiB), and the
    values equal those of each sample alone."""
    from mechint import trajectory

    assert trajectory._block(4) == 1024 and trajectory._block(1_300_000) == 2
    assert trajectory._block(60_000) == 64 and trajectory._block(10**9) == 1
    system = mi.systems.NBody([1.0, 1e-3] + [0.0] * 9998)
    rng = np.random.default_rng(0)
    q = rng.normal(size=(70, 10_000, 3))
    p = rng.normal(size=(70, 10_000, 3)) * np.asarray(system.masses)[:, None]
    whole = trajectory.invariants(system, (q, p), 1)
    one = trajectory.invariants(system, (q[40:41], p[40:41]), 1)
    for k, v in one.items():
        assert whole[k].shape == (70,) and np.array_equal(whole[k][40], v[0]), k
