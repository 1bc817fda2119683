"""The registry of named integrators and their settings table, shared by the CLI and
experiment files: ``build(name, system, settings)`` makes an integrator from plain values
(option text or TOML values), every error naming the setting."""

from __future__ import annotations

import dataclasses
from typing import Any

from mechint._validate import lookup
from mechint.errors import InputError
from mechint.integrators.composition import Composition
from mechint.integrators.discrete_lagrangian import DiscreteLagrangian
from mechint.integrators.energy import AverageVectorField, DiscreteGradient
from mechint.integrators.exact_flow import ExactFlow
from mechint.integrators.explicit_rk import RK4, ExplicitEuler
from mechint.integrators.gauss import Gauss
from mechint.integrators.implicit_midpoint import ImplicitMidpoint
from mechint.integrators.kahan import Kahan
from mechint.integrators.lie_group import RKMK, CommutatorFree
from mechint.integrators.lie_group_variational import LieGroupVariational
from mechint.integrators.rattle import Rattle, Shake
from mechint.integrators.reversible_adaptive import ReversibleAdaptive
from mechint.integrators.rigid_body_splitting import RigidBodySplitting
from mechint.integrators.settle import Settle
from mechint.integrators.splitting import Splitting
from mechint.integrators.stormer_verlet import StormerVerlet
from mechint.integrators.symplectic_euler import SymplecticEuler
from mechint.integrators.wisdom_holman import SABA, WisdomHolman
from mechint.maps import Integrator, Setting, refusal

INTEGRATORS: dict[str, type[Integrator]] = {
    cls.name: cls
    for cls in (
        Kahan,
        ImplicitMidpoint,
        RK4,
        ExplicitEuler,
        Gauss,
        AverageVectorField,
        DiscreteGradient,
        DiscreteLagrangian,
        SymplecticEuler,
        StormerVerlet,
        Splitting,
        Composition,
        RigidBodySplitting,
        ExactFlow,
        LieGroupVariational,
        RKMK,
        CommutatorFree,
        WisdomHolman,
        SABA,
        Rattle,
        Shake,
        Settle,
    )
}


# Maps around another map that take a user's function (``--integrator reversible-adaptive
# --sigma package.module:function``): named and built as the registered maps are, but not
# among them, since they cannot be built with no arguments (the generic tests, the
# methods table and ``serving`` build every registered map so).
WRAPPERS: dict[str, type[Integrator]] = {cls.name: cls for cls in (ReversibleAdaptive,)}


def settings_for() -> dict[str, list[tuple[str, Setting]]]:
    """Every setting name → [(integrator name, Setting), ...] (the CLI's options)."""
    out: dict[str, list[tuple[str, Setting]]] = {}
    for name, cls in {**INTEGRATORS, **WRAPPERS}.items():
        for s in cls.settings:
            out.setdefault(s.name, []).append((name, s))
    return out


SETTINGS = settings_for()


def get(name: str) -> type[Integrator]:
    """The integrator class registered under ``name`` (the installed packages' entry
    points included), or the class a reference "package.module:Class" names (a subclass
    of ``Integrator``; ``mechint.plugins``)."""
    from mechint import plugins

    if plugins.is_reference(name):
        return INTEGRATORS.get(name) or plugins.reference("integrator", name)
    if isinstance(name, str) and name in WRAPPERS:
        return WRAPPERS[name]
    if not isinstance(name, str) or name not in INTEGRATORS:
        plugins.load()
    try:
        return lookup("integrator", {**INTEGRATORS, **WRAPPERS}, name)
    except InputError as exc:
        fix = f"{exc.fix}, or a class of your own: package.module:Class"
        raise InputError(exc.parameter, exc.problem, fix) from None


def build(name: str, system=None, settings: dict[str, Any] | None = None) -> Integrator:
    """The integrator ``name`` (``get``: a registered name or a reference) with
    ``settings`` (name → value; None values are unset).

    A setting the integrator does not take is an ``InputError`` naming it; a setting
    whose default depends on the system (composition's base) uses ``system``."""
    cls = get(name)
    given = {k: v for k, v in (settings or {}).items() if v is not None}
    own = {s.name: s for s in cls.settings}
    for key in given:
        if key not in own:
            users = [n for n, _ in SETTINGS.get(key, [])]
            fix = f"use it with {users[0]}" if users else "see mechint.integrators.SETTINGS"
            raise InputError(key, f"does not apply to {name}", fix)
    kwargs = {}
    for key, setting in own.items():
        value = given.get(key)
        if value is None and setting.default is not None:
            value = setting.default(system)
        if value is None:
            continue
        if setting.integrator:
            if value == name:
                raise InputError(key, f"cannot be {name} itself")
            kwargs[key] = relabel(key, build, value, system)
        else:
            kwargs[key] = relabel(key, setting.parse, value)
    if dataclasses.is_dataclass(cls):  # a setting without a default, not given
        for field in dataclasses.fields(cls):
            needed = field.default is dataclasses.MISSING and (
                field.default_factory is dataclasses.MISSING)  # fmt: skip
            if field.init and needed and field.name not in kwargs:
                what = own[field.name].help.split(": ", 1)[-1] if field.name in own else ""
                raise InputError(field.name, f"is required by {name}", f"give {what}")
    return cls(**kwargs)


def serving(system) -> dict[str, Integrator]:
    """Every registered integrator, with its default settings for ``system``, that can
    advance ``system`` (by name, in the registry's order): the pairs the tests, the
    methods table and the benchmarks go through."""
    from mechint import plugins

    plugins.load()
    out = {}
    for name in INTEGRATORS:
        try:
            integrator = build(name, system)
        except InputError:  # no default setting for this system (composition's base)
            continue
        if refusal(integrator, system) is None:
            out[name] = integrator
    return out


def relabel(parameter: str, fn, *args, **kwargs):
    """``fn(...)`` with an ``InputError`` renamed to ``parameter``."""
    try:
        return fn(*args, **kwargs)
    except InputError as exc:
        raise InputError(parameter, exc.problem, exc.fix) from None
