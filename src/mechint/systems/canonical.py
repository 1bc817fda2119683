r"""Canonical Hamiltonian systems in (q, p) ∈ R^d × R^d (docs/math.md §4, Marsden).

q̇ = ∂H/∂p, ṗ = −∂H/∂q, i.e. ż = 𝕁∇H(z) with z = (q, p) and 𝕁 = [[0, I], [−I, 0]].
A map F is symplectic iff DFᵀ 𝕁 DF = 𝕁.

- ``Hamiltonian(H, dof)``: any H(q, p) (a jax-traceable function of one sample);
- ``SeparableHamiltonian(T, V, dof)``: H = T(p) + V(q); its kinetic and potential flows
  are exact and explicit (the pieces of symplectic Euler, Störmer-Verlet, splittings).

With ``time_dependent=True`` they take H(t, q, p) (V(t, q)) on the extended phase space
(Marsden and West, Acta Numerica 10 (2001), §4.2; Hairer, Lubich, Wanner VI.10): the
time t joins q as its last coordinate and its conjugate e joins p, and the autonomous
K(q, t, p, e) = H(t, q, p) + e generates q̇ = ∂H/∂p, ṗ = −∂H/∂q, ṫ = 1,
ė = −∂H/∂t.  K is a first integral (``H`` of the system: H(t) + e stays H(t0, x0)), so
e = −∫∂H/∂t dt is the energy the time dependence put in, with the sign of a momentum;
every map of ours advances the extended system as it is (symplectic maps stay
symplectic in (q, t, p, e), and K = T(p) + e + V(t, q) stays separable: Störmer–Verlet
and the compositions stay explicit, each drift advancing t by its share of h).

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
from mechint._validate import count, output_shape, real_array, real_output, traced
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

# ``section_states``: a drawn state's |H − E| at most this relative to |T| + |V| (the
# bisection leaves ~1e-16; a bracket the doubling could not reach leaves far more)
_SECTION_TOL = 1e-10


def _scalar_function(name: str, fn, nargs: int, dof: int, params=None, time: bool = False) -> None:
    """Check, by tracing once, that ``fn`` maps ``nargs`` arrays of shape (dof,) (after a
    scalar time where ``time``; and ``params`` when given) to a scalar."""
    if not callable(fn):
        raise InputError(name, f"must be a function, got {type(fn).__name__}")
    probe = [jax.ShapeDtypeStruct((dof,), jnp.float64)] * nargs
    if time:
        probe.insert(0, jax.ShapeDtypeStruct((), jnp.float64))
    out = output_shape(
        name,
        fn,
        probe,
        params,
        f"{'at a time and ' if time else ''}on arrays of shape ({dof},)",
        "write it with jax.numpy so it can be traced, and check dof"
        + (f" and the signature {name}(t, ...)" if time else ""),
    )
    if getattr(out, "shape", None) != ():
        raise InputError(
            name,
            f"must return a scalar, returned shape {getattr(out, 'shape', type(out).__name__)}",
            "sum over components, e.g. 0.5 * jnp.sum(p**2)",
        )
    real_output(name, out)


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
    # True: H(t, q, p) on the extended phase space (the module docstring): the last
    # coordinate of q is the time t, the last of p its conjugate e, and ``dof`` counts them
    time_dependent: bool = False

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
            if not self.time_dependent:
                return validate_vector_state(label, value, self.dof)
            arr = real_array(label, value)
            if arr.ndim in (1, 2) and arr.shape[-1] == self.dof - 1:  # t = e = 0 appended
                arr = np.concatenate([arr, np.zeros((*arr.shape[:-1], 1))], axis=-1)
            try:
                return validate_vector_state(label, arr, self.dof)
            except InputError:
                raise InputError(
                    label,
                    f"expected {self.dof - 1} numbers, or {self.dof} with the time (q) or its "
                    f"conjugate e (p) last (or a batch of rows), got shape {arr.shape}",
                ) from None

        return state_pair(name, x, ("q", vector), ("p", vector))

    def starting_state(self, x, t0):
        """A time-dependent system's state with its time, q's last coordinate, set to
        the run's ``t0`` where it is still 0 (a state of the user's dof is extended with
        t = e = 0 when validated; a state that carries its own time keeps it)."""
        if not self.time_dependent:
            return x
        q, p = x
        t = q[..., -1:]
        if traced((q, t0)):
            return jnp.concatenate([q[..., :-1], jnp.where(t == 0, t0, t)], axis=-1), p
        t = np.where(t == 0, np.asarray(t0, dtype=np.float64), t)
        return np.concatenate([np.asarray(q)[..., :-1], t], axis=-1), p

    def example_state(self):
        d = self.dof
        q, p = 0.3 * np.cos(np.arange(1, d + 1)), 0.2 * np.sin(np.arange(2, d + 2))
        if self.time_dependent:  # t = e = 0
            q[-1] = p[-1] = 0.0
        return q, p

    def state_from_options(self, given: dict, frame=None):
        fix = "give one number" if self.dof == 1 else f"give {self.dof} comma-separated numbers"
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
        with V + T > E already are rejected, and each state is verified at the energy to
        ``_SECTION_TOL`` relative to |T| + |V|.  ``InputError`` (parameter "energy") when
        50 rounds of draws do not find ``count``."""
        if not np.isfinite(box) or not 0 < box <= 1e300:
            raise InputError("box", f"must be in (0, 1e300], got {box:g}",
                             "the coordinates are drawn in [-box, box]")  # fmt: skip
        rng = np.random.default_rng(seed)
        parts = jax.jit(jax.vmap(lambda q, p: (self.kinetic(p), self.potential(q))))

        def total(q, p):
            T, V = (np.asarray(a) for a in parts(q, p))
            return T + V, np.abs(T) + np.abs(V)

        found_q: list = []
        found_p: list = []
        drawn = 0
        for _ in range(50):
            q = rng.uniform(-box, box, (4 * count, self.dof))
            p = rng.uniform(-box, box, (4 * count, self.dof))
            q[:, index], p[:, index] = value, 0.0
            drawn += len(q)
            below = total(q, p)[0] < energy
            q, p = q[below], p[below]
            # |p_index| bracketed by doubling (lo below the energy, hi above), then bisected
            lo, hi = np.zeros(len(q)), np.ones(len(q))
            for _ in range(1100):
                p[:, index] = hi
                low = total(q, p)[0] < energy
                if not low.any():
                    break
                lo, hi = np.where(low, hi, lo), np.where(low, 2 * hi, hi)
            for _ in range(80):
                p[:, index] = mid = 0.5 * (lo + hi)
                under = total(q, p)[0] < energy
                lo, hi = np.where(under, mid, lo), np.where(under, hi, mid)
            p[:, index] = np.copysign(0.5 * (lo + hi), sign)
            # each state verified at the energy (relative to the size of its terms)
            H, size = total(q, p)
            kept = np.abs(H - energy) <= _SECTION_TOL * np.maximum(size, abs(energy))
            found_q.extend(q[kept])
            found_p.extend(p[kept])
            if len(found_q) >= count:
                return np.array(found_q[:count]), np.array(found_p[:count])
        raise InputError("energy", f"found {len(found_q)} of {count} states at E = {energy:g} "
                         f"with the other coordinates in [-{box:g}, {box:g}] ({drawn} drawn)",
                         "another box (the states are drawn where V + T < E: a box that "
                         "holds that region), or another energy")  # fmt: skip


@final
@register_pytree(data=("params",), meta=("H", "dof", "energy_degree", "time_dependent"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class Hamiltonian(Canonical):
    """A canonical system with any Hamiltonian ``H(q, p)`` (jax-traceable, one sample,
    q and p of shape (dof,), returning a scalar).

    ``params``: a pytree of arrays passed as ``H(q, p, params)``: the parameters are
    leaves of the system, so they may be traced (differentiated, vmapped) and a new value
    reuses the compiled run.  A function that closes over its parameters instead
    cannot be differentiated with respect to them through a run.  ``degree``: H is a
    polynomial of this degree (the average vector field then integrates exactly).

    ``time_dependent=True``: ``H(t, q, p)`` (``H(t, q, p, params)``) on the extended
    phase space (the module docstring): the state's q and p have dof + 1 entries, the
    time and its conjugate e last (a state of dof entries is extended with t = t0 and
    e = 0), and the invariant ``H`` is K = H(t, q, p) + e; ``degree`` then counts t too
    (a cos ωt term is no polynomial: leave it out).  A declared degree is checked along
    lines through the example state (``InputError`` where H is not such a polynomial)."""

    H: Callable
    dof: int
    params: object = None
    time_dependent: bool = False

    name: ClassVar[str] = "hamiltonian"

    def __init__(self, H, dof: int = 1, params=None, degree: int | None = None,
                 time_dependent: bool = False):  # fmt: skip
        object.__setattr__(self, "energy_degree", _degree(degree))
        dof = count("dof", dof)
        params = _parameters(params)
        time_dependent = bool(time_dependent)
        _scalar_function("H", H, 2, dof, params, time=time_dependent)
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "dof", dof + time_dependent)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "time_dependent", time_dependent)
        _check_degree(self)

    def __repr__(self) -> str:
        name = getattr(self.H, "__name__", self.H)
        if self.time_dependent:
            return f"Hamiltonian(H={name!s}, dof={self.dof - 1}, time_dependent=True)"
        return f"Hamiltonian(H={name!s}, dof={self.dof})"

    def energy(self, q, p):
        args = (q[-1], q[:-1], p[:-1]) if self.time_dependent else (q, p)
        if self.params is not None:
            args = (*args, self.params)
        return self.H(*args) + p[-1] if self.time_dependent else self.H(*args)

    def parameters(self) -> dict:
        out = {"H": getattr(self.H, "__name__", repr(self.H)), "dof": self.dof}
        if self.time_dependent:
            out.update(dof=self.dof - 1, time_dependent=True)
        return out


@final
@register_pytree(data=("params",), meta=("T", "V", "dof", "energy_degree", "time_dependent"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class SeparableHamiltonian(Separable):
    """H(q, p) = T(p) + V(q) from user functions ``T(p)`` and ``V(q)`` (jax-traceable,
    one sample of shape (dof,), returning a scalar); with ``params`` (a pytree of arrays,
    traceable like ``Hamiltonian``'s) they are called as ``T(p, params)``, ``V(q, params)``.
    ``degree``: H is a polynomial of this degree, as for ``Hamiltonian``.

    ``time_dependent=True``: ``V(t, q)`` (``V(t, q, params)``) on the extended phase
    space, as ``Hamiltonian``'s: K = (T(p) + e) + V(t, q) is still separable, so its
    drifts advance t and its kicks e = −∫∂V/∂t dt, explicitly."""

    T: Callable
    V: Callable
    dof: int
    params: object = None
    time_dependent: bool = False

    name: ClassVar[str] = "separable-hamiltonian"

    def __init__(self, T, V, dof: int = 1, params=None, degree: int | None = None,
                 time_dependent: bool = False):  # fmt: skip
        object.__setattr__(self, "energy_degree", _degree(degree))
        dof = count("dof", dof)
        params = _parameters(params)
        time_dependent = bool(time_dependent)
        _scalar_function("T", T, 1, dof, params)
        _scalar_function("V", V, 1, dof, params, time=time_dependent)
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "V", V)
        object.__setattr__(self, "dof", dof + time_dependent)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "time_dependent", time_dependent)
        _check_degree(self)

    def __repr__(self) -> str:
        names = [getattr(f, "__name__", repr(f)) for f in (self.T, self.V)]
        if self.time_dependent:
            return (f"SeparableHamiltonian(T={names[0]}, V={names[1]}, dof={self.dof - 1}, "
                    "time_dependent=True)")  # fmt: skip
        return f"SeparableHamiltonian(T={names[0]}, V={names[1]}, dof={self.dof})"

    def kinetic(self, p):
        if self.time_dependent:
            T = self.T(p[:-1]) if self.params is None else self.T(p[:-1], self.params)
            return T + p[-1]
        return self.T(p) if self.params is None else self.T(p, self.params)

    def potential(self, q):
        args = (q[-1], q[:-1]) if self.time_dependent else (q,)
        return self.V(*args) if self.params is None else self.V(*args, self.params)

    def parameters(self) -> dict:
        out = {
            "T": getattr(self.T, "__name__", repr(self.T)),
            "V": getattr(self.V, "__name__", repr(self.V)),
            "dof": self.dof,
        }
        if self.time_dependent:
            out.update(dof=self.dof - 1, time_dependent=True)
        return out


def _degree(degree) -> int | None:
    """A declared polynomial degree of H (None: not declared)."""
    return None if degree is None else count("degree", degree)


def _check_degree(system: Canonical) -> None:
    """A declared ``energy_degree`` holds along three seeded lines through the example
    state: the (d+1)-th differences of H at d + 2 equally spaced points (unit spacing)
    vanish to round-off, else ``InputError`` naming ``degree`` (the average vector field
    trusts it: its quadrature would be silently inexact).  Skipped for traced
    parameters."""
    d = system.energy_degree
    if d is None or traced(getattr(system, "params", None)):
        return
    rng = np.random.default_rng(5)
    q0, p0 = (np.asarray(a, dtype=np.float64) for a in system.example_state())
    n = system.dof
    s = np.arange(d + 2, dtype=np.float64)
    v = rng.standard_normal((3, 2 * n))
    z = np.concatenate([q0, p0])[None, None, :] + s[None, :, None] * v[:, None, :]
    H = np.asarray(jax.vmap(jax.vmap(lambda z: system.energy(z[:n], z[n:])))(jnp.asarray(z)))
    diff = np.diff(H, n=d + 1, axis=1)
    scale = np.max(np.abs(H)) * 2.0 ** (d + 1)
    if not np.all(np.abs(diff) <= 1e-9 * scale):
        what = "H(t, q, p) in (t, q, p)" if system.time_dependent else "H"
        raise InputError(
            "degree",
            f"{what} is not a polynomial of degree {d}: its differences of order {d + 1} along a "
            f"line are {float(np.max(np.abs(diff))):.3g} against values of "
            f"{float(np.max(np.abs(H))):.3g}",
            "leave degree out (the average vector field then checks its quadrature), or "
            "give the true degree" + (", counting t" if system.time_dependent else ""),
        )


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
