"""The benchmark scripts run (small sizes); their numbers are printed, never asserted."""

from pathlib import Path

import pytest

from tests.conftest import load_module

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(BENCH.glob("[!_]*.py")), ids=lambda p: p.stem)
def test_benchmark_runs_quick(script, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # their shared helpers, as when run as scripts
    module = load_module(script.stem, script)
    module.main(quick=True)
    assert "targets" in capsys.readouterr().out
