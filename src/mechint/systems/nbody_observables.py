r"""What an observer of a planetary system measures: mid-transit times and the star's
radial velocity (``systems.nbody.transits``, ``systems.nbody.radial_velocity``).

The observer looks along the unit vector n̂ from the system toward it (``observer``,
default +z); the sky plane is perpendicular to n̂.  For a planet and its star, with
Δ = q_planet − q_star and Δv = v_planet − v_star (v = p/m; a test particle's p is its
velocity), the sky-projected separation is Δ_s = Δ − (Δ·n̂) n̂ and a **mid-transit** is
a minimum of |Δ_s| with the planet in front (Δ·n̂ > 0):

    Δ_s · Δv_s = 0,   rising (the separation stops shrinking),   Δ·n̂ > 0.

The event's condition is Δ_s · Δv_s, rising through zero at every minimum of the
projected separation (a transit in front, an occultation behind), and its ``where`` is
Δ·n̂: only the minima in front count.  Every one counts: a grazing or missed transit
(impact parameter above the star's radius) too, as TTVFast reports them.

Units: those of the system's G.  For ``GAUSS_G`` (AU, days, solar masses) the transit
times are in days and the radial velocities in AU/day (× 1.495978707e11 / 86400 m/s).
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from mechint.errors import InputError
from mechint.events import Event

# metres per second in one AU per day (the IAU astronomical unit, 86400 s)
AU_PER_DAY_IN_M_PER_S = 1.495978707e11 / 86400.0


def _observer(observer) -> tuple[float, float, float]:
    try:
        n = np.asarray(observer, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("observer", f"expected 3 numbers, got {observer!r}"[:200]) from None
    if n.shape != (3,) or not np.all(np.isfinite(n)):
        raise InputError("observer", f"expected 3 finite numbers, got {observer!r}"[:200])
    norm = float(np.linalg.norm(n))
    if norm == 0:
        raise InputError("observer", "has zero length", "the direction toward the observer, "
                         "e.g. (0, 0, 1)")  # fmt: skip
    return tuple(float(v) for v in n / norm)  # type: ignore[return-value]


def _body(system, name: str, k) -> int:
    """``k`` checked as the index of one of the system's bodies."""
    n = int(system.n)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 0 <= k < n:
        raise InputError(name, f"must be a body's index, 0..{n - 1}, got {k!r}")
    return int(k)


def _velocities(system, p):
    m = system.masses.astype(p.dtype)
    return p / jnp.where(m > 0, m, 1.0)[:, None]


@functools.lru_cache(maxsize=256)
def _transit_event(planet: int, star: int, n: tuple[float, float, float]) -> Event:
    """One Event per (planet, star, observer): every run with it reuses one program."""
    axis = np.asarray(n)

    def transit(t, x, system):
        q, p = x
        v = _velocities(system, p)
        u = jnp.asarray(axis, q.dtype)
        d, dv = q[planet] - q[star], v[planet] - v[star]
        return jnp.dot(d, dv) - jnp.dot(d, u) * jnp.dot(dv, u)  # Δ_s·Δv_s

    def in_front(t, x, system):
        q = x[0]
        return jnp.dot(q[planet] - q[star], jnp.asarray(axis, q.dtype))

    return Event(transit, direction=1, name=f"transit_{planet}", uses_system=True,
                 where=in_front)  # fmt: skip


def transits(system, planet: int, star: int = 0, observer=(0.0, 0.0, 1.0)) -> Event:
    """An ``mechint.Event`` whose crossings are ``planet``'s mid-transits across ``star``
    seen from ``observer`` (the direction toward the observer; see the module
    docstring).  Pass it to ``integrate`` or ``simulate`` (``events=``): the crossings
    (``events["transit_<planet>"].t``) are located on the map as every event is (a
    Wisdom–Holman run's on the states it shows, its corrector applied), batched, and
    differentiable (``jax.grad`` through ``integrate``: the implicit function theorem,
    with respect to the masses, G, the initial state and h).  The same arguments give
    the same Event (one compiled run)."""
    planet, star = _body(system, "planet", planet), _body(system, "star", star)
    if planet == star:
        raise InputError("planet", f"is the star ({star})", "the index of another body")
    return _transit_event(planet, star, _observer(observer))


def radial_velocity(system, x, star: int = 0, observer=(0.0, 0.0, 1.0)):
    """The line-of-sight velocity of ``star`` at states ``x`` (any leading axes; e.g. a
    run's states at the observation times, ``save_at=``): −v·n̂, positive when the star
    recedes from the observer, in the system's length/time units (AU/day for
    ``GAUSS_G``: × ``AU_PER_DAY_IN_M_PER_S`` for m/s).  Differentiable."""
    star = _body(system, "star", star)
    u = jnp.asarray(_observer(observer))
    p = jnp.asarray(x[1])
    m = system.masses.astype(p.dtype)
    v = p[..., star, :] / jnp.where(m[star] > 0, m[star], 1.0)
    return -jnp.sum(v * u.astype(p.dtype), axis=-1)


__all__ = ["AU_PER_DAY_IN_M_PER_S", "radial_velocity", "transits"]
