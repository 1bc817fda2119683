"""Every example runs (small size) and reports the facts it is about."""

import itertools
from pathlib import Path

import numpy as np

from tests.conftest import load_module

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name):
    return load_module(name, EXAMPLES / f"{name}.py")


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


def test_kahan_integrability(tmp_path):
    """The report's quick rows: the Euler top's two relations for Kahan and the flow; the
    control (a heavy top off its integrable cases): the flow keeps three, Kahan none."""
    rows = _load("kahan_integrability").main(quick=True, out=str(tmp_path / "k.png"))
    dims = {r["system"]: (r["kahan"].dimension, r["flow"].dimension) for r in rows}
    assert dims == {"Euler top": (2, 2), "heavy top (control)": (0, 3)}
    for r in rows:
        for found in (r["kahan"], r["flow"]):
            assert found.dimension == 0 or (min(found.gap) > 1e6 and all(found.verified))
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


def test_system_identification(tmp_path):
    """Inertia (Kahan) and the potential's A (DL map) recovered from 200 samples with
    noise 1e-3, within 4 standard errors, χ²/dof near 1; the figure is written."""
    rows = _load("system_identification").main(quick=True, out=str(tmp_path / "fit.png"))
    for r in rows:
        assert np.all(np.abs(r["z"]) < 4.0), r["name"]
        assert 0.7 < r["chi2/dof"] < 1.3
        assert np.all(r["se"] < 1e-3)
    assert (tmp_path / "fit.png").stat().st_size > 20_000


def test_lyapunov_spectrum_comes_in_pairs():
    """The example's chaotic orbit: ± pairs after the warm-up, the sum at round-off,
    MEGNO near λ t / 2; its regular orbit: λ1 near 0, MEGNO toward 2."""
    result = _load("lyapunov").main(quick=True)
    assert result["exponents"][0] > 0.01  # chaotic
    assert abs(result["pair 1+4"]) < 1e-6 and abs(result["pair 2+3"]) < 1e-6
    assert abs(result["sum"]) < 1e-15
    assert result["megno chaotic"] > 20 and 1.0 < result["megno regular"] < 2.1
    assert abs(result["regular exponents"][0]) < 2e-3 and result["energy error"] < 1e-3


def test_periodic_orbits_by_newton_shooting():
    rows = _load("periodic_orbit").main(quick=True)
    for r in rows:
        assert r["residual"] < 1e-12
        assert r["reciprocal"] < 1e-10 and r["unit pair"] < 1e-6
    assert abs(rows[0]["period"] - rows[1]["period"]) > 0.1  # two different orbits


def test_ge_marsden_no_map_keeps_both(tmp_path):
    """On Hénon–Heiles the symplectic maps' energy defects are O(h^(p+1)) and the energy
    maps' symplectic defects O(h^3) (Itoh–Abe, order 1: O(h^2)); none keeps both.  On
    the harmonic oscillator the AVF (= midpoint there) keeps both."""
    rows = _load("ge_marsden").main(quick=True, out=str(tmp_path / "gm.png"))
    for r in rows:
        if r["system"] == "Hénon–Heiles":
            assert not r["both"], r["map"]
            kept, broken = ("symplectic", "energy") if r["kind"] == "symplectic" else (
                "energy", "symplectic")  # fmt: skip
            assert r[kept].exact, (r["map"], kept)
            want = r["order"] + 1 if r["kind"] == "symplectic" else min(3, r["order"] + 1)
            assert abs(r[broken].exponent - want) < 0.3, (r["map"], r[broken].exponent)
        else:
            assert r["both"], r["map"]
    assert len(rows) == 4
    assert (tmp_path / "gm.png").stat().st_size > 20_000


def test_heavy_top(tmp_path):
    """The Lagrange top's m3: bit for bit by Kahan and midpoint, round-off by the
    splitting and the discrete Lagrangian map; the chaotic top's first crossings of
    γ3 = 0 by the order-4 splitting agree with DOP853 to 1e-12."""
    result = _load("heavy_top").main(quick=True, out=str(tmp_path / "h.png"))
    rows = result["lagrange"]["rows"]
    assert rows["Kahan"]["m3"] == 0.0 and rows["midpoint"]["m3"] == 0.0
    assert rows["splitting (order 2)"]["m3"] < 1e-13
    assert rows["discrete Lagrangian"]["m3"] < 1e-13
    assert rows["Kahan"]["gamma2"] > 1e-6 and rows["midpoint"]["H"] < 1e-13
    assert result["lagrange"]["theta error"] < 1e-6
    sec = result["poincare"]
    assert len(sec["difference"]) == 4 and np.max(sec["difference"]) < 1e-12
    assert np.max(sec["time difference"]) < 1e-12 and sec["crossings"] > 20
    assert (tmp_path / "h.png").stat().st_size > 10_000


def test_sections(tmp_path):
    """Hénon–Heiles sections at E = 1/12 and 1/8 on q1 = 0 to round-off, the first
    crossings within 1e-12 of DOP853's; at e = 0.99 and equal steps both variable-step
    maps keep the energy 10^5 times better than fixed steps."""
    result = _load("sections").main(quick=True, out=str(tmp_path / "s.png"))
    for sec in result["sections"].values():
        assert np.nanmax(np.abs(sec["q1"])) < 1e-16 and np.all(sec["count"] > 25)
    assert result["dop853"] < 1e-12
    kep = {k: np.nanmax(r["dH"]) for k, r in result["kepler"].items()}
    assert kep["fixed steps"] > 1.0
    assert kep["time-transformed"] < 1e-5 * kep["fixed steps"]
    assert kep["reversible adaptive"] < 1e-5 * kep["fixed steps"]
    assert (tmp_path / "s.png").stat().st_size > 20_000


def test_forced(tmp_path):
    """The detumbling satellite's energy balance under the AVF to round-off (RK4's is
    O(h⁴), far above), its spin ending about the axis of largest inertia; the damped
    pendulum's energy within O(a²) of the linear oscillator's exact decay; the Duffing
    section's clock at the forcing periods; Kapitza's pendulum upright only with its
    pivot shaken, K = H + e in a band."""
    result = _load("forced").main(quick=True, out=str(tmp_path / "f.png"))
    sat = result["satellite"]
    assert np.max(sat["AVF"]["balance"]) < 1e-14 < 1e-11 < np.max(sat["RK4"]["balance"])
    assert abs(sat["AVF"]["axis"][2]) > 0.98 and sat["AVF"]["H"][-1] < 0.02 * sat["AVF"]["H"][0]
    deviation = [r["deviation"] for r in result["pendulum"].values()]  # a = 0.3, 0.1, 0.03
    assert all(7 < a / b < 12 for a, b in itertools.pairwise(deviation))
    duff = result["duffing"]
    assert len(duff["q"]) > 150 and np.max(np.abs(duff["clock"] - duff["t"])) < 1e-12
    assert np.all(np.abs(duff["q"]) < 2) and duff["balance"] < 1e-3
    kap = result["kapitza"]  # the shaken pivot keeps the pendulum upright, the still one not
    assert np.max(np.abs(kap[0.1]["q"] - np.pi)) < 0.3 < 2 < np.max(np.abs(kap[0.0]["q"] - np.pi))
    assert kap[0.1]["e range"] > 100  # H swings with the pivot (a ω² = 90) ...
    for r in kap.values():  # ... K = H + e stays in its band; the state's time is the run's
        assert r["K band"] < 0.1
        assert np.max(np.abs(r["clock"] - r["t"])) < 1e-11
    assert (tmp_path / "f.png").stat().st_size > 20_000


def test_rigid_bodies(tmp_path):
    """The small satellite librates at the classical period (1e-3), the large one's
    coupling moves it by over 0.5 %; L and P to round-off, H bounded, RᵀR = 1."""
    result = _load("rigid_bodies").main(quick=True, out=str(tmp_path / "rb.png"))
    sat = result["satellite"]
    small, large = sat["pitch"][1e-6], sat["pitch"][1e-3]
    assert abs(small["period"] / small["predicted"] - 1) < 1e-3
    assert large["period"] / large["predicted"] - 1 > 5e-3
    assert not sat["failed"] and sat["orthogonality"] < 1e-14
    assert np.max(sat["L error"]) < 1e-13 and np.max(sat["H error"]) < 1e-5
    assert abs(float(sat["energy drift"].trend)) < 0.05 * float(sat["energy drift"].band)
    for run in result["two bodies"].values():
        assert not run["failed"] and run["exchanged"] > 0.1
        assert run["L error"] < 1e-13 and run["P error"] < 1e-14
        assert np.max(run["H error"]) < 1e-5
    assert (tmp_path / "rb.png").stat().st_size > 10_000


def test_planetary(tmp_path):
    """The outer solar system: |ΔE/E| bounded at O(ε h²) (WH) and lower with the corrector,
    the angular momentum kept to round-off, a batch run without failures."""
    r = _load("planetary").main(quick=True, out=str(tmp_path / "p.png"))
    wh, corrected = r["rows"]["WH"], r["rows"]["WH, corrector 11"]
    assert 1e-9 < np.max(wh["dE/E"]) < 1e-5
    assert np.max(corrected["dE/E"]) < 0.05 * np.max(wh["dE/E"])
    assert wh["L drift"] < 1e-15 and corrected["L drift"] < 1e-15
    assert r["batch failed"] == 0 and r["Jupiter longitude spread"] < 1e-3
    assert (tmp_path / "p.png").stat().st_size > 10_000


def test_pendulum_chain(tmp_path):
    """Ten rods by RATTLE: on the manifold at round-off, Lz kept, an energy band that
    Yoshida-4 shrinks; a batch runs without a failure."""
    result = _load("pendulum_chain").main(quick=True, out=str(tmp_path / "c.png"))
    rattle, yoshida = result["RATTLE, h = 0.001"], result["Yoshida-4 of RATTLE, h = 0.003"]
    for r in (rattle, yoshida):
        assert r["constraints"] < 1e-13 and r["rates"] < 1e-13 and r["Lz"] < 1e-12
    assert 1e-9 < yoshida["energy band"] < rattle["energy band"] < 1e-4
    assert result["batch chain-steps/s"] > 0
    assert (tmp_path / "c.png").stat().st_size > 10_000


def test_link_chain(tmp_path):
    """Ten rigid links by the jointed LGVI: the joints at round-off, an energy band that
    Yoshida-4 shrinks, a top joint that carries about the chain's weight."""
    result = _load("link_chain").main(quick=True, out=str(tmp_path / "l.png"))
    lgvi, yoshida = result["LGVI, h = 1 ms"], result["Yoshida-4 of the LGVI, h = 3 ms"]
    for r in (lgvi, yoshida):
        assert r["joints"] < 1e-15 and r["rates"] < 1e-14
    assert 1e-10 < yoshida["energy band"] < lgvi["energy band"] < 1e-4
    low, high = result["top joint / weight"]
    assert 0.5 < low < 1.0 < high < 3.0
    assert (tmp_path / "l.png").stat().st_size > 10_000


def test_rigid_water(tmp_path):
    """27 rigid TIP3P molecules by SETTLE: bonds at round-off, P kept, an energy band; a
    batch of clusters runs without a failure."""
    result = _load("rigid_water").main(quick=True, out=str(tmp_path / "w.png"))
    assert result["bonds"] < 1e-13 and result["rates"] < 1e-13
    assert result["P"] < 1e-10 and result["energy band"] < 1e-2
    assert 250 < result["temperature"][0] < 350
    assert result["batch cluster-steps/s"] > 0
    assert (tmp_path / "w.png").stat().st_size > 10_000


def test_recipes(tmp_path):
    """The satellite's pitch librates at the classical period (to 1e-3 of it) with its
    energy balance in a narrow band; the time-transformed Kepler orbit at 200 steps an
    orbit beats constant steps by far; check passes the honest map and flags each
    declaration the overclaimed one contradicts."""
    r = _load("recipes").main(quick=True, out=str(tmp_path / "r.png"))
    sat, kep, own = r["satellite"], r["kepler"], r["own maps"]
    assert abs(sat["period (orbits)"] / sat["classical (orbits)"] - 1) < 1e-3
    assert sat["energy band / energy"] < 1e-6 and sat["roll, yaw"] < 1e-12
    assert np.ptp(sat["energy"]) / sat["energy"][0] > 1e-2  # H itself swings with the torque
    assert abs(kep["physical time / orbits"] - 2) < 1e-3
    assert kep["error, time-transformed"] < 1e-3 * kep["error, constant steps"]
    assert own["substep-leapfrog"]["contradicted"] == []
    assert {"symplectic", "reversibility", "energy"} <= set(
        own["overclaimed-euler"]["contradicted"]
    )
    assert (tmp_path / "r.png").stat().st_size > 10_000
