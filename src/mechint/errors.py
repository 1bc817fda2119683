"""The exceptions mechint raises.

``InputError`` is raised before any work starts; its message names the parameter and
the fix.  ``StepFailure`` stops a run in the middle (singular linear solve, Newton not
converged, non-finite state) and carries what was computed before the failing step.
``SpecialCaseWarning`` says that a system's numbers are a case mechint knows better.
"""

from __future__ import annotations

from typing import Any


class InputError(ValueError):
    """Bad input, detected before any work: the message names the parameter and the fix."""

    def __init__(self, parameter: str, problem: str, fix: str | None = None):
        self.parameter = parameter
        self.problem = problem
        self.fix = fix
        message = f"{parameter}: {problem}"
        if fix:
            message += f"; {fix}"
        super().__init__(message)


class UnsupportedError(InputError):
    """An integrator asked to advance a system it cannot serve."""


class SpecialCaseWarning(UserWarning):
    """A system given by numbers that make it a known special case which mechint has as
    its own system (more integrals, exact flows): the message names it."""


class StepFailure(RuntimeError):
    """A step of a run failed; the run stopped there and kept what it had computed.

    Attributes
    ----------
    step : int
        The 1-based number of the step that failed (the state before it is step - 1).
    residual : float
        The failing step's residual (|det| of a Kahan matrix, Newton residual, ...).
    reason : str
        What failed.
    trajectory : Trajectory or None
        Every saved sample computed before the failing step.
    last_state : Any
        The state just before the failing step (of the failing batch member).
    batch_index : int or None
        Which member of a batch failed first (None for a single trajectory).
    code : mechint.maps.Reason or None
        The reason code of the failed step (``reason`` is its text).
    saved : int or None
        How many samples the run saved before the failing step in all (more than
        ``trajectory`` holds when earlier chunks were handed to ``on_chunk`` and
        forgotten: ``simulate(..., keep=False)``).
    failure : dict or None
        The run's failure record per member, as a file stores it (``failed_step``,
        ``residual``, ``reason`` labels), also when ``trajectory`` holds no sample.
    """

    def __init__(
        self,
        step: int,
        residual: float,
        reason: str,
        trajectory: Any = None,
        last_state: Any = None,
        batch_index: int | None = None,
        code: Any = None,
        saved: int | None = None,
        failure: dict | None = None,
    ):
        self.step = int(step)
        self.residual = float(residual)
        self.reason = reason
        self.trajectory = trajectory
        self.last_state = last_state
        self.batch_index = batch_index
        self.code = code
        self.failure = failure
        where = "" if batch_index is None else f" (batch member {batch_index})"
        kept = ""
        if trajectory is not None:
            count = len(trajectory.t) if saved is None else saved
            kept = f"; kept {count} saved samples up to t = {float(trajectory.t[-1]):.6g}"
        super().__init__(
            f"step {self.step} failed{where}: {reason} (residual {self.residual:.3e}){kept}"
        )
