"""Exact reference solutions."""

from mechint.exact.canonical import harmonic_oscillator, kepler
from mechint.exact.euler_top import euler_top, regime

__all__ = ["euler_top", "harmonic_oscillator", "kepler", "regime"]
