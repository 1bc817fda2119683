import json

import numpy as np
import xarray as xr

import mechint as mi
from mechint.io import read_csv


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


def test_csv_roundtrip(tmp_path, top, m0):
    traj = mi.simulate(top, mi.integrators.RK4(), m0, 0.01, 100, 10)
    path = tmp_path / "run.csv"
    traj.to_csv(path)
    cols = read_csv(path)
    assert list(cols) == ["t", "m_1", "m_2", "m_3", "H", "C"]
    assert np.array_equal(cols["t"], traj.t)
    assert np.array_equal(np.stack([cols["m_1"], cols["m_2"], cols["m_3"]], 1), traj.x)
    assert "integrator: RK4" in path.read_text()
