"""The benchmark scripts run (small sizes); their numbers are printed, never asserted."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(BENCH.glob("[!_]*.py")), ids=lambda p: p.stem)
def test_benchmark_runs_quick(script, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # their shared helpers, as when run as scripts
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(quick=True)
    assert "targets" in capsys.readouterr().out
