"""Registering frozen dataclasses as JAX pytrees without re-running their validation."""

from __future__ import annotations

from collections.abc import Sequence

import jax


def register_pytree(cls=None, *, data: Sequence[str] = (), meta: Sequence[str] = ()):
    """Class decorator: ``data`` fields are pytree leaves, ``meta`` fields are static.

    Unflattening bypasses ``__init__``, so constructor validation runs on user input only,
    never on tracers inside ``jit``/``vmap``.
    """
    data, meta = tuple(data), tuple(meta)

    def wrap(klass):
        def flatten(obj):
            return [getattr(obj, f) for f in data], tuple(getattr(obj, f) for f in meta)

        def unflatten(aux, children):
            obj = object.__new__(klass)
            for f, v in zip(data, children, strict=True):
                object.__setattr__(obj, f, v)
            for f, v in zip(meta, aux, strict=True):
                object.__setattr__(obj, f, v)
            return obj

        jax.tree_util.register_pytree_node(klass, flatten, unflatten)
        return klass

    return wrap if cls is None else wrap(cls)
