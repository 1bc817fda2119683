"""What a run will hold, estimated before it starts: memory and disk from its saved samples.

A run kept in memory (``simulate``, a sweep's dataset) holds every saved sample (the
states, and at writing their invariants and the dataset built from them); a streamed run
(``mechint run``: ``simulate(keep=False)`` into ``runfile.RunFile``) holds one chunk and
one merge slice at a time, at most ``STREAMED_NUMBERS`` numbers, however long it is.
Both write one file, proportional to the number of saved samples, steps / save_every + 1,
times the numbers in a sample: the state (per batch member), the attitude when carried,
the system's invariants and the time.  Measured (``mechint run``, Euler top, 4·10⁶
samples of 48 bytes in the file): 2.65 bytes of resident memory per byte of file, so
``MEMORY_PER_FILE_BYTE`` = 3; CSV spends about 25 characters a number (``%.17g`` and a
comma).  The disk must hold the old file and the new one at once while a merge renames
one over the other (twice the file), less what a resumed run's file and segments
already take.  A run whose estimate exceeds what the machine has is refused in one line,
with the ``--save-every`` that would fit (or, when resuming, the space to free).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from mechint import _validate
from mechint.errors import InputError

MEMORY_PER_FILE_BYTE = 3.0
CSV_BYTES_PER_NUMBER = 25
# the share of the available memory (and free disk) a run may plan to use
_SHARE = 0.8


@dataclasses.dataclass(frozen=True)
class Footprint:
    samples: int  # saved samples (per member)
    file_bytes: int  # the output file
    memory_bytes: int  # resident memory for the saved samples


# numbers a streamed run holds at most: a chunk's samples (simulate's buffer, the
# runfile's pending samples up to a segment) and a merge slice (runfile.SLICE_NUMBERS)
STREAMED_NUMBERS = 4 << 21


def footprint(system, x0, steps: int, save_every: int, *, dtype: str = "float64",
              orientation: bool = False, csv: bool = False,
              streamed: bool = False) -> Footprint:  # fmt: skip
    """The estimate for a run of ``steps`` steps saving every ``save_every`` from ``x0``
    (validated, batched or not); ``streamed``: the samples go to a file as the run goes
    (memory bounded by ``STREAMED_NUMBERS``)."""
    x0 = jax.tree.map(jnp.asarray, x0)
    batched = system.validate_state(x0)[1]
    leaves = jax.tree.leaves(x0)
    batch = leaves[0].shape[0] if batched else 1
    state = sum(int(np.prod(a.shape)) for a in leaves)  # numbers, all members
    invariants = len(jax.eval_shape(system.invariants, x0))
    n = system.state_shape[-1] if orientation else 0
    per_member = invariants + n * n
    itemsize = np.dtype(dtype).itemsize
    samples = steps // save_every + 1
    numbers = state + per_member * batch + 1  # + the time
    binary = samples * (state * itemsize + (per_member * batch + 1) * 8)
    file_bytes = samples * numbers * CSV_BYTES_PER_NUMBER if csv else binary
    memory = MEMORY_PER_FILE_BYTE * binary
    if streamed:
        memory = min(memory, MEMORY_PER_FILE_BYTE * 8 * STREAMED_NUMBERS)
    return Footprint(samples, int(file_bytes), int(memory))


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux: MemAvailable), None if
    unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def require_fits(estimate: Footprint, steps: int, save_every: int, out: Path | None,
                 parameter: str = "--save-every", replaces: int = 0,
                 members: str = "the initial states", runs: int | None = None) -> None:  # fmt: skip
    """InputError naming ``parameter`` when the run's samples would not fit in the
    available memory or, with ``out``, on the free disk beside it (with the save interval
    that would fit).  ``replaces``: bytes on disk the run will free as it goes (a resumed
    run's file and segments); such a run is told to free space, since another
    ``--save-every`` would be another run.  When even the first and the last sample
    would not fit, no save interval helps: the error names ``members`` (what sets the
    number of runs; ``runs`` of them, by default the estimate's samples over one run's)
    and how many would fit."""
    limits = []
    memory = available_memory()
    if memory is not None:
        limits.append(("memory", estimate.memory_bytes, memory))
    if out is not None:
        folder = out.parent if str(out.parent) else Path(".")
        # an atomic rewrite holds the old file and the new one at once
        free = shutil.disk_usage(folder).free + replaces
        limits.append(("disk", 2 * estimate.file_bytes, free))
    for what, need, have in limits:
        if need > _SHARE * have:
            if replaces and what == "disk":
                raise InputError(
                    "--resume",
                    f"the finished run needs about {_size(need)} of disk, more than the "
                    f"{_size(have)} this run may use (its file and segments included)",
                    f"free {_size(need / _SHARE - have)} beside {str(out)!r}",
                )
            factor = need / (_SHARE * have)
            per_run = steps // save_every + 1
            least = min(2, per_run)
            if factor * least > per_run:  # not even the first and the last fit
                runs = max(1, estimate.samples // per_run) if runs is None else runs
                fit = int(runs * per_run / (factor * least))
                raise InputError(
                    members,
                    f"{estimate.samples:,} saved samples need about {_size(need)} of {what}, "
                    f"more than the {_size(have)} available, and saving only the first and "
                    "the last state would still not fit",
                    f"about {fit:,} of the {runs:,} runs (members) would fit, saving only "
                    "their first and last states: run fewer at a time",
                )
            fits = _validate.divisor_near(steps, int(save_every * factor) + 1, at_least=True)
            raise InputError(
                parameter,
                f"{estimate.samples:,} saved samples need about {_size(need)} of {what}, "
                f"more than the {_size(have)} available",
                f"save fewer: {parameter} {fits} (a divisor of the steps) or more",
            )


def require_buffer(parameter: str, numbers: float, what: str, fix: str,
                   itemsize: int = 8) -> None:  # fmt: skip
    """InputError naming ``parameter`` when a buffer of ``numbers`` numbers (events'
    slots, states at save times, drawn states) would not fit in the available memory,
    checked before anything is allocated."""
    need = float(numbers) * itemsize
    have = available_memory()
    if have is not None and need > _SHARE * have:
        raise InputError(parameter, f"{what} would take {_size(need)}, and "
                         f"{_size(have)} of memory is available", fix)  # fmt: skip


def require_run_buffers(x0, members: int, n_events: int, max_events: int, save_at,
                        itemsize: int = 8) -> None:  # fmt: skip
    """A run's events' slots (a crossing holds a state, its step and time) and states at
    the save times fit in memory: ``require_buffer``, before any is allocated."""
    state = sum(int(np.size(a)) for a in jax.tree.leaves(x0)) // max(members, 1)
    if n_events:
        require_buffer("max_events", n_events * members * max_events * (state + 2.0),
                       f"{n_events} event(s) × {members} member(s) × {max_events} crossings",
                       "keep fewer crossings (max_events)", itemsize)  # fmt: skip
    if save_at is not None:
        times = int(np.size(save_at))
        require_buffer("save_at", times * members * (state + 1.0),
                       f"{times} save times × {members} member(s)",
                       "save fewer times, or run fewer members at once", itemsize)  # fmt: skip


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"
