r"""Named constrained systems in Cartesian coordinates (``systems.Constrained``).

``PendulumChain(masses, lengths, gravity, dim)``: n point masses, the first joined to
the origin by a massless rod of length l_1, each next one to the one before by a rod of
length l_i, in the plane (dim = 2) or in space (dim = 3), the last coordinate vertical
(up):

    q = (x_1, …, x_n) ∈ R^(n·dim),   H = Σ |p_i|² / (2 m_i) + γ Σ m_i z_i,
    g_i(q) = |x_i − x_{i−1}|² − l_i² = 0   (x_0 = 0).

n = 1, dim = 3 is the spherical pendulum, n = 2, dim = 2 the double pendulum.  The
masses, the gravity γ and the lengths are parameters (pytree leaves): one compiled run
serves every value, and ``jax.grad`` differentiates through a run with respect to them.
In space the momentum about the vertical, ``Lz`` = Σ (x_i p_{y,i} − y_i p_{x,i}), is
declared: gravity and the rods keep it.

``hanging_state(system, angles, rates, azimuths, azimuth_rates)`` places the chain by
each rod's angle from the downward vertical (and, in space, its azimuth) with the
angular rates given (the CLI's state options of ``pendulum-chain``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, final

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from mechint._pytree import register_pytree
from mechint._validate import positive_vector, real_array, traced
from mechint.errors import InputError
from mechint.systems.base import Parameter, StateOption
from mechint.systems.canonical import SeparableHamiltonian
from mechint.systems.constrained import Constrained


def _kinetic(p, params):
    m = params["masses"]
    dim = p.shape[0] // m.shape[0]
    return 0.5 * jnp.sum(p.reshape(-1, dim) ** 2 / m[:, None])


def _potential(q, params):
    m = params["masses"]
    dim = q.shape[0] // m.shape[0]
    return params["gravity"] * jnp.sum(m * q.reshape(-1, dim)[:, -1])


def _rods(q, params):
    lengths = params["lengths"]
    x = q.reshape(lengths.shape[0], -1)
    links = x - jnp.concatenate([jnp.zeros_like(x[:1]), x[:-1]])
    return jnp.sum(links * links, axis=1) - lengths**2


def _vertical_momentum(q, p):
    x, y = q.reshape(-1, 3), p.reshape(-1, 3)
    return jnp.sum(x[:, 0] * y[:, 1] - x[:, 1] * y[:, 0])


def _vector(name: str, value):
    """A vector of numbers, or of traced ones (a list holding tracers is stacked)."""
    if traced(value):
        return jnp.atleast_1d(jnp.asarray(value, dtype=float))
    return np.atleast_1d(real_array(name, value))


# the constraints' Jacobian is a dense (rods × 3·rods) matrix
MOST_RODS = 1000


def _gravity(value):
    """One finite number >= 0 (or a traced one)."""
    if traced(value):
        return value
    arr = real_array("gravity", value)
    if arr.size != 1 or not (np.isfinite(arr.reshape(-1)[0]) and arr.reshape(-1)[0] >= 0):
        raise InputError("gravity", f"must be one finite number >= 0, got {value!r}")
    return np.float64(arr.reshape(-1)[0])


def _dim(values) -> dict:
    dim = np.asarray(values).reshape(-1)
    if dim.shape != (1,) or dim[0] not in (2, 3):
        raise InputError("dim", f"must be 2 (a plane) or 3 (space), got {values!r}")
    return {"dim": int(dim[0])}


@final
@register_pytree(data=("system", "params"), meta=("g", "m", "momenta", "dof", "dim"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class PendulumChain(Constrained):
    """Point masses on rods hanging from the origin (the module docstring); ``lengths``
    default to 1 each."""

    dim: int = 3

    name: ClassVar[str] = "pendulum-chain"
    full_rank: ClassVar[bool] = True  # rod i's row is the first to reach bob i
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("masses", "the bobs' masses m_i > 0, one per rod (default 1)"),
        Parameter("lengths", "the rods' lengths l_i > 0 (default 1 each)"),
        Parameter("gravity", "gravity along -z (the last coordinate), >= 0 (default 1)"),
        Parameter("dim", "2 (the plane) or 3 (space, default)", _dim),
    )
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("angles", "each rod's angle from the downward vertical (radians)"),
        StateOption("rates", "pendulum-chain: their rates (default 0)"),
        StateOption("azimuths", "pendulum-chain, dim 3: each rod's azimuth about the vertical"),
        StateOption("azimuth_rates", "pendulum-chain, dim 3: their rates (default 0)"),
    )

    def __init__(self, masses=(1.0,), lengths=None, gravity: ArrayLike = 1.0, dim: int = 3):
        dim = _dim(dim)["dim"]
        m = positive_vector("masses", _vector("masses", masses), None)
        n = int(m.shape[0])
        if n > MOST_RODS:
            raise InputError("masses", f"at most {MOST_RODS} rods, got {n}",
                             "the constraints' Jacobian is dense: run a shorter chain")  # fmt: skip
        lengths = np.ones(n) if lengths is None else _vector("lengths", lengths)
        lengths = positive_vector("lengths", lengths, n)
        gravity = _gravity(gravity)
        base = SeparableHamiltonian(
            _kinetic, _potential, dof=n * dim, params={"masses": m, "gravity": gravity}
        )
        object.__setattr__(self, "dim", dim)
        momenta = {"Lz": _vertical_momentum} if dim == 3 else None
        super().__init__(base, _rods, params={"lengths": lengths}, momenta=momenta)

    def __repr__(self) -> str:
        n = self.dof // self.dim
        return f"PendulumChain({n} rod{'s' * (n > 1)}, dim={self.dim})"

    def parameters(self) -> dict:
        params = self.system.params  # type: ignore[attr-defined]
        return {
            "masses": [float(v) for v in np.asarray(params["masses"])],
            "lengths": [float(v) for v in np.asarray(self.params["lengths"])],  # type: ignore[index]
            "gravity": float(np.asarray(params["gravity"])),
            "dim": self.dim,
        }

    def dimension_labels(self) -> dict[str, list[str]]:
        axes = "xyz"[: self.dim] if self.dim == 3 else "xz"
        n = self.dof // self.dim
        return {"dof": [f"{a}{i + 1}" for i in range(n) for a in axes]}

    def example_state(self):
        n = self.dof // self.dim
        k = np.arange(1, n + 1)
        return hanging_state(self, 0.4 + 0.3 * np.sin(k), 0.3 * np.cos(2 * k),
                             0.5 * k, 0.2 * np.sin(3 * k))  # fmt: skip

    def state_from_options(self, given: dict, frame=None):
        if given.get("angles") is None:
            raise InputError("angles", f"required for {self.name}", "give one angle a rod")
        kwargs = {k: np.asarray(v).reshape(-1) for k, v in given.items()}
        if self.dim == 2 and ("azimuths" in kwargs or "azimuth_rates" in kwargs):
            option = "azimuths" if "azimuths" in kwargs else "azimuth_rates"
            raise InputError(option, "does not apply to a chain in the plane (dim 2)")
        return hanging_state(self, **kwargs)


def hanging_state(system: Constrained, angles, rates=None, azimuths=None, azimuth_rates=None):
    """(q, p) of a ``PendulumChain``: rod i at ``angles[i]`` from the downward vertical
    (and ``azimuths[i]`` about it, in space) turning at ``rates[i]``
    (``azimuth_rates[i]``), radians and radians per unit time.  Traceable: a state
    placed by angles moves with the lengths when they are differentiated."""
    if not isinstance(system, PendulumChain):
        raise InputError("system", f"must be a PendulumChain, got {type(system).__name__}")
    lengths = system.params["lengths"]  # type: ignore[index]
    masses = system.system.params["masses"]  # type: ignore[attr-defined]
    n = lengths.shape[0]

    def given(name, value):
        if value is None:
            return jnp.zeros(n)
        arr = _vector(name, value)
        if arr.shape != (n,):
            raise InputError(name, f"expected {n} numbers (one a rod), got shape {arr.shape}")
        return jnp.asarray(arr, dtype=float)

    th, dth = given("angles", angles), given("rates", rates)
    ph, dph = given("azimuths", azimuths), given("azimuth_rates", azimuth_rates)
    s, c, sp, cp = jnp.sin(th), jnp.cos(th), jnp.sin(ph), jnp.cos(ph)
    if system.dim == 2:
        unit = jnp.stack([s, -c], axis=1)
        dunit = jnp.stack([c * dth, s * dth], axis=1)
    else:
        unit = jnp.stack([s * cp, s * sp, -c], axis=1)
        dunit = jnp.stack(
            [c * cp * dth - s * sp * dph, c * sp * dth + s * cp * dph, s * dth], axis=1
        )
    x = jnp.cumsum(lengths[:, None] * unit, axis=0)
    v = jnp.cumsum(lengths[:, None] * dunit, axis=0)
    q, p = x.reshape(-1), (masses[:, None] * v).reshape(-1)
    if traced((q, p)):
        return q, p
    return np.asarray(q), np.asarray(p)


def _preset(masses, lengths, gravity, dim, angles, rates, azimuths=None, azimuth_rates=None):
    def make():
        system = PendulumChain(masses, lengths, gravity, dim)
        return system, hanging_state(system, angles, rates, azimuths, azimuth_rates)

    return make


PendulumChain.presets = {
    "double-pendulum": _preset([1.0, 2.0], [1.0, 0.5], 9.81, 2, [1.0, -0.5], [0.3, 1.2]),
    "spherical-pendulum": _preset([1.0], [1.0], 1.0, 3, [1.0], [0.2], [0.3], [0.9]),
    # ten rods of 0.1 and bobs of 0.1, tilted 0.6 and spun: the 3D chain of the benchmarks
    "chain-10": _preset(
        [0.1] * 10,
        [0.1] * 10,
        9.81,
        3,
        [0.6] * 10,
        np.linspace(0.5, -0.5, 10),
        np.linspace(0.0, 1.0, 10),
        np.linspace(1.0, 2.0, 10),
    ),
}
