"""Wall-clock timing shared by the benchmark scripts (not a benchmark itself)."""

from __future__ import annotations

import math
import time
from typing import Any, NamedTuple


class Timing(NamedTuple):
    best: float  # the fastest of the timed calls (s)
    first: float  # the warm-up call, compile included (s); nan without one
    result: Any  # what the last call returned


def best_of(fn, repeat: int = 3, warm: bool = False) -> Timing:
    """Call ``fn`` ``repeat`` times (after one warm-up call when ``warm``) and keep the
    fastest wall time."""
    first = math.nan
    if warm:
        t = time.perf_counter()
        fn()
        first = time.perf_counter() - t
    best, out = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return Timing(best, first, out)
