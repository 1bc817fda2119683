import atexit
import ctypes
import ctypes.util
import gc
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any, cast

# One on-disk compilation cache for the whole session, shared by the subprocesses the
# tests start (``mechint run`` being killed and resumed, Dask workers): each program is
# compiled once per session, and modules can drop their in-memory caches (below) to keep
# the suite's memory bounded without compiling again.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:  # the process that starts the session
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="mechint-jax-cache-")
    atexit.register(shutil.rmtree, os.environ["JAX_COMPILATION_CACHE_DIR"], True)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
# XLA's CPU backend compiles fusions with its older LLVM emitters, and LLVM optimises at
# level 1 (not 2): the same HLO, and about 40% and then 10% less compile time, which is
# most of the suite's time.  The arithmetic is the default's in all but a few programs,
# which differ at round-off (a probe of 12 programs, 2026-11-25: the emitters change 2,
# level 1 one more); every bit-for-bit test compares runs under one setting and holds
# under both.  Subprocesses inherit it.
if "xla_cpu_use_fusion_emitters" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_cpu_use_fusion_emitters=false"
    ).strip()
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] += " --xla_backend_optimization_level=1"
# Each program's LLVM module is code-generated whole, not split into parts for parallel
# code generation: on two cores already busy with two test processes the split only adds
# work (test_traits: 70-73 s -> 62-68 s, 2026-11-26).  The machine code is the same: a
# probe of 13 results (Kahan, RK4, midpoint, the discrete Lagrangian and exact maps, Kepler
# compositions, the LGVI, a gradient) hashes alike with and without it.
if "xla_cpu_parallel_codegen_split_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] += " --xla_cpu_parallel_codegen_split_count=1"

import numpy as np
import pytest

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"))


def pytest_configure(config):
    """JAX is set up (and imported) only in the processes that run tests: the xdist
    controller stays a small process, which the memory budget counts too."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_numpy_dtype_promotion", "strict")
    # Tracing allocates millions of short-lived objects: the objects of the imports are
    # frozen out of every collection and the young generation is collected every 200000
    # allocations, not 700 (a subset of test_traits, user CPU: 32.6 s with the defaults,
    # 30.7 s at 50000, 28.6 s at 200000; the suite 713 -> 582 s with diagnostics.onestep's
    # change, 2026-11-26; the same peak memory and programs dropped).  Memory stays
    # bounded by _bounded_memory below, which collects whenever it drops programs.
    gc.freeze()
    gc.set_threshold(200_000, 50, 100)
    if os.environ.get("MECHINT_COMPILE_LOG"):  # where the suite's time goes: every compile
        import logging

        jax.config.update("jax_log_compiles", True)
        handler = logging.FileHandler(os.environ["MECHINT_COMPILE_LOG"])
        # each line names its process, and each test's start is logged (``_bounded_memory``):
        # the compiles of a test are the lines of its process that follow its start
        handler.setFormatter(logging.Formatter("%(process)d %(message)s"))
        logging.getLogger("jax").addHandler(handler)


# Compiled programs are kept while a process stays under this resident size (MB) and
# dropped after the test that crosses it (recompiling is a hit in the on-disk cache):
# the suite runs in two processes (pytest-xdist) within its 2 GB budget together.  A
# worker rests at 590-650 MB once its programs are dropped (2026-12-07): at 650 MB the
# drops followed 41 % of the tests and freed little (the suite 618 s); at 900 MB none
# passed 900 (555 s) but the two rested at up to 1.8 GB together.
_RSS_LIMIT_MB = float(os.environ.get("MECHINT_TEST_RSS_MB", 800))


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        line = next(ln for ln in fh if ln.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def _trim() -> None:
    gc.collect()
    _LIBC.malloc_trim(0)  # give the freed compiler memory back to the system


def release_all() -> None:
    """Drop every compiled program of this process (JAX's caches)."""
    import jax

    jax.clear_caches()
    _trim()


def load_module(name: str, path: Path) -> ModuleType:
    """The Python file at ``path`` imported as module ``name`` (a script, an example, the
    docs' hooks: files outside any package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"cannot import {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import does (a dataclass of the file looks it up)
    spec.loader.exec_module(module)
    return module


def cache_size(jitted: object) -> int:
    """The number of programs compiled for the ``jax.jit``-wrapped ``jitted`` (JAX's
    private, untyped ``_cache_size``)."""
    return int(cast(Any, jitted)._cache_size())


def _release() -> None:
    """Drop mechint's compiled programs (the big ones); all of JAX's caches (small eager
    operations included, which would then compile again) only if that is not enough."""
    for name, module in list(sys.modules.items()):
        if name.startswith("mechint"):
            for obj in vars(module).values():  # jitted functions, not classes
                if not isinstance(obj, type) and callable(getattr(obj, "clear_cache", None)):
                    obj.clear_cache()
    _trim()
    if _rss_mb() > _RSS_LIMIT_MB:
        release_all()


@pytest.fixture(autouse=True)
def _bounded_memory(request):
    """Each test leaves its process under ``_RSS_LIMIT_MB`` resident."""
    if os.environ.get("MECHINT_COMPILE_LOG"):
        import logging

        logging.getLogger("jax").warning("TEST %s", request.node.nodeid)
    yield
    after = _rss_mb()
    if after > _RSS_LIMIT_MB:
        _release()
    if os.environ.get("MECHINT_RSS_LOG"):
        import resource

        with open(os.environ["MECHINT_RSS_LOG"], "a") as fh:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            fh.write(f"{time.time():.1f} {os.getpid()} {request.node.nodeid}: {peak:.0f} MB "
                     f"peak, {after:.0f} MB after the test, {_rss_mb():.0f} MB now\n")  # fmt: skip


INERTIAS = {
    "distinct": (2.0, 1.0, 2.0 / 3.0),
    "reversed": (0.5, 1.5, 3.0),
    "two-equal": (2.0, 1.0, 1.0),
}


@pytest.fixture
def top():
    import mechint as mi

    return mi.systems.EulerTop(INERTIAS["distinct"])


@pytest.fixture
def m0():
    return np.array([0.45, 0.0, 0.89])
