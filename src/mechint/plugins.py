"""Maps and systems of the user's own, by name: references ``package.module:Class`` and
the entry points of installed packages.

**A reference** names a class on the Python path wherever a registered name goes:
``mechint run --integrator my_package.maps:MyMap --system my_package.models:MyModel``,
an experiment file's ``integrators = ["my_package.maps:MyMap"]``, or
``mechint.integrators.get("my_package.maps:MyMap")``.  The class must subclass
``mechint.integrators.Integrator`` (or ``mechint.systems.System``); its ``settings``
(or ``parameter_table`` and ``state_options``) become options of the command, as a
registered class's do.  Importing the module runs it, as ``python -c "import
my_package.maps"`` would.

**An entry point** registers a class of an installed package for good: in that package's
``pyproject.toml``

    [project.entry-points."mechint.integrators"]
    my-map = "my_package.maps:MyMap"

    [project.entry-points."mechint.systems"]
    my-model = "my_package.models:MyModel"

``load()`` adds each to ``integrators.INTEGRATORS`` or ``systems.SYSTEMS`` under the
class's own ``name`` (the entry point's name must be that name), once per process: the
command line calls it before it builds its options, and ``integrators.get``,
``systems.get`` and ``integrators.serving`` call it, so the class appears in ``--help``,
takes its options, is run by the sweeps and is listed and checked as the built-in ones
are.  An entry point that cannot be imported, is not such a class, or whose name is
taken is left out with a warning that names it and the package it comes from: a broken
package never stops mechint.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from mechint._validate import imported
from mechint.errors import InputError

GROUPS = {"integrator": "mechint.integrators", "system": "mechint.systems"}
_loaded = False


def is_reference(name: Any) -> bool:
    """Whether ``name`` is a text "package.module:Class" (registered names have no ':')."""
    return isinstance(name, str) and ":" in name


def _kinds() -> dict[str, tuple[dict, type]]:
    """kind → (its registry, the base class its entries subclass)."""
    from mechint import integrators, systems

    return {
        "integrator": (integrators.INTEGRATORS, integrators.Integrator),
        "system": (systems.SYSTEMS, systems.System),
    }


def reference(kind: str, text: str, parameter: str | None = None) -> type:
    """The class a text "package.module:Class" names, imported and checked: a subclass
    of the kind's base (``Integrator`` or ``System``), else ``InputError`` naming
    ``parameter`` (default: the kind)."""
    parameter = parameter or kind
    cls = imported(parameter, text, "class")
    base = _kinds()[kind][1]
    if not (isinstance(cls, type) and issubclass(cls, base)):
        what = cls.__name__ if isinstance(cls, type) else type(cls).__name__
        raise InputError(
            parameter,
            f"{text!r} names {what}, not a subclass of {base.__module__}.{base.__qualname__}",
            f"name a class of your own that subclasses {base.__qualname__} (docs/extending.md)",
        )
    return cls


def load() -> None:
    """Add the classes of the installed packages' entry points (``GROUPS``) to the
    registries, once per process; each one that cannot be added is left out with a
    warning naming it (see the module docstring)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for kind, group in GROUPS.items():
        registry, base = _kinds()[kind]
        for ep in importlib.metadata.entry_points(group=group):
            where = f"the entry point {ep.name} = {ep.value!r} of {_package(ep)} ({group})"
            try:
                cls = ep.load()
            except Exception as exc:  # a broken package: its class is left out
                warnings.warn(f"{where} could not be imported ({type(exc).__name__}: {exc}); "
                              "it is left out", stacklevel=2)  # fmt: skip
                continue
            problem = _problem(cls, base, ep.name, registry)
            if problem:
                warnings.warn(f"{where} {problem}; it is left out", stacklevel=2)
                continue
            registry[ep.name] = cls
    _settings_changed()


def _package(ep) -> str:
    dist = getattr(ep, "dist", None)
    return f"the package {dist.name}" if dist is not None else "an installed package"


def _problem(cls, base: type, name: str, registry: dict) -> str | None:
    """Why ``cls`` cannot be registered under ``name``, or None."""
    if not (isinstance(cls, type) and issubclass(cls, base)):
        return f"is not a subclass of {base.__qualname__}"
    if getattr(cls, "name", None) != name:
        return f"names the class {cls.__qualname__}, whose name is {cls.name!r}, not {name!r}"
    taken = registry.get(name)
    if taken is not None and taken is not cls:
        return f"takes the name {name!r} of {taken.__module__}.{taken.__qualname__}"
    return None


def _settings_changed() -> None:
    """The integrators' settings table (``integrators.SETTINGS``) after the registry
    changed: the same dict, rebuilt."""
    from mechint.integrators import registry

    table = registry.settings_for()
    registry.SETTINGS.clear()
    registry.SETTINGS.update(table)


def references_in(argv: Iterable[str]) -> dict[str, list[str]]:
    """The references a command line gives: kind → the texts of ``--integrator``,
    ``--integrators`` (comma-separated) and ``--system`` that contain ':'."""
    options = {"--integrator": "integrator", "--integrators": "integrator", "--system": "system"}
    out: dict[str, list[str]] = {"integrator": [], "system": []}
    args = list(argv)
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name not in options:
            continue
        if not eq:
            value = args[i + 1] if i + 1 < len(args) else ""
        for text in value.split(",") if name == "--integrators" else [value]:
            if is_reference(text.strip()):
                out[options[name]].append(text.strip())
    return out


@contextlib.contextmanager
def referenced(argv: Iterable[str]) -> Iterator[None]:
    """The classes a command line references (``references_in``), imported and added to
    the registries under their reference text while the command runs (its options,
    its lookups), and taken out after it; errors name the option."""
    load()
    added: list[tuple[dict, str]] = []
    try:
        for kind, texts in references_in(argv).items():
            registry = _kinds()[kind][0]
            option = "--system" if kind == "system" else "--integrator"
            for text in texts:
                if text not in registry:
                    registry[text] = reference(kind, text, option)
                    added.append((registry, text))
        if added:
            _settings_changed()
        yield
    finally:
        for registry, text in added:
            registry.pop(text, None)
        if added:
            _settings_changed()


__all__ = ["GROUPS", "is_reference", "load", "reference", "referenced", "references_in"]
