"""Every example runs (small size) and reports the facts it is about."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quickstart():
    result = _load("quickstart").main(quick=True)
    assert result["max |dK1|/|K1|"] < 1e-13
    assert 1e-7 < result["max |dH|/|H|"] < 1e-3
    assert result["global error"] < 1e-3


def test_kahan_theorem(tmp_path):
    rows = _load("kahan_theorem").main(quick=True, out=str(tmp_path / "k.png"))
    assert all(r["agree"] for r in rows)  # Poisson iff energy preserving
    for r in rows:
        for d in (r["poisson"], r["energy"]):
            if r["two equal"]:
                assert d.verdict == "exact (round-off)"
            else:
                assert d.verdict == "O(h^3)" and abs(d.exponent - 3) < 0.1
    assert (tmp_path / "k.png").stat().st_size > 10_000


def test_suris_theorems():
    for r in _load("suris_theorems").main(quick=True):
        assert r["poisson"] < 1e-12
        assert r["lax drift"] < 1e-11 and r["H~ drift"] < 1e-12
        assert r["reversibility"] < 1e-13
        assert abs(r["order"] - 2) < 0.1


def test_marsden_examples():
    result = _load("marsden_examples").main(quick=True)
    for r in result["rows"]:
        assert r["symplectic defect"] < 1e-13
        assert abs(r["order"] - r["claimed"]) < 0.1
        assert r["energy band"] < 0.1
    assert result["example 2 vs midpoint"] < 1e-15
    assert result["cayley"] < 1e-13
