r"""Forces that do work: a conservative system with a force, a dissipation and a clock.

McLachlan, Quispel and Robidoux, "Geometric integration using discrete gradients", Phil.
Trans. R. Soc. A 357 (1999) 1021, §2: a Poisson system ż = Π(z)∇H(z) (canonical:
Π = 𝕁) with a dissipation R(z) (symmetric, positive semi-definite) and a force F(t, z)
that may depend on time,

    ż = (Π(z) − R(z)) ∇H(z) + F(t, z),

changes its energy by the work of F less the dissipation:

    dH/dt = ∇H·F − ∇Hᵀ R ∇H =: Ẇ − Ḋ,

and a momentum map J of a symmetry of H (for a canonical system J = p·ξ(q), a first
integral of ż = 𝕁∇H) by the impulse of the non-conservative part along the symmetry,
dJ/dt = ∇J·(F − R∇H) =: İ_J (the forced Noether theorem; Marsden and West, "Discrete
mechanics and variational integrators", Acta Numerica 10 (2001) 357, §3.2).

``Forced`` carries these integrals in its state: (x, t, work, dissipated, and one impulse
I_J per momentum map of the system), with ṫ = 1, so that

    H − work + dissipated   and   J − I_J

are first integrals of the extended system (``H_balance``, ``<J>_balance``).  A map that
keeps a balance exactly does so because its discrete work (impulse) is the change of H
(J) over its step: the energy-balance maps (the average vector field and the discrete
gradients, ``integrators.energy``) for ``H_balance`` on every system, the forced
variational maps (``integrators.forced``: the discrete Lagrange–d'Alembert versions of
Störmer–Verlet, symplectic Euler and the rigid bodies' Lie group variational map) for
``J_balance``, the midpoint rule for the
balances of quadratic H and J.  Any other map of the extended field (explicit
Runge–Kutta, Gauss) keeps them to its order.

Conventions: the time is the state's own ``t`` (it starts at the run's t0 and each step
adds its h), so partial steps, events, resumed runs and batches see the same clock as the
force; a canonical system's force acts on p (shape (dof,)) and its dissipation on ∂H/∂p
((dof, dof): ṗ = −∂H/∂q − R ∂H/∂p + f); any other Poisson system's are given in its
coordinates z ((d,) and (d, d): a body torque on m for the Euler top).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from mechint._pytree import register_pytree
from mechint._validate import real_array, real_output, traced
from mechint.errors import InputError
from mechint.systems.base import BodiesInPotential, PoissonSystem, System, kahan_clock
from mechint.systems.canonical import Canonical, _parameters
from mechint.systems.euler_top import EulerTop
from mechint.systems.time_transformed import TimeTransformed

# the entries the extended state carries after the system's own (then one impulse per
# momentum map)
_CLOCK = ("now", "work", "dissipated")


def dot(a, b):
    """a·b over the last axis, summed term by term in order: elementwise operations
    only, so that one state and a batch round alike (a batched ``@`` or ``sum`` is
    another kernel, which rounds differently)."""
    a, b = jnp.broadcast_arrays(a, b)
    total = a[..., 0] * b[..., 0]
    for i in range(1, a.shape[-1]):
        total = total + a[..., i] * b[..., i]
    return total


def matvec(A, b):
    """A b (one sample) as ``dot`` forms it."""
    return dot(A, b[..., None, :])


def field_mask(system, x, fields) -> np.ndarray:
    """Which coordinates z of a state shaped as ``x`` (one sample) belong to the state
    fields named in ``fields`` (a boolean mask, from the shapes alone: concrete also
    where ``x`` is traced)."""
    names = [name for name, _ in system.state_fields]
    leaves, treedef = jax.tree.flatten(x)
    marks = [np.full(np.shape(a), 1.0 if names[i] in fields else 0.0)
             for i, a in enumerate(leaves)]  # fmt: skip
    with jax.ensure_compile_time_eval():  # numbers, not staged, inside a caller's trace
        return np.asarray(system.coordinates(jax.tree.unflatten(treedef, marks))) != 0


def _momentum_leaves(system) -> tuple[int, ...]:
    """The positions of the momenta among a state's leaves, for the systems whose maps
    kick the momenta (canonical: p; ``RigidBodies``: p and Π); () for the others."""
    if isinstance(system, Canonical):
        return (1,)
    if isinstance(system, BodiesInPotential):
        names = [name for name, _ in system.state_fields]
        return tuple(i for i, name in enumerate(names) if name in ("p", "Pi"))
    return ()


def _name(fn) -> str:
    return "none" if fn is None else str(getattr(fn, "__name__", fn))


def depends_on(fn, args, argnum: int) -> bool:
    """Whether ``fn(*args)``'s value depends on ``args[argnum]``, read from its jaxpr
    (conservative: an operation fed by the argument is taken to depend on it whole)."""
    closed = jax.make_jaxpr(fn)(*args)
    counts = [len(jax.tree.leaves(a)) for a in args]
    start = sum(counts[:argnum])
    marked = {id(v) for v in closed.jaxpr.invars[start : start + counts[argnum]]}
    for eqn in closed.jaxpr.eqns:
        if any(id(v) in marked for v in eqn.invars):
            marked.update(id(v) for v in eqn.outvars)
    return any(id(v) in marked for v in closed.jaxpr.outvars)


@final
@register_pytree(
    data=("base", "params"),
    meta=(
        "force",
        "dissipation",
        "momenta",
        "state_fields",
        "momentum_dependent",
        "state_options",
    ),
)
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class Forced(System):
    """``system`` (a ``PoissonSystem``: canonical, a constant S, a Lie–Poisson body)
    with a ``force(t, x, params)`` and a ``dissipation(x, params)`` R ≥ 0 (either may
    be None), as the extended system of the module docstring.

    ``params``: a pytree of arrays passed to both functions (leaves of the system: traced,
    differentiated and vmapped like any parameter; without it the functions are called
    as ``force(t, x)`` and ``dissipation(x)``).  The state is (x, t, work, dissipated,
    I_J for each of the system's momentum maps J, the time's rounding): a state of
    ``system`` is extended with zeros when validated (the time then takes the run's t0);
    ``traj.x[0]`` is the system's state, ``traj.x[1]`` the time ("now": t0 + Σh to
    round-off, ``base.kahan_clock``).  Invariants: ``H_balance`` = H − work + dissipated
    and ``<J>_balance`` = J − I_J, constant along the solution.  A ``TimeTransformed``
    system is refused (its steps are in the fictive time)."""

    base: PoissonSystem
    force: Callable | None
    dissipation: Callable | None
    params: Any
    momenta: tuple[str, ...]
    momentum_dependent: bool

    name: ClassVar[str] = "forced"
    forced: ClassVar[bool] = True
    descriptions: ClassVar[dict[str, str]] = {
        "now": "time of the state (t0 plus the steps taken)",
        "now_rounding": "what 'now' misses of t0 + Σh (Kahan's compensation)",
        "work": "work done by the force, ∫ ∇H·F dt",
        "dissipated": "energy dissipated, ∫ ∇Hᵀ R ∇H dt",
        "H_balance": "H − work + dissipated: the energy balance, constant along the solution",
    }

    def __init__(self, system, force=None, dissipation=None, params=None):
        if not isinstance(system, PoissonSystem):
            raise InputError("system", f"{system!r} is not a Poisson system",
                             "forces act on a system with an energy and a Poisson "
                             "structure (canonical, PoissonHamiltonian, the tops)")  # fmt: skip
        if isinstance(system, TimeTransformed):
            raise InputError(
                "system",
                "is time-transformed: its steps are in the fictive time",
                "force the system itself, and for variable steps use ReversibleAdaptive",
            )
        if getattr(system, "time_dependent", False):
            raise InputError(
                "system",
                "is time-dependent: its time is a coordinate of the extended phase space",
                "give the time dependence as the force(t, x) of the autonomous system",
            )
        if getattr(system, "constrained", False):
            raise InputError(
                "system",
                "has constraints (joints or holonomic constraints): forces on a constrained "
                "system would need the constraint forces' share of their work",
                "add conservative forces to the potential",
            )
        if isinstance(system, Forced):
            raise InputError("system", "is already forced",
                             "give one force (a sum of forces) and one dissipation")  # fmt: skip
        if force is None and dissipation is None:
            raise InputError("force", "no force and no dissipation", "give at least one")
        for label, fn in (("force", force), ("dissipation", dissipation)):
            if fn is not None and not callable(fn):
                raise InputError(label, f"must be a function, got {type(fn).__name__}")
        object.__setattr__(self, "base", system)
        object.__setattr__(self, "force", force)
        object.__setattr__(self, "dissipation", dissipation)
        object.__setattr__(self, "params", _parameters(params))
        momenta = tuple(system.momentum_maps)
        object.__setattr__(self, "momenta", momenta)
        fields = (*system.state_fields, *((name, ()) for name in _CLOCK),
                  *((f"{J}_impulse", ()) for J in momenta), ("now_rounding", ()))  # fmt: skip
        object.__setattr__(self, "state_fields", fields)
        # the system's initial-state options (the command line's), extended
        object.__setattr__(self, "state_options", system.state_options)
        object.__setattr__(self, "momentum_dependent", True)
        object.__setattr__(self, "momentum_dependent", self._check_functions())

    def _check_functions(self) -> bool:
        """The force and dissipation traced once at the system's example state: their
        shapes, and whether the force depends on the momenta (p; Π of rigid bodies: an
        explicit half kick where it does not, and there is no dissipation)."""
        try:
            x = jax.tree.map(jnp.asarray, self.base.example_state())
        except jax.errors.JAXTypeError:  # a traced parameter (Kepler(mu) under jit)
            return True  # the shapes are checked when the run traces; the kick by Newton
        d = self.base.coordinates(x).shape[-1]
        canonical = isinstance(self.base, Canonical)
        n = self.base.dof if isinstance(self.base, Canonical) else d
        shapes = {"force": (n,), "dissipation": (n, n)}
        t = jnp.zeros(())
        depends = False
        for label, fn, args in (("force", self.force, (t, x)),
                                ("dissipation", self.dissipation, (x,))):  # fmt: skip
            if fn is None:
                continue
            full = (*args, self.params) if self.params is not None else args
            try:
                out = jax.eval_shape(fn, *full)
            except Exception as exc:  # any failure to trace is the user's function's fault
                signature = "force(t, x" if label == "force" else "dissipation(x"
                signature += ", params)" if self.params is not None else ")"
                raise InputError(
                    label,
                    f"could not be evaluated at a state of {self.base!r}: "
                    f"{type(exc).__name__}: {exc}",
                    f"write it as {signature} with jax.numpy, so it can be traced",
                ) from None
            real_output(label, out)
            if getattr(out, "shape", None) != shapes[label]:
                what = "on p" if canonical else "in the coordinates z"
                raise InputError(
                    label,
                    f"must return shape {shapes[label]} ({what}), got "
                    f"{getattr(out, 'shape', type(out).__name__)}",
                    "a canonical system's force acts on p, its dissipation on ∂H/∂p; "
                    "other systems' act on their coordinates",
                )
            momenta = _momentum_leaves(self.base)
            if label == "force" and isinstance(self.base, EulerTop):  # m is the momentum
                rest = full[len(args) :]
                depends = depends_on(lambda m, fn=fn, rest=rest: fn(t, m, *rest), (x,), 0)
            elif momenta and label == "force":
                rest = full[len(args) :]

                def of_momenta(m, fn=fn, x=x, rest=rest, momenta=momenta):
                    state = list(x)
                    for i, value in zip(momenta, m, strict=True):
                        state[i] = value
                    return fn(t, tuple(state), *rest)

                depends = depends_on(of_momenta, (tuple(x[i] for i in momenta),), 0)
        self._check_rotations(x)
        self._check_dissipation(x)
        # a dissipation acts on ∂H/∂p, which depends on p
        return depends or self.dissipation is not None

    def _check_dissipation(self, x) -> None:
        """R symmetric and positive semi-definite at the example state, else
        ``InputError`` (a negative R would pump energy in as 'dissipation')."""
        if self.dissipation is None or traced(self.params):
            return
        R = np.asarray(self._call(self.dissipation, x), dtype=np.float64)
        scale = float(np.max(np.abs(R))) or 1.0
        if (
            np.max(np.abs(R - R.T)) > 1e-12 * scale
            or np.min(np.linalg.eigvalsh(R)) < -1e-12 * scale
        ):
            raise InputError("dissipation", "is not symmetric positive semi-definite at the "
                             "example state", "R(x) ≥ 0: e.g. c·eye(n) with c ≥ 0")  # fmt: skip

    def _check_rotations(self, x) -> None:
        """A force or dissipation with entries on a rotation field's coordinates (R of
        ``RigidBodies``, which moves only as Ṙ = R hat(ω)) is refused, checked at the
        example state (``InputError``)."""
        rotations = self.base.rotation_fields()
        if not rotations or traced(self.params):
            return
        mask = field_mask(self.base, x, rotations)
        t = jnp.zeros(())
        F = np.asarray(self.generalized_force(t, x))
        R = np.asarray(self.damping(x))
        if np.any(F[mask] != 0) or np.any(R[mask] != 0) or np.any(R[:, mask] != 0):
            raise InputError(
                "force" if np.any(F[mask] != 0) else "dissipation",
                f"acts on the rotation matrices {rotations} of {self.base!r}",
                "forces act on momenta and torques on the angular momenta: give zeros in "
                "the rotation's coordinates",
            )

    def __repr__(self) -> str:
        return (f"Forced({self.base!r}, force={_name(self.force)}, "
                f"dissipation={_name(self.dissipation)})")  # fmt: skip

    # -- the state ------------------------------------------------------------------
    @property
    def state_shape(self) -> tuple[int, ...]:
        return ()

    def split(self, x):
        """(the system's state, the time, work, dissipated, (I_J, ...)); the time's
        rounding, the last entry, is the clock's own (``advance_clock``)."""
        return x[0], x[1], x[2], x[3], tuple(x[4:-1])

    def join(self, xb, t, work, dissipated, impulses=(), rounding=None):
        """The state of its parts (the time's rounding 0 unless given)."""
        return (xb, t, work, dissipated, *impulses,
                jnp.zeros_like(t) if rounding is None else rounding)  # fmt: skip

    def advance_clock(self, x, x_new, h):
        return kahan_clock(x, x_new, h, 1)

    def validate_state(self, x, name: str = "x0"):
        n = 5 + len(self.momenta)
        if isinstance(x, tuple | list) and len(x) == n:
            try:
                xb, batched = self.base.validate_state(x[0], f"{name}[0]")
            except InputError:
                pass
            else:
                lead = jax.tree.leaves(xb)[0].shape[:1] if batched else ()
                rest = []
                labels = [field for field, _ in self.state_fields[-(n - 1) :]]
                shapes = [np.shape(v) for v in x[1:]]
                if all(s == lead for s in shapes):  # else a batch of the system's states
                    for i, label in enumerate(labels):
                        rest.append(np.asarray(real_array(f"{name}[{1 + i}] ({label})", x[1 + i])))
                    return (xb, *rest), batched
        xb, batched = self.base.validate_state(x, name)
        lead = jax.tree.leaves(xb)[0].shape[:1] if batched else ()
        zero = np.zeros(lead)
        return (xb, *([zero] * (n - 1))), batched

    def starting_state(self, x, t0):
        """``x`` with its time set to the run's ``t0`` where it is still 0 (a state of
        the system extended by ``validate_state``; a state that carries its own time, as
        a resumed run's does, keeps it), and the force and dissipation checked finite
        there (``InputError`` naming them)."""
        t = x[1]
        if traced((t0, t)):
            return (x[0], jnp.where(t == 0, t0, t), *x[2:])
        t = np.where(t == 0, np.asarray(t0, dtype=np.float64), t)
        x = (x[0], t, *x[2:])
        if traced((x, self)):  # numbers unknown: a bad value fails the run as data
            return x
        lead = np.shape(t)
        state = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), x)
        for label, fn in (("force", self.force), ("dissipation", self.dissipation)):
            if fn is None:
                continue

            def value(x, fn=fn, label=label):
                args = (x[1], x[0]) if label == "force" else (x[0],)
                return self._call(fn, *args)

            out = jax.vmap(value)(state) if lead else value(state)
            if traced(out):  # staged into a caller's jit: the run reports it as data
                return x
            if not np.all(np.isfinite(np.asarray(out))):
                raise InputError(
                    label,
                    "is not finite at the initial state",
                    "check the function at x0 and t0 (a division by zero?)",
                )
        return x

    def rotation_fields(self) -> tuple[str, ...]:
        return self.base.rotation_fields()

    def state_from_fields(self, leaves: list):
        """(the system's state, the clock, the impulses, the clock's rounding) from one
        array per field, the system's first."""
        k = len(self.base.state_fields)
        return (self.base.state_from_fields(leaves[:k]), *leaves[k:])

    def example_state(self):
        return self.validate_state(self.base.example_state())[0]

    def state_from_options(self, given: dict, frame=None):
        return self.validate_state(self.base.state_from_options(given, frame))[0]

    def parameters(self) -> dict:
        return {"system": type(self.base).__name__, **self.base.parameters(),
                "force": _name(self.force), "dissipation": _name(self.dissipation)}  # fmt: skip

    # -- the rates ------------------------------------------------------------------
    def _call(self, fn, *args):
        return fn(*args) if self.params is None else fn(*args, self.params)

    def generalized_force(self, t, xb):
        """F(t, z) in the coordinates z (one sample): a canonical force on p embedded
        as (0, f)."""
        z = self.base.coordinates(xb)
        if self.force is None:
            return jnp.zeros_like(z)
        f = self._call(self.force, t, xb).astype(z.dtype)
        if isinstance(self.base, Canonical):
            return jnp.concatenate([jnp.zeros_like(f), f])
        return f

    def damping(self, xb):
        """R(z) in the coordinates z (one sample): a canonical R on ∂H/∂p embedded as
        the lower right block."""
        z = self.base.coordinates(xb)
        d = z.shape[-1]
        if self.dissipation is None:
            return jnp.zeros((d, d), z.dtype)
        R = self._call(self.dissipation, xb).astype(z.dtype)
        if isinstance(self.base, Canonical):
            n = self.base.dof
            return jnp.zeros((d, d), z.dtype).at[n:, n:].set(R)
        return R

    def coordinate_rate(self, t, z):
        """ż = (Π − R)∇H + F at time t (one sample, in the coordinates z)."""
        xb = self.base.from_coordinates(z)
        g = self.energy_gradient(z)
        Pi = self.base.poisson_tensor(xb).astype(z.dtype)
        return matvec(Pi - self.damping(xb), g) + self.generalized_force(t, xb)

    def energy_gradient(self, z):
        """∇H in the coordinates z (one sample)."""
        base = self.base
        return jax.grad(lambda z: base.hamiltonian(base.from_coordinates(z)))(z)

    def momentum_gradients(self, z):
        """∇J in the coordinates z for each carried momentum map J (one sample)."""
        base = self.base

        def J(z, name):
            return base.invariants(base.from_coordinates(z))[name]

        return tuple(jax.grad(J)(z, name) for name in self.momenta)

    def _per_sample(self, fn, x):
        """``fn`` (of one extended state) over the leading axes of ``x`` (the time's)."""
        lead = jnp.shape(x[1])
        if not lead:
            return fn(x)
        flat = jax.tree.map(lambda a: jnp.reshape(a, (-1, *jnp.shape(a)[len(lead) :])), x)
        out = jax.vmap(fn)(flat)
        return jax.tree.map(lambda a: jnp.reshape(a, (*lead, *jnp.shape(a)[1:])), out)

    def vector_field(self, x):
        def one(x):
            xb, t, _, _, _ = self.split(x)
            z = self.base.coordinates(xb)
            g = self.energy_gradient(z)
            F, R = self.generalized_force(t, xb), self.damping(xb)
            Rg = matvec(R, g)
            Pi = self.base.poisson_tensor(xb).astype(z.dtype)
            dz = matvec(Pi, g) - Rg + F
            impulses = tuple(dot(dJ, F - Rg) for dJ in self.momentum_gradients(z))
            rates = (jnp.ones_like(t), dot(g, F), dot(g, Rg), impulses)
            return self.join(self.base.from_coordinates(dz), *rates)

        return self._per_sample(one, x)

    # -- the balances ---------------------------------------------------------------
    def invariants(self, x) -> dict:
        xb, _, work, dissipated, impulses = self.split(x)
        values = self.base.invariants(xb)
        H = values[self.base.energy_name]
        out = {"H_balance": H - work + dissipated}
        for J, I in zip(self.momenta, impulses, strict=True):
            out[f"{J}_balance"] = values[J] - I
        return out

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        """The balances of a quadratic H and of the quadratic momentum maps: kept by the
        midpoint rule (their change over its step is the gradient at the midpoint times
        the increment, which is its discrete work and impulse)."""
        names = ("H_balance",) if self.base.energy_degree == 2 else ()
        quadratic = self.base.quadratic_invariants
        return names + tuple(f"{J}_balance" for J in self.momenta if J in quadratic)
