r"""Tangent vectors carried by the exact tangent map of a step: Lyapunov exponents and
MEGNO for any map.

``Tangent(base, vectors=k)`` advances (x, τ): x by ``base``'s step Φ_h and k tangent
vectors by its derivative, δx ↦ DΦ_h(x) δx (``jax.linearize`` of the step: the
variational equations of the *map*, to round-off, as REBOUND's variational equations
of WHFast are).  After each step the k vectors are orthonormalised by modified
Gram–Schmidt, DΦ_h V = Q R (Benettin, Galgani, Giorgilli and Strelcyn, Meccanica 15
(1980) 9), and the logarithms of R's diagonal are summed:

    Σ_i = Σ_j log R_ii(j),   λ_i = Σ_i / (t − t_0)

are the first k Lyapunov exponents at the run's end (``diagnostics.lyapunov``).  The
first vector's growth per step, log R_11(j) = log |δ_j|/|δ_{j−1}|, gives the mean
exponential growth factor of nearby orbits (MEGNO; Cincotta and Simó, A&AS 147 (2000)
205) in its discrete form for maps, with the midpoint weight of each step:

    Y_n = (2/n) Σ_{j=1}^{n} (j − ½) log R_11(j),   ⟨Y⟩_n = (1/n) Σ_{j=1}^{n} Y_j,

(the step count n is the time in units of h).  ⟨Y⟩ → 2 on quasi-periodic orbits (|δ|
grows linearly), → 0 on stable periodic ones, and grows like λ t / 2 on chaotic ones
(``diagnostics.megno``).

The carried part τ is one flat array per member (``Trajectory.tangent``, ``tangent_entry``
in files): [k, n, S, ΣY, Σ_1..Σ_k, V (k rows of the state's d entries)], with S =
Σ (j − ½) log R_11(j) and ΣY = Σ Y_j.  The vectors start as a fixed orthonormal set
(a QR of a seeded Gaussian matrix, the same for every member; ``seed`` picks another).  For a map
with coordinates of its own (``Integrator.own_coordinates``: the Wisdom–Holman maps)
the vectors live in those coordinates: the loop's tangent map, whose exponents are
those of the map (a fixed change of coordinates changes no exponent).  The step count
n is a real number of the run's type: exact to 2^53 steps in float64, 2^24 in float32.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from mechint import _validate
from mechint.errors import InputError
from mechint.maps import Integrator, Reason, StepStatus, Wrapper, combine, status

# The entries before the vectors' logarithms: k, n, S, ΣY.
HEAD = 4


def state_size(x) -> int:
    """The number of real entries of one (unbatched) state."""
    return int(sum(np.size(a) for a in jax.tree.leaves(x)))


def initial_vectors(k: int, d: int, seed: int = 0) -> np.ndarray:
    """k orthonormal vectors of R^d (rows): the Q of a seeded Gaussian matrix's QR, so that
    no vector lies in a special subspace (a symmetry's orbit, one body's coordinates)."""
    a = np.random.default_rng([20261206, seed]).standard_normal((d, k))
    q, r = np.linalg.qr(a)
    return (q * np.sign(np.diagonal(r))).T


def orthonormalize(V):
    """Modified Gram–Schmidt on the rows of V (k, d): (Q, diag R) with V = R Q row-wise."""
    rows, diag = [], []
    for i in range(V.shape[0]):
        v = V[i]
        for q in rows:
            v = v - jnp.dot(q, v) * q
        r = jnp.sqrt(jnp.dot(v, v))
        rows.append(v / r)
        diag.append(r)
    return jnp.stack(rows), jnp.stack(diag)


@final
@dataclasses.dataclass(frozen=True)
class Tangent(Wrapper):
    """``base``'s step with ``vectors`` tangent vectors carried along by its exact tangent
    map and renormalised each step (see the module docstring): the Lyapunov exponents
    (``diagnostics.lyapunov``) and MEGNO (``diagnostics.megno``) of any map.  ``seed``
    picks the first vectors (``initial_vectors``): a finite run's MEGNO depends on them
    (on a regular orbit by O(1/t); compare runs of several seeds to see by how much).  The state
    is (x, tangent), ``tangent`` one flat array per member (``Trajectory.tangent``).  It
    does not change x: a run's states are ``base``'s, to the last bit where the step
    compiles the same inside the tangent program (Störmer–Verlet on Hénon–Heiles,
    2·10⁵ steps), to round-off where XLA fuses it differently (the Wisdom–Holman maps'
    Kepler solve: 1 ulp at one step of 1193 on the outer solar system, then the orbit's
    own growth of it, as between a batch and a single run)."""

    base: Integrator
    vectors: int = 1
    seed: int = 0

    name: ClassVar[str] = "tangent"
    extra: ClassVar[str] = "tangent"
    recorded: ClassVar[bool] = False

    def __post_init__(self):
        if not isinstance(self.base, Integrator):
            raise InputError("base", f"{self.base!r} is not a mechint integrator")
        if isinstance(self.base, Tangent):
            raise InputError("base", "is a Tangent already", "one Tangent with vectors=k")
        # 1 for the largest exponent and MEGNO, the state's dimension for the spectrum
        object.__setattr__(self, "vectors", _validate.count("vectors", self.vectors))
        object.__setattr__(self, "seed", _validate.count("seed", self.seed, minimum=0))
        self.settle_traits()

    @property
    def own_coordinates(self) -> bool:  # type: ignore[override]
        """The base map's: the loop carries its coordinates and the vectors with them."""
        return self.base.own_coordinates

    @property
    def batch_branches(self) -> bool:
        """Where the base map's step or its derivative branches for the whole batch."""
        return self.base.batch_branches or self.base.tangent_batch_branches

    def start(self, system, x0, given, batched: bool, batch: int) -> Any:
        """The tangent part at the start: nothing summed, the fixed orthonormal vectors
        (``initial_vectors``)."""
        one = jax.tree.map(lambda a: a[0], x0) if batched else x0
        d, k = state_size(one), self.vectors
        if k > d:
            raise InputError("vectors", f"{k} tangent vectors for a state of dimension {d}",
                             f"at most {d} (the whole spectrum)")  # fmt: skip
        if given is not None:
            raise InputError("tangent", "a Tangent run starts from its own vectors",
                             "leave tangent out")  # fmt: skip
        real = jnp.result_type(jax.tree.leaves(x0)[0])
        size = HEAD + k + k * d
        head = np.array([k, 0.0, 0.0, 0.0] + [0.0] * k)
        part = np.concatenate([head, initial_vectors(k, d, self.seed).ravel()])
        if batched:
            part = np.broadcast_to(part, (batch, size))
        if _validate.traced(x0):
            return jnp.asarray(part, dtype=real)
        return np.array(part, dtype=real)

    def _advance(self, step, system, x, h) -> tuple[Any, StepStatus]:
        z, part = x
        k = self.vectors
        flat, unravel = ravel_pytree(z)
        d = flat.shape[0]

        def flat_step(f):
            new, st = step(system, unravel(f), h)
            return ravel_pytree(new)[0], st

        new_flat, tangent_map, st = jax.linearize(flat_step, flat, has_aux=True)
        V = part[HEAD + k :].reshape(k, d)
        Q, r = orthonormalize(jax.vmap(tangent_map)(V))
        j = part[1] + 1.0  # this step's number
        log_r = jnp.log(r)
        S = part[2] + (j - 0.5) * log_r[0]
        sum_y = part[3] + 2.0 * S / j
        head = jnp.stack([part[0], j, S, sum_y])
        new_part = jnp.concatenate([head, part[HEAD : HEAD + k] + log_r, Q.ravel()])
        # a tangent map that is not finite (the step's derivative overflowed, or the
        # map is singular there) fails the step: no exponent from a lost direction
        ok = jnp.all(jnp.isfinite(new_part)) & jnp.all(r > 0)
        mine = status(ok, jnp.where(ok, 0.0, jnp.inf).astype(flat.dtype), Reason.NON_FINITE)
        return (unravel(new_flat), new_part), combine([st, mine])

    def step(self, system, x, h) -> tuple[Any, StepStatus]:
        return self._advance(self.base.step, system, x, h)

    def loop_step(self, system, z, h) -> tuple[Any, StepStatus]:
        return self._advance(self.base.loop_step, system, z, h)

    def enter(self, system, x, h):
        return (self.base.enter(system, x[0], h), x[1])

    def leave(self, system, z, h):
        return (self.base.leave(system, z[0], h), z[1])
