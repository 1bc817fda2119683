r"""Exact solutions of canonical models: the harmonic oscillator and the Kepler problem.

Harmonic oscillator: q(t) = q0 cos ωt + (p0/ω) sin ωt, p(t) = p0 cos ωt − ω q0 sin ωt.

Kepler: ``exact.kepler_flow``, the universal-variable solution of every conic (p = v,
unit mass).
"""

from __future__ import annotations

import numpy as np

from mechint._validate import real_array
from mechint.errors import InputError


def _per_member(system, x0, t, single):
    (q0, p0), batched = system.validate_state(x0, "x0")
    t = real_array("t", t)
    if not batched:
        return single(q0, p0, t)
    outs = [single(q, p, t) for q, p in zip(q0, p0, strict=True)]
    return np.stack([o[0] for o in outs]), np.stack([o[1] for o in outs])


def harmonic_oscillator(system, x0, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact (q(t), p(t)) of ``HarmonicOscillator``; arrays of shape t.shape + (d,)."""
    w = np.asarray(system.omega, dtype=float)

    def single(q0, p0, t):
        wt = t[..., None] * w
        c, s = np.cos(wt), np.sin(wt)
        return q0 * c + (p0 / w) * s, p0 * c - w * q0 * s

    return _per_member(system, x0, t, single)


def kepler(system, x0, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact (q(t), p(t)) of ``Kepler`` (any orbit: ``exact.kepler_flow``, the one home of
    Kepler's flow); arrays of shape t.shape + (2,) (per member of a batch)."""
    import jax.numpy as jnp

    from mechint.exact.two_body import kepler_flow

    mu = float(system.mu)

    def single(q0, p0, t):
        if np.sum(q0 * q0) == 0:
            raise InputError("x0", "q = 0 is the singularity of the potential")
        shape = (*t.shape, 2)
        q, v = kepler_flow(mu, jnp.broadcast_to(q0, shape), jnp.broadcast_to(p0, shape), t)
        return np.asarray(q), np.asarray(v)

    return _per_member(system, x0, t, single)
