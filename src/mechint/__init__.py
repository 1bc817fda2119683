"""mechint: mechanical integrators that keep the geometry of mechanics.

Importing mechint enables float64 in JAX (``jax_enable_x64``), and passes
``MECHINT_SMALL_LOOP_BYTES``, where set, to XLA's CPU backend (``_xla``: step loops of
small systems compiled as one function, several times faster for implicit maps and
splittings, at the cost of more batch members differing from their runs alone in the
last bits).
"""

import jax

from mechint import _xla

jax.config.update("jax_enable_x64", True)
_xla.set_small_loops()

from mechint import (  # noqa: E402
    attitude,
    diagnostics,
    exact,
    integrators,
    lie,
    maps,
    solvers,
    stability,
    systems,
)
from mechint._version import __version__  # noqa: E402
from mechint.errors import (  # noqa: E402
    InputError,
    SpecialCaseWarning,
    StepFailure,
    UnsupportedError,
)
from mechint.events import Crossings, Event  # noqa: E402
from mechint.integrate import Solution, integrate  # noqa: E402
from mechint.simulate import simulate  # noqa: E402
from mechint.sweeps import sweep  # noqa: E402
from mechint.trajectory import Trajectory  # noqa: E402

__all__ = [
    "Crossings",
    "Event",
    "InputError",
    "Solution",
    "SpecialCaseWarning",
    "StepFailure",
    "Trajectory",
    "UnsupportedError",
    "__version__",
    "attitude",
    "diagnostics",
    "exact",
    "integrate",
    "integrators",
    "lie",
    "maps",
    "simulate",
    "solvers",
    "stability",
    "sweep",
    "systems",
]
