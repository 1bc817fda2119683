"""One compiled call measures one step of a map at several step sizes.

``one_step(system, integrator, x, hs)`` runs one program, jitted with the system and h
traced and the integrator static (compiled once per (system type, integrator), for any
step sizes), at each h of ``hs``: the step Φ_h(x) and its status, the step back Φ_{−h}(Φ_h(x)),
the step on Φ_h(Φ_h(x)) (with Φ_{2h}(x), the map's own one-step error: ``defects.own_errors``),
the system's invariants (and energy) before and after, and the quantities the map
declares kept before and after.  ``jacobians`` does the same for DΦ(z) in the system's
coordinates (forward mode through Newton loops).  A wrapper (``ReversibleAdaptive``,
``Compensated``) steps its extended state, started from x as a run starts it
(``maps.start_all``: a clock at t = 0 with density ρ = 1/σ(x)); its defects are those of
the base state, its extra part held at that start (h is the wrapper's own step: the
fictive ε of ``ReversibleAdaptive``).  Every defect in ``defects``,
``structure`` and ``report`` is computed from these, and never from a failed step:
``raise_if_failed`` turns a failed status into ``StepFailure`` naming h and the reason.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mechint import _validate
from mechint.errors import InputError, StepFailure
from mechint.maps import (
    Integrator,
    Reason,
    StepStatus,
    Wrapper,
    combine,
    require_serves,
    start_all,
    unwrap_all,
    with_base,
)
from mechint.systems.base import HamiltonianSystem, PoissonSystem, System


class OneStep(NamedTuple):
    y: Any  # Φ_h(x) for each h (leading axis over hs)
    status: StepStatus  # the forward step's status, and the step back's combined in
    back: Any  # Φ_{−h}(Φ_h(x))
    ahead: Any  # Φ_h(Φ_h(x))
    ahead_ok: np.ndarray  # both steps to it succeeded
    before: dict  # invariants (and "energy" when the system has one) at x
    after: dict  # the same at Φ_h(x), for each h
    kept_before: dict  # integrator.preserved at x, for each h
    kept_after: dict  # integrator.preserved at Φ_h(x), for each h


def _values(system: System, x) -> dict:
    out = dict(system.invariants(x))
    out.update({f"casimir {k}": v for k, v in system.casimirs(x).items()})
    if isinstance(system, HamiltonianSystem):
        out["energy"] = system.hamiltonian(x)
    return out


def _started(system: System, integrator: Integrator, x):
    """The state ``integrator`` steps at the base state x: x itself, or x extended by
    every wrapper around the map as a run starts it (``start_all``), as JAX arrays."""
    if isinstance(integrator, Wrapper):
        x = start_all(integrator, system, jax.tree.map(np.asarray, x), False, 1)
    return jax.tree.map(jnp.asarray, x)


@partial(jax.jit, static_argnames=("integrator",))
def _one_step(system, integrator, x, h):
    y, st = integrator.step(system, x, h)
    back, st_back = integrator.step(system, y, -h)
    ahead, st_ahead = integrator.step(system, y, h)
    kept = (integrator.preserved(system, x, h), integrator.preserved(system, y, h))
    x, y, back, ahead = (unwrap_all(integrator, s)[0] for s in (x, y, back, ahead))
    both, on = combine([st, st_back]), combine([st, st_ahead]).ok
    return y, st, back, (ahead, on), both, _values(system, x), _values(system, y), kept


def _steps(hs) -> list[jax.Array]:
    """The step sizes (each finite and non-zero, else InputError naming h), each a
    float64 scalar: one compiled program serves them all (a program vmapped over them
    took 1.4 times as long to compile, through Newton loops and forward mode)."""
    listed = hs.tolist() if isinstance(hs, np.ndarray | jax.Array) else hs
    listed = listed if isinstance(listed, list | tuple) else [listed]
    if not listed:
        raise InputError("h", "no step sizes given")
    return [jnp.asarray(_validate.step_size(h, "h"), dtype=jnp.float64) for h in listed]


def _stacked(outs: list):
    """The results at each h as NumPy arrays with a leading axis over the step sizes."""
    return jax.tree.map(lambda *a: np.stack([np.asarray(b) for b in a]), *outs)


def one_step(system: System, integrator: Integrator, x, hs) -> tuple[OneStep, StepStatus]:
    """(``OneStep`` over ``hs``, the status of the step there and back) after
    ``require_serves``."""
    require_serves(integrator, system)
    x = _started(system, integrator, x)
    y, st, back, (ahead, on), both, before, after, (kb, ka) = _stacked(
        [_one_step(system, integrator, x, h) for h in _steps(hs)]
    )
    before = jax.tree.map(lambda a: a[0], before)  # at x: the same at every h
    status = StepStatus(st.ok, st.residual, st.reason)
    return OneStep(y, status, back, ahead, on, before, after, kb, ka), both


@partial(jax.jit, static_argnames=("integrator",))
def _jacobians(system, integrator, x, h):
    def phi(z):
        y, st = integrator.step(system, with_base(integrator, x, system.from_coordinates(z)), h)
        zy = system.coordinates(unwrap_all(integrator, y)[0])
        return zy, (zy, st)

    z = system.coordinates(unwrap_all(integrator, x)[0])
    D, (z1, st) = jax.jacfwd(phi, has_aux=True)(z)
    return z, z1, D, st


def jacobians(system: PoissonSystem, integrator: Integrator, x, hs):
    """(z, Φ(z), DΦ(z), status) over ``hs`` in the system's coordinates (a wrapper's
    extra part held at its start)."""
    require_serves(integrator, system)
    x = _started(system, integrator, x)
    z, z1, D, st = _stacked([_jacobians(system, integrator, x, h) for h in _steps(hs)])
    return z[0], z1, D, st


def failures(hs, status: StepStatus) -> list[tuple[float, str]]:
    """(h, reason label) of every failed step in a status over ``hs``."""
    ok = np.asarray(status.ok)
    codes = np.asarray(status.reason)
    return [
        (float(h), Reason(int(c)).label)
        for h, good, c in zip(np.asarray(hs), ok, codes, strict=True)
        if not good
    ]


def raise_if_failed(hs, status: StepStatus) -> None:
    """``StepFailure`` (step 1) when a step in ``status`` failed: no defect is computed
    from a failed step."""
    ok = np.asarray(status.ok)
    if np.all(ok):
        return
    i = int(np.flatnonzero(~ok)[0])
    why = Reason(int(np.asarray(status.reason)[i]))
    raise StepFailure(
        step=1,
        residual=float(np.asarray(status.residual)[i]),
        reason=f"{why.text} (h = {float(np.asarray(hs)[i]):g}); no defect is computed from it",
        code=why,
    )
