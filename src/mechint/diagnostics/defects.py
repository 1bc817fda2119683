r"""One-step defects of any map on any system, and how they scale with h.

Each defect measures one property of Φ_h at one state x:

- ``energy_defect``: |H(Φ(x)) − H(x)| / |H(x)|;
- ``casimir_defects``: the same for each Casimir (dict);
- ``momentum_defect``: the same for each momentum map the system names (dict), relative
  to the size of its terms where that is larger (``System.invariant_scales``);
- ``reversibility_defect``: max |Φ_{−h}(Φ_h(x)) − x| in the system's coordinates;
- ``structure.poisson_defect`` / ``structure.symplectic_defect``: the map's Jacobian.

All come from one compiled call (``onestep``).  A failed step raises ``StepFailure``
(its reason named): no defect is computed from it.  ``defect_exponent`` evaluates a
defect over several h and fits defect ≈ C h^p above a round-off floor: a property is
"exact (round-off)" when every value is at the floor, "O(h^p)" otherwise (p rounded to
the nearest integer), and "failed (reason) at h = ..." when a step failed.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from mechint.diagnostics.fit import fit_power_law
from mechint.diagnostics.invariants import scales_at
from mechint.diagnostics.onestep import one_step, raise_if_failed
from mechint.diagnostics.order import flatten_state
from mechint.errors import StepFailure, UnsupportedError
from mechint.maps import Integrator
from mechint.systems.base import HamiltonianSystem, System


def step(system: System, integrator: Integrator, x, h):
    """One step Φ_h(x) (compiled once per (system type, integrator)); ``StepFailure``
    when it fails."""
    out, _ = one_step(system, integrator, x, [h])
    raise_if_failed([h], out.status)
    return jax.tree.map(lambda a: a[0], out.y)


def relative(before, after, size=None) -> np.ndarray:
    """|after − before| / |before| (absolute where before = 0), elementwise; relative to
    ``size`` where that is larger (the size of the terms an invariant sums,
    ``System.invariant_scales``: a barycentric momentum is 0 to round-off)."""
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    scale = np.abs(b) if size is None else np.maximum(np.abs(b), np.asarray(size, dtype=float))
    return np.abs(a - b) / np.where(scale != 0.0, scale, 1.0)


def _forward(system, integrator, x, h):
    out, _ = one_step(system, integrator, x, [h])
    raise_if_failed([h], out.status)
    return out


def energy_defect(system: System, integrator: Integrator, x, h) -> float:
    """|H(Φ_h(x)) − H(x)| / |H(x)| (absolute when H(x) = 0)."""
    if not isinstance(system, HamiltonianSystem):
        raise UnsupportedError("system", f"{type(system).__name__} has no Hamiltonian")
    out = _forward(system, integrator, x, h)
    return float(relative(out.before["energy"], out.after["energy"][0]))


def casimir_defects(system: System, integrator: Integrator, x, h) -> dict[str, float]:
    """Relative change of each Casimir in one step ({} when the system has none)."""
    out = _forward(system, integrator, x, h)
    names = [k for k in out.before if k.startswith("casimir ")]
    return {k[len("casimir ") :]: float(relative(out.before[k], out.after[k][0])) for k in names}


def momentum_defect(system: System, integrator: Integrator, x, h) -> dict[str, float]:
    """Relative change in one step of each momentum map in ``system.momentum_maps``."""
    if not system.momentum_maps:
        raise UnsupportedError(
            "system", f"{type(system).__name__} names no momentum map (momentum_maps)"
        )
    out = _forward(system, integrator, x, h)
    sizes = scales_at(system, x)
    return {k: float(relative(out.before[k], out.after[k][0], sizes.get(k)))
            for k in system.momentum_maps}  # fmt: skip


def reversibility_defect(system: System, integrator: Integrator, x, h) -> float:
    """max |Φ_{−h}(Φ_h(x)) − x| in the system's coordinates (0 for a symmetric map)."""
    out, both = one_step(system, integrator, x, [h])
    raise_if_failed([h], both)
    back = jax.tree.map(lambda a: a[0], out.back)
    return float(np.max(np.abs(flatten_state(system, back) - flatten_state(system, x))))


@dataclasses.dataclass(frozen=True)
class DefectScaling:
    """A defect over step sizes: the fit defect ≈ C h^p above ``floor`` and the verdict.

    ``failed``: (h, reason) of each step that failed; its defect is NaN, never a number."""

    h: np.ndarray
    defect: np.ndarray
    floor: float
    exponent: float | None  # None when fewer than 3 values lie above the floor
    constant: float | None
    used: np.ndarray  # the values above the floor
    failed: tuple[tuple[float, str], ...] = ()

    @property
    def non_finite(self) -> np.ndarray:
        """The step sizes whose step succeeded but whose defect is NaN or infinite (the
        state overflowed in the defect's arithmetic): never read as round-off."""
        failed = {h for h, _ in self.failed}
        bad = ~np.isfinite(self.defect)
        return np.array([h for h, b in zip(self.h, bad, strict=True) if b and h not in failed])

    @property
    def exact(self) -> bool:
        """Every value finite and at the round-off floor (and no step failed)."""
        return not self.failed and bool(np.all(np.isfinite(self.defect))) and not np.any(self.used)

    @property
    def verdict(self) -> str:
        if self.failed:
            hs = ", ".join(f"{h:g}" for h, _ in self.failed)
            return f"failed ({self.failed[0][1]}) at h = {hs}"
        if len(self.non_finite):
            return "non-finite defect at h = " + ", ".join(f"{h:g}" for h in self.non_finite)
        if self.exact:
            return "exact (round-off)"
        if self.exponent is None:
            return "unresolved"
        return f"O(h^{round(self.exponent)})"


def classify(hs, values, floor: float, failed=()) -> DefectScaling:
    """Fit values ≈ C h^p over those above ``floor`` (at least 3 needed for a fit; with
    1 or 2 the verdict is "unresolved": use larger h).  NaN values (failed steps) are
    never used."""
    hs, values = np.asarray(hs, dtype=float), np.asarray(values, dtype=float)
    above = np.isfinite(values) & (values > floor)
    if above.sum() < 3:
        return DefectScaling(hs, values, floor, None, None, above, tuple(failed))
    fit = fit_power_law(hs, values, floor=floor)
    return DefectScaling(hs, values, floor, fit.exponent, fit.constant, fit.used, tuple(failed))


def defect_exponent(defect, system, integrator, x, hs, *, floor: float = 1e-13) -> DefectScaling:
    """Evaluate ``defect(system, integrator, x, h)`` (a float) for each h in ``hs`` and
    class it (``classify``): exact when every value is at ``floor``, else O(h^p); a step
    that fails gives NaN and a "failed" verdict naming the reason."""
    values, failed = [], []
    for h in np.asarray(hs, dtype=float):
        try:
            values.append(defect(system, integrator, x, float(h)))
        except StepFailure as exc:
            values.append(float("nan"))
            failed.append((float(h), exc.code.label if exc.code is not None else "failed"))
    return classify(hs, values, floor, failed)
