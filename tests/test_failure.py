"""Failure is data: reasons from one enumeration, ``throw=False`` keeps every healthy batch
member, sweeps keep them too, and no diagnostic reports a number computed from a failed
step."""

import sys

import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.maps import Reason
from tests.systems.rigid_cases import case

I = mi.integrators
D = mi.diagnostics
TOP = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
STATES = np.array([[0.45, 0.0, 0.89], [1e200, 1e200, 1e200], [0.89, 0.1, 0.45]])


def test_throw_false_keeps_every_healthy_member():
    traj = mi.simulate(TOP, I.ExplicitEuler(), STATES, 0.1, 100, 10, throw=False)
    assert traj.x.shape == (3, 11, 3)
    assert list(traj.failed_step) == [-1, 1, -1]
    assert list(traj.reason) == ["ok", "non-finite", "ok"]
    assert np.isinf(traj.residual[1]) and traj.residual[0] == 0.0
    assert np.array_equal(traj.failed, [False, True, False])
    for i in (0, 2):  # healthy members: complete and equal to their single runs
        single = mi.simulate(TOP, I.ExplicitEuler(), STATES[i], 0.1, 100, 10)
        assert np.array_equal(traj.x[i], single.x)
        assert single.failed_step == -1 and single.reason == "ok"
    # the failed member keeps x0 and nothing computed from its failed step
    assert np.array_equal(traj.x[1, 0], STATES[1]) and np.all(np.isnan(traj.x[1, 1:]))
    ds = traj.to_xarray()
    assert list(ds["reason"].values) == ["ok", "non-finite", "ok"]
    assert list(ds["failed_step"].values) == [-1, 1, -1]


def test_throw_true_names_the_reason():
    with pytest.raises(mi.StepFailure, match="not finite") as info:
        mi.simulate(TOP, I.ExplicitEuler(), STATES, 0.1, 100, 10)
    assert info.value.code is Reason.NON_FINITE and info.value.batch_index == 1


def test_failure_mid_run_blanks_only_the_samples_after_it():
    """Kahan's map of ẋ = x² is the exact flow x_k = x_0/(1 − k h x_0); its pole
    h x = 1 is a singular step (here exactly, in binary: x_0 = 4, h = 1/8, x_1 = 8)."""
    field = mi.systems.QuadraticField(np.ones((1, 1, 1)))
    x0 = np.array([[0.1], [4.0]])
    traj = mi.simulate(field, I.Kahan(), x0, 0.125, 8, 1, throw=False)
    assert traj.failed_step[0] == -1 and traj.reason[0] == "ok"
    assert np.allclose(traj.x[0, :, 0], 0.1 / (1.0 - 0.0125 * np.arange(9)), rtol=1e-14)
    assert traj.reason[1] == "singular" and traj.failed_step[1] == 2
    assert np.array_equal(traj.x[1, :2, 0], [4.0, 8.0]) and np.all(np.isnan(traj.x[1, 2:]))


def test_every_member_failing_stops_early_and_reports_each():
    x0 = np.array([[1e200, 1e200, 1e200], [1e300, 1.0, 1.0]])
    traj = mi.simulate(TOP, I.ExplicitEuler(), x0, 0.1, 1000, 10, throw=False)
    assert traj.x.shape == (2, 101, 3) and list(traj.failed_step) == [1, 2]
    assert np.all(np.isnan(traj.x[:, 1:])) and list(traj.reason) == ["non-finite"] * 2


def test_the_progress_bar_counts_no_step_past_every_members_end(monkeypatch):
    """A call in which every member failed ran fewer steps than it was asked: the bar
    does not count them (it showed 1000 of 1000 for a run that failed at step 2)."""
    counted = []

    class Bar:
        def __init__(self, *args, **kwargs):
            pass

        def update(self, n):
            counted.append(n)

        def close(self):
            pass

    monkeypatch.setattr(sys.modules["mechint.simulate"], "tqdm", Bar)
    x0 = np.array([[1e200, 1e200, 1e200], [1e300, 1.0, 1.0]])
    mi.simulate(TOP, I.ExplicitEuler(), x0, 0.1, 1000, 10, throw=False, progress=True)
    assert sum(counted) < 2


def test_sweep_keeps_every_healthy_member():
    experiment = {
        "system": {"name": "euler-top", "inertia": [2.0, 1.0, 0.6667]},
        "integrators": ["explicit-euler", {"name": "rigid-body-splitting", "order": 4}],
        "h": [0.1],
        "steps": 100,
        "save_every": 10,
        "initial": {"m": STATES.tolist()},
    }
    ds = mi.sweep(experiment)
    euler = ds.sel(integrator="explicit-euler", h=0.1)
    assert list(euler["failed_step"].values) == [-1, 1, -1]
    assert list(euler["reason"].values) == ["ok", "non-finite", "ok"]
    m = euler["m"].values
    assert np.all(np.isfinite(m[[0, 2]])) and np.all(np.isnan(m[1, 1:]))
    assert np.array_equal(
        m[0], mi.simulate(TOP_SWEEP, I.ExplicitEuler(), STATES[0], 0.1, 100, 10).x
    )
    split = ds.sel(integrator="rigid-body-splitting(order=4)", h=0.1)
    assert split["failed_step"].values[0] == -1


TOP_SWEEP = mi.systems.EulerTop((2.0, 1.0, 0.6667))


def test_sweep_refuses_a_setting_the_integrator_does_not_take():
    experiment = {
        "system": {"name": "euler-top", "inertia": [2.0, 1.0, 0.6667]},
        "integrators": [{"name": "kahan", "order": 4}],
        "h": [0.1],
        "steps": 10,
        "initial": {"m": STATES[:1].tolist()},
    }
    with pytest.raises(mi.InputError, match=r"integrators\.order"):
        mi.sweep(experiment)


def test_diagnostics_never_report_a_number_from_a_failed_step():
    """A Suris step off the branch W ≈ I (h = 2) or with Newton not converged (a fast
    body at h = 0.5) raises with its reason; ``check`` marks every property failed."""
    system, x = case("qpt", 3)
    dl = I.DiscreteLagrangian()
    with pytest.raises(mi.StepFailure, match="branch") as info:
        D.energy_defect(system, dl, x, 2.0)
    assert info.value.code is Reason.WRONG_BRANCH
    fast = (10.0 * x[0], 10.0 * x[1])
    with pytest.raises(mi.StepFailure) as info:
        D.poisson_defect(system, dl, fast, 0.5)
    assert info.value.code is Reason.NOT_CONVERGED
    with pytest.raises(mi.StepFailure):
        D.reversibility_defect(system, dl, x, 2.0)
    rows = {r.name: r for r in D.check(system, dl, x, 2.0, halvings=3)}
    for row in rows.values():
        assert np.isnan(row.defect) and row.verdict.startswith("failed (wrong-branch)"), row
        assert row.scaling.failed[0][0] == 2.0
    # the smaller step sizes are still measured
    assert np.all(rows["Poisson"].scaling.defect[1:] < 1e-12)
    scaling = D.defect_exponent(D.energy_defect, system, dl, x, [2.0, 0.5, 0.25, 0.125])
    assert np.isnan(scaling.defect[0]) and scaling.failed == ((2.0, "wrong-branch"),)


def test_reason_codes_are_one_enumeration():
    assert [r.label for r in Reason] == list(mi.maps.REASON_LABELS)
    st = mi.maps.status(jnp.asarray(False), jnp.asarray(1.0), Reason.SINGULAR)
    assert int(st.reason) == Reason.SINGULAR
    both = mi.maps.combine([mi.maps.ok_status(jnp.ones(2)), st])
    assert not both.ok and int(both.reason) == Reason.SINGULAR  # the first failure's reason
