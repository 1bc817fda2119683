"""``mechint sweep``: run an experiment file (TOML) to one NetCDF dataset."""

from __future__ import annotations

import argparse

from mechint.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a parameter sweep from an experiment file",
        description="Run every grid point × integrator × h × initial state of an experiment "
        "(TOML; see mechint.sweeps) in vmapped batches, here or on a Dask cluster, and write "
        "one dataset with a dimension per swept parameter.",
        epilog="example: mechint sweep experiment.toml --out results.nc --cluster local:2",
    )
    p.add_argument("experiment", help="the experiment file (.toml)")
    p.add_argument("--out", required=True, help="output file (.nc)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="a running Dask scheduler, tcp://HOST:PORT")
    where.add_argument("--cluster", help="start a local Dask cluster: local:N (N workers)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import numpy as np

    from mechint import io, sweeps

    out = io.check_writable(args.out, "--out", {".nc": "netcdf"})
    if args.cluster is not None:
        sweeps.cluster_size(args.cluster, "--cluster")
    if args.scheduler is not None and not args.scheduler.startswith(("tcp://", "tls://")):
        raise InputError("--scheduler", f"expected tcp://HOST:PORT, got {args.scheduler!r}")
    experiment = sweeps.load(args.experiment)
    ds = sweeps.sweep(experiment, scheduler=args.scheduler, cluster=args.cluster)
    tmp = out.with_name(f".{out.name}.part.nc")
    ds.to_netcdf(tmp, engine="h5netcdf")
    tmp.replace(out)
    failed = int(np.sum(ds["failed_step"].values >= 0))
    dims = ", ".join(f"{k} {v}" for k, v in ds.sizes.items())
    print(f"wrote {out}: {dims}; {failed} failed runs")
    return 0
