"""The result of a run: saved times and states, with what produced them."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from mechint import io
from mechint._compiled import compiled


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
    failed_step: Any = -1
    residual: Any = 0.0
    reason: Any = "ok"

    @property
    def failed(self) -> np.ndarray:
        """Which members failed (a bool array shaped like ``failed_step``)."""
        return np.asarray(self.failed_step) >= 0

    @property
    def batched(self) -> bool:
        leaf = jax.tree.leaves(self.x)[0]
        shape = self.system.state_shape
        return leaf.ndim == len(shape) + 2

    def invariants(self) -> dict[str, np.ndarray]:
        """The system's invariants at every saved sample (arrays shaped like t, per member)."""
        values = compiled(type(self.system).invariants, self.system, self.x)
        return {k: np.asarray(v) for k, v in values.items()}

    def to_xarray(self):
        return io.to_dataset(self)

    def to_netcdf(self, path) -> None:
        io.write_netcdf(self, path)

    def to_csv(self, path) -> None:
        io.write_csv(self, path)

    def save(self, path) -> None:
        """Write NetCDF (.nc) or CSV (.csv), chosen by the extension."""
        io.write(self, path)


def concatenate(first: Trajectory, second: Trajectory) -> Trajectory:
    """``first`` continued by ``second``, a run started from ``first``'s last sample with the
    same system, integrator, h and save_every (its first sample, the shared state, is
    dropped).  Times are recomputed from ``first.t[0]`` exactly as ``simulate`` computes
    them, so a resumed run equals an uninterrupted one bit for bit."""
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


def read_checkpoint(path, system, integrator) -> tuple[Trajectory, dict, str]:
    """The trajectory saved in the NetCDF file ``path`` (by ``mechint run``), rebuilt for
    ``system`` and ``integrator``, the file's attributes, and the checksum of what was
    read (``io.checksum``: equal to the ``checksum`` attribute unless the file was changed
    after it was written)."""
    import xarray as xr  # imported when used (see io.to_dataset)

    with xr.open_dataset(path, engine="h5netcdf") as ds:
        ds = ds.load()
    arrays = [(name, np.asarray(ds[name].values)) for name, _dims in system.state_fields]
    if "g" in ds:
        arrays.append(("g", np.asarray(ds["g"].values)))
    leaves = [a for _, a in arrays[: len(system.state_fields)]]
    x = leaves[0] if len(leaves) == 1 else tuple(leaves)
    g = arrays[-1][1] if "g" in ds else None
    attrs = {k: v.item() if isinstance(v, np.generic) else v for k, v in ds.attrs.items()}
    t = np.asarray(ds["time"].values)
    traj = Trajectory(
        system=system,
        integrator=integrator,
        h=float(attrs["h"]),
        t=t,
        x=x,
        steps=int(attrs["steps"]),
        save_every=int(attrs["save_every"]),
        stats={"steps_requested": int(attrs.get("steps_requested", attrs["steps"]))},
        orientation=g,
    )
    return traj, attrs, io.checksum(attrs, t, arrays)
