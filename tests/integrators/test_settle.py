"""SETTLE (``integrators/settle.py``) on rigid water (``systems.RigidWater``): its closed
forms against RATTLE's Newton solves of the same equations, and what it declares."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.errors import InputError
from mechint.integrators.settle import settle_positions

S, R = mi.integrators.Settle(), mi.integrators.Rattle()


@pytest.fixture(scope="module")
def cluster():
    water = mi.systems.RigidWater(8, "tip3p")
    return water, water.cluster(seed=1)


def test_settle_solves_rattles_equations_in_closed_form(cluster):
    """One step from 16 states (two models, thermal and 3x hotter clusters): SETTLE's
    positions are RATTLE's Newton solution to 1e-15 nm, its momenta to 1e-13 of their
    size."""
    worst_q = worst_p = 0.0
    for model in ("tip3p", "spce"):
        water = cluster[0] if model == "tip3p" else mi.systems.RigidWater(8, model)
        for seed in range(4):
            for temperature in (300.0, 900.0):
                x = tuple(map(jnp.asarray, water.cluster(seed=seed, temperature=temperature)))
                (qs, ps), st1 = _step(S, water, x, 0.002)
                (qr, pr), st2 = _step(R, water, x, 0.002)
                assert bool(st1.ok) and bool(st2.ok)
                worst_q = max(worst_q, float(jnp.max(jnp.abs(qs - qr))))
                worst_p = max(worst_p, float(jnp.max(jnp.abs(ps - pr)) / jnp.max(jnp.abs(pr))))
    assert worst_q < 1e-15 and worst_p < 1e-13, (worst_q, worst_p)


_step = jax.jit(lambda integrator, system, x, h: integrator.step(system, x, h), static_argnums=0)


def test_a_moved_molecule_is_put_back_on_its_triangle():
    """settle_positions of a molecule turned and stretched at random: the exact
    distances, the centre of mass of the unconstrained positions, and (in the old frame)
    no out-of-plane displacement beyond the unconstrained one's."""
    water = mi.systems.WATER_MODELS["spce"]
    rng = np.random.default_rng(2)
    m = np.array([water.mass_o, water.mass_h, water.mass_h])
    for _ in range(10):
        Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
        old = water.sites() @ Q.T
        new = old + 0.003 * rng.standard_normal((3, 3))
        masses = (water.mass_o, water.mass_h)
        x = settle_positions(jnp.asarray(old), jnp.asarray(new), masses, water.r_oh, water.r_hh)
        x = np.asarray(x)
        d = [np.linalg.norm(x[i] - x[j]) for i, j in ((0, 1), (0, 2), (1, 2))]
        assert np.allclose(d, [water.r_oh, water.r_oh, water.r_hh], rtol=1e-14, atol=0)
        assert np.allclose(m @ x, m @ new, rtol=0, atol=1e-16)


def test_second_order_and_its_composition_fourth(cluster):
    """Observed orders against SETTLE's Kahan–Li-8 composition at a small step: 2.0 and
    4.0 (±0.25), over 0.1 ps of the 8-molecule cluster."""
    water, x0 = cluster
    T = 0.1
    ref = mi.simulate(water, mi.integrators.Composition(S, "kahan-li8"), x0, T / 400, 400, 400)
    ref = tuple(np.asarray(a[-1]) for a in ref.x)
    yoshida = mi.integrators.Composition(S, "yoshida4")
    for integrator, order, ns in ((S, 2, (50, 100, 200, 400)), (yoshida, 4, (25, 50, 100, 200))):
        errors = []
        for n in ns:
            traj = mi.simulate(water, integrator, x0, T / n, n, n)
            errors.append(float(np.max(np.abs(np.asarray(traj.x[0][-1]) - ref[0]))))
        fit = mi.diagnostics.fit_power_law(T / np.array(ns), errors, floor=1e-13)
        assert abs(fit.exponent - order) < 0.25, (integrator.name, fit.exponent, errors)


def test_kept_over_1e5_steps_and_symplectic_on_the_manifold(cluster):
    """10⁵ steps of 1 fs (100 ps): bonds and their rates ≤ 1e-13 of their scales at every
    saved state, P and L to round-off, the energy in a band without drift (the mean of
    the second half within 10 % of the band of the first's); DΦ on the
    tangent space of the manifold (144 dimensions) symplectic to round-off."""
    water, x0 = cluster
    traj = mi.simulate(water, S, x0, 0.001, 100_000, 100)
    kept = mi.diagnostics.preserved_errors(traj)
    assert set(kept) == {"constraints", "constraint_rates", "Px", "Py", "Pz", "Lx", "Ly", "Lz"}
    for name in ("constraints", "constraint_rates"):
        assert np.max(kept[name]) < 1e-13, (name, np.max(kept[name]))
    # P and L sum the rounding of every step (5e-17 a step measured for L): one ulp a step
    for name in ("Px", "Py", "Pz", "Lx", "Ly", "Lz"):
        assert np.max(kept[name]) < np.finfo(float).eps * 100_000, (name, np.max(kept[name]))
    # the cluster is chaotic: a linear fit over 100 ps wanders by 5-10 % of the band
    # (benchmarks/constraints.py fits 10⁶ steps); the two halves' means do not differ
    H = np.asarray(water.hamiltonian(traj.x))
    half = len(H) // 2
    assert abs(H[half:].mean() - H[:half].mean()) < 0.1 * np.ptp(H), (
        H[:half].mean(),
        H[half:].mean(),
    )
    defects, _ = mi.diagnostics.symplectic_defects(water, S, x0, [0.001, 0.002])
    assert np.max(defects) < 1e-13, defects


def test_symmetric_a_step_there_and_back(cluster):
    water, x0 = cluster
    fwd = tuple(np.asarray(a[-1]) for a in mi.simulate(water, S, x0, 0.002, 1, 1).x)
    back = tuple(np.asarray(a[-1]) for a in mi.simulate(water, S, fwd, -0.002, 1, 1).x)
    assert max(np.max(np.abs(a - b)) for a, b in zip(back, x0, strict=True)) < 1e-13


def test_a_step_too_large_fails_and_a_batch_runs(cluster):
    water, x0 = cluster
    traj = mi.simulate(water, S, x0, 0.05, 20, 1, throw=False)
    assert int(np.asarray(traj.failed_step)) >= 0
    batch = tuple(np.stack(parts) for parts in zip(x0, water.cluster(seed=5), strict=True))
    both = mi.simulate(water, S, batch, 0.001, 100, 100)
    one = mi.simulate(water, S, x0, 0.001, 100, 100)
    np.testing.assert_allclose(np.asarray(both.x[0][0]), np.asarray(one.x[0]), rtol=0, atol=1e-14)
    assert S.cannot_serve(mi.systems.PendulumChain()) == "it serves: RigidWater"


def test_bad_input():
    with pytest.raises(InputError, match="model"):
        mi.systems.RigidWater(2, "tip4p")
    with pytest.raises(InputError, match="molecules"):
        mi.systems.RigidWater(0)
    with pytest.raises(InputError, match="spacing"):
        mi.systems.RigidWater(2).cluster(spacing=-1.0)


def _as_rigid_bodies(water, x):
    """The cluster x as ``RigidBodies`` (each molecule a body: its centre of mass and
    momentum, R = 1 with its sites as they are, its inertia tensor and angular
    momentum about its centre of mass) with the same potential of the sites."""
    from mechint.systems.water import _potential

    m = np.asarray(water.system.params["masses"]).reshape(-1, 3)
    q, p = (np.asarray(a).reshape(-1, 3, 3) for a in x)
    M = m.sum(axis=1)
    X = np.einsum("bi,bij->bj", m, q) / M[:, None]
    sites = q - X[:, None, :]
    J = np.einsum("bi,bij,bik->bjk", m, sites, sites)
    inertia = np.einsum("bi,bij,bij->b", m, sites, sites)[:, None, None] * np.eye(3) - J
    L = np.cross(sites, p).sum(axis=1)
    params = water.system.params
    site_table = jnp.asarray(sites)

    def V(centres, R):
        return _potential(
            (centres[:, None, :] + jnp.einsum("bij,bsj->bsi", R, site_table)).reshape(-1), params
        )

    bodies = mi.systems.RigidBodies(inertia, mass=M, potential=V)
    state = (X, p.sum(axis=1), np.broadcast_to(np.eye(3), (len(M), 3, 3)).copy(), L)
    return bodies, state, sites


def test_settle_and_the_rigid_bodies_lgvi_are_one_map():
    """Two molecules as a constrained cluster (SETTLE) and as rigid bodies (the Lie group
    variational map) with the same potential of their sites: the sites agree to
    round-off after 0.05 ps at three step sizes (measured 1.7e-16 to 4.4e-16 nm).  RATTLE
    on a planar body's sites is RATTLE on its attitude, which the LGVI is, so the two
    differ by rounding only, not by O(h²)."""
    water = mi.systems.RigidWater(2, "spce")
    x0 = water.cluster(seed=3, spacing=0.3)
    bodies, b0, sites = _as_rigid_bodies(water, x0)
    lgvi = mi.integrators.LieGroupVariational()
    for n in (50, 100, 200):
        q = np.asarray(mi.simulate(water, S, x0, 0.05 / n, n, n).x[0][-1]).reshape(-1, 3, 3)
        X, _, Rb, _ = (np.asarray(a[-1]) for a in mi.simulate(bodies, lgvi, b0, 0.05 / n, n, n).x)
        placed = X[:, None, :] + np.einsum("bij,bsj->bsi", Rb, sites)
        assert np.max(np.abs(q - placed)) < 1e-14, (n, np.max(np.abs(q - placed)))


def test_float32_runs_stay_float32(cluster):
    water, x0 = cluster
    for integrator in (S, R):
        run = mi.simulate(water, integrator, x0, 0.001, 20, 10, dtype="float32")
        assert run.x[0].dtype == np.float32 and np.all(np.isfinite(np.asarray(run.x[0])))
