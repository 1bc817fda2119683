"""The accuracy figures the README quotes, checked against a fresh run of the code that
gives them: a stale number fails the suite.  (Speeds depend on the machine: they are
printed by the benchmarks and never asserted.)"""

import re
from pathlib import Path

import pytest

from tests.cli.helpers import invoke
from tests.conftest import load_module

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# below this a figure is round-off, which may differ by an ulp or two between compilers:
# it must agree within a factor of 2; above it, to the digits the README prints
ROUND_OFF = 1e-12


def _agrees(shown: str, value: float) -> bool:
    quoted = float(shown)
    if quoted < ROUND_OFF:
        return value < ROUND_OFF and quoted / 2 <= value <= 2 * quoted
    digits = len(shown.split("e")[0].replace(".", "")) - 1
    return f"{value:.{digits}e}" == shown


def test_the_check_example_prints_what_the_readme_shows(capsys):
    """The README's ``mechint check`` block: every row it shows, as the command prints it
    (numbers to the digits shown; a round-off row by its verdict)."""
    command = "mechint check --system euler-top --inertia 3,2,1 --integrator kahan"
    start = README.index(f"$ {command}\n") + len(command) + 3
    shown = README[start:].split("\n...")[0].splitlines()
    code, out, err = invoke(command.split()[1:], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert shown[:2] == lines[:2]  # the system, the map, h; the header
    # a row: the property, its defect at h, the exponent (where fitted) and the verdict
    printed = {re.split(r"\s{2,}", line.strip())[0]: line for line in lines[2:]}
    for line in shown[2:]:
        want = re.split(r"\s{2,}", line.strip())
        assert want[0] in printed, (line, out)
        got = re.split(r"\s{2,}", printed[want[0]].strip())
        assert got[2:] == want[2:], (line, printed[want[0]])  # exponent and verdict
        assert _agrees(want[1], float(got[1])), (line, printed[want[0]])


ROWS = re.findall(r"^\| (Störmer-Verlet|Yoshida-4|Kahan-Li-8) \| h = ([\d.]+) \| [\d.]+ \| "
                  r"([\d.e+-]+) \| ([\d.e+-]+) / ([\d.e+-]+) \|$", README, re.M)  # fmt: skip


def test_the_readme_quotes_every_row_of_the_kepler_table():
    assert [(r[0], r[1]) for r in ROWS] == [
        ("Störmer-Verlet", "0.001"),
        ("Yoshida-4", "0.004"),
        ("Kahan-Li-8", "0.1"),
        ("Kahan-Li-8", "0.05"),
        ("Kahan-Li-8", "0.025"),
    ]


@pytest.mark.parametrize(("label", "h", "final", "early", "late"), ROWS,
                         ids=[f"{r[0]}-{r[1]}" for r in ROWS])  # fmt: skip
def test_the_kepler_work_precision_table_is_what_the_code_gives(monkeypatch, label, h, final,
                                                                 early, late):  # fmt: skip
    """Each mechint row of the README's Kepler table (e = 0.5, T = 1000, against the exact
    solution): its final error and its energy errors, from ``benchmarks/canonical.py``'s
    own run of that row."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    canonical = load_module("canonical", ROOT / "benchmarks" / "canonical.py")
    integrator = canonical.METHODS[label][0]
    _, err, first, last = canonical.kepler_run(integrator, float(h), 1000.0)
    for shown, value in ((final, err), (early, first), (late, last)):
        assert _agrees(shown, value), (label, h, shown, f"{value:.2e}")
