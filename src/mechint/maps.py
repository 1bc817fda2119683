"""The one-step map protocol: every integrator, exact flow and wrapper is an ``Integrator``.

An integrator is an immutable, hashable frozen dataclass whose fields are settings (so
the driver can use it as a static argument and compile once per (system type,
integrator)).  Subclasses are abstract or final.  It declares

- ``name`` (CLI name) and ``traits`` (order, symmetric, explicit, symplectic, Poisson);
- ``cannot_serve(system) -> str | None``: why it cannot advance ``system`` (None if it
  can); ``require_serves`` turns that into ``UnsupportedError`` before any step;
- ``step(system, x, h) -> (x_next, StepStatus)``: one pure step x_k ↦ Φ_h(x_k);
- ``preserved(system, x, h) -> dict``: the quantities this map keeps exactly on this
  system (to round-off), evaluated at x: the one home of "what a map keeps".

A failed step is data: ``StepStatus.reason`` is a ``Reason`` code, never a sentence per
class, and the driver, sweeps and diagnostics read it.

This module imports no system and no integrator, so the exact flows of systems' pieces
(``Drift``, ``Kick``, ``AxisRotation``, ...: ``systems.flows``) are integrators too.

Longer than the house's 600 lines because the protocol is one contract: the map's
class, its traits, statuses and reasons, the wrappers and the refusals are read together
by every map and by the drivers.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple, cast

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from mechint.errors import InputError, UnsupportedError
from mechint.solvers.newton import Newton


class Reason(enum.IntEnum):
    """Why a step failed (``StepStatus.reason``); ``OK`` when it did not."""

    OK = 0
    NON_FINITE = 1
    SINGULAR = 2
    NOT_CONVERGED = 3
    WRONG_BRANCH = 4
    REPORTED = 5
    STEP_SIZE = 6
    UNSUPPORTED = 7
    CLOSE_ENCOUNTER = 8
    OUT_OF_DOMAIN = 9

    @property
    def text(self) -> str:
        return _REASON_TEXT[self]

    @property
    def label(self) -> str:
        """The reason as a short lower-case word (stored in files and datasets)."""
        return self.name.lower().replace("_", "-")


_REASON_TEXT = {
    Reason.OK: "no failure",
    Reason.NON_FINITE: "the new state is not finite (residual = inf)",
    Reason.SINGULAR: (
        "the step's linear system is singular (residual = |det| for Kahan's Euler-top "
        "step, the relative backward error of the solve otherwise)"
    ),
    Reason.NOT_CONVERGED: (
        "Newton did not converge (residual = max-norm of the step equation); decrease h"
    ),
    Reason.WRONG_BRANCH: (
        "the implicit equation was solved off the branch continuous with h → 0 (for the "
        "discrete Lagrangian map: W ≉ I; residual = max-norm of ε M_k − (Q W J − J Wᵀ Q)); "
        "decrease h"
    ),
    Reason.UNSUPPORTED: (
        "the step met a term its map cannot apply (residual = its largest entry): a "
        "force on the centres x or the attitudes R under the forced Lie group "
        "variational map"
    ),
    Reason.REPORTED: "the map reported a failed step",
    Reason.CLOSE_ENCOUNTER: (
        "two bodies came closer than the system's encounter distance, where a map that "
        "assumes the central body dominates is no longer accurate (residual = their "
        "distance / the encounter distance); NBody.close_pair names them"
    ),
    Reason.STEP_SIZE: "the step-size control gave a step that is not positive and finite",
    Reason.OUT_OF_DOMAIN: (
        "the new state lies outside the system's domain (``System.domain_status``: a time "
        "transformation's g ≤ 0, residual = how far below 0; a body beyond an NBody's "
        "escape distance, residual = its distance over it)"
    ),
}

REASON_LABELS = tuple(r.label for r in Reason)


class StepStatus(NamedTuple):
    """What one step reports: ``ok``, its ``residual`` and the ``Reason`` code that
    applies where ``ok`` is False (read it only there: a step that succeeded costs no
    select to clear it)."""

    ok: Bool[Array, ""]
    residual: Float[Array, ""]
    reason: Int[Array, ""]


def status(ok, residual, reason: Reason) -> StepStatus:
    """A status that fails with ``reason`` where ``ok`` is False."""
    return StepStatus(jnp.asarray(ok), jnp.asarray(residual), jnp.int32(reason))


def no_failure(real) -> StepStatus:
    """The status of no step yet: ok, residual 0 (in dtype ``real``); the start of a
    loop that combines the statuses of its stages."""
    return StepStatus(jnp.asarray(True), jnp.zeros((), real), jnp.int32(Reason.OK))


# Leaves of at most this many entries are checked entry by entry (elementwise, see
# ``finite``); larger ones by a reduction.
_UNROLLED_CHECK = 16


def finite(x) -> Bool[Array, ""]:
    """Every entry of every leaf of ``x`` is finite.  A small leaf is checked entry by
    entry and the checks joined by ``&``: under ``vmap`` every operation then stays
    elementwise on the members, so XLA fuses the check into the batch's step (a
    reduction over the leaf's axes is a pass of its own over the new state)."""
    checks = []
    for a in jax.tree.leaves(x):
        a = jnp.asarray(a)
        if a.size <= _UNROLLED_CHECK:
            checks += [jnp.isfinite(e) for e in a.reshape(-1)]
        else:
            checks.append(jnp.all(jnp.isfinite(a)))
    return functools.reduce(jnp.logical_and, checks, jnp.asarray(True))


def _column_leaf(a) -> bool:
    """Whether a batch's leaf (members first) runs as columns (``to_columns``): one of
    1 to ``_UNROLLED_CHECK`` entries a member (an empty leaf has no columns to stack
    back)."""
    return 0 < math.prod(a.shape[1:]) <= _UNROLLED_CHECK


def to_columns(x, like=None, *, last: bool = False):
    """A batch's state with each small leaf as the tuple of its columns, one (B,) array
    per entry of a member (larger leaves as they are): the layout of a batch's loop on a
    GPU (``Integrator.step_columns``).  The leaves of x have their members first,
    (B, *shape), or with ``last`` along their last axis, (*shape, B) (``map_columns``);
    ``like`` (default x) is the batch, members first, that says which leaves are small."""
    like = x if like is None else like
    leaves, tree = jax.tree.flatten(like)

    def split(a, b):
        if not _column_leaf(a):
            return b
        return tuple(b.reshape(-1, a.shape[0]) if last else b.reshape(a.shape[0], -1).T)

    return tree.unflatten(split(a, b) for a, b in zip(leaves, tree.flatten_up_to(x), strict=True))


def from_columns(cols, like, *, last: bool = False):
    """Inverse of ``to_columns``: the state in the layout of ``like`` (members first), or
    with ``last`` each small leaf with its members along its last axis, (*shape, B)."""
    leaves, tree = jax.tree.flatten(like)

    def stack(a, c):
        if not _column_leaf(a):
            return c
        if last:
            return jnp.stack(c).reshape(*a.shape[1:], a.shape[0])
        return jnp.stack(c, axis=-1).reshape(a.shape)

    return tree.unflatten(
        stack(a, c) for a, c in zip(leaves, tree.flatten_up_to(cols), strict=True)
    )


def map_columns(f, like, *cols, extra: bool = False):
    """``f`` of one member's states, on every member of the batches ``cols`` carried as
    columns (``to_columns`` of batches shaped like ``like``); ``f`` returns a state of
    that shape, given back as columns (``extra``: ``f`` returns (state, anything else),
    given back as (columns, the rest with the members first): a step and its status).
    The members ride along the last axis of each small leaf (``last`` of ``to_columns``
    and ``from_columns``): the columns stack into rows, ``f`` reads its entries as rows
    and stacks its result as rows, and XLA takes those stacks apart again without
    moving data.
    With the members along the first axis, ``vmap`` puts a transpose between ``f``'s
    stacked result and its columns, and a GPU's step is then several kernels (RK4 on 10⁶
    Euler tops, one H100, float64: 1.4e10 body-steps/s with the members first, 2.5e10
    with them last, the same as the field written on three scalars)."""
    leaves, tree = jax.tree.flatten(like)
    axes = tree.unflatten(-1 if _column_leaf(a) else 0 for a in leaves)
    out_axes = (axes, 0) if extra else axes
    rows = (from_columns(c, like, last=True) for c in cols)
    y = jax.vmap(f, in_axes=(axes,) * len(cols), out_axes=out_axes)(*rows)
    state, rest = y if extra else (y, None)
    state = to_columns(state, like, last=True)
    return (state, rest) if extra else state


def ok_status(x) -> StepStatus:
    """Status of an explicit step: fails (NON_FINITE) only if the new state is not finite."""
    good = finite(x)
    real = jax.tree.leaves(x)[0].dtype
    return status(good, jnp.where(good, jnp.zeros((), real), jnp.inf), Reason.NON_FINITE)


def compensated_add(x, e, d) -> tuple[Any, Any]:
    """x + d with the correction e carried (Kahan–Babuška, Hairer's GNI codes), leaf by
    leaf: a = d + e, x_new = x + a, e_new = (x − x_new) + a, the rounding of x + a, exact
    while |a| <= |x| (Fast2Sum).  ``integrators.Compensated``."""
    a = jax.tree.map(lambda u, v: u + v, d, e)
    new = jax.tree.map(lambda u, v: u + v, x, a)
    return new, jax.tree.map(lambda u, w, v: (u - w) + v, x, new, a)


def combine(statuses: Sequence[StepStatus]) -> StepStatus:
    """All ok; the largest residual; the reason of the first failure."""
    ok, res, code = statuses[0]
    for s in statuses[1:]:
        code = jnp.where(ok, s.reason, code)
        ok, res = ok & s.ok, jnp.maximum(res, s.residual.astype(res.dtype))
    return StepStatus(ok, res, code)


# The order recorded for an exact flow.
EXACT = 99


@dataclasses.dataclass(frozen=True)
class Traits:
    """Declared properties of a one-step map.

    ``order``: classical order (``EXACT`` for an exact flow); ``symmetric``:
    Φ_{-h} = Φ_h⁻¹; ``symplectic``: for canonical systems; ``poisson``: for the system's
    own Poisson tensor in general; ``explicit``; ``energy``: H∘Φ_h = H for every
    Hamiltonian system served (Marsden's energy integrators; midpoint keeps H only where H
    is quadratic, which ``preserved`` says per system); ``forced``: it advances systems
    with forces that do work (``systems.Forced``), keeping what its traits promise for
    them (see ``systems.forced``); ``constrained``: it advances systems with holonomic
    constraints (``systems.Constrained``) on their constraint manifold (every other map
    refuses them).  Which invariants are kept exactly depends on the system: see
    ``Integrator.preserved``.
    """

    order: int
    symmetric: bool
    explicit: bool
    symplectic: bool = False
    poisson: bool = False
    energy: bool = False
    forced: bool = False
    constrained: bool = False


EXACT_TRAITS = Traits(order=EXACT, symmetric=True, explicit=True, symplectic=True, poisson=True)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting of an integrator as the CLI and experiment files give it: the option
    ``name`` (``--name``), its ``help``, ``parse`` (text or TOML value → field value),
    ``default(system)`` when the default depends on the system (else the field's own),
    and ``integrator``: the value names another integrator (built with its defaults)."""

    name: str
    help: str
    parse: Callable[[Any], Any] = str
    default: Callable[[Any], Any] | None = None
    integrator: bool = False


class Integrator(abc.ABC):
    """A one-step map with declared traits (see the module docstring).

    ``traits`` is required of every map: a class constant (``traits = Traits(...)``)
    where it is the same for every instance, else set per instance from its settings
    (``derived_traits``, called by ``settle_traits`` at the end of ``__post_init__``).
    A map without traits is refused before any step (``plan.check_integrator``)."""

    name: ClassVar[str] = "integrator"
    settings: ClassVar[tuple[Setting, ...]] = ()
    traits: Traits
    # A batch's loop on a GPU carries the state as columns (``integrate.tracked_step``,
    # ``step_columns``): True for the maps measured faster so on one H100
    # (``benchmarks/loop_variants.py``): Kahan's map and the explicit Runge–Kutta maps.
    # Measured with the default ``step_columns`` and left False (2026-11-26, integrate,
    # body-steps/s, float64 / float32): the implicit midpoint, the discrete Lagrangian
    # map within ±3 %; the LGVI of one body 3.2e8 either way / 8.4e8 -> 7.6e8.
    batch_columns: ClassVar[bool] = False
    # Steps a batch's loop runs an iteration when it carries the state as columns: more
    # than one lets XLA fuse several steps into one kernel that keeps each member in
    # registers between them (Kahan's map and the explicit Runge–Kutta maps: 8;
    # ``integrate._loop_saves``, where every leaf of the state goes by columns).
    batch_unroll: ClassVar[int] = 1
    # A map may carry its own coordinates between the states a run shows: a run's loop
    # starts from ``enter(x0)``, steps it by ``loop_step`` and shows ``leave`` of it (each
    # saved sample, an event's condition, the run's end), so that what ``leave`` applies
    # is never fed back into the loop.  ``step`` is then leave ∘ loop_step ∘ enter, the map
    # itself.  The Wisdom–Holman maps carry Jacobi (or heliocentric) coordinates, with
    # their symplectic corrector applied where a state is shown.  The loop's state has the
    # state's structure and shapes; a continued run starts from it
    # (``Trajectory.loop_state``, ``simulate(loop_state=...)``) to continue bit for bit.
    own_coordinates: ClassVar[bool] = False
    # A map whose step takes a costly branch for the whole batch where any member needs
    # it (a ``cond`` on a flag reduced over the batch): a batch's loop steps each frozen
    # member (failed, or stopped by an event) from a live member's state and discards the
    # result, as it discards every frozen member's step, so that a member frozen where
    # the branch is needed does not keep every later step of the batch on it
    # (``events.stand_in``; a select over the state a step).
    batch_branches: ClassVar[bool] = False
    # The same of the step's derivative (read by ``integrators.Tangent``, whose step
    # carries it): the Wisdom–Holman maps' Kepler drift gathers the few entries that need
    # its general solve, but its tangent takes that solve for the whole batch.
    tangent_batch_branches: ClassVar[bool] = False

    def derived_traits(self) -> Traits:
        """The traits of this instance, from its settings (maps whose traits depend on
        them override this)."""
        raise NotImplementedError(f"{type(self).__name__} declares no traits")

    def settle_traits(self) -> None:
        """Record ``derived_traits()`` as this (frozen) instance's ``traits``."""
        object.__setattr__(self, "traits", self.derived_traits())

    @abc.abstractmethod
    def cannot_serve(self, system) -> str | None:
        """Why this map cannot advance ``system``, or None when it can."""

    @abc.abstractmethod
    def step(self, system, x, h) -> tuple[Any, StepStatus]:
        """One step x ↦ Φ_h(x) and its status (pure, jit- and vmap-safe)."""

    def validate_start(self, system, x0, name: str = "x0") -> tuple[Any, bool]:
        """A run's start checked by the system (``System.validate_state``); a map whose
        step is defined on more states than the system's own checks fewer (SHAKE: a
        momentum off the tangent space, as its own steps leave it)."""
        return system.validate_state(x0, name)

    def enter(self, system, x, h):
        """The loop's state at the state x (``own_coordinates``; the identity here)."""
        return x

    def leave(self, system, z, h):
        """The state the loop's state z shows (``own_coordinates``; the identity here)."""
        return z

    def loop_step(self, system, z, h) -> tuple[Any, StepStatus]:
        """One step of the loop's state (``own_coordinates``; ``step`` here)."""
        return self.step(system, z, h)

    def step_columns(self, system, cols, like, h) -> tuple[Any, StepStatus]:
        """One step of a batch carried as columns (``to_columns`` of a batch shaped like
        ``like``; ``batch_columns``): the new columns and each member's status.  This
        default steps the members of the stacked batch and splits the result; a map
        whose step is sums of a few vector fields may keep those sums on the columns,
        so that XLA fuses the whole step (``ExplicitRungeKutta``)."""
        x_new, st = jax.vmap(self.loop_step, in_axes=(None, 0, None))(
            system, from_columns(cols, like), h
        )
        return to_columns(x_new), st

    def preserved(self, system, x, h) -> dict[str, Any]:
        """The quantities this map keeps exactly on ``system``, evaluated at x."""
        return {}

    def increment(self, system, x, h) -> tuple[Any, StepStatus]:
        """Φ_h(x) − x and the status, for compensated summation
        (``integrators.Compensated``).  This default subtracts after the step, so the
        increment carries the rounding of Φ_h(x) and compensation gains nothing; maps
        that form the increment directly override it (the implicit midpoint rule,
        Störmer–Verlet on a separable H, compositions of such maps) and say so in
        ``forms_increment``."""
        x_new, st = self.step(system, x, h)
        return jax.tree.map(lambda a, b: a - b, x_new, x), st

    def compensated_step(self, system, x, e, h) -> tuple[Any, Any, StepStatus]:
        """One step of x with the correction e carried (``integrators.Compensated``):
        (x_new, e_new, status).  This default adds the step's ``increment`` once
        (``compensated_add``); a map whose step is a sequence of updates may add each
        of them so (compositions of Störmer–Verlet on a separable H: every kick and
        drift, ``stages.advance_leapfrog``)."""
        d, st = self.increment(system, x, h)
        x, e = compensated_add(x, e, d)
        return x, e, st

    def merges_stages(self, system) -> bool:
        """Whether a composition of this map's steps on ``system`` (``Composition``)
        runs as one sequence of updates with adjacent ones merged (``merged_stages``):
        Störmer–Verlet on a separable H, whose adjacent kicks act at the same point."""
        return False

    def merged_stages(self, system, x, h, gamma, e=None) -> tuple[Any, Any, StepStatus]:
        """Φ_{γ_s h} ∘ ... ∘ Φ_{γ_1 h}(x) as (x, e, status), where ``merges_stages``: with
        ``e`` (the correction of compensated summation) every update added so, else e
        comes back None."""
        raise NotImplementedError(f"{type(self).__name__} merges no stages")

    def forms_increment(self, system) -> bool:
        """Whether ``increment`` forms Φ_h(x) − x directly on ``system`` (its rounding
        relative to the increment, not to x), so that compensated summation gains."""
        return False

    def compensated_by_default(self, system) -> bool:
        """Whether a run of this map on ``system`` adds its increments by compensated
        summation unless told otherwise (``simulate(compensated=None)``, ``mechint
        run``): where the map forms its increment and is of order 8 or more.  There the
        truncation error reaches round-off at steps a run affords (Kepler e = 0.5 over
        100 orbits: the median error floor about 1e-10 plain, 6.8e-13 compensated at 256 000
        steps), and the correction costs least beside the step's stages (Kepler, the
        cheapest force, one trajectory: 0.43-0.47 of the plain speed at orders 8-10,
        0.24-0.39 at orders 4-6; ``benchmarks/round_off.py``).  Not on a state that
        carries its clock:
        ``advance_clock`` keeps that one, outside the increment."""
        return (self.traits.order >= 8 and self.forms_increment(system)
                and not system.carries_clock)  # fmt: skip

    def poisson_on(self, system) -> bool:
        """Whether this map is Poisson (symplectic, for a canonical system) on ``system``:
        ``traits``: symplectic where Π is constant (𝕁; on any other constant S the
        symplectic maps that serve it are Runge–Kutta maps or compositions of exact
        flows, which commute with the linear change of coordinates making S canonical),
        poisson otherwise; unless the map knows more about this system (e.g. Kahan's map
        on Lotka-Volterra)."""
        return self.traits.symplectic if system.constant_structure else self.traits.poisson


# why a map that does not declare ``Traits(forced=True)`` refuses a forced system
FORCED_REFUSAL = (
    "forces do work on a Forced system, and this map is for conservative systems: use "
    "StormerVerlet(), SymplecticEuler(), ImplicitMidpoint(), LieGroupVariational() or "
    "DiscreteLagrangian() of order 2 on the Euler top (forced variational), "
    "AverageVectorField() or DiscreteGradient() (exact energy balance), Gauss(), an "
    "explicit Runge-Kutta map, RKMK() or CommutatorFree() (with rotations), a Composition "
    "of these, or ReversibleAdaptive around one"
)


# why a map that does not declare ``Traits(constrained=True)`` refuses a constrained system
CONSTRAINED_REFUSAL = (
    "its state must stay on the constraint manifold g(q) = 0, G(q)∇T(p) = 0, which only "
    "the constrained maps keep: use Rattle() (or a Composition of it) or Shake()"
)
JOINTS_REFUSAL = (
    "its joints must hold, which only the constrained Lie group variational map keeps: "
    "use LieGroupVariational() (or a Composition of it)"
)


def refusal(integrator: Integrator, system) -> str | None:
    """Why ``integrator`` cannot advance ``system`` (None when it can): a forced or a
    constrained system is refused by the maps whose traits do not say so, the rest by
    the map's own ``cannot_serve``."""
    if getattr(system, "constrained", False) and not integrator.traits.constrained:
        if getattr(system, "joints", ()):
            return JOINTS_REFUSAL
        return CONSTRAINED_REFUSAL
    if getattr(system, "forced", False) and not integrator.traits.forced:
        return FORCED_REFUSAL
    return integrator.cannot_serve(system)


def require_serves(integrator: Integrator, system, parameter: str = "integrator") -> None:
    """``UnsupportedError`` (naming ``parameter``) unless ``integrator`` serves ``system``."""
    why = refusal(integrator, system)
    if why is not None:
        raise UnsupportedError(
            parameter, f"{type(integrator).__name__} cannot advance {type(system).__name__}", why
        )


def serves_only(system, classes: tuple[type, ...]) -> str | None:
    """The usual ``cannot_serve``: None when ``system`` is one of ``classes`` (usually
    capability bases), else the list of what is served."""
    if isinstance(system, classes):
        return None
    return "it serves: " + ", ".join(cls.__name__ for cls in classes)


def kept(system, names, x) -> dict[str, Float[Array, ...]]:
    """The invariants of ``system`` named in ``names``, evaluated at x."""
    if not names:
        return {}
    values = system.invariants(x)
    return {name: values[name] for name in names if name in values}


class ImplicitIntegrator(Integrator):
    """A map that solves implicit equations by Newton's method (always, or for the
    systems that need it: Störmer–Verlet and symplectic Euler on a non-separable H).
    ``solver`` holds the settings (``solvers.Newton``: tolerance, iterations); a solve
    that does not converge fails the step (``Reason.NOT_CONVERGED``), never silently."""

    solver: Newton


class Wrapper(Integrator):
    """A map that runs ``base`` on an extended state ``(x, extra)``: the attitude carried
    along (``integrators.Oriented``), a compensated-summation term
    (``integrators.Compensated``), and what later wrappers add.  A wrapper declares how
    its state is made and taken apart (``start``, ``wrap``, ``unwrap``), so a driver
    peels any stack of wrappers (``unwrap_all``) without knowing their classes.

    ``extra``: the name under which the driver returns the extra part
    (``Trajectory.<extra>``); ``recorded``: whether the wrapper changes the numbers of
    the state x and so belongs in a run's record (compensation does; carrying the
    attitude does not)."""

    base: Integrator
    extra: ClassVar[str]
    recorded: ClassVar[bool]

    def derived_traits(self) -> Traits:
        return self.base.traits

    def cannot_serve(self, system) -> str | None:
        return self.base.cannot_serve(system)

    def validate_start(self, system, x0, name: str = "x0") -> tuple[Any, bool]:
        return self.base.validate_start(system, x0, name)  # (the base map's state)

    def preserved(self, system, x, h) -> dict:
        return self.base.preserved(system, x[0], h)

    @property
    def batch_branches(self) -> bool:  # type: ignore[override]
        """The base map's: a wrapper's step runs the base map's."""
        return self.base.batch_branches

    @abc.abstractmethod
    def start(self, system, x0, given, batched: bool, batch: int) -> Any:
        """The extra part at the start, from the ``given`` value (validated; None: the
        default), for the state ``x0`` (NumPy, already extended by inner wrappers)."""

    @staticmethod
    def wrap(x, extra):
        return (x, extra)

    @staticmethod
    def unwrap(x) -> tuple[Any, Any]:
        return x[0], x[1]


def unwrap_all(integrator: Integrator, x) -> tuple[Any, dict[str, Any]]:
    """The base state of ``x`` (a state of ``integrator``) and the extra parts of every
    wrapper around the base map, by their names."""
    extras = {}
    while isinstance(integrator, Wrapper):
        x, extras[integrator.extra] = integrator.unwrap(x)
        integrator = integrator.base
    return x, extras


def with_base(integrator: Integrator, x, base):
    """The state ``x`` of ``integrator`` with its base state replaced by ``base``, every
    wrapper's extra part kept (``unwrap_all``'s inverse, given the parts)."""
    if not isinstance(integrator, Wrapper):
        return base
    inner, extra = integrator.unwrap(x)
    return integrator.wrap(with_base(integrator.base, inner, base), extra)


def wrappers(integrator: Integrator) -> list[Wrapper]:
    """The wrappers around the map inside ``integrator``, outermost first."""
    out = []
    while isinstance(integrator, Wrapper):
        out.append(integrator)
        integrator = integrator.base
    return out


def start_all(integrator: Integrator, system, x0, batched: bool, batch: int, given=None):
    """``x0`` (a state of the base map) extended by every wrapper around it, innermost
    first, from each wrapper's default start, or from ``given[wrapper.extra]`` where
    ``given`` (a dict by the parts' names) has it (a continued run's clock): the state
    ``integrator`` advances.  ``InputError`` for a given part no wrapper takes."""
    given = {k: v for k, v in (given or {}).items() if v is not None}
    layers = wrappers(integrator)
    for name in given.keys() - {w.extra for w in layers}:
        raise InputError(name, f"is given, and {integrator.name} carries no {name}",
                         f"leave {name} out (a {name} continues a run of the map that "
                         "carries it)")  # fmt: skip
    for wrapper in reversed(layers):
        part = wrapper.start(system, x0, given.get(wrapper.extra), batched, batch)
        x0 = wrapper.wrap(x0, part)
    return x0


def physical_time(system, integrator: Integrator, x):
    """The physical time of states ``x`` of ``integrator`` (any leading axes) when it is
    not the driver's uniform one: a wrapper's clock (``ReversibleAdaptive``) or the
    system's own (``systems.TimeTransformed``); None otherwise.  It starts at 0."""
    base, extras = unwrap_all(integrator, x)
    if "clock" in extras:
        return extras["clock"][..., 0]
    own = getattr(system, "physical_time", None)
    return None if own is None else own(base)


def over_members(f, batched: bool, lead: int = 0):
    """``f(system, x, h)`` over every member of a batch and ``lead`` leading axes."""
    if batched:
        f = jax.vmap(f, in_axes=(None, 0, None))
    for _ in range(lead):
        f = jax.vmap(f, in_axes=(None, 0, None))
    return f


def entered(system, integrator: Integrator, x, h, batched: bool):
    """The loop's state at x (one state or a batch): ``Integrator.enter``, x itself
    for a map without coordinates of its own."""
    if not integrator.own_coordinates:
        return x
    return over_members(integrator.enter, batched)(system, x, h)


def shown(system, integrator: Integrator, z, h, batched: bool, lead: int = 0):
    """The states that loop states z show (``Integrator.leave``; ``lead`` leading axes
    of samples before the members): z itself for a map without coordinates of its own."""
    if not integrator.own_coordinates:
        return z
    return over_members(integrator.leave, batched, lead)(system, z, h)


def innermost(integrator: Integrator) -> Integrator:
    """The map inside every wrapper around ``integrator``."""
    while isinstance(integrator, Wrapper):
        integrator = integrator.base
    return integrator


def recorded(integrator: Integrator) -> Integrator:
    """``integrator`` as a run's record names it: the wrappers that do not change the
    state's numbers left out."""
    if not isinstance(integrator, Wrapper):
        return integrator
    inner = recorded(integrator.base)
    return dataclasses.replace(cast(Any, integrator), base=inner) if integrator.recorded else inner
