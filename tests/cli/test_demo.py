import pytest

from mechint.cli.main import main


@pytest.mark.parametrize("quick", [False, True])
def test_demo_writes_figures_and_a_summary_with_the_measured_facts(tmp_path, capsys, quick):
    """The demo, and its quick form (a tenth of the steps: an install's smoke test, which
    ``make wheel-check`` runs from the wheel), hold the same facts."""
    out = tmp_path / "demo"
    with pytest.raises(SystemExit) as info:
        main(["demo", "--out", str(out), *(["--quick"] if quick else [])])
    assert info.value.code == 0
    assert f"steps = {1000 if quick else 10_000}," in (out / "summary.txt").read_text()
    for name in ("momentum_sphere.png", "invariants.png"):
        assert (out / name).stat().st_size > 20_000
    rows = {}
    for line in (out / "summary.txt").read_text().splitlines():
        parts = line.rsplit(None, 5)
        label = parts[0].split()[-1] if parts else ""
        if len(parts) == 6 and label in ("Kahan", "midpoint", "RK4", "Euler"):
            rows[label] = [float(v) for v in parts[1:]]
    kahan, midpoint = rows["Kahan"], rows["midpoint"]
    assert kahan[2] < 1e-12  # Kahan keeps K1 to round-off ...
    assert kahan[0] > 1e-7  # ... but not H
    assert midpoint[0] < 1e-12 and midpoint[1] < 1e-12  # midpoint keeps H and C
    assert rows["Euler"][1] > 1e-2  # explicit Euler's |m| grows
    assert "wrote" in capsys.readouterr().out
