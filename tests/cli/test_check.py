"""``mechint check``: the table and JSON of measured properties, with the papers' verdicts."""

import json

import pytest

from tests.cli.helpers import invoke


def _check(args, capsys):
    return invoke(["check", *args.split()], capsys)


def _verdicts(args, capsys):
    code, out, err = _check(args + " --json", capsys)
    assert code == 0, err
    return {p["property"]: p for p in json.loads(out)["properties"]}


def test_kahan_distinct_moments_both_defects_cubic(capsys):
    v = _verdicts("--system euler-top --inertia 3,2,1 --integrator kahan", capsys)
    assert v["Poisson"]["verdict"] == v["energy H"]["verdict"] == "O(h^3)"
    assert abs(v["Poisson"]["exponent"] - 3) < 0.1 and abs(v["energy H"]["exponent"] - 3) < 0.1
    assert all(v[k]["verdict"] == "exact (round-off)" for k in ("kept K1", "reversibility"))


def test_kahan_two_equal_moments_both_exact(capsys):
    v = _verdicts("--system euler-top --inertia 2,2,1 --integrator kahan", capsys)
    assert v["Poisson"]["verdict"] == v["energy H"]["verdict"] == "exact (round-off)"


def test_midpoint_keeps_H_and_C_but_is_not_poisson(capsys):
    v = _verdicts("--system euler-top --inertia 3,2,1 --integrator midpoint", capsys)
    assert v["energy H"]["verdict"] == v["Casimir C"]["verdict"] == "exact (round-off)"
    assert v["Poisson"]["verdict"] == "O(h^3)"


def test_suris_map_poisson_and_the_table(capsys):
    args = "--system quadratic-potential-top --J 1,2,3 --integrator discrete-lagrangian"
    v = _verdicts(args, capsys)
    assert v["Poisson"]["verdict"] == "exact (round-off)" and v["Poisson"]["defect"] < 1e-12
    assert v["kept H~"]["verdict"] == "exact (round-off)"
    code, out, _ = _check("--system kepler --integrator stormer-verlet --h 0.05", capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split()[:2] == ["property", "defect"]
    assert any(line.startswith("momentum L") and "exact" in line for line in lines)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ("--system pendulum --integrator rk4 --order 3", "--order"),
        ("--system euler-top --inertia 3,2,1 --integrator kahan --h -1", "--h"),
        ("--system euler-top --inertia 3,2,1 --x0 1,2;3,4,5 --integrator kahan", "--x0"),
        ("--system euler-top --inertia 3,2,1 --x0 1,2,3;3,4,5 --integrator kahan", "batch"),
        ("--system euler-top --integrator kahan", "--inertia"),
        ("--system pendulum --integrator kahan", "quadratic field"),
    ],
)
def test_bad_input_is_one_line(args, needle, capsys):
    code, _, err = _check(args, capsys)
    assert code == 2 and err.count("\n") == 1 and needle in err, err


def test_non_finite_defects_are_no_verdict_and_exit_1(capsys):
    """A state whose invariants overflow (|m|² > 1e308) gives NaN/inf defects: reported as
    such (JSON null), never "exact (round-off)", and the command exits 1."""
    args = "--system euler-top --inertia 3,2,1 --integrator kahan --x0 1e200,1e200,1e200"
    code, out, err = _check(args + " --json", capsys)
    assert code == 1 and "not measured" in err
    doc = json.loads(out)  # strict JSON: no NaN
    verdicts = {p["property"]: p for p in doc["properties"]}
    assert not any(p["verdict"] == "exact (round-off)" for p in verdicts.values())
    assert verdicts["energy H"]["defect"] is None
    assert verdicts["energy H"]["verdict"].startswith(("non-finite", "failed"))
    code, out, _ = _check(args, capsys)
    assert code == 1 and "exact" not in out
    # steps so large that every one fails (issue 18.8): reported, no traceback
    code, out, err = _check("--system euler-top --inertia 3,2,1 --integrator kahan --h 1e308",
                            capsys)  # fmt: skip
    assert code == 1 and "failed (" in out and "Traceback" not in err


def test_check_of_a_planetary_preset_reads_round_off_as_round_off(capsys):
    """HLW's outer solar system (Pluto's mass 7.7e-9: dq/dp = h/m reaches 1e7; P = 0 to
    round-off): the Wisdom–Holman map's symplectic defect and its momenta are exact to
    round-off, measured against the size of the terms they sum, not against 1 or |P|, at
    steps of 100 days, where the map's own error shows (its energy O(h^3)).  At 0.1 days
    it does not: the energy's defect is below round-off, not "exact", as are the momenta
    (the map does not declare them kept); the symplectic form, declared, reads exact."""
    argv = ["check", "--system", "nbody", "--preset", "outer-solar-system", "--integrator",
            "wisdom-holman"]  # fmt: skip
    code, out, err = invoke([*argv, "--h", "100"], capsys)
    assert code == 0, err
    lines = {line.split("  ")[0].strip(): line for line in out.splitlines()[2:]}
    momenta = [f"momentum {k}" for k in ("Px", "Py", "Pz", "Lx", "Ly", "Lz")]
    for name in ("symplectic", *momenta):
        assert lines[name].endswith("exact (round-off)"), lines[name]
    assert lines["energy H"].endswith("O(h^3)"), lines["energy H"]
    code, out, err = invoke(argv, capsys)  # h = 0.1
    assert code == 0, err
    lines = {line.split("  ")[0].strip(): line for line in out.splitlines()[2:]}
    assert lines["symplectic"].endswith("exact (round-off)"), lines["symplectic"]
    for name in ("energy H", *momenta):
        assert lines[name].endswith("below round-off at these h: larger h resolve it"), lines[name]


def test_an_integral_zero_at_the_state_is_measured_against_its_terms(capsys):
    """Kepler at periapsis has A2 = 0: Störmer–Verlet's one-step change of A2 is measured
    against the size of A's terms (|p||L| + μ), an O(h^3) defect, not 9.5e12 (against
    |A2(x0)| = 0)."""
    v = _verdicts("--system kepler --integrator stormer-verlet", capsys)
    a2 = next(p for k, p in v.items() if k.endswith("A2"))
    assert a2["defect"] < 1e-3 and a2["verdict"].startswith("O(h^"), a2
    assert abs(a2["exponent"] - 3) < 0.2, a2
