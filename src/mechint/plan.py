"""A run's plan: every input of a run validated once, in one place.

``make_plan`` checks the system, the integrator (and that it serves the system), the
initial state, the step, the step count and save interval, the time origin, the dtype
and the wrappers a run asks for (the attitude carried along, compensated summation and
its starting correction), before any work.  ``simulate``, ``mechint run`` (which names
the parameters by their options, ``names=``) and, for concrete input, ``integrate``
take their inputs from it, so one input is judged the same way everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from mechint import _validate
from mechint.errors import InputError
from mechint.events import check_events, check_save_at
from mechint.maps import (
    Integrator,
    Wrapper,
    physical_time,
    recorded,
    require_serves,
    start_all,
    unwrap_all,
)
from mechint.systems.base import System

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Plan:
    """A validated run: ``integrator`` is the map that runs (wrapped as asked),
    ``x0`` its state (NumPy, extended by the wrappers), ``system`` cast to ``dtype``."""

    system: System
    integrator: Integrator
    x0: Any
    batched: bool
    batch: int
    h: float
    t0: float
    steps: int
    save_every: int
    dtype: str
    step0: int = 0  # steps before x0 (a continued run): failures are numbered from them
    events: tuple = ()  # mechint.Event s whose crossings the run records (events.py)
    max_events: int = 1  # crossings kept per member and event
    save_at: Any = None  # (times, K_j, τ_j, most in a step): events.check_save_at; or None
    loop_state: Any = None  # the map's own coordinates to start from (a continued run)

    @property
    def n_saves(self) -> int:
        return self.steps // self.save_every

    @property
    def recorded(self) -> Integrator:
        """The integrator as the run's record names it (``maps.recorded``)."""
        return recorded(self.integrator)

    @property
    def numbers(self) -> int:
        """Numbers in one saved sample (all members, wrappers' parts included)."""
        return sum(int(np.size(a)) for a in jax.tree.leaves(self.x0))


def _instance(value, base: type[T], parameter: str, kind: str, make: str, shown: str,
              fix: str) -> T:  # fmt: skip
    """``value`` if it is an instance of ``base``; ``InputError`` naming ``parameter``
    for the class itself (``make``: how to make one) or for anything else."""
    if isinstance(value, type) and issubclass(value, base):
        raise InputError(parameter, f"got the class {value.__name__}, not {kind}",
                         f"make one: {value.__name__}{make}")  # fmt: skip
    if not isinstance(value, base):
        raise InputError(parameter, f"{shown} is not a mechint {parameter}", fix)
    return value


def check_system(system) -> System:
    """``system`` if it is a mechint system (a JAX pytree: the compiled loop takes its
    parameters as arrays), else ``InputError``."""
    _instance(system, System, "system", "a system", "(...) with its parameters",
              type(system).__name__,
              "use one of mechint.systems, or subclass mechint.systems.System")  # fmt: skip
    leaves = jax.tree_util.tree_leaves(system)
    if len(leaves) == 1 and leaves[0] is system:
        name = type(system).__name__
        fix = (f"decorate the class: @mechint.systems.register_pytree(data=(<its parameter "
               f"fields>,)) above class {name} (docs/extending.md)")  # fmt: skip
        raise InputError("system", f"{name} is not registered as a JAX pytree", fix)
    return system


def check_integrator(integrator) -> Integrator:
    """``integrator`` if it is a mechint integrator with traits, else ``InputError``."""
    _instance(integrator, Integrator, "integrator", "an integrator", "()", repr(integrator),
              "pass an instance, e.g. mechint.integrators.Kahan() (user maps subclass "
              "mechint.integrators.Integrator)")  # fmt: skip
    from mechint.maps import Traits

    if not isinstance(getattr(integrator, "traits", None), Traits):
        raise InputError(
            "integrator",
            f"{type(integrator).__name__} declares no traits",
            "give the class traits = Traits(order=..., symmetric=..., explicit=...), or set "
            "them per instance (derived_traits, settle_traits in __post_init__)",
        )
    return integrator


def make_plan(
    system,
    integrator,
    x0,
    h,
    steps,
    save_every=1,
    *,
    t0=0.0,
    dtype="float64",
    orientation=None,
    compensated: bool | None = None,
    compensation=None,
    step0: int = 0,
    events=None,
    max_events: int | None = None,
    save_at=None,
    loop_state=None,
    clock=None,
    names: dict[str, str] | None = None,
) -> Plan:
    """The plan of a run (see the module docstring); ``InputError`` naming the
    parameter (as ``names`` renames it, e.g. ``{"h": "--h"}``) on bad input."""
    try:
        plan = _make_plan(system, integrator, x0, h, steps, save_every, t0, dtype,
                          orientation, compensated, compensation, clock)  # fmt: skip
        step0 = _validate.count("step0", step0, minimum=0)
        base = unwrap_all(plan.integrator, plan.x0)[0]
        watched, cap = check_events(events, plan.system, base, plan.batched, max_events)
        plan = dataclasses.replace(plan, step0=step0, events=watched, max_events=cap,
                                   loop_state=_loop_state(plan, loop_state))  # fmt: skip
        _buffers_fit(plan, save_at)
        if save_at is None:
            return plan
        if plan.save_every != 1:
            raise InputError("save_every", "is not used with save_at", "give one of the two")
        variable = physical_time(plan.system, plan.integrator, plan.x0) is not None
        at = check_save_at(save_at, plan.t0, plan.h, plan.steps, plan.dtype, variable=variable)
        # the loop saves the final state only; the states at the times come from the record
        return dataclasses.replace(plan, save_every=plan.steps, save_at=at)
    except InputError as exc:
        if names and exc.parameter in names:
            raise type(exc)(names[exc.parameter], exc.problem, exc.fix) from None
        raise


def _buffers_fit(plan: Plan, save_at) -> None:
    """The events' slots and the states at the save times fit in memory."""
    from mechint.resources import require_run_buffers

    require_run_buffers(plan.x0, plan.batch if plan.batched else 1, len(plan.events),
                        plan.max_events, save_at, np.dtype(plan.dtype).itemsize)  # fmt: skip


def _loop_state(plan: Plan, given):
    """The loop's state to start from (``Trajectory.loop_state`` of the run continued),
    checked: a map with coordinates of its own, the shapes of x0, finite."""
    if given is None:
        return None
    if not plan.integrator.own_coordinates:
        raise InputError("loop_state", f"{plan.recorded!r} carries no coordinates of its own",
                         "leave loop_state out")  # fmt: skip
    like = jax.tree.leaves(plan.x0)
    try:
        leaves = [np.asarray(a, dtype=np.float64) for a in jax.tree.leaves(given)]
    except (TypeError, ValueError):
        raise InputError("loop_state", "expected arrays shaped like x0") from None
    if [a.shape for a in leaves] != [a.shape for a in like]:
        raise InputError("loop_state", f"expected arrays of shapes {[a.shape for a in like]} "
                         f"(those of x0), got {[a.shape for a in leaves]}",
                         "pass the Trajectory.loop_state of the run continued")  # fmt: skip
    if not all(np.all(np.isfinite(a)) for a in leaves):
        raise InputError("loop_state", "is not finite")
    real = jnp.dtype(plan.dtype)
    return jax.tree.unflatten(jax.tree.structure(plan.x0),
                              [np.asarray(a, dtype=real) for a in leaves])  # fmt: skip


def unlayered(integrator: Integrator) -> Integrator:
    """The map a plan was made for: ``integrator`` without the layers the plan adds from
    a run's options (``Compensated``, ``Oriented``: ``simulate`` adds them again from the
    same options); a wrapper given as the map (``ReversibleAdaptive``) stays."""
    from mechint.integrators.compensated import Compensated
    from mechint.integrators.oriented import Oriented

    while isinstance(integrator, (Compensated, Oriented)):
        integrator = integrator.base
    return integrator


def compensates(integrator: Integrator, system, compensated, compensation=None) -> bool:
    """Whether a run adds its increments by compensated summation: ``compensated`` as
    given (True, False), or None: the map's choice (``compensated_by_default``), and on
    when a starting ``compensation`` is given."""
    if compensated not in (None, True, False):
        raise InputError("compensated", f"must be True, False or None (automatic), got "
                         f"{compensated!r}")  # fmt: skip
    if compensation is not None and compensated is False:
        raise InputError("compensation", "a starting correction needs a compensated run",
                         "compensated=True, or None")  # fmt: skip
    if compensated is None:
        return compensation is not None or integrator.compensated_by_default(system)
    return bool(compensated)


def _make_plan(system, integrator, x0, h, steps, save_every, t0, dtype, orientation,
               compensated, compensation, clock=None) -> Plan:  # fmt: skip
    from mechint.integrators.compensated import Compensated
    from mechint.integrators.oriented import Oriented

    system = check_system(system)
    integrator = check_integrator(integrator)
    require_serves(integrator, system)
    x0_np, batched = integrator.validate_start(system, x0, "x0")
    h = float(_validate.step_size(h))
    steps = _validate.count("steps", steps)
    save_every = _validate.save_every(steps, save_every)
    t0 = float(_validate.real_array("t0", t0, ()))
    x0_np = system.starting_state(x0_np, t0)
    dtype = _validate.real_dtype(dtype)
    _validate.precision(system, dtype)
    compensated = compensates(integrator, system, compensated, compensation)
    batch = jax.tree.leaves(x0_np)[0].shape[0] if batched else 1
    # a wrapper given as the map (from a continued run's clock where given)
    x0_np = start_all(integrator, system, x0_np, batched, batch, {"clock": clock})
    if compensated and "clock" in unwrap_all(integrator, x0_np)[1]:
        raise InputError("compensated", "a variable-step map's clock is not compensated",
                         "compensated=False with ReversibleAdaptive")  # fmt: skip
    layers: list[tuple[Callable[[Integrator], Wrapper], Any]] = []
    if orientation is not None:
        layers.append((Oriented, orientation))
    if compensated:
        layers.append((Compensated, compensation))
    for cls, given in layers:
        integrator = cls(integrator)
        x0_np = integrator.wrap(x0_np, integrator.start(system, x0_np, given, batched, batch))
    real = jnp.dtype(dtype)
    if real != jnp.float64:
        system = jax.tree.map(lambda a: jnp.asarray(a, dtype=real), system)
    x0_np = jax.tree.map(lambda a: np.asarray(a, dtype=real), x0_np)
    return Plan(system, integrator, x0_np, batched, batch, h, t0, steps, save_every, dtype)
