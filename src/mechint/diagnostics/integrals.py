r"""Integrals of a map (or a flow) discovered from its orbits: the "HK basis" method.

Along an orbit x_0, x_1, …, x_N of a map, a relation Σ_j c_j φ_j(x_k) = 0 that holds at
every point, for given functions φ_1..φ_m (the basis, with the constant 1 among them),
is a level set of integrals: its coefficients c, normalised, are functions of the orbit
alone (Hirota and Kimura; Petrera, Pfadler and Suris, Exp. Math. 18 (2009) 223, and
Regul. Chaotic Dyn. 16 (2011) 245).  ``find_integrals`` builds the matrix [φ_j(x_k)] on
each orbit, scales its columns to unit norm, and takes its null space by the SVD: the
singular values below ``rtol`` · σ_max (by default 1e-11, about 10⁵ times the round-off
of the evaluated basis) are the candidate null space, and the ratio between the smallest
singular value kept outside it and the largest inside (the gap) says how clear that
decision is.  The null vectors, scaled back, are brought to reduced row echelon form
(pivots chosen column by column in the basis' order, so a known integral such as
m1² + … reads as one), and every relation is checked where it was not fitted: on the
orbit's continuation past the points used, and by finding the coefficients again from
a later stretch of the orbit (an integral is the same function there).

On a continuous flow (``integrator=None``) the orbit is the system's exact solution or
SciPy's DOP853 at rtol = atol = 1e-13 at the times k h, and the same search finds the
system's own integrals.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechint import _validate, resources
from mechint.diagnostics.comparison import dop853_path
from mechint.errors import InputError
from mechint.integrators.registry import relabel
from mechint.maps import Integrator
from mechint.systems.base import ExactSolution, PoissonSystem, System

__all__ = ["Integrals", "find_integrals", "monomials"]

# most basis functions a search takes (the SVD of a (4m × m) matrix per orbit)
_MOST_BASIS = 2000
# steps an orbit may take ((3 × points − 1) × stride): the default spans about 6000
_MOST_STEPS = 10**7


@dataclasses.dataclass(frozen=True)
class Integrals:
    """What ``find_integrals`` found, with its evidence.

    ``names``: the basis; ``dimension``: the dimension of the verified null space (the
    least over the orbits, ``dimensions`` per orbit; ``found``: the candidates below
    ``rtol`` before the checks); ``singular_values``: per orbit, descending, of the
    column-scaled matrix, relative to the largest; ``gap``: per orbit, the smallest
    singular value outside the verified null space over the largest inside (the latter
    floored at eps σ_max, so at most about 1/eps; NaN for dimension 0);
    ``coefficients``: per orbit, the verified relations (dimension × basis size) in
    reduced row echelon form, taken in the column-scaled coordinates (``scales``: the
    column norms) so that it does not depend on the state's size, each pivot
    coefficient 1 (``pivots``: their leading basis functions); ``residual``: per orbit,
    the largest |Σ c_j φ_j| / Σ |c_j φ_j| on the orbit's continuation past the points
    used; ``recomputed``: per orbit, the largest change of a term (c_j times its column
    norm, relative to the relation's largest term) when the search is redone from a
    later stretch of the orbit (both for the last candidate space tried);
    ``verified``: per orbit, every candidate passed both checks (residual ≤ 100 rtol,
    recomputed ≤ 1000 rtol); where
    some did not, the candidate space is shrunk from its largest singular value until
    the rest pass, and the dropped ones are near-integrals; ``decision``: the rank
    decision in words."""

    names: tuple[str, ...]
    dimension: int
    dimensions: tuple[int, ...]
    found: tuple[int, ...]
    singular_values: np.ndarray
    gap: np.ndarray
    coefficients: tuple[np.ndarray, ...]
    pivots: tuple[tuple[int, ...], ...]
    verified: tuple[bool, ...]
    residual: np.ndarray
    recomputed: np.ndarray
    scales: tuple[np.ndarray, ...]
    rtol: float
    points: int
    decision: str

    def expressions(self, orbit: int = 0, digits: int = 12) -> list[str]:
        """The relations of one orbit as text, ``m1^2 - 0.5*m3^2 + 0.2 = 0``."""
        out = []
        for row in self.coefficients[orbit]:
            terms = []
            size = np.abs(row) * self.scales[orbit]  # each term's size along the orbit
            for c, name, t in zip(row, self.names, size, strict=True):
                if t <= 10.0 ** (-digits) * np.max(size):
                    continue
                value = f"{abs(c):.{digits}g}"
                term = value if name == "1" else (name if value == "1" else f"{value}*{name}")
                terms.append(("-" if c < 0 else "+", term))
            text = " ".join(f"{s} {t}" for s, t in terms).lstrip("+ ")
            out.append((text if not text.startswith("- ") else "-" + text[2:]) + " = 0")
        return out

    def __repr__(self) -> str:
        """One line: the dimension, the basis size, the checks and the least gap."""
        least = np.nanmin(np.asarray(self.gap, dtype=float)) if self.dimension else np.nan
        gap = f", least gap {least:.3g}" if np.isfinite(least) else ""
        return (f"Integrals(dimension {self.dimension} in {len(self.names)} functions, "
                f"{len(self.dimensions)} orbit(s), verified {list(self.verified)}{gap}; "
                ".table() for the relations)")  # fmt: skip

    def table(self) -> str:
        """A text table: per orbit the dimension, the gap, the checks and the relations."""
        lines = [self.decision]
        for i, d in enumerate(self.dimensions):
            lines.append(f"orbit {i}: dimension {d}, gap {self.gap[i]:.3g}, continuation "
                         f"residual {self.residual[i]:.2e}, found anew from a later point "
                         f"{self.recomputed[i]:.2e}")  # fmt: skip
            lines.extend(f"  {e}" for e in self.expressions(i))
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "names": list(self.names),
            "dimension": self.dimension,
            "dimensions": list(self.dimensions),
            "found": list(self.found),
            "singular_values": np.asarray(self.singular_values).tolist(),
            "gap": [float(g) for g in self.gap],
            "coefficients": [np.asarray(c).tolist() for c in self.coefficients],
            "pivots": [list(p) for p in self.pivots],
            "verified": list(self.verified),
            "relations": [self.expressions(i) for i in range(len(self.dimensions))],
            "residual": [float(r) for r in self.residual],
            "recomputed": [float(r) for r in self.recomputed],
            "rtol": self.rtol,
            "points": self.points,
            "decision": self.decision,
        }


def _coordinate_names(system: System, x) -> list[str]:
    """Names of the coordinates z (``q1, p1``, ``m1, gamma1``; ``z1..`` otherwise)."""
    z = np.asarray(_coordinates(system, x))
    fields = [name for name, _dims in system.state_fields]
    leaves = jax.tree.leaves(x)
    if len(fields) == len(leaves) and sum(np.size(a) for a in leaves) == z.shape[-1]:
        return [f"{name}{i + 1}" for name, a in zip(fields, leaves, strict=True)
                for i in range(np.size(a))]  # fmt: skip
    return [f"z{i + 1}" for i in range(z.shape[-1])]


def _coordinates(system: System, x):
    if isinstance(system, PoissonSystem):
        return system.coordinates(x)
    return jnp.concatenate([jnp.ravel(a) for a in jax.tree.leaves(x)])


def monomials(system: System, degree: int, x=None) -> dict[str, Callable]:
    """Every monomial of total degree ≤ ``degree`` in the system's coordinates (the
    constant ``1`` included), by name: ``{"1": …, "m1": …, "m1^2": …, "m1*m2": …}``,
    each a function of one state.  ``x``: a state to name the coordinates by (the
    system's example state by default)."""
    degree = _validate.count("degree", degree, 0)
    x, batched = system.validate_state(system.example_state() if x is None else x, "x")
    x = jax.tree.map(lambda a: jnp.asarray(a[0] if batched else a), x)
    names = _coordinate_names(system, x)
    n = len(names)
    size = math.comb(n + degree, degree)
    if size > _MOST_BASIS:
        raise InputError("degree", f"{degree} gives {size} monomials in {n} coordinates, more "
                         f"than the {_MOST_BASIS} a search takes", "lower the degree")  # fmt: skip
    basis: dict[str, Callable] = {}
    for d in range(degree, -1, -1):
        for combo in itertools.combinations_with_replacement(range(n), d):
            powers = [combo.count(i) for i in range(n)]
            name = "*".join(names[i] + (f"^{p}" if p > 1 else "") for i, p in
                            enumerate(powers) if p) or "1"  # fmt: skip
            basis[name] = _monomial(system, tuple(powers))
    return basis


def _monomial(system, powers: tuple[int, ...]) -> Callable:
    def value(x):
        z = _coordinates(system, x)
        return jnp.prod(z ** jnp.asarray(powers, dtype=z.dtype))

    return value


def _basis(system: System, basis, x0) -> tuple[tuple[str, ...], Callable]:
    """The names and one function x ↦ [φ_j(x)], every φ_j checked to be a scalar."""
    if not isinstance(basis, Mapping) or not basis:
        raise InputError("basis", f"expected a non-empty dict name → function, got {basis!r}",
                         "e.g. mi.diagnostics.monomials(system, 2)")  # fmt: skip
    names = tuple(str(k) for k in basis)
    functions = list(basis.values())
    for name, fn in zip(names, functions, strict=True):
        if not callable(fn):
            raise InputError(f"basis[{name!r}]", f"is not a function: {fn!r}")
        try:
            out = jax.eval_shape(fn, x0)
        except Exception as exc:  # a user's function: any failure is its own
            raise InputError(f"basis[{name!r}]", f"cannot be evaluated on one state: "
                             f"{type(exc).__name__}: {exc}", "write it with jax.numpy, "
                             "taking one state") from None  # fmt: skip
        if getattr(out, "shape", None) != ():
            raise InputError(f"basis[{name!r}]", "must return a scalar, returned shape "
                             f"{getattr(out, 'shape', type(out).__name__)}",
                             "sum or pick a component")  # fmt: skip

    def row(x):
        return jnp.stack([jnp.asarray(fn(x), dtype=jnp.float64) for fn in functions])

    return names, row


def _orbits(system, integrator, x0, h, samples: int, stride: int, batched: bool):
    """The states x_0, x_stride, … (``samples`` of them) of each orbit, batch first: a
    map's, or the flow's."""
    if integrator is not None:
        from mechint.simulate import simulate  # the driver imports the diagnostics

        traj = simulate(system, integrator, x0, h, (samples - 1) * stride, stride)
        x = traj.x
        return x if batched else jax.tree.map(lambda a: a[None], x)
    t = h * stride * np.arange(samples)
    starts = [jax.tree.map(lambda a, i=i: np.asarray(a)[i], x0) for i in
              range(jax.tree.leaves(x0)[0].shape[0])] if batched else [x0]  # fmt: skip
    paths = [_flow(system, x, t) for x in starts]
    return jax.tree.map(lambda *a: np.stack(a), *paths)


def _flow(system, x0, t):
    if isinstance(system, ExactSolution):
        return system.exact_solution(x0, t)
    return relabel("integrator", dop853_path, system, x0, t)


def _svd(values: np.ndarray):
    """(singular values relative to the largest, all m right singular vectors as rows,
    smallest last, in the column-scaled coordinates, the column norms) of ``values``
    (points × basis), its columns scaled to unit norm."""
    norms = np.linalg.norm(values, axis=0)
    norms = np.where(norms > 0, norms, 1.0)
    _, s, vt = np.linalg.svd(values / norms, full_matrices=False)
    s_full = np.zeros(values.shape[1])
    s_full[: s.size] = s
    rel = s_full / s_full[0] if s_full[0] > 0 else s_full
    return rel, vt, norms


def _relations(scaled: np.ndarray, norms: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """The relations of null vectors given in column-scaled coordinates: reduced row
    echelon form there (so the pivot choice does not depend on the state's size), then
    in the basis' own coefficients, each row's pivot coefficient 1."""
    echelon, pivots = _echelon(scaled)
    coefficients = echelon / norms
    return coefficients / coefficients[np.arange(len(pivots)), list(pivots)][:, None], pivots


def _echelon(rows: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """Reduced row echelon form of the null vectors (Gauss–Jordan with partial pivoting,
    the pivot columns taken left to right where a row is not negligible)."""
    a = np.array(rows, dtype=float)
    pivots: list[int] = []
    r = 0
    for col in range(a.shape[1]):
        if r == a.shape[0]:
            break
        top = r + int(np.argmax(np.abs(a[r:, col])))
        if abs(a[top, col]) <= 1e-8 * np.max(np.abs(a[r:])):
            continue
        a[[r, top]] = a[[top, r]]
        a[r] /= a[r, col]
        for i in range(a.shape[0]):
            if i != r:
                a[i] -= a[i, col] * a[r]
        pivots.append(col)
        r += 1
    return a, tuple(pivots)


def find_integrals(system: System, integrator: Integrator | None, x0, h, basis, *,
                   points: int | None = None, stride: int | None = None,
                   rtol: float = 1e-11) -> Integrals:  # fmt: skip
    """The relations Σ_j c_j φ_j = 0 that hold along orbits of ``integrator`` (a map; None:
    the continuous flow) with step ``h`` from ``x0`` (one state or a batch: one orbit
    each), for the functions ``basis`` (a dict name → function of one state, e.g.
    ``monomials(system, 2)``; put the constant ``1`` in it to find level sets).

    ``points``: the orbit points used (default 3 × the basis size + 20, at least the
    basis size + 1), every ``stride`` steps (default: the orbit spans about 2000
    steps, so that a quantity a map keeps only to O(h^p) has drifted, and a flow's
    orbit has gone round its torus); as many points
    again check the relations on the continuation, and as many again find them anew.
    An orbit of more than 10⁷ steps ((3 × points − 1) × stride), or samples beyond the
    available memory, is refused (``InputError`` naming points, or stride where given)
    before any step.
    ``rtol``: singular values at most ``rtol`` times the largest are the null space.
    A relation that fails its checks is a near-integral, not an integral: the dimension
    counts the verified ones.  Returns
    ``Integrals``; an orbit whose step fails raises ``StepFailure``."""
    rtol = float(rtol)
    if not 0.0 < rtol < 1.0:
        raise InputError("rtol", f"must lie in (0, 1), got {rtol!r}", "e.g. 1e-11")
    h = _validate.step_size(h)
    x0, batched = system.validate_state(x0, "x0")
    x0 = jax.tree.map(jnp.asarray, x0)
    one = jax.tree.map(lambda a: a[0], x0) if batched else x0
    names, row = _basis(system, basis, one)
    m = len(names)
    if m > _MOST_BASIS:
        raise InputError("basis", f"has {m} functions, more than the {_MOST_BASIS} a search "
                         "takes", "use fewer functions")  # fmt: skip
    if points is None:
        points = 3 * m + 20
    points = _validate.count("points", points, 1)
    if points < m + 1:
        raise InputError("points", f"{points} orbit points cannot decide a null space among "
                         f"{m} basis functions", f"give at least {m + 1} (3 × {m} + 20 by "
                         "default)")  # fmt: skip
    given = stride is not None
    stride = _validate.count("stride", stride, 1) if given else max(1, -(-2000 // points))
    _require_size(x0, batched, m, points, stride, given)
    # the points used, as many again to find the relations anew (an integral is the same
    # function there), as many again to check them on the continuation
    orbit = _orbits(system, integrator, x0, h, 3 * points, stride, batched)
    rows = np.asarray(jax.jit(jax.vmap(jax.vmap(row)))(orbit))  # orbits × points × m
    if not np.all(np.isfinite(rows)):
        raise InputError("basis", "is not finite at some orbit point", "check the basis "
                         "functions' domains (a division, a logarithm)")  # fmt: skip
    orbits = [_orbit_relations(values, points, m, rtol) for values in rows]
    dims = tuple(o["found"] for o in orbits)
    verified = tuple(o["dimension"] == o["found"] for o in orbits)
    decision = _decision(orbits, rtol, points, m)
    return Integrals(names=names, dimension=min(o["dimension"] for o in orbits),
                     dimensions=tuple(o["dimension"] for o in orbits), found=dims,
                     singular_values=np.asarray([o["singular_values"] for o in orbits]),
                     gap=np.asarray([o["gap"] for o in orbits]),
                     coefficients=tuple(o["coefficients"] for o in orbits),
                     pivots=tuple(o["pivots"] for o in orbits), verified=verified,
                     residual=np.asarray([o["residual"] for o in orbits]),
                     recomputed=np.asarray([o["recomputed"] for o in orbits]),
                     scales=tuple(o["scales"] for o in orbits), rtol=rtol,
                     points=points, decision=decision)  # fmt: skip


def _require_size(x0, batched: bool, m: int, points: int, stride: int, given: bool) -> None:
    """InputError naming points (or stride, where given) before any step when an orbit
    of 3 × points samples every stride steps would take more than ``_MOST_STEPS`` steps,
    or its samples and their basis values would not fit in memory."""
    steps = (3 * points - 1) * stride
    if steps > _MOST_STEPS:
        name = "stride" if given and stride > 1 else "points"
        raise InputError(name, f"3 × {points:,} points, {stride:,} step(s) apart, take "
                         f"{steps:,} steps an orbit, more than the {_MOST_STEPS:,} a search "
                         "takes", "fewer points or a smaller stride (by default the orbit "
                         "spans about 6000 steps)")  # fmt: skip
    members = jax.tree.leaves(x0)[0].shape[0] if batched else 1
    state = sum(int(np.size(a)) for a in jax.tree.leaves(x0)) // members
    # each sample: its state (and time) and its basis values, held twice (scaled copies)
    resources.require_buffer("points", 2.0 * members * 3 * points * (state + 1 + m),
                             f"{members} orbit(s) × {3 * points:,} samples × {m} basis "
                             "functions", "fewer points")  # fmt: skip


def _orbit_relations(values: np.ndarray, points: int, m: int, rtol: float) -> dict:
    """One orbit: the candidate null space (singular values ≤ rtol σ_max of the first
    stretch), shrunk from its largest singular value down until its relations pass both
    checks (the continuation, the third stretch; found anew, from the second, compared
    in the first stretch's column scale), so that a near-integral among exact ones is
    dropped and the exact ones kept."""
    rel, vectors, norms = _svd(values[:points])
    rel2, vectors2, norms2 = _svd(values[points : 2 * points])
    found = int(np.sum(rel <= rtol))
    rest = values[2 * points :]
    floor = np.finfo(float).eps * rel[0]
    out = {"found": found, "singular_values": rel, "dimension": 0, "gap": np.nan,
           "coefficients": np.zeros((0, m)), "pivots": (), "residual": 0.0,
           "recomputed": 0.0, "scales": norms}  # fmt: skip
    for d in range(found, 0, -1):
        coefficients, pivots = _relations(vectors[m - d :], norms)
        terms = np.abs(rest[:, None, :] * coefficients[None, :, :]).sum(axis=-1)
        tiny = np.finfo(float).tiny
        residual = float(np.max(np.abs(rest @ coefficients.T) / np.maximum(terms, tiny)))
        again = np.inf
        if int(np.sum(rel2 <= rtol)) >= d:
            coefficients2, pivots2 = _relations(vectors2[m - d :], norms2)
            if pivots2 == pivots:  # each row's change against its largest term
                size = np.max(np.abs(coefficients) * norms, axis=1, keepdims=True)
                again = float(np.max(np.abs(coefficients2 - coefficients) * norms / size))
        out.update(residual=residual, recomputed=again)
        if residual <= 100 * rtol and again <= 1e3 * rtol:
            gap = (rel[m - d - 1] if d < m else 0.0) / max(rel[m - d], floor)
            out.update(dimension=d, coefficients=coefficients, pivots=pivots, gap=gap)
            break
    return out


def _decision(orbits, rtol, points, m) -> str:
    lead = (f"{points} points per orbit, {m} basis functions (columns scaled to unit norm); "
            f"null space: singular values ≤ {rtol:.0e} σ_max")  # fmt: skip
    found = [o["found"] for o in orbits]
    dims = [o["dimension"] for o in orbits]
    if max(found) == 0:
        smallest = min(float(o["singular_values"][-1]) for o in orbits)
        return (f"{lead}: no integral in this basis (the smallest singular value is "
                f"{smallest:.2e} σ_max, above the threshold)")  # fmt: skip
    dropped = "" if dims == found else (
        f"; of the {found} candidates, {[f - d for f, d in zip(found, dims, strict=True)]} "
        "failed their check on the continuation or anew from a later stretch: "
        "near-integrals of the map (kept to O(h^p)), or relations such a near-integral "
        "leaves ill-determined; not counted")  # fmt: skip
    if len(set(dims)) > 1:
        return f"{lead}: the orbits disagree (dimensions {dims}){dropped}"
    if dims[0] == 0:
        return f"{lead}: no verified integral in this basis{dropped}"
    least = min(float(o["gap"]) for o in orbits)
    clear = "a clear gap" if least >= 1e6 else "NO clear gap (below 1e6): treat with care"
    return (f"{lead}: dimension {dims[0]} on every orbit, {clear} (least gap {least:.3g})"
            f"{dropped}")  # fmt: skip
