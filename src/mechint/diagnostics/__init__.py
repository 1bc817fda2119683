"""Measurements of a run or a map: invariant errors, structural defects, power laws."""

from mechint.diagnostics.fit import PowerLaw, fit_power_law
from mechint.diagnostics.invariants import invariant_errors, preserved_errors
from mechint.diagnostics.structure import jacobian, poisson_defect, symplectic_defect

__all__ = [
    "PowerLaw",
    "fit_power_law",
    "invariant_errors",
    "jacobian",
    "poisson_defect",
    "preserved_errors",
    "symplectic_defect",
]
