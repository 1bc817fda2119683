"""Results read well in Python: Trajectory, Solution, the Checks that ``check`` returns,
PropertyCheck, Integrals, Crossings and a composition's scheme have one-line reprs that
name what they hold, not the data; Trajectory, Checks and Integrals a ``.table()``;
Crossings a trimmed view per member."""

import numpy as np

import mechint as mi

TOP = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
M0 = np.array([0.45, 0.0, 0.89])


def test_reprs_are_one_line_and_tables_show_the_numbers():
    traj = mi.simulate(TOP, mi.integrators.Kahan(), M0, 0.01, 100, 5)
    table = traj.table(rows=2).splitlines()
    assert table[0].split() == ["t", "m_1", "m_2", "m_3"] and table[1].split()[:2] == ["0", "0.45"]
    assert table[3].split() == ["⋮"] * 4 and table[-1] == "(17 samples not shown)"
    batch = mi.simulate(TOP, mi.integrators.Kahan(), np.stack([M0, M0[::-1]]), 0.01, 20, 10)
    assert batch.table(member=1).splitlines()[1].split()[1:] == ["0.89", "0", "0.45"]
    assert batch.table(member=1).endswith("(member 1 of 2)")
    sol = mi.integrate(TOP, mi.integrators.Kahan(), M0, 0.01, 100, 10)
    assert repr(sol) == "Solution(11 samples, t in [0, 1]; x (11, 3); 0 failed)"
    checks = mi.diagnostics.check(TOP, mi.integrators.Kahan(), M0, 0.01)
    assert isinstance(checks, mi.diagnostics.Checks) and isinstance(checks, list)
    assert repr(checks).startswith("Checks(Poisson: O(h^3); energy H: O(h^4);")
    assert "\n" not in repr(checks) and "\n" not in repr(checks[0])
    assert repr(checks[0]).startswith("PropertyCheck(Poisson: O(h^3), defect 2.49e-08 at h")
    lines = checks.table().splitlines()
    assert lines[0].split() == ["property", "defect", "at", "h", "exponent", "verdict"]
    assert len(lines) == len(checks) + 1 and lines[1].split()[-1] == "O(h^3)"
    scheme = mi.integrators.Composition(scheme="kahan-li8").scheme
    assert repr(scheme) == "CompositionScheme('kahan-li8', order 8, 17 stages)"


def test_crossings_read_as_counts_and_trim_per_member():
    ho = mi.systems.HarmonicOscillator()
    q = mi.Event(lambda t, x: x[0][0], name="q")
    x0 = (np.array([[1.0], [0.5]]), np.array([[0.0], [0.0]]))
    run = mi.simulate(ho, mi.integrators.StormerVerlet(), x0, 0.1, 100, events=q, max_events=2)
    c = run.events["q"]
    assert repr(c) == "Crossings(2..2 a member crossings, 2 slots, 2 overflowed)"
    parts = c.trimmed()
    assert len(parts) == 2 and all(len(t) == 2 for t, _ in parts)
    assert np.array_equal(parts[1][0], c.t[1, :2]) and np.array_equal(parts[0][1][0], c.x[0][0])


def test_integrals_read_as_their_dimension():
    osc = mi.systems.HarmonicOscillator()
    found = mi.diagnostics.find_integrals(osc, mi.integrators.ImplicitMidpoint(),
                                          (np.array([1.0]), np.array([0.0])), 0.1,
                                          mi.diagnostics.monomials(osc, 2))  # fmt: skip
    assert repr(found).startswith("Integrals(dimension 1 in 6 functions, 1 orbit(s), verified")
    assert found.table().splitlines()[-1].strip() == "q1^2 + p1^2 - 1 = 0"  # the energy
