"""``systems.Forced``: the extended system (its field, its balances along the flow), its
clock (t0, resumed states, save times), its runs (batch, files)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import mechint as mi
from mechint.diagnostics.comparison import dop853_path
from mechint.errors import InputError

S, I, D = mi.systems, mi.integrators, mi.diagnostics


def _push(t, x):
    """A time-dependent force with radial and tangential parts."""
    q, _ = x
    r = jnp.sqrt(jnp.sum(q**2))
    return (0.05 * jnp.sin(t) * q + 0.02 * jnp.array([-q[1], q[0]])) / r


def _drag(x):
    q, _ = x
    return 0.01 * (1.0 + q[0] ** 2) * jnp.eye(2, dtype=q.dtype)


SYSTEM = S.Forced(S.Kepler(), _push, _drag)
X0 = S.Kepler().periapsis_state(0.3)


def test_the_field_is_the_papers_and_its_balances_are_kept_by_the_flow():
    """ṗ = −∂H/∂q − R ∂H/∂p + f, q̇ = ∂H/∂p, ṫ = 1, Ẇ = ∂H/∂p·f, Ḋ = ∂H/∂pᵀ R ∂H/∂p,
    İ_L = ∂L/∂p·(f − R ∂H/∂p) at a state; along DOP853 (rtol 1e-13) to T = 20 the
    balances H − W + D and L − I_L stay constant to 1e-11 while H and L move by O(1)."""
    x = jax.tree.map(jnp.asarray, SYSTEM.validate_state(X0)[0])
    x = (x[0], jnp.asarray(0.7), *x[2:])
    (dq, dp), dt, dw, dd, di, drounding = SYSTEM.vector_field(x)
    (q, p), t = x[0], x[1]
    Hq, Hp = jax.grad(S.Kepler().energy, argnums=(0, 1))(q, p)
    f, R = _push(t, (q, p)), _drag((q, p))
    np.testing.assert_allclose(dq, Hp, rtol=1e-15)
    np.testing.assert_allclose(dp, -Hq - R @ Hp + f, rtol=1e-14)
    np.testing.assert_allclose([dt, dw, dd], [1.0, Hp @ f, Hp @ R @ Hp], rtol=1e-14)
    assert float(drounding) == 0.0
    xi = jnp.array([-q[1], q[0]])  # ∂L/∂p for L = q1 p2 − q2 p1
    np.testing.assert_allclose(di, xi @ (f - R @ Hp), rtol=1e-14)
    times = np.linspace(0.0, 20.0, 41)
    path = dop853_path(SYSTEM, SYSTEM.validate_state(X0)[0], times)
    values = SYSTEM.invariants(path)
    for name in ("H_balance", "L_balance"):
        assert np.max(np.abs(values[name] - values[name][0])) < 1e-11, name
    H = S.Kepler().hamiltonian(path[0])
    assert np.ptp(np.asarray(H)) > 0.05 and np.ptp(np.asarray(path[4])) > 0.05
    np.testing.assert_allclose(path[1], times, rtol=1e-13)  # DOP853 integrates ṫ = 1


def test_the_clock_starts_at_t0_and_a_state_keeps_its_own():
    """A run from t0 = 2.5 equals the run from the extended state whose time is 2.5
    (bit for bit), and its samples' clock reads t0 + k h to an ulp (Kahan's sum: a plain
    t + h drifts by 8e-10 over 10⁵ steps); an extended state's own time is kept (a
    resumed run); ``save_at`` states carry their times; in float32 the clock is as
    exact (a plain sum would drift by 0.7 over 10⁵ steps of 0.01)."""
    integrator = I.StormerVerlet()
    a = mi.simulate(SYSTEM, integrator, X0, 0.01, 400, 100, t0=2.5)
    extended = SYSTEM.validate_state(X0)[0]
    extended = (extended[0], np.asarray(2.5), *extended[2:])
    b = mi.simulate(SYSTEM, integrator, extended, 0.01, 400, 100)
    for u, v in zip(jax.tree.leaves(a.x), jax.tree.leaves(b.x), strict=True):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_allclose(a.x[1], a.t, rtol=2.3e-16, atol=0)
    np.testing.assert_allclose(b.x[1], 2.5 + b.t, rtol=2.3e-16, atol=0)
    times = [2.5 + 0.123, 2.5 + 1.7, 2.5 + 3.999]
    c = mi.simulate(SYSTEM, integrator, X0, 0.01, 400, t0=2.5, save_at=times)
    np.testing.assert_allclose(c.x[1], times, rtol=2.3e-16, atol=0)
    single = mi.simulate(SYSTEM, integrator, X0, 0.01, 100_000, 100_000, dtype="float32")
    assert single.x[1].dtype == np.float32
    assert abs(float(single.x[1][-1]) - 1000.0) <= 6.2e-5  # one float32 ulp of 1000


def test_a_batch_is_its_members_one_by_one_and_files_hold_the_balances(tmp_path):
    """A batch of three states advances bit for bit like each alone (the impulse to
    round-off: XLA's loop over a batch rounds its last sum differently, 2e-19 here);
    the NetCDF file holds the clock, the work, the dissipation and the impulse with
    their meaning."""
    rng = np.random.default_rng(7)
    q = np.array([1.0, 0.0]) + 0.1 * rng.standard_normal((3, 2))
    p = np.array([0.0, 1.1]) + 0.1 * rng.standard_normal((3, 2))
    integrator = I.StormerVerlet()
    batch = mi.simulate(SYSTEM, integrator, (q, p), 0.01, 300, 100)
    for member in range(3):
        one = mi.simulate(SYSTEM, integrator, (q[member], p[member]), 0.01, 300, 100)
        leaves = list(zip(jax.tree.leaves(batch.x), jax.tree.leaves(one.x), strict=True))
        for u, v in leaves[:-1]:
            np.testing.assert_array_equal(u[member], v)
        np.testing.assert_allclose(leaves[-1][0][member], leaves[-1][1], rtol=0, atol=1e-17)
    path = tmp_path / "forced.nc"
    batch.to_netcdf(path)
    with xr.open_dataset(path) as ds:
        fields = [name for name, _ in SYSTEM.state_fields]
        leaves = jax.tree.leaves(batch.x)
        for name in ("now", "work", "dissipated", "L_impulse", "now_rounding"):
            np.testing.assert_array_equal(ds[name].values, leaves[fields.index(name)])
        assert "dissipated" in ds["dissipated"].attrs["long_name"]
        assert "impulse" in ds["L_impulse"].attrs["long_name"]


def test_transforms_and_the_other_entry_points_see_the_same_system():
    """Found by review: a traced x0 starts at t0 too (jit, grad), ``integrate`` on
    concrete input inside a caller's jit, a forced system built from a traced parameter
    (Kepler's μ), ``compare``'s DOP853 from a state of the system itself, a batch of four
    Euler-top states (not an extended state), R ≥ 0 checked, time transformations
    refused."""
    integrator = I.StormerVerlet()
    eager = mi.integrate(SYSTEM, integrator, X0, 0.01, 50, t0=0.7)
    extended = jax.tree.map(jnp.asarray, SYSTEM.validate_state(X0)[0])
    staged = jax.jit(lambda x: mi.integrate(SYSTEM, integrator, x, 0.01, 50, t0=0.7))(extended)
    for u, v in zip(jax.tree.leaves(eager.x), jax.tree.leaves(staged.x), strict=True):
        np.testing.assert_allclose(v, u, rtol=1e-14, atol=1e-16)
    in_jit = jax.jit(lambda h: mi.integrate(SYSTEM, integrator, X0, h, 50, t0=0.7).x[0][0][-1])(
        0.01
    )
    np.testing.assert_allclose(in_jit, eager.x[0][0][-1], rtol=0, atol=1e-14)

    def final(mu):
        system = S.Forced(S.Kepler(mu), _push, _drag)
        return mi.integrate(system, integrator, X0, 0.01, 50).x[0][0][-1, 0]

    assert np.isfinite(float(jax.jit(jax.grad(final))(1.0)))
    table = D.compare(SYSTEM, [integrator], X0, 0.01, 0.5)
    assert table.error_at_T[0] < 1e-4
    top = S.Forced(S.EulerTop((1.0, 2.0, 3.0)), lambda t, m: 0.1 * m)
    four = [[0.1, 0.2, 0.3], [0.3, 0.1, 0.2], [0.2, 0.3, 0.1], [0.4, 0.5, 0.6]]
    x, batched = top.validate_state(four)
    assert batched and x[0].shape == (4, 3)
    with pytest.raises(InputError, match="positive semi-definite"):
        S.Forced(S.Kepler(), dissipation=lambda x: -jnp.eye(2))
    with pytest.raises(InputError, match="time-transformed"):
        S.Forced(S.TimeTransformed(S.Kepler(), lambda q, p: jnp.sum(q**2)), _push)


def test_a_user_function_of_a_complex_or_integer_value_is_refused():
    """H, V, g, a force, a rigid-body potential, an angular velocity and σ returning a
    complex (read as its real part before, or a raw "grad requires real-valued
    outputs") or an integer value: one InputError naming the function."""
    import jax.numpy as jnp

    import mechint as mi

    S = mi.systems
    kin = lambda p: 0.5 * jnp.sum(p**2)  # noqa: E731
    cases = [
        ("V", lambda: S.SeparableHamiltonian(kin, lambda q: jnp.sum(q**2).astype(complex), dof=1)),
        ("V", lambda: S.SeparableHamiltonian(kin, lambda q: 0, dof=1)),
        ("g", lambda: S.TimeTransformed(S.Kepler(), lambda q, p: jnp.sum(q**2).astype(complex))),
        ("force", lambda: S.Forced(S.Kepler(), lambda t, x: x[1].astype(complex))),
        ("potential", lambda: S.RigidBodies([[1, 1.5, 2]], mass=1.0,
                                            potential=lambda x, R: jnp.sum(x).astype(complex))),
        ("omega", lambda: S.AttitudeKinematics(lambda t: jnp.ones(3, complex))),
    ]  # fmt: skip
    for name, build in cases:
        with pytest.raises(mi.InputError, match="real floating") as caught:
            build()
        assert caught.value.parameter == name
    complex_sigma = lambda x: jnp.sum(x[0] ** 2).astype(complex)  # noqa: E731
    sigma = mi.integrators.ReversibleAdaptive(mi.integrators.StormerVerlet(), complex_sigma)
    with pytest.raises(mi.InputError, match="real floating") as caught:
        mi.simulate(S.Kepler(), sigma, S.Kepler().periapsis_state(0.5), 0.01, 10)
    assert caught.value.parameter == "sigma"
