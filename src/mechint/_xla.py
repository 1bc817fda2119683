"""XLA's CPU compiler, set for step loops before JAX starts its backends.

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

import os
import warnings

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
