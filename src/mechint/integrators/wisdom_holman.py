r"""Wisdom–Holman maps of planetary systems (``systems.NBody``): WHFast's family and SABA.

The Hamiltonian of N bodies about a dominant central one is split into Kepler motions,
flowed exactly (``exact.kepler_flow``), and the planets' interaction, applied as a kick
(Wisdom & Holman 1991, AJ 102, 1528).  Three coordinate systems, as in REBOUND's WHFast
(Rein & Tamayo 2015, MNRAS 452, 376), with v the velocities, m_0 the central mass,
η_i = m_0 + … + m_i and V_I the interaction:

- ``"jacobi"``: each body relative to the centre of mass of those before it,
  r'_i = x_i − Σ_{k<i} m_k x_k / η_{i−1} (likewise v'_i); Kepler drifts with μ_i = G η_i;
  H_I = Σ_{i≥2} G m_i η_{i−1}/|r'_i| − Σ_{j<k, (j,k)≠(0,1)} G m_j m_k/|x_j − x_k| (the
  0–1 pair and the first Jacobi term cancel); the kick v'_i += h a'_i with a' the
  interaction accelerations in Jacobi coordinates.
- ``"democratic-heliocentric"`` (Duncan, Levison & Lee 1998, AJ 116, 2067): heliocentric
  positions, barycentric velocities; Kepler drifts with μ = G m_0; the kick from the
  planets' mutual forces alone; the jump X_i += h Σ_k m_k V_k / m_0 (the central body's
  momentum).  One step: K(h/2) J(h/2) I(h) J(h/2) K(h/2).
- ``"whds"`` (Hernandez & Dehnen 2017, MNRAS 468, 2614): heliocentric positions, the
  barycentric velocities scaled by (m_0 + m_i)/m_0; μ_i = G(m_0 + m_i); the kick scaled
  likewise; the jump X_i += h(P − m_i V_i/(m_0 + m_i)), P = Σ_k m_k V_k/(m_0 + m_k).
  Same order of sub-steps.

Kernels (Jacobi coordinates; Wisdom, Holman & Touma 1996, Fields Inst. Commun. 10, 217;
Wisdom 2006, AJ 131, 2294; as in Rein, Tamayo & Brown 2019, MNRAS 489, 4632), D the Kepler
drift and I the interaction kick:

- ``"standard"``: D(h/2) I(h) D(h/2);
- ``"modified-kick"``: the kick of the modified potential V_I − (h²/24) Σ_j |∇_j V_I|²/m_j,
  a ← a + (h²/12) J with J_k = Σ_j (∂a_k/∂x_j) a_j (the derivative of the interaction
  accelerations along themselves, by ``jax.jvp``);
- ``"composition"``: D(5h/8) I(−h/6) D(−h/4) I(h/6) D(h/8) I(h) D(−h/8) I(−h/6) D(h/4)
  I(h/6) D(3h/8);
- ``"lazy"`` (the lazy implementer's kernel): the kick's accelerations taken at the
  positions x_i + (h²/12) a_i (every body but the central one).

Symplectic correctors (Wisdom, Holman & Touma 1996) of order 3, 5, 7, 11 or 17, and the
second corrector (``corrector2``, Jacobi): each Z(a, b) = D(a) I(−b) D(−2a) I(b) D(a)
(with jumps around the kicks in democratic heliocentric coordinates), composed with the
published coefficients.  ``step`` is C⁻¹ ∘ K ∘ C, with C⁻¹ the corrector with the kicks'
signs flipped (the inverse to the corrector's order), as REBOUND's WHFast in its safe mode
takes one step.  A run's loop carries the kernel's coordinates instead
(``Integrator.own_coordinates``; ``_SplitMap``): ``enter`` applies C once, ``loop_step``
is the kernel rotated so that adjacent drifts merge (one Kepler drift per standard step),
``leave`` undoes the rotation and applies C⁻¹ to each state the run shows (a saved
sample, an event's condition, its end), so that neither the corrector nor the change of
coordinates is fed back into the loop; REBOUND's WHFast takes its steps so with
``safe_mode = 0``.

``SABA(n)``: Laskar & Robutel's (2001, CeMDA 80, 39) near-integrable splittings SABA₁…₄
and their correctors (``corrected=True``: the kick of cc h³ J at both ends of the step,
J as for the modified kick), and Blanes, Casas, Farrés, Laskar, Makazaga & Murua's (2013,
Appl. Numer. Math. 68, 58) SABA(10,6,4), SABA(8,6,4) and SABA(10,4): palindromic
sequences of drifts D(c_i h) and kicks I(d_i h) in Jacobi coordinates.

Every map is symplectic on the massive bodies (each a composition of exact flows),
keeps P and L exactly, and takes the state (q, p) of the system, inertial positions and
momenta (a test particle's velocity), to the same.  A step fails with
``Reason.CLOSE_ENCOUNTER`` where the system declares an encounter distance and two bodies
end the step closer than it, and with ``Reason.NON_FINITE`` where the state is not finite.

Longer than the house's 600 lines because the family shares one machinery: the
coordinates, drifts, kicks and the one loop over a sequence of operations serve every
kernel, corrector and SABA map (the coefficient tables are ``wisdom_holman_tables``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple, final

import jax
import jax.numpy as jnp
import numpy as np

from mechint.errors import InputError
from mechint.integrators.wisdom_holman_tables import (
    CORRECTOR2_B,
    SABA_COEFFICIENTS,
    corrector_sequence,
    saba_sequence,
)
from mechint.maps import (
    Integrator,
    Reason,
    Setting,
    StepStatus,
    Traits,
    combine,
    kept,
    ok_status,
    serves_only,
    status,
)
from mechint.systems.nbody import (
    NBody,
    from_relative,
    ordered_cumsum,
    ordered_sum,
    to_relative,
)

COORDINATES = ("jacobi", "democratic-heliocentric", "whds")
KERNELS = ("standard", "modified-kick", "composition", "lazy")
CORRECTORS = (0, 3, 5, 7, 11, 17)


# --- the coordinates ---------------------------------------------------------------------
def _masses(system: NBody, dtype):
    return system.masses.astype(dtype)


class _State(NamedTuple):
    """A state in the map's coordinates: the centre of mass (R, V) and each body's
    relative (r, v), (..., N−1, 3)."""

    R: jax.Array
    V: jax.Array
    r: jax.Array
    v: jax.Array


def _to(system: NBody, coordinates: str, x) -> _State:
    q, p = x
    m = _masses(system, q.dtype)
    v = p / system.inertia_weights(q.dtype)
    if coordinates == "jacobi":
        R, r = to_relative(m, q, "jacobi")
        V, u = to_relative(m, v, "jacobi")
        return _State(R, V, r, u)
    R = ordered_sum(m[:, None] * q, -2) / ordered_sum(m, 0)
    V = ordered_sum(m[:, None] * v, -2) / ordered_sum(m, 0)
    r = q[..., 1:, :] - q[..., :1, :]
    u = v[..., 1:, :] - V[..., None, :]
    if coordinates == "whds":
        u = u * _whds_scale(system, q.dtype)
    return _State(R, V, r, u)


def _whds_scale(system: NBody, dtype):
    """(N−1, 1): (m_0 + m_i)/m_0 for a massive body, 1 for a test particle."""
    m = _masses(system, dtype)
    massive = np.arange(1, system.n) < system.n_massive
    return jnp.where(massive, (m[0] + m[1:]) / m[0], 1.0)[:, None]


def _positions(system: NBody, coordinates: str, s: _State):
    """Inertial positions of a state in the map's coordinates."""
    m = _masses(system, s.r.dtype)
    return from_relative(m, s.R, s.r, "jacobi" if coordinates == "jacobi" else "heliocentric")


def _from(system: NBody, coordinates: str, s: _State):
    q = _positions(system, coordinates, s)
    m = _masses(system, q.dtype)
    if coordinates == "jacobi":
        v = from_relative(m, s.V, s.v, "jacobi")
    else:
        u = s.v / _whds_scale(system, q.dtype) if coordinates == "whds" else s.v
        v0 = s.V - ordered_sum(m[1:, None] * u, -2) / m[0]
        v = jnp.concatenate([v0[..., None, :], s.V[..., None, :] + u], axis=-2)
    return q, v * system.inertia_weights(q.dtype)


def _mu(system: NBody, coordinates: str, dtype):
    """(N−1,): the gravitational parameter of each body's Kepler drift."""
    m = _masses(system, dtype)
    G = system.G.astype(dtype)
    if coordinates == "jacobi":
        return G * ordered_cumsum(m, 0)[1:]
    if coordinates == "whds":
        massive = np.arange(1, system.n) < system.n_massive
        return G * jnp.where(massive, m[0] + m[1:], m[0])
    return jnp.broadcast_to(G * m[0], m[1:].shape)


def _drift(system: NBody, coordinates: str, s: _State, h) -> _State:
    """The Kepler flow of every relative orbit for time h, and the centre of mass's."""
    from mechint.exact.two_body import kepler_flow

    r, v = kepler_flow(_mu(system, coordinates, s.r.dtype), s.r, s.v, h)
    return _State(s.R + h * s.V, s.V, r, v)


def _jump(system: NBody, coordinates: str, s: _State, h) -> _State:
    """The central body's kinetic energy |Σ m_i v_i|²/(2 m_0) (heliocentric coordinates):
    each position moves by h P/m_0 (WHDS: h(P − m_i V_i/(m_0 + m_i)))."""
    if coordinates == "jacobi":
        return s
    m = _masses(system, s.r.dtype)
    massive = jnp.asarray(np.arange(1, system.n) < system.n_massive)[:, None]
    if coordinates == "whds":
        own = jnp.where(massive, m[1:, None] * s.v / (m[0] + m[1:, None]), 0.0)
        P = ordered_sum(own, -2, keepdims=True)
        return s._replace(r=s.r + h * (P - own))
    P = ordered_sum(jnp.where(massive, m[1:, None] * s.v, 0.0), -2, keepdims=True)
    return s._replace(r=s.r + h * (P / m[0]))


def _pair_accelerations(system: NBody, x, skip_first: bool):
    """The direct forces' accelerations (``NBody.accelerations``) without the central
    body's (``skip_first``; heliocentric splittings) or without the pair (0, 1) only
    (Jacobi: it is the first Kepler term)."""
    i = np.arange(system.n)[:, None]
    j = np.arange(system.n_massive)[None, :]
    if skip_first:
        return system.accelerations(x, without=(j == 0) | (i == 0))
    return system.accelerations(x, without=(i + j == 1) & (i * j == 0))


def jacobi_accelerations(system: NBody, x):
    """The interaction accelerations (inertial, (..., N, 3)) of the Jacobi splitting at
    inertial positions x: −∇V_I / m with V_I = H_I of the module docstring (the direct
    forces without the 0–1 pair, and the Jacobi terms G m_j η_{j−1}/|r'_j|, j ≥ 2)."""
    m = _masses(system, x.dtype)
    G = system.G.astype(x.dtype)
    a = _pair_accelerations(system, x, skip_first=False)
    eta = ordered_cumsum(m, 0)
    _, Q = to_relative(m, x, "jacobi")  # Q_j = x_j − R_{j−1}, j ≥ 1
    Qn = jnp.sqrt(ordered_sum(Q * Q, -1, keepdims=True))
    f = G * Q / (Qn * Qn * Qn)  # (..., N−1, 3)
    on = jnp.asarray(np.arange(1, system.n) >= 2)[:, None]  # the terms j ≥ 2
    f = jnp.where(on, f, 0.0)
    own = eta[:-1, None] * f  # on body j: + G η_{j−1} Q_j/|Q_j|³
    # on each body i < j: − G m_j Q_j/|Q_j|³, summed over j > i
    back = m[1:, None] * f
    later = ordered_cumsum(back, -2, reverse=True)  # Σ_{j ≥ k}
    zero = jnp.zeros_like(later[..., :1, :])
    behind = jnp.concatenate([later, zero], axis=-2)  # row i: Σ_{j > i}, i = 0..N−1
    return a + jnp.concatenate([zero, own], axis=-2) - behind


def _jerk(system: NBody, x, a):
    """J_k = Σ_j (∂a_k/∂x_j) a_j (the interaction accelerations' derivative along
    themselves)."""
    return jax.jvp(lambda y: jacobi_accelerations(system, y), (x,), (a,))[1]


def _kick(system: NBody, coordinates: str, s: _State, h, a=None) -> _State:
    """The interaction kick for time h (``a``: the accelerations to use, inertial; by
    default those at the state's positions)."""
    x = _positions(system, coordinates, s)
    if coordinates == "jacobi":
        if a is None:
            a = jacobi_accelerations(system, x)
        _, aj = to_relative(_masses(system, x.dtype), a, "jacobi")
        return s._replace(v=s.v + h * aj)
    a = _pair_accelerations(system, x, skip_first=True)[..., 1:, :]
    if coordinates == "whds":
        a = a * _whds_scale(system, x.dtype)
    return s._replace(v=s.v + h * a)


def _interaction(system: NBody, coordinates: str, s: _State, h) -> _State:
    """I(h), with the jumps around it in heliocentric coordinates."""
    s = _jump(system, coordinates, s, 0.5 * h)
    s = _kick(system, coordinates, s, h)
    return _jump(system, coordinates, s, 0.5 * h)


# The kinds of kick a map's sequence holds (``_run``): none, the interaction I(h), the
# modified kick, the lazy implementer's kick, and SABAC's corrector kick of h³ J
NONE, PLAIN, MODIFIED, LAZY, SABA_CORRECTOR = range(5)


def _modified(system: NBody, s: _State, h, h2) -> _State:
    x = _positions(system, "jacobi", s)
    a = jacobi_accelerations(system, x)
    return _kick(system, "jacobi", s, h, a + (h2 / 12) * _jerk(system, x, a))


def _lazy(system: NBody, s: _State, h, h2) -> _State:
    x = _positions(system, "jacobi", s)
    a = jacobi_accelerations(system, x)
    moved = jnp.asarray(np.arange(system.n) >= 1)[:, None]  # the central body stays
    shifted = x + jnp.where(moved, (h2 / 12) * a, 0.0)
    return _kick(system, "jacobi", s, h, jacobi_accelerations(system, shifted))


def _saba_corrector(system: NBody, s: _State, h, h2) -> _State:
    x = _positions(system, "jacobi", s)
    a = jacobi_accelerations(system, x)
    return _kick(system, "jacobi", s, h, h2 * _jerk(system, x, a))


def merged(ops) -> tuple[tuple[float, float, int], ...]:
    """A sequence of ("D", c) and ("I", d, kind) as rows (c, d, kind): each kick with the
    drift before it (adjacent drifts added: the Kepler flow is a one-parameter group),
    the last drift in a row without a kick."""
    rows: list[tuple[float, float, int]] = []
    drift = 0.0
    for op in ops:
        if op[0] == "D":
            drift += op[1]
        else:
            rows.append((drift, op[1], op[2]))
            drift = 0.0
    if drift != 0.0:
        rows.append((drift, 0.0, NONE))
    return tuple(rows)


def table(rows, kinds) -> tuple[np.ndarray, np.ndarray]:
    """``merged`` rows as the arrays ``_run`` loops over: (c, d) per row, and the index of
    each row's kind of kick in ``kinds``."""
    return (np.asarray([(c, d) for c, d, _ in rows], dtype=np.float64),
            np.asarray([kinds.index(k) for _, _, k in rows], dtype=np.int32))  # fmt: skip


def sequence(system: NBody, coordinates: str, s: _State, h, ops, moves: float) -> _State:
    """The state in the map's coordinates advanced by ``ops``, a sequence of ("D", c) and
    ("I", d, kind) (fractions of h; ``merged``, ``table``), and the centre of mass moved
    by ``moves`` h V (the drifts' sum: 1 for a step, 0 for a corrector)."""
    if not ops:
        return s
    rows = merged(ops)
    kinds = sorted({k for _, _, k in rows})
    out = _run(system, coordinates, s, h, *table(rows, kinds), kinds)
    return out._replace(R=s.R + (moves * h) * s.V if moves else s.R)


def run(system: NBody, coordinates: str, x, h, fractions, kind, kinds):
    """A state (q, p) advanced by one step of the sequence ``fractions`` (n, 2), ``kind``
    (n,) (``table``; they may be traced: one compiled program serves every sequence of
    the same kinds), and whether it is finite."""
    s = _to(system, coordinates, x)
    s = _run(system, coordinates, s, h, fractions, kind, kinds)._replace(R=s.R + h * s.V)
    x = _from(system, coordinates, s)
    return x, ok_status(x)


# A sequence of at most one drift (a kernel of one kick, rotated; the map's coordinates
# entered and left, every step where events or save times read the shown state) runs as
# straight-line code, one with more drifts as a loop (each operation compiled once: a Kepler
# drift compiles in ~0.9 s).  Straight-line code holds the same one drift as the loop and
# no loop or branch: reverse mode through a transit likelihood (1600 steps, the shown
# state every step) 1.25x faster than with a loop of two rows, 2026-12-07.
_UNROLLED_DRIFTS = 1


def _run(system: NBody, coordinates: str, s: _State, h, fractions, kind, kinds) -> _State:
    """The sequence of drifts and kicks (fractions of h; ``table``) in one loop, so that
    each operation is compiled once whatever the sequence's length (the centre of mass:
    ``sequence``)."""
    real = s.r.dtype
    h2 = h * h
    ops = {
        NONE: lambda s, d: s,
        PLAIN: lambda s, d: _interaction(system, coordinates, s, d),
        MODIFIED: lambda s, d: _modified(system, s, d, h2),
        LAZY: lambda s, d: _lazy(system, s, d, h2),
        SABA_CORRECTOR: lambda s, d: _saba_corrector(system, s, d, h2),
    }
    branches = [ops[k] for k in kinds]
    rows = None if isinstance(fractions, jax.Array) else np.asarray(fractions)
    if rows is not None and np.count_nonzero(rows[:, 0]) <= _UNROLLED_DRIFTS:
        # a short sequence as straight-line code (XLA fuses it; no loop, no branches)
        for (c, d), k in zip(rows.tolist(), np.asarray(kind).tolist(), strict=True):
            if c != 0:
                s = _drift(system, coordinates, s, c * h)
            s = branches[k](s, d * h)
        return s

    def body(s, row):
        (c, d), k = row
        s = jax.lax.cond(c != 0, lambda s: _drift(system, coordinates, s, c * h), lambda s: s, s)
        if len(branches) > 1:
            s = jax.lax.switch(k, branches, s, d * h)
        else:
            s = branches[0](s, d * h)
        return s, None

    return jax.lax.scan(body, s, (jnp.asarray(fractions, real), jnp.asarray(kind)))[0]


def corrector_ops(order: int, inv: float, kick: int = PLAIN) -> list:
    """The corrector of ``order`` (inv = 1) or its inverse to its order (inv = −1): the
    Z(a, b) = D(a) I(−b) D(−2a) I(b) D(a) of ``corrector_sequence``."""
    ops: list = []
    for a, b in corrector_sequence(order):
        ops += [("D", a), ("I", -inv * b, kick), ("D", -2 * a), ("I", inv * b, kick), ("D", a)]
    return ops


def corrector2_ops(inv: float) -> list:
    """The second corrector (Wisdom, Holman & Touma 1996; Jacobi): U(a, b) U(−a, b) with
    a = inv/2, b = inv b₂, U(a, b) = D(a) Y(a, b) Y(a, −b) D(−a), Y(a, b) = C(a, b)
    C(−a, −b), C(a, b) = D(a) I(b) D(−a)."""

    def C(a, b):
        return [("D", a), ("I", b, PLAIN), ("D", -a)]

    def U(a, b):
        return [("D", a), *C(a, b), *C(-a, -b), *C(a, -b), *C(-a, b), ("D", -a)]

    a, b = 0.5 * inv, CORRECTOR2_B * inv
    return U(a, b) + U(-a, b)


def _encounter_status(system: NBody, q) -> StepStatus:
    """Fails with CLOSE_ENCOUNTER where two bodies are closer than the system's encounter
    distance (residual: their distance over it)."""
    d, _ = system.close_pair(q)
    ratio = d / system.encounter.astype(q.dtype)
    return status(ratio >= 1, ratio, Reason.CLOSE_ENCOUNTER)


def _pack(s: _State):
    """A state in the map's coordinates as a run's loop carries it: ((R; r), (V; v)),
    each (..., N, 3), the shapes of the state (q, p)."""
    return (jnp.concatenate([s.R[..., None, :], s.r], axis=-2),
            jnp.concatenate([s.V[..., None, :], s.v], axis=-2))  # fmt: skip


def _unpack(z) -> _State:
    q, p = z
    return _State(q[..., 0, :], p[..., 0, :], q[..., 1:, :], p[..., 1:, :])


def inverse(ops) -> list:
    """The inverse of a sequence of exact flows (drifts, and kicks that move no body):
    the operations in reverse order, each fraction negated."""
    return [(op[0], -op[1], *op[2:]) for op in reversed(ops)]


def _drifts(ops) -> float:
    """The sum of the drifts' fractions of h in ``ops`` (how far they move the centre of
    mass, in units of h V)."""
    return math.fsum(op[1] for op in ops if op[0] == "D")


class _SplitMap:
    """What the Wisdom–Holman maps share: a step is the corrector C, the kernel K and the
    corrector's inverse (``correction_ops``, ``kernel_ops``): ``step`` is C⁻¹ ∘ K ∘ C.

    A run's loop carries the map's coordinates instead (``Integrator.own_coordinates``),
    and the kernel rotated: with K = B ∘ A, A its operations up to the first kick, K^n =
    A⁻¹ ∘ (A ∘ B)^n ∘ A, and A ∘ B starts and ends with a drift, which merge (the Kepler
    flow is a one-parameter group): the standard kernel D(h/2) I(h) D(h/2) takes one
    Kepler drift per step, not two (REBOUND's WHFast with ``safe_mode = 0``).  ``enter``
    is A ∘ C, ``loop_step`` A ∘ B, ``leave`` C⁻¹ ∘ A⁻¹: the change of coordinates, the
    corrector and the half drift are applied where a state is shown, never fed back into
    the loop."""

    own_coordinates: ClassVar[bool] = True
    # a batch's drift gathers the few entries whose arcs need the general Kepler solve,
    # its tangent takes that solve for every member (``exact.two_body``): a tangent run's
    # frozen members step from a live one's state (a select over the state a step costs
    # the plain map's batch 10 %: 1.9e7 against 1.8e7 body-steps/s, 10^4 outer solar
    # systems, 2026-12-07)
    tangent_batch_branches: ClassVar[bool] = True

    def kernel_ops(self) -> list:
        raise NotImplementedError

    def correction_ops(self, inv: float) -> list:
        """The corrector (inv = 1) or its inverse (inv = −1): none here."""
        return []

    def _coordinates(self) -> str:
        return getattr(self, "coordinates", "jacobi")

    def ops(self) -> list:
        """The step as a sequence of ("D", c) and ("I", d, kind), fractions of h: the
        corrector, the kernel, the corrector's inverse (to its order)."""
        return self.correction_ops(1.0) + self.kernel_ops() + self.correction_ops(-1.0)

    def _lead(self) -> tuple[list, list]:
        """(A, B): the kernel's operations up to its first kick, and the rest."""
        kernel = self.kernel_ops()
        first = next(i for i, op in enumerate(kernel) if op[0] == "I")
        return kernel[: first + 1], kernel[first + 1 :]

    def enter(self, system, x, h):
        """The loop's state at (q, p): the map's coordinates, C then A applied (``_pack``)."""
        c = self._coordinates()
        lead = self._lead()[0]
        s = sequence(system, c, _to(system, c, x), h, self.correction_ops(1.0) + lead,
                     _drifts(lead))  # fmt: skip
        return _pack(s)

    def leave(self, system, z, h):
        """The state (q, p) the loop's state z shows: A⁻¹ then C⁻¹ applied."""
        c = self._coordinates()
        lead = self._lead()[0]
        s = sequence(system, c, _unpack(z), h, inverse(lead) + self.correction_ops(-1.0),
                     -_drifts(lead))  # fmt: skip
        return _from(system, c, s)

    def loop_step(self, system, z, h) -> tuple[object, StepStatus]:
        """One step of the loop (the kernel rotated, A ∘ B) and its status: not finite,
        or (where the system declares an encounter distance) two bodies closer than it."""
        c = self._coordinates()
        lead, rest = self._lead()
        s = sequence(system, c, _unpack(z), h, rest + lead, 1.0)
        z = _pack(s)
        checks = [ok_status(z)]
        if system.checks_encounters or system.checks_escape:
            q = _positions(system, c, s)
            if system.checks_encounters:
                checks.append(_encounter_status(system, q))
            if system.checks_escape:
                checks.append(system.escape_status(q))
        return z, combine(checks)

    def step(self, system, x, h) -> tuple[object, StepStatus]:
        """C⁻¹ ∘ K ∘ C from (q, p) to (q, p), and its status."""
        c = self._coordinates()
        s = sequence(system, c, _to(system, c, x), h, self.ops(), 1.0)
        x = _from(system, c, s)
        checks = [ok_status(x)]
        if system.checks_encounters:
            checks.append(_encounter_status(system, x[0]))
        if system.checks_escape:
            checks.append(system.escape_status(x[0]))
        return x, combine(checks)

    def preserved(self, system, x, h) -> dict:
        return kept(system, ("Px", "Py", "Pz", "Lx", "Ly", "Lz"), x)


def _saba_kind(value) -> int | str:
    text = str(value).replace(" ", "").strip("()")
    for kind in SABA_COEFFICIENTS:
        if text == str(kind):
            return kind
    raise InputError("n", f"no SABA method {value!r}",
                     "one of 1, 2, 3, 4, '10,6,4', '8,6,4', '10,4'")  # fmt: skip


def _parse_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise InputError("corrector2", f"expected true or false, got {value!r}")


@final
@dataclasses.dataclass(frozen=True)
class WisdomHolman(_SplitMap, Integrator):
    """The Wisdom–Holman map of ``systems.NBody`` (the module docstring): ``coordinates``
    "jacobi" (default), "democratic-heliocentric" or "whds"; ``kernel`` "standard"
    (default), "modified-kick", "composition" or "lazy" (Jacobi only); ``corrector`` 0
    (none), 3, 5, 7, 11 or 17 (not with WHDS); ``corrector2`` (Jacobi only)."""

    coordinates: str = "jacobi"
    kernel: str = "standard"
    corrector: int = 0
    corrector2: bool = False

    name: ClassVar[str] = "wisdom-holman"
    # A batch's loop on a GPU carries the loop's state as columns (a member's (N, 3)
    # leaves of up to 16 entries; ``Integrator.batch_columns``).  Measured on one H100,
    # 2026-12-06, 10⁵ outer solar systems (5 bodies) × 1000 Jacobi steps, body-steps/s,
    # float64 / float32: 1.28e9 / 3.25e9 as (B, 5, 3) arrays, 1.91e9 / 3.74e9 as
    # columns (the same bits, and a member the same as its run alone); with the members
    # last (``map_columns``) 1.75e9 / 3.52e9, and 4 steps an iteration 1.51e9 / 3.13e9.
    batch_columns: ClassVar[bool] = True
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("coordinates", "wisdom-holman: jacobi (default), democratic-heliocentric, whds"),
        Setting("kernel", "wisdom-holman: standard (default), modified-kick, composition, lazy"),
        Setting(
            "corrector",
            "wisdom-holman: symplectic corrector order 0 (none), 3, 5, 7, 11, 17",
            int,
        ),
        Setting("corrector2", "wisdom-holman: the second corrector (true/false)", _parse_bool),
    )

    def __post_init__(self):
        if self.coordinates not in COORDINATES:
            raise InputError("coordinates", f"unknown coordinates {self.coordinates!r}",
                             f"one of {', '.join(COORDINATES)}")  # fmt: skip
        if self.kernel not in KERNELS:
            raise InputError("kernel", f"unknown kernel {self.kernel!r}",
                             f"one of {', '.join(KERNELS)}")  # fmt: skip
        if (isinstance(self.corrector, bool) or not isinstance(self.corrector, int | np.integer)
                or self.corrector not in CORRECTORS):  # fmt: skip
            raise InputError("corrector", f"no symplectic corrector of order {self.corrector!r}",
                             "one of 0, 3, 5, 7, 11, 17")  # fmt: skip
        if not isinstance(self.corrector2, bool):
            raise InputError("corrector2", f"must be True or False, got {self.corrector2!r}")
        if self.kernel != "standard" and self.coordinates != "jacobi":
            raise InputError("kernel", f"the {self.kernel} kernel needs Jacobi coordinates",
                             "use coordinates='jacobi', or kernel='standard'")  # fmt: skip
        if self.corrector and self.coordinates == "whds":
            raise InputError("corrector", "WHDS coordinates have no symplectic corrector",
                             "use Jacobi or democratic-heliocentric coordinates")  # fmt: skip
        if self.corrector2 and self.coordinates != "jacobi":
            raise InputError("corrector2", "the second corrector needs Jacobi coordinates")
        self.settle_traits()

    def derived_traits(self) -> Traits:
        symmetric = self.kernel != "composition" and not self.corrector and not self.corrector2
        return Traits(order=2, symmetric=symmetric, explicit=True, symplectic=True)

    def cannot_serve(self, system) -> str | None:
        return serves_only(system, (NBody,))

    def kernel_ops(self) -> list:
        """The kernel as a sequence of ("D", c) and ("I", d, kind), fractions of h."""
        return {
            "standard": [("D", 0.5), ("I", 1.0, PLAIN), ("D", 0.5)],
            "modified-kick": [("D", 0.5), ("I", 1.0, MODIFIED), ("D", 0.5)],
            "lazy": [("D", 0.5), ("I", 1.0, LAZY), ("D", 0.5)],
            "composition": [
                ("D", 5 / 8),
                ("I", -1 / 6, PLAIN),
                ("D", -1 / 4),
                ("I", 1 / 6, PLAIN),
                ("D", 1 / 8),
                ("I", 1.0, PLAIN),
                ("D", -1 / 8),
                ("I", -1 / 6, PLAIN),
                ("D", 1 / 4),
                ("I", 1 / 6, PLAIN),
                ("D", 3 / 8),
            ],
        }[self.kernel]

    def correction_ops(self, inv: float) -> list:
        """The corrector (inv = 1; the first, then the second) or its inverse to its order
        (inv = −1; the second's, then the first's)."""
        first = corrector_ops(self.corrector, inv) if self.corrector else []
        second = corrector2_ops(inv) if self.corrector2 else []
        return first + second if inv > 0 else second + first


@final
@dataclasses.dataclass(frozen=True)
class SABA(_SplitMap, Integrator):
    """Laskar & Robutel's SABA_n (n = 1..4; ``corrected=True``: SABAC_n, the corrector
    of the modified kick at both ends) and Blanes et al.'s SABA(10,6,4), SABA(8,6,4),
    SABA(10,4) (n given as the text "10,6,4", "8,6,4", "10,4"), on Jacobi coordinates."""

    n: int | str = "10,6,4"
    corrected: bool = False

    name: ClassVar[str] = "saba"
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("n", "saba: 1, 2, 3, 4, 10,6,4 (default), 8,6,4 or 10,4", _saba_kind),
        Setting("corrected", "saba: SABAC_n, the corrected map (n = 1..4)", _parse_bool),
    )

    def __post_init__(self):
        object.__setattr__(self, "n", _saba_kind(self.n))
        if not isinstance(self.corrected, bool):
            raise InputError("corrected", f"must be True or False, got {self.corrected!r}")
        if self.corrected and SABA_COEFFICIENTS[self.n][2] is None:
            raise InputError("corrected", f"SABA({self.n}) has no corrector",
                             "corrected=True with n = 1, 2, 3 or 4")  # fmt: skip
        self.settle_traits()

    def derived_traits(self) -> Traits:
        """Classical order (error O(ε h^(2n) + ε² h²) for SABA_n: 2; SABAC_n, n ≥ 2, and
        SABA(10,4), (8,6,4), (10,6,4): 4)."""
        four = isinstance(self.n, str) or (self.corrected and self.n >= 2)
        return Traits(order=4 if four else 2, symmetric=True, explicit=True, symplectic=True)

    def cannot_serve(self, system) -> str | None:
        return serves_only(system, (NBody,))

    def kernel_ops(self) -> list:
        """The step as a sequence of ("D", c) and ("I", d, kind), fractions of h."""
        ops = [("D", c) if op == "D" else ("I", c, PLAIN) for op, c in saba_sequence(self.n)]
        if self.corrected:  # the corrector's kick of cc h³ J at both ends
            cc = SABA_COEFFICIENTS[self.n][2]
            ops = [("I", cc, SABA_CORRECTOR), *ops, ("I", cc, SABA_CORRECTOR)]
        return ops
