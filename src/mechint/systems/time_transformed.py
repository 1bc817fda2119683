r"""The Poincaré time transformation: variable steps that keep a map symplectic.

Hairer, Lubich and Wanner, *Geometric Numerical Integration*, 2nd ed., §VIII.2.  With
dt/ds = g(q, p) > 0, a Hamiltonian system H(q, p) becomes, in the fictive time s, the
Hamiltonian system of

    K(Q, P) = g(q, p) · (H(q, p) + e),   Q = (q, t),  P = (p, e),

on the extended phase space: t is the physical time (dt/ds = ∂K/∂e = g), e its
conjugate (de/ds = −∂K/∂t = 0) fixed at −H(q0, p0), so that K = 0 along the solution and
(q, p)(s) is H's solution at time t(s).  Steps of constant size in s are steps of size
≈ g·Δs in t: small where g is small (g = |q|^{3/2} at Kepler's periapsis).  Any
symplectic map of K (the midpoint rule, Gauss, Störmer–Verlet or symplectic Euler by
Newton: K is not separable) is symplectic on the extended space, so H − H(q0, p0) stays
bounded, without drift, over exponentially long times.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from mechint._pytree import register_pytree
from mechint.errors import InputError
from mechint.systems.canonical import Canonical, _scalar_function


@final
@register_pytree(data=("base",), meta=("g", "dof", "state_options"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class TimeTransformed(Canonical):
    """``system`` (a canonical one) in the fictive time s with dt/ds = ``g(q, p)`` > 0,
    as the Hamiltonian K = g(q, p)(H(q, p) + e) on the extended phase space
    ((q, t), (p, e)) (see the module docstring): dof + 1 degrees of freedom, the last
    position the physical time t, the last momentum e = −H(q0, p0).

    A state of ``system`` is extended when validated (t = 0, e = −H), a traced one too
    (``traced_state``, inside a caller's jit or grad); an extended state is taken as it
    is.  Invariants: K (≈ 0), the energy ``H`` of ``system`` and its
    other first integrals, at (q, p).  A run's h is the fictive step Δs; the physical
    time is the state's q[-1] (``Trajectory.t`` of a single trajectory reads it).  A
    step that meets g ≤ 0 fails (K is NaN there: a non-finite state, or for an implicit
    map a Newton solve that does not converge), never gives a state; a step whose new
    state has g ≤ 0 fails with ``Reason.OUT_OF_DOMAIN`` (``domain_status``)."""

    base: Canonical
    g: Callable
    dof: int

    name: ClassVar[str] = "time-transformed"
    descriptions: ClassVar[dict[str, str]] = {
        "K": "extended Hamiltonian g·(H + e), zero along the solution",
        "q": "position (the last: the physical time t)",
        "p": "momentum (the last: e = −H(q0, p0))",
    }

    def __init__(self, system, g):
        if not isinstance(system, Canonical):
            raise InputError("system", f"{system!r} is not a canonical system",
                             "time transformations take a system with state (q, p)")  # fmt: skip
        if isinstance(system, TimeTransformed):
            raise InputError("system", "is already time-transformed")
        _scalar_function("g", g, 2, system.dof)
        object.__setattr__(self, "base", system)
        object.__setattr__(self, "g", g)
        object.__setattr__(self, "dof", system.dof + 1)
        # the base system's initial-state options (the command line's), extended
        object.__setattr__(self, "state_options", system.state_options)

    def __repr__(self) -> str:
        return f"TimeTransformed({self.base!r}, g={getattr(self.g, '__name__', self.g)!s})"

    def split(self, Q, P):
        """(q, t, p, e) of an extended state."""
        return Q[..., :-1], Q[..., -1], P[..., :-1], P[..., -1]

    def energy(self, q, p):
        q0, _, p0, e = self.split(q, p)
        g = self.g(q0, p0)
        g = jnp.where(g > 0, g, jnp.nan)  # g ≤ 0: no flow (the step fails as non-finite)
        return g * (self.base.energy(q0, p0) + e)

    checks_domain: ClassVar[bool] = True

    def domain_status(self, x, /):
        """g > 0 at the new state (a map that evaluates g only between its ends, as the
        midpoint rule does, may step to where g ≤ 0: that step fails, residual −g)."""
        from mechint.maps import Reason, status

        q, _, p, _ = self.split(*x)
        g = self.g(q, p)
        ok = g > 0
        return status(ok, jnp.where(ok, 0.0, jnp.where(jnp.isnan(g), jnp.inf, -g)),
                      Reason.OUT_OF_DOMAIN)  # fmt: skip

    def physical_time(self, x):
        """The physical time t of a state (or of samples of states)."""
        return x[0][..., -1]

    def base_state(self, x):
        """The state (q, p) of the base system in an extended state (or samples of them):
        the time t and its conjugate e removed (``Trajectory.base_state``)."""
        q, _, p, _ = self.split(*x)
        return q, p

    def first_integrals(self, x) -> dict:
        q, _, p, _ = self.split(*x)
        H = self.base._vectorize(self.base.energy, "(d),(d)->()")(q, p)
        return {"H": H, **self.base.first_integrals((q, p))}

    def invariants(self, x) -> dict:
        return {"K": self.hamiltonian(x), **self.first_integrals(x)}

    def validate_state(self, x, name: str = "x0"):
        try:  # an extended state, as a resumed run gives it back
            return super().validate_state(x, name)
        except InputError:
            (q, p), batched = self.base.validate_state(x, name)
        H = np.asarray(self.base.hamiltonian((q, p)), dtype=np.float64)
        g = np.asarray(jax.vmap(self.g)(q, p) if batched else self.g(q, p))
        if not np.all(np.isfinite(g) & (g > 0)):
            raise InputError("g", f"must be positive and finite at {name}, got {g.min():g}",
                             "dt/ds = g(q, p) > 0 along the run")  # fmt: skip
        t = np.zeros_like(H)[..., None]
        return (np.concatenate([q, t], -1), np.concatenate([p, -H[..., None]], -1)), batched

    def traced_state(self, x):
        """A traced state of ``base`` (q of its dof) extended by (t, e) = (0, −H), as
        ``validate_state`` extends a concrete one (g > 0 is the run's to check: a step
        where g ≤ 0 fails); any other as it is."""
        leaves = jax.tree.leaves(x)
        if len(leaves) != 2 or any(jnp.shape(a)[-1:] != (self.base.dof,) for a in leaves):
            return x
        q, p = (jnp.asarray(a) for a in leaves)
        H = self.base.hamiltonian((q, p))
        t = jnp.zeros_like(H)[..., None]
        return jnp.concatenate([q, t], -1), jnp.concatenate([p, -H[..., None]], -1)

    def example_state(self):
        return self.validate_state(self.base.example_state())[0]

    def state_from_options(self, given: dict, frame=None):
        """The base system's state from its options, extended by (t, e) = (0, −H)."""
        return self.validate_state(self.base.state_from_options(given, frame))[0]

    def parameters(self) -> dict:
        return {"system": type(self.base).__name__, **self.base.parameters(),
                "g": getattr(self.g, "__name__", repr(self.g))}  # fmt: skip
