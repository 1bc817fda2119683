"""XLA's CPU compiler, set for step loops: a process-wide threshold before JAX starts its
backends (``set_small_loops``, opt-in), and the compile options of mechint's own loop
programs (``loop_jit``, ``LOOP_OPTIONS``: no YNNPACK library fusions).

XLA's CPU backend runs a ``while`` loop either as a sequence of kernels launched one by
one every iteration (a "thunk" each, tens of ns apiece), or, when the loop's body
accesses fewer bytes than ``xla_cpu_small_while_loop_byte_threshold`` (default 1024), as
one compiled function.  A step of a small system is a few dozen kernels on arrays of a
few numbers, so below the threshold a loop runs several times faster; and the threshold
is crossed by ordinary runs: a compensated composition (4 more carried arrays), an
implicit map's Newton loop, a splitting of the heavy top.  Measured on the 2-core CPU
machine (one trajectory, ``simulate``, steps/s, 1024 -> 65536): the implicit midpoint
rule on the Euler top 6.4e5 -> 4.9e6, the heavy top's splitting 1.5e6 -> 7.0e6, Yoshida-4
on Kepler compensated 2.9e6 -> 6.7e6; loops already below it (Kahan, RK4) unchanged; a
batch's loop over large arrays stays above it (its kernels spread over the cores).
``benchmarks/loop_threshold.py`` measures it.

It is not mechint's default.  Compiled as one function, a loop may contract a·b + c
into a fused multiply-add where the kernel-by-kernel loop of a batch does not, so more
of a batch's members would differ from their runs alone in the last bits (measured: the
work of a ``Forced`` Kepler orbit differs by an ulp; at the default 55 of the 126
registered (system, map) pairs already differ at round-off, docs/concepts.md, "What is
reproduced bit for bit"); compile times are about the same
(the test suite: 384 s with it, 388 s without, one run each).  A user who wants the
speed sets ``MECHINT_SMALL_LOOP_BYTES`` (e.g. 65536) in the environment; XLA reads its
flags once, when JAX starts its first backend, so importing mechint passes it on only
before then, and not over a ``xla_backend_extra_options`` the user gave XLA_FLAGS.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any

SMALL_LOOP_OPTION = "xla_cpu_small_while_loop_byte_threshold"
ENVIRONMENT = "MECHINT_SMALL_LOOP_BYTES"


def set_small_loops() -> bool:
    """Pass ``MECHINT_SMALL_LOOP_BYTES``, where set, to XLA as its small-loop threshold;
    whether it was passed (a warning says why not)."""
    from jax._src import xla_bridge

    from mechint.errors import InputError

    value = os.environ.get(ENVIRONMENT, "").strip()
    if not value:
        return False
    if not value.isdigit() or int(value) <= 0:
        raise InputError(ENVIRONMENT, f"must be a whole number of bytes, got {value!r}",
                         f"e.g. {ENVIRONMENT}=65536, or unset it")  # fmt: skip
    flags = os.environ.get("XLA_FLAGS", "")
    extra = f"--xla_backend_extra_options={SMALL_LOOP_OPTION}={int(value)}"
    if extra in flags.split():  # in XLA_FLAGS already (inherited from the process that
        return True  # started this one, `mechint run`'s or a Dask worker's): in effect
    why = None
    if getattr(xla_bridge, "backends_are_initialized", lambda: True)():
        why = "JAX's backends had started before mechint was imported"
    elif "xla_backend_extra_options" in flags:
        why = "XLA_FLAGS sets xla_backend_extra_options already"
    if why is not None:
        warnings.warn(f"{ENVIRONMENT} not passed to XLA: {why}", stacklevel=3)
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {extra}".strip()
    return True


# XLA's CPU backend hands some reductions and elementwise fusions to the YNNPACK library
# ("ynn fusions"): a sum or a maximum over a member's three entries under ``vmap`` becomes
# a library call, several a step in a batch's loop.  mechint's own step loops are
# compiled without them (a compile option of those programs only, not a process-wide
# flag), measured on the 2-core CPU, 2026-11-27, body-steps/s: ``integrate`` of 10⁵ free
# bodies × 100 discrete Lagrangian steps 1.1e7 -> 2.5e7, of 10⁴ × 200 LGVI steps 7.6e6 ->
# 1.15e7, of the heavy top's discrete Lagrangian map 1.17e7 -> 1.62e7; Kahan's map, RK4,
# the midpoint rule and the heavy top's splitting as fast either way.  The bits change at
# round-off (docs/concepts.md).  XLA versions without the option compile as before.
LOOP_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}


@functools.cache
def _loop_options() -> dict:
    """``LOOP_OPTIONS`` where this XLA knows them and JAX's default backend is the CPU,
    else none (asked once, by compiling a one-operation program: the backends have started
    by then, at the first loop)."""
    import jax
    import jax.numpy as jnp

    if jax.default_backend() != "cpu":  # CPU options: a GPU's compiler has none of them
        return {}
    shape = jax.ShapeDtypeStruct((), jnp.float32)  # no data moved: a transfer guard holds
    try:
        jax.jit(jnp.negative, compiler_options=LOOP_OPTIONS).lower(shape).compile()
    except TypeError:  # a jax.jit that takes no compile options
        return {}
    except Exception as error:  # an XLA that does not know the option says so
        if "INVALID_ARGUMENT" not in str(error) and "option" not in str(error).lower():
            raise
        return {}
    return dict(LOOP_OPTIONS)


def _top_level() -> bool:
    """Whether no JAX trace is under way (jax.jit takes compile options only there)."""
    from jax._src import core

    clean = getattr(core, "trace_state_clean", None)
    return clean is not None and bool(clean())


def loop_jit(fun=None, **kwargs) -> Any:
    """``jax.jit(fun, **kwargs)`` compiled with ``LOOP_OPTIONS`` where the installed XLA
    knows them: mechint's step-loop programs (a decorator, like ``jax.jit``; with no
    ``fun``, the decorator of those ``kwargs``).  Called inside a user's ``jax.jit``,
    ``vmap`` or ``grad``, it is a plain ``jax.jit`` (JAX takes compile options at the top
    level only: the user's program is compiled with the user's options).  The jitted
    functions are made at the first call (asking XLA then, not at import, when no backend
    has started); other attributes (``lower``, ...) are the top-level one's."""
    if fun is None:
        return functools.partial(loop_jit, **kwargs)
    return _LoopJit(fun, kwargs)


class _LoopJit:
    """``loop_jit``'s function: a jax.jit with the loop options and one without."""

    def __init__(self, fun, kwargs: dict[str, Any]):
        self._fun, self._kwargs = fun, kwargs
        self._jitted: dict = {}
        functools.update_wrapper(self, fun)  # its name, module and docstring

    def __call__(self, *args, **kwargs) -> Any:
        return self._get(_top_level())(*args, **kwargs)

    def _get(self, top: bool = True) -> Any:
        if top not in self._jitted:
            import jax

            options = _loop_options() if top else {}
            extra: dict[str, Any] = {"compiler_options": options} if options else {}
            self._jitted[top] = jax.jit(self._fun, **extra, **self._kwargs)  # (an older
            # jax.jit takes no compile options)
        return self._jitted[top]

    def clear_cache(self) -> None:
        for jitted in self._jitted.values():
            jitted.clear_cache()

    def _cache_size(self) -> int:  # JAX's (private) count of compiled programs
        return sum(jitted._cache_size() for jitted in self._jitted.values())

    def __getattr__(self, name) -> Any:
        if name in ("_fun", "_kwargs", "_jitted"):  # not yet set (unpickling)
            raise AttributeError(name)
        return getattr(self._get(), name)
