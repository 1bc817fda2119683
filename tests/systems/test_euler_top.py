import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from tests.conftest import INERTIAS, cache_size


@pytest.mark.parametrize("inertia", INERTIAS.values(), ids=INERTIAS.keys())
def test_vector_field_is_poisson_tensor_times_gradient(inertia):
    top = mi.systems.EulerTop(inertia)
    m = jnp.array([0.3, -0.7, 0.5])
    lhs = top.vector_field(m)
    rhs = top.poisson_tensor(m) @ jax.grad(top.hamiltonian)(m)
    assert np.max(np.abs(lhs - rhs)) < 1e-15
    # and the cross-product form m × I⁻¹m
    assert np.max(np.abs(lhs - jnp.cross(m, m / top.inertia))) < 1e-15


def test_casimir_is_in_kernel_of_poisson_tensor(top):
    m = jnp.array([0.3, -0.7, 0.5])
    gradC = jax.grad(lambda x: top.casimirs(x)["C"])(m)
    assert np.max(np.abs(top.poisson_tensor(m) @ gradC)) < 1e-16


def test_hat_vee_roundtrip_and_cross_product():
    v, w = jnp.array([1.0, -2.0, 0.5]), jnp.array([0.3, 0.1, -4.0])
    assert np.allclose(mi.lie.hat(v) @ w, jnp.cross(v, w), atol=1e-15)
    assert np.array_equal(mi.lie.vee(mi.lie.hat(v)), v)


def test_kahan_integrals_tend_to_continuous_integrals(top):
    m = jnp.array([0.3, -0.7, 0.5])
    H, C = top.hamiltonian(m), top.casimirs(m)["C"]
    K = top.kahan_integrals(m, 0.0)
    for k in range(3):
        assert abs(K[f"K{k + 1}"] - (2 * H - 2 * C / top.inertia[k])) < 1e-15
    assert K["d1/d2"] == 1.0 and K["d2/d3"] == 1.0


def test_methods_work_on_batches(top):
    m = jnp.array([[0.3, -0.7, 0.5], [1.0, 0.0, 0.0]])
    assert top.vector_field(m).shape == (2, 3)
    assert top.hamiltonian(m).shape == (2,)
    assert top.kahan_integrals(m, 0.1)["K1"].shape == (2,)


def test_system_is_a_pytree_and_reuses_compilation():
    a, b = mi.systems.EulerTop((2.0, 1.0, 0.5)), mi.systems.EulerTop((3.0, 2.0, 1.0))
    assert jax.tree.structure(a) == jax.tree.structure(b)
    f = jax.jit(lambda s, m: s.hamiltonian(m))
    m = jnp.array([1.0, 1.0, 1.0])
    assert float(f(a, m)) == pytest.approx(0.5 * (0.5 + 1 + 2))
    assert float(f(b, m)) == pytest.approx(0.5 * (1 / 3 + 1 / 2 + 1))
    assert cache_size(f) == 1


@pytest.mark.parametrize(
    "inertia, needle",
    [
        ((1.0, 2.0), "expected 3 numbers"),
        ((1.0, 0.0, 2.0), "must be > 0"),
        ((1.0, -1.0, 2.0), "must be > 0"),
        ((1.0, float("nan"), 2.0), "finite"),
        ((1.0, float("inf"), 2.0), "finite"),
        ("abc", "expected numbers"),
    ],
)
def test_bad_inertia_is_rejected_with_the_parameter_named(inertia, needle):
    with pytest.raises(mi.InputError, match=needle) as info:
        mi.systems.EulerTop(inertia)
    assert info.value.parameter == "inertia"
    assert str(info.value).startswith("inertia:")


def test_unknown_system_name_lists_valid_ones():
    with pytest.raises(mi.InputError, match="euler-top"):
        mi.systems.get("spinning-top")
