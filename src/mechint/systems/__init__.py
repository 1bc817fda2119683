"""Mechanical systems as immutable JAX pytrees (see ``mechint.systems.base``)."""

from mechint.errors import InputError
from mechint.systems.euler_top import EulerTop

SYSTEMS = {"euler-top": EulerTop}


def get(name: str):
    """The system class registered under the CLI name ``name``."""
    try:
        return SYSTEMS[name]
    except KeyError:
        raise InputError(
            "system", f"unknown system {name!r}", "choose one of: " + ", ".join(SYSTEMS)
        ) from None


__all__ = ["SYSTEMS", "EulerTop", "get"]
