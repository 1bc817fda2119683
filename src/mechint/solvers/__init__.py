"""Solvers for implicit steps (Newton with exact Jacobians, status instead of exceptions)."""

from mechint.solvers.linear import inverse, solve
from mechint.solvers.newton import Newton, NewtonStatus

__all__ = ["Newton", "NewtonStatus", "inverse", "solve"]
