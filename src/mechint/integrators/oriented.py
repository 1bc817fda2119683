"""Carrying the attitude along: an integrator wrapper, not a driver feature.

``Oriented(base)`` advances the state (x, g): x by ``base`` and the attitude
g_{k+1} = g_k W_k with the body rotation W_k of each step (``BodyRotationMap``, i.e.
``DiscreteLagrangian``).  Each new g is re-orthonormalized by one Newton-Schulz step,
which removes accumulated round-off (it moves g by O(‖gᵀg − I‖)).  With P_0 = g0ᵀ A g0
the states keep P_k = g_kᵀ A g_k.  ``simulate(..., orientation=g0)`` wraps its integrator
in it.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import numpy as np

from mechint import _validate
from mechint.errors import InputError
from mechint.integrators.discrete_lagrangian import BodyRotationMap
from mechint.lie import orthonormalize
from mechint.maps import Integrator, StepStatus, Wrapper
from mechint.solvers.linear import matmul
from mechint.systems.base import MoserVeselovBody


@final
@dataclasses.dataclass(frozen=True)
class Oriented(Wrapper):
    base: Integrator

    name: ClassVar[str] = "oriented"
    extra: ClassVar[str] = "orientation"
    recorded: ClassVar[bool] = False

    def __post_init__(self):
        if not isinstance(self.base, BodyRotationMap):
            raise InputError(
                "orientation",
                f"{type(self.base).__name__} does not compute the body's rotation per step",
                "use mechint.integrators.DiscreteLagrangian(), or leave orientation out",
            )
        self.settle_traits()

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        base = self.base
        assert isinstance(base, BodyRotationMap)
        state, g = x
        state, W, st = base.step_with_rotation(system, state, h)
        return (state, orthonormalize(matmul(g, W))), st

    def start(self, system, x0, given, batched: bool, batch: int) -> np.ndarray:
        """The initial attitude: ``given`` (one for all members, or one each) validated."""
        return self.initial(system, given, batched, batch)

    @staticmethod
    def initial(system: MoserVeselovBody, g0, batched: bool, batch: int) -> np.ndarray:
        """Validate the initial attitude g0 ∈ SO(n) (one, or one per batch member)."""
        return _validate.rotations("orientation", g0, system.n, batched, batch)
