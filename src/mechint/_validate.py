"""Validation of user input, shared by the library and the CLI (one home).

Traced values (inside ``jit``, ``vmap`` or ``grad``: a system built from a parameter
being differentiated) have no numbers yet: they are checked for shape and dtype only,
without a host sync.  A bad traced value is never a crash: the run it feeds fails as
data (a non-finite state, a singular solve), like any failed step.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from mechint.errors import InputError


def traced(value) -> bool:
    """Whether ``value`` (or a leaf of it) is a JAX tracer, whose numbers are unknown."""
    return any(isinstance(leaf, Tracer) for leaf in jax.tree.leaves(value))


def shown(value, fmt=lambda v: repr(tuple(float(x) for x in np.ravel(v)))) -> str:
    """A parameter as a repr shows it: ``fmt(value)``, or "<traced>" inside a transform."""
    return "<traced>" if traced(value) else fmt(np.asarray(value))


def _fmt(value) -> str:
    try:
        arr = np.asarray(value, dtype=float)
        if arr.ndim == 0:
            return f"{float(arr):g}"
        if arr.size <= 12:
            return "(" + ", ".join(f"{v:g}" for v in arr.ravel()) + ")"
        return f"an array of shape {arr.shape}"
    except (TypeError, ValueError):
        return repr(value)


def real_output(name: str, out) -> None:
    """A user function's output (an array or a ``jax.ShapeDtypeStruct``, or a pytree of
    them) is of a real floating type: a complex one would be read as its real part, an
    integer or boolean one has no derivative."""
    for leaf in jax.tree.leaves(out):
        dtype = getattr(leaf, "dtype", None)
        if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
            got = dtype or type(leaf).__name__
            raise InputError(name, f"must return real floating numbers, returned {got}",
                             "return a real value (jnp.real(...); 0.0, not 0)")  # fmt: skip


def real_array(name: str, value, shape: Sequence[int] | None = None) -> Any:
    """``value`` as a finite float64 array (of ``shape`` when given), else ``InputError``.
    A traced value is returned as it is, its shape and dtype checked."""
    if traced(value):
        return _traced_array(name, value, shape)
    try:
        kind = np.asarray(value).dtype.kind
        arr = np.asarray(value, dtype=np.float64) if kind not in "cb" else None
    except (TypeError, ValueError):
        raise InputError(name, f"expected numbers, got {_fmt(value)[:200]}") from None
    if arr is None:  # a complex number's imaginary part, a flag: never read as reals
        what = "complex" if kind == "c" else "boolean"
        raise InputError(name, f"expected real numbers, got {what} values", "give floats")
    if shape is not None and arr.shape != tuple(shape):
        want = "x".join(str(s) for s in shape) if len(shape) != 1 else f"{shape[0]} numbers"
        raise InputError(name, f"expected {want}, got shape {arr.shape} {_fmt(value)}")
    if not np.all(np.isfinite(arr)):
        raise InputError(name, f"all entries must be finite, got {_fmt(arr)}")
    return arr


def _traced_array(name: str, value, shape: Sequence[int] | None):
    arr = jnp.asarray(value)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        raise InputError(name, f"expected real numbers, got a traced array of dtype {arr.dtype}")
    if shape is not None and arr.shape != tuple(shape):
        raise InputError(name, f"expected shape {tuple(shape)}, got a traced array of {arr.shape}")
    return arr


def positive_vector(name: str, value, length: int | None, *, min_length: int = 1) -> Any:
    """A vector of ``length`` (any length >= ``min_length`` if None) finite, positive
    numbers (a traced vector: its length only)."""
    arr = real_array(name, value)
    if length is not None and arr.shape != (length,):
        raise InputError(
            name,
            f"expected {length} numbers, got "
            + (f"{arr.size} {_fmt(arr)}" if arr.ndim == 1 else f"an array of shape {arr.shape}"),
            f"give {length} comma-separated positive values",
        )
    if length is None and (arr.ndim != 1 or arr.size < min_length):
        raise InputError(
            name,
            f"expected a vector of at least {min_length} numbers, got shape {arr.shape}",
            f"give {min_length} or more comma-separated positive values",
        )
    if traced(arr):
        return arr
    if np.any(arr <= 0):
        raise InputError(name, f"every entry must be > 0, got {_fmt(arr)}")
    return arr


def positive_scalar(name: str, value) -> Any:
    """One finite number > 0 (a traced one: its shape only)."""
    arr = real_array(name, value)
    if arr.ndim != 0 and arr.shape != (1,):
        raise InputError(name, f"expected one number, got shape {arr.shape}")
    if traced(arr):
        return arr.reshape(())
    v = float(arr.reshape(()))
    if v <= 0:
        raise InputError(name, f"must be > 0, got {v:g}")
    return v


def step_size(value, name: str = "h", *, allow_negative: bool = True) -> Any:
    """A finite, non-zero time step (strictly positive unless ``allow_negative``); a
    traced step (a scalar tracer) is returned as it is."""
    if traced(value):
        return _traced_array(name, value, ()).reshape(())
    if isinstance(value, bool) or not isinstance(
        value, numbers.Real | np.ndarray | np.generic | jax.Array
    ):
        raise InputError(name, f"expected a number, got {value!r}")
    h = float(value)
    if not math.isfinite(h):
        raise InputError(name, f"must be finite, got {h}")
    if h == 0.0:
        raise InputError(name, "must not be 0" if allow_negative else "must be > 0, got 0",
                         "a step of either sign" if allow_negative else None)  # fmt: skip
    if h < 0 and not allow_negative:
        raise InputError(name, f"must be > 0, got {h:g}")
    return h


# The largest count accepted: 2^53, the last integer float64 holds exactly (a step count
# beyond it could not even be told from its neighbours in the run's time t0 + k h).
MOST = 2**53


def count(name: str, value, minimum: int = 1) -> int:
    """An integer >= ``minimum`` and <= ``MOST`` (2^53)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise InputError(name, f"expected a whole number, got {value!r}")
    value = int(value)
    if value < minimum:
        raise InputError(name, f"must be >= {minimum}, got {value}")
    if value > MOST:
        raise InputError(name, f"must be at most 2^53 = {MOST:.3g}, got {value:.3g}")
    return value


def whole_number(name: str):
    """A settings parser (text or TOML value → int) whose error names ``name``."""

    def parse(text) -> int:
        try:
            return int(str(text))
        except ValueError:
            raise InputError(name, f"expected a whole number, got {text!r}") from None

    return parse


def save_every(steps: int, value) -> int:
    """``save_every`` must divide ``steps`` so that the final state is saved."""
    every = count("save_every", value)
    if every > steps:
        raise InputError(
            "save_every", f"{every} is larger than steps = {steps}", f"use a value <= {steps}"
        )
    if steps % every:
        near = divisor_near(steps, every)
        raise InputError(
            "save_every",
            f"{every} does not divide steps = {steps}, so the final state would not be saved",
            f"use a divisor of steps such as {near}",
        )
    return every


def real_dtype(value, name: str = "dtype") -> str:
    """'float64' or 'float32' (the precisions a run can have)."""
    if value not in ("float64", "float32"):
        raise InputError(name, f"must be 'float64' or 'float32', got {value!r}")
    if value == "float64" and not jax.config.read("jax_enable_x64"):
        raise InputError(
            name,
            "float64 needs JAX's 64-bit mode, which was turned off after importing mechint "
            "(every array would silently be float32)",
            "leave jax_enable_x64 on, or ask for dtype='float32'",
        )
    return str(value)


def precision(system, dtype: str) -> None:
    """InputError (``dtype``) where a run of ``system`` in float32 would be silently
    wrong (``System.float32_refused``)."""
    while dtype == "float32" and system is not None:  # a wrapper's base too (``Forced``)
        refused = getattr(system, "float32_refused", None)
        why = None if refused is None else refused()
        system = getattr(system, "base", None)
        if why is not None:
            raise InputError("dtype", f"float32 is refused: {why}",
                             "run it in float64 (the default)")  # fmt: skip


# Candidates tried on each side of the target: a suggestion costs milliseconds even for
# n = 10^21 (listing every divisor would take hours).
_DIVISOR_SEARCH = 100_000


def divisor_near(n: int, target: int, *, at_most: bool = False, at_least: bool = False) -> int:
    """A divisor of n near ``target`` (the nearest, the smaller on a tie; with
    ``at_most``/``at_least`` the nearest on that side), from a bounded search: when none
    lies within ``_DIVISOR_SEARCH`` of the target, gcd(n, target) (at most) or n (at least),
    which always divide n."""
    target = min(max(1, int(target)), n)
    for k in range(_DIVISOR_SEARCH):
        below, above = target - k, target + k
        if not at_least and below >= 1 and n % below == 0:
            return below
        if not at_most and above <= n and n % above == 0:
            return above
    return n if at_least else math.gcd(n, target)


def lookup(parameter: str, table: dict, name: str):
    """``table[name]``, or an ``InputError`` listing the valid names."""
    try:
        return table[name]
    except (KeyError, TypeError):
        close = suggest(name, table)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise InputError(
            parameter, f"unknown {parameter} {name!r}", hint + "choose one of: " + ", ".join(table)
        ) from None


def suggest(name, names) -> list[str]:
    """The names a mistyped ``name`` most likely meant: the same but for case, '_' or
    spaces, a name that contains it ('verlet' → 'stormer-verlet'), or a close spelling."""
    if not isinstance(name, str):
        return []
    import difflib

    names = list(names)
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    same = [n for n in names if n.lower().replace("-", "") == key.replace("-", "")]
    if same:
        return same
    inside = [n for n in names if key and key in n.lower()]
    if inside:
        return inside[:3]
    return difflib.get_close_matches(key, names, n=2, cutoff=0.6)


def rotation_tolerance(value) -> float:
    """The largest max |RᵀR − 1| read as round-off of a rotation given as ``value``:
    1e-10, or 64 ulps of the input's float type where that is coarser (a float32 rotation
    carries about 1e-7 from its rounding alone)."""
    dtype = getattr(value, "dtype", None)
    eps = float(np.finfo(dtype).eps) if dtype is not None and dtype.kind == "f" else 0.0
    return max(1e-10, 64 * eps)


def rotations(name: str, g0, n: int, batched: bool, batch: int) -> np.ndarray:
    """g0 ∈ SO(n): one (n, n), or one per batch member (batch, n, n) when ``batched``;
    a single one is repeated over the batch.  Orthogonal to ``rotation_tolerance(g0)``
    (g0 as given: a float32 one to float32 round-off)."""
    g = real_array(name, g0)
    shape = (batch, n, n) if batched and g.ndim == 3 else (n, n)
    if g.shape != shape:
        raise InputError(name, f"expected an {n}x{n} rotation matrix, got shape {g.shape}")
    defect = float(np.max(np.abs(np.swapaxes(g, -1, -2) @ g - np.eye(n))))
    if defect > rotation_tolerance(g0) or np.any(np.linalg.det(g) <= 0):
        raise InputError(
            name,
            f"is not a rotation (max |gᵀg − I| = {defect:.2g}, det = "
            f"{np.min(np.linalg.det(g)):.3g})",
            "give g in SO(n), e.g. the identity",
        )
    if batched and g.ndim == 2:
        g = np.broadcast_to(g, (batch, n, n)).copy()
    return g


def function_reference(parameter: str, value) -> Any:
    """The function a text "package.module:function" names (an experiment file's or the
    command line's reference to a user's function), imported; importing runs that
    module, as ``python -c "import package.module"`` would.  ``InputError`` naming
    ``parameter`` for anything else."""
    obj = imported(parameter, value, "function")
    if not callable(obj):
        raise InputError(parameter, f"{value!r} is not a function")
    return obj


def reference(fn) -> str:
    """ "module:qualname" of a function: what ``function_reference`` imports back (a
    lambda or a nested function is named, but cannot be imported); the same text in
    every process, unlike its repr (which holds its address)."""
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def imported(parameter: str, value, what: str) -> Any:
    """The object a text "package.module:name" names, imported (``what`` it should be,
    for the messages: "function", "class"); ``InputError`` naming ``parameter`` where
    the text is not such a reference or the import fails."""
    if not isinstance(value, str):
        raise InputError(parameter, f"must be a {what}, got {type(value).__name__}")
    module, _, attr = value.partition(":")
    names = [*module.split("."), *attr.split(".")]
    if not attr or not all(n.isidentifier() for n in names):
        raise InputError(
            parameter,
            f"{value!r} is not a reference to a {what}",
            f'write "package.module:{"Class" if what == "class" else what}" (a module on the '
            "Python path)",
        )
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise InputError(
            parameter, f"cannot import {value!r}: {exc}", "check the module is on PYTHONPATH"
        ) from None
    except (Exception, SystemExit) as exc:  # the user's module fails as it runs
        raise InputError(parameter, f"importing {module!r} failed: {type(exc).__name__}: "
                         f"{exc}", "fix the module (python -c 'import " + module + "' shows "
                         "the traceback)") from None  # fmt: skip
    try:
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError as exc:
        raise InputError(
            parameter, f"cannot import {value!r}: {exc}", "check the module is on PYTHONPATH"
        ) from None
    return obj


def output_shape(parameter: str, fn, probe: list, params, where: str, fix: str):
    """``jax.eval_shape`` of a user's function on ``probe`` (``ShapeDtypeStruct``s), with
    ``params`` (a pytree of arrays, or None) appended as one more argument: its output's
    shape and dtype, or ``InputError`` naming ``parameter`` ("could not be evaluated
    {where}") where it cannot be traced."""
    if params is not None:
        probe = [*probe, jax.tree.map(
            lambda a: jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)), params)]  # fmt: skip
    try:
        return jax.eval_shape(fn, *probe)
    except Exception as exc:  # any failure to trace is the user's function's fault
        raise InputError(
            parameter, f"could not be evaluated {where}: {type(exc).__name__}: {exc}", fix
        ) from None
