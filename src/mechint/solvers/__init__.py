"""Solvers for implicit steps (Newton with exact Jacobians, status instead of exceptions)."""

from mechint.solvers.newton import Newton, NewtonStatus

__all__ = ["Newton", "NewtonStatus"]
