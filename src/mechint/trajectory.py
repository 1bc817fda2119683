"""The result of a run: saved times and states, with what produced them."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class Trajectory:
    """Saved samples of a run.

    ``t``: (n_saved,) times; ``x``: states (n_saved, ...) or, for a batch, (B, n_saved, ...),
    a pytree of NumPy arrays for structured states.  ``orientation``: the attitudes
    g_k ∈ SO(n), (n_saved, n, n) or (B, n_saved, n, n), when the run carried them (else
    None).  ``system``, ``integrator``, ``h``, ``steps`` and ``save_every`` record what
    produced it; ``stats`` holds the wall time.
    """

    system: Any
    integrator: Any
    h: float
    t: np.ndarray
    x: Any
    steps: int
    save_every: int
    stats: dict = dataclasses.field(default_factory=dict)
    orientation: Any = None

    @property
    def batched(self) -> bool:
        import jax

        leaf = jax.tree.leaves(self.x)[0]
        shape = self.system.state_shape
        return leaf.ndim == len(shape) + 2

    def invariants(self) -> dict[str, np.ndarray]:
        """The system's invariants at every saved sample (arrays shaped like t, per member)."""
        return {k: np.asarray(v) for k, v in self.system.invariants(self.x).items()}

    def to_xarray(self):
        from mechint.io import to_dataset

        return to_dataset(self)

    def to_netcdf(self, path) -> None:
        from mechint.io import write_netcdf

        write_netcdf(self, path)

    def to_csv(self, path) -> None:
        from mechint.io import write_csv

        write_csv(self, path)

    def save(self, path) -> None:
        """Write NetCDF (.nc) or CSV (.csv), chosen by the extension."""
        from mechint.io import write

        write(self, path)


def concatenate(first: Trajectory, second: Trajectory) -> Trajectory:
    """``first`` continued by ``second``, a run started from ``first``'s last sample with the
    same system, integrator, h and save_every (its first sample, the shared state, is
    dropped).  Times are recomputed from ``first.t[0]`` exactly as ``simulate`` computes
    them, so a resumed run equals an uninterrupted one bit for bit."""
    import jax

    if (first.h, first.save_every) != (second.h, second.save_every):
        raise ValueError("h and save_every must agree to concatenate trajectories")
    axis = 1 if first.batched else 0

    def join(a, b):
        if a is None:
            return None
        tail = np.take(np.asarray(b), np.arange(1, np.asarray(b).shape[axis]), axis=axis)
        return np.concatenate([np.asarray(a), tail], axis=axis)

    x = jax.tree.map(join, first.x, second.x)
    n = jax.tree.leaves(x)[0].shape[axis]
    t = first.t[0] + first.h * (first.save_every * np.arange(n, dtype=np.float64))
    stats = {**first.stats, **second.stats}
    return dataclasses.replace(
        first,
        integrator=second.integrator,
        t=t,
        x=x,
        steps=first.steps + second.steps,
        stats=stats,
        orientation=join(first.orientation, second.orientation),
    )
