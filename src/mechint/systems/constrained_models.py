r"""Named constrained systems in Cartesian coordinates (``systems.Constrained``).

``pendulum_chain(masses, lengths, gravity, dim)``: n point masses, the first joined to
the origin by a massless rod of length l_1, each next one to the one before by a rod of
length l_i, in the plane (dim = 2) or in space (dim = 3), the last coordinate vertical
(up):

    q = (x_1, …, x_n) ∈ R^(n·dim),   H = Σ |p_i|² / (2 m_i) + γ Σ m_i z_i,
    g_i(q) = |x_i − x_{i−1}|² − l_i² = 0   (x_0 = 0).

n = 1, dim = 3 is the spherical pendulum, n = 2, dim = 2 the double pendulum.  The
masses, the gravity γ and the lengths are parameters (pytree leaves): one compiled run
serves every value, and ``jax.grad`` differentiates through a run with respect to them.
The momentum about the vertical, ``Lz`` = Σ (x_i p_{y,i} − y_i p_{x,i}) (dim = 3), is
declared: gravity and the rods keep it.

``hanging_state(system, angles, rates)`` places the chain by each rod's angle from the
downward vertical (and, in space, an azimuth) with the angular rates given.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mechint._validate import positive_scalar, positive_vector, real_array, traced
from mechint.errors import InputError
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


def pendulum_chain(masses=(1.0,), lengths=None, gravity: float = 1.0, dim: int = 3) -> Constrained:
    """A chain of point masses on rods hanging from the origin (the module docstring);
    ``lengths`` default to 1 each."""
    if dim not in (2, 3):
        raise InputError("dim", f"must be 2 (a plane) or 3 (space), got {dim!r}")
    m = positive_vector("masses", _vector("masses", masses), None)
    n = int(m.shape[0])
    lengths = positive_vector(
        "lengths", np.ones(n) if lengths is None else _vector("lengths", lengths), n
    )
    base = SeparableHamiltonian(
        _kinetic,
        _potential,
        dof=n * dim,
        params={"masses": m, "gravity": positive_scalar("gravity", gravity)},
    )
    momenta = {"Lz": _vertical_momentum} if dim == 3 else None
    return Constrained(base, _rods, params={"lengths": lengths}, momenta=momenta)


def hanging_state(system: Constrained, angles, rates=None, azimuths=None, azimuth_rates=None):
    """(q, p) of a ``pendulum_chain``: rod i at ``angles[i]`` from the downward vertical
    (and ``azimuths[i]`` about it, in space) turning at ``rates[i]``
    (``azimuth_rates[i]``), radians and radians per unit time.  Traceable: a state
    placed by angles moves with the lengths when they are differentiated."""
    lengths = system.params["lengths"]  # type: ignore[index]
    masses = system.system.params["masses"]  # type: ignore[attr-defined]
    n = lengths.shape[0]
    dim = system.dof // n

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
    if dim == 2:
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
