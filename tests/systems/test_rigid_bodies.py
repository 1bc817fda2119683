"""Rigid bodies in a user's potential: the equations, the bracket, the torque formula,
the built-in potentials against plain formulas, and every refusal of bad input."""

import itertools
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.diagnostics.comparison import dop853_path
from mechint.integrators import LieGroupVariational, RigidBodySplitting
from mechint.lie import so3
from mechint.systems import RigidBodies, potentials
from mechint.systems.rigid import haar_so
from tests.systems import rigid_bodies_cases as cases


def _jnp(x):
    return tuple(jnp.asarray(a) for a in x)


@pytest.mark.parametrize("name", ["pair", "heavy"])
def test_vector_field_is_the_bracket_times_grad_H(name):
    system = getattr(cases, name)()
    x = _jnp(cases.pair_state() if name == "pair" else system.example_state())
    z = system.coordinates(x)
    grad = jax.grad(lambda z: system.hamiltonian(system.from_coordinates(z)))(z)
    lhs = system.poisson_tensor(x) @ grad
    rhs = system.coordinates(system.vector_field(x))
    assert np.max(np.abs(lhs - rhs)) < 1e-14 * max(1.0, float(np.max(np.abs(rhs))))
    B = system.poisson_tensor(x)
    assert np.array_equal(B, -B.T)
    # RᵀR is a Casimir: its gradient is in the kernel of the bracket
    casimir = jax.jacfwd(lambda z: jnp.swapaxes(R := system.from_coordinates(z)[-2], -1, -2) @ R)
    C = casimir(z).reshape(-1, z.shape[-1])
    assert np.max(np.abs(C @ B)) < 1e-14


def test_the_torque_of_fixed_point_gravity_is_the_heavy_top_torque():
    """M = vee(GᵀR − RᵀG) for V = e_z·Rχ is γ × χ: the heavy top's equations."""
    system, top = cases.heavy(), cases.heavy_top()
    R, Pi = system.example_state()
    dR, dPi = system.vector_field(_jnp((R, Pi)))
    gamma = R[0].T @ np.array([0.0, 0.0, 1.0])
    dm, dgamma = top.vector_field((jnp.asarray(Pi[0]), jnp.asarray(gamma)))
    assert np.max(np.abs(dPi[0] - dm)) < 1e-15
    assert np.max(np.abs(dR[0].T @ np.array([0.0, 0.0, 1.0]) - dgamma)) < 1e-15
    assert abs(system.hamiltonian(_jnp((R, Pi))) - top.hamiltonian((Pi[0], gamma))) < 1e-15


def test_an_inertia_tensor_is_the_same_body_as_its_principal_moments():
    """A tensor A diag(I) Aᵀ with the state (R, Π) moves as the principal body with
    (R A, AᵀΠ): the same energy and the same step of both maps, to round-off."""
    A = haar_so(np.random.default_rng(3), 1, 3)[0]
    I = np.array([1.0, 1.7, 2.2])
    tilted = RigidBodies([A @ np.diag(I) @ A.T], potential=cases._heavy)
    straight = RigidBodies([I], potential=lambda R: cases._heavy(R @ A.T))
    R, Pi = straight.example_state()
    state = (R @ A.T, np.einsum("ij,nj->ni", A, Pi))
    assert np.allclose(np.asarray(tilted.inertia), np.sort(I), rtol=1e-14)
    assert abs(tilted.hamiltonian(_jnp(state)) - straight.hamiltonian(_jnp((R, Pi)))) < 1e-14
    for integrator in (mi.integrators.LieGroupVariational(), mi.integrators.RigidBodySplitting()):
        (Rt, Pt), _ = integrator.step(tilted, _jnp(state), 0.1)
        (Rs, Ps), _ = integrator.step(straight, _jnp((R, Pi)), 0.1)
        assert np.max(np.abs(Rt @ A - Rs)) < 1e-14
        assert np.max(np.abs(np.einsum("ji,nj->ni", A, Pt) - Ps)) < 1e-14


def test_momenta_are_invariants_only_when_declared():
    system = cases.pair()
    names = set(system.invariants(_jnp(cases.pair_state())))
    assert names == {"H", "Px", "Py", "Pz", "Lx", "Ly", "Lz", "trRtR"}
    assert set(cases.heavy().invariants(_jnp(cases.heavy().example_state()))) == {"H", "trRtR"}
    free = cases.free()  # V = 0 has both symmetries
    assert {"Lx", "Ly", "Lz"} <= set(free.invariants(_jnp(free.example_state())))


# -- the built-in potentials against plain formulas ---------------------------------------------
def _random_bodies(n, seed=0):
    rng = np.random.default_rng(seed)
    x = 3.0 * rng.standard_normal((n, 3))
    return jnp.asarray(x), jnp.asarray(haar_so(rng, n, 3))


def test_pair_potentials_equal_a_loop_over_the_pairs_of_sites(monkeypatch):
    """Each pair potential against a loop over the pairs; then summed in blocks of rows
    (as a large one is: ``potentials._PAIRS_AT_ONCE``, here 20 of the 81 entries, blocks
    of two rows and one of padding), the same values and gradients to round-off."""
    x, R = _random_bodies(3)
    sites = np.array([[0.0, 0.0, 0.1], [0.3, 0.2, 0.0], [-0.2, 0.1, 0.0]])
    eps, sig, q = np.array([0.5, 0.0, 0.2]), np.array([1.0, 0.0, 0.8]), np.array([-0.8, 0.4, 0.4])
    P = np.asarray(x)[:, None, :] + np.einsum("nij,sj->nsi", np.asarray(R), sites)
    lj = cl = gr = 0.0
    for (a, i), (b, j) in itertools.combinations(itertools.product(range(3), range(3)), 2):
        if a == b:
            continue
        r = np.linalg.norm(P[a, i] - P[b, j])
        e, s = np.sqrt(eps[i] * eps[j]), 0.5 * (sig[i] + sig[j])
        lj += 4 * e * ((s / r) ** 12 - (s / r) ** 6)
        cl += 2.0 * q[i] * q[j] / r
        gr -= 0.5 * abs(q[i] * q[j]) / r
    assert np.isclose(potentials.lennard_jones(x, R, sites, eps, sig), lj, rtol=1e-13)
    assert np.isclose(potentials.coulomb(x, R, sites, q, k=2.0), cl, rtol=1e-13)
    m = np.abs(q)
    assert np.isclose(potentials.mutual_gravity(x, R, sites, m, G=0.5), gr, rtol=1e-13)
    assert np.allclose(potentials.site_positions(x, R, sites), P, rtol=0, atol=1e-15)

    def all_three(x, R):
        return (potentials.lennard_jones(x, R, sites, eps, sig)
                + potentials.coulomb(x, R, sites, q, k=2.0)
                + potentials.mutual_gravity(x, R, sites, m, G=0.5))  # fmt: skip

    whole = jax.value_and_grad(all_three, argnums=(0, 1))(x, R)
    monkeypatch.setattr(potentials, "_PAIRS_AT_ONCE", 20)
    blocked = jax.value_and_grad(all_three, argnums=(0, 1))(x, R)
    assert np.isclose(blocked[0], lj + cl + gr, rtol=1e-13)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(blocked), strict=True):
        assert np.max(np.abs(a - b)) <= 1e-13 * np.max(np.abs(a)), (a, b)


def _plain_pairs(x, R, sites, eps, sig, q):
    """LJ + Coulomb + gravity over the pairs of different bodies, written plainly (every
    (site, site) entry, masked): what JAX's own reverse mode differentiates."""
    P = x[:, None, :] + jnp.einsum("nij,sj->nsi", R, sites)
    n, s = P.shape[:2]
    flat, body = P.reshape(-1, 3), np.repeat(np.arange(n), s)
    e, g, c = (jnp.tile(jnp.asarray(a), n) for a in (eps, sig, q))
    mask = body[:, None] < body[None, :]
    d = flat[:, None, :] - flat[None, :, :]
    r2 = jnp.where(mask, jnp.sum(d * d, axis=-1), 1.0)
    both = e[:, None] * e[None, :]
    ok = both > 0
    s6 = (0.5 * (g[:, None] + g[None, :])) ** 6 / r2**3
    lj = 4.0 * jnp.where(ok, jnp.sqrt(jnp.where(ok, both, 1.0)), 0.0) * (s6 * s6 - s6)
    qq = c[:, None] * c[None, :]
    return jnp.sum(jnp.where(mask, lj + 2.0 * qq / jnp.sqrt(r2) - 0.5 * qq**2 / jnp.sqrt(r2), 0.0))


@pytest.mark.parametrize("blocked", [False, True])
def test_pair_sums_derivatives_equal_reverse_mode_through_the_plain_sum(monkeypatch, blocked):
    """The pair sums' own derivative rule (forces as matrix products, the values' from the
    energy's derivatives) against JAX's reverse mode through the plain masked sum: the
    gradient by positions, attitudes and every per-site value (traced: no site left out),
    and the Hessian by the positions (forward over the rule), at once and in blocks of
    rows; the sites left out where the values vanish (ε and q known) change nothing."""
    x, R = _random_bodies(4, seed=3)
    sites = jnp.array([[0.0, 0.0, 0.1], [0.3, 0.2, 0.0], [-0.2, 0.1, 0.0]])
    eps, sig = jnp.array([0.5, 0.0, 0.2]), jnp.array([1.0, 0.7, 0.8])
    q = jnp.array([0.0, 0.4, -0.3])
    if blocked:
        monkeypatch.setattr(potentials, "_PAIRS_AT_ONCE", 50)  # 144 entries: blocks of 4 rows

    def ours(x, R, eps, sig, q):
        return (potentials.lennard_jones(x, R, sites, eps, sig)
                + potentials.coulomb(x, R, sites, q, k=2.0)
                + potentials.mutual_gravity(x, R, sites, q**2, G=0.5))  # fmt: skip

    def theirs(x, R, eps, sig, q):
        return _plain_pairs(x, R, sites, eps, sig, q)

    def derivatives(f):  # the value, gradient, Hessian by x and ∂²E/∂x∂ε: one program
        return jax.jit(lambda *a: (jax.value_and_grad(f, argnums=(0, 1, 2, 3, 4))(*a),
                                   jax.hessian(f)(*a),
                                   jax.jacfwd(jax.grad(f, argnums=2), argnums=0)(*a)))  # fmt: skip

    args = (x, R, eps, sig, q)
    (a, Ha, Ga), (b, Hb, Gb) = derivatives(ours)(*args), derivatives(theirs)(*args)
    assert abs(a[0] - b[0]) <= 1e-14 * abs(b[0])
    for u, v in zip(a[1], b[1], strict=True):
        assert np.max(np.abs(u - v)) <= 1e-13 * np.max(np.abs(v)), (u, v)
    assert np.max(np.abs(Ha - Hb)) <= 1e-12 * np.max(np.abs(Hb))  # through the rule
    assert np.max(np.abs(Ga - Gb)) <= 1e-12 * np.max(np.abs(Gb))
    # the sites where ε (LJ) or q (Coulomb, gravity) vanish left out: known values
    known = jax.jit(jax.value_and_grad(lambda x: ours(x, R, *map(np.asarray, (eps, sig, q)))))
    value, F = known(x)
    assert abs(value - a[0]) <= 1e-14 * abs(a[0])
    assert np.max(np.abs(F - a[1][0])) <= 1e-13 * np.max(np.abs(a[1][0]))


def test_pair_forces_cancel_to_round_off_far_from_the_origin():
    """The pair forces are formed on the sites' differences: 100 waters 10⁴ units from the
    origin feel no net force beyond round-off of the largest (as near the origin), where
    products with the absolute positions would leave ~1e-11."""
    rng = np.random.default_rng(0)
    sites = np.array([[0.0, 0.0, 0.0], [0.757, 0.586, 0.0], [-0.757, 0.586, 0.0]])
    q, eps = np.array([-0.834, 0.417, 0.417]), np.array([0.15, 0.0, 0.0])
    R = jnp.asarray(haar_so(rng, 100, 3))

    @jax.jit
    def forces(x):
        def V(x):
            return potentials.coulomb(x, R, sites, q, 332.0) + potentials.lennard_jones(
                x, R, sites, eps, 3.15
            )

        return jax.grad(V)(x)

    spread = 20 * rng.standard_normal((100, 3))
    for origin in (0.0, 1e4):
        F = forces(jnp.asarray(origin + spread))
        assert np.max(np.abs(np.sum(F, axis=0))) < 1e-13 * np.max(np.abs(F)), origin


def test_gravity_gradient_torque_is_maccullaghs():
    """The torque of V₂ is 3μ/r³ u × 𝕁u, u = Rᵀx/r (the primary seen from the body)."""
    x, R = _random_bodies(2, seed=5)
    inertia = np.array([[1.0, 2.0, 2.5], [0.7, 0.9, 1.4]])
    mu = 3.0
    system = RigidBodies(
        inertia,
        mass=[1.0, 2.0],
        potential=lambda x, R: potentials.gravity_gradient(x, R, mu, inertia),
    )
    _, M = system.forces(x, R)
    r = np.linalg.norm(np.asarray(x), axis=-1)
    u = np.einsum("nji,nj->ni", np.asarray(R), np.asarray(x)) / r[:, None]
    expected = 3 * mu / r[:, None] ** 3 * np.cross(u, inertia * u)
    assert np.max(np.abs(M - expected)) < 1e-14 * np.max(np.abs(expected))
    # and the total (orbit + attitude) torque about the primary vanishes: L is kept
    force, _ = system.forces(x, R)
    total = np.sum(np.cross(np.asarray(x), force), 0) + np.einsum("nij,nj->i", np.asarray(R), M)
    assert np.max(np.abs(total)) < 1e-14


def test_point_mass_and_uniform_gravity():
    x, R = _random_bodies(2, seed=7)
    r = np.linalg.norm(np.asarray(x), axis=-1)
    assert np.isclose(
        potentials.point_mass(x, 2.0, jnp.array([1.0, 3.0])), -2.0 * (1 / r[0] + 3 / r[1])
    )
    assert np.isclose(potentials.uniform_gravity(x, 9.8), 9.8 * np.sum(np.asarray(x)[:, 2]))
    chi = np.array([0.0, 0.0, 0.5])
    assert np.isclose(potentials.fixed_point_gravity(R, chi), np.sum(np.asarray(R)[:, 2, :] @ chi))


# -- bad input: one InputError naming it ---------------------------------------------------
def _check(match, fn):
    with pytest.raises(mi.InputError, match=match):
        fn()


def test_bad_inertia_mass_and_flags_are_refused():
    _check("inertia.*> 0", lambda: RigidBodies([[1.0, -1.0, 1.0]]))
    _check("inertia.*triangle inequality", lambda: RigidBodies([[1.0, 1.0, 3.0]]))
    _check("inertia.*not symmetric", lambda: RigidBodies([[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]]))
    _check("inertia.*shape", lambda: RigidBodies([[1.0, 2.0]]))
    _check("mass.*one mass per body", lambda: RigidBodies([[1, 1, 1]] * 2, mass=[1, 2, 3]))
    # one mass for all, as a number or as the command line's one-entry list
    for one in (2.0, [2.0]):
        assert np.array_equal(np.asarray(RigidBodies([[1, 1, 1]] * 2, mass=one).mass), [2.0, 2.0])
    _check("mass.*> 0", lambda: RigidBodies([[1, 1, 1]], mass=0.0))
    _check(
        "translation_invariant.*fixed", lambda: RigidBodies([[1, 1, 1]], translation_invariant=True)
    )
    # a planar body (I3 = I1 + I2) is physical, and rounding of the equality is removed
    planar = RigidBodies([[1.0, 2.0, 3.0 + 1e-15]])
    assert float(planar.inertia[0, 2]) == 3.0


def test_bad_potentials_are_refused_at_construction():
    I = [[1.0, 1.5, 2.0]]
    _check("potential.*function", lambda: RigidBodies(I, potential=cast(Any, 3.0)))
    _check("potential.*scalar", lambda: RigidBodies(I, potential=lambda R: R[:, 0, 0]))
    _check("potential.*could not be evaluated", lambda: RigidBodies(I, potential=lambda x, R: 0.0))
    _check(
        "potential.*not finite", lambda: RigidBodies(I, potential=lambda R: jnp.log(R[0, 0, 0] - 5))
    )
    _check(
        "translation_invariant.*not translation invariant",
        lambda: RigidBodies(
            I * 2,
            mass=1.0,
            potential=lambda x, R: jnp.sum(x[:, 0] ** 2),
            translation_invariant=True,
        ),
    )
    _check(
        "rotation_invariant.*not rotation invariant",
        lambda: RigidBodies(I, potential=cases._heavy, rotation_invariant=True),
    )

    # a spring between two bodies and a wall at |x| = 50, which the lattice of spacing 3
    # does not reach: seen with the bodies spread 30 times (before: accepted, then P
    # drifted by 19.9); the spring alone keeps both declarations
    def spring(x, R):
        return 0.5 * jnp.sum((x[0] - x[1]) ** 2)

    def walled(x, R):
        r = jnp.sqrt(jnp.sum(x * x, -1))
        return spring(x, R) + jnp.sum(jnp.where(r > 50.0, (r - 50.0) ** 2, 0.0))

    both = dict(translation_invariant=True, rotation_invariant=True)
    _check("translation_invariant.*spread 30 times",
           lambda: RigidBodies(I * 2, mass=1.0, potential=walled, **both))  # fmt: skip
    assert {"Px", "Lx"} <= set(
        RigidBodies(I * 2, mass=1.0, potential=spring, **both).quadratic_invariants
    )


def test_bad_states_are_refused_naming_the_field():
    system = cases.pair()
    x, p, R, Pi = cases.pair_state()
    bent = R.copy()
    bent[0, 0, 0] += 1e-6
    _check(r"x0 \(R\).*not a set of rotations", lambda: system.validate_state((x, p, bent, Pi)))
    _check(r"x0 \(R\).*not a set of rotations", lambda: system.validate_state((x, p, -R, Pi)))
    _check(r"x0 \(Pi\).*N = 2", lambda: system.validate_state((x, p, R, Pi[:1])))
    _check(r"x0 \(x\).*shape", lambda: system.validate_state((x[:1], p, R, Pi)))
    _check(r"x0.*tuple \(x, p, R, Pi\)", lambda: system.validate_state((R, Pi)))
    _check(r"x0 \(p\).*finite", lambda: system.validate_state((x, p * np.nan, R, Pi)))
    # round-off in R is projected away, never more
    near = R + 1e-13
    out, batched = system.validate_state((x, p, near, Pi))
    assert not batched
    assert np.max(np.abs(np.swapaxes(out[2], -1, -2) @ out[2] - np.eye(3))) < 1e-15
    with pytest.raises(mi.InputError, match="x0"):
        mi.simulate(system, mi.integrators.LieGroupVariational(), (x, p, bent, Pi), 0.1, 10)
    # a float32 rotation carries its rounding (about 1e-7): accepted as float32 (64 ulps),
    # projected; the same numbers given as float64, or float32 bent by 1e-4, are refused
    R32 = np.asarray(R, np.float32)
    assert np.max(np.abs(np.swapaxes(R32, -1, -2) @ R32.astype(float) - np.eye(3))) > 1e-8
    out, _ = system.validate_state((x, p, R32, Pi))
    assert np.max(np.abs(np.swapaxes(out[2], -1, -2) @ out[2] - np.eye(3))) < 1e-15
    _check(r"x0 \(R\).*not a set of rotations",
           lambda: system.validate_state((x, p, R32.astype(float), Pi)))  # fmt: skip
    _check(r"x0 \(R\).*not a set of rotations",
           lambda: system.validate_state((x, p, R32 * np.float32(1 + 1e-4), Pi)))  # fmt: skip


def test_so3_hat_is_the_convention_of_the_bracket():
    """Ṙ = R hat(Ω): the body frame (a spin about body e3 turns the first column toward
    the second)."""
    system = cases.free()
    R = jnp.eye(3)[None]
    Pi = jnp.array([[0.0, 0.0, 2.0]])
    dR, _ = system.vector_field((R, Pi))
    assert np.allclose(dR[0], so3.hat(jnp.array([0.0, 0.0, 1.0])))


# -- a time-dependent potential V(t, x, R) on the extended phase space -------------------------
_CHI = np.array([0.1, 0.5, 1.0])


def _shaken(t, R, prm):
    """The heavy top on a vertically shaken pivot: gravity 1 + a sin(ω t)."""
    return (1.0 + prm["a"] * jnp.sin(prm["w"] * t)) * potentials.fixed_point_gravity(R, _CHI)


def test_time_dependent_potential_orders_structure_and_the_extended_energy(tmp_path):
    """The shaken heavy top, V(t, R), from t0 = 0.3: the state (R, Π) is extended with
    t = t0 and e = 0; against DOP853 on the extended flow the Lie group variational map
    has order 2 (measured 2.00; the rigid-body splitting too) and the order-4 splitting
    4 (4.00), the time advancing with the drifts; the LGVI is Poisson on the
    extended bracket to round-off (symplectic in (R, Π, t, e)) and keeps K = H + e
    within a band over 10⁴ steps while e moves by O(1)."""
    top = RigidBodies([[2.0, 1.5, 1.0]], potential=_shaken, params={"a": 0.4, "w": 3.0},
                      time_dependent=True)  # fmt: skip
    assert [f for f, _ in top.state_fields] == ["R", "Pi", "now", "e"]
    x0 = top.example_state()[:2]
    start = top.starting_state(top.validate_state(x0)[0], 0.3)
    assert float(start[2]) == 0.3 and float(start[3]) == 0.0
    T, ns = 2.0, np.array([20, 40, 80, 160])
    ref = jax.tree.map(lambda a: np.asarray(a)[-1], dop853_path(top, start, np.array([0.0, T])))
    for integrator, order in ((LieGroupVariational(), 2), (RigidBodySplitting(4), 4)):
        errors = []
        for n in ns:
            sol = mi.simulate(top, integrator, x0, T / n, int(n), int(n), t0=0.3)
            last = jax.tree.map(lambda a: np.asarray(a)[-1], sol.x)
            assert abs(float(last[2]) - (0.3 + T)) < 1e-13
            pairs = zip(jax.tree.leaves(last), jax.tree.leaves(ref), strict=True)
            errors.append(max(np.max(np.abs(a - b)) for a, b in pairs))
        fit = mi.diagnostics.fit_power_law(T / ns, errors, floor=1e-13)
        assert abs(fit.exponent - order) < 0.1, (integrator, fit.exponent, errors)
    rows = {r.name: r for r in mi.diagnostics.check(top, LieGroupVariational(), start, 0.05)}
    for name in ("Poisson", "Casimir trRtR", "reversibility"):
        assert rows[name].verdict == "exact (round-off)", (name, rows[name])
    # in calls of 64 saves: the order runs' program serves it
    long = mi.simulate(top, LieGroupVariational(), x0, 0.02, 10_000, 100, t0=0.3,
                       chunk_steps=6400)  # fmt: skip
    K, e = np.asarray(long.invariants()["H"]), np.asarray(long.x[3])
    assert np.ptp(e) > 1.0 and np.max(np.abs(K - K[0])) < 0.02 * np.ptp(e)
    assert np.max(top.orthogonality(long.x)) < 1e-14
    long.to_csv(tmp_path / "top.csv")  # the state's time is "now": one "t" column, the run's
    names = (tmp_path / "top.csv").read_text().splitlines()[0].split(",")
    assert len(set(names)) == len(names) and names[0] == "t" and "now" in names


def test_time_dependent_potential_errors_name_the_fix():
    with pytest.raises(mi.InputError, match="no potential"):
        RigidBodies([[1.0, 1.5, 2.0]], time_dependent=True)
    with pytest.raises(mi.InputError, match=r"V\(t, x, R\)"):
        RigidBodies([[1.0, 1.5, 2.0]], potential=lambda R: jnp.sum(R), time_dependent=True)
    top = RigidBodies([[2.0, 1.5, 1.0]], potential=_shaken, params={"a": 0.4, "w": 3.0},
                      time_dependent=True)  # fmt: skip
    R, Pi, _, e = top.example_state()
    with pytest.raises(mi.InputError, match=r"\(now\)"):
        top.validate_state((R, Pi, np.zeros(2), e))
    # float32 would let the time drift (10⁵ steps of 0.01: t = 1000.665): refused first
    lgvi = LieGroupVariational()
    for run in (mi.simulate, mi.integrate):
        with pytest.raises(mi.InputError, match=r"dtype: float32 is refused.*drifts"):
            run(top, lgvi, (R, Pi), 0.01, 10, dtype="float32")
    own = top.starting_state(top.validate_state((R, Pi, 5.0, 1.0))[0], 0.3)
    assert float(own[2]) == 5.0 and float(own[3]) == 1.0


def test_the_run_figure_of_rigid_bodies_has_a_panel_for_each_kind_of_quantity():
    """``--plot`` of RigidBodies: the centres' paths, the attitude as yaw/pitch/roll, the
    body angular velocity, each with its legend, and the invariants' errors."""
    from mechint.plot import trajectory_figure

    system = cases.pair()
    traj = mi.simulate(system, LieGroupVariational(), cases.pair_state(), 0.05, 20, 1)
    axes = trajectory_figure(traj).axes
    titles = [ax.get_title() for ax in axes]
    assert titles[0].startswith("centres") and titles[3] == "invariants"
    assert titles[1].startswith("attitude: yaw, pitch, roll") and "angular velocity" in titles[2]
    legends = [ax.get_legend() for ax in axes[:3]]
    assert all(legend is not None for legend in legends)
    labels = [t.get_text() for t in cast(Any, legends[1]).get_texts()]
    assert labels[:3] == ["0: yaw", "0: pitch", "0: roll"] and len(labels) == 6
