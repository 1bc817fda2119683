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


def _from_file(option: str, path: Path) -> np.ndarray:
    if not path.is_file():
        raise InputError(option, f"file {str(path)!r} not found")
    try:
        if path.suffix == ".npy":
            return np.asarray(np.load(path, allow_pickle=False), dtype=float)
        return np.asarray(json.loads(path.read_text()), dtype=float)
    except (ValueError, OSError) as exc:
        raise InputError(option, f"cannot read numbers from {str(path)!r}: {exc}") from None


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


def nonnegative_float(option: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(option, f"expected a number, got {text!r}") from None
    if not value >= 0.0 or value == float("inf"):
        raise InputError(option, f"must be a finite number >= 0, got {text!r}")
    return value
