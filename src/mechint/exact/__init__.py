"""Exact reference solutions."""

from mechint.exact.euler_top import euler_top, regime

__all__ = ["euler_top", "regime"]
