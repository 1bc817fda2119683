r"""Mechanical systems with holonomic constraints (Leimkuhler & Reich, *Simulating
Hamiltonian Dynamics* (2004), ch. 7; Hairer, Lubich & Wanner, GNI, §VII.1).

A separable H(q, p) = T(p) + V(q) with T = ½ pᵀ M⁻¹ p quadratic, and m constraints
g(q) = 0 (one JAX function of q returning (m,)), with G(q) = ∂g/∂q of rank m:

    q̇ = ∇T(p) = M⁻¹p,   ṗ = −∇V(q) − G(q)ᵀ λ,   0 = g(q).

Solutions stay on the manifold T*Q = {g(q) = 0, G(q) ∇T(p) = 0} (the second set, the
hidden constraints, is d/dt g = 0), where the flow is symplectic: the canonical form
restricted to T*Q.  Differentiating the hidden constraints once more gives the multiplier
at every state of T*Q (index 1), with W = M⁻¹ and v = ∇T(p):

    (G W Gᵀ) λ = g''(q)[v, v] − G W ∇V(q).

``vector_field`` is this index-1 field, whose flow keeps T*Q: the reference that DOP853
integrates.  The maps that do not know the constraints would drift off T*Q, and are
refused (``maps.refusal``); RATTLE and SHAKE (``integrators.Rattle``, ``Shake``) serve
it.

The invariants are H, the residuals ``constraints`` = max_i |g_i(q)| and
``constraint_rates`` =
max_i |(G(q)∇T(p))_i| (zero on T*Q: reported, so that a run shows how well it kept them;
``residuals(x)`` gives the vectors), and the momentum maps
the user declares: J(q, p) = pᵀ(A q + b) of a linear symmetry of V and g (checked at
construction: J's form, and dJ/dt = 0 along the field at states on T*Q), which RATTLE
keeps exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint._validate import function_reference, traced
from mechint.errors import InputError
from mechint.solvers.linear import solve
from mechint.systems import constrained_checks as checks
from mechint.systems.base import PoissonSystem, state_pair, validate_vector_state
from mechint.systems.canonical import Canonical, Separable, _parameters

# a state is on T*Q when its residuals are at most this relative to their scales
# (``residual_scales``), or 1000 ulps of its precision where that is more: hand-typed
# states (cos 0.3, sin 0.3) are, to round-off; the maps' steps judge theirs alike
MANIFOLD_RTOL = 1e-10
MANIFOLD_ULPS = 1000.0


def manifold_tolerance(dtype) -> float:
    """The relative size of a residual that still counts as on the manifold."""
    return max(MANIFOLD_RTOL, MANIFOLD_ULPS * float(np.finfo(dtype).eps))


@register_pytree(data=("system", "params"), meta=("g", "m", "momenta", "dof", "state_options"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class Constrained(PoissonSystem):
    """``system`` (a ``Separable`` canonical system with T quadratic) under the holonomic
    constraints ``constraints(q)`` (``constraints(q, params)`` with ``params``: a pytree of
    arrays, leaves of the system, traceable and differentiable), returning (m,) (a scalar
    is one constraint); the text "package.module:function" names one to import.
    ``momenta``: name → J(q, p), momentum maps of linear symmetries of V and g, kept by
    RATTLE.  See the module docstring."""

    system: Separable
    g: Callable
    m: int
    dof: int
    params: object = None
    momenta: tuple[tuple[str, Callable], ...] = ()

    name: ClassVar[str] = "constrained"
    constrained: ClassVar[bool] = True
    constant_structure: ClassVar[bool] = True
    state_fields = Canonical.state_fields
    descriptions: ClassVar[dict[str, str]] = {
        "q": "position",
        "p": "momentum",
        "constraints": "largest constraint residual max_i |g_i(q)| (0 on the manifold)",
        "constraint_rates": "largest rate residual max_i |(G(q) dT/dp)_i| (0 on the manifold)",
        "multipliers": "the constraints' multipliers λ (index 1): G(q)ᵀλ is the constraint force",
    }
    # a run's files hold the multipliers at every sample, along this dimension
    multiplier_dims: ClassVar[tuple[str, ...]] = ("constraint",)
    # True where G has full rank at every point of the manifold (a chain of rods, rigid
    # molecules): a start's rank is then not checked (``validate_state``)
    full_rank: ClassVar[bool] = False

    def __init__(self, system, constraints, params=None, momenta=None):
        if not isinstance(system, Separable) or getattr(system, "time_dependent", False):
            what = type(system).__name__
            why = ("is time dependent" if isinstance(system, Separable)
                   else "is not a separable canonical system H = T(p) + V(q)")  # fmt: skip
            raise InputError(
                "system",
                f"{what} {why}; RATTLE and SHAKE need H = ½ pᵀM⁻¹p + V(q)",
                "give a Separable system: SeparableHamiltonian(T, V, dof), "
                "HarmonicOscillator(omega), ...",
            )
        if isinstance(constraints, str):  # "package.module:function" (the CLI's)
            constraints = function_reference("constraints", constraints)
        if not callable(constraints):
            raise InputError(
                "constraints", f"must be a function of q, got {type(constraints).__name__}"
            )
        params = _parameters(params)
        object.__setattr__(self, "system", system)
        object.__setattr__(self, "g", constraints)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "dof", int(system.dof))
        object.__setattr__(self, "m", checks.constraint_count(constraints, system.dof, params))
        object.__setattr__(self, "momenta", checks.momentum_table(momenta))
        # the CLI's state options: a subclass's own table, else the base system's
        own = vars(type(self)).get("state_options", system.state_options)
        object.__setattr__(self, "state_options", own)
        if not traced((system, params)):
            checks.check_kinetic(self)
            checks.check_rank(self)
            checks.check_momenta(self)

    def __repr__(self) -> str:
        name = getattr(self.g, "__name__", repr(self.g))
        return f"Constrained({self.system!r}, constraints={name}, m={self.m})"

    # -- the constraints ------------------------------------------------------------
    def constraints(self, q) -> Float[Array, " m"]:
        """g(q), one sample."""
        out = self.g(q) if self.params is None else self.g(q, self.params)
        return jnp.reshape(out, (self.m,))

    def constraint_jacobian(self, q) -> Float[Array, "m d"]:
        """G(q) = ∂g/∂q, one sample."""
        return jax.jacfwd(self.constraints)(q)

    def inverse_mass(self, p, rows):
        """The rows of ``rows`` times W = ∇²T (M⁻¹, constant as T is quadratic)."""
        grad_T = self.system.kinetic_gradient
        return jax.vmap(lambda r: jax.jvp(grad_T, (p,), (r,))[1])(rows)

    def multipliers(self, x) -> Float[Array, "... m"]:
        """λ at states x of T*Q (any leading axes): the index-1 multipliers of the
        module docstring, G(q)ᵀλ the constraint force.  Evaluated at the saved states of
        any run, they are the constraint forces along it."""
        q, p = x
        return jnp.vectorize(self._multipliers, signature="(d),(d)->(m)")(q, p)

    def _multipliers(self, q, p):
        v = self.system.kinetic_gradient(p)
        G = self.constraint_jacobian(q)
        GW = self.inverse_mass(p, G)
        curvature = jax.jvp(lambda y: jax.jvp(self.constraints, (y,), (v,))[1], (q,), (v,))[1]
        rhs = curvature - GW @ self.system.potential_gradient(q)
        return jnp.linalg.solve(GW @ G.T, rhs)

    # -- the System contract --------------------------------------------------------
    @property
    def state_shape(self) -> tuple[int, ...]:
        return (self.dof,)

    def energy(self, q, p):
        return self.system.energy(q, p)

    def hamiltonian(self, x):
        q, p = x
        return jnp.vectorize(self.energy, signature="(d),(d)->()")(q, p)

    def vector_field(self, x):
        def one(q, p):
            lam = self._multipliers(q, p)
            force = -self.system.potential_gradient(q) - self.constraint_jacobian(q).T @ lam
            return self.system.kinetic_gradient(p), force

        q, p = x
        return jnp.vectorize(one, signature="(d),(d)->(d),(d)")(q, p)

    def residuals(self, x) -> tuple[Float[Array, "... m"], Float[Array, "... m"]]:
        """(g(q), G(q)∇T(p)) at states x (any leading axes): 0 on T*Q."""

        def one(q, p):
            G = self.constraint_jacobian(q)
            return self.constraints(q), G @ self.system.kinetic_gradient(p)

        q, p = x
        return jnp.vectorize(one, signature="(d),(d)->(m),(m)")(q, p)

    def invariants(self, x) -> dict:
        q, p = x
        g, g_dot = self.residuals(x)
        out = {
            "H": self.hamiltonian(x),
            "constraints": jnp.max(jnp.abs(g), axis=-1),
            "constraint_rates": jnp.max(jnp.abs(g_dot), axis=-1),
        }
        for name, J in self.momenta:
            out[name] = jnp.vectorize(J, signature="(d),(d)->()")(q, p)
        return out

    @property
    def momentum_maps(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(name for name, _ in self.momenta)

    def invariant_scales(self, x) -> dict:
        """Errors are measured against the size of the terms an invariant sums: the
        largest over i of Σ_j |G_ij| |q_j| for ``constraints``, of Σ_j |G_ij| |∇T(p)_j|
        for ``constraint_rates``, and Σ_i |∂J/∂p_i p_i| for a declared momentum map J
        (linear in p, so J is the sum of those terms: a cluster's total momentum is 0)."""
        sg, sv = self.residual_scales(x)
        out = {"constraints": jnp.max(sg, axis=-1), "constraint_rates": jnp.max(sv, axis=-1)}
        q, p = x
        for name, J in self.momenta:

            def terms(q, p, J=J):
                return jnp.sum(jnp.abs(jax.grad(J, argnums=1)(q, p) * p))

            out[name] = jnp.vectorize(terms, signature="(d),(d)->()")(q, p)
        return out

    def step_residuals(self, q, p, p_hat=None):
        """(g, its scale, the rates G∇T(p), their scale) at one state, from one G: what a
        map's step judges its new state by (``residuals`` and ``residual_scales`` in
        one).  ``p_hat``, the momentum before a projection, joins the rates' scale: its
        kicks are the terms the projected momentum sums, whose rounding remains."""
        G = self.constraint_jacobian(q)
        A = jnp.abs(G)
        v = self.system.kinetic_gradient(p)
        a = jax.jvp(self.system.kinetic_gradient, (p,), (self.system.potential_gradient(q),))[1]
        sv = A @ (jnp.abs(v) + jnp.sqrt(jnp.abs(a) * jnp.abs(q)))
        if p_hat is not None:
            sv = jnp.maximum(sv, A @ jnp.abs(self.system.kinetic_gradient(p_hat)))
        return self.constraints(q), A @ jnp.abs(q), G @ v, sv

    def residual_scales(self, x):
        """The size of the terms of each g_i and of its rate (shaped like ``residuals``):
        Σ_j |G_ij| |q_j|, and Σ_j |G_ij| (|v_j| + √(|a_j| |q_j|)) with v = ∇T(p) and
        a = M⁻¹∇V(q): the speed the forces give over the system's own size floors the
        rates' scale where the state is at rest (a chain hanging still has p ≈ 0, and
        rates that are rounding of it)."""

        q, p = x
        one = lambda q, p: self._scales_of(q, p, self.constraint_jacobian(q))  # noqa: E731
        return jnp.vectorize(one, signature="(d),(d)->(m),(m)")(q, p)

    def _scales_of(self, q, p, G):
        """``residual_scales`` of one state whose G is given."""
        A = jnp.abs(G)
        a = jax.jvp(self.system.kinetic_gradient, (p,), (self.system.potential_gradient(q),))[1]
        v = jnp.abs(self.system.kinetic_gradient(p)) + jnp.sqrt(jnp.abs(a) * jnp.abs(q))
        return A @ jnp.abs(q), A @ v

    def coordinates(self, x):
        return jnp.concatenate(x, axis=-1)

    def from_coordinates(self, z):
        return z[..., : self.dof], z[..., self.dof :]

    def poisson_tensor(self, x):
        """The canonical 𝕁 of the ambient R^2d: the flow is symplectic for its
        restriction to T*Q, which ``diagnostics.symplectic_defects`` measures."""
        d = self.dof
        I, O = np.eye(d), np.zeros((d, d))
        return jnp.broadcast_to(
            jnp.asarray(np.block([[O, I], [-I, O]])), (*x[0].shape[:-1], 2 * d, 2 * d)
        )

    def tangent_basis(self, x) -> Float[Array, "2d k"]:
        """An orthonormal basis (columns) of the tangent space of T*Q at x (one state),
        k = 2(d − m): the null space of the Jacobian of (g, G∇T)."""
        z = self.coordinates(x)
        C = jax.jacfwd(lambda z: jnp.concatenate(self.residuals(self.from_coordinates(z))))(z)
        _, _, Vt = jnp.linalg.svd(C)
        return Vt[2 * self.m :].T

    def parameters(self) -> dict:
        return {
            "system": self.system.name,
            **{f"system.{k}": v for k, v in self.system.parameters().items()},
            "constraints": getattr(self.g, "__name__", repr(self.g)),
            "m": self.m,
        }

    def validate_state(self, x, name: str = "x0", momenta: bool = True):
        """(q, p) checked on the manifold: g(q) = 0 and, unless not ``momenta``, the
        momentum on its tangent space (G ∇T(p) = 0), to ``manifold_tolerance``."""
        vector = lambda label, v: validate_vector_state(label, v, self.dof)  # noqa: E731
        (q, p), batched = state_pair(name, x, ("q", vector), ("p", vector))
        if traced((self, q, p)):  # the numbers are unknown inside a transform
            return (q, p), batched
        given = np.result_type(np.asarray(x[0]), np.asarray(x[1]))
        tol = manifold_tolerance(given if np.issubdtype(given, np.floating) else np.float64)
        g, g_dot = (np.asarray(a) for a in _residuals(self, (q, p)))
        scales, gram = _scales(self, (q, p))
        sg, sv = np.asarray(scales[0]), np.asarray(scales[1])
        # the squared singular values of Ĝ, to about m ulps
        sigma = None if gram is None else np.linalg.eigvalsh(np.asarray(gram))
        bad_g = np.abs(g) > tol * np.maximum(sg, 1e-300)
        bad_v = (np.abs(g_dot) > tol * np.maximum(sv, 1e-300)) & momenta
        if not all(np.all(np.isfinite(a)) for a in (g, g_dot, sigma) if a is not None):
            raise InputError(
                "constraints",
                f"are not finite at {name}",
                "check g(q) and its derivative there for divisions by zero",
            )
        if bad_g.any() or bad_v.any():
            where = ""
            if batched:
                member = int(np.flatnonzero((bad_g | bad_v).reshape(len(q), -1).any(axis=1))[0])
                where, g, g_dot = f" (member {member})", g[member], g_dot[member]
            raise InputError(
                name,
                f"is off the constraint manifold{where}: max |g(q)| = {np.max(np.abs(g)):.3g}, "
                f"max |G(q) dT/dp| = {np.max(np.abs(g_dot)):.3g}",
                f"project it onto the manifold first: system.project({name}) (the CLI: --project)",
            )
        if sigma is not None:
            checks.rank_at(self, sigma, name)
        return (q, p), batched

    def state_from_options(self, given: dict, frame=None):
        """The base system's state from its options, which must lie on the manifold
        (``project`` moves it there: ``mechint run --project``)."""
        return self.system.state_from_options(given, frame)

    def project(self, x0):
        """x0 (a state or a batch) moved onto T*Q: q by the minimal-norm Newton iteration
        q ← q − W Gᵀ(G W Gᵀ)⁻¹ g(q), G at each iterate (along the constraint forces: the
        nearest point in the metric of M to first order), then p ← p − G(q)ᵀ ν with
        G(q)∇T(p) = 0 (``momentum_projection``).  ``InputError`` naming ``x0`` where
        the iteration does not converge (a q too far from the manifold, or G of lower
        rank there)."""
        vector = lambda label, v: validate_vector_state(label, v, self.dof)  # noqa: E731
        (q, p), batched = state_pair("x0", x0, ("q", vector), ("p", vector))
        qb, pb = (q, p) if batched else (q[None], p[None])
        (qn, pn), ok, res = _project(self, (jnp.asarray(qb), jnp.asarray(pb)))
        ok = np.asarray(ok)
        if not ok.all():
            member = int(np.flatnonzero(~ok)[0])
            raise InputError(
                "x0",
                f"could not be projected onto the constraint manifold (member {member}: "
                f"Newton stopped at |g| = {float(np.asarray(res)[member]):.3g})",
                "start from a state closer to g(q) = 0",
            )
        qn, pn = np.asarray(qn), np.asarray(pn)
        return (qn, pn) if batched else (qn[0], pn[0])

    def momentum_projection(self, q, p):
        """p − G(q)ᵀν with G(q)∇T(p − G(q)ᵀν) = 0, one sample: linear in ν (T is
        quadratic), the M⁻¹-orthogonal projection of p onto the hidden constraints."""
        G = self.constraint_jacobian(q)
        GW = self.inverse_mass(p, G)
        return p - G.T @ solve(GW @ G.T, G @ self.system.kinetic_gradient(p))

    @property
    def keeps_energy(self) -> bool:
        """Whether RATTLE keeps H exactly on this system (False; ``RigidWater`` of one
        molecule, a free rigid body, says True)."""
        return False

    def example_state(self):
        return self.project(self.system.example_state())

    def generic_position(self):
        """A q off the manifold where G has its generic rank (construction's check):
        the base system's example position."""
        return self.system.example_state()[0]


@jax.jit
def _residuals(system, x):
    return system.residuals(x)


@jax.jit
def _scales(system, x):
    """The residuals' scales and, for one state of a system not ``full_rank``, Ĝ Ĝᵀ,
    Ĝ = G with its rows at unit length (one program for ``validate_state``).  Not for a
    batch: a member at a singular point fails at its first step with its own record
    while the others run, and the check would cost a batch of 10³ ten-link chains in
    matrix variables (m = 90) 4 s, twice the rest of its validation."""
    if system.full_rank or x[0].ndim > 1:
        return system.residual_scales(x), None

    def one(q, p):
        G = system.constraint_jacobian(q)
        norms = jnp.linalg.norm(G, axis=-1, keepdims=True)
        # (each row over its length: the rank of the gradients' directions, whatever the
        # constraints' scales; a zero row stays zero)
        unit = G / jnp.where(norms > 0, norms, 1.0)
        return *system._scales_of(q, p, G), unit @ unit.T

    sg, sv, gram = jnp.vectorize(one, signature="(d),(d)->(m),(m),(m,m)")(*x)
    return (sg, sv), gram


@jax.jit
def _project(system: Constrained, x):
    """(the states x moved onto T*Q, converged, |g| left) for a batch x: q by the
    minimal-norm Newton iteration q ← q − W Gᵀ (G W Gᵀ)⁻¹ g(q) (G at each iterate, in the
    metric of M), then p projected exactly."""

    eps = float(jnp.finfo(x[0].dtype).eps)

    def one(q0, p0):
        def body(state):
            q, i, _ = state
            G = system.constraint_jacobian(q)
            GW = system.inverse_mass(p0, G)
            dq = GW.T @ jnp.linalg.solve(GW @ G.T, system.constraints(q))
            done = jnp.max(jnp.abs(dq)) <= 8.0 * eps * jnp.max(jnp.abs(q))
            return q - dq, i + 1, done | ~jnp.all(jnp.isfinite(dq))

        q, _, _ = jax.lax.while_loop(
            lambda s: (s[1] < 100) & ~s[2], body, (q0, jnp.asarray(0), jnp.asarray(False))
        )
        g = system.constraints(q)
        sg = jnp.abs(system.constraint_jacobian(q)) @ jnp.abs(q)
        ok = jnp.all(jnp.abs(g) <= 64.0 * eps * jnp.maximum(sg, jnp.finfo(q.dtype).tiny))
        return q, system.momentum_projection(q, p0), ok, jnp.max(jnp.abs(g))

    q, p, ok, res = jax.vmap(one)(*x)
    return (q, p), ok, res
