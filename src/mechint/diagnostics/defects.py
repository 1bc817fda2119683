r"""One-step defects of any map on any system, and how they scale with h.

Each defect measures one property of Φ_h at one state x:

- ``energy_defect``: |H(Φ(x)) − H(x)| / |H(x)|;
- ``casimir_defects``: the same for each Casimir (dict);
- ``momentum_defect``: the same for each momentum map the system names (dict);
- ``reversibility_defect``: max |Φ_{−h}(Φ_h(x)) − x| in the system's coordinates;
- ``structure.poisson_defect`` / ``structure.symplectic_defect``: the map's Jacobian.

``defect_exponent`` evaluates a defect over several h and fits defect ≈ C h^p above a
round-off floor: a property is "exact (round-off)" when every value is at the floor,
"O(h^p)" otherwise (p rounded to the nearest integer for the verdict).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from mechint.diagnostics.fit import fit_power_law
from mechint.diagnostics.order import flatten_state
from mechint.errors import UnsupportedError


@functools.lru_cache(maxsize=64)
def _jitted_step(integrator):
    return jax.jit(integrator.step)


def step(system, integrator, x, h):
    """One step Φ_h(x) (compiled once per integrator), after ``integrator.check``."""
    integrator.check(system)
    y, _ = _jitted_step(integrator)(system, jax.tree.map(jnp.asarray, x), h)
    return y


def _relative(before, after) -> float:
    b, a = float(before), float(after)
    return abs(a - b) / (abs(b) if b != 0.0 else 1.0)


def energy_defect(system, integrator, x, h) -> float:
    """|H(Φ_h(x)) − H(x)| / |H(x)| (absolute when H(x) = 0)."""
    if not callable(getattr(system, "hamiltonian", None)):
        raise UnsupportedError("system", f"{type(system).__name__} has no Hamiltonian")
    x = jax.tree.map(jnp.asarray, x)
    return _relative(system.hamiltonian(x), system.hamiltonian(step(system, integrator, x, h)))


def casimir_defects(system, integrator, x, h) -> dict[str, float]:
    """Relative change of each Casimir in one step ({} when the system has none)."""
    x = jax.tree.map(jnp.asarray, x)
    before = system.casimirs(x)
    after = system.casimirs(step(system, integrator, x, h)) if before else {}
    return {name: _relative(before[name], after[name]) for name in before}


def momentum_defect(system, integrator, x, h) -> dict[str, float]:
    """Relative change in one step of each momentum map in ``system.momentum_maps``."""
    names = tuple(getattr(system, "momentum_maps", ()))
    if not names:
        raise UnsupportedError(
            "system", f"{type(system).__name__} names no momentum map (momentum_maps)"
        )
    x = jax.tree.map(jnp.asarray, x)
    before = system.invariants(x)
    after = system.invariants(step(system, integrator, x, h))
    return {name: _relative(before[name], after[name]) for name in names}


def reversibility_defect(system, integrator, x, h) -> float:
    """max |Φ_{−h}(Φ_h(x)) − x| in the system's coordinates (0 for a symmetric map)."""
    x = jax.tree.map(jnp.asarray, x)
    back = step(system, integrator, step(system, integrator, x, h), -h)
    return float(np.max(np.abs(flatten_state(system, back) - flatten_state(system, x))))


@dataclasses.dataclass(frozen=True)
class DefectScaling:
    """A defect over step sizes: the fit defect ≈ C h^p above ``floor`` and the verdict."""

    h: np.ndarray
    defect: np.ndarray
    floor: float
    exponent: float | None  # None when fewer than 3 values lie above the floor
    constant: float | None
    used: np.ndarray  # the values above the floor

    @property
    def exact(self) -> bool:
        """Every value at the round-off floor."""
        return not np.any(self.used)

    @property
    def verdict(self) -> str:
        if self.exact:
            return "exact (round-off)"
        if self.exponent is None:
            return "unresolved"
        return f"O(h^{round(self.exponent)})"


def classify(hs, values, floor: float) -> DefectScaling:
    """Fit values ≈ C h^p over those above ``floor`` (at least 3 needed for a fit; with
    1 or 2 the verdict is "unresolved": use larger h)."""
    hs, values = np.asarray(hs, dtype=float), np.asarray(values, dtype=float)
    above = values > floor
    if above.sum() < 3:
        return DefectScaling(hs, values, floor, None, None, above)
    fit = fit_power_law(hs, values, floor=floor)
    return DefectScaling(hs, values, floor, fit.exponent, fit.constant, fit.used)


def defect_exponent(defect, system, integrator, x, hs, *, floor: float = 1e-13) -> DefectScaling:
    """Evaluate ``defect(system, integrator, x, h)`` (a float) for each h in ``hs`` and
    class it (``classify``): exact when every value is at ``floor``, else O(h^p)."""
    values = [defect(system, integrator, x, float(h)) for h in np.asarray(hs, dtype=float)]
    return classify(hs, values, floor)
