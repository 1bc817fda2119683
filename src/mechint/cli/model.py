"""Options shared by the commands that take a system, an initial state and integrators
(``run``, ``check``, ``compare``), generated from the systems' and integrators' own
tables (``parameter_table``, ``state_options``, ``settings``): adding a system or an
integrator adds its options here without touching this file.  Every error names the
option."""

from __future__ import annotations

import argparse

import numpy as np

from mechint import _validate, integrators, systems
from mechint.cli import parsing
from mechint.errors import InputError
from mechint.integrators.registry import relabel as relabel
from mechint.maps import Integrator, require_serves, wrappers
from mechint.systems.base import System

_NUMBERS = (
    "comma-separated numbers, rows separated by ';' (a batch, or a matrix), or a .npy/.json file"
)


def _options(table) -> dict[str, str]:
    """option → help over every registered system's ``table(cls)`` entries, the helps of
    systems sharing an option name joined."""
    helps: dict[str, dict[str, list[str]]] = {}
    for owner, cls in systems.SYSTEMS.items():
        for entry in table(cls):
            helps.setdefault(entry.name, {}).setdefault(entry.help, []).append(owner)
    return {
        name: "; ".join(f"{text} ({', '.join(owners)})" for text, owners in by_text.items())
        for name, by_text in helps.items()
    }


def parameter_options() -> dict[str, str]:
    return _options(lambda cls: cls.parameter_table)


def state_options() -> dict[str, str]:
    return _options(lambda cls: cls.state_options)


def add_system_options(p: argparse.ArgumentParser) -> None:
    """--system, its parameters and its initial state (from the systems' tables)."""
    p.add_argument("--system", required=True, help="one of: " + ", ".join(systems.SYSTEMS))
    presets = [
        f"{name} ({owner})" for owner, cls in systems.SYSTEMS.items() for name in cls.presets
    ]
    p.add_argument("--preset", help="a named system with its initial state, in place of its "
                   "parameters and state: " + ", ".join(presets))  # fmt: skip
    p.add_argument("--bodies", help="nbody: a JSON file of the bodies (G, masses, names, and "
                   "positions and velocities or orbital elements; systems.nbody.read_bodies) in "
                   "place of the parameters and state")  # fmt: skip
    for name, text in parameter_options().items():
        p.add_argument(f"--{name}", help=text)
    for name, text in state_options().items():
        p.add_argument(f"--{name}", help=f"{text}: {_NUMBERS}")
    p.add_argument("--constraints", help="package.module:function, g(q) returning the m "
                   "holonomic constraints g(q) = 0 the system (a separable canonical one: "
                   "harmonic-oscillator, kepler, ...) is held to (systems.Constrained; run by "
                   "rattle, shake or a composition of rattle)")  # fmt: skip
    p.add_argument("--project", action="store_true", help="move the initial state onto the "
                   "constraint manifold first (a constrained state must lie on it)")  # fmt: skip
    p.add_argument("--force", help="package.module:function, a force f(t, x) of the time "
                   "and the state (on p for a canonical system, in its coordinates for "
                   "others; systems.Forced: the work done and the energy balance "
                   "H - work + dissipated are carried along, run by the maps that take "
                   "forces)")  # fmt: skip
    p.add_argument("--dissipation", help="package.module:function, a dissipation matrix "
                   "R(x) >= 0 (on dH/dp for a canonical system; systems.Forced: the energy "
                   "it takes is carried along)")  # fmt: skip
    p.add_argument("--time-transform", help="package.module:function, g(q, p) > 0: the "
                   "canonical system in the fictive time s with dt/ds = g (systems."
                   "TimeTransformed: steps of h in s, e.g. g = |q|^1.5 for an eccentric orbit; "
                   "the files hold the physical time t and the energy's conjugate e)")  # fmt: skip


def add_integrator_options(p: argparse.ArgumentParser, *, several: bool = False) -> None:
    """--integrator (or --integrators, comma-separated) and their settings."""
    names = ", ".join(integrators.INTEGRATORS)
    if several:
        p.add_argument("--integrators", required=True, help="comma-separated, from: " + names)
    else:
        p.add_argument("--integrator", required=True, help="one of: " + names)
    for name, uses in integrators.SETTINGS.items():
        p.add_argument(f"--{name}", help="; ".join(s.help for _, s in uses))


def _value(args: argparse.Namespace, name: str):
    return getattr(args, name, None)


def _preset(args: argparse.Namespace, cls) -> tuple[System, object] | None:
    """(system, x0) of --preset or --bodies, or None where neither is given; no other
    parameter or state option may come with them."""
    preset, bodies = _value(args, "preset"), _value(args, "bodies")
    if preset is None and bodies is None:
        return None
    option = "--preset" if preset is not None else "--bodies"
    if preset is not None and bodies is not None:
        raise InputError("--bodies", "give --preset or --bodies, not both")
    for name in (*parameter_options(), *state_options()):
        if _value(args, name) is not None:
            raise InputError(f"--{name}", f"{option} gives the system and its state",
                             f"leave --{name} out, or {option}")  # fmt: skip
    # (their state is the system's own: it has no entries for a wrapper's parts)
    for name in ("constraints", "time_transform", "force", "dissipation"):
        if _value(args, name) is not None:
            flag = "--" + name.replace("_", "-")
            raise InputError(flag, f"does not go with {option} (the state it gives is the "
                             f"system's own)", f"give the system's parameters and state "
                             f"instead of {option}, or leave {flag} out")  # fmt: skip
    if preset is not None:
        if preset not in cls.presets:
            known = ", ".join(cls.presets) or "none"
            raise InputError("--preset", f"{cls.name} has no preset {preset!r}", f"one of: {known}")
        return cls.presets[preset]()
    read = getattr(cls, "read_bodies", None)
    if read is None:
        raise InputError("--bodies", f"does not apply to {cls.name}", "use it with nbody")
    try:
        return read(bodies)
    except InputError as exc:
        raise InputError("--bodies", exc.problem, exc.fix) from None


def build_system(args: argparse.Namespace) -> System:
    """The system named by --system with its parameters, or by --preset or --bodies with
    its state (kept on ``args`` for ``initial_state``; errors name the option)."""
    cls = relabel("--system", systems.get, args.system)
    given = _preset(args, cls)
    if given is not None:
        args.preset_state = given[1]
        return given[0]
    table = {p.name: p for p in cls.parameter_table}
    for name in parameter_options():
        if _value(args, name) is not None and name not in table:
            raise InputError(f"--{name}", f"does not apply to {cls.name}")
    kwargs: dict = {}
    for name, p in table.items():
        text = _value(args, name)
        if text is None:
            if p.required:
                raise InputError(f"--{name}", f"required for {cls.name}", f"e.g. {p.example}")
            continue
        value = text if p.text else parsing.numbers(f"--{name}", text)
        kwargs.update(relabel(f"--{name}", p.kwargs, value))
    try:
        system = cls(**kwargs)
    except InputError as exc:
        named = exc.parameter.split("[")[0]  # (an entry's: joints[1])
        option = named if named in table else next(iter(table), exc.parameter)
        raise InputError(f"--{option}", exc.problem, exc.fix) from None
    return transformed(args, constrained(args, system))


def transformed(args: argparse.Namespace, system: System) -> System:
    """``system`` in the fictive time of --time-transform, or with the --force and
    --dissipation of ``systems.Forced``, where given (errors name the option)."""
    g = _value(args, "time_transform")
    force, dissipation = _value(args, "force"), _value(args, "dissipation")
    if g is not None:
        if force is not None or dissipation is not None:
            raise InputError("--time-transform", "does not go with --force or --dissipation",
                             "the forced system takes variable steps from --integrator "
                             "reversible-adaptive --sigma package.module:function")  # fmt: skip
        fn = relabel("--time-transform", _validate.function_reference, "g", g)
        try:
            return systems.TimeTransformed(system, fn)
        except InputError as exc:
            option = "--system" if exc.parameter == "system" else "--time-transform"
            raise InputError(option, exc.problem, exc.fix) from None
    if force is None and dissipation is None:
        return system
    functions = {}
    for option, text in (("--force", force), ("--dissipation", dissipation)):
        if text is not None:
            functions[option[2:]] = relabel(option, _validate.function_reference, option, text)
    try:
        return systems.Forced(system, **functions)
    except InputError as exc:
        option = "--system" if exc.parameter == "system" else f"--{exc.parameter}"
        raise InputError(option, exc.problem, exc.fix) from None


def constrained(args: argparse.Namespace, system: System) -> System:
    """``system`` held to --constraints where given (``systems.Constrained``)."""
    reference = _value(args, "constraints")
    if reference is None:
        return system
    if _value(args, "preset") is not None or _value(args, "bodies") is not None:
        raise InputError("--constraints", "does not apply to a --preset or --bodies system")
    try:
        return systems.Constrained(system, reference)
    except InputError as exc:
        option = "--system" if exc.parameter == "system" else "--constraints"
        raise InputError(option, exc.problem, exc.fix) from None


def projected(args: argparse.Namespace, system: System, x0):
    """x0, moved onto the constraint manifold where --project is given."""
    if not _value(args, "project"):
        return x0
    if not getattr(system, "constrained", False):
        raise InputError(
            "--project",
            f"does not apply to {system.name} without constraints",
            "use it with --constraints, pendulum-chain or rigid-bodies --joints",
        )
    try:
        return system.project(x0)  # type: ignore[attr-defined]
    except InputError as exc:  # (joints that cannot be met are --joints' fault)
        option = "--joints" if exc.parameter == "joints" else "--project"
        raise InputError(option, exc.problem, exc.fix) from None


def orientation(args: argparse.Namespace, system: System) -> np.ndarray | None:
    """g0 from --orientation ('identity' or a matrix), or None."""
    text = getattr(args, "orientation", None)
    if text is None:
        return None
    if not isinstance(system, systems.Body):
        raise InputError("--orientation", f"does not apply to {system.name}")
    if text.strip() == "identity":
        return np.eye(system.n)
    return parsing.numbers("--orientation", text)


def _given_state(args: argparse.Namespace, system: System) -> dict:
    own = {s.name for s in system.state_options}
    given = {}
    for name in state_options():
        text = _value(args, name)
        if text is None:
            continue
        if name not in own:
            names = [n for n, cls in systems.SYSTEMS.items() if name in _names(cls)]
            raise InputError(
                f"--{name}", f"does not apply to {system.name}", f"use it with {names[0]}"
            )
        given[name] = parsing.numbers(f"--{name}", text)
    return given


def _names(cls) -> set[str]:
    return {s.name for s in cls.state_options}


def preset_state(args: argparse.Namespace):
    """The state a --preset gives (None without one)."""
    return getattr(args, "preset_state", None)


def given_state_options(args: argparse.Namespace, system: System) -> list[str]:
    """The names of the state options given on the command line (each the system's)."""
    return list(_given_state(args, system))


def initial_state(args: argparse.Namespace, system: System):
    """x0 and g0 (or None) from the options the system takes (or its preset)."""
    if preset_state(args) is not None:
        return projected(args, system, preset_state(args)), orientation(args, system)
    g0 = orientation(args, system)
    given = _given_state(args, system)
    return projected(args, system, relabel_state(system.state_from_options, given, g0)), g0


def relabel_state(fn, *a):
    """A system's state error (naming a state option) named as the command-line option."""
    try:
        return fn(*a)
    except InputError as exc:
        option = _OPTION_OF.get(exc.parameter, f"--{exc.parameter}")
        raise InputError(option, exc.problem, exc.fix) from None


# the library's parameters the command line sets by an option of another name (the
# time transformation's g); an integrator's settings are their own options (--sigma)
_OPTION_OF = {"g": "--time-transform"}


def as_option(args: argparse.Namespace, exc: InputError) -> InputError:
    """``exc`` naming the command-line option of this command that sets the library's
    parameter it names (g: --time-transform; an integrator's setting: --sigma, --base),
    ``exc`` itself where the parameter is an option already or the command has none."""
    name = exc.parameter
    if name in _OPTION_OF:
        option = _OPTION_OF[name]
    elif name in integrators.SETTINGS:
        option = "--" + name.replace("_", "-")
    else:
        return exc
    if not hasattr(args, option[2:].replace("-", "_")):
        return exc
    return InputError(option, exc.problem, exc.fix)


def check_compensated(args: argparse.Namespace, chosen: list[Integrator]) -> None:
    """--compensated refused, before any work, with a map whose state carries its own
    clock (reversible-adaptive: its clock is not compensated)."""
    if not getattr(args, "compensated", None):
        return
    for integrator in chosen:
        if any(w.extra == "clock" for w in wrappers(integrator)):
            raise InputError("--compensated", f"{integrator.name}'s clock is not compensated",
                             f"leave --compensated out with {integrator.name}")  # fmt: skip


def states_or_example(args: argparse.Namespace, system: System):
    """The state or batch the options give, or ``system.example_state()``."""
    if preset_state(args) is not None:
        return projected(args, system, preset_state(args))
    given = _given_state(args, system)
    if not given:
        return system.example_state()
    return projected(args, system, relabel_state(system.state_from_options, given, None))


def one_state(args: argparse.Namespace, system: System):
    """The state the options give (one, not a batch), or ``system.example_state()``."""
    if preset_state(args) is not None:
        return preset_state(args)
    given = _given_state(args, system)
    if not given:
        return system.example_state()
    x0 = relabel_state(system.state_from_options, given, None)
    if system.validate_state(x0)[1]:
        raise InputError(f"--{next(iter(given))}", "give one state here, not a batch")
    return x0


def integrator_names(args: argparse.Namespace) -> list[str]:
    """The names in --integrator or --integrators, each known, and every integrator
    setting given used by one of them."""
    option = "--integrators" if hasattr(args, "integrators") else "--integrator"
    text = args.integrators if hasattr(args, "integrators") else args.integrator
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    if not names:
        raise InputError(option, "names no integrator")
    if option == "--integrator" and len(names) > 1:  # never one of them without a word
        raise InputError(
            option,
            f"takes one integrator, got {len(names)} ({', '.join(names)})",
            "run the command once for each (compare takes --integrators a,b)",
        )
    for name in names:
        relabel(option, integrators.get, name)
    for setting, uses in integrators.SETTINGS.items():
        accepting = [n for n, _ in uses]
        if _value(args, setting) is not None and not any(n in accepting for n in names):
            raise InputError(
                f"--{setting}",
                f"does not apply to {', '.join(names)}",
                f"use it with {accepting[0]}",
            )
    return names


def build_integrator(
    args: argparse.Namespace, system: System, name: str | None = None
) -> Integrator:
    """The integrator ``name`` (default: --integrator) with the settings given that apply
    to it (``integrators.build``; errors name the option)."""
    name = name or integrator_names(args)[0]
    own = {s.name for s in integrators.get(name).settings}
    settings = {k: _value(args, k) for k in integrators.SETTINGS if k in own}
    try:
        return integrators.build(name, system, settings)
    except InputError as exc:
        raise InputError(f"--{exc.parameter.lstrip('-')}", exc.problem, exc.fix) from None


def check_serves(integrator: Integrator, system: System, option: str = "--integrator") -> None:
    """``require_serves``, its error naming the command-line option."""
    require_serves(integrator, system, option)
