"""MECHINT_SMALL_LOOP_BYTES: passed to XLA before its backends start, refused when bad,
and a warning (not a silent no-op) when it cannot take effect."""

import warnings
from typing import Any

import jax
import pytest
from jax._src import xla_bridge

import mechint as mi
from mechint import _xla


def test_the_small_loop_threshold_reaches_xla_flags_only_when_it_can(monkeypatch):
    monkeypatch.delenv(_xla.ENVIRONMENT, raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert _xla.set_small_loops() is False  # not asked for: XLA's default
    monkeypatch.setenv(_xla.ENVIRONMENT, "65536")
    jax.devices()  # this process's backends have started: a warning, XLA_FLAGS as it was
    with pytest.warns(UserWarning, match="backends had started"):
        assert _xla.set_small_loops() is False
    monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda: False)
    assert _xla.set_small_loops() is True
    import os

    assert os.environ["XLA_FLAGS"] == (
        "--xla_cpu_enable_fast_math=false --xla_backend_extra_options="
        "xla_cpu_small_while_loop_byte_threshold=65536"
    )
    # a process started by one that passed it (`mechint run`'s, a Dask worker) inherits
    # XLA_FLAGS with the option: passed, no warning, no second copy
    passed = os.environ["XLA_FLAGS"]
    for started in (False, True):  # XLA reads (or has read) it from there either way
        monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda s=started: s)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert _xla.set_small_loops() is True
        assert os.environ["XLA_FLAGS"] == passed
    monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda: False)
    # the user's own backend options are kept
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_extra_options=a=1")
    with pytest.warns(UserWarning, match="xla_backend_extra_options already"):
        assert _xla.set_small_loops() is False
    assert os.environ["XLA_FLAGS"] == "--xla_backend_extra_options=a=1"
    for bad in ("64k", "-1", "0", "1e5"):
        monkeypatch.setenv(_xla.ENVIRONMENT, bad)
        with pytest.raises(mi.InputError, match="MECHINT_SMALL_LOOP_BYTES: must be a whole"):
            _xla.set_small_loops()


def test_loops_compile_without_xlas_library_fusions_and_nest_in_a_users_jit():
    """mechint's loop programs (``_xla.loop_jit``) are compiled without YNNPACK fusions
    where this XLA makes them (a sum over a member's three entries under ``vmap`` is one
    on the CPU); inside a user's ``jax.jit`` or ``vmap`` they are plain nested jits (JAX
    refuses compile options there), and a run agrees with its own to round-off."""
    import sys

    import jax.numpy as jnp
    import numpy as np

    from mechint.simulate import _advance

    def norms(x):
        return jax.vmap(lambda v: jnp.sum(v * v))(x)

    assert _xla._top_level()  # else every loop would take the plain jit, options unused
    x = jnp.linspace(0.0, 1.0, 3000).reshape(1000, 3)
    mine = _xla.loop_jit(norms)
    program = str(mine.lower(x).compile().as_text())
    plain = str(jax.jit(norms).lower(x).compile().as_text())
    if "ynn" in plain:  # this XLA makes them: mechint's programs must be without
        assert _xla._loop_options() == _xla.LOOP_OPTIONS
    if _xla._loop_options():
        assert "ynn" not in program
    options = _xla._loop_options()
    extra: dict[str, Any] = {"compiler_options": options} if options else {}
    same = jax.jit(norms, **extra)
    assert np.array_equal(mine(x), same(x))
    assert mine._jitted[True]._cache_size() == 1  # the call at the top level took the options
    assert np.allclose(jax.jit(mine)(x), mine(x), rtol=1e-15, atol=0)
    assert np.allclose(jax.vmap(mine)(x[None])[0], mine(x), rtol=1e-15, atol=0)
    assert set(mine._jitted) == {True, False}  # the top-level jit and the nested one
    assert mine._cache_size() == 1  # one compiled program: the nested jit is traced
    mine.clear_cache()
    assert mine._cache_size() == 0
    loop = sys.modules["mechint.integrate"]
    for f in (loop._integrate, loop._integrate_concrete, loop.settle_failures, _advance):
        assert isinstance(f, _xla._LoopJit)
    assert loop.settle_failures.__name__ == "settle"
    assert loop.settle_failures.__doc__ == loop.settle.__doc__
    # the discrete Lagrangian map, whose step sums over three entries: on concrete input
    # and inside a user's jit, the same map to round-off
    body = mi.systems.FreeRigidBody((1.0, 2.0, 3.0))
    A = 0.5 * np.random.default_rng(1).standard_normal((64, 3, 3))
    M = jnp.asarray(A - np.swapaxes(A, 1, 2))
    dl = mi.integrators.DiscreteLagrangian()
    own = mi.integrate(body, dl, M, 0.01, 20).x
    assert loop._integrate_concrete._jitted[True]._cache_size() >= 1
    users = jax.jit(lambda M: mi.integrate(body, dl, M, 0.01, 20).x)(M)
    assert float(jnp.max(jnp.abs(own - users))) < 1e-14
