"""Bodies files: a planetary system as JSON (``mechint run --bodies FILE``, ``mechint
stability``), read and checked before anything is built."""

from __future__ import annotations

from typing import Any

import numpy as np

from mechint.errors import InputError
from mechint.systems.nbody import NBody
from mechint.systems.orbital_elements import ELEMENT_KEYS


def read_bodies(path) -> tuple[NBody, tuple[np.ndarray, np.ndarray]]:
    """(the system, its state) from a bodies file (``mechint run --bodies FILE``), JSON:

        {"G": 2.95912208286e-4, "encounter": 0.01, "escape": 100,  (all optional)
         "frame": "jacobi",                                    (elements: jacobi or heliocentric)
         "bodies": [{"name": "Sun", "mass": 1.0, "q": [0, 0, 0], "v": [0, 0, 0]},
                    {"name": "Jupiter", "mass": 9.5e-4, "q": [...], "v": [...]}, ...]}

    Each body has a mass and either a position ``q`` and velocity ``v`` (every body, the
    frame inertial) or, for every body but the first, orbital elements ``a`` (or ``P``),
    ``e``, ``i``, ``Omega``, ``omega`` and ``M`` (or ``lam`` or ``tp``), radians, as
    ``NBody.from_elements`` takes them (the state is then barycentric).  ``name`` is
    optional.  Units: those of G (default 1)."""
    data = read_bodies_data(path)
    keys = {"encounter": data["encounter"], "names": data["names"], "escape": data["escape"]}
    if data["elements"] is None:
        system = NBody(data["masses"], data["G"], **keys)
        w = np.asarray(system.inertia_weights()).reshape(-1, 1)
        return system, system.validate_state((data["q"], w * data["v"]), "bodies")[0]
    return NBody.from_elements(data["masses"], data["elements"], data["G"], data["frame"],
                               **keys)  # fmt: skip


def read_bodies_data(path) -> dict:
    """A bodies file (``read_bodies``) checked and read, nothing built: masses, names, G,
    encounter, escape, frame, and either ``elements`` (a dict of lists, bodies 1..N−1)
    or positions ``q`` and velocities ``v`` (``elements`` None)."""
    import json
    from pathlib import Path

    where = Path(path)
    if not where.is_file():
        raise InputError("bodies", f"no such file: {str(path)[:200]}", "give a JSON bodies file")
    if where.stat().st_size > _BODIES_BYTES:
        raise InputError("bodies", f"{where.name} is larger than {_BODIES_BYTES >> 20} MB")
    try:
        data = json.loads(where.read_text())
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError("bodies", f"{where.name} is not JSON: {str(exc)[:120]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("bodies"), list):
        raise InputError("bodies", "expected an object with a list 'bodies'",
                         'e.g. {"G": 1, "bodies": [{"mass": 1, "q": [0, 0, 0], '
                         '"v": [0, 0, 0]}, ...]}')  # fmt: skip
    top = {"G", "frame", "encounter", "escape", "bodies"}
    if set(data) - top:  # (a misspelt escape would run without its check)
        raise InputError("bodies", f"unknown key {sorted(set(data) - top)[0]!r}",
                         f"keys: {', '.join(sorted(top))}")  # fmt: skip
    bodies = data["bodies"]
    if len(bodies) < 2 or not all(isinstance(b, dict) for b in bodies):
        raise InputError("bodies", "give at least two bodies, each an object with a 'mass'")
    known = {"name", "mass", "q", "v", *ELEMENT_KEYS}
    for k, b in enumerate(bodies):
        extra = set(b) - known
        if extra:
            raise InputError("bodies", f"body {k}: unknown key {sorted(extra)[0]!r}",
                             f"keys: {', '.join(sorted(known))}")  # fmt: skip
        if "mass" not in b:
            raise InputError("bodies", f"body {k} has no 'mass'")
    out: dict[str, Any] = {
        "names": [str(b.get("name", f"body {k}")) for k, b in enumerate(bodies)],
        "masses": [_number(b["mass"], f"body {k}: mass") for k, b in enumerate(bodies)],
        "G": _number(data.get("G", 1.0), "G"),
        "frame": str(data.get("frame", "jacobi")),
        "elements": None,
    }
    for key in ("encounter", "escape"):
        out[key] = None if data.get(key) is None else _number(data[key], key)
    cartesian = ["q" in b or "v" in b for b in bodies]
    if all(cartesian):
        out["q"] = np.array([_vector(b.get("q"), f"body {k}: q") for k, b in enumerate(bodies)])
        out["v"] = np.array([_vector(b.get("v"), f"body {k}: v") for k, b in enumerate(bodies)])
        return out
    if any(cartesian[1:]) or set(bodies[0]) - {"name", "mass", "q", "v"}:
        raise InputError("bodies", "give every body q and v, or the first a mass only and "
                         "every other its orbital elements")  # fmt: skip
    elements: dict[str, list[float]] = {}
    for k, b in enumerate(bodies[1:], start=1):
        for key in set(b) & set(ELEMENT_KEYS):
            elements.setdefault(key, []).append(_number(b[key], f"body {k}: {key}"))
    counts = {key: len(v) for key, v in elements.items()}
    if any(n != len(bodies) - 1 for n in counts.values()):
        raise InputError("bodies", "every body but the first needs the same elements",
                         f"got counts {counts}")  # fmt: skip
    out["elements"] = elements
    return out


_BODIES_BYTES = 16 << 20  # a bodies file larger than this is refused before it is read


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError("bodies", f"{what}: expected a number, got {str(value)[:60]!r}")
    return float(value)


def _vector(value, what: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 3:
        raise InputError("bodies", f"{what}: expected 3 numbers, got {str(value)[:60]!r}")
    return [_number(c, what) for c in value]
