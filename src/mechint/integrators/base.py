"""What every integrator provides: the one-step map protocol of ``mechint.maps``.

An integrator is a frozen (hashable) dataclass subclassing ``Integrator``: its fields are
settings, so the driver can use it as a static argument and compile once per (system
type, integrator).  See ``mechint.maps`` for the contract and ``docs/extending.md`` for
how to add one.
"""

from mechint.maps import (
    EXACT,
    EXACT_TRAITS,
    ImplicitIntegrator,
    Integrator,
    Reason,
    Setting,
    StepStatus,
    Traits,
    Wrapper,
    combine,
    kept,
    ok_status,
    require_serves,
    serves_only,
    status,
)

__all__ = [
    "EXACT",
    "EXACT_TRAITS",
    "ImplicitIntegrator",
    "Integrator",
    "Reason",
    "Setting",
    "StepStatus",
    "Traits",
    "Wrapper",
    "combine",
    "kept",
    "ok_status",
    "require_serves",
    "serves_only",
    "status",
]
