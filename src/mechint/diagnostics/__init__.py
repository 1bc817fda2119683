"""Measurements of a run or a map: invariant errors and drift, one-step structural
defects and their scaling in h, observed order, power-law fits, integrals found from
orbits (``find_integrals``), chaos indicators of runs with tangent vectors
(``lyapunov``, ``megno``)."""

from mechint.diagnostics.balance import energy_balance, momentum_balance
from mechint.diagnostics.chaos import lyapunov, megno
from mechint.diagnostics.comparison import Comparison, compare, reference_state
from mechint.diagnostics.defects import (
    DefectScaling,
    casimir_defects,
    classify,
    defect_exponent,
    energy_defect,
    momentum_defect,
    reversibility_defect,
)
from mechint.diagnostics.fit import PowerLaw, fit_power_law
from mechint.diagnostics.integrals import Integrals, find_integrals, monomials
from mechint.diagnostics.invariants import invariant_errors, preserved_errors
from mechint.diagnostics.order import InvariantDrift, OrderFit, drift, observed_order
from mechint.diagnostics.report import Checks, PropertyCheck, check
from mechint.diagnostics.structure import (
    jacobian,
    measure_defect,
    poisson_defect,
    poisson_defects,
    symplectic_defect,
    symplectic_defects,
)

__all__ = [
    "Checks",
    "Comparison",
    "DefectScaling",
    "Integrals",
    "InvariantDrift",
    "OrderFit",
    "PowerLaw",
    "PropertyCheck",
    "casimir_defects",
    "check",
    "classify",
    "compare",
    "defect_exponent",
    "drift",
    "energy_balance",
    "energy_defect",
    "find_integrals",
    "fit_power_law",
    "invariant_errors",
    "jacobian",
    "lyapunov",
    "measure_defect",
    "megno",
    "momentum_balance",
    "momentum_defect",
    "monomials",
    "observed_order",
    "poisson_defect",
    "poisson_defects",
    "preserved_errors",
    "reference_state",
    "reversibility_defect",
    "symplectic_defect",
    "symplectic_defects",
]
