"""Lie-algebra helpers: hat/vee for so(3)."""

from mechint.lie.so3 import hat, vee

__all__ = ["hat", "vee"]
