"""What the rigid bodies on so(n), so(n) ⋉ Symm(n) and e(n) share (docs/math.md §3).

J = diag(J_1..J_n) > 0 is held as the vector of its entries.  Ω is read from M by
M = JΩ + ΩJ, i.e. Ω_jk = M_jk / (J_j + J_k).  The Lax matrix is
L(λ) = P + λM + λ²J² (P = 0 for the free body, P = ppᵀ for the Clebsch case); its spectral
invariants are the coefficients of λ^{2j} in tr L(λ)^k (odd powers vanish because
L(−λ) = L(λ)ᵀ).
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._validate import positive_vector, real_array, shown
from mechint.errors import InputError
from mechint.lie import so3, so_index, sym_index
from mechint.systems.base import (
    LevelSetSampler,
    MoserVeselovBody,
    Parameter,
    PoissonSystem,
    StateOption,
    required,
    validate_vector_state,
)

# Relative size of M + Mᵀ (or P − Pᵀ) accepted as round-off in a user's state.
_STRUCTURE_RTOL = 1e-12


def inertia(J) -> np.ndarray:
    """Validated J = (J_1, ..., J_n), n >= 2, all > 0."""
    return positive_vector("J", J, None, min_length=2)


class Body(PoissonSystem, LevelSetSampler, MoserVeselovBody):
    """The capability of the rigid bodies on so(n) (served by the discrete Lagrangian
    map): the parameter J (validated), n, the shape of the matrix leaf of the state, the
    repr, random states on the Casimirs' level set, and the body split
    x ↦ (M, P or None) with its update under a rotation W.  Subclasses are frozen
    dataclasses with ``repr=False``."""

    descriptions: ClassVar[dict[str, str]] = {"M": "body angular momentum (skew, M = ΩJ + JΩ)"}
    linear_structure: ClassVar[bool] = True  # Lie–Poisson: so(n)* and its semidirect products

    J: Float[Array, " n"]

    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter(
            "J", "J1,...,Jn > 0 (any n >= 2)", lambda v: {"J": v}, required=True, example="1,2,3"
        ),
    )

    def __init__(self, J=(1.0, 2.0, 3.0)):
        object.__setattr__(self, "J", jnp.asarray(inertia(J)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(J={shown(self.J)})"

    @property
    def n(self) -> int:
        return self.J.shape[-1]

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (self.n, self.n)

    def principal_moments(self) -> Any:
        """I = ΣJ − J (n = 3)."""
        return jnp.sum(self.J) - self.J

    def omega(self, M: Float[Array, "... n n"]) -> Float[Array, "... n n"]:
        return omega(M, self.J)

    def parameters(self) -> dict:
        return {"J": [float(v) for v in np.asarray(self.J)]}

    def sample_level_set(self, rng: np.random.Generator, count: int, spec: dict) -> Any:
        """Q·x·Qᵀ (and Qp) for Haar-random Q ∈ SO(n) around the one base state given in
        ``spec`` (one entry per state field): every Casimir is the same."""
        fields = [f for f, _ in self.state_fields]
        base = tuple(np.asarray(spec[f], dtype=float) for f in fields if f in spec)
        if len(base) != len(fields):
            raise InputError("initial", f"give one base state ({fields}) to rotate randomly")
        state, batched = self.validate_state(base[0] if len(base) == 1 else base, "initial")
        if batched:
            raise InputError("initial", "give one base state to rotate, not a list")
        Q = haar_so(rng, count, self.n)
        leaves = state if isinstance(state, tuple) else (state,)
        out = tuple(
            Q @ a @ np.swapaxes(Q, 1, 2) if a.ndim == 2 else np.einsum("bij,j->bi", Q, a)
            for a in leaves
        )
        return out[0] if len(out) == 1 else out

    def _generic_M(self, rng: np.random.Generator) -> np.ndarray:
        A = 0.5 * rng.standard_normal((self.n, self.n))
        return A - A.T

    def _M0(self, given: dict) -> np.ndarray:
        n = self.n
        example = "0,1,2;-1,0,3;-2,-3,0" if n == 3 else f"an {n}x{n} skew matrix, rows split by ';'"
        return required(given, "M0", self.name, f"give {example}")


def validate_pair(system: Body, x, second: str):
    """``system.validate_state(x)`` with errors naming M0 or ``second`` (P0 or p0)."""
    try:
        return system.validate_state(x, "x0")[0]
    except InputError as exc:
        option = "M0" if "[0]" in exc.parameter else second
        raise InputError(option, exc.problem, exc.fix) from None


M0_OPTION = StateOption(
    "M0", "initial skew body momentum M (n x n), e.g. '0,1,0;-1,0,0.5;0,-0.5,0'"
)


def haar_so(rng: np.random.Generator, count: int, n: int) -> np.ndarray:
    """``count`` Haar-random rotations in SO(n)."""
    Z = rng.standard_normal((count, n, n))
    Q, R = np.linalg.qr(Z)
    Q = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]
    det = np.linalg.det(Q)
    Q[:, :, 0] *= np.sign(det)[:, None]
    return Q


def omega(M: Float[Array, "... n n"], J: Float[Array, " n"]) -> Float[Array, "... n n"]:
    """Ω with M = JΩ + ΩJ: Ω_jk = M_jk / (J_j + J_k)."""
    return M / (J[:, None] + J[None, :])


def kinetic(M: Float[Array, "... n n"], J: Float[Array, " n"]) -> Float[Array, ...]:
    """½ ⟨M, Ω⟩ = ½ Σ_{j<k} M_jk² / (J_j + J_k)."""
    return 0.25 * jnp.sum(M * omega(M, J), axis=(-2, -1))


def times_J(J, A, side: str):
    """J A (side 'left') or A J (side 'right') for diagonal J, without a matrix product."""
    return J[:, None] * A if side == "left" else A * J


def lax_coefficients(
    M: Float[Array, "... n n"], P: Float[Array, "... n n"] | None, J: Float[Array, " n"]
) -> Float[Array, "... n m"]:
    """t[..., k−1, d] = coefficient of λ^d in tr L(λ)^k, k = 1..n, d = 0..2n.

    Exact polynomial arithmetic on the matrix coefficients of L(λ) = P + λM + λ²J²
    (no eigenvalues, so it is smooth and differentiable everywhere).
    """
    n = M.shape[-1]
    J2 = jnp.broadcast_to(jnp.diag(J * J), M.shape)
    P = jnp.zeros_like(M) if P is None else P
    zero = jnp.zeros_like(M)[..., None, :, :]
    pad = 2 * n + 1 - 3
    C = jnp.concatenate([P[..., None, :, :], M[..., None, :, :], J2[..., None, :, :]], axis=-3)
    C = jnp.concatenate([C, jnp.repeat(zero, pad, axis=-3)], axis=-3)
    traces = [jnp.trace(C, axis1=-2, axis2=-1)]
    for _ in range(2, n + 1):
        shift1 = jnp.concatenate([zero, C[..., :-1, :, :]], axis=-3)
        shift2 = jnp.concatenate([zero, zero, C[..., :-2, :, :]], axis=-3)
        C = C @ P[..., None, :, :] + shift1 @ M[..., None, :, :] + shift2 @ J2[..., None, :, :]
        traces.append(jnp.trace(C, axis1=-2, axis2=-1))
    return jnp.stack(traces, axis=-2)


def lax_integral_index(n: int, free: bool) -> list[tuple[int, int]]:
    """The (k, d) of the independent, non-trivial coefficients λ^d of tr L(λ)^k.

    With P: d = 2, 4, ..., 2k − 2 for k = 2..n (n(n−1)/2 integrals; d = 0 gives the
    Casimirs tr P^k, d = 2k the constant tr J^{2k}).  Free body (P = 0): tr L^k =
    λ^k tr(M + λJ²)^k, and the non-trivial ones are k < d < 2k, d even (Manakov's).
    """
    if free:
        return [(k, d) for k in range(3, n + 1) for d in range(k + 1, 2 * k, 1) if d % 2 == 0]
    return [(k, d) for k in range(2, n + 1) for d in range(2, 2 * k, 2)]


def lax_integrals(M, P, J, free: bool = False) -> Float[Array, "... m"]:
    """The spectral invariants of L(λ) = P + λM + λ²J² as an array (see lax_integral_index)."""
    t = lax_coefficients(M, P, J)
    idx = lax_integral_index(M.shape[-1], free)
    return jnp.stack([t[..., k - 1, d] for k, d in idx], axis=-1)


def lax_integral_names(n: int, free: bool) -> list[str]:
    """Names 'L{k}_{d}' of the coefficients returned by ``lax_integrals``."""
    return [f"L{k}_{d}" for k, d in lax_integral_index(n, free)]


def named_lax_integrals(M, P, J, free: bool = False, suffix: str = "") -> dict:
    """``lax_integrals`` as a dict {"L{k}_{d}" + suffix: value} (empty when there are none)."""
    names = lax_integral_names(M.shape[-1], free)
    if not names:
        return {}
    lax = lax_integrals(M, P, J, free)
    return {name + suffix: lax[..., i] for i, name in enumerate(names)}


# -- Poisson tensors in coordinates (docs/math.md §3) -----------------------------------------
def _delta(a, b, like):
    """Kronecker δ in the dtype of ``like`` (float32 states stay float32)."""
    return (a == b).astype(like.dtype)


def poisson_MM(M: Float[Array, "... n n"]) -> Float[Array, "... d d"]:
    """{M_ab, M_cd} = −(δ_bc M_ad − δ_bd M_ac − δ_ac M_bd + δ_ad M_bc), a<b, c<d."""
    j, k = so_index(M.shape[-1])
    a, b, c, d = j[:, None], k[:, None], j[None, :], k[None, :]
    return -(
        _delta(b, c, M) * M[..., a, d]
        - _delta(b, d, M) * M[..., a, c]
        - _delta(a, c, M) * M[..., b, d]
        + _delta(a, d, M) * M[..., b, c]
    )


def poisson_MP(P: Float[Array, "... n n"]) -> Float[Array, "... d e"]:
    """{M_ab, P_cd} = δ_ac P_bd − δ_bc P_ad − δ_bd P_ac + δ_ad P_bc, a<b, c≤d."""
    n = P.shape[-1]
    j, k = so_index(n)
    r, s = sym_index(n)
    a, b, c, d = j[:, None], k[:, None], r[None, :], s[None, :]
    return (
        _delta(a, c, P) * P[..., b, d]
        - _delta(b, c, P) * P[..., a, d]
        - _delta(b, d, P) * P[..., a, c]
        + _delta(a, d, P) * P[..., b, c]
    )


def poisson_Mp(p: Float[Array, "... n"]) -> Float[Array, "... d n"]:
    """{M_ab, p_c} = δ_ac p_b − δ_bc p_a, a<b."""
    n = p.shape[-1]
    j, k = so_index(n)
    a, b, c = j[:, None], k[:, None], np.arange(n)[None, :]
    return _delta(a, c, p) * p[..., b] - _delta(b, c, p) * p[..., a]


def semidirect_tensor(MM, MV):
    """[[MM, MV], [−MVᵀ, 0]]: the Lie-Poisson tensor of a semidirect product."""
    lower = -jnp.swapaxes(MV, -1, -2)
    zeros = jnp.zeros((*MV.shape[:-2], MV.shape[-1], MV.shape[-1]), dtype=MV.dtype)
    return jnp.concatenate(
        [jnp.concatenate([MM, MV], axis=-1), jnp.concatenate([lower, zeros], axis=-1)], axis=-2
    )


# -- validation of matrix states ----------------------------------------------------------
def matrix_state(name: str, value, n: int, kind: str) -> tuple[np.ndarray, bool]:
    """An n×n skew (kind 'skew') or symmetric ('symmetric') matrix, or a batch (B, n, n).

    Asymmetry at round-off (≤ 1e-12 of the largest entry) is removed; more is an error,
    never silently projected away.
    """
    arr = real_array(name, value)
    if arr.shape[-2:] != (n, n) or arr.ndim not in (2, 3) or (arr.ndim == 3 and not len(arr)):
        raise InputError(
            name,
            f"expected a {kind} {n}x{n} matrix (or a batch (B, {n}, {n})), got shape {arr.shape}",
            "write rows separated by ';', e.g. 0,1,2;-1,0,3;-2,-3,0",
        )
    sign = -1.0 if kind == "skew" else 1.0
    swapped = np.swapaxes(arr, -1, -2)
    defect = float(np.max(np.abs(arr - sign * swapped)))
    scale = max(float(np.max(np.abs(arr))), 1e-300)
    if defect > _STRUCTURE_RTOL * scale:
        relation = "M + Mᵀ" if kind == "skew" else "P − Pᵀ"
        fix = "(M − Mᵀ)/2" if kind == "skew" else "(P + Pᵀ)/2"
        raise InputError(
            name,
            f"is not {kind}: max |{relation}| = {defect:.3g} (largest entry {scale:.3g})",
            f"pass {fix} if that is what you mean",
        )
    return 0.5 * (arr + sign * swapped), arr.ndim == 3


def vector_state(name: str, value, n: int) -> tuple[np.ndarray, bool]:
    """A vector in R^n or a batch (B, n)."""
    return validate_vector_state(name, value, n)


# Levi-Civita ε_ijk.
_EPS = np.zeros((3, 3, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _EPS[_i, _j, _k], _EPS[_i, _k, _j] = 1.0, -1.0


def bodies_tensor(R, Pi, translating: bool, time_dependent: bool):
    """The Poisson tensor of N rigid bodies (``systems.RigidBodies``) at one state, in the
    coordinates (x, p, vec R, Π), then (t, e) where time-dependent: {R_b,ij, Π_b,l} =
    −Σ_k R_ik ε_kjl and {Π_b, Π_b} = hat(Π_b), block-diagonal over the bodies; x, p and
    t, e canonical pairs."""
    n, real = R.shape[0], R.dtype
    eps = jnp.asarray(_EPS, dtype=real)
    T = -jnp.einsum("nik,kjl->nijl", R, eps).reshape(n, 9, 3)
    eye_n = jnp.eye(n, dtype=real)
    RPi = jnp.einsum("nal,nm->naml", T, eye_n).reshape(9 * n, 3 * n)
    PiPi = jnp.einsum("nab,nm->namb", so3.hat(Pi), eye_n).reshape(3 * n, 3 * n)
    zR = jnp.zeros((9 * n, 9 * n), real)
    B = jnp.block([[zR, RPi], [-RPi.T, PiPi]])
    if translating:
        k = 3 * n
        I, Z = jnp.eye(k, dtype=real), jnp.zeros((k, k), real)
        trans = jnp.block([[Z, I], [-I, Z]])
        zc = jnp.zeros((2 * k, 12 * n), real)
        B = jnp.block([[trans, zc], [zc.T, B]])
    if not time_dependent:
        return B
    d = B.shape[0]  # {t, e} = 1: the canonical pair last
    time = jnp.asarray([[0.0, 1.0], [-1.0, 0.0]], real)
    zc = jnp.zeros((d, 2), real)
    return jnp.block([[B, zc], [zc.T, time]])
