"""``mechint compare`` and ``diagnostics.compare``: table, figure, references."""

import csv
import json

import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from tests.cli.helpers import invoke


def _compare(args, capsys):
    return invoke(["compare", *args.split()], capsys)


def test_compare_euler_top_table_and_figure(tmp_path, capsys):
    fig, table = tmp_path / "c.png", tmp_path / "c.csv"
    args = "--system euler-top --inertia 3,2,1 --integrators kahan,midpoint,rk4,splitting"
    code, out, err = _compare(f"{args} --T 10 --h 0.01 --out {fig} --table {table}", capsys)
    assert code == 0, err
    assert "reference: exact" in out
    rows = {r["integrator"]: r for r in csv.DictReader(table.open())}
    assert set(rows) == {"kahan", "midpoint", "rk4", "splitting"}
    assert float(rows["midpoint"]["max |ΔH|/|H|"]) < 1e-13  # midpoint keeps H and C
    assert float(rows["midpoint"]["max |ΔC|/|C|"]) < 1e-13
    assert float(rows["splitting"]["max |ΔC|/|C|"]) < 1e-13  # splitting keeps C only
    assert float(rows["splitting"]["max |ΔH|/|H|"]) > 1e-8
    assert float(rows["rk4"]["error at T"]) < float(rows["kahan"]["error at T"])  # order 4
    assert fig.stat().st_size > 10_000


def test_compare_library_matches_direct_runs():
    kepler = mi.systems.Kepler()
    x0 = kepler.periapsis_state(0.3)
    sv = mi.integrators.StormerVerlet()
    result = mi.diagnostics.compare(kepler, [sv, mi.integrators.RK4()], x0, 0.01, 5.0)
    assert result.reference == "exact"
    traj = mi.simulate(kepler, sv, x0, 0.01, 500)
    exact = np.concatenate(mi.exact.kepler(kepler, x0, 5.0))
    direct = np.max(np.abs(np.concatenate([traj.x[0][-1], traj.x[1][-1]]) - exact))
    assert result.error_at_T[0] == pytest.approx(direct, rel=1e-12)
    assert result.max_invariant_errors[0]["L"] < 1e-13
    kl8 = mi.integrators.Composition(sv, "kahan-li8")
    names = [mi.diagnostics.compare(kepler, [kl8], x0, 0.05, 1.0, compensated=c).names[0]
             for c in (None, False)]  # fmt: skip
    assert names == ["composition (compensated)", "composition"]


def test_a_variable_step_run_is_measured_where_it_ends():
    """T/h steps of ``ReversibleAdaptive`` end at their clock's physical time, not at T:
    the error is against the exact state there (it was against the state at T, 0.26 off
    on this orbit), and the name says where it ends."""
    kepler = mi.systems.Kepler()
    x0 = kepler.periapsis_state(0.5)

    def sigma(x):
        return jnp.sum(x[0] ** 2) ** 0.75

    ra = mi.integrators.ReversibleAdaptive(mi.integrators.StormerVerlet(), sigma)
    result = mi.diagnostics.compare(kepler, [ra], x0, 0.01, 2.0)
    traj = mi.simulate(kepler, ra, x0, 0.01, 200)
    end = float(traj.clock[-1, 0])
    exact = np.concatenate(mi.exact.kepler(kepler, x0, end))
    direct = np.max(np.abs(np.concatenate([traj.x[0][-1], traj.x[1][-1]]) - exact))
    assert abs(end - 2.0) > 0.01 and result.error_at_T[0] == pytest.approx(direct, rel=1e-12)
    assert result.names == [f"reversible-adaptive (ends at t = {end:.6g})"]


def test_compare_without_exact_solution_uses_dop853(tmp_path, capsys):
    table = tmp_path / "t.json"
    args = "--system henon-heiles --integrators stormer-verlet,composition --scheme kahan-li8"
    code, out, _ = _compare(
        f"{args} --T 5 --h 0.05 --out {tmp_path / 'f.png'} --table {table}", capsys
    )
    assert code == 0 and "reference: DOP853" in out
    rows = {r["integrator"]: r for r in json.loads(table.read_text())}
    # Kahan-Li-8 of Verlet sums its increments compensated by default, and says so
    comp = rows["composition (compensated)"]
    assert comp["error at T"] < 1e-9 < rows["stormer-verlet"]["error at T"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ("--system euler-top --inertia 3,2,1 --integrators kahan,foo --T 1", "--integrators"),
        ("--system euler-top --inertia 3,2,1 --integrators kahan --T 1.005", "--T"),
        ("--system euler-top --inertia 3,2,1 --integrators stormer-verlet --T 1", "cannot advance"),
        ("--system pendulum --integrators rk4 --order 4 --T 1", "--order"),
        ("--system euler-top --inertia 3,2,1 --integrators kahan --T 1e308", "more than a run"),
    ],
)
def test_bad_input_is_one_line(args, needle, tmp_path, capsys):
    out = tmp_path / "never.png"
    code, _, err = _compare(f"{args} --out {out}", capsys)
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not out.exists()
