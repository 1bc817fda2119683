"""Every integrator is tested by what it declares: order, symmetry, preserved quantities."""

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.diagnostics import onestep
from mechint.diagnostics.onestep import jacobians
from mechint.simulate import _advance

ALL = [cls() for cls in mi.integrators.INTEGRATORS.values()]
IDS = [i.name for i in ALL]


@pytest.fixture(scope="module")
def reference():
    top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
    m0 = np.array([0.45, 0.0, 0.89])
    return top, m0


def _case(integrator, reference, gentle: bool = False):
    """(system, x0, exact(T)) the integrator serves: the Euler top; for the discrete
    Lagrangian map the free body on so(3) with M = hat(m) (I = (5, 4, 3)); for the Lie
    group variational map that body with its attitude (``RigidBodies``); for the
    canonical methods the Kepler problem (e = 0.3) with its exact solution; the Lie group
    maps (LGVI, RKMK, CF4) the free body with its attitude (spun ten times faster for the
    fourth-order ones, so that their defects at h = 0.1 are far above round-off)."""
    top, m0 = reference
    lie = (mi.integrators.LieGroupVariational, mi.integrators.RKMK, mi.integrators.CommutatorFree)
    if isinstance(integrator, lie):  # the free body's (R, Π)
        top = mi.systems.FreeRigidBody((1.0, 2.0, 3.0)).euler_top()  # a physical I = (5, 4, 3)
        body = mi.systems.RigidBodies([top.inertia])
        g0 = np.eye(3)
        if integrator.traits.order == 4:  # spun 10× faster: O(h⁵) far above round-off
            m0 = 10.0 * m0

        def exact(T):
            m, g = mi.exact.euler_top_attitude(top, m0, g0, T)
            return g[None], m[None]

        return body, (g0[None], m0[None]), exact
    if isinstance(integrator, mi.integrators.DiscreteLagrangian):
        body = mi.systems.FreeRigidBody((1.0, 2.0, 3.0))
        top = body.euler_top()
        return (
            body,
            np.asarray(mi.lie.hat(m0)),
            lambda T: mi.lie.hat(mi.exact.euler_top(top, m0, T)),
        )
    if isinstance(integrator, (mi.integrators.WisdomHolman, mi.integrators.SABA)):
        return _planets(integrator, gentle)
    if isinstance(integrator, mi.integrators.Settle):
        return _water(integrator)
    if integrator.traits.constrained:
        return _pendulum(integrator)
    if integrator.cannot_serve(top) is not None:
        kepler = mi.systems.Kepler()
        x0 = kepler.periapsis_state(0.3)
        return kepler, x0, lambda T: mi.exact.kepler(kepler, x0, T)
    return top, m0, lambda T: mi.exact.euler_top(top, m0, T)


def _planets(integrator, gentle: bool):
    """A star and two planets moving as a whole (P, L ≠ 0: their relative errors are
    defined), the reference the same map at 1/16 of the smallest step.  For the orders,
    heavy planets (0.3 and 0.2) on fast orbits (G = 10, period 2): far from integrable,
    so the maps show their classical order rather than their ε-structure; ``gentle`` (the
    long runs): planets of 0.002 and 0.001 at a = 0.3 and 0.8, G = 1 (ten steps of 0.1 an
    inner orbit, so that even SABA(10,6,4) moves H measurably), about 6 mutual Hill radii
    apart at their closest, which neither come close nor escape over the 10⁵ steps
    (0.05 and 0.03 at 1 and 1.7 eject a planet there, and their approaches swell the
    round-off); inclined, so that each component of L is of the size of |L| (the errors
    are relative to the components)."""
    system, (q, p) = mi.systems.NBody.from_elements(
        [1.0, 0.002, 0.001] if gentle else [1.0, 0.3, 0.2],
        {
            "a": [0.3, 0.8] if gentle else [1.0, 1.7],
            "e": [0.1, 0.2],
            "i": [0.9, 1.2],
            "Omega": [0.5, 2.0],
            "omega": [1.0, 3.0],
            "M": [0.3, 2.2],
        },
        G=1.0 if gentle else 10.0,
    )
    m = np.asarray(system.masses)[:, None]
    # the whole moves (P ≠ 0), slowly on the long runs: a centre of mass at R moves by h V
    # a step, rounded to ~|R| ulp, which moves L by ~|R| |P| ulp a step whatever the map
    V = np.array([0.05, -0.02, 0.01]) * (0.01 if gentle else 1.0)
    x0 = (q + np.array([0.3, 0.1, -0.2]), p + m * V)

    def exact(T):
        n = 16 * 320
        return _last(mi.simulate(system, integrator, x0, T / n, n, n))

    return system, x0, exact


def _pendulum(integrator):
    """A spherical double pendulum spinning about the vertical (``Lz`` declared), the
    reference the same map at 1/16 of the smallest step."""
    system = mi.systems.PendulumChain([1.0, 0.5], [1.0, 0.7], gravity=1.0, dim=3)
    x0 = mi.systems.hanging_state(system, [0.8, 1.4], [0.1, -0.3], [0.0, 1.0], [0.7, -0.4])

    def exact(T):
        n = 16 * 320
        return _last(mi.simulate(system, integrator, x0, T / n, n, n))

    return system, x0, exact


def _water(integrator):
    """One rigid water molecule at 1 K (it turns slowly enough for steps of 0.1 ps: a
    cluster's molecules pull each other faster), the reference the same map at 1/16 of
    the smallest step."""
    system = mi.systems.RigidWater(1, "tip3p")
    x0 = system.cluster(temperature=1.0, seed=0)

    def exact(T):
        n = 16 * 320
        return _last(mi.simulate(system, integrator, x0, T / n, n, n))

    return system, x0, exact


def _distance(system, x, y):
    def flat(s):
        return np.asarray(system.coordinates(jax.tree.map(jnp.asarray, s)))

    return float(np.max(np.abs(flat(x) - flat(y))))


def _last(traj):
    return jax.tree.map(lambda a: a[-1], traj.x)


@pytest.mark.parametrize("integrator", ALL, ids=IDS)
def test_observed_order_matches_declared_order(integrator, reference):
    top, m0, exact_at = _case(integrator, reference)
    T = 4.0
    ns = np.array([40, 80, 160, 320])
    hs = T / ns
    exact = exact_at(T)
    errors = []
    for n, h in zip(ns, hs, strict=True):
        traj = mi.simulate(top, integrator, m0, h, int(n), int(n))
        errors.append(_distance(top, _last(traj), exact))
    if integrator.traits.order == mi.integrators.EXACT:  # an exact flow: round-off only
        assert max(errors) < 1e-13, errors
        return
    fit = mi.diagnostics.fit_power_law(hs, errors, floor=1e-13)
    assert fit.used.sum() >= 3
    assert abs(fit.exponent - integrator.traits.order) < 0.2, (fit.exponent, errors)


@pytest.mark.parametrize("integrator", ALL, ids=IDS)
def test_declared_symmetry(integrator, reference):
    top, m0, _ = _case(integrator, reference)
    # a step there and one back, by the compiled program of the runs of the order test
    # above (h and the steps are traced)
    fwd = _last(mi.simulate(top, integrator, m0, 0.1, 1, 1))
    if isinstance(top, mi.systems.Constrained):  # SHAKE's momenta leave the hidden constraint
        fwd = top.project(fwd)
    back = _last(mi.simulate(top, integrator, fwd, -0.1, 1, 1))
    defect = _distance(top, back, m0)
    if integrator.traits.symmetric:
        assert defect < 1e-14
    else:
        assert defect > 1e-11  # far above round-off: O(h^(p+1)) at h = 0.1


@pytest.mark.parametrize("integrator", ALL, ids=IDS)
def test_preserved_quantities_over_1e5_steps(integrator, reference):
    top, m0, _ = _case(integrator, reference, gentle=True)
    # 50 samples: the chunk program of the order test above (up to 64 saves) serves both
    traj = mi.simulate(
        top, integrator, m0, 0.1 if integrator.name != "explicit-euler" else 0.001, 100_000, 2000
    )
    kept = mi.diagnostics.preserved_errors(traj)
    # Moser-Veselov's kept integrals drift by a fraction of an ulp a step (5e-17 measured),
    # and so do the exact flow's (5.7e-17: its H is kept by the mathematics, not by the
    # arithmetic), and the Wisdom-Holman maps' P and L (compositions of exact flows, whose
    # loop carries Jacobi coordinates: 0.01 ulp a step measured for L, WH and SABA(10,6,4),
    # 2026-12-06): round-off that adds up, bounded here by one ulp a step
    # SETTLE, the LGVI of its molecule (tests/integrators/test_settle.py): H and L too
    # (at 30 K: 3.4e-12 and 7e-13 over these 10⁵ steps, 2026-12-06)
    adds_up = integrator.name in ("discrete-lagrangian", "exact-flow", "lie-group-variational",
                                  "rkmk", "commutator-free", "wisdom-holman", "saba",
                                  "settle")  # fmt: skip
    tol = np.finfo(float).eps * 100_000 if adds_up else 1e-12
    for name, err in kept.items():
        assert np.max(err) < tol, (name, np.max(err))
    # and whatever is not declared kept is measurably not kept
    for name, err in mi.diagnostics.invariant_errors(top, traj).items():
        if name not in kept:
            assert np.max(err) > 1e-9, (name, np.max(err))


def test_midpoint_keeps_H_and_C_rk4_does_not(reference):
    top, m0 = reference
    assert set(mi.integrators.ImplicitMidpoint().preserved(top, m0, 0.1)) == {"H", "C"}
    assert mi.integrators.RK4().preserved(top, m0, 0.1) == {}


def _pairs():
    """Every registered integrator (default settings) × every registered system it serves
    (the Kovalevskaya top is the Lagrange top's code, flows and maps with other numbers:
    its integral K is tested in tests/systems/test_heavy_top.py; the N bodies' maps, the
    Wisdom–Holman family, are measured in tests/integrators/test_wisdom_holman.py, rigid
    water at its own time scale in tests/integrators/test_settle.py (its steps are
    femtoseconds: h = 0.01 ps moves a molecule too far), and the canonical maps'
    structure on every canonical system already here)."""
    out = []
    for sname, scls in mi.systems.SYSTEMS.items():
        if sname in ("kovalevskaya-top", "nbody", "rigid-water"):
            continue
        top = sname == "euler-top"
        system = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0)) if top else scls.example()
        for iname, integrator in mi.integrators.serving(system).items():
            out.append(pytest.param(system, integrator, id=f"{iname}-{sname}"))
    return out


PAIRS = _pairs()


@pytest.fixture
def one_shot_programs():
    """Each pair's programs below serve its test alone: dropped after it (no garbage
    collection needed), so that they do not fill this process's memory and make the
    suite drop every compiled program and collect its garbage (tests/conftest.py) after
    nearly every pair."""
    yield
    for jitted in (onestep._jacobians, _advance):
        cast(Any, jitted).clear_cache()  # JAX's (untyped) method of a jitted function


@pytest.mark.usefixtures("one_shot_programs")
@pytest.mark.parametrize(("system", "integrator"), PAIRS)
def test_declared_structure_holds_on_every_served_system(system, integrator):
    """Read the declared structure (``traits.symplectic`` / ``traits.poisson``, refined per
    system by ``poisson_on``): declared means a defect at round-off at h = 0.1 (one
    compiled, vmapped Jacobian per pair); not declared means measurably broken (10⁵ times
    round-off) at h = 0.1, 1 or 4 on the system's generic state (a defect of O(h^(p+1)),
    as Gauss(2)'s on the slow free body, can need the larger step to show)."""
    x = system.example_state()
    hs = [0.1, 1.0, 4.0]
    if not isinstance(system, mi.systems.PoissonSystem | mi.systems.Constrained):
        # a field with no structure (a general quadratic field): no map may claim one
        assert not integrator.poisson_on(system) and not integrator.traits.energy
        return
    if isinstance(system, mi.systems.Canonical | mi.systems.Constrained):  # on T*Q
        defects, _ = mi.diagnostics.symplectic_defects(system, integrator, x, hs)
    else:
        defects, _ = mi.diagnostics.poisson_defects(system, integrator, x, hs)
    if integrator.poisson_on(system):
        assert defects[0] < 1e-12, defects
    else:
        assert np.nanmax(defects) > 1e-11, defects
    # the declared energy trait, from the same compiled steps: H kept to round-off by a
    # map that declares it; measurably moved by one that does not, where it does not
    # keep H on this system (midpoint keeps a quadratic H); measured in the coordinates
    # of a Poisson system (every registered Hamiltonian system is one)
    if not isinstance(system, mi.systems.PoissonSystem):
        return
    _, images, _, st = jacobians(system, integrator, x, hs)
    H0 = float(system.hamiltonian(jax.tree.map(jnp.asarray, x)))
    H1 = np.array([float(system.hamiltonian(system.from_coordinates(z))) for z in images])
    moved = np.where(np.asarray(st.ok), np.abs(H1 - H0) / max(abs(H0), 1e-300), np.nan)
    if integrator.traits.energy:
        assert np.isfinite(moved[0]) and np.nanmax(moved) < 1e-13, moved  # failed: NaN
    elif "H" not in integrator.preserved(system, x, 0.1):
        assert np.nanmax(moved) > 1e-11, moved


@pytest.mark.usefixtures("one_shot_programs")
@pytest.mark.parametrize(("system", "integrator"), PAIRS)
def test_float32_runs_stay_float32_under_strict_promotion(system, integrator):
    """Every (system, integrator) pair runs in float32 (conftest sets strict dtype
    promotion, so any float64 constant leaking into a step is an error) and its
    invariants move only at float32 round-off plus the method's error over 20 steps
    (explicit Euler's O(h) error included)."""
    traj = mi.simulate(system, integrator, system.example_state(), 0.01, 20, 10, dtype="float32")
    for leaf in jax.tree.leaves(traj.x):
        assert leaf.dtype == np.float32 and np.all(np.isfinite(leaf))
    tol = 1e-2 if integrator.traits.order == 1 else 1e-4
    values = system.invariants(jax.tree.map(np.asarray, system.example_state()))
    for name, err in mi.diagnostics.invariant_errors(system, traj, relative=False).items():
        scale = 1.0 + abs(float(values[name]))
        assert np.max(err) < tol * scale, (name, np.max(err))
