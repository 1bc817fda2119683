"""The result of a run: saved times and states, with what produced them."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from mechint import io
from mechint._compiled import compiled
from mechint.maps import Reason


def reason_labels(codes) -> np.ndarray:
    """``maps.Reason`` codes as their labels (what files and datasets store)."""
    return np.vectorize(lambda code: Reason(int(code)).label, otypes=[object])(codes)


@dataclasses.dataclass(frozen=True, eq=False)
class Trajectory:
    """Saved samples of a run.

    ``t``: (n_saved,) times; ``x``: states (n_saved, ...) or, for a batch, (B, n_saved, ...),
    a pytree of NumPy arrays for structured states.  ``orientation``: the attitudes
    g_k ∈ SO(n), (n_saved, n, n) or (B, n_saved, n, n), when the run carried them (else
    None).  ``system``, ``integrator``, ``h``, ``steps`` and ``save_every`` record what
    produced it; ``stats`` holds the wall time and the part of it spent compiling
    (``wall_time``, ``compile_time``, seconds) and the number of compiled ``calls``;
    ``compensation``: for a compensated run, the Kahan–Babuška correction at every
    saved sample (shaped like ``x``), from which a resumed run continues bit for bit.
    ``clock``: for a run of ``integrators.ReversibleAdaptive``, (t, ρ) at every sample
    (the physical time since the start and the step density; shaped like a sample
    with a last axis of 2).  Variable steps (that clock, or a
    ``systems.TimeTransformed`` system's time): ``t`` is the physical time for one
    trajectory, the driver's t0 + k h (the fictive time) for a batch, whose members'
    physical times differ (read them from ``clock`` or the state).
    ``tangent``: for a run of ``integrators.Tangent``, its tangent part at every sample
    (one flat array each: the vectors and the sums of their growth;
    ``diagnostics.lyapunov`` and ``diagnostics.megno`` read it).
    ``events``: each ``mechint.Event``'s ``events.Crossings`` by name (times, states,
    count, overflowed), when the run had events.  ``stopped_step``: per member the step
    at whose end a terminal event ended its run (−1 where none did; its samples from
    that step on are NaN), ``stopped_by`` that event's name ("" where none).
    ``loop_state``: for a map that carries coordinates of its own between the states it
    shows (``Integrator.own_coordinates``: the Wisdom–Holman maps), the loop's state at
    the last sample (shaped like a sample), from which a continued run
    (``simulate(..., loop_state=...)``) goes on bit for bit; else None.
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
    reason_code: Any = 0
    compensation: Any = None
    clock: Any = None
    tangent: Any = None
    events: dict = dataclasses.field(default_factory=dict)
    stopped_step: Any = -1
    stopped_by: Any = ""
    loop_state: Any = None

    def __repr__(self) -> str:
        """One line: what ran, the shapes, the time span and the failures (not the data)."""
        shapes = ", ".join(
            f"{field[0]}{tuple(np.shape(leaf))}"
            for field, leaf in zip(self.system.state_fields, jax.tree.leaves(self.x), strict=False)
        )
        span = (
            f"t in [{float(self.t[0]):g}, {float(self.t[-1]):g}]" if len(self.t) else "no samples"
        )
        failed = int(np.sum(self.failed))
        stopped = int(np.sum(self.stopped))
        ended = f", {stopped} stopped by a terminal event" if stopped else ""
        extra = f", g{tuple(np.shape(self.orientation))}" if self.orientation is not None else ""
        crossed = "".join(f"; {key}: {int(np.sum(c.count))} crossings"
                          for key, c in self.events.items())  # fmt: skip
        return (
            f"Trajectory({self.system!r}, {self.integrator!r}, h={self.h:g}, steps={self.steps}, "
            f"save_every={self.save_every}, {len(self.t)} samples, {span}; {shapes}{extra}; "
            f"{failed} failed{ended}{crossed})"
        )

    def table(self, member: int | None = None, rows: int = 5, columns: int = 8) -> str:
        """A text table of the samples as ``to_csv`` names their columns (t, then each
        state component): the first and last ``rows`` samples, the first ``columns``
        components (a batch: of ``member``, 0 by default), and a line saying what was
        left out."""
        arrays = [(name, a) for name, _dims, a in io._leaves(self)]
        if self.batched:
            b = 0 if member is None else int(member)
            arrays = [(name, a[b]) for name, a in arrays]
        names = io.csv_names(arrays, {}, False)[1:]
        n = len(self.t)
        values = np.concatenate([np.reshape(a, (n, -1)) for _, a in arrays], axis=1)
        shown = min(columns, len(names))
        picked = np.arange(n) if n <= 2 * rows else np.r_[:rows, n - rows : n]
        header = ["t", *names[:shown]]
        body = [[f"{self.t[k]:.6g}", *(f"{v:.6g}" for v in values[k, :shown])] for k in picked]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(header, widths, strict=True))]
        for i, r in enumerate(body):
            if n > 2 * rows and i == rows:
                lines.append("  ".join("⋮".rjust(w) for w in widths))
            lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
        left = [f"{n - len(picked)} samples"] if len(picked) < n else []
        left += [f"{len(names) - shown} columns"] if shown < len(names) else []
        notes = [f"member {0 if member is None else member} of "
                 f"{np.shape(self.failed_step)[0]}"] if self.batched else []  # fmt: skip
        notes += [" and ".join(left) + " not shown"] if left else []
        if notes:
            lines.append(f"({'; '.join(notes)})")
        return "\n".join(lines)

    @property
    def base_state(self) -> Any:
        """The samples as states of the system the user started from: for a
        ``systems.TimeTransformed`` run, its base's (q, p) with the time t and its
        conjugate e removed (``physical_time`` gives t); ``x`` otherwise."""
        strip = getattr(self.system, "base_state", None)
        return self.x if strip is None else strip(self.x)

    def elapsed(self) -> np.ndarray | None:
        """The physical time since the run's start of every sample of a variable-step
        run (a ``ReversibleAdaptive`` clock's t, a ``TimeTransformed`` state's own time),
        shaped like a sample's leading axes; None for a run of uniform steps.  It counts
        from the first start of a continued run (the clock and the state carry it)."""
        if self.clock is not None:
            return np.asarray(self.clock)[..., 0]
        if hasattr(self.system, "physical_time"):
            return np.asarray(self.system.physical_time(self.x))
        return None

    @property
    def physical_time(self) -> np.ndarray:
        """The physical time of every sample, shaped like a sample's leading axes ((T,),
        or (B, T) for a batch): of a variable-step run (a ``ReversibleAdaptive`` clock, a
        ``TimeTransformed`` state) each member's own; ``t`` otherwise (a batch's
        broadcast over its members)."""
        own = self.elapsed()
        t = np.asarray(self.t, dtype=np.float64)
        if own is None:
            lead = np.shape(jax.tree.leaves(self.x)[0])[: 2 if self.batched else 1]
            return np.broadcast_to(t, lead).copy()
        if not self.batched:  # t is already the physical time (t0 + the state's own)
            return t
        return t[0] + own.astype(np.float64)  # a batch's t[0] is the run's t0

    @property
    def reason(self) -> np.ndarray:
        """Why each member failed, as the labels files store ("ok" where it did not):
        ``reason_code`` (``maps.Reason`` codes) read as words."""
        return reason_labels(self.reason_code)

    @property
    def failed(self) -> np.ndarray:
        """Which members failed (a bool array shaped like ``failed_step``)."""
        return np.asarray(self.failed_step) >= 0

    @property
    def stopped(self) -> np.ndarray:
        """Which members a terminal event ended before the run's last step (a bool array
        shaped like ``stopped_step``)."""
        return np.asarray(self.stopped_step) >= 0

    @property
    def batched(self) -> bool:
        leaf = jax.tree.leaves(self.x)[0]
        _, dims = self.system.state_fields[0]  # the first leaf's own axes (its shape may
        return leaf.ndim == len(dims) + 2  # differ from the last leaf's, state_shape)

    def invariants(self) -> dict[str, np.ndarray]:
        """The system's invariants at every saved sample (arrays shaped like t, per member)."""
        return invariants(self.system, self.x, 2 if self.batched else 1)

    def to_xarray(self):
        return io.to_dataset(self)

    def to_netcdf(self, path) -> None:
        io.write_netcdf(self, path)

    def to_csv(self, path) -> None:
        io.write_csv(self, path)

    def save(self, path) -> None:
        """Write NetCDF (.nc) or CSV (.csv), chosen by the extension."""
        io.write(self, path)


# Invariants are evaluated in blocks of this many samples, one compiled program for
# every block: a sample's value is then the same bits however a run was chunked (XLA
# may vectorise an array of another length differently, which moves the last ulp).  A
# large sample takes fewer a block, a power of two that keeps the block within
# INVARIANT_BLOCK_NUMBERS numbers (a function of the sample's size alone, so the same
# for every chunk of a run): 10⁵ free bodies padded to 1024 samples took 6.9 GiB.
INVARIANT_BLOCK = 1024
INVARIANT_BLOCK_NUMBERS = 1 << 22


def _block(sample_numbers: int) -> int:
    """Samples a block holds: INVARIANT_BLOCK, or fewer for a large sample."""
    fit = max(1, INVARIANT_BLOCK_NUMBERS // max(sample_numbers, 1))
    return min(INVARIANT_BLOCK, 1 << (fit.bit_length() - 1))


def multipliers(system, x, lead: int) -> np.ndarray:
    """``system.multipliers`` at every state of ``x`` (``lead`` leading sample axes), in
    blocks as ``invariants``."""
    return invariants(system, x, lead, _multipliers)["multipliers"]


def _multipliers(system, x) -> dict:
    return {"multipliers": system.multipliers(x)}


def invariants(system, x, lead: int, function=None) -> dict[str, np.ndarray]:
    """``system.invariants`` (or ``function(system, x)``, a dict of arrays) at every
    state of ``x`` (``lead`` leading sample axes), in blocks of ``_block`` states: each
    value independent of the array's size."""
    leaves, treedef = jax.tree.flatten(x)
    shape = np.shape(leaves[0])[:lead]
    n = int(np.prod(shape))
    flat = [np.reshape(np.asarray(a), (n, *np.shape(a)[lead:])) for a in leaves]
    size = _block(sum(int(np.prod(a.shape[1:])) for a in flat))
    parts: dict[str, list[np.ndarray]] = {}
    for start in range(0, max(n, 1), size):
        block = []
        for a in flat:
            b = a[start : start + size]
            if len(b) < size:  # padded with its last state (or zeros)
                fill = b[-1:] if len(b) else np.zeros((1, *a.shape[1:]), a.dtype)
                b = np.concatenate([b, np.repeat(fill, size - len(b), axis=0)])
            block.append(b)
        fn = function or type(system).invariants
        values = compiled(fn, system, jax.tree.unflatten(treedef, block))
        for k, v in values.items():
            parts.setdefault(k, []).append(np.asarray(v))
    return {k: (lambda a: a[:n].reshape(*shape, *a.shape[1:]))(np.concatenate(v))
            for k, v in parts.items()}  # fmt: skip
