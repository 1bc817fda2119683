"""``mechint sweep``: run an experiment file (TOML) to one NetCDF dataset."""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from mechint import io, resources, sweeps
from mechint.cli import guard, parsing
from mechint.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a parameter sweep from an experiment file",
        description="Run every grid point × integrator × h × initial state of an experiment "
        "(TOML; see mechint.sweeps) in vmapped batches, here or on a Dask cluster, and write "
        "one dataset with a dimension per swept parameter.",
        epilog="example:\n  mechint sweep experiment.toml --out results.nc --cluster local:2",
    )
    p.add_argument("experiment", help="the experiment file (.toml); a potential it names as "
                   "package.module:function is imported and run like code: trust the file "
                   "as you would a script")  # fmt: skip
    p.add_argument("--out", required=True, help="output file (.nc)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="a running Dask scheduler, tcp://HOST:PORT")
    where.add_argument("--cluster", help="start a local Dask cluster: local:N (N workers)")
    p.add_argument(
        "--checkpoint-every",
        default="1",
        help="write the finished tasks at most every this many seconds (default 1; 0: after "
        "every task); a killed sweep keeps them",
    )
    p.add_argument("--resume", action="store_true", help="continue the interrupted sweep in --out")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an unfinished sweep in --out (without it, an unfinished sweep is kept: "
        "continue it with --resume)",
    )
    p.set_defaults(handler=handle)


def _write(ds, out) -> None:
    """The dataset, checksummed, written under a temporary name and renamed over --out."""
    ds.attrs["checksum"] = sweeps.checksum(ds)
    tmp = out.with_name(f".{out.name}.part.nc")
    ds.to_netcdf(tmp, engine="h5netcdf")
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    tmp.replace(out)


def handle(args: argparse.Namespace) -> int:
    out = io.check_writable(args.out, "--out", {".nc": "netcdf"})
    if args.cluster is not None:
        sweeps.cluster_size(args.cluster, "--cluster")
    if args.scheduler is not None and not args.scheduler.startswith(("tcp://", "tls://")):
        raise InputError("--scheduler", f"expected tcp://HOST:PORT, got {args.scheduler!r}")
    every = parsing.nonnegative_float("--checkpoint-every", args.checkpoint_every)
    experiment = sweeps.load(args.experiment)
    resources.require_fits(sweeps.footprint(experiment), experiment.steps,
                           experiment.save_every, out, parameter="save_every",
                           members="initial")  # fmt: skip
    with guard.exclusive(out):
        if not args.resume and not args.overwrite:
            guard.keep_unfinished(out)
        previous = _previous(out, experiment) if args.resume else None
        return _sweep(args, experiment, out, every, previous)


def _sweep(args, experiment, out, every, previous) -> int:
    from tqdm.auto import tqdm

    state = {"make": None, "last": time.monotonic()}
    work = sweeps.tasks(experiment)
    finished = 0 if previous is None else len(sweeps.finished_results(experiment, previous, work))
    bar = tqdm(total=len(work), initial=finished, unit="task", delay=2.0, file=sys.stderr,
               leave=False)  # fmt: skip
    with bar, guard.stop_on_signals() as stop:

        def on_result(make):
            bar.update(1)
            state["make"] = make
            if time.monotonic() - state["last"] >= every:
                _write(make(), out)
                state["last"] = time.monotonic()
            stop.check()  # a signal arrived: end after this task, its result written

        try:
            ds = sweeps.sweep(
                experiment,
                scheduler=args.scheduler,
                cluster=args.cluster,
                on_result=on_result,
                previous=previous,
            )
        except InputError as exc:  # the scheduler's error names the option it came from
            if exc.parameter in ("scheduler", "cluster"):
                raise InputError(f"--{exc.parameter}", exc.problem, exc.fix) from None
            raise
        except KeyboardInterrupt:
            if state["make"] is not None:
                _write(state["make"](), out)
            print(f"interrupted: {out} holds the finished tasks; continue with --resume",
                  file=sys.stderr)  # fmt: skip
            raise
    _write(ds, out)
    failed = int(np.sum(ds["failed_step"].values >= 0))
    dims = ", ".join(f"{k} {v}" for k, v in ds.sizes.items())
    print(f"wrote {out}: {dims}; {failed} failed runs")
    return 0


def _previous(out, experiment):
    if not out.is_file():
        raise InputError("--resume", f"no sweep to continue at {str(out)!r}")
    io.check_stored(out, "--resume")  # before a byte of data is read
    if not io.same_attr((io.saved_attrs(out) or {}).get("experiment"),
                        sweeps.experiment_key(experiment)):  # fmt: skip
        raise InputError(
            "--resume", f"{str(out)!r} holds another experiment", "run it again without --resume"
        )
    try:
        import xarray as xr  # imported when used (see io.to_dataset)

        with xr.open_dataset(out, engine="h5netcdf") as ds:
            ds = ds.load()
    except (OSError, ValueError) as exc:
        raise InputError("--resume", f"cannot read {str(out)!r}: {exc}") from None
    if ds.attrs.get("checksum") != sweeps.checksum(ds):
        raise InputError("--resume", f"{str(out)!r} was changed after it was written (its data "
                         "or record disagree with its checksum)", "run it again with "
                         "--overwrite")  # fmt: skip
    return ds
