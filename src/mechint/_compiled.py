"""Host-side evaluations (diagnostics, reports) as one compiled program each.

A system's invariants or Poisson tensor evaluated eagerly on a saved trajectory is a
dozen separate operations, each compiled for the trajectory's shape: thousands of small
compiles (and their memory) over a process's diagnostics.  ``compiled(fn, *args)`` runs
``fn(*static, *args)`` under ``jax.jit`` with ``fn`` and ``static`` static and every
argument traced (a system is a pytree: its parameters are traced, so a new inertia
reuses the program), once compiled per (fn, static, argument types and shapes).

``fn`` and ``static`` must hash by value: a module-level function or an unbound method
of a system class (``type(system).invariants``); integrators (frozen, hashable) go in
``static``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import partial

import jax


@partial(jax.jit, static_argnums=(0, 1))
def _run(fn, static, *args):
    out = fn(*static, *args)
    # a dict keeps its order (JAX flattens a plain dict by sorted keys)
    return OrderedDict(out) if type(out) is dict else out


def compiled(fn: Callable, *args, static: tuple = ()):
    """``fn(*static, *args)``, compiled once per (fn, static, argument shapes)."""
    out = _run(fn, tuple(static), *args)
    return dict(out) if isinstance(out, OrderedDict) else out
