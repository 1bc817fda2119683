"""Splitting and composition: the rigid-body splitting (explicit, Poisson, Casimir exact),
the composition schemes' algebra, and compositions keeping their base's traits."""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.integrators import composition_schemes, stages
from mechint.maps import Reason

I = mi.integrators
EPS64 = np.finfo(np.float64).eps
TOP = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
M0 = np.array([0.45, 0.0, 0.89])


def _final(integrator, T, n):
    return mi.simulate(TOP, integrator, M0, T / n, int(n), int(n)).x[-1]


@cache
def _exact(T: float) -> np.ndarray:
    """The exact m(T), once for the order tests below (its compiled program is not traced
    and loaded again where the suite drops its programs between tests)."""
    return mi.exact.euler_top(TOP, M0, T)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_axis_rotation_is_the_exact_flow_of_its_piece(axis):
    """d/dt at t = 0 equals Π(m)∇H_i with H_i = m_i²/(2 I_i), and the flow is a group."""
    m = jnp.asarray([0.3, -0.7, 0.5])
    flow = I.AxisRotation(axis)
    velocity = jax.jacfwd(lambda t: flow.step(TOP, m, t)[0])(0.0)
    grad = jnp.zeros(3).at[axis].set(m[axis] / TOP.inertia[axis])
    assert np.max(np.abs(velocity - TOP.poisson_tensor(m) @ grad)) < 1e-15
    twice = flow.step(TOP, flow.step(TOP, m, 0.4)[0], 0.6)[0]
    assert np.max(np.abs(twice - flow.step(TOP, m, 1.0)[0])) < 1e-15


@pytest.mark.parametrize("order", [2, 4, 6, 8])
def test_rigid_body_splitting_order_casimir_and_poisson(order):
    integrator = I.RigidBodySplitting(order)
    # order against the exact elliptic-function solution
    T = 4.0
    ns = np.array([20, 40, 80]) if order < 8 else np.array([10, 14, 20])
    exact = _exact(T)
    errors = [np.max(np.abs(_final(integrator, T, n) - exact)) for n in ns]
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-12)
    assert fit.used.sum() >= 3 and abs(fit.exponent - order) < 0.3, (fit.exponent, errors)
    # Casimir: each rotation rounds C by about an ulp and the round-off adds up as a
    # random walk: within 4 eps √(rotations) for one step (500 random states; at order 2
    # below 1e-15) and over 10^4 steps (measured 176 eps at order 2, 417 eps at order 8)
    per_step = 5 * {2: 1, 4: 5, 6: 9, 8: 17}[order]
    eps = np.finfo(float).eps
    m = np.random.default_rng(order).standard_normal((500, 3))
    one = mi.simulate(TOP, integrator, m, 0.3, 1)
    assert np.max(mi.diagnostics.invariant_errors(TOP, one)["C"]) < 4 * eps * np.sqrt(per_step)
    # in calls of 64 saves: the compiled program of the order runs above serves this run
    # too (the states are the same in any chunks)
    traj = mi.simulate(TOP, integrator, M0, 0.1, 10_000, 100, chunk_steps=6400)
    err = mi.diagnostics.invariant_errors(TOP, traj)
    tol = 4 * eps * np.sqrt(10_000 * per_step)
    assert np.max(err["C"]) < tol
    assert np.max(mi.diagnostics.preserved_errors(traj)["C"]) < tol
    if order < 8:
        assert np.max(err["H"]) > 1e-12
    # Poisson for hat(m) to 1e-13
    assert integrator.traits.poisson and integrator.traits.explicit
    assert mi.diagnostics.poisson_defect(TOP, integrator, M0, 0.1) <= 1e-13


def test_kahan_is_not_poisson_where_the_splitting_is():
    """Negative control on the same state and step: Kahan's defect is O(h³)."""
    assert mi.diagnostics.poisson_defect(TOP, I.Kahan(), M0, 0.1) > 1e-6


@pytest.mark.parametrize("scheme", list(composition_schemes.SCHEMES.values()), ids=lambda s: s.name)
def test_scheme_algebra(scheme):
    g = np.asarray(scheme.gamma)
    assert abs(g.sum() - 1.0) < 1e-15
    assert np.array_equal(g, g[::-1])
    # the published decimals meet every condition to 1e-15 (in 50-digit arithmetic; the
    # tables carry 20 to 78 digits), their float64 roundings to a few ulp
    defects = scheme.defects(scheme.order + 1)
    assert max(defects[k] for k in range(1, scheme.order + 1)) <= 1e-15
    floats = scheme.float_defects()
    assert max(floats.values()) <= 2e-15
    # the next condition fails: the declared order is the true order
    assert defects[scheme.order + 1] > 1e-7


def test_yoshida6_is_held_to_full_precision():
    """The 15-digit values used before left 4.6e-14 in the order-6 conditions."""
    old = (0.784513610477560, 0.235573213359357, -1.17767998417887)
    gamma = (*old, 1.0 - 2.0 * sum(old), *old[::-1])
    assert max(composition_schemes.order_defects(gamma, 6).values()) > 1e-14
    assert max(composition_schemes.SCHEMES["yoshida6"].float_defects().values()) < 1e-15


def test_order_conditions_catch_a_wrong_coefficient():
    good = composition_schemes.SCHEMES["kahan-li6"].gamma
    bad = list(good)
    bad[1] += 1e-9
    bad[-2] += 1e-9
    bad[len(bad) // 2] -= 2e-9  # still symmetric, still sums to 1
    assert abs(sum(bad) - 1.0) < 1e-15
    with pytest.raises(ValueError, match="order conditions"):
        composition_schemes.CompositionScheme("broken", tuple(bad), 6)
    with pytest.raises(ValueError, match="symmetric"):
        composition_schemes.CompositionScheme("lopsided", (0.3, 0.7), 2)


def test_non_symmetric_schemes_are_checked_with_all_generators():
    """Lie-Trotter composition φ_{h/2}∘φ*_{h/2} of a first-order map and its adjoint is
    order 2: with a general base (Y2 present) the two-stage scheme (½, ½) is only order 1."""
    defects = composition_schemes.order_defects((0.5, 0.5), 2, symmetric_base=False)
    assert defects[1] < 1e-16 and defects[2] > 0.1


@pytest.mark.parametrize(
    "base",
    [I.StormerVerlet(), I.ImplicitMidpoint(), I.Kahan(), I.Splitting(), I.AverageVectorField()],
    ids=["verlet", "midpoint", "kahan", "strang", "avf"],
)
def test_composition_keeps_every_trait_of_its_base(base):
    comp = I.Composition(base, "kahan-li6")
    t, b = comp.traits, base.traits
    assert (t.symplectic, t.poisson, t.explicit, t.symmetric, t.energy) == (
        b.symplectic,
        b.poisson,
        b.explicit,
        True,
        b.energy,
    )
    assert t.order == 6


def test_a_composition_of_an_energy_map_keeps_the_energy():
    """Every stage of a composition of the average vector field keeps H exactly (negative
    steps too), so the composition does, as its declared energy trait says: the Euler
    top, one step of h = 0.05 .. 0.8, H to round-off."""
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    comp = I.Composition(I.AverageVectorField(), "kahan-li6")
    m0 = jnp.array([0.45, -0.3, 0.89])
    H0 = float(top.hamiltonian(m0))
    for h in (0.05, 0.2, 0.8):
        m1, st = comp.step(top, m0, h)
        assert bool(st.ok) and abs(float(top.hamiltonian(m1)) - H0) < 8 * np.finfo(float).eps * H0


def test_composition_of_kahan_is_order_4_and_drops_its_modified_integrals():
    comp = I.Composition(I.Kahan(), "suzuki4")
    T = 4.0
    ns = np.array([20, 40, 80])
    exact = _exact(T)
    errors = [np.max(np.abs(_final(comp, T, n) - exact)) for n in ns]
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-12)
    assert abs(fit.exponent - 4) < 0.3, (fit.exponent, errors)
    # Kahan's K_k depend on h: a composition does not keep them, and does not claim to
    assert comp.preserved(TOP, M0, 0.1) == {}
    # midpoint keeps H and C for every h: so does its composition
    midcomp = I.Composition(I.ImplicitMidpoint(), "yoshida4")
    assert set(midcomp.preserved(TOP, M0, 0.1)) == {"H", "C"}
    traj = mi.simulate(TOP, midcomp, M0, 0.1, 2000, 100)
    assert max(np.max(e) for e in mi.diagnostics.preserved_errors(traj).values()) < 1e-13


def test_composition_refuses_a_non_symmetric_base_and_unknown_schemes():
    with pytest.raises(mi.InputError, match=r"base.*not symmetric"):
        I.Composition(I.SymplecticEuler(), "yoshida4")
    with pytest.raises(mi.InputError, match=r"scheme.*unknown"):
        I.Composition(I.StormerVerlet(), "yoshida5")
    with pytest.raises(mi.InputError, match="order"):
        I.RigidBodySplitting(3)
    with pytest.raises(mi.InputError, match="scheme"):
        I.Splitting(scheme="leapfrog")
    with pytest.raises(mi.UnsupportedError, match="flows"):
        mi.simulate(
            mi.systems.FreeRigidBody((1.0, 2.0, 3.0)), I.Splitting(), np.zeros((3, 3)), 0.1, 1
        )


def test_splitting_with_a_numerical_sub_flow():
    """H = T + V split into exact drift and a V-piece advanced by midpoint: since the V
    piece's flow is linear in p, midpoint on it is exact, and the result is Verlet."""
    pend = mi.systems.Pendulum(1.0)
    v_piece = mi.systems.SeparableHamiltonian(lambda p: 0.0 * jnp.sum(p), pend.potential, 1)
    split = I.Splitting((I.NumericalFlow(v_piece, I.ImplicitMidpoint()), I.Drift()), "strang")
    x0 = (np.array([1.0]), np.array([0.3]))
    a = mi.simulate(pend, split, x0, 0.1, 100, 100).x
    b = mi.simulate(pend, I.StormerVerlet(), x0, 0.1, 100, 100).x
    assert max(float(np.max(np.abs(u - v))) for u, v in zip(a, b, strict=True)) < 1e-13
    assert split.traits.symplectic and split.traits.order == 2


def _henon_heiles():
    T = lambda p: 0.5 * jnp.sum(p**2)  # noqa: E731
    V = lambda q: 0.5 * jnp.sum(q**2) + q[0] ** 2 * q[1] - q[1] ** 3 / 3  # noqa: E731
    return mi.systems.SeparableHamiltonian(T, V, dof=2)


@pytest.mark.parametrize("scheme", ["yoshida4", "sofroniou-spaletta10"])
def test_a_composition_of_verlet_merges_its_kicks(scheme):
    """On a separable H a composition of Störmer–Verlet runs as one kick, then a drift
    and a kick per stage (``stages.advance_leapfrog``, s + 1 forces where the stages
    one by one take 2s): the same map as the stages run one by one (``stages.advance``),
    to round-off, on Kepler and a user's Hénon–Heiles, in float64 and float32, plain
    and compensated (Kahan-Li-8's: test_compensated's floor, against the exact orbit);
    the plan is the scheme's γ, each row with the next stage's."""
    gamma = composition_schemes.get(scheme).gamma
    plan = stages.leapfrog_plan(gamma)  # (drift γ_i, and the next stage's γ_{i+1})
    assert [d for d, _ in plan] == list(gamma) and [k for _, k in plan] == [*gamma[1:], 0.0]
    integ = I.Composition(I.StormerVerlet(), scheme)
    hh = _henon_heiles()
    cases = [(mi.systems.Kepler(), mi.systems.Kepler().periapsis_state(0.5), 0.05),
             (hh, (np.array([0.1, -0.2]), np.array([0.3, 0.15])), 0.1)]  # fmt: skip
    for system, x, h in cases:
        for real in (np.float64, np.float32):
            x = tuple(np.asarray(v, dtype=real) for v in x)
            eps = np.finfo(real).eps

            @jax.jit
            def three(x, system=system, h=h):  # one program for the three
                e0 = jax.tree.map(jnp.zeros_like, x)
                plan = [(integ.base, g) for g in integ.gamma]
                return (stages.advance(system, x, h, plan), integ.step(system, x, h),
                        integ.compensated_step(system, x, e0, h))  # fmt: skip

            (want, st_want), (got, st), (comp, e, st_c) = three(x)
            assert bool(st.ok) and bool(st_want.ok) and bool(st_c.ok)
            leaves = (jax.tree.leaves(v) for v in (want, got, comp, e))
            for a, b, c, d in zip(*leaves, strict=True):
                scale = np.abs(np.asarray(a)).max()
                assert np.asarray(b).dtype == real
                # measured: 6 eps at most
                assert np.abs(np.asarray(a) - b).max() <= 16 * eps * scale
                # the compensated state is x + e: the same point, more exactly
                a, c, d = (np.asarray(v, float) for v in (a, c, d))
                assert np.abs((c + d) - a).max() <= 16 * eps * scale


def test_the_merged_kicks_keep_the_order_of_the_stages():
    """``stages.advance_leapfrog`` applies γ_1 first, as ``stages.advance`` does: checked
    on a γ that is not a palindrome (every registered scheme is one, so order cannot show
    there; reversed, this γ moves the state by 1e-4 at h = 0.5), on Hénon–Heiles and on a
    time-dependent separable H on its extended phase space (drifts move t, kicks e)."""
    gamma = (0.3, -0.15, 0.6, 0.25)
    sv = I.StormerVerlet()
    V = lambda t, q: 0.5 * jnp.sum(q**2) - 0.7 * jnp.sum(q) * jnp.cos(1.9 * t)  # noqa: E731
    driven = mi.systems.SeparableHamiltonian(lambda p: 0.5 * jnp.sum(p**2), V, dof=1,
                                             time_dependent=True)  # fmt: skip
    for system in (_henon_heiles(), driven):
        x = system.example_state()
        want, _ = stages.advance(system, x, 0.5, [(sv, g) for g in gamma])
        back, _ = stages.advance(system, x, 0.5, [(sv, g) for g in gamma[::-1]])
        got, _, st = stages.advance_leapfrog(system, x, 0.5, gamma)
        assert bool(st.ok)
        for a, b, c in zip(*(jax.tree.leaves(v) for v in (want, got, back)), strict=True):
            a, b, c = (np.asarray(v) for v in (a, b, c))
            assert np.abs(a - b).max() <= 4 * EPS64 * np.abs(a).max()  # measured: 1.6 eps
        pairs = zip(jax.tree.leaves(want), jax.tree.leaves(back), strict=True)
        assert max(np.abs(np.asarray(a) - np.asarray(c)).max() for a, c in pairs) > 3e-5


def test_a_kick_that_overflows_fails_the_merged_step():
    """The merged step's status is its new state's finiteness, as each stage's was: a
    force that overflows in a middle stage leaves the state non-finite (every kick and
    drift adds to it), and the step says NON_FINITE, plain and compensated."""
    V = lambda q: 1e300 * jnp.sum(q**4)  # noqa: E731
    system = mi.systems.SeparableHamiltonian(lambda p: 0.5 * jnp.sum(p**2), V, dof=1)
    integ = I.Composition(I.StormerVerlet(), "yoshida4")
    x = (np.array([1e-80]), np.array([1e3]))  # the force overflows once q has moved
    plain = integ.step(system, x, 0.5)
    comp, _, st_comp = integ.compensated_step(system, x, (0 * x[0], 0 * x[1]), 0.5)
    for new, st in (plain, (comp, st_comp)):
        assert not bool(st.ok) and Reason(int(st.reason)) is Reason.NON_FINITE
        assert not np.all(np.isfinite(np.concatenate(jax.tree.leaves(new))))
