"""Measurements of a run or a map: invariant errors and fitted power laws."""

from mechint.diagnostics.fit import PowerLaw, fit_power_law
from mechint.diagnostics.invariants import invariant_errors, preserved_errors

__all__ = ["PowerLaw", "fit_power_law", "invariant_errors", "preserved_errors"]
