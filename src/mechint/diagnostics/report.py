"""Every structural property of a map on a system, measured and classed (``mechint check``).

For one state x and step h, each applicable property gets its one-step defect at h,
its exponent p in defect ≈ C h^p over h, h/2, ..., h/16, and a verdict: "exact
(round-off)", "O(h^p)", "unresolved" when fewer than 3 of the values rise above the
round-off floor, or "failed (reason) at h = ..." when a step failed there (no defect is
computed from a failed step).  Values all at the floor are "exact (round-off)" where the
map declares the property kept (its traits, its ``preserved``) or where these h resolve
the map itself (its own one-step error above round-off: ``defects.resolves``); else
"below round-off at these h: larger h resolve it" (RK4 on Kepler at h = 1e-3).
Properties: symplectic (canonical systems) or Poisson (any other Poisson system),
energy, each Casimir, each momentum map, each other first integral of the system (its
Lax integrals, the Lagrange top's m3, ...), reversibility, and each quantity the
integrator declares kept (its ``preserved``, e.g. Kahan's K_k).  Every step size is
measured in one compiled, vmapped call (``onestep``).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from mechint import _validate
from mechint.diagnostics import defects, structure
from mechint.diagnostics.invariants import scales_at
from mechint.diagnostics.onestep import failures, one_step
from mechint.diagnostics.order import flatten_state
from mechint.maps import EXACT, Integrator
from mechint.systems.base import HamiltonianSystem, PoissonSystem, System
from mechint.systems.canonical import Canonical
from mechint.systems.constrained import Constrained


@dataclasses.dataclass(frozen=True)
class PropertyCheck:
    name: str
    defect: float  # at the given h (NaN when the step failed)
    exponent: float | None
    verdict: str
    scaling: defects.DefectScaling

    def __repr__(self) -> str:
        p = "" if self.exponent is None else f", exponent {self.exponent:.2f}"
        return f"PropertyCheck({self.name}: {self.verdict}, defect {self.defect:.2e} at h{p})"

    def as_dict(self) -> dict:
        """Plain values for JSON: a defect that is not a number (a failed step, an
        overflow) is null, never the non-JSON NaN."""
        return {
            "property": self.name,
            "defect": _number(self.defect),
            "exponent": self.exponent,
            "verdict": self.verdict,
            "h": self.scaling.h.tolist(),
            "defects": [_number(v) for v in self.scaling.defect],
        }


class Checks(list):
    """What ``check`` returns: a list of ``PropertyCheck``, one per property, with a short
    repr (each property's verdict) and ``table()``, the text table ``mechint check``
    prints."""

    def __repr__(self) -> str:
        return "Checks(" + "; ".join(f"{r.name}: {r.verdict}" for r in self) + ")"

    def table(self) -> str:
        """One line per property: its defect at h, the exponent over h .. h/2^k and the
        verdict, under a header."""
        width = max([len("property"), *(len(r.name) for r in self)])
        lines = [f"{'property':<{width}}  {'defect at h':>11}  {'exponent':>8}  verdict"]
        for r in self:
            p = "" if r.exponent is None else f"{r.exponent:.2f}"
            lines.append(f"{r.name:<{width}}  {r.defect:11.2e}  {p:>8}  {r.verdict}")
        return "\n".join(lines)


def _number(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def check(system: System, integrator: Integrator, x, h: float, *, halvings: int = 4) -> Checks:
    """Measure every applicable property of ``integrator`` on ``system`` at state x: a
    ``Checks`` list of ``PropertyCheck`` (``.table()`` prints it as ``mechint check``).
    A wrapper (``ReversibleAdaptive``) is measured on the base state, its extra part
    started from x as a run starts it (``onestep``)."""
    h = _validate.step_size(h)
    halvings = _validate.count("halvings", halvings)
    hs = h * 2.0 ** -np.arange(halvings + 1)
    out, both = one_step(system, integrator, x, hs)
    ok, ok_both = np.asarray(out.status.ok), np.asarray(both.ok)
    failed, failed_both = failures(hs, out.status), failures(hs, both)
    scale = max(1.0, float(np.max(np.abs(flatten_state(system, x)))))
    floors = {"relative": 1e-13, "absolute": 1e-12 * scale, "state": 1e-13 * scale}
    items: list[tuple[str, np.ndarray, str, list]] = []
    if isinstance(system, Canonical | Constrained) or getattr(system, "joints", ()):
        # on a constrained one: on T*Q (jointed bodies: in their matrix variables)
        values, _ = structure.symplectic_defects(system, integrator, x, hs)
        items.append(("symplectic", values, "absolute", failed))
    elif isinstance(system, PoissonSystem):
        values, _ = structure.poisson_defects(system, integrator, x, hs)
        items.append(("Poisson", values, "absolute", failed))

    sizes = scales_at(system, x)  # the size of the terms of an invariant that may cancel

    def rel(before, after, name=None):
        return np.where(
            ok, defects.relative(before, after, sizes.get(name) if name else None), np.nan
        )

    if "energy" in out.before:
        items.append(("energy H", rel(out.before["energy"], out.after["energy"]),
                      "relative", failed))  # fmt: skip
    for key in out.before:
        if key.startswith("casimir "):
            name = key[len("casimir ") :]
            items.append((f"Casimir {name}", rel(out.before[key], out.after[key]),
                          "relative", failed))  # fmt: skip
    for name in system.momentum_maps:
        items.append((f"momentum {name}", rel(out.before[name], out.after[name], name),
                      "relative", failed))  # fmt: skip
    listed = {"energy", *system.momentum_maps, *system.casimirs(x)}
    if isinstance(system, HamiltonianSystem):
        listed.add(system.energy_name)
    for name in out.before:  # the other first integrals (a Lax spectrum, m3, K, ...)
        if not name.startswith("casimir ") and name not in listed:
            items.append((f"integral {name}", rel(out.before[name], out.after[name], name),
                          "relative", failed))  # fmt: skip
    # do these h resolve the map at all? (its own error Φ_{2h}(x) − Φ_h(Φ_h(x)))
    pairs = [(k, k + 1) for k in range(len(hs) - 1)]
    resolved = defects.resolves(integrator, defects.own_errors(system, out, pairs),
                                floors["state"])  # fmt: skip
    x0 = flatten_state(system, x)
    back = np.stack([flatten_state(system, jax.tree.map(lambda a, i=i: a[i], out.back))
                     for i in range(len(hs))])  # fmt: skip
    rev = np.where(ok_both, np.max(np.abs(back - x0), axis=-1), np.nan)
    items.append(("reversibility", rev, "state", failed_both))
    own = set(out.before)
    for name in out.kept_before:
        if name not in own:
            values = rel(out.kept_before[name], out.kept_after[name], name)
            items.append((f"kept {name}", values, "relative", failed))
    rows = Checks()
    for name, values, kind, bad in items:
        seen = resolved or _declared(integrator, name)[0]
        scaling = defects.classify(hs, values, floors[kind], bad, resolved=seen)
        verdict = scaling.verdict + _against_declared(integrator, name, scaling)
        rows.append(PropertyCheck(name, float(scaling.defect[0]), scaling.exponent, verdict,
                                  scaling))  # fmt: skip
    return rows


def _declared(integrator: Integrator, name: str) -> tuple[bool, str]:
    """Whether the map declares the row's property kept, and the trait's word: its
    traits (symplectic, Poisson, symmetric, energy) or its own ``preserved`` ("kept")."""
    traits = integrator.traits
    declared = {"symplectic": (traits.symplectic, "symplectic"),
                "Poisson": (traits.poisson, "Poisson"),
                "reversibility": (traits.symmetric, "symmetric"),
                "energy H": (traits.energy, "energy-preserving")}  # fmt: skip
    if name.startswith("kept "):
        return True, "preserved"
    return declared.get(name, (False, ""))


# A measured exponent this far below the declared order's p + 1 contradicts it (the fit
# over h .. h/16 is good to a few hundredths where the defect is well above round-off).
_ORDER_SLACK = 0.3


def _against_declared(integrator: Integrator, name: str, scaling) -> str:
    """What the measurement says against the map's declared traits, as a clause for the
    verdict ("" where it agrees): a structure declared kept (symplectic, Poisson,
    symmetric, energy, a ``preserved`` quantity) measured not exact, or a quantity the
    exact flow keeps changing faster than the declared order allows (an order-p map moves
    it by O(h^(p+1)) a step)."""
    exact = scaling.verdict.startswith("exact")
    measured = scaling.verdict.startswith("O(h^") and scaling.exponent is not None
    if not (exact or measured):  # failed or unresolved: nothing to hold against it
        return ""
    traits = integrator.traits
    kept, word = _declared(integrator, name)
    if kept and not name.startswith("kept ") and not exact:
        return f" — contradicts the declared trait: {word}"
    if name.startswith("kept ") and not exact:
        return " — contradicts the map's own preserved()"
    flows_keep = name.startswith(("energy ", "Casimir ", "momentum ", "integral "))
    p, e = traits.order, scaling.exponent
    if flows_keep and measured and e is not None and p < EXACT and e < p + 1 - _ORDER_SLACK:
        return (
            f" — contradicts the declared order {p} (an order-{p} map changes it by "
            f"O(h^{p + 1}) a step)"
        )
    return ""
