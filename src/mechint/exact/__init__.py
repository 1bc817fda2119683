"""Exact reference solutions."""

from mechint.exact.canonical import harmonic_oscillator, kepler
from mechint.exact.euler_top import attitude_flow as euler_top_attitude_flow
from mechint.exact.euler_top import euler_top, euler_top_attitude, regime
from mechint.exact.euler_top import flow as euler_top_flow
from mechint.exact.two_body import kepler_flow

__all__ = [
    "euler_top",
    "euler_top_attitude",
    "euler_top_attitude_flow",
    "euler_top_flow",
    "harmonic_oscillator",
    "kepler",
    "kepler_flow",
    "regime",
]
