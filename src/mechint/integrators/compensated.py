r"""Compensated (Kahan–Babuška) summation of a map's increments.

Hairer, Lubich and Wanner, *Geometric Numerical Integration*, §VIII.5 ("Reducing
rounding errors"), as in Hairer's GNI codes: the increment d_k = Φ_h(x_k) − x_k is
formed by the method (``Integrator.increment``) and added with a running correction e,

    a = d_k + e_k,   x_{k+1} = x_k + a,   e_{k+1} = (x_k − x_{k+1}) + a,

so the rounding of x_k + a (an ulp of |x|, much larger than one of |d|) is carried to
the next step instead of being lost.  Over N steps the round-off in x then grows like
√N ulp of the increments rather than N ulp of x.  The state is (x, e);
``simulate(..., compensated=True)`` wraps the integrator, starts from e = 0 and gives
back x alone.  The correction is only as good as the increment: for a map whose
increment is formed by subtraction after the step (the default ``increment``) it gains
nothing.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax

from mechint.errors import InputError
from mechint.maps import Integrator, StepStatus, Traits


@final
@dataclasses.dataclass(frozen=True)
class Compensated(Integrator):
    base: Integrator

    name: ClassVar[str] = "compensated"

    def __post_init__(self):
        if not isinstance(self.base, Integrator):
            raise InputError("base", f"{self.base!r} is not a mechint integrator")

    @property
    def traits(self) -> Traits:  # type: ignore[override]
        return self.base.traits

    def cannot_serve(self, system) -> str | None:
        return self.base.cannot_serve(system)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        state, e = x
        d, st = self.base.increment(system, state, h)
        a = jax.tree.map(lambda u, v: u + v, d, e)
        new = jax.tree.map(lambda u, v: u + v, state, a)
        e = jax.tree.map(lambda u, w, v: (u - w) + v, state, new, a)
        return (new, e), st

    def preserved(self, system, x, h) -> dict:
        return self.base.preserved(system, x[0], h)
