"""MEGNO stability maps (``mechint.stability``, ``mechint stability``): REBOUND's example
system, Sun-Jupiter-Saturn with Saturn's a and e varied."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import mechint as mi
from mechint.errors import InputError
from mechint.stability import stability_map
from mechint.systems.nbody import NBody
from tests.cli.helpers import invoke

MASSES = [1.0, 0.000954, 0.000285]
ELEMENTS = {"a": [5.204, 9.5], "e": [0.048, 0.1], "omega": [0.257, 1.616], "M": [0.600, 0.871]}
# Saturn's (a, e): two regular orbits far from resonances, the chaotic zone near Jupiter
# (2:1 at a ≈ 8.26), and a crossing orbit that escapes
POINTS = {"a": [9.5, 9.9, 7.3], "e": [0.05, 0.45]}


def test_stability_map_megno_escape_and_the_cli(tmp_path, capsys):
    """One compiled batch serves the map, the direct run and the CLI: ⟨Y⟩ near 2 on the
    regular points and large on the chaotic ones (REBOUND's example draws the same
    zones), an escape at the step where a body passes 20 from the centre of mass, and the
    map's numbers those of a plain ``Tangent`` run of the same states."""
    ds = stability_map(MASSES, ELEMENTS, 2, POINTS, h=5.0, steps=629, escape=20.0, max_batch=6)
    y = ds["megno"].values
    assert ds["megno"].dims == ("a", "e") and y.shape == (3, 2)
    assert np.all(np.abs(y[:2, 0] - 2) < 0.5)  # regular
    assert ds["lyapunov"].shape == (3, 2) and np.all(ds["lyapunov"].values[:2, 0] < 5e-3)
    assert np.all(ds["failed_step"].values == -1)
    # every point again, directly: the same program, the same members
    a, e = np.meshgrid(POINTS["a"], POINTS["e"], indexing="ij")
    el = {k: np.broadcast_to(v, (6, 2)).copy() for k, v in ELEMENTS.items()}
    el["a"][:, 1], el["e"][:, 1] = a.ravel(), e.ravel()
    system, x0 = NBody.from_elements(MASSES, el, 1.0, escape=20.0)
    run = mi.simulate(system, mi.integrators.Tangent(mi.integrators.WisdomHolman()), x0, 5.0,
                      629, 629, throw=False)  # fmt: skip
    escaped = np.asarray(run.reason_code) == int(mi.integrators.Reason.OUT_OF_DOMAIN)
    np.testing.assert_array_equal(ds["escaped"].values.ravel(), escaped)
    assert escaped.any() and not escaped.all()
    step = np.asarray(run.failed_step)[escaped]
    np.testing.assert_array_equal(ds["escape_time"].values.ravel()[escaped], 5.0 * step)
    y_direct = mi.diagnostics.megno(run)
    np.testing.assert_allclose(y.ravel()[~escaped], y_direct[~escaped], rtol=1e-12)
    assert np.all(np.isnan(y.ravel()[escaped]))
    # the escaping member passed 20 in that step: the loop's positions, half a drift
    # past the state shown, lie between the states at steps k − 1 and k + 1
    for b in np.nonzero(escaped)[0]:
        k = int(np.asarray(run.failed_step)[b])
        alone = mi.simulate(NBody(MASSES, 1.0), mi.integrators.WisdomHolman(),
                            (x0[0][b], x0[1][b]), 5.0, k + 1, save_every=1)  # fmt: skip
        q = np.asarray(alone.x[0])
        com = np.sum(np.asarray(MASSES)[:, None] * q, axis=-2) / np.sum(MASSES)
        r = np.max(np.linalg.norm(q - com[:, None, :], axis=-1), axis=-1)
        assert np.all(r[:-2] <= 20) and r[-1] > 20, (b, r[-3:])
    # the same map from the command line: a bodies file, the grid as options
    bodies = tmp_path / "sjs.json"
    bodies.write_text(json.dumps({"G": 1.0, "escape": 20.0, "bodies": [
        {"name": "Sun", "mass": 1.0},
        *({"mass": m, **{k: v[i] for k, v in ELEMENTS.items()}}
          for i, m in enumerate(MASSES[1:]))]}))  # fmt: skip
    out, plot = tmp_path / "map.nc", tmp_path / "map.png"
    code, _, err = invoke(["stability", "--bodies", str(bodies), "--body", "2", "--grid",
                           "a=9.5,9.9,7.3", "--grid", "e=0.05,0.45", "--h", "5", "--steps",
                           "629", "--max-batch", "6", "--out", str(out), "--plot", str(plot),
                           "--quiet"], capsys)  # fmt: skip
    assert code == 0, err
    import xarray as xr

    with xr.open_dataset(out) as got:
        np.testing.assert_array_equal(got["megno"].values, y)
        assert got.attrs["body"] == 2 and got.attrs["steps"] == 629
    assert plot.stat().st_size > 10_000


def test_bad_input_before_any_run(tmp_path, capsys):
    grid = {"a": [8.0, 9.0]}
    cases = [
        (dict(body=0), "body"),
        (dict(body=3), "body"),
        (dict(body=True), "body"),
        (dict(grid={}), "grid"),
        (dict(grid={"a": []}), "grid"),
        (dict(grid={"x": [1.0]}), "grid"),
        (dict(grid={"a": [1.0], "e": [0.1], "i": [0.0]}), "grid"),
        (dict(grid={"P": [100.0]}), "grid"),
        (dict(grid={"e": [-0.1]}), "grid"),
        (dict(grid={"a": [np.nan]}), "grid"),
        # refused by every point's elements and state before any run, not by a batch's
        (dict(grid={"e": [0.1, 1.0]}), "grid"),
        (dict(grid={"a": [8.0, -3.0]}), "grid"),
        (dict(grid={"a": [8.0, 1e300]}), "grid"),
        (dict(elements={**ELEMENTS, "a": np.ones((2, 2)) * [5.2, 9.5]}), "elements"),
        (dict(escape=-1.0), "escape"),
        (dict(max_batch=0), "max_batch"),
        (dict(h=0.0), "h"),
        (dict(steps=0), "steps"),
        (dict(integrator="wh"), "integrator"),
    ]
    for change, name in cases:
        args: dict[str, Any] = dict(body=2, grid=grid, h=5.0, steps=10)
        args.update(change)
        with pytest.raises(InputError) as info:
            stability_map(MASSES, args.pop("elements", ELEMENTS), args.pop("body"),
                          args.pop("grid"), **args)  # fmt: skip
        assert info.value.parameter.split("[")[0] == name, (change, info.value)
    bodies = tmp_path / "cartesian.json"
    bodies.write_text(
        json.dumps(
            {
                "bodies": [
                    {"mass": 1, "q": [0, 0, 0], "v": [0, 0, 0]},
                    {"mass": 1e-3, "q": [1, 0, 0], "v": [0, 1, 0]},
                ]
            }
        )
    )
    code, _, err = invoke(["stability", "--bodies", str(bodies), "--body", "1", "--grid",
                           "a=1:2:3", "--h", "0.1", "--steps", "10", "--out",
                           str(tmp_path / "m.nc")], capsys)  # fmt: skip
    assert code == 2 and "--bodies" in err and len(err.strip().splitlines()) == 1
    bodies = tmp_path / "sjs.json"
    bodies.write_text(json.dumps({"bodies": [{"mass": 1.0}, {"mass": 1e-3, "a": 5.0, "M": 0.0}]}))
    for grid_text, option in (("a=1:2", "--grid"), ("a", "--grid"), ("a=1:2:0", "--grid"),
                              ("a=1:2:200000", "--grid"), ("e=-1,0", "--grid")):  # fmt: skip
        code, _, err = invoke(["stability", "--bodies", str(bodies), "--body", "1", "--grid",
                               grid_text, "--h", "0.1", "--steps", "10", "--out",
                               str(tmp_path / "m.nc")], capsys)  # fmt: skip
        assert code == 2 and option in err, (grid_text, err)
    assert not (tmp_path / "m.nc").exists()


def test_nbody_escape_distance():
    """``NBody(escape=d)``: any map's step fails with OUT_OF_DOMAIN where a body passes d
    from the centre of mass (Störmer–Verlet through the system's domain check, wrapped in
    ``Tangent`` too), residual
    the distance over d; recorded in the parameters; refused when not positive."""
    system = NBody([1.0, 1e-3], 1.0, escape=1.5)
    assert system.parameters()["escape"] == 1.5 and "escape=1.5" in repr(system)
    # a hyperbolic planet: leaves through 1.5
    x0 = (
        np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]),
        np.array([[0.0, 0.0, 0.0], [0.0, 2e-3, 0.0]]),
    )
    x0 = (x0[0], x0[1] - np.array([0.0, 2e-3, 0.0]) * np.array([[1.0], [0.0]]))
    run = mi.simulate(system, mi.integrators.StormerVerlet(), x0, 0.01, 200, throw=False)
    assert int(run.reason_code) == int(mi.integrators.Reason.OUT_OF_DOMAIN)
    assert 1.0 < float(run.residual) < 1.1
    # a wrapper's state (x and its tangent vectors): the check reads x, at the same step
    wrapped = mi.integrators.Tangent(mi.integrators.StormerVerlet())
    tangent = mi.simulate(system, wrapped, x0, 0.01, 200, throw=False)
    assert int(tangent.failed_step) == int(run.failed_step) > 0
    assert int(tangent.reason_code) == int(mi.integrators.Reason.OUT_OF_DOMAIN)
    with pytest.raises(InputError, match="escape"):
        NBody([1.0, 1e-3], 1.0, escape=0.0)
