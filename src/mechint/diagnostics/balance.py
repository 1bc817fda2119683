"""The balances of a run of a forced system (``systems.Forced``): what the energy and the
momenta did against the work, the dissipation and the impulses the run carried.

For a run x_0, x_1, ... the energy balance is

    H(x_k) − H(x_0) − (W_k − W_0) + (D_k − D_0),

zero along the solution; a map keeps it to round-off where its discrete work and
dissipation are the exact change of H over its step (the average vector field and the
discrete gradients), to O(h^p) otherwise.  The momentum balance of a momentum map J is
J(x_k) − J(x_0) − (I_k − I_0), kept to round-off by the forced variational maps (the
forced discrete Noether theorem).  Both are given relative to the size of what they
balance, per member: max_k (|H_k| + |W_k| + |D_k|), max_k (|J_k| + |I_k|).
"""

from __future__ import annotations

import numpy as np

from mechint.errors import InputError
from mechint.systems.forced import Forced
from mechint.trajectory import Trajectory, invariants


def _forced(trajectory: Trajectory) -> Forced:
    if not isinstance(trajectory, Trajectory):
        raise InputError("trajectory", f"expected a Trajectory, got {type(trajectory).__name__}",
                         "pass the result of mechint.simulate of a Forced system")  # fmt: skip
    system = trajectory.system
    if not isinstance(system, Forced):
        raise InputError(
            "trajectory",
            f"is a run of {type(system).__name__}, not of a Forced system",
            "balances are kept by runs of mechint.systems.Forced",
        )
    return system


def _scaled(values: np.ndarray, size: np.ndarray, relative: bool, lead: int) -> np.ndarray:
    """values − values at the first sample, over the largest ``size`` of the member."""
    change = values - values[..., :1]
    if not relative:
        return change
    scale = np.nanmax(size, axis=lead - 1, keepdims=True)
    return change / np.where(scale > 0, scale, 1.0)


def energy_balance(trajectory: Trajectory, *, relative: bool = True) -> np.ndarray:
    """H(x_k) − H(x_0) − (W_k − W_0) + (D_k − D_0) at every saved sample (shaped like
    ``trajectory.t``, per member for a batch), relative to the member's energy scale
    max_k (|H_k| + |W_k| + |D_k|) unless ``relative=False``."""
    system = _forced(trajectory)
    lead = 2 if trajectory.batched else 1
    balance = invariants(system, trajectory.x, lead)["H_balance"]
    _, _, work, dissipated, _ = system.split(trajectory.x)
    H = balance + np.asarray(work) - np.asarray(dissipated)
    size = np.abs(H) + np.abs(work) + np.abs(dissipated)
    return _scaled(balance, size, relative, lead)


def momentum_balance(trajectory: Trajectory, *, relative: bool = True) -> dict[str, np.ndarray]:
    """J(x_k) − J(x_0) − (I_k − I_0) for each momentum map J of the system (by name),
    relative to max_k (|J_k| + |I_k|) of the member unless ``relative=False``."""
    system = _forced(trajectory)
    if not system.momenta:
        raise InputError(
            "trajectory",
            f"{system.base!r} declares no momentum map",
            "momentum balances exist for systems with momentum_maps (Kepler's L)",
        )
    lead = 2 if trajectory.batched else 1
    values = invariants(system, trajectory.x, lead)
    _, _, _, _, impulses = system.split(trajectory.x)
    out = {}
    for J, impulse in zip(system.momenta, impulses, strict=True):
        balance = values[f"{J}_balance"]
        size = np.abs(balance + np.asarray(impulse)) + np.abs(impulse)
        out[J] = _scaled(balance, size, relative, lead)
    return out
