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
"O(h^p)" (p rounded to the nearest integer) where the values rise above the floor, and
"failed (reason) at h = ..." when a step failed.  Values all at the floor read
"exact (round-off)" only where the step sizes resolve the map itself: its own one-step
error, max |Φ_{2h}(x) − Φ_h(Φ_h(x))| (``own_errors``: O(h^(p+1)) for a map of order p,
0 for the exact flow), above the floor at 3 of them (``resolves``); else "below
round-off at these h: larger h resolve it" (RK4 at h = 1e-3 changes Kepler's energy by
less than round-off, and keeps it no better than at h = 0.1).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from mechint.diagnostics.fit import fit_power_law
from mechint.diagnostics.invariants import scales_at
from mechint.diagnostics.onestep import OneStep, one_step, raise_if_failed
from mechint.diagnostics.order import flatten_state
from mechint.errors import StepFailure, UnsupportedError
from mechint.maps import EXACT, Integrator
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


def own_errors(system: System, out: OneStep, pairs) -> np.ndarray:
    """The map's own one-step error max |Φ_{2h}(x) − Φ_h(Φ_h(x))| in the system's
    coordinates, for each (i, j) of ``pairs``: indices into ``out``'s step sizes with
    h_j = h_i / 2 (NaN where a step failed).  O(h^(p+1)) for a map of order p, 0 for
    the exact flow: where it is at round-off, so is every defect of the map."""
    ok = np.asarray(out.status.ok)
    values = []
    for i, j in pairs:
        if not (ok[i] and out.ahead_ok[j]):
            values.append(np.nan)
            continue
        once = flatten_state(system, jax.tree.map(lambda a, i=i: a[i], out.y))
        twice = flatten_state(system, jax.tree.map(lambda a, j=j: a[j], out.ahead))
        values.append(float(np.max(np.abs(once - twice))))
    return np.asarray(values, dtype=float)


def resolves(integrator: Integrator, errors, floor: float) -> bool:
    """Whether step sizes whose own errors (``own_errors``) are ``errors`` resolve the map:
    the errors rise above ``floor`` at 3 of them (all where fewer are measured), as a
    fit needs; the exact flow (order ``EXACT``) always."""
    if integrator.traits.order >= EXACT:
        return True
    errors = np.asarray(errors, dtype=float)
    above = int(np.sum(np.isfinite(errors) & (errors > floor)))
    return above >= min(3, errors.size)


def state_floor(system: System, x, relative: float = 1e-13) -> float:
    """The round-off floor of a state's coordinates: ``relative`` times their size (at
    least 1)."""
    return relative * max(1.0, float(np.max(np.abs(flatten_state(system, x)))))


@dataclasses.dataclass(frozen=True)
class DefectScaling:
    """A defect over step sizes: the fit defect ≈ C h^p above ``floor`` and the verdict.

    ``failed``: (h, reason) of each step that failed; its defect is NaN, never a number.
    ``resolved``: whether these h resolve the map (``resolves``), or the map declares
    the property kept: values at the floor are "exact (round-off)" only then, else
    "below round-off at these h"."""

    h: np.ndarray
    defect: np.ndarray
    floor: float
    exponent: float | None  # None when fewer than 3 values lie above the floor
    constant: float | None
    used: np.ndarray  # the values above the floor
    failed: tuple[tuple[float, str], ...] = ()
    resolved: bool = True

    @property
    def non_finite(self) -> np.ndarray:
        """The step sizes whose step succeeded but whose defect is NaN or infinite (the
        state overflowed in the defect's arithmetic): never read as round-off."""
        failed = {h for h, _ in self.failed}
        bad = ~np.isfinite(self.defect)
        return np.array([h for h, b in zip(self.h, bad, strict=True) if b and h not in failed])

    @property
    def at_floor(self) -> bool:
        """Every value finite and at the round-off floor (and no step failed)."""
        return not self.failed and bool(np.all(np.isfinite(self.defect))) and not np.any(self.used)

    @property
    def exact(self) -> bool:
        """At the floor at step sizes that resolve the map (or where it declares the
        property kept): the verdict "exact (round-off)"."""
        return self.at_floor and self.resolved

    @property
    def verdict(self) -> str:
        if self.failed:
            hs = ", ".join(f"{h:g}" for h, _ in self.failed)
            return f"failed ({self.failed[0][1]}) at h = {hs}"
        if len(self.non_finite):
            return "non-finite defect at h = " + ", ".join(f"{h:g}" for h in self.non_finite)
        if self.at_floor:
            return "exact (round-off)" if self.resolved else BELOW_ROUND_OFF
        if self.exponent is None:
            return "unresolved"
        return f"O(h^{round(self.exponent)})"


# the verdict of values at the floor where the step sizes do not resolve the map
BELOW_ROUND_OFF = "below round-off at these h: larger h resolve it"


def classify(hs, values, floor: float, failed=(), *, resolved: bool = True) -> DefectScaling:
    """Fit values ≈ C h^p over those above ``floor`` (at least 3 needed for a fit; with
    1 or 2 the verdict is "unresolved": use larger h).  NaN values (failed steps) are
    never used.  ``resolved``: whether the step sizes resolve the map (``resolves``),
    or it declares the property kept; values all at the floor are exact only then."""
    hs, values = np.asarray(hs, dtype=float), np.asarray(values, dtype=float)
    above = np.isfinite(values) & (values > floor)
    if above.sum() < 3:
        return DefectScaling(hs, values, floor, None, None, above, tuple(failed), resolved)
    fit = fit_power_law(hs, values, floor=floor)
    return DefectScaling(hs, values, floor, fit.exponent, fit.constant, fit.used, tuple(failed),
                         resolved)  # fmt: skip


def defect_exponent(defect, system, integrator, x, hs, *, floor: float = 1e-13) -> DefectScaling:
    """Evaluate ``defect(system, integrator, x, h)`` (a float) for each h in ``hs`` and
    class it (``classify``): O(h^p) above ``floor``; at the floor, exact where the map's
    own one-step error at these h rises above round-off (``resolves``), else "below
    round-off at these h"; a step that fails gives NaN and a "failed" verdict naming the
    reason."""
    values, failed = [], []
    hs = np.asarray(hs, dtype=float)
    for h in hs:
        try:
            values.append(defect(system, integrator, x, float(h)))
        except StepFailure as exc:
            values.append(float("nan"))
            failed.append((float(h), exc.code.label if exc.code is not None else "failed"))
    scaling = classify(hs, values, floor, failed)
    if scaling.at_floor and integrator.traits.order < EXACT:  # does the map show at these h?
        out, _ = one_step(system, integrator, x, np.concatenate([hs, hs / 2]))
        errors = own_errors(system, out, [(i, hs.size + i) for i in range(hs.size)])
        scaling = dataclasses.replace(
            scaling, resolved=resolves(integrator, errors, state_floor(system, x))
        )
    return scaling
