r"""Quadratic vector fields ẋ = Q(x, x) + Bx + c, the domain of Kahan's method (docs/math.md §2).

Q is stored polarized: a 3-index array with Q[i, j, k] = Q[i, k, j], so that
Q(x, y)_i = Σ_jk Q_ijk x_j y_k is the symmetric bilinear form with Q(x, x) the field's
quadratic part.  ``quadratic_form()`` returns (Q, B, c): what ``Kahan`` needs.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint._validate import count, positive_vector, real_array, shown
from mechint.errors import InputError
from mechint.systems.base import (
    Parameter,
    PoissonSystem,
    QuadraticVectorField,
    StateOption,
    validate_vector_state,
)


def polarize(Q):
    """The symmetric part Q_ijk ← (Q_ijk + Q_ikj)/2 (same quadratic form Q(x, x))."""
    return 0.5 * (Q + jnp.swapaxes(Q, 1, 2))


def _tensor_from_function(fn, n: int) -> np.ndarray:
    """Q_ijk = ½ ∂²q_i/∂x_j∂x_k for a homogeneous quadratic function q, checked to be one."""
    try:
        H = np.asarray(jax.hessian(fn)(jnp.zeros(n)))
    except Exception as exc:
        raise InputError(
            "Q",
            f"could not differentiate the function on a vector of {n} numbers: "
            f"{type(exc).__name__}: {exc}",
            "write Q(x) with jax.numpy, returning an array of the state's length",
        ) from None
    if H.shape != (n, n, n):
        raise InputError("Q", f"must map R^{n} to R^{n}, its Hessian has shape {H.shape}")
    Q = 0.5 * H
    rng = np.random.default_rng(0)
    for x in rng.standard_normal((3, n)):
        want = np.asarray(fn(jnp.asarray(x)))
        got = np.einsum("ijk,j,k->i", Q, x, x)
        if not np.allclose(got, want, rtol=1e-10, atol=1e-12 * (1 + np.abs(want).max())):
            raise InputError(
                "Q",
                "is not a homogeneous quadratic function (Q(x) ≠ Q(x, x) at a test point)",
                "put linear terms in B and constant terms in c",
            )
    return Q


# a coefficients file larger than this is refused before it is read (n = 200: 64 MB of
# float64 for Q alone in .npz)
_COEFFICIENT_BYTES = 256 << 20


def read_coefficients(path) -> dict:
    """The coefficients Q (n, n, n), B (n, n) and c (n,) of a quadratic field from a file:
    a ``.json`` object ``{"Q": [[[...]]], "B": [[...]], "c": [...]}`` or an ``.npz`` of
    arrays named Q, B and c (B and c may be left out: zero).  The keyword arguments of
    ``QuadraticField``; ``InputError`` naming ``coefficients`` for anything else (another
    format, an unknown name, a file over 256 MB), before the numbers are read."""
    import json
    from pathlib import Path

    where = Path(path)
    if not where.is_file():
        raise InputError("coefficients", f"no such file: {str(path)[:200]}",
                         "give a .json or .npz file with Q (and B, c)")  # fmt: skip
    if where.suffix.lower() not in (".json", ".npz"):
        fix = 'write {"Q": ..., "B": ..., "c": ...} as JSON, or numpy.savez'
        raise InputError("coefficients", f"{where.name} is not .json or .npz", fix)
    if where.stat().st_size > _COEFFICIENT_BYTES:
        raise InputError("coefficients", f"{where.name} is larger than "
                         f"{_COEFFICIENT_BYTES >> 20} MB")  # fmt: skip
    if where.suffix.lower() == ".json":
        try:
            data = json.loads(where.read_text())
        except (UnicodeDecodeError, ValueError) as exc:
            raise InputError(
                "coefficients", f"{where.name} is not JSON: {str(exc)[:120]}"
            ) from None
        if not isinstance(data, dict):
            raise InputError("coefficients", f"{where.name} holds no object with Q, B, c")
    else:
        try:
            with np.load(where, allow_pickle=False) as npz:
                data = {k: npz[k] for k in npz.files if k in ("Q", "B", "c")}
                extra = sorted(set(npz.files) - {"Q", "B", "c"})
        except (OSError, ValueError) as exc:
            raise InputError("coefficients", f"{where.name} is not an .npz of arrays: "
                             f"{str(exc)[:120]}") from None  # fmt: skip
        if extra:
            data[extra[0]] = None
    unknown = sorted(set(data) - {"Q", "B", "c"})
    if unknown:
        raise InputError("coefficients", f"{where.name}: unknown name {unknown[0]!r}",
                         "the names are Q, B and c")  # fmt: skip
    if "Q" not in data:
        raise InputError("coefficients", f"{where.name} has no Q", "Q of shape (n, n, n)")
    return {k: real_array(k, data[k]) for k in ("Q", "B", "c") if k in data}


@final
@register_pytree(data=("Q", "B", "c"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class QuadraticField(QuadraticVectorField):
    r"""ẋ = Q(x, x) + Bx + c in R^n.

    ``Q`` is a 3-index array (n, n, n) with Q(x, x)_i = Σ_jk Q_ijk x_j x_k (any
    asymmetry in j, k is removed by polarization), or a jax-traceable function
    x ↦ Q(x, x) (then give ``dim`` unless B or c fixes n).  ``B`` (n, n) and ``c`` (n,)
    default to zero.  A general quadratic field has no known invariants.
    """

    descriptions: ClassVar[dict[str, str]] = {"x": "state"}

    Q: Float[Array, "n n n"]
    B: Float[Array, "n n"]
    c: Float[Array, " n"]

    name: ClassVar[str] = "quadratic-field"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("coefficients", "a .json file {\"Q\": n×n×n, \"B\": n×n, \"c\": n} or an .npz "
                  "of arrays Q, B, c (quadratic-field; B, c default to zero)",
                  read_coefficients, required=True, example="field.json", text=True),
    )  # fmt: skip
    state_options: ClassVar[tuple[StateOption, ...]] = (StateOption("x0", "initial state x"),)
    state_fields = (("x", ("component",)),)

    def __init__(self, Q, B=None, c=None, *, dim: int | None = None):
        n = None if dim is None else count("dim", dim)
        if B is not None:
            B = real_array("B", B)
            n = B.shape[0] if n is None else n
            if B.shape != (n, n):
                raise InputError("B", f"expected an {n}x{n} matrix, got shape {B.shape}")
        if c is not None:
            c = real_array("c", c)
            n = c.shape[0] if n is None and c.ndim == 1 else n
            if c.shape != (n,):
                raise InputError("c", f"expected {n} numbers, got shape {c.shape}")
        if callable(Q):
            if n is None:
                raise InputError("dim", "is needed when Q is a function and B, c are not given")
            Q = _tensor_from_function(Q, n)
        else:
            Q = real_array("Q", Q)
            n = Q.shape[0] if n is None and Q.ndim == 3 else n
            if Q.ndim != 3 or Q.shape != (n, n, n):
                raise InputError(
                    "Q", f"expected a 3-index array of shape ({n}, {n}, {n}), got {Q.shape}"
                )
        assert n is not None  # fixed by Q, B, c or dim above
        object.__setattr__(self, "Q", polarize(jnp.asarray(Q)))
        object.__setattr__(self, "B", jnp.asarray(np.zeros((n, n)) if B is None else B))
        object.__setattr__(self, "c", jnp.asarray(np.zeros(n) if c is None else c))

    def __repr__(self) -> str:
        return f"QuadraticField(n={self.dim})"

    @classmethod
    def example(cls) -> QuadraticField:
        """A field to try things on: the Euler top's, m × I⁻¹m with I = (2, 1, 2/3), with
        a linear part B = 0.1·1 that makes it no top (no invariant, no structure)."""
        inverse = jnp.array([0.5, 1.0, 1.5])
        return cls(lambda m: jnp.cross(m, m * inverse), B=0.1 * np.eye(3))

    @property
    def dim(self) -> int:
        return int(self.Q.shape[0])

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (self.dim,)

    def quadratic_form(self):
        """(Q polarized, B, c)."""
        return self.Q, self.B, self.c

    def vector_field(self, x: Float[Array, "... n"]) -> Float[Array, "... n"]:
        return field(self.Q, self.B, self.c, x)

    def invariants(self, x) -> dict:
        return {}

    def example_state(self) -> np.ndarray:
        return 0.3 * np.cos(np.arange(1, self.dim + 1))

    def parameters(self) -> dict:
        return {
            "Q": np.asarray(self.Q).tolist(),
            "B": np.asarray(self.B).tolist(),
            "c": np.asarray(self.c).tolist(),
        }

    def validate_state(self, x, name: str = "x0") -> tuple[np.ndarray, bool]:
        return validate_vector_state(name, x, self.dim)


def field(Q, B, c, x):
    """Q(x, x) + Bx + c on one state or a batch."""
    return jnp.einsum("ijk,...j,...k->...i", Q, x, x) + jnp.einsum("ij,...j->...i", B, x) + c


def _abcd(values: np.ndarray) -> dict:
    if values.shape != (4,):
        raise InputError("abcd", f"expected 4 numbers a,b,c,d, got shape {values.shape}")
    return dict(zip("abcd", values.tolist(), strict=True))


@final
@register_pytree(data=("a", "b", "c", "d"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class LotkaVolterra(PoissonSystem, QuadraticVectorField):
    r"""Lotka-Volterra predator-prey, ẋ = x(a − b y), ẏ = y(c x − d), with a, b, c, d > 0.

    A quadratic field (Q(x, x) = (−b x y, c x y), B = diag(a, −d)).  Invariant
    V = c x − d ln x + b y − a ln y, and (x, y)' = Π∇V with Π = [[0, −xy], [xy, 0]];
    orbits are closed curves around (d/c, a/b) in the positive quadrant.
    """

    descriptions: ClassVar[dict[str, str]] = {
        "x": "populations (x, y)",
        "V": "first integral V = c x − d ln x + b y − a ln y",
    }

    a: Float[Array, ""]
    b: Float[Array, ""]
    c: Float[Array, ""]
    d: Float[Array, ""]

    name: ClassVar[str] = "lotka-volterra"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("abcd", "a,b,c,d > 0 of lotka-volterra (default 1,1,1,1)", _abcd),
    )
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("x0", "initial populations (x, y) > 0"),
    )
    state_fields = (("x", ("species",)),)

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (2,)

    energy_name: ClassVar[str] = "V"

    def __init__(self, a=1.0, b=1.0, c=1.0, d=1.0):
        for k, v in zip("abcd", positive_vector("a, b, c, d", (a, b, c, d), 4), strict=True):
            object.__setattr__(self, k, jnp.asarray(v))

    def __repr__(self) -> str:
        args = ", ".join(
            f"{k}={shown(getattr(self, k), lambda v: f'{float(v):g}')}" for k in "abcd"
        )
        return f"LotkaVolterra({args})"

    def quadratic_form(self):
        z = jnp.zeros((), dtype=self.a.dtype)
        Q = jnp.stack(
            [
                jnp.stack([jnp.stack([z, -self.b / 2]), jnp.stack([-self.b / 2, z])]),
                jnp.stack([jnp.stack([z, self.c / 2]), jnp.stack([self.c / 2, z])]),
            ]
        )
        B = jnp.stack([jnp.stack([self.a, z]), jnp.stack([z, -self.d])])
        return Q, B, jnp.zeros(2, dtype=self.a.dtype)

    def vector_field(self, x):
        u, v = x[..., 0], x[..., 1]
        return jnp.stack([u * (self.a - self.b * v), v * (self.c * u - self.d)], axis=-1)

    def hamiltonian(self, x):
        u, v = x[..., 0], x[..., 1]
        return self.c * u - self.d * jnp.log(u) + self.b * v - self.a * jnp.log(v)

    def invariants(self, x) -> dict:
        return {"V": self.hamiltonian(x)}

    def poisson_tensor(self, x):
        w = x[..., 0] * x[..., 1]
        z = jnp.zeros_like(w)
        return jnp.stack([jnp.stack([z, -w], -1), jnp.stack([w, z], -1)], -2)

    def coordinates(self, x):
        return x

    def from_coordinates(self, z):
        return z

    def equilibrium(self) -> np.ndarray:
        return np.array([float(self.d / self.c), float(self.a / self.b)])

    def example_state(self) -> np.ndarray:
        return self.equilibrium() * np.array([2.0, 0.5])

    def kahan_poisson(self) -> bool:
        """Kahan's map of Lotka-Volterra is Poisson for Π = [[0, −xy], [xy, 0]]
        (Sanz-Serna 1994, "An unconventional symplectic integrator of W. Kahan"); measured
        4e-16 at h = 0.1 and 0.5."""
        return True

    def parameters(self) -> dict:
        return {k: float(getattr(self, k)) for k in "abcd"}

    def validate_state(self, x, name: str = "x0") -> tuple[np.ndarray, bool]:
        arr, batched = validate_vector_state(name, x, 2)
        if np.any(arr <= 0):
            raise InputError(name, "populations must be > 0 (the invariant has ln x, ln y)")
        return arr, batched
