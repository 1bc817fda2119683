"""``systems.NBody``: its forces against −∇V by jax.grad and against a loop over pairs,
test particles as the limit of small masses, the invariants, the elements (both frames,
bound and unbound) and back, the outer solar system, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.systems.nbody import outer_solar_system

NBody = mi.systems.NBody


def _pairwise(masses, G, q):
    """Accelerations by a plain loop over pairs (massive sources only)."""
    a = np.zeros_like(q)
    for i in range(len(masses)):
        for j in range(len(masses)):
            if i != j and masses[j] > 0:
                d = q[i] - q[j]
                a[i] -= G * masses[j] * d / np.linalg.norm(d) ** 3
    return a


def test_forces_are_minus_the_gradient_and_test_particles_feel_without_acting():
    system, (q, p) = outer_solar_system()
    m, G = np.asarray(system.masses), float(system.G)
    grad = jax.grad(system.potential)(jnp.asarray(q))
    assert np.allclose(system.potential_gradient(jnp.asarray(q)), grad, rtol=1e-13, atol=0)
    assert np.allclose(system.accelerations(jnp.asarray(q)), _pairwise(m, G, q), rtol=1e-12)
    dq, dp = system.vector_field((jnp.asarray(q), jnp.asarray(p)))
    assert np.allclose(dq, p / m[:, None], rtol=1e-15) and np.allclose(dp, -grad, rtol=1e-13)
    # two test particles added: the massive bodies' motion is the same, theirs is the
    # limit of vanishing mass (a mass of 1e-30 changes nothing at float64 precision)
    rng = np.random.default_rng(3)
    extra = rng.normal(size=(2, 3)) * 20
    with_tp = NBody([*m, 0.0, 0.0], G)
    assert with_tp.n_test == 2 and with_tp.n_massive == 6
    tiny = NBody([*m, 1e-30, 1e-30], G)
    qq = jnp.asarray(np.concatenate([q, extra]))
    a_tp = np.asarray(with_tp.accelerations(qq))
    assert np.allclose(a_tp, np.asarray(tiny.accelerations(qq)), rtol=1e-14, atol=0)
    assert np.allclose(a_tp, _pairwise(np.array([*m, 0, 0]), G, np.asarray(qq)), rtol=1e-12)
    v_tp = rng.normal(size=(2, 3)) * 1e-3  # a test particle's p is its velocity
    pp = jnp.asarray(np.concatenate([p, v_tp]))
    assert np.allclose(with_tp.kinetic_gradient(pp)[6:], v_tp, rtol=0, atol=0)
    assert float(with_tp.hamiltonian((qq, pp))) == pytest.approx(
        float(system.hamiltonian((jnp.asarray(q), jnp.asarray(p)))), rel=1e-15
    )


def test_invariants_and_the_outer_solar_system():
    system, x0 = outer_solar_system()
    inv = system.invariants(tuple(map(jnp.asarray, x0)))
    assert set(inv) == {"H", "Px", "Py", "Pz", "Lx", "Ly", "Lz"}
    assert max(abs(float(inv[k])) for k in ("Px", "Py", "Pz")) < 1e-19  # barycentric
    assert np.max(np.abs(system.centre_of_mass(jnp.asarray(x0[0])))) < 1e-15
    el = system.to_elements(x0, frame="heliocentric")
    # Jupiter .. Pluto: a in AU and the periods in days (HLW Table I.2.1's epoch)
    assert np.allclose(el["a"], [5.20, 9.54, 19.2, 30.07, 39.5], rtol=0.01)
    assert 4300 < float(el["P"][0]) < 4360 and float(el["e"][4]) == pytest.approx(0.255, abs=2e-3)
    d, (i, j) = system.close_pair(jnp.asarray(x0[0]))
    qn = x0[0]
    dist = [np.linalg.norm(qn[a] - qn[b]) for a in range(6) for b in range(a)]
    assert float(d) == pytest.approx(min(dist), rel=1e-15) and {int(i), int(j)} == {0, 1}


def test_a_barycentric_momentum_is_measured_against_the_size_of_its_terms():
    """P = 0 to round-off (1e-19): its error is relative to Σ|p_i| (``invariant_scales``),
    not to |P(x0)|, which would call the round-off of any step an error of order 1; L and
    H keep their own sizes where those are larger.  The names label the bodies."""
    system, x0 = outer_solar_system()
    assert system.names == ("Sun", "Jupiter", "Saturn", "Uranus", "Neptune", "Pluto")
    traj = mi.simulate(system, mi.integrators.StormerVerlet(), x0, 10.0, 20, 10)
    err = mi.diagnostics.invariant_errors(system, traj)
    sizes = system.invariant_scales(tuple(map(jnp.asarray, x0)))
    assert set(sizes) == {"Px", "Py", "Pz", "Lx", "Ly", "Lz"}
    p = np.asarray(x0[1])
    assert float(sizes["Px"]) == pytest.approx(np.sum(np.abs(p[:, 0])), rel=1e-15)
    for k in ("Px", "Py", "Pz"):
        assert 0 < np.max(err[k]) < 1e-14, (k, err[k])
        raw = mi.diagnostics.invariant_errors(system, traj, relative=False)[k]
        # against |P(x0)| the round-off would read as an error of over 100 %
        assert np.max(raw) > abs(float(system.invariants(x0)[k])), k
    assert np.max(err["H"]) > 1e-9  # Störmer-Verlet's energy error, relative to |H|


@pytest.mark.parametrize("frame", ["jacobi", "heliocentric"])
def test_elements_round_trip_bound_and_unbound(frame):
    """from_elements then to_elements gives the elements back (a batch of two systems,
    each with a planet and an unbound test particle, e = 1.7, a < 0)."""
    masses = [1.0, 1e-3, 3e-4, 0.0]
    el = {
        "a": np.array([[1.0, 2.5, -3.0], [1.3, 4.0, -0.5]]),
        "e": np.array([[0.1, 0.4, 1.7], [0.0001, 0.9, 3.0]]),
        "i": np.array([[0.2, 1.0, 2.5], [0.0 + 1e-3, 3.0, 0.7]]),
        "Omega": np.array([[0.3, 2.0, 5.0], [1.0, 4.0, 0.1]]),
        "omega": np.array([[1.1, 0.5, 3.0], [2.0, 6.0, 1.5]]),
        "M": np.array([[0.7, 5.5, 0.4], [3.0, 0.01, -2.0]]),
    }
    system, x0 = NBody.from_elements(masses, el, G=1.3, frame=frame)
    assert x0[0].shape == (2, 4, 3)
    back = system.to_elements(x0, frame=frame)
    for k in ("a", "e", "i"):
        assert np.allclose(back[k], el[k], rtol=1e-11, atol=1e-13), k
    for k in ("Omega", "omega"):
        diff = np.angle(np.exp(1j * (np.asarray(back[k]) - el[k])))
        assert np.max(np.abs(diff)) < 1e-9, k
    M_bound = np.where(el["e"] < 1, np.mod(el["M"], 2 * np.pi), el["M"])
    assert np.allclose(back["M"], M_bound, rtol=0, atol=1e-9)
    # the period instead of a, the mean longitude instead of M: the same state
    mu = 1.3 * (np.asarray(back["mu"]))
    alt = {**{k: el[k] for k in ("e", "i", "Omega", "omega")},
           "P": 2 * np.pi * np.sqrt(np.abs(el["a"]) ** 3 / (mu / 1.3)),
           "lam": el["M"] + el["omega"] + el["Omega"]}  # fmt: skip
    alt["P"] = np.where(el["e"] < 1, alt["P"], 1.0)
    bound = el["e"][:, :2] < 1
    _, x1 = NBody.from_elements(masses[:3], {k: v[:, :2] for k, v in alt.items()}, G=1.3,
                                frame=frame)  # fmt: skip
    _, x2 = NBody.from_elements(masses[:3], {k: v[:, :2] for k, v in el.items()}, G=1.3,
                                frame=frame)  # fmt: skip
    assert np.all(bound) and np.allclose(x1[0], x2[0], rtol=1e-11, atol=1e-12)


def _mp_state(a, e, i, Omega, omega, M, mu=1.0):
    """The relative state of the elements in mpmath (Kepler's equation solved at 60
    digits): the independent reference of ``from_elements``."""
    import mpmath as mp

    with mp.workdps(60):
        a, e, M, mu = mp.mpf(a), mp.mpf(e), mp.mpf(M), mp.mpf(mu)
        if e < 1:
            E = mp.findroot(lambda E: E - e * mp.sin(E) - M, M + e * mp.sin(M))
            x, y = a * (mp.cos(E) - e), a * mp.sqrt(1 - e * e) * mp.sin(E)
            w = mp.sqrt(mu * a) / (a * (1 - e * mp.cos(E)))
            vx, vy = -w * mp.sin(E), w * mp.sqrt(1 - e * e) * mp.cos(E)
        else:
            H = mp.findroot(lambda H: e * mp.sinh(H) - H - M, mp.asinh(M / e))
            x, y = -a * (e - mp.cosh(H)), -a * mp.sqrt(e * e - 1) * mp.sinh(H)
            w = mp.sqrt(-mu * a) / (-a * (e * mp.cosh(H) - 1))
            vx, vy = -w * mp.sinh(H), w * mp.sqrt(e * e - 1) * mp.cosh(H)
        cO, sO, ci, si = mp.cos(Omega), mp.sin(Omega), mp.cos(i), mp.sin(i)
        cw, sw = mp.cos(omega), mp.sin(omega)
        P = [[cO * cw - sO * sw * ci, -cO * sw - sO * cw * ci],
             [sO * cw + cO * sw * ci, -sO * sw + cO * cw * ci], [sw * si, cw * si]]  # fmt: skip
        r = [float(row[0] * x + row[1] * y) for row in P]
        v = [float(row[0] * vx + row[1] * vy) for row in P]
    return np.array(r), np.array(v)


def test_elements_at_their_corners_against_mpmath():
    """``from_elements`` on nearly parabolic orbits (e = 1 ∓ 10⁻⁸..10⁻¹², where a start at
    periapsis loses the digits of a/r_p: 6e-2 of the velocity at 1 − 10⁻¹²) and long
    hyperbolic arcs against mpmath; ``to_elements`` of mpmath's states: i of 10⁻⁸ and
    10⁻¹⁰ and π − 10⁻⁸ (not 0 or π), a hyperbola's M up to 10¹² (not saturated), and a
    circular equatorial orbit's angle (not lost: the textbook start comes back where it
    was)."""
    angles = (0.3, 1.0, 2.0)
    cases = [(1.5, 1 - d, M) for d in (1e-8, 1e-12) for M in (3.1, 1.0, 0.01)]
    cases += [(-1.5, 1 + 1e-9, M) for M in (0.01, 1.0, 1e3)] + [(-1.0, 1.5, 1e12)]
    for a, e, M in cases:
        el = {"a": [a], "e": [e], "i": [angles[0]], "Omega": [angles[1]], "omega": [angles[2]],
              "M": [M]}  # fmt: skip
        system, x0 = NBody.from_elements([1.0, 0.0], el, 1.0, "heliocentric")
        r, v = _mp_state(a, e, *angles, M)
        err_r = np.max(np.abs(x0[0][1] - r)) / np.max(np.abs(r))
        err_v = np.max(np.abs(x0[1][1] - v)) / np.max(np.abs(v))
        assert err_r < 1e-13 and err_v < 1e-13, (a, e, M, err_r, err_v)
        if e > 1:  # the mean anomaly of mpmath's state
            back = system.to_elements((np.array([[0.0] * 3, r]), np.array([[0.0] * 3, v])),
                                      "heliocentric")  # fmt: skip
            assert abs(float(back["M"][0]) / M - 1) < 1e-13, (M, back["M"])
    system = NBody([1.0, 0.0], 1.0)
    for inc in (1e-8, 1e-10, np.pi - 1e-8):
        r, v = _mp_state(1.0, 0.2, inc, 0.7, 0.4, 1.0)
        back = system.to_elements((np.array([[0.0] * 3, r]), np.array([[0.0] * 3, v])),
                                  "heliocentric")  # fmt: skip
        assert abs(float(back["i"][0]) - inc) <= 1e-14 * inc, (inc, back["i"])
    # a planar orbit's M has a finite gradient (Ω's branch for an inclined orbit is not
    # taken, and sends no NaN); states of any leading axes, in their own dtype
    q, p = jnp.array([[0.0, 0, 0], [1.0, 0.1, 0]]), jnp.array([[0.0, 0, 0], [-0.1, 1.1, 0]])
    grad = jax.grad(lambda q: system.to_elements((q, p), "heliocentric")["M"][0])(q)
    assert np.all(np.isfinite(np.asarray(grad))) and np.any(np.asarray(grad) != 0)
    many = tuple(np.tile(np.asarray(a, np.float32), (4, 3, 1, 1)) for a in (q, p))
    assert system.to_elements(many)["a"].dtype == np.float32
    for r, v in (([1.0, 0, 0], [0, 1.0, 0]), ([0, -1.0, 0], [-1.0, 0, 0]),
                 ([-0.6, 0.8, 0], [-0.8, -0.6, 0])):  # fmt: skip
        x = (np.array([[0.0] * 3, r]), np.array([[0.0] * 3, v]))
        back = system.to_elements(x, "heliocentric")
        el = {k: np.asarray(back[k]) for k in ("a", "e", "i", "Omega", "omega", "M")}
        _, y = NBody.from_elements([1.0, 0.0], el, 1.0, "heliocentric")
        assert np.allclose(y[0], x[0], atol=1e-15) and np.allclose(y[1], x[1], atol=1e-15), (r, el)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: NBody([1.0]), "masses"),
        (lambda: NBody([1.0, -1e-3]), "masses"),
        (lambda: NBody([1.0, np.nan]), "masses"),
        (lambda: NBody([0.0, 1.0]), "central body"),
        (lambda: NBody([1.0, 0.0, 1e-3]), "test particles"),
        (lambda: NBody([1.0, 1e-3], G=0.0), "G"),
        (lambda: NBody([1.0, 1e-3], encounter=-1.0), "encounter"),
        (
            lambda: NBody([1.0, 1e-3]).validate_state((np.zeros((2, 3)), np.zeros((2, 3)))),
            "same place",
        ),
        (lambda: NBody([1.0, 1e-3]).validate_state((np.ones((3, 3)), np.ones((3, 3)))), "shape"),
        (lambda: NBody.from_elements([1, 1e-3], {"a": [1.0], "e": [1.5], "M": [0.0]}), "a must"),
        (
            lambda: NBody.from_elements(
                [1, 1e-3], {"a": [1.0], "e": [0.1], "i": [4.0], "M": [0.0]}
            ),
            "π",
        ),
        (lambda: NBody.from_elements([1, 1e-3], {"a": [1.0], "e": [1.0], "M": [0.0]}), "parabolic"),
        (lambda: NBody.from_elements([1, 1e-3], {"a": [1.0], "M": [0.0], "x": [1]}), "unknown"),
        (lambda: NBody.from_elements([1, 1e-3], {"P": [1.0], "e": [1.5], "M": [0.0]}), "no period"),
        (lambda: NBody.from_elements([1, 1e-3], {"a": [1e300], "M": [0.0]}), "not finite"),
        (
            lambda: NBody.from_elements(
                [1, 1e-3, 1e-3], {"a": np.ones((2, 2)), "e": np.zeros((3, 2)), "M": [0, 0]}
            ),
            "do not broadcast",
        ),
        (lambda: NBody([1, 1e-3]).to_elements((np.zeros((3, 3)), np.zeros((3, 3)))), "shape"),
        (lambda: NBody([1, 1e-3]).to_elements(np.zeros((2, 3))), "pair"),
        (lambda: NBody([1, 1e-3]).to_elements((np.zeros((2, 3)),) * 2), "same place"),
        (lambda: NBody.from_elements([1, 1e-3], {"a": [1e-300], "M": [0.0]}), "not finite"),
        (lambda: NBody.from_elements([1, 1e-3], {"a": [1.0, 2.0], "M": [0.0]}), "values"),
        (lambda: NBody.from_elements([1, 1e-3], {"a": [1.0], "M": [0.0]}, frame="x"), "frame"),
    ],
)
def test_bad_input_is_refused_naming_the_parameter(call, needle):
    with pytest.raises(mi.InputError, match=needle):
        call()
