"""What every command that writes a file shares: one writer per file, an unfinished
run kept unless replaced on purpose, and signals that end a run between chunks."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from pathlib import Path

import numpy as np

from mechint import io
from mechint.errors import InputError


class Stop:
    """SIGINT and SIGTERM handler: the first signal sets a flag that the run reads after
    each chunk (a chunk is short), so the run ends with its checkpoint written; a second
    signal exits at once (the file then holds the last checkpoint).  Raising from the
    handler instead could land inside a JAX or garbage-collector callback, where Python
    prints the exception and drops it."""

    def __init__(self):
        self.signum: int | None = None

    def __call__(self, signum, frame):
        if self.signum is not None:
            os.write(2, b"mechint: second signal: stopped at once; --out holds the last "
                        b"checkpoint; continue with --resume\n")  # fmt: skip
            os._exit(130)
        self.signum = signum

    def check(self) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt


@contextlib.contextmanager
def exclusive(out: Path):
    """Hold an exclusive lock on ``out`` (a lock file beside it, released by the kernel
    however this process ends): a second run on the same --out is refused in one line."""
    lock = out.with_name(f".{out.name}.lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a name too long for its lock file, a read-only folder
        raise InputError("--out", f"cannot lock {str(out)!r}: {exc.strerror}",
                         "choose a shorter name or a writable folder") from None  # fmt: skip
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise InputError("--out", f"{str(out)!r} is being written by another mechint "
                             f"run (pid {holder})", "wait for it to end, or choose another "
                             "--out") from None  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)  # while still held: a waiter finds no stale lock
    finally:
        os.close(fd)


def keep_unfinished(out: Path) -> None:
    """InputError if ``out`` holds an unfinished mechint run, segments of a run that its
    file does not say is complete (they would be discarded), or is a file that mechint
    did not write (not empty): each is replaced only with ``--overwrite``."""
    from mechint.runfile import segment_dir

    attrs = io.saved_attrs(out)
    if attrs is None and out.is_file() and out.stat().st_size > 0:
        raise InputError("--out", f"{str(out)!r} exists and is not a file mechint wrote",
                         "choose another --out, or replace it with --overwrite")  # fmt: skip
    complete = _flag(attrs.get("complete", 1)) if attrs is not None else 1
    if complete is None:  # not a value mechint writes: a file of another kind, or crafted
        raise InputError("--out", f"{str(out)!r} has a 'complete' attribute that mechint "
                         "does not write", "replace the file with --overwrite")  # fmt: skip
    if complete == 0 and attrs is not None and not _flag(attrs.get("stopped", 0)):
        steps = (_flag(attrs.get(k)) for k in ("steps", "steps_requested"))
        failed = _failed_step(out, attrs)
        if failed is not None:  # (--resume would refuse it: it would fail again)
            raise InputError("--out", f"{str(out)!r} holds a run that failed at step {failed} "
                             f"(of {_flag(attrs.get('steps_requested'))})",
                             "replace it with --overwrite, or choose another --out")  # fmt: skip
        resume = ("continue it with --resume, or " if out.suffix.lower() == ".nc"
                  else "a CSV run is not resumed (NetCDF .nc runs are): ")  # fmt: skip
        raise InputError("--out", f"{str(out)!r} holds an unfinished run ({next(steps)} "
                         f"of {next(steps)} steps)", f"{resume}replace it with "
                         "--overwrite")  # fmt: skip
    folder = segment_dir(out)
    if attrs is None and folder.is_dir() and any(folder.glob("[0-9]*.npz")):
        raise InputError("--out", f"{str(folder)!r} holds the samples of an unfinished run "
                         f"that {str(out)!r} does not", "move them away, or replace them "
                         "with --overwrite")  # fmt: skip


def _failed_step(out: Path, attrs: dict) -> int | None:
    """The first failed step a run's file records (its ``failed_step``: a NetCDF
    variable, or the CSV sidecar's entry in ``attrs``), or None: none, or not what
    mechint writes (never an exception: a crafted file is refused elsewhere)."""
    try:
        if out.suffix.lower() != ".nc":
            steps = np.asarray(attrs.get("failed_step", []))
        else:
            import h5py

            with h5py.File(out, "r") as fh:
                var = fh.get("failed_step")
                if not isinstance(var, h5py.Dataset) or (var.size or 0) > 1 << 20:
                    return None
                steps = np.asarray(var[()])
        if steps.dtype.kind not in "iu":
            return None
        steps = steps.ravel()
    except (OSError, ValueError, TypeError, KeyError):
        return None
    failed = steps[steps >= 0]
    return int(failed.min()) if failed.size else None


def _flag(value) -> int | None:
    """A whole-number attribute as mechint writes it (a scalar integer, or a float that is
    one), else None: never an exception, never the text of a crafted attribute echoed."""
    try:
        arr = np.asarray(value)
        if arr.shape != () or arr.dtype.kind not in "iuf" or not np.isfinite(arr):
            return None
        number = float(arr)
        return int(number) if number.is_integer() else None
    except (TypeError, ValueError, OverflowError):
        return None


@contextlib.contextmanager
def stop_on_signals():
    """A ``Stop`` installed for SIGINT and SIGTERM while the block runs."""
    stop = Stop()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            # after a stop, a later signal of the same burst exits as a second one does
            # (130, the message), never by the default action as the run winds down
            signal.signal(sig, stop if stop.signum is not None else handler)
