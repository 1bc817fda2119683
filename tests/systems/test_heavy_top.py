"""The heavy top family on e(3)*: the equations against Π∇H, the integrable cases'
integrals along DOP853, the maps' orders against DOP853 at 1e-13, the Casimirs kept to
round-off over 10⁵ steps, no energy drift over 10⁶ steps, and what Kahan keeps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mechint as mi
from mechint.systems.rigid import haar_so
from tests.cli.helpers import invoke

S, I = mi.systems, mi.integrators
CASES = {
    "heavy": S.HeavyTop((2.0, 1.5, 1.0), (0.0, 0.5, 1.0)),
    "lagrange": S.LagrangeTop((1.0, 1.0, 0.5), (0.0, 0.0, 1.0)),
    "kovalevskaya": S.KovalevskayaTop((2.0, 2.0, 1.0), (1.0, 0.3, 0.0)),
}
EPS = np.finfo(float).eps


def _flat(top, x):
    return np.asarray(top.coordinates(jax.tree.map(jnp.asarray, x)))


def _dop853(top, x0, T, t_eval=None):
    """The reference: DOP853 at rtol 1e-13 on z = (m, γ)."""
    field = jax.jit(lambda z: top.coordinates(top.vector_field(top.from_coordinates(z))))
    sol = solve_ivp(lambda t, z: np.asarray(field(z)), (0.0, T), _flat(top, x0),
                    method="DOP853", rtol=1e-13, atol=1e-15, t_eval=t_eval)  # fmt: skip
    return sol.y.T


@pytest.mark.parametrize("case", list(CASES))
def test_the_field_is_poisson_tensor_times_grad_H_and_every_integral_is_constant(case):
    """ż = Π(z)∇H(z); the Casimirs lie in ker Π; dI/dt = ∇I·ż = 0 for every invariant
    (the Lagrange top's m3, Kovalevskaya's K), at 20 random states."""
    top = CASES[case]
    rng = np.random.default_rng(3)

    @jax.jit
    def defects(z):
        x = top.from_coordinates(z)
        f = top.coordinates(top.vector_field(x))
        Pi = top.poisson_tensor(x)
        grads = jax.jacrev(lambda z: top.invariants(top.from_coordinates(z)))(z)
        gH = jax.grad(lambda z: top.hamiltonian(top.from_coordinates(z)))(z)
        rates = {k: g @ f for k, g in grads.items()}
        kernel = {k: jnp.max(jnp.abs(Pi @ grads[k])) for k in top.casimirs(x)}
        return jnp.max(jnp.abs(Pi @ gH - f)), rates, kernel

    names = set(top.invariants(top.example_state()))
    assert names == {"H", "gamma2", "mgamma"} | {"lagrange": {"m3"}, "kovalevskaya": {"K"}}.get(
        case, set()
    )
    for z in rng.standard_normal((20, 6)):
        field, rates, kernel = defects(jnp.asarray(z))
        assert field < 1e-14
        assert max(abs(float(r)) for r in rates.values()) < 1e-13, rates
        assert max(float(k) for k in kernel.values()) < 1e-14


def test_kovalevskaya_integral_along_dop853():
    """K (derived in the module docstring for this convention) stays constant to 1e-12
    along DOP853 over T = 20, on a chaotic-looking state of the Kovalevskaya top; a top
    off the case (I3 changed by 10 %) moves it by O(1)."""
    top = CASES["kovalevskaya"]
    x0 = (np.array([0.9, -0.4, 1.3]), np.array([0.3, 0.5, -0.8]) / np.sqrt(0.98))
    ts = np.linspace(0, 20.0, 201)
    K = np.array([float(top.invariants(top.from_coordinates(z))["K"])
                  for z in jnp.asarray(_dop853(top, x0, 20.0, ts))])  # fmt: skip
    assert np.max(np.abs(K - K[0])) / abs(K[0]) < 1e-12
    off = S.HeavyTop((2.0, 2.0, 1.1), top.chi)
    z = jnp.asarray(_dop853(off, x0, 20.0, ts))
    K_off = np.array([float(top.extra_integrals(top.from_coordinates(zi))["K"]) for zi in z])
    assert np.max(np.abs(K_off - K_off[0])) / abs(K_off[0]) > 1e-2


def test_euler_case_is_the_euler_top_on_m():
    """χ = 0: the m part of the heavy top's splitting is the Euler top's (to the last
    bits, which the compiler may fuse differently), and both match the exact elliptic
    solution."""
    top = S.HeavyTop((2.0, 1.0, 2.0 / 3.0), (0.0, 0.0, 0.0))
    euler = top.as_euler_top()
    m0, g0 = np.array([0.45, 0.0, 0.89]), np.array([0.0, 0.6, 0.8])
    heavy = mi.simulate(top, I.RigidBodySplitting(4), (m0, g0), 0.05, 200, 200)
    free = mi.simulate(euler, I.RigidBodySplitting(4), m0, 0.05, 200, 200)
    assert np.max(np.abs(np.asarray(heavy.x[0]) - np.asarray(free.x))) < 1e-13  # 4.6e-15
    assert np.max(np.abs(np.asarray(free.x[-1]) - mi.exact.euler_top(euler, m0, 10.0))) < 1e-6


MAPS = [
    (I.RigidBodySplitting(2), 2),
    (I.RigidBodySplitting(4), 4),
    (I.RigidBodySplitting(6), 6),
    (I.RigidBodySplitting(8), 8),
    (I.DiscreteLagrangian(), 2),
    (I.Kahan(), 2),
    (I.ImplicitMidpoint(), 2),
]


@pytest.fixture(scope="module")
def reference():
    top = CASES["heavy"]
    x0 = top.example_state()
    return top, x0, _dop853(top, x0, 2.0)[-1]


@pytest.mark.parametrize(("integrator", "order"), MAPS, ids=[f"{i.name}-{p}" for i, p in MAPS])
def test_observed_order_against_dop853(integrator, order, reference):
    top, x0, exact = reference
    T = 2.0
    ns = np.array([5, 10, 20, 40]) if order < 8 else np.array([4, 6, 8, 12])
    errors = []
    for n in ns:
        traj = mi.simulate(top, integrator, x0, T / n, int(n), int(n))
        errors.append(np.max(np.abs(_flat(top, jax.tree.map(lambda a: a[-1], traj.x)) - exact)))
    fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-12)
    assert fit.used.sum() >= 3 and abs(fit.exponent - order) < 0.3, (fit.exponent, errors)


SPLIT = [I.RigidBodySplitting(p) for p in (2, 4, 6, 8)] + [I.DiscreteLagrangian()]


@pytest.mark.parametrize("case", ["heavy", "lagrange"])
@pytest.mark.parametrize("integrator", SPLIT, ids=[f"{i.name}-{getattr(i, 'order', 2)}"
                                                   for i in SPLIT])  # fmt: skip
def test_casimirs_kept_to_round_off_over_1e5_steps_and_poisson(case, integrator):
    """|γ|², m·γ (and the Lagrange top's m3) kept, as declared, over 10⁵ steps: to 1e-13
    relative by Strang and the discrete Lagrangian map.  Each rotation rounds them by
    about an ulp and no bias adds up (the quaternion rotations), so the error is a random
    walk over the rotations: within 1.5 eps √(10⁵ × rotations a step) for the
    compositions (order 4: 25 rotations a step, 1.9e-13 measured; order 6: 45, 4.1e-13;
    order 8: 85, 3.8e-13).  H is not kept; the one-step Poisson defect is at round-off."""
    top = CASES[case]
    x0 = top.example_state()
    steps = 100_000
    traj = mi.simulate(top, integrator, x0, 0.05, steps, 2000)
    assert not traj.failed.any()
    kept = mi.diagnostics.preserved_errors(traj)
    assert set(kept) == {"gamma2", "mgamma"} | ({"m3"} if case == "lagrange" else set())
    stages = {2: 1, 4: 5, 6: 9, 8: 17}.get(getattr(integrator, "order", 2), 1)
    tol = max(1e-13, 1.5 * EPS * np.sqrt(steps * 5 * stages))
    for name, err in kept.items():
        assert np.max(err) < tol, (name, np.max(err))
    assert np.max(mi.diagnostics.invariant_errors(top, traj)["H"]) > 1e-13
    assert mi.diagnostics.poisson_defect(top, integrator, x0, 0.05) <= 1e-13


@pytest.mark.parametrize("integrator", [I.RigidBodySplitting(2), I.DiscreteLagrangian()],
                         ids=["splitting", "discrete-lagrangian"])  # fmt: skip
def test_no_energy_drift_over_1e6_steps(integrator):
    """The energy error stays in its band: the straight-line trend of |ΔH|/|H| over 10⁶
    steps (T = 10⁵) is less than 5 % of the band (its largest value)."""
    top = CASES["heavy"]
    # in calls of 64 saves: the compiled program of the order runs above (one save, in a
    # 64-save chunk) serves this run too; the states are the same in any chunks
    traj = mi.simulate(top, integrator, top.example_state(), 0.1, 1_000_000, 1000,
                       chunk_steps=64_000)  # fmt: skip
    H = mi.diagnostics.drift(top, traj)["H"]
    trend, band = float(H.trend), float(H.band)
    assert band > 1e-6 and abs(trend) < 0.05 * band, (trend, band)


def test_lagrange_m3_and_what_kahan_keeps():
    """m3 is linear with ṁ3 ≡ 0: Kahan and midpoint keep it bit for bit; the splitting
    and the discrete Lagrangian map to round-off (declared).  Kahan keeps neither H nor
    the Casimirs on e(3)* (O(h²), measured and not declared); midpoint keeps H and both
    Casimirs (quadratic)."""
    top = CASES["lagrange"]
    x0 = top.example_state()
    for integrator in (I.Kahan(), I.ImplicitMidpoint()):
        traj = mi.simulate(top, integrator, x0, 0.05, 2000, 2000)
        assert np.array_equal(np.asarray(traj.x[0][:, 2]), np.full(2, x0[0][2]))
        assert "m3" in integrator.preserved(top, x0, 0.05)
    kahan = mi.simulate(top, I.Kahan(), x0, 0.05, 2000, 2000)
    err = mi.diagnostics.invariant_errors(top, kahan)
    assert min(np.max(err[k]) for k in ("H", "gamma2", "mgamma")) > 1e-6
    assert set(I.Kahan().preserved(top, x0, 0.05)) == {"m3"}
    assert set(I.ImplicitMidpoint().preserved(top, x0, 0.05)) == {"H", "gamma2", "mgamma", "m3"}


def test_discrete_lagrangian_carries_the_attitude():
    """With g0, γ_k = g_kᵀ e_z at every saved step to round-off, and g_k stays in SO(3)."""
    top = CASES["heavy"]
    rng = np.random.default_rng(0)
    g0 = haar_so(rng, 1, 3)[0]
    m0 = np.array([0.45, -0.3, 0.89])
    traj = mi.simulate(top, I.DiscreteLagrangian(), (m0, g0[2]), 0.05, 2000, 100,
                       orientation=g0)  # fmt: skip
    gamma, g = np.asarray(traj.x[1]), np.asarray(traj.orientation)
    assert np.max(np.abs(gamma - g[:, 2, :])) < 1e-13
    assert np.max(np.abs(np.swapaxes(g, 1, 2) @ g - np.eye(3))) < 1e-14


def test_flows_are_exact_and_refuse_what_they_cannot_advance():
    """The kick and the symmetric free flow: d/dt at t = 0 is Π∇ of their piece, and each
    is a one-parameter group; the symmetric flow refuses a top that is not symmetric."""
    lag = CASES["lagrange"]
    x = jax.tree.map(jnp.asarray, (np.array([0.3, -0.7, 0.5]), np.array([0.2, 0.4, 0.9])))
    Pi = lag.poisson_tensor(x)
    I1, I3 = lag.inertia[0], lag.inertia[2]
    pieces = {
        I.GravityKick(): jnp.concatenate([jnp.zeros(3), lag.chi]),
        I.SymmetricFreeFlow(): jnp.concatenate([x[0] / lag.inertia, jnp.zeros(3)]),
    }
    for flow, grad in pieces.items():
        velocity = jax.jacfwd(lambda t, f=flow: lag.coordinates(f.step(lag, x, t)[0]))(0.0)
        assert np.max(np.abs(velocity - Pi @ grad)) < 1e-15
        twice = flow.step(lag, flow.step(lag, x, 0.4)[0], 0.6)[0]
        once = flow.step(lag, x, 1.0)[0]
        assert np.max(np.abs(lag.coordinates(twice) - lag.coordinates(once))) < 1e-14
    assert I1 != I3
    why = I.SymmetricFreeFlow().cannot_serve(CASES["heavy"])
    assert why is not None and "symmetric" in why
    assert I.DiscreteLagrangian().cannot_serve(S.HeavyTop((1.0, 1.0, 3.0))) is not None


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (S.LagrangeTop, {"inertia": (1.0, 1.1, 0.5)}, "inertia: the Lagrange top needs I1 = I2"),
        (S.LagrangeTop, {"chi": (0.1, 0.0, 1.0)}, r"chi: must be \(0, 0, ℓ\)"),
        (S.KovalevskayaTop, {"inertia": (2.0, 2.0, 1.5)}, "I1 = I2 = 2 I3"),
        (S.KovalevskayaTop, {"chi": (1.0, 0.0, 0.2)}, r"chi: must be \(χ1, χ2, 0\)"),
        (S.HeavyTop, {"inertia": (1.0, -1.0, 1.0)}, "inertia: every entry must be > 0"),
        (S.HeavyTop, {"chi": (1.0, 0.0)}, "chi: expected 3 numbers"),
    ],
)
def test_bad_parameters_are_one_clear_error(cls, kwargs, match):
    with pytest.raises(mi.InputError, match=match):
        cls(**kwargs)


def test_cli_runs_checks_and_writes_the_heavy_tops(tmp_path, capsys):
    """``mechint run`` writes (m, γ) and every integral; ``--orientation`` gives γ0 = g0ᵀe_z;
    ``check`` lists the Lagrange top's m3; a bad case is one line and exit 2."""
    out = tmp_path / "lag.nc"
    args = ["run", "--system", "lagrange-top", "--inertia", "1,1,0.5", "--chi", "0,0,1",
            "--m0", "0.3,0.2,2", "--gamma0", "0,0.6,0.8", "--integrator",
            "rigid-body-splitting", "--order", "4", "--h", "0.01", "--steps", "1000",
            "--save-every", "100", "--out", str(out)]  # fmt: skip
    code, stdout, err = invoke(args, capsys)
    assert code == 0, err
    assert "max|Δm3|/|m3|" in stdout
    import xarray as xr

    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert {"m", "gamma", "H", "gamma2", "mgamma", "m3"} <= set(ds.variables)
        assert ds["gamma"].shape == (11, 3)
    code, stdout, err = invoke(["check", "--system", "lagrange-top", "--inertia", "1,1,0.5",
                                "--chi", "0,0,1", "--m0", "0.3,0.2,2", "--gamma0", "0,0.6,0.8",
                                "--integrator", "discrete-lagrangian", "--h", "0.05"],
                               capsys)  # fmt: skip
    assert code == 0, err
    rows = {line.split("  ")[0]: line for line in stdout.splitlines()}
    assert "exact" in rows["integral m3"] and "exact" in rows["Casimir gamma2"]
    assert "exact" in rows["Poisson"]
    code, _, err = invoke(["run", "--system", "heavy-top", "--inertia", "2,1.5,1", "--chi",
                           "0,0,1", "--m0", "1,0,0", "--orientation", "identity",
                           "--integrator", "discrete-lagrangian", "--h", "0.01", "--steps",
                           "10", "--out", str(tmp_path / "o.nc")], capsys)  # fmt: skip
    assert code == 0, err
    code, _, err = invoke(["run", "--system", "kovalevskaya-top", "--inertia", "2,2,1.5",
                           "--chi", "1,0,0", "--m0", "1,0,0", "--gamma0", "0,0,1",
                           "--integrator", "midpoint", "--h", "0.01", "--steps", "10",
                           "--out", str(tmp_path / "k.nc")], capsys)  # fmt: skip
    assert code == 2 and "--inertia" in err and len(err.strip().splitlines()) == 1


def test_lagrange_and_kovalevskaya_numbers_point_to_their_systems():
    """Issue 36: a HeavyTop whose numbers are the Lagrange case used the general split
    (m3 drifts) without a word; it warns, naming LagrangeTop (or KovalevskayaTop), and
    the axes to relabel when the symmetry axis is not the third.  Any other top, and the
    Euler top (χ = 0), is quiet."""
    import warnings

    cases = {((1, 1, 0.5), (0, 0, 1)): "LagrangeTop", ((0.5, 1, 1), (2, 0, 0)): "axis 1",
             ((2, 2, 1), (1, 0.3, 0)): "KovalevskayaTop"}  # fmt: skip
    for (inertia, chi), words in cases.items():
        with pytest.warns(mi.SpecialCaseWarning, match=words):
            mi.systems.HeavyTop(inertia, chi)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mi.systems.HeavyTop((1, 2, 3), (0, 0, 1))
        mi.systems.HeavyTop((1, 1, 0.5), (0, 0, 0))
        mi.systems.HeavyTop((1, 1, 0.5), (0.1, 0, 1))
