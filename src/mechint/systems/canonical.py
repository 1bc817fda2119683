r"""Canonical Hamiltonian systems in (q, p) ∈ R^d × R^d (docs/math.md §4, Marsden).

q̇ = ∂H/∂p, ṗ = −∂H/∂q, i.e. ż = 𝕁∇H(z) with z = (q, p) and 𝕁 = [[0, I], [−I, 0]].
A map F is symplectic iff DFᵀ 𝕁 DF = 𝕁.

- ``Hamiltonian(H, dof)``: any H(q, p) (a jax-traceable function of one sample);
- ``SeparableHamiltonian(T, V, dof)``: H = T(p) + V(q); its kinetic and potential flows
  are exact and explicit (the pieces of symplectic Euler, Störmer-Verlet, splittings).

Both share ``Canonical``: the vector field comes from ``jax.grad`` of H, every method
works on one state or a batch (leading axes).  ``momentum_maps`` names invariants of the
form qᵀDp (momentum maps of linear symmetries): every symplectic partitioned
Runge-Kutta map (symplectic Euler, Störmer-Verlet, midpoint) keeps them exactly, and for
separable H so does each of the T and V flows.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint import maps
from mechint._pytree import register_pytree
from mechint._validate import count, real_array, traced
from mechint.errors import InputError
from mechint.systems.base import (
    NaturalSplit,
    PoissonSystem,
    SeparableEnergy,
    StateOption,
    required,
    state_pair,
    validate_vector_state,
)
from mechint.systems.flows import Drift, Kick


def _scalar_function(name: str, fn, nargs: int, dof: int, params=None) -> None:
    """Check, by tracing once, that ``fn`` maps ``nargs`` arrays of shape (dof,) (and
    ``params`` when given) to a scalar."""
    if not callable(fn):
        raise InputError(name, f"must be a function, got {type(fn).__name__}")
    probe = [jax.ShapeDtypeStruct((dof,), jnp.float64)] * nargs
    if params is not None:
        probe.append(
            jax.tree.map(lambda a: jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)), params)
        )
    try:
        out = jax.eval_shape(fn, *probe)
    except Exception as exc:  # any failure to trace is the user's function's fault
        raise InputError(
            name,
            f"could not be evaluated on arrays of shape ({dof},): {type(exc).__name__}: {exc}",
            "write it with jax.numpy so it can be traced, and check dof",
        ) from None
    if getattr(out, "shape", None) != ():
        raise InputError(
            name,
            f"must return a scalar, returned shape {getattr(out, 'shape', type(out).__name__)}",
            "sum over components, e.g. 0.5 * jnp.sum(p**2)",
        )


class Canonical(PoissonSystem):
    """The canonical capability: state (q, p), Π = 𝕁 constant, symplectic maps.  A
    subclass defines ``dof`` and ``energy(q, p)`` for one sample (shape (dof,) each)."""

    descriptions: ClassVar[dict[str, str]] = {"q": "position", "p": "momentum"}

    state_fields = (("q", ("dof",)), ("p", ("dof",)))
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("q0", "initial positions q (canonical systems): comma-separated"),
        StateOption("p0", "initial momenta p (canonical systems): comma-separated"),
    )
    dof: int
    constant_structure: ClassVar[bool] = True

    @abc.abstractmethod
    def energy(self, q, p) -> Float[Array, ""]: ...

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (self.dof,)

    def _vectorize(self, fn, signature: str):
        return jnp.vectorize(fn, signature=signature)

    def hamiltonian(self, x) -> Float[Array, ...]:
        q, p = x
        return self._vectorize(self.energy, "(d),(d)->()")(q, p)

    def vector_field(self, x):
        q, p = x
        dq, dp = self._vectorize(jax.grad(self.energy, argnums=(0, 1)), "(d),(d)->(d),(d)")(q, p)
        return dp, -dq

    def gradient(self, q, p):
        """(∂H/∂q, ∂H/∂p) at one sample."""
        return jax.grad(self.energy, argnums=(0, 1))(q, p)

    def first_integrals(self, x) -> dict:
        """Invariants besides H (none unless the model knows some)."""
        return {}

    def invariants(self, x) -> dict:
        return {"H": self.hamiltonian(x), **self.first_integrals(x)}

    def coordinates(self, x) -> Float[Array, "... 2d"]:
        return jnp.concatenate(x, axis=-1)

    def from_coordinates(self, z):
        return z[..., : self.dof], z[..., self.dof :]

    def poisson_tensor(self, x) -> Float[Array, "... 2d 2d"]:
        """The canonical 𝕁 (the same at every state), broadcast over batch axes."""
        d = self.dof
        I, O = np.eye(d), np.zeros((d, d))
        Jc = jnp.asarray(np.block([[O, I], [-I, O]]))
        return jnp.broadcast_to(Jc, (*x[0].shape[:-1], 2 * d, 2 * d))

    def validate_state(self, x, name: str = "x0") -> tuple[tuple, bool]:
        def vector(label, value):
            return validate_vector_state(label, value, self.dof)

        return state_pair(name, x, ("q", vector), ("p", vector))

    def example_state(self):
        d = self.dof
        return 0.3 * np.cos(np.arange(1, d + 1)), 0.2 * np.sin(np.arange(2, d + 2))

    def state_from_options(self, given: dict, frame=None):
        fix = f"give {self.dof} comma-separated numbers"
        q0 = required(given, "q0", self.name, fix)
        p0 = required(given, "p0", self.name, fix)
        try:
            return self.validate_state((q0, p0), "x0")[0]
        except InputError as exc:
            option = "p0" if "(p)" in exc.parameter else "q0"
            raise InputError(option, exc.problem, exc.fix) from None


class ReducedEnergy(Canonical):
    """The capability of an H invariant under a symmetry with momentum maps
    (``momentum_maps``): H(z) = Ĥ(π(z)) with π the symmetry's quadratic invariants.
    Gonzalez's discrete gradient, taken in π, then keeps the momentum maps as well
    (Gonzalez 1996)."""

    @abc.abstractmethod
    def symmetry_invariants(self, z) -> Float[Array, " k"]:
        """π(z), quadratic in z = (q, p) concatenated (one sample)."""

    @abc.abstractmethod
    def reduced_energy(self, pi) -> Float[Array, ""]:
        """Ĥ(π), with H(z) = Ĥ(π(z))."""


class Separable(Canonical, NaturalSplit, SeparableEnergy):
    """H = T(p) + V(q); a subclass defines ``kinetic(p)`` and ``potential(q)`` (one sample).
    Its natural split is (``Drift``, ``Kick``): the exact flows of T and V."""

    @abc.abstractmethod
    def kinetic(self, p) -> Float[Array, ""]: ...

    @abc.abstractmethod
    def potential(self, q) -> Float[Array, ""]: ...

    def natural_split(self) -> tuple[maps.Integrator, ...]:
        return (Drift(), Kick())

    def energy(self, q, p):
        return self.kinetic(p) + self.potential(q)

    def kinetic_gradient(self, p):
        return jax.grad(self.kinetic)(p)

    def potential_gradient(self, q):
        return jax.grad(self.potential)(q)

    def vector_field(self, x):
        q, p = x
        dT = self._vectorize(self.kinetic_gradient, "(d)->(d)")(p)
        dV = self._vectorize(self.potential_gradient, "(d)->(d)")(q)
        return dT, -dV

    def section_states(self, index: int, value: float, energy: float, count: int, *,
                       seed: int = 0, box: float = 1.0, sign: float = 1.0):  # fmt: skip
        """``count`` states (q, p) on the surface q_index = value at energy H = ``energy``:
        the other coordinates uniform in [−box, box], p_index ≥ 0 (≤ 0 for sign < 0)
        solved from T(p) = E − V(q) by bisection on |p_index| (T grows with it); draws
        with V + T > E already are rejected.  ``InputError`` (parameter "energy") when
        50 rounds of draws do not find ``count``."""
        rng = np.random.default_rng(seed)
        total = jax.jit(jax.vmap(lambda q, p: self.kinetic(p) + self.potential(q)))
        found_q: list = []
        found_p: list = []
        for _ in range(50):
            q = rng.uniform(-box, box, (4 * count, self.dof))
            p = rng.uniform(-box, box, (4 * count, self.dof))
            q[:, index], p[:, index] = value, 0.0
            q, p = q[np.asarray(total(q, p)) < energy], p[np.asarray(total(q, p)) < energy]
            lo, hi = np.zeros(len(q)), np.ones(len(q))
            for _ in range(60):  # an upper end where H is above the energy
                p[:, index] = hi
                low = np.asarray(total(q, p)) < energy
                if not low.any():
                    break
                hi = np.where(low, 2 * hi, hi)
            for _ in range(80):
                p[:, index] = mid = 0.5 * (lo + hi)
                below = np.asarray(total(q, p)) < energy
                lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
            p[:, index] = np.copysign(0.5 * (lo + hi), sign)
            found_q.extend(q)
            found_p.extend(p)
            if len(found_q) >= count:
                return np.array(found_q[:count]), np.array(found_p[:count])
        raise InputError("energy", f"found {len(found_q)} of {count} states at E = {energy:g} "
                         f"with the other coordinates in [-{box:g}, {box:g}]",
                         "a larger box, or another energy")  # fmt: skip


@final
@register_pytree(data=("params",), meta=("H", "dof", "energy_degree"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class Hamiltonian(Canonical):
    """A canonical system with any Hamiltonian ``H(q, p)`` (jax-traceable, one sample,
    q and p of shape (dof,), returning a scalar).

    ``params``: a pytree of arrays passed as ``H(q, p, params)``: the parameters are
    leaves of the system, so they may be traced (differentiated, vmapped) and a new value
    reuses the compiled run.  A function that closes over its parameters instead
    cannot be differentiated with respect to them through a run.  ``degree``: H is a
    polynomial of this degree (the average vector field then integrates exactly)."""

    H: Callable
    dof: int
    params: object = None

    name: ClassVar[str] = "hamiltonian"

    def __init__(self, H, dof: int = 1, params=None, degree: int | None = None):
        object.__setattr__(self, "energy_degree", _degree(degree))
        dof = count("dof", dof)
        params = _parameters(params)
        _scalar_function("H", H, 2, dof, params)
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "dof", dof)
        object.__setattr__(self, "params", params)

    def __repr__(self) -> str:
        return f"Hamiltonian(H={getattr(self.H, '__name__', self.H)!s}, dof={self.dof})"

    def energy(self, q, p):
        return self.H(q, p) if self.params is None else self.H(q, p, self.params)

    def parameters(self) -> dict:
        return {"H": getattr(self.H, "__name__", repr(self.H)), "dof": self.dof}


@final
@register_pytree(data=("params",), meta=("T", "V", "dof", "energy_degree"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class SeparableHamiltonian(Separable):
    """H(q, p) = T(p) + V(q) from user functions ``T(p)`` and ``V(q)`` (jax-traceable,
    one sample of shape (dof,), returning a scalar); with ``params`` (a pytree of arrays,
    traceable like ``Hamiltonian``'s) they are called as ``T(p, params)``, ``V(q, params)``.
    ``degree``: H is a polynomial of this degree, as for ``Hamiltonian``."""

    T: Callable
    V: Callable
    dof: int
    params: object = None

    name: ClassVar[str] = "separable-hamiltonian"

    def __init__(self, T, V, dof: int = 1, params=None, degree: int | None = None):
        object.__setattr__(self, "energy_degree", _degree(degree))
        dof = count("dof", dof)
        params = _parameters(params)
        _scalar_function("T", T, 1, dof, params)
        _scalar_function("V", V, 1, dof, params)
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "V", V)
        object.__setattr__(self, "dof", dof)
        object.__setattr__(self, "params", params)

    def __repr__(self) -> str:
        names = [getattr(f, "__name__", repr(f)) for f in (self.T, self.V)]
        return f"SeparableHamiltonian(T={names[0]}, V={names[1]}, dof={self.dof})"

    def kinetic(self, p):
        return self.T(p) if self.params is None else self.T(p, self.params)

    def potential(self, q):
        return self.V(q) if self.params is None else self.V(q, self.params)

    def parameters(self) -> dict:
        return {
            "T": getattr(self.T, "__name__", repr(self.T)),
            "V": getattr(self.V, "__name__", repr(self.V)),
            "dof": self.dof,
        }


def _degree(degree) -> int | None:
    """A declared polynomial degree of H (None: not declared)."""
    return None if degree is None else count("degree", degree)


def _parameters(params):
    """User parameters as a pytree of float arrays (traced leaves kept as they are)."""
    if params is None:
        return None
    try:
        return jax.tree.map(
            lambda a: a if traced(a) else jnp.asarray(real_array("params", a)), params
        )
    except InputError as exc:
        raise InputError("params", exc.problem, "give a pytree (dict, tuple) of arrays") from None
