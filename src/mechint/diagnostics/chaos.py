r"""Chaos indicators of a run that carried tangent vectors (``integrators.Tangent``):
Lyapunov exponents by Benettin's renormalisation and MEGNO (Cincotta and Simó 2000).

Both read the tangent part the run carried (``Trajectory.tangent``, or the second part
of an ``integrate`` run's state), whose sums the map's tangent steps accumulated (see
``integrators.tangent``): nothing is integrated again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mechint.errors import InputError
from mechint.integrators.tangent import HEAD


def _part(run) -> np.ndarray:
    """The tangent part a run carried at every sample, (..., T, m)."""
    from mechint.trajectory import Trajectory

    if isinstance(run, Trajectory):
        if run.tangent is None:
            raise InputError("run", "carries no tangent vectors",
                             "run the map as mechint.integrators.Tangent(integrator)")  # fmt: skip
        return np.asarray(run.tangent, dtype=np.float64)
    part = np.asarray(run, dtype=np.float64) if run is not None else None
    if part is None or part.ndim < 2 or part.shape[-1] <= HEAD + 1:
        raise InputError("run", "expected a Trajectory of a Tangent run, or a Tangent run's "
                         "tangent part (..., samples, entries) with t=",
                         "integrate(system, Tangent(integrator), ...).x[1]")  # fmt: skip
    return part


def _elapsed(run, t, part: np.ndarray) -> np.ndarray:
    """The physical time since the first sample, (..., T), as a duration (a run backward
    in time, h < 0, too): a Trajectory's own (each member's, with variable steps), else
    from the sample times ``t``."""
    if hasattr(run, "physical_time"):
        own = np.asarray(run.physical_time, dtype=np.float64)
        return np.abs(own - own[..., :1])
    if t is None:
        raise InputError("t", "the sample times are needed with a tangent array", "pass t=sol.t")
    t = np.broadcast_to(np.asarray(t, dtype=np.float64), part.shape[:-1])
    return np.abs(t - t[..., :1])


def _vectors(part: np.ndarray) -> int:
    """k, the number of vectors, from the first entry (sample 0 is never blanked)."""
    return int(np.nanmax(part[..., 0]))


def lyapunov(run: Any, history: bool = False, *, t=None, warm_up: float = 0.0) -> np.ndarray:
    """The first k Lyapunov exponents of a ``Tangent`` run (k its ``vectors``):
    λ_i = (Σ_i(t) − Σ_i(t_w)) / (t − t_w), the growth Σ_i = Σ_j log R_ii(j) of the
    renormalised tangent vectors over the physical time since t_w (Benettin's method),
    t_w the first sample at least ``warm_up`` after the start (default: the start), times
    as durations (a run backward in time has the exponents of the inverse map).  In the
    order of the vectors, shape (..., k) at the run's end, or (..., T, k) at every sample
    with ``history`` (NaN up to t_w): the i-th converges to the i-th largest exponent,
    and at a finite time they need not be in order (a short run's are not).

    A warm-up leaves out the time the vectors take to align with the Lyapunov frame.
    Without it, the finite-time exponents of a symplectic map pair up as λ_i +
    λ_{2d+1−i} = C/T (the start's misalignment, a fixed amount of log growth); with it,
    to round-off (Hénon–Heiles, E = 1/8, Störmer–Verlet h = 0.05: 3.4e-4 at T = 10⁴
    and 3.4e-5 at T = 10⁵ from the start, below 1e-15 after a warm-up of T/10).  The
    sum of all 2d exponents is 0 to round-off either way (det DΦ = 1 each step).

    ``run``: the Trajectory, or an ``integrate`` run's tangent part (``sol.x[1]``) with
    its times ``t``.  A member that failed has NaN from its failing step on."""
    part = _part(run)
    elapsed = _elapsed(run, t, part)
    k = _vectors(part)
    logs = part[..., HEAD : HEAD + k]
    warm_up = float(warm_up)
    if not np.isfinite(warm_up) or warm_up < 0:
        raise InputError("warm_up", f"must be a time ≥ 0, got {warm_up!r}")
    after = elapsed >= warm_up * (1 - 1e-12)
    first = np.argmax(after, axis=-1)[..., None]  # the first sample at or past t_w
    if not np.any(after[..., -1] & (first[..., 0] < elapsed.shape[-1] - 1)):
        raise InputError("warm_up", f"{warm_up:g} leaves no time of the run "
                         f"({float(np.max(elapsed[..., -1])):g}) after it",
                         "a shorter warm-up")  # fmt: skip
    base_logs = np.take_along_axis(logs, first[..., None], axis=-2)
    base_t = np.take_along_axis(elapsed, first, axis=-1)
    span = elapsed - base_t
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where((span > 0)[..., None], (logs - base_logs) / span[..., None], np.nan)
    return lam if history else lam[..., -1, :]


def megno(run: Any, history: bool = False) -> np.ndarray:
    """MEGNO ⟨Y⟩ of a ``Tangent`` run (the discrete form for maps, see
    ``integrators.tangent``): → 2 on quasi-periodic orbits, → 0 on stable periodic
    ones, growing like λ t / 2 on chaotic ones.  Shape (...) at the run's end, or
    (..., T) at every sample with ``history`` (NaN at the first).  The time unit is the
    step: ⟨Y⟩ is the same number for any h at the same physical time when the orbit is
    regular.  ``run``: the Trajectory, or an ``integrate`` run's tangent part
    (``sol.x[1]``)."""
    part = _part(run)
    steps, sum_y = part[..., 1], part[..., 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(steps > 0, sum_y / steps, np.nan)
    return y if history else y[..., -1]
