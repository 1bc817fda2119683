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
