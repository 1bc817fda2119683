r"""Planetary systems: N point masses under Newton's gravity.

``NBody(masses, G)``: bodies 0..N−1, body 0 the central one (the star), state (q, p)
with q the inertial (barycentric, for the states this module makes) positions and
p = m v the momenta, each of shape (N, 3) (a batch: (B, N, 3)).

    H = Σ_i |p_i|²/(2 m_i) − Σ_{i<j} G m_i m_j / |q_i − q_j|.

Invariants: H, the total momentum P = Σ p_i (``Px``, ``Py``, ``Pz``) and the angular
momentum L = Σ q_i × p_i (``Lx``, ``Ly``, ``Lz``), the momentum maps of translations and
rotations (kept exactly by the symplectic partitioned maps and by the Wisdom–Holman
maps); the centre of mass moves uniformly, R(t) = R(0) + P t / M (``centre_of_mass``).

**Test particles**: bodies of mass 0 (asteroids, comets) come last; they feel the
massive bodies and act on nothing.  Their momentum would be 0, so their p holds the
velocity (the momentum per unit mass), and H, P and L are the massive bodies' (each
test particle's own energy is not conserved in a moving field).  The forces cost
O(N_massive · N), nothing between test particles.

**Units**: any consistent set; G is the constant in them.  ``outer_solar_system`` uses
astronomical units, days and solar masses with G = k² = 2.95912208286e-4 AU³/(M☉ day²)
(k the Gaussian gravitational constant).

**Close encounters**: ``encounter = d`` (a distance) makes every step of the maps that
assume the central body dominates (``integrators.WisdomHolman``, ``SABA``) fail with
``Reason.CLOSE_ENCOUNTER`` where two bodies (one of them massive) come closer than d
(measured at the step's end state); ``close_pair(q)`` says which pair and how close.

Elements (``from_elements``, ``to_elements``): the osculating orbit of each body about
the centre of mass of the bodies before it (``frame="jacobi"``) or about body 0
(``"heliocentric"``), with μ = G (m_interior + m_k): a (or the period P), e, i, Ω, ω and
the mean anomaly M (or the mean longitude λ = M + ω + Ω, or the time of periapsis).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint._pytree import register_pytree
from mechint._validate import positive_scalar, real_array, shown, traced
from mechint.errors import InputError
from mechint.systems.base import Parameter, StateOption
from mechint.systems.canonical import Separable

# the Gaussian gravitational constant squared: G in AU³ / (solar mass · day²)
GAUSS_G = 2.95912208286e-4


def _masses(values, test_particles: int | None) -> tuple[Any, int]:
    """The masses as an array and the number of test particles (trailing zeros)."""
    if traced(values):
        m = jnp.asarray(values)
        if m.ndim != 1 or m.shape[0] < 2:
            raise InputError("masses", f"expected N ≥ 2 masses, got shape {m.shape}")
        return m, int(test_particles or 0)
    m = real_array("masses", values)
    if m.ndim != 1 or m.shape[0] < 2:
        raise InputError("masses", f"expected a list of N ≥ 2 masses, got shape {m.shape}",
                         "give the central body's mass first, then each planet's")  # fmt: skip
    if not np.all(np.isfinite(m)) or np.any(m < 0):
        raise InputError("masses", f"must be finite and ≥ 0, got {m.tolist()}")
    if m[0] <= 0:
        raise InputError("masses", "the central body (the first) must have a positive mass",
                         "put the star first")  # fmt: skip
    zero = m == 0
    n_test = int(np.sum(zero))
    if n_test and not np.all(zero[m.shape[0] - n_test :]):
        raise InputError("masses", "test particles (mass 0) must come after every massive "
                         "body", "reorder the bodies: massive ones first")  # fmt: skip
    if test_particles is not None and int(test_particles) != n_test:
        raise InputError("test_particles", f"{test_particles} given, but {n_test} masses are 0")
    return m, n_test


def ordered_sum(a, axis: int = -1, keepdims: bool = False):
    """Σ along a small axis as a chain of additions in index order (a fori_loop past 32
    entries): the same bits for a state alone and in a batch, where XLA may vectorise a
    reduction in another order."""
    a = jnp.moveaxis(a, axis, 0)
    n = a.shape[0]
    if n <= 32:
        out = a[0]
        for k in range(1, n):
            out = out + a[k]
    else:
        out = jax.lax.fori_loop(1, n, lambda k, acc: acc + a[k], a[0])
    return jnp.expand_dims(out, axis) if keepdims else out


def ordered_cumsum(a, axis: int = -2, reverse: bool = False):
    """Partial sums along a small axis, each a chain of additions in index order (from the
    end where ``reverse``)."""
    a = jnp.moveaxis(a, axis, 0)
    order = range(a.shape[0] - 1, -1, -1) if reverse else range(a.shape[0])
    out: list[Any] = [None] * a.shape[0]
    acc = None
    for k in order:
        acc = a[k] if acc is None else acc + a[k]
        out[k] = acc
    return jnp.moveaxis(jnp.stack(out), 0, axis)


@final
@register_pytree(data=("masses", "G", "encounter", "escape"),
                 meta=("dof", "n_test", "checks_encounters", "checks_escape",
                       "names"))  # fmt: skip
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class NBody(Separable):
    r"""N point masses under Newton's gravity (the module docstring); ``masses`` (N,)
    with the central body first and test particles (mass 0) last, ``G`` the constant of
    gravity in the units of the masses, lengths and times used, ``encounter`` a distance
    below which a pair's approach fails the step of a Wisdom–Holman map (None: no such
    check), ``escape`` a distance from the centre of mass beyond which a body's departure
    fails the step of any map (``Reason.OUT_OF_DOMAIN``, residual the distance over it;
    REBOUND's ``exit_max_distance``; None: no such check).  The Wisdom–Holman maps
    measure both on the positions their loop carries at a step's end, half a Kepler drift
    past the state a run shows.  Masses and G may be traced (``jax.grad`` with respect to
    them); traced masses cannot be read, so give the number of test particles among them
    as ``test_particles`` (their zeros are massive bodies' otherwise, and the velocities
    of their momenta 0/0).  ``names``: the bodies' names, in order (files label the
    ``body`` dimension with them)."""

    descriptions: ClassVar[dict[str, str]] = {
        "q": "position (inertial frame)",
        "p": "momentum m v (a test particle's: its velocity)",
        "H": "energy of the massive bodies",
        "Px": "total momentum, x",
        "Py": "total momentum, y",
        "Pz": "total momentum, z",
        "Lx": "total angular momentum, x",
        "Ly": "total angular momentum, y",
        "Lz": "total angular momentum, z",
    }

    masses: Float[Array, " N"]
    G: Float[Array, ""]
    encounter: Float[Array, ""]
    escape: Float[Array, ""]
    n_test: int
    checks_encounters: bool
    checks_escape: bool
    names: tuple[str, ...] | None

    name: ClassVar[str] = "nbody"
    state_fields = (("q", ("body", "xyz")), ("p", ("body", "xyz")))
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter(
            "masses",
            "the masses, the central body first, test particles (0) last",
            required=True,
            example="1,0.001,0.0003",
        ),
        Parameter("G", "the constant of gravity (default 1)"),
        Parameter(
            "encounter",
            "fail a Wisdom-Holman step where two bodies come closer than "
            "this distance (default: no check)",
        ),
        Parameter(
            "escape",
            "fail a step where a body is farther than this distance from the centre of "
            "mass (default: no check)",
        ),
    )
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("q0", "nbody: positions, one row of 3 per body: 'x,y,z;x,y,z;...'"),
        StateOption("p0", "nbody: momenta m v (test particles: velocities), rows as q0"),
    )
    momentum_maps: ClassVar[tuple[str, ...]] = ("Px", "Py", "Pz", "Lx", "Ly", "Lz")

    def __init__(self, masses, G=1.0, encounter=None, *, test_particles: int | None = None,
                 names=None, escape=None):  # fmt: skip
        m, n_test = _masses(masses, test_particles)
        object.__setattr__(self, "names", _names(names, int(m.shape[0])))
        object.__setattr__(self, "masses", jnp.asarray(m))
        object.__setattr__(self, "G", jnp.asarray(positive_scalar("G", G)))
        object.__setattr__(self, "checks_encounters", encounter is not None)
        d = 0.0 if encounter is None else positive_scalar("encounter", encounter)
        object.__setattr__(self, "encounter", jnp.asarray(d))
        object.__setattr__(self, "checks_escape", escape is not None)
        r = 0.0 if escape is None else positive_scalar("escape", escape)
        object.__setattr__(self, "escape", jnp.asarray(r))
        object.__setattr__(self, "n_test", n_test)
        object.__setattr__(self, "dof", 3 * int(m.shape[0]))

    def __repr__(self) -> str:
        extra = f", encounter={float(self.encounter):g}" if self.checks_encounters else ""
        extra += f", escape={float(self.escape):g}" if self.checks_escape else ""
        return f"NBody(masses={shown(self.masses)}, G={float(self.G):g}{extra})"

    # --- sizes --------------------------------------------------------------------
    @property
    def n(self) -> int:
        """The number of bodies."""
        return self.dof // 3

    @property
    def n_massive(self) -> int:
        return self.n - self.n_test

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (self.n, 3)

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        return ("Px", "Py", "Pz", "Lx", "Ly", "Lz")

    def parameters(self) -> dict:
        out = {"masses": [float(v) for v in np.asarray(self.masses)], "G": float(self.G)}
        if self.checks_encounters:
            out["encounter"] = float(self.encounter)
        if self.checks_escape:
            out["escape"] = float(self.escape)
        if self.names is not None:
            out["names"] = list(self.names)
        return out

    def dimension_labels(self) -> dict[str, list[str]]:
        return {} if self.names is None else {"body": list(self.names)}

    # --- the Hamiltonian and its pieces ---------------------------------------------
    def inertia_weights(self, dtype=None):
        """(N, 1): m_i for a massive body, 1 for a test particle (p = w v)."""
        m = self.masses if dtype is None else self.masses.astype(dtype)
        w = jnp.where(jnp.arange(self.n) < self.n_massive, m, jnp.ones_like(m))
        return w[:, None]

    def kinetic(self, p):
        m = self.masses[: self.n_massive, None]
        return jnp.sum(p[..., : self.n_massive, :] ** 2 / (2 * m), axis=(-2, -1))

    def potential(self, q):
        qm = q[..., : self.n_massive, :]
        m = self.masses[: self.n_massive]
        i, j = np.triu_indices(self.n_massive, 1)
        r = jnp.sqrt(jnp.sum((qm[..., i, :] - qm[..., j, :]) ** 2, axis=-1))
        return -self.G * jnp.sum(m[i] * m[j] / r, axis=-1)

    def accelerations(self, q, without=None):
        """a_i = −Σ_j G m_j (q_i − q_j)/|q_i − q_j|³ over the massive bodies j ≠ i, for
        every body i (test particles included): shape of q.  ``without``: a boolean
        (N, N_massive) mask of the pairs (i, j) left out as well (a splitting's Kepler
        part)."""
        nm = self.n_massive
        d = q[..., :, None, :] - q[..., None, :nm, :]  # (..., N, Nm, 3)
        r2 = ordered_sum(d * d, -1)
        skip = np.arange(self.n)[:, None] == np.arange(nm)[None, :]
        if without is not None:
            skip = skip | without
        safe = jnp.where(skip, 1.0, r2)
        Gm = self.G.astype(q.dtype) * self.masses[:nm].astype(q.dtype)
        w = jnp.where(skip, 0.0, Gm / (safe * jnp.sqrt(safe)))
        return -ordered_sum(w[..., None] * d, -2)

    def kinetic_gradient(self, p):
        return p / self.inertia_weights(p.dtype)

    def potential_gradient(self, q):
        return -self.inertia_weights(q.dtype) * self.accelerations(q)

    def gradient(self, q, p):
        return self.potential_gradient(q), self.kinetic_gradient(p)

    def energy(self, q, p):
        return self.kinetic(p) + self.potential(q)

    def hamiltonian(self, x):
        q, p = x
        return self.energy(q, p)

    def vector_field(self, x):
        q, p = x
        return self.kinetic_gradient(p), -self.potential_gradient(q)

    def _vectorize(self, fn, signature: str):
        return jnp.vectorize(fn, signature=signature.replace("(d)", "(n,k)"))

    def first_integrals(self, x) -> dict:
        q, p = x
        nm = self.n_massive
        P = jnp.sum(p[..., :nm, :], axis=-2)
        L = jnp.sum(jnp.cross(q[..., :nm, :], p[..., :nm, :]), axis=-2)
        return {"Px": P[..., 0], "Py": P[..., 1], "Pz": P[..., 2],
                "Lx": L[..., 0], "Ly": L[..., 1], "Lz": L[..., 2]}  # fmt: skip

    def invariant_scales(self, x) -> dict:
        """The size of the terms the momentum maps sum (``System.invariant_scales``):
        Σ|p_i| per component for P, Σ(|q_i,b p_i,c| + |q_i,c p_i,b|) for L: their errors
        are relative to these where the sums cancel (a barycentric P is 0 to round-off,
        a nearly planar system's Lx and Ly nearly 0).  H's are relative to |H|."""
        q, p = x
        nm = self.n_massive
        qm, pm = q[..., :nm, :], p[..., :nm, :]
        P = jnp.sum(jnp.abs(pm), axis=-2)
        pairs = ((1, 2), (2, 0), (0, 1))
        L = [jnp.sum(jnp.abs(qm[..., b] * pm[..., c]) + jnp.abs(qm[..., c] * pm[..., b]), axis=-1)
             for b, c in pairs]  # fmt: skip
        return {"Px": P[..., 0], "Py": P[..., 1], "Pz": P[..., 2],
                "Lx": L[0], "Ly": L[1], "Lz": L[2]}  # fmt: skip

    def centre_of_mass(self, q):
        """R = Σ m_i q_i / Σ m_i (the massive bodies; test particles weigh nothing)."""
        m = self.masses.astype(q.dtype)
        return jnp.sum(m[:, None] * q, axis=-2) / jnp.sum(m)

    @property
    def checks_domain(self) -> bool:  # type: ignore[override]
        """Whether a run checks every new state (``escape`` given)."""
        return self.checks_escape

    def domain_status(self, x, /):
        """Fails with OUT_OF_DOMAIN where a body is farther from the centre of mass than
        ``escape`` (residual: the largest distance over it); None without ``escape``."""
        if not self.checks_escape:
            return None
        return self.escape_status(x[0])

    def escape_status(self, q):
        """The ``escape`` check at the positions q of one state (``domain_status``; the
        Wisdom–Holman maps call it on their loop's positions)."""
        from mechint.maps import Reason, status

        d = q - self.centre_of_mass(q)[..., None, :]
        ratio = jnp.sqrt(jnp.max(jnp.sum(d * d, axis=-1), axis=-1)) / self.escape.astype(q.dtype)
        return status(ratio <= 1, ratio, Reason.OUT_OF_DOMAIN)

    def close_pair(self, q):
        """(the least distance between two bodies, one of them massive; the pair (i, j))
        at the positions q of one state."""
        nm = self.n_massive
        d = q[..., :, None, :] - q[..., None, :nm, :]
        r2 = jnp.sum(d * d, axis=-1)
        own = np.arange(self.n)[:, None] <= np.arange(nm)[None, :]  # each pair once
        r2 = jnp.where(own, jnp.inf, r2)
        flat = jnp.argmin(r2.reshape(*r2.shape[:-2], -1), axis=-1)
        i, j = jnp.divmod(flat, nm)
        return jnp.sqrt(jnp.min(r2, axis=(-2, -1))), (j, i)

    # --- coordinates (the canonical structure on the flattened state) ----------------
    def coordinates(self, x):
        q, p = x
        lead = q.shape[:-2]
        return jnp.concatenate([q.reshape(*lead, -1), p.reshape(*lead, -1)], axis=-1)

    def from_coordinates(self, z):
        lead = z.shape[:-1]
        half = self.dof
        return z[..., :half].reshape(*lead, self.n, 3), z[..., half:].reshape(*lead, self.n, 3)

    def poisson_tensor(self, x):
        d = self.dof
        I, O = np.eye(d), np.zeros((d, d))
        Jc = jnp.asarray(np.block([[O, I], [-I, O]]))
        return jnp.broadcast_to(Jc, (*x[0].shape[:-2], 2 * d, 2 * d))

    # --- states -----------------------------------------------------------------------
    def validate_state(self, x, name: str = "x0") -> tuple[tuple, bool]:
        if not isinstance(x, tuple | list) or len(x) != 2:
            raise InputError(name, f"expected a pair (q, p), got {type(x).__name__}")
        arrays = []
        for k, label in enumerate(("q", "p")):
            a = real_array(f"{name}[{k}] ({label})", x[k])
            if a.ndim not in (2, 3) or a.shape[-2:] != (self.n, 3):
                raise InputError(f"{name}[{k}] ({label})", f"expected shape ({self.n}, 3) (or "
                                 f"a batch (B, {self.n}, 3)), got {a.shape}",
                                 "one row of x, y, z per body")  # fmt: skip
            if not np.all(np.isfinite(a)):
                raise InputError(f"{name}[{k}] ({label})", "holds a value that is not finite")
            arrays.append(a)
        q, p = arrays
        if q.shape != p.shape:
            raise InputError(name, f"q and p must have one shape, got {q.shape} and {p.shape}")
        nm = self.n_massive
        d = q[..., :, None, :] - q[..., None, :nm, :]
        r2 = np.sum(d * d, axis=-1)
        r2[..., np.arange(nm), np.arange(nm)] = np.inf
        if np.any(r2 == 0):
            where = np.argwhere(r2 == 0)[0]
            i, j = int(where[-2]), int(where[-1])
            raise InputError(f"{name}[0] (q)", f"bodies {j} and {i} are at the same place",
                             "give each body its own position")  # fmt: skip
        return (q, p), q.ndim == 3

    def example_state(self):
        """Bodies 1.. on moderately eccentric, inclined orbits about the centre of mass
        of those before them (a_k = 1.6^(k−1), e = 0.05 k), barycentric."""
        k = np.arange(1, self.n)
        elements = {"a": 1.6 ** (k - 1.0), "e": 0.05 * k, "i": 0.03 * k, "Omega": 0.7 * k,
                    "omega": 1.1 * k, "M": 2.3 * k}  # fmt: skip
        masses = np.asarray(self.masses)
        return state_from_elements(masses, elements, float(self.G), "jacobi")

    def state_from_options(self, given: dict, frame=None):
        fix = f"give {self.n} rows of 3 numbers, separated by ';'"
        q0, p0 = given.get("q0"), given.get("p0")
        if q0 is None or p0 is None:
            raise InputError("q0" if q0 is None else "p0", f"required for {self.name}", fix)
        try:
            q = np.asarray(q0, dtype=np.float64).reshape(self.n, 3)
            p = np.asarray(p0, dtype=np.float64).reshape(self.n, 3)
        except ValueError:
            raise InputError("q0", f"expected {self.n} × 3 numbers", fix) from None
        try:
            return self.validate_state((q, p))[0]
        except InputError as exc:  # named as the options: x0[1] (p) is --p0
            option = "p0" if exc.parameter.startswith("x0[1]") else "q0"
            raise InputError(option, exc.problem, exc.fix) from None

    # --- elements -------------------------------------------------------------------
    @staticmethod
    def from_elements(masses, elements: Mapping, G=1.0, frame: str = "jacobi",
                      encounter=None, names=None, escape=None) -> tuple[NBody, tuple]:  # fmt: skip
        """(the system, its barycentric state) from the orbital elements of bodies
        1..N−1 (``elements``: a mapping of arrays of N−1 values, or of (B, N−1) for a
        batch of states): ``a`` (or ``P``, the period), ``e``, ``i``, ``Omega``,
        ``omega`` (radians) and one of ``M`` (mean anomaly at t = 0), ``lam`` (mean
        longitude M + ω + Ω) or ``tp`` (time of periapsis); e ≥ 1 (hyperbolic: a < 0)
        is accepted for test particles and planets alike.  ``frame``: "jacobi" (each
        orbit about the centre of mass of the bodies before it, μ = G(m_0 + … + m_k))
        or "heliocentric" (about body 0, μ = G(m_0 + m_k)).  Units: those of G (for
        ``GAUSS_G``: AU, days, solar masses).  ``names``, ``encounter``, ``escape``: as
        ``NBody`` takes them."""
        system = NBody(masses, G, encounter, names=names, escape=escape)
        x0 = state_from_elements(np.asarray(system.masses), elements, G, frame)
        return system, x0

    @staticmethod
    def read_bodies(path) -> tuple[NBody, tuple]:
        """(the system, its state) from a JSON bodies file (``read_bodies``; ``mechint run
        --system nbody --bodies FILE``)."""
        return read_bodies(path)

    def to_elements(self, x, frame: str = "jacobi") -> dict:
        """The osculating elements of bodies 1..N−1 of state ``x`` (the inverse of
        ``from_elements``): a, e, i, Omega, omega, M (radians), P (the period, NaN for
        an unbound orbit) and the μ used.  On an equatorial orbit (i = 0) Omega = 0, on
        a circular one (e = 0) omega = 0 and M is the angle from the node: the angles
        the state leaves undefined are set, and their derivatives there are those of
        that convention (at e = 0 exactly, the mean longitude M + omega + Omega's
        gradient lacks the equation of the centre's term 2 d(e sin M), which the state
        leaves smooth: differentiate such functions at e > 0)."""
        if not traced(x):  # shapes, finite numbers, no two bodies at one place (of every
            # state of any leading axes: a batch's trajectory), the arrays passed as given
            if not (isinstance(x, tuple | list) and len(x) == 2):
                raise InputError("x", f"expected a pair (q, p), got {type(x).__name__}")
            flat = tuple(np.reshape(np.asarray(a), (-1, *np.shape(a)[-2:])) for a in x)
            if np.shape(x[0])[-2:] == (self.n, 3):
                self.validate_state(flat, "x")
            else:
                self.validate_state(x, "x")
        return elements_of(self.masses, self.G, tuple(jnp.asarray(a) for a in x), _frame(frame))


# --- the outer solar system ---------------------------------------------------------------
# Hairer, Lubich & Wanner, Geometric Numerical Integration (2nd ed.), §I.2.4, Table 2.1:
# masses relative to the Sun (the Sun's with the inner planets'), heliocentric positions
# (AU) and velocities (AU/day) at 5 September 1994, 0h00 GST; G = k².
_OSS_NAMES = ("Sun", "Jupiter", "Saturn", "Uranus", "Neptune", "Pluto")
_OSS_MASSES = (1.00000597682, 0.000954786104043, 0.000285583733151, 0.0000437273164546,
               0.0000517759138449, 1.0 / 1.3e8)  # fmt: skip
_OSS_Q = ((0.0, 0.0, 0.0), (-3.5023653, -3.8169847, -1.5507963),
          (9.0755314, -3.0458353, -1.6483708), (8.3101420, -16.2901086, -7.2521278),
          (11.4707666, -25.7294829, -10.8169456),
          (-15.5387357, -25.2225594, -3.1902382))  # fmt: skip
_OSS_V = ((0.0, 0.0, 0.0), (0.00565429, -0.00412490, -0.00190589),
          (0.00168318, 0.00483525, 0.00192462), (0.00354178, 0.00137102, 0.00055029),
          (0.00288930, 0.00114527, 0.00039677), (0.00276725, -0.00170702, -0.00136504))  # fmt: skip


def outer_solar_system(encounter=None) -> tuple[NBody, tuple[np.ndarray, np.ndarray]]:
    """(the system, its state): the Sun (with the inner planets' mass), Jupiter, Saturn,
    Uranus, Neptune and Pluto (Hairer, Lubich & Wanner, *Geometric Numerical
    Integration*, §I.2.4): AU, days and solar masses, G = k² = 2.95912208286e-4.  The
    book's heliocentric state, moved to the barycentric frame (the same motion: P = 0,
    the centre of mass at the origin).  ``BODIES`` names them."""
    m = np.array(_OSS_MASSES)
    q, v = np.array(_OSS_Q), np.array(_OSS_V)
    q = q - np.sum(m[:, None] * q, axis=0) / np.sum(m)
    v = v - np.sum(m[:, None] * v, axis=0) / np.sum(m)
    return NBody(m, GAUSS_G, encounter, names=_OSS_NAMES), (q, m[:, None] * v)


BODIES = {"outer-solar-system": _OSS_NAMES}
# named systems with their states (``mechint run --system nbody --preset NAME``)
NBody.presets = {"outer-solar-system": outer_solar_system}


def _names(names, n: int) -> tuple[str, ...] | None:
    """The bodies' names checked: n distinct, non-empty strings (or None)."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(x, str) and x for x in names):
        raise InputError("names", "expected a list of non-empty strings, one per body")
    out = tuple(names)
    if len(out) != n:
        raise InputError("names", f"expected {n} names (one per body), got {len(out)}")
    if len(set(out)) != n:
        raise InputError("names", "the names must differ")
    return out


# the elements, the files and the observables, each in a module of its own (they read an
# NBody and its sums)
from mechint.systems.nbody_files import read_bodies, read_bodies_data  # noqa: E402
from mechint.systems.nbody_observables import (  # noqa: E402
    AU_PER_DAY_IN_M_PER_S,
    radial_velocity,
    transits,
)
from mechint.systems.orbital_elements import (  # noqa: E402
    ELEMENT_KEYS,
    _frame,
    elements_of,
    elements_state,
    from_relative,
    interior_masses,
    read_elements,
    state_from_elements,
    to_relative,
)

__all__ = ["AU_PER_DAY_IN_M_PER_S", "BODIES", "ELEMENT_KEYS", "GAUSS_G", "NBody",
           "elements_of", "elements_state", "from_relative", "interior_masses",
           "outer_solar_system", "radial_velocity", "read_bodies", "read_bodies_data",
           "read_elements", "state_from_elements", "to_relative", "transits"]  # fmt: skip
