"""Reading numbers and arrays from the command line (errors name the option)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mechint._validate import count, step_size
from mechint.errors import InputError


def numbers(option: str, text: str) -> np.ndarray:
    """'2,1,0.5' → vector; '1,0,0;0,1,0' → rows; a path ending .npy/.json → its array."""
    text = text.strip()
    if text.endswith((".npy", ".json")):
        return _from_file(option, Path(text))
    try:
        rows = [[float(v) for v in row.split(",")] for row in text.split(";")]
    except ValueError:
        raise InputError(
            option,
            f"cannot read {text!r} as comma-separated numbers",
            "write e.g. 2,1,0.5 (rows separated by ';')",
        ) from None
    if len({len(r) for r in rows}) != 1:
        raise InputError(option, f"rows of {text!r} have different lengths")
    arr = np.array(rows, dtype=float)
    return arr[0] if arr.shape[0] == 1 else arr


# the most numbers an array file may hold, and the deepest nesting of a JSON array
_MOST_NUMBERS = 10**8
_DEEPEST = 4


def _from_file(option: str, path: Path) -> np.ndarray:
    """The real array in a ``.npy`` or ``.json`` file; anything else (another dtype, a
    pickle, a header that lies, objects, booleans, deep nesting) is one InputError."""
    if not path.is_file():
        raise InputError(option, f"file {str(path)!r} not found")
    name = repr(str(path))
    try:
        if path.suffix == ".npy":
            return _npy(option, path)
        if path.stat().st_size > 32 * _MOST_NUMBERS:
            raise InputError(option, f"{name} is too large for an array of numbers")
        return _json_numbers(option, name, json.loads(path.read_text()))
    except InputError:
        raise
    except (ValueError, OSError, SyntaxError, RecursionError, UnicodeError) as exc:
        why = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise InputError(option, f"cannot read numbers from {name}: {why}") from None


def _npy(option: str, path: Path) -> np.ndarray:
    """A ``.npy`` file of real numbers, its header checked before any data is read."""
    import tokenize

    with open(path, "rb") as fh:
        try:
            version = np.lib.format.read_magic(fh)
            read = {(1, 0): np.lib.format.read_array_header_1_0,
                    (2, 0): np.lib.format.read_array_header_2_0}.get(version)  # fmt: skip
            if read is None:
                raise ValueError(f"unknown .npy version {version}")
            shape, _fortran, dtype = read(fh)
        except (tokenize.TokenError, TypeError) as exc:
            raise ValueError(f"malformed .npy header ({exc})") from None
        size = int(np.prod(shape, dtype=object))
        if dtype.kind not in "fiu" or dtype.fields is not None or dtype.subdtype is not None:
            raise InputError(option, f"{str(path)!r} holds {dtype} values",
                             "save real numbers (float64)")  # fmt: skip
        data_bytes = path.stat().st_size - fh.tell()
        if size > _MOST_NUMBERS or size * dtype.itemsize > data_bytes:
            raise InputError(option, f"{str(path)!r} declares shape {shape}, which it does "
                             "not hold (or more numbers than a state takes)")  # fmt: skip
    return np.asarray(np.load(path, allow_pickle=False), dtype=float)


def _json_numbers(option: str, name: str, value) -> np.ndarray:
    """A JSON array (nested at most ``_DEEPEST`` deep) of numbers, booleans refused."""
    level = [value]
    for _depth in range(_DEEPEST + 1):
        nested = [v for v in level if isinstance(v, list)]
        bad = [v for v in level if not isinstance(v, list | int | float) or isinstance(v, bool)]
        if bad:
            raise InputError(option, f"{name} holds {type(bad[0]).__name__} "
                             f"{json.dumps(bad[0])[:40]}, not a number", "give an array of "
                             "numbers")  # fmt: skip
        if not nested:
            break
        level = [v for lst in nested for v in lst]
    else:
        raise InputError(option, f"{name} nests arrays deeper than {_DEEPEST}")
    try:
        return np.asarray(value, dtype=float)
    except ValueError:
        raise InputError(option, f"{name} is not a rectangular array of numbers") from None


def positive_float(option: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(option, f"expected a number, got {text!r}") from None
    return step_size(value, option, allow_negative=False)


def whole(option: str, text: str, minimum: int = 1) -> int:
    try:
        value = (
            int(text.replace("_", ""))
            if text.replace("_", "").lstrip("-").isdigit()
            else float(text)
        )
    except ValueError:
        raise InputError(option, f"expected a whole number, got {text!r}") from None
    return count(option, value, minimum)


def real(option: str, text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(option, f"expected a number, got {text!r}") from None
    if not np.isfinite(value):
        raise InputError(option, f"must be finite, got {text!r}")
    return value


def nonnegative_float(option: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(option, f"expected a number, got {text!r}") from None
    if not value >= 0.0 or value == float("inf"):
        raise InputError(option, f"must be a finite number >= 0, got {text!r}")
    return value
