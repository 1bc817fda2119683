"""The rigid bodies on so(n), so(n) ⋉ Symm(n), e(n): structure checked against itself."""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from tests.systems.rigid_cases import case

CASES = [(k, n) for k in ("free", "qpt", "clebsch") for n in (2, 3, 4, 5)]


@jax.jit
def _gradients(system, z):
    """Gradients in coordinates of H, of every Casimir and of every invariant (one compile
    per system type and n, instead of op-by-op differentiation of each)."""

    def values(z):
        x = system.from_coordinates(z)
        return system.hamiltonian(x), system.casimirs(x), system.invariants(x)

    return jax.grad(lambda z: values(z)[0])(z), *jax.jacrev(lambda z: values(z)[1:])(z)


@cache
def _gradients_at(kind: str, n: int):
    """``_gradients`` at a case's state, once for the tests below (its program is not
    traced and loaded again where the suite drops its compiled programs between tests)."""
    system, x = case(kind, n)
    return _gradients(system, system.coordinates(x))


@pytest.mark.parametrize(("kind", "n"), CASES)
def test_vector_field_is_poisson_tensor_times_grad_H(kind, n):
    system, x = case(kind, n)
    grad = _gradients_at(kind, n)[0]
    lhs = system.poisson_tensor(x) @ grad
    rhs = system.coordinates(system.vector_field(x))
    assert np.max(np.abs(lhs - rhs)) < 1e-14 * max(1.0, float(jnp.max(jnp.abs(rhs))))
    Pi = system.poisson_tensor(x)
    assert np.array_equal(Pi, -Pi.T)


@pytest.mark.parametrize(("kind", "n"), CASES)
def test_casimirs_span_the_kernel_and_invariants_are_constant(kind, n):
    system, x = case(kind, n)
    f = system.coordinates(system.vector_field(x))
    Pi = system.poisson_tensor(x)
    _, casimirs, invariants = _gradients_at(kind, n)
    for name, g in casimirs.items():
        assert np.max(np.abs(Pi @ g)) < 1e-13 * max(1.0, float(jnp.max(jnp.abs(g)))), name
    for name, g in invariants.items():
        scale = float(jnp.max(jnp.abs(g)) * jnp.max(jnp.abs(f)))
        assert abs(float(g @ f)) < 1e-13 * max(scale, 1.0), name


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_lax_integrals_are_independent_and_complete(n):
    """n(n−1)/2 integrals plus n Casimirs, gradients of full rank n(n+1)/2 ... + n: the
    count that makes the top integrable on orbits of dimension n² − n (Suris §4)."""
    system, x = case("qpt", n)
    names = [k for k in system.invariants(x) if k != "H"]
    assert len(names) == n * (n - 1) // 2 + n
    invariants = _gradients_at("qpt", n)[2]
    grads = jnp.stack([invariants[k] for k in names])
    s = np.linalg.svd(np.asarray(grads), compute_uv=False)
    assert s[-1] > 1e-8 * s[0]


def test_free_body_n3_is_the_euler_top():
    body, M = case("free", 3)
    top = body.euler_top()
    m = mi.lie.vee(M)
    assert np.allclose(mi.lie.vee(body.vector_field(M)), top.vector_field(m), rtol=0, atol=1e-15)
    assert abs(float(body.hamiltonian(M) - top.hamiltonian(m))) < 1e-15
    assert abs(float(body.casimirs(M)["trM2"] + 4 * top.casimirs(m)["C"])) < 1e-15


def test_lax_integrals_do_not_change_under_the_flow_of_L():
    """L̇ = [L, Ω + λJ]: d/dt tr L^k = 0 for several λ."""
    system, x = case("qpt", 4)
    dx = system.vector_field(x)
    Omega = system.omega(jnp.asarray(x[0]))
    for lam in (0.3, 1.0, 2.5):
        L = system.lax_matrix(x, lam)
        Ldot = system.lax_matrix(dx, lam) - jnp.diag(system.J**2) * lam**2
        assert np.max(np.abs(Ldot - mi.lie.commutator(L, Omega + lam * jnp.diag(system.J)))) < 1e-13


def test_body_potential_and_vector():
    rng = np.random.default_rng(3)
    g = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    a = rng.normal(size=3)
    p = mi.systems.ClebschTop.body_vector(a, g)
    P = mi.systems.QuadraticPotentialTop.body_potential(np.outer(a, a), g)
    assert np.allclose(P, np.outer(p, p), rtol=0, atol=1e-14)


def test_bad_states_are_errors_not_projections():
    system, (M, P) = case("qpt", 3)
    with pytest.raises(mi.InputError, match=r"x0\[0\] \(M\): is not skew"):
        system.validate_state((M + 0.1 * np.eye(3), P))
    with pytest.raises(mi.InputError, match="is not symmetric"):
        system.validate_state((M, P + np.triu(np.ones((3, 3)), 1)))
    with pytest.raises(mi.InputError, match="expected a skew 3x3 matrix"):
        system.validate_state((np.zeros((4, 4)), P))
    with pytest.raises(mi.InputError, match="J: every entry must be > 0"):
        mi.systems.ClebschTop((1.0, -1.0, 2.0))
    with pytest.raises(mi.InputError, match="at least 2"):
        mi.systems.FreeRigidBody((1.0,))
