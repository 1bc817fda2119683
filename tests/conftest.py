import ctypes
import ctypes.util
import gc
import os
import tempfile

# One on-disk compilation cache for the whole session, shared by the subprocesses the
# tests start (``mechint run`` being killed and resumed, Dask workers): each program is
# compiled once per session, and modules can drop their in-memory caches (below) to keep
# the suite's memory bounded without compiling again.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="mechint-jax-cache-"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

import jax
import numpy as np
import pytest

import mechint as mi

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
if os.environ.get("MECHINT_COMPILE_LOG"):  # where the suite's time goes: every compile
    import logging

    jax.config.update("jax_log_compiles", True)
    handler = logging.FileHandler(os.environ["MECHINT_COMPILE_LOG"])
    logging.getLogger("jax").addHandler(handler)


@pytest.fixture(autouse=True, scope="module")
def _bounded_memory(request):
    """Each test module starts without the compiled programs of the ones before it."""
    yield
    jax.clear_caches()
    gc.collect()
    _LIBC.malloc_trim(0)  # give the freed compiler memory back to the system
    if os.environ.get("MECHINT_RSS_LOG"):
        import resource

        with open(os.environ["MECHINT_RSS_LOG"], "a") as fh:
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            status = open("/proc/self/status").read()
            now = next(ln for ln in status.splitlines() if ln.startswith("VmRSS"))
            fh.write(f"{request.module.__name__}: {rss:.0f} MB peak, {now}\n")


INERTIAS = {
    "distinct": (2.0, 1.0, 2.0 / 3.0),
    "reversed": (0.5, 1.5, 3.0),
    "two-equal": (2.0, 1.0, 1.0),
}


@pytest.fixture
def top():
    return mi.systems.EulerTop(INERTIAS["distinct"])


@pytest.fixture
def m0():
    return np.array([0.45, 0.0, 0.89])
