"""Every structural property of a map on a system, measured and classed (``mechint check``).

For one state x and step h, each applicable property gets its one-step defect at h,
its exponent p in defect ≈ C h^p over h, h/2, ..., h/16, and a verdict: "exact
(round-off)", "O(h^p)", or "unresolved" when fewer than 3 of the values rise above the
round-off floor.  Properties: symplectic (canonical systems) or Poisson (any other system
with a Poisson tensor), energy, each Casimir, each momentum map, reversibility, and each
quantity the integrator declares kept (its ``preserved``, e.g. Kahan's K_k).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from mechint.diagnostics import defects, structure
from mechint.diagnostics.order import flatten_state


@dataclasses.dataclass(frozen=True)
class PropertyCheck:
    name: str
    defect: float  # at the given h
    exponent: float | None
    verdict: str
    scaling: defects.DefectScaling

    def as_dict(self) -> dict:
        return {
            "property": self.name,
            "defect": self.defect,
            "exponent": self.exponent,
            "verdict": self.verdict,
            "h": self.scaling.h.tolist(),
            "defects": self.scaling.defect.tolist(),
        }


def _kept(name):
    def defect(system, integrator, x, h):
        before = integrator.preserved(system, x, h)[name]
        after = integrator.preserved(system, defects.step(system, integrator, x, h), h)[name]
        return defects._relative(before, after)

    return defect


def _entry(name):
    def pick(fn):
        return lambda *a: fn(*a)[name]

    return pick


def properties(system, integrator) -> list[tuple[str, object, str]]:
    """(name, defect function, kind) for the map's structure and energy; kind is
    "relative" (invariants), "absolute" (Jacobian) or "state" (reversibility)."""
    out = []
    if hasattr(system, "dof"):
        out.append(("symplectic", structure.symplectic_defect, "absolute"))
    elif callable(getattr(system, "poisson_tensor", None)) and callable(
        getattr(system, "coordinates", None)
    ):
        out.append(("Poisson", structure.poisson_defect, "absolute"))
    if callable(getattr(system, "hamiltonian", None)):
        out.append(("energy H", defects.energy_defect, "relative"))
    return out


def check(system, integrator, x, h: float, *, halvings: int = 4) -> list[PropertyCheck]:
    """Measure every applicable property of ``integrator`` on ``system`` at state x."""
    integrator.check(system)
    x = jax.tree.map(jnp.asarray, x)
    scale = max(1.0, float(np.max(np.abs(flatten_state(system, x)))))
    floors = {"relative": 1e-13, "absolute": 1e-12 * scale, "state": 1e-13 * scale}
    items = properties(system, integrator)
    for name in system.casimirs(x):
        items.append((f"Casimir {name}", _entry(name)(defects.casimir_defects), "relative"))
    for name in getattr(system, "momentum_maps", ()):
        items.append((f"momentum {name}", _entry(name)(defects.momentum_defect), "relative"))
    items.append(("reversibility", defects.reversibility_defect, "state"))
    own = set(system.invariants(x))
    declared = integrator.preserved(system, x, h) if hasattr(integrator, "preserved") else {}
    for name in declared:
        if name not in own:
            items.append((f"kept {name}", _kept(name), "relative"))
    hs = h * 2.0 ** -np.arange(halvings + 1)
    rows = []
    for name, fn, kind in items:
        scaling = defects.defect_exponent(fn, system, integrator, x, hs, floor=floors[kind])
        rows.append(
            PropertyCheck(
                name, float(scaling.defect[0]), scaling.exponent, scaling.verdict, scaling
            )
        )
    return rows
