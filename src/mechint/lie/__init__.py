"""Lie-algebra helpers: hat/vee for so(3); so(n), Symm(n), commutators, Cayley."""

from mechint.lie.so3 import hat, vee
from mechint.lie.son import (
    cayley,
    commutator,
    orthonormalize,
    skew,
    so_dim,
    so_hat,
    so_index,
    so_vee,
    sym,
    sym_dim,
    sym_hat,
    sym_index,
    sym_vee,
)

__all__ = [
    "cayley",
    "commutator",
    "hat",
    "orthonormalize",
    "skew",
    "so_dim",
    "so_hat",
    "so_index",
    "so_vee",
    "sym",
    "sym_dim",
    "sym_hat",
    "sym_index",
    "sym_vee",
    "vee",
]
