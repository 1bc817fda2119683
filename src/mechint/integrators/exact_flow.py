"""The exact flow of the free rigid body as a one-step map (docs/math.md §1, §5).

``ExactFlow()`` advances the Euler top (and ``FreeRigidBody`` with n = 3, M = hat(m)) by
``exact.euler_top_flow``: elliptic functions with the separatrix, the axes and long steps
handled (``mechint.special``).  It is a ``BodyRotationMap``: each step also gives the body
rotation W = g(h) of the exact attitude from g = 𝟙, so ``simulate(..., orientation=g0)``
carries the exact attitude, and ``Splitting`` can use it as the free-body sub-flow of a
body in a potential (Celledoni, Fassò, Säfström, Zanna 2008).  Exact up to round-off:
every invariant of the system is kept, and the map is Poisson and symmetric.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax
import jax.numpy as jnp

from mechint.exact.euler_top import attitude_flow, flow
from mechint.integrators.discrete_lagrangian import BodyRotationMap
from mechint.maps import EXACT_TRAITS, StepStatus, kept, ok_status, serves_only
from mechint.systems.euler_top import FreeTop

__all__ = ["ExactFlow"]


@final
@dataclasses.dataclass(frozen=True)
class ExactFlow(BodyRotationMap):
    """The exact free-rigid-body flow (Euler top, or the n = 3 free body), attitude
    included."""

    name: ClassVar[str] = "exact-flow"
    traits = EXACT_TRAITS

    def cannot_serve(self, system) -> str | None:
        why = serves_only(system, (FreeTop,))
        if why is None and system.as_euler_top() is None:
            return f"the exact flow is the n = 3 free body's; {system!r} is not one"
        return why

    def step_with_rotation(self, system, x, h):
        return self._advance(system, x, h, rotation=True)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        x_next, _, st = self._advance(system, x, h, rotation=False)
        return x_next, st

    @staticmethod
    def _advance(system: FreeTop, x, h, rotation: bool):
        top = system.as_euler_top()
        assert top is not None  # cannot_serve said so
        inertia, m = top.inertia, system.to_momentum(x)
        lead = m.shape[:-1]
        flat = m.reshape(-1, 3)
        h = jnp.asarray(h, flat.dtype)
        if rotation:
            eye = jnp.eye(3, dtype=flat.dtype)
            one = jax.vmap(attitude_flow, in_axes=(None, 0, None, None))
            m_next, W = one(inertia, flat, eye, h)
            W = W.reshape(*lead, 3, 3)
        else:  # the state alone: the attitude's elliptic integral is not compiled
            m_next, W = jax.vmap(flow, in_axes=(None, 0, None))(inertia, flat, h), None
        m_next = m_next.reshape(*lead, 3)
        x_next = system.from_momentum(m_next)
        return x_next, W, ok_status(x_next)

    def preserved(self, system, x, h) -> dict:
        return kept(system, tuple(system.invariants(x)), x)
