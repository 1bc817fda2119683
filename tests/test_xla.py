"""MECHINT_SMALL_LOOP_BYTES: passed to XLA before its backends start, refused when bad,
and a warning (not a silent no-op) when it cannot take effect."""

import warnings

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
