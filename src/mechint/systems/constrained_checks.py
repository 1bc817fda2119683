"""The checks a constrained system (``systems.Constrained``) is built and started under:
the constraints' count and shape, T quadratic, G of full rank at a generic q and on the
manifold (and at a start, ``rank_at``), the declared momentum maps conserved.  Each
raises ``InputError`` naming what the user gave."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from mechint._validate import output_shape
from mechint.errors import InputError

if TYPE_CHECKING:
    from mechint.systems.constrained import Constrained

# the declared momentum maps: dJ/dt along the field, relative to |∇J| |f|
_MOMENTUM_RTOL = 1e-10


def constraint_count(g, dof: int, params) -> int:
    out = output_shape("constraints", g, [jax.ShapeDtypeStruct((dof,), jnp.float64)], params,
                       f"on q of shape ({dof},)",
                       "write g(q) with jax.numpy, returning an array of shape (m,)")  # fmt: skip
    shape = getattr(out, "shape", None)
    if shape is None or len(shape) > 1:
        raise InputError("constraints", f"must return shape (m,), returned {shape}",
                         "return jnp.stack([g_1, ..., g_m])")  # fmt: skip
    m = 1 if shape == () else int(shape[0])
    if not 1 <= m < dof:
        raise InputError("constraints", f"gives m = {m} constraints on {dof} coordinates",
                         f"give between 1 and {dof - 1} constraints")  # fmt: skip
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise InputError("constraints", f"must return real numbers, returned {out.dtype}")
    return m


def momentum_table(momenta) -> tuple[tuple[str, Callable], ...]:
    if momenta is None:
        return ()
    if not isinstance(momenta, dict) or not all(
        isinstance(k, str) and callable(v) for k, v in momenta.items()
    ):
        raise InputError("momenta", "must be a dict of name -> J(q, p)",
                         "e.g. {'Lz': lambda q, p: q[0] * p[1] - q[1] * p[0]}")  # fmt: skip
    clash = {"H", "constraints", "constraint_rates"} & set(momenta)
    if clash:
        raise InputError("momenta", f"names {sorted(clash)} are taken", "rename them")
    return tuple(momenta.items())


@jax.jit
def _kinetic_lines(system, p):
    """T at the momenta ``p`` (lines × points × d), compiled once per system structure."""
    return jax.vmap(jax.vmap(system.kinetic))(p)


def check_kinetic(system: Constrained) -> None:
    """T is quadratic: its third differences along three seeded lines vanish."""
    rng = np.random.default_rng(7)
    d = system.dof
    s = np.arange(4.0)
    v = rng.standard_normal((3, d))
    p0 = rng.standard_normal(d)
    values = np.asarray(
        _kinetic_lines(system.system, jnp.asarray(p0 + s[None, :, None] * v[:, None, :]))
    )
    third = np.diff(values, n=3, axis=1)
    if not np.all(np.isfinite(values)) or np.max(np.abs(third)) > 1e-9 * np.max(np.abs(values)):
        raise InputError(
            "system",
            "its kinetic energy T(p) is not quadratic (RATTLE and SHAKE need T = ½ pᵀM⁻¹p)",
            "write T as ½ pᵀM⁻¹p with a constant M",
        )


# A start's G counts as rank-deficient where its smallest singular value, rows taken at
# unit length, is below this: taken from Ĝ Ĝᵀ, whose eigenvalues are exact to about m
# ulps, where 1e-6 is 10⁻¹²
_RANK_RTOL = 1e-6


@jax.jit
def _jacobian(system: Constrained, q):
    return system.constraints(q), system.constraint_jacobian(q)


def check_rank(system: Constrained) -> None:
    """g is finite and G has rank m at the base system's example state (its generic
    rank), and again on the manifold, at the example state moved there: there the rank
    is counted against the size G has at the generic q (a relative rank would count a G
    shrunk to rounding, as 4(|q|² − 1)q of a squared constraint on the sphere, as full)."""
    g, generic = (np.asarray(a) for a in _jacobian(system, jnp.asarray(
        system.generic_position(), dtype=jnp.float64)))  # fmt: skip
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(generic))):
        raise InputError(
            "constraints",
            "returned a value or derivative that is not finite at a generic q",
            "check g for divisions by zero and square roots of 0",
        )
    rank = int(np.linalg.matrix_rank(generic))
    if rank < system.m:
        raise InputError(
            "constraints",
            f"are redundant: G = dg/dq has rank {rank} < m = {system.m} at a generic q",
            f"keep {rank} independent constraints",
        )
    try:
        q, _ = system.example_state()
    except InputError as exc:
        raise InputError(
            "constraints",
            f"a generic state could not be moved onto g(q) = 0 ({exc.problem})",
            "check that G = dg/dq has full rank on the manifold (a squared constraint has not)",
        ) from None
    G = np.asarray(_jacobian(system, jnp.asarray(q))[1])
    rank = int(np.linalg.matrix_rank(G, tol=1e-8 * np.linalg.norm(generic, 2)))
    if rank < system.m:
        raise InputError(
            "constraints",
            f"G = dg/dq has rank {rank} < m = {system.m} on the manifold g(q) = 0",
            "write each constraint so that its gradient does not vanish where it holds",
        )


def rank_at(system: Constrained, sigma, name: str) -> None:
    """InputError naming ``name`` where G = dg/dq of a start has rank < m: a singular
    point of the constraints (two rods aligned in a closed loop, the vertex of a cone),
    where the multipliers are not determined and the first step would fail.  ``sigma``:
    the squared singular values of G with its rows at unit length (``_scales``); a rank
    is lost where one is below ``_RANK_RTOL``² (gradients within an angle of about
    ``_RANK_RTOL`` of dependence)."""
    if sigma.min() <= _RANK_RTOL**2:
        rank = int(np.sum(sigma > _RANK_RTOL**2))
        raise InputError(
            name,
            f"is at a singular point of the constraints: G = dg/dq has rank {rank} < m = "
            f"{system.m} there",
            "start away from it: the constraint forces are not determined where G loses rank",
        )


def check_momenta(system: Constrained) -> None:
    """Each declared J is pᵀ(A q + b) (linear in p, affine in q) and is conserved along
    the field at two states of T*Q (one compiled check for them all)."""
    if not system.momenta:
        return
    rng = np.random.default_rng(3)
    x1 = system.example_state()
    q, p = x1
    shift = 0.01 * max(float(np.max(np.abs(q))), 1e-300)  # a nearby state of the manifold
    x2 = system.project((q + shift * rng.standard_normal(q.shape), rng.standard_normal(p.shape)))
    try:
        forms, rates, sizes = (
            np.asarray(a)
            for a in _momentum_checks(system, *(tuple(map(jnp.asarray, x)) for x in (x1, x2)))
        )
    except Exception as exc:  # any failure to trace is the user's function's fault
        raise InputError(
            "momenta",
            f"could not be evaluated: {type(exc).__name__}: {exc}",
            "write each J(q, p) with jax.numpy, returning a scalar",
        ) from None
    for k, (name, _) in enumerate(system.momenta):
        if np.max(np.abs(forms[k, :2])) > 1e-9 * max(forms[k, 2], 1e-300):
            raise InputError(
                "momenta",
                f"{name} is not a momentum map of a linear symmetry, pᵀ(A q + b)",
                "declare only momenta linear in p and affine in q",
            )
        for rate, size in zip(rates[k], sizes[k], strict=True):
            if not abs(rate) <= _MOMENTUM_RTOL * size + 1e-300:
                raise InputError(
                    "momenta",
                    f"{name} is not conserved: dJ/dt = {rate:.3g} at a state on the manifold "
                    f"(terms of size {size:.3g})",
                    "declare only momentum maps of symmetries of both V and the constraints",
                )


@jax.jit
def _momentum_checks(system: Constrained, x1, x2):
    """For each declared J: (J(q, 2p) − 2J(q, p), its second difference along q, the size
    of J) at x1 (the first two vanish for pᵀ(A q + b)), and dJ/dt along the field with
    the size of its terms at x1 and x2."""
    (q, p), p2 = x1, x2[1]
    v = jnp.sin(jnp.arange(1.0, q.shape[0] + 1.0))
    fields = [system.vector_field(x) for x in (x1, x2)]
    forms, rates, sizes = [], [], []
    for _, J in system.momenta:
        linear = J(q, 2.0 * p) - 2.0 * J(q, p)
        affine = J(q + v, p2) - 2.0 * J(q, p2) + J(q - v, p2)
        size = jnp.abs(J(q, p)) + jnp.abs(J(q + v, p2)) + jnp.abs(J(q, p2))
        forms.append(jnp.stack([linear, affine, size]))
        rate, scale = [], []
        for x, f in zip((x1, x2), fields, strict=True):
            gq, gp = jax.grad(J, argnums=(0, 1))(*x)
            rate.append(jnp.vdot(gq, f[0]) + jnp.vdot(gp, f[1]))
            scale.append(
                jnp.vdot(jnp.abs(gq), jnp.abs(f[0])) + jnp.vdot(jnp.abs(gp), jnp.abs(f[1]))
            )
        rates.append(jnp.stack(rate))
        sizes.append(jnp.stack(scale))
    return jnp.stack(forms), jnp.stack(rates), jnp.stack(sizes)
