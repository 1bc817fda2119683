"""``mechint section``: states drawn on a surface at an energy, crossings located on the
map and written with the run, a figure; bad input exits 2 with one line."""

import jax
import numpy as np
import pytest
import xarray as xr

import mechint as mi
from mechint.cli.section import draw_on_surface
from mechint.io import csv_metadata_path
from tests.cli.helpers import invoke

HH = [
    "section", "--system", "henon-heiles", "--surface", "q_1=0", "--integrator",
    "stormer-verlet", "--h", "0.05", "--steps", "2000",
]  # fmt: skip


def test_a_section_at_an_energy_is_written_with_its_figure(tmp_path, capsys):
    out, plot = tmp_path / "hh.nc", tmp_path / "hh.png"
    code, _, err = invoke([*HH, "--energy", "0.125", "--count", "4", "--seed", "3",
                           "--out", str(out), "--plot", str(plot)], capsys)  # fmt: skip
    assert code == 0, err
    assert "crossings of q_1=0 by 4 run(s)" in err and plot.stat().st_size > 10_000
    with xr.open_dataset(out) as ds:
        H0 = ds["H"].values[:, 0]
        count = ds["section_crossing_count"].values
        q = ds["section_crossing_q"].values
        p = ds["section_crossing_p"].values
    assert np.allclose(H0, 0.125, rtol=0, atol=1e-14)  # drawn on the energy level
    assert np.all(count >= 10)
    kept = np.isfinite(q[..., 0])
    assert np.array_equal(kept.sum(axis=1), count)
    assert np.max(np.abs(q[..., 0][kept])) < 1e-16  # on the surface
    assert np.all(p[..., 0][kept] > 0)  # upwards
    # the same crossings as the library's run from the same states
    hh = mi.systems.HenonHeiles()
    x0 = draw_on_surface(hh, 0, 0, 0.0, 0.125, 4, 3, 1.0, 1)
    up = mi.Event(lambda t, x: x[0][0], direction=1, name="section")
    lib = mi.simulate(hh, mi.integrators.StormerVerlet(), x0, 0.05, 2000, 2000, events=[up],
                      max_events=1000)  # fmt: skip
    assert np.array_equal(lib.events["section"].x[0], q, equal_nan=True)
    # as CSV: the crossings, a row each (member, number, t, the state, H), the run's
    # record in the sidecar; the figure's title says the energy
    csv = tmp_path / "hh.csv"
    code, _, err = invoke([*HH, "--energy", "0.125", "--count", "4", "--seed", "3",
                           "--out", str(csv)], capsys)  # fmt: skip
    assert code == 0, err
    rows = np.genfromtxt(csv, delimiter=",", names=True)
    assert rows.dtype.names == ("sample", "crossing", "t", "q_1", "q_2", "p_1", "p_2", "H")
    assert len(rows) == int(count.sum()) and np.allclose(rows["H"], 0.125, atol=1e-4)  # O(h²)
    member, k = rows["sample"].astype(int), rows["crossing"].astype(int)
    assert np.array_equal(rows["q_2"], q[member, k, 1])
    assert np.array_equal(rows["t"], lib.events["section"].t[member, k])
    assert csv_metadata_path(csv).is_file()
    from mechint.plot import section_figure

    title = section_figure(hh, lib, ((0, 1), (1, 1)), "q_1=0", 0.125).axes[0].get_title()
    assert title.startswith("HenonHeiles at E = 0.125: section q_1=0")


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--surface", "x_1=0", "--q0", "0,0.1", "--p0", "0.3,0"], "--surface"),
        (["--surface", "q_3=0", "--q0", "0,0.1", "--p0", "0.3,0"], "--surface"),
        (["--surface", "q_1", "--q0", "0,0.1", "--p0", "0.3,0"], "--surface"),
        (["--direction", "2", "--q0", "0,0.1", "--p0", "0.3,0"], "--direction"),
        (["--axes", "q_1", "--q0", "0,0.1", "--p0", "0.3,0"], "--axes"),
        (["--energy", "-1"], "--energy"),
        (["--energy", "0.1", "--q0", "0,0.1", "--p0", "0.3,0"], "--energy"),
        (["--energy", "0.1", "--count", "1e12"], "--count"),  # sized before the draw
        (["--energy", "0.1", "--count", "20", "--crossings", "1e12"], "--count"),
        (["--energy", "0.1", "--box", "1e308"], "--box"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, extra, needle):
    argv = [a for a in HH if a not in ("--surface", "q_1=0")] + ["--surface", "q_1=0"]
    code, _, err = invoke([*argv, *extra, "--out", str(tmp_path / "a.nc")], capsys)
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "a.nc").exists()


def test_drawn_states_lie_at_the_energy_at_any_scale():
    """Each drawn state at the energy to 1e-10 of its terms' size, whatever that size
    (|p| of 1e20 and beyond: before, a bisection bracket capped at 2^60 gave H = 6.6e35 for
    E = 1e40); an energy no state in the box reaches is refused, naming the energy."""
    kepler = mi.systems.Kepler()
    H = jax.jit(jax.vmap(lambda q, p: kepler.hamiltonian((q, p))))
    for energy in (-0.3, 1.0, 1e40, 1e300):
        q, p = kepler.section_states(1, 0.0, energy, 3, seed=2)
        assert np.all(np.abs(np.asarray(H(q, p)) - energy) <= 1e-12 * abs(energy)), energy
        assert np.all(q[:, 1] == 0) and np.all(p[:, 1] >= 0)
    with pytest.raises(mi.InputError, match="found 0 of 3 states") as caught:
        kepler.section_states(1, 0.0, -1e6, 3, box=1.0)
    assert caught.value.parameter == "energy"


@pytest.mark.parametrize("system, surface", [("pendulum", "q_1=0"), ("pendulum", "p_1=0"),
                                              ("lotka-volterra", "x_1=1")])  # fmt: skip
def test_a_section_of_a_two_component_state_is_refused(tmp_path, capsys, system, surface):
    """Two state components leave one on the surface, nothing to draw in a plane: one
    line naming --surface (before: StopIteration, IndexError)."""
    code, _, err = invoke(["section", "--system", system, "--surface", surface,
                           "--integrator", "rk4", "--h", "0.1", "--steps", "10",
                           "--out", str(tmp_path / "a.nc")], capsys)  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "--surface" in err, err


def test_energy_needs_a_separable_system(tmp_path, capsys):
    code, _, err = invoke(["section", "--system", "euler-top", "--inertia", "1,2,3",
                           "--surface", "m_1=0", "--energy", "1", "--integrator", "kahan",
                           "--h", "0.1", "--steps", "10", "--out", str(tmp_path / "a.nc")],
                          capsys)  # fmt: skip
    assert code == 2 and "--energy" in err


def test_section_keeps_an_unfinished_run_and_a_foreign_file(tmp_path, capsys):
    """``--out`` holding a resumable run (a killed ``mechint run``), a file mechint did not
    write, or a file a live run holds locked: refused in one line, the file byte for byte
    as it was; ``--overwrite`` replaces the first two."""
    import fcntl
    import os

    from tests.cli.helpers import killed_run

    out = tmp_path / "run.nc"
    hh = mi.systems.HenonHeiles()
    x0 = (np.array([0.0, 0.1]), np.array([0.3, 0.0]))
    killed_run(out, hh, mi.integrators.StormerVerlet(), x0, 0.05, 400, 10, 200, 100)
    before = out.read_bytes()
    section = [*HH, "--q0", "0,0.1", "--p0", "0.3,0", "--quiet"]
    code, _, err = invoke([*section, "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1 and "unfinished run" in err, err
    assert out.read_bytes() == before
    foreign = tmp_path / "notes.nc"
    foreign.write_bytes(b"my own data")
    code, _, err = invoke([*section, "--out", str(foreign)], capsys)
    assert code == 2 and "not a file mechint wrote" in err, err
    assert foreign.read_bytes() == b"my own data"
    lock = os.open(tmp_path / ".run.nc.lock", os.O_RDWR | os.O_CREAT)
    try:  # a live run holds the lock
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, b"4242")
        code, _, err = invoke([*section, "--overwrite", "--out", str(out)], capsys)
        assert code == 2 and "being written by another mechint run (pid 4242)" in err, err
        assert out.read_bytes() == before
    finally:
        os.close(lock)
    for path in (out, foreign):
        code, _, err = invoke([*section, "--overwrite", "--out", str(path)], capsys)
        assert code == 0, err
        with xr.open_dataset(path) as ds:
            assert int(ds.attrs["complete"]) == 1 and "section_crossing_count" in ds


def test_a_jump_of_the_condition_is_not_a_crossing(tmp_path, capsys):
    """SHAKE's partial step projects the momentum, so a momentum surface's condition jumps
    at τ = 0: a bracket that closes there is not a root.  Each row of the double
    pendulum's p_1 = 0 section is on the surface to round-off or NaN (not located), and
    the summary counts the NaN rows; RATTLE, whose partial steps start at its state,
    locates every one."""
    for integrator, lost in (("shake", True), ("rattle", False)):
        out = tmp_path / f"{integrator}.csv"
        code, _, err = invoke(["section", "--system", "pendulum-chain", "--preset",
                               "double-pendulum", "--surface", "p_1=0", "--integrator",
                               integrator, "--h", "0.001", "--steps", "8000", "--out",
                               str(out)], capsys)  # fmt: skip
        assert code == 0, err
        rows = np.genfromtxt(out, delimiter=",", names=True)
        p1 = rows["p_1"]
        nan = np.isnan(p1)
        assert np.all(np.abs(p1[~nan]) < 1e-12) and np.any(~nan), (integrator, p1)
        assert bool(np.any(nan)) == lost and (f"{np.sum(nan)} not located" in err) == lost, err
