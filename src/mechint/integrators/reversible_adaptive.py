r"""Reversible adaptive steps: Hairer and Söderlind's step-density control.

E. Hairer and G. Söderlind, "Explicit, time reversible, adaptive step size control",
SIAM J. Sci. Comput. 26 (2005) 1838–1851; Hairer, Lubich and Wanner, *Geometric
Numerical Integration*, 2nd ed., §VIII.3.  A step-size function σ(x) > 0 says how long
a step should be where the state is x (steps h = ε σ).  Its inverse, the step density
ρ = 1/σ, is carried as a variable with its own differential equation along the flow in
the fictive time τ (dt/dτ = 1/ρ):

    dρ/dτ = G(x),   G(x) = −∇σ(x)·f(x) / σ(x)   (= −d/dt log σ along the solution),

and the pair (x, ρ) is advanced by the symmetric recurrence

    ρ_{n+½} = ρ_n + ε/2 · G(x_n),
    x_{n+1} = Φ_{h_n}(x_n),   h_n = ε / ρ_{n+½},   t_{n+1} = t_n + h_n,
    ρ_{n+1} = ρ_{n+½} + ε/2 · G(x_{n+1}),

with Φ a symmetric map (Störmer–Verlet, its compositions, the midpoint rule).  The map
(x, ρ) ↦ (x', ρ') is then symmetric (ε ↦ −ε inverts it), explicit when Φ is, and
reversible when Φ and σ are (σ(q, −p) = σ(q, p)).  It is not symplectic, but for
integrable reversible systems it keeps the actions, so the energy error stays bounded
without drift, as with constant steps (the paper's theorem).  Every step costs two
evaluations of G: one directional derivative of σ along the vector field (``jax.jvp``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from mechint import _validate
from mechint.errors import InputError
from mechint.maps import (
    Integrator,
    Reason,
    Setting,
    StepStatus,
    Traits,
    Wrapper,
    combine,
    status,
)
from mechint.systems.canonical import Canonical


@final
@dataclasses.dataclass(frozen=True)
class ReversibleAdaptive(Wrapper):
    """Hairer–Söderlind reversible step-size control around a symmetric map ``base``
    (see the module docstring).

    ``sigma``: the step-size function σ(x) > 0 of the (unbatched) base state, one number
    (shape ()), a JAX function (for Kepler, σ = |q|^{3/2}: steps follow the local orbital
    time scale).
    The driver's h is the fictive step ε; the physical step is ε/ρ.  The state is
    (x, clock) with clock = (t, ρ): the physical time since the start and the step
    density (``Trajectory.clock``; ``Trajectory.t`` is the physical time of a single
    trajectory).  A step whose density ρ_{n+½} is not positive and finite, or that
    reaches a state where σ ≤ 0, fails (``Reason.STEP_SIZE``)."""

    base: Integrator
    sigma: Callable

    name: ClassVar[str] = "reversible-adaptive"
    extra: ClassVar[str] = "clock"
    recorded: ClassVar[bool] = True
    # the command line's --base and --sigma (a wrapper: not built with no arguments, so
    # registered in ``registry.WRAPPERS``, not among the maps every test builds)
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "base",
            "reversible-adaptive: the symmetric map whose steps it controls (default "
            "stormer-verlet for canonical systems, midpoint otherwise)",
            default=lambda system: (
                "stormer-verlet" if isinstance(system, Canonical) else "midpoint"
            ),
            integrator=True,
        ),
        Setting(
            "sigma",
            "reversible-adaptive: the step-size function sigma(x) > 0 of the state, "
            "package.module:function (required)",
            lambda value: _validate.function_reference("sigma", value),
        ),
    )

    def __post_init__(self):
        if not isinstance(self.base, Integrator):
            raise InputError("base", f"{self.base!r} is not a mechint integrator")
        if not callable(self.sigma):
            raise InputError("sigma", f"expected a function sigma(x) > 0, got {self.sigma!r}")
        if not self.base.traits.symmetric:
            raise InputError(
                "base", f"{type(self.base).__name__} is not symmetric: the control is "
                "reversible only around a symmetric map",
                "use StormerVerlet, a Composition of it, or ImplicitMidpoint",
            )  # fmt: skip
        self.settle_traits()

    def derived_traits(self) -> Traits:
        b = self.base.traits
        return Traits(order=b.order, symmetric=True, explicit=b.explicit, forced=b.forced)

    def start(self, system, x0, given, batched: bool, batch: int):
        """The clock (t, ρ) at the start: t = 0 and ρ = 1/σ(x0) per member, or
        ``given`` (a resumed run's last clock)."""
        sigma = jax.vmap(self.sigma) if batched else self.sigma
        if given is not None and _validate.traced((x0, given)):  # checked where given
            return jnp.asarray(given, dtype=jax.tree.leaves(x0)[0].dtype)
        want = (batch,) if batched else ()
        if _validate.traced(x0):  # inside a transform: only the shape to check
            s = sigma(x0)
            self._scalar(s, want)
            return jnp.stack([jnp.zeros_like(s), 1.0 / s], axis=-1)
        real = np.asarray(jax.tree.leaves(x0)[0]).dtype
        if given is not None:
            c = _validate.real_array("clock", given)
            want = (batch, 2) if batched else (2,)
            if c.shape != want or not np.all(c[..., 1] > 0):
                raise InputError("clock", f"expected (t, ρ > 0) of shape {want}, got {c.shape}")
            return c.astype(real)
        try:
            s = jax.jit(sigma)(x0)
        except Exception as exc:  # any failure to trace or run is the function's fault
            raise InputError("sigma", f"could not be evaluated at x0: {type(exc).__name__}: "
                             f"{exc}", "write it as sigma(x) of the (unbatched) state with "
                             "jax.numpy, so it can be traced") from None  # fmt: skip
        _validate.real_output("sigma", s)
        self._scalar(s, want)
        s = np.asarray(s, dtype=np.float64)
        if not np.all(np.isfinite(s) & (s > 0)):
            raise InputError("sigma", f"must be positive and finite at x0, got {s.min():g}",
                             "a step-size function sigma(x) > 0")  # fmt: skip
        return np.stack([np.zeros_like(s), 1.0 / s], axis=-1).astype(real)

    def cannot_serve(self, system) -> str | None:
        if getattr(system, "physical_time", None) is not None:  # (``TimeTransformed``)
            return (f"{type(system).__name__} carries its own physical time (a time "
                    "transformation): variable steps on it would step its fictive time and "
                    "report that as the time; use one of the two")  # fmt: skip
        return self.base.cannot_serve(system)

    @staticmethod
    def _scalar(s, want: tuple[int, ...]) -> None:
        """``InputError`` naming sigma unless σ(x0) is one number per state (``want``:
        the shape over the batch's members)."""
        got = tuple(jnp.shape(s))
        if got != want:
            one = got[len(want) - len(got) :] if len(got) > len(want) else got
            raise InputError("sigma", f"must return a scalar step size, returned shape "
                             f"{one}", "return one number sigma(x) > 0, e.g. "
                             "jnp.sum(q**2) ** 0.75")  # fmt: skip

    def density_rate(self, system, x):
        """(G(x) = −∇σ(x)·f(x)/σ(x), the rate of the step density ρ in the fictive
        time; σ(x))."""
        s, ds = jax.jvp(self.sigma, (x,), (system.vector_field(x),))
        return -ds / s, s

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        y, clock = x
        t, rho = clock[..., 0], clock[..., 1]
        half = rho + 0.5 * h * self.density_rate(system, y)[0]
        dt = h / half
        y1, st = self.base.step(system, y, dt)
        rate, sigma = self.density_rate(system, y1)
        rho1 = half + 0.5 * h * rate
        # a density ρ ≤ 0 or a step-size function σ ≤ 0 at the new state: no step
        ok = (half > 0) & (sigma > 0) & jnp.isfinite(dt) & jnp.isfinite(rho1)
        mine = status(ok, jnp.where(ok, 0.0, jnp.inf).astype(dt.dtype), Reason.STEP_SIZE)
        return (y1, jnp.stack([t + dt, rho1], axis=-1)), combine([st, mine])

    def preserved(self, system, x, h) -> dict:
        return {}
