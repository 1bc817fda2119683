"""Several integrators on one initial condition: error at T, invariant errors, wall time
(``mechint compare``).

The reference at T is the exact solution where mechint has one (Euler top, Kepler,
harmonic oscillator) and otherwise SciPy's DOP853 at rtol = atol = 1e-13 on the
system's vector field in its coordinates.  Wall times exclude compilation (a run that
finishes in under 5 s is repeated and the second time is reported).
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

from mechint import _validate
from mechint.diagnostics.invariants import invariant_errors
from mechint.diagnostics.order import flatten_state
from mechint.errors import InputError
from mechint.maps import Integrator
from mechint.simulate import simulate
from mechint.systems.base import ExactSolution, PoissonSystem, System


@dataclasses.dataclass(frozen=True)
class Comparison:
    system: object
    h: float
    T: float
    reference: str  # "exact" or "DOP853"
    names: list[str]
    trajectories: list
    error_at_T: list[float]
    max_invariant_errors: list[dict[str, float]]
    wall_time: list[float]

    def table(self) -> list[dict]:
        rows = []
        for i, name in enumerate(self.names):
            row = {
                "integrator": name,
                "wall s": self.wall_time[i],
                "error at T": self.error_at_T[i],
            }
            row.update({f"max |Δ{k}|/|{k}|": v for k, v in self.max_invariant_errors[i].items()})
            rows.append(row)
        return rows


def reference_state(system: System, x0, T: float):
    """(state at T, "exact" | "DOP853"): the system's exact solution when it has one."""
    if isinstance(system, ExactSolution):
        return system.exact_solution(x0, T), "exact"
    return jax.tree.map(lambda a: a[-1], dop853_path(system, x0, np.array([0.0, T]))), "DOP853"


def _flat_flow(system: System, x0):
    """(ż(z), z ↦ state) in the system's coordinates z, or for a system without them (a
    ``Forced`` one, attitude kinematics) in its leaves raveled one after the other."""
    if isinstance(system, PoissonSystem):
        return system.coordinate_field, system.from_coordinates
    leaves, treedef = jax.tree.flatten(jax.tree.map(jnp.asarray, x0))
    shapes = [a.shape for a in leaves]
    ends = np.cumsum([int(np.prod(s)) for s in shapes])[:-1]

    def unflatten(z):
        parts = jnp.split(z, ends, axis=-1)
        pieces = [p.reshape((*z.shape[:-1], *s)) for p, s in zip(parts, shapes, strict=True)]
        return jax.tree.unflatten(treedef, pieces)

    def field(z):
        rate = jax.tree.leaves(system.vector_field(unflatten(z)))
        return jnp.concatenate([jnp.ravel(a) for a in rate])

    return field, unflatten


def dop853_path(system: System, x0, times):
    """The states at ``times`` (increasing, from 0) of the flow from x0 by SciPy's DOP853
    at rtol = atol = 1e-13 in the system's coordinates (its leaves raveled where it has
    none), with a leading time axis."""
    if not _validate.traced(x0):  # a state of the system itself is extended (Forced)
        x0 = system.starting_state(system.validate_state(x0)[0], 0.0)
    z0 = flatten_state(system, x0)
    field, unflatten = _flat_flow(system, x0)
    f = jax.jit(field)

    from scipy.integrate import solve_ivp  # imported when used: 36 MB and 0.3 s a process

    # z goes to the jitted field as SciPy's NumPy array: through jnp.asarray every call
    # cost 25 µs against 8 (the Euler top), most of a reference's time
    sol = solve_ivp(
        lambda t, z: np.asarray(f(z)), (0.0, float(times[-1])), z0,
        method="DOP853", t_eval=np.asarray(times, dtype=float), rtol=1e-13, atol=1e-13,
    )  # fmt: skip
    if not sol.success:
        raise InputError("system", f"DOP853 failed on the flow: {sol.message}")
    return unflatten(jnp.asarray(sol.y.T))


def compare(system, integrators, x0, h: float, T: float, *, samples: int = 200,
            compensated: bool | None = None) -> Comparison:  # fmt: skip
    """Run each integrator from x0 to T with step h (T/h whole), saving about ``samples``
    states; measure the error at T against the reference and every invariant's error.
    A map of variable steps (``ReversibleAdaptive``) takes T/h steps of its own time,
    which end at another physical time: its error is measured against the reference
    there, and its name says that time ("<name> (ends at t = ...)").
    ``compensated``: as ``simulate``'s (None: each map's default); a compensated run is
    named "<name> (compensated)"."""
    if isinstance(integrators, Integrator):
        integrators = [integrators]
    if not isinstance(integrators, list | tuple) or not integrators:
        raise InputError("integrators", f"expected a non-empty list of integrators, got "
                         f"{integrators!r}")  # fmt: skip
    h = _validate.step_size(h)
    T = _validate.step_size(T, "T", allow_negative=False)
    samples = _validate.count("samples", samples)
    steps = round(T / h)
    if steps < 1 or abs(steps * h - T) > 1e-9 * abs(T):
        raise InputError("T", f"T/h = {T / h:g} must be a whole number", "adjust T or h")
    every = _validate.divisor_near(steps, max(1, steps // samples), at_most=True)
    ref, kind = reference_state(system, x0, T)
    ref = flatten_state(system, ref)
    trajs, errors, maxes, walls, ends = [], [], [], [], []
    for integrator in integrators:
        start = time.perf_counter()
        traj = simulate(system, integrator, x0, h, steps, every, compensated=compensated)
        wall = time.perf_counter() - start
        if wall < 5.0:
            start = time.perf_counter()
            traj = simulate(system, integrator, x0, h, steps, every, compensated=compensated)
            wall = time.perf_counter() - start
        last = jax.tree.map(lambda a: a[-1], traj.x)
        trajs.append(traj)
        target = ref
        if traj.clock is not None:  # variable steps: T/h steps of its own time end at its
            # clock's physical time, not at T: the reference there
            end = float(np.asarray(traj.clock)[-1, 0])
            target = flatten_state(system, reference_state(system, x0, end)[0])
            ends.append(end)
        else:
            ends.append(None)
        errors.append(float(np.max(np.abs(flatten_state(system, last) - target))))
        maxes.append({k: float(np.max(v)) for k, v in invariant_errors(system, traj).items()})
        walls.append(wall)
    names = [i.name + (" (compensated)" if t.compensation is not None else "")
             + ("" if end is None else f" (ends at t = {end:.6g})")
             for i, t, end in zip(integrators, trajs, ends, strict=True)]  # fmt: skip
    return Comparison(system, h, T, kind, names, trajs, errors, maxes, walls)
