"""Property tests over arbitrary positive inertias and states (hypothesis)."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

import mechint as mi

moments = st.floats(0.2, 5.0)
component = st.floats(-2.0, 2.0)
_step = jax.jit(mi.integrators.Kahan().step)


@settings(max_examples=60, deadline=None)
@given(
    st.tuples(moments, moments, moments),
    st.tuples(component, component, component),
    st.floats(0.005, 0.2),
)
def test_kahan_step_keeps_its_integrals_and_is_reversible(inertia, m, h):
    top = mi.systems.EulerTop(inertia)
    m = jnp.asarray(m)
    nxt, status = _step(top, m, h)
    assert bool(status.ok)
    scale = max(1.0, float(jnp.max(jnp.abs(m))))
    back, _ = _step(top, nxt, -h)
    assert float(jnp.max(jnp.abs(back - m))) < 1e-14 * scale**3
    before, after = top.kahan_integrals(m, h), top.kahan_integrals(nxt, h)
    for name in before:
        b, a = float(before[name]), float(after[name])
        size = max(abs(b), float(jnp.max(jnp.abs(top.coefficients))) * scale**2)
        assert abs(a - b) <= 1e-13 * size, (name, a, b)


@settings(max_examples=30, deadline=None)
@given(st.tuples(moments, moments, moments), st.tuples(component, component, component))
@example((0.5, 1.0, 2.0), (0.0, 1.0, 3.9e-150))  # k² rounds to 1: the separatrix to precision
@example((2.0, 1.0, 3.0), (1.0, 6.83139338203344e-221, 0.0))  # B's squares underflow
def test_exact_solution_is_covariant_under_axis_permutations(inertia, m):
    """Relabelling the axes by a permutation P maps solutions to solutions at time det(P) t."""
    I, m = np.array(inertia), np.array(m)
    t = np.linspace(0.0, 3.0, 7)
    base = mi.exact.euler_top(mi.systems.EulerTop(I), m, t)
    for perm in ([1, 2, 0], [0, 2, 1]):
        sign = round(np.linalg.det(np.eye(3)[perm]))
        other = mi.exact.euler_top(mi.systems.EulerTop(I[perm]), m[perm], sign * t)
        assert np.max(np.abs(other - base[:, perm])) < 1e-11 * max(1.0, np.max(np.abs(m)))
