r"""Attitude kinematics with a given body angular velocity: Ṙ = R hat(ω(t)).

The linear, time-dependent equation on SO(3) that a measured or commanded ω(t) gives
(a gyroscope's rates, a slew manoeuvre): its solution is R(t) = R(0) U(t) with U the
ordered exponential of hat(ω), which Magnus' expansion approximates by a single
exponential (``integrators.Magnus``).  The state carries the time, as a forced system's
does: (R, t), with ṫ = 1.  The rotation's Casimirs RᵀR = 1 are its invariants
(``trRtR`` = tr RᵀR = 3, and ``orthogonality`` for the largest entry of RᵀR − 1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from mechint._pytree import register_pytree
from mechint._validate import output_shape, real_array, real_output, rotations, traced
from mechint.errors import InputError
from mechint.lie import so3
from mechint.systems.base import System, kahan_clock
from mechint.systems.canonical import _parameters


@final
@register_pytree(data=("params",), meta=("omega",))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class AttitudeKinematics(System):
    """Ṙ = R hat(ω(t)) for a given body angular velocity ``omega(t)`` (or
    ``omega(t, params)``: a pytree of arrays, traced like any parameter), returning
    shape (3,).  State (R, t, t's rounding): a rotation alone is extended with t = 0
    (then the run's t0)."""

    omega: Callable
    params: Any

    name: ClassVar[str] = "attitude-kinematics"
    state_fields = (("R", ("row", "col")), ("now", ()), ("now_rounding", ()))
    descriptions: ClassVar[dict[str, str]] = {
        "R": "attitude (body to space)",
        "now": "time of the state (t0 plus the steps taken)",
        "now_rounding": "what 'now' misses of t0 + Σh (Kahan's compensation)",
        "trRtR": "tr RᵀR (3 for a rotation)",
    }

    def __init__(self, omega, params=None):
        if not callable(omega):
            raise InputError("omega", f"must be a function, got {type(omega).__name__}")
        params = _parameters(params)
        moment = [jax.ShapeDtypeStruct((), jnp.float64)]
        fix = "write it with jax.numpy: omega(t) -> shape (3,)"
        out = output_shape("omega", omega, moment, params, "at a time", fix)
        real_output("omega", out)
        if getattr(out, "shape", None) != (3,):
            raise InputError("omega", f"must return shape (3,), got "
                             f"{getattr(out, 'shape', type(out).__name__)}")  # fmt: skip
        object.__setattr__(self, "omega", omega)
        object.__setattr__(self, "params", params)

    def __repr__(self) -> str:
        return f"AttitudeKinematics(omega={getattr(self.omega, '__name__', self.omega)!s})"

    @property
    def state_shape(self) -> tuple[int, ...]:
        return ()

    def rate(self, t):
        """ω(t) (any shape of t: a trailing axis of 3)."""
        one = (lambda t: self.omega(t)) if self.params is None else (
            lambda t: self.omega(t, self.params))  # fmt: skip
        t = jnp.asarray(t)
        flat = jax.vmap(one)(t.reshape(-1)) if t.ndim else one(t)
        return flat.reshape((*t.shape, 3))

    def vector_field(self, x):
        R, t, _ = x
        return R @ so3.hat(self.rate(t).astype(R.dtype)), jnp.ones_like(t), jnp.zeros_like(t)

    def advance_clock(self, x, x_new, h):
        return kahan_clock(x, x_new, h, 1)

    def clock_field(self) -> str | None:
        return "t"

    def rotation_fields(self) -> tuple[str, ...]:
        return ("R",)

    def invariants(self, x) -> dict:
        R = x[0]
        return {"trRtR": jnp.sum(R * R, axis=(-2, -1))}

    def casimirs(self, x) -> dict:
        return self.invariants(x)

    def orthogonality(self, x):
        """max |RᵀR − 1| per state."""
        R = x[0]
        D = jnp.swapaxes(R, -1, -2) @ R - jnp.eye(3, dtype=R.dtype)
        return jnp.max(jnp.abs(D), axis=(-2, -1))

    def parameters(self) -> dict:
        return {"omega": getattr(self.omega, "__name__", repr(self.omega))}

    def validate_state(self, x, name: str = "x0"):
        if isinstance(x, tuple | list) and len(x) == 3:
            R, t, rounding = x
        else:
            R, t, rounding = x, None, None
        given = R  # checked as given: a float32 R to float32 round-off
        R = real_array(f"{name}[0] (R)" if t is not None else name, R)
        batched = R.ndim == 3
        R = rotations(name, given, 3, batched, R.shape[0] if batched else 1)
        lead = R.shape[:1] if batched else ()
        if t is None:
            return (R, np.zeros(lead), np.zeros(lead)), batched
        parts = []
        for i, (label, value) in enumerate((("now", t), ("now_rounding", rounding))):
            value = np.asarray(real_array(f"{name}[{i + 1}] ({label})", value))
            if value.shape != lead:
                raise InputError(f"{name}[{i + 1}] ({label})", f"expected shape {lead}, got "
                                 f"{value.shape}")  # fmt: skip
            parts.append(value)
        return (R, *parts), batched

    def starting_state(self, x, t0):
        """The time set to the run's t0 where it is still 0 (a resumed state keeps its)."""
        t = x[1]
        if traced((t0, t)):
            return x[0], jnp.where(t == 0, t0, t), x[2]
        return x[0], np.where(t == 0, np.asarray(t0, dtype=np.float64), t), x[2]

    def example_state(self):
        return self.validate_state(np.asarray(so3.exp(jnp.array([0.3, -0.2, 0.5]))))[0]
