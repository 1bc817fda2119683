"""``mechint compare``: several integrators on one initial condition, a table and a figure."""

from __future__ import annotations

import argparse
import csv
import json

from mechint import io
from mechint.cli import model, parsing
from mechint.diagnostics import compare, invariant_errors
from mechint.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="run several integrators on one initial condition and compare them",
        description="Run each integrator from one state to T with step h; print a table (error "
        "at T against the exact solution or DOP853, the largest relative error of each "
        "invariant, wall time without compilation); with --out, a figure of the invariant "
        "errors against time (log scale).  Without a state option a fixed generic state is used.",
        epilog="example:\n  mechint compare --system euler-top --inertia 3,2,1 "
        "--integrators kahan,midpoint,rk4,splitting --T 1000 --h 0.01 --out compare.png",
    )
    model.add_system_options(p)
    model.add_integrator_options(p, several=True)
    p.add_argument("--T", required=True, help="final time (T/h must be whole)")
    p.add_argument("--h", default="0.01", help="time step (default 0.01)")
    p.add_argument("--out", help="also write the figure (.png, .pdf or .svg)")
    p.add_argument("--table", help="also write the table (.csv or .json)")
    p.add_argument(
        "--compensated",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compensated sums for every integrator (default: each map's choice, on for "
        "those of order >= 8 that form their increment)",
    )
    p.set_defaults(handler=handle)


# steps counted exactly in float64 (and far more than any run finishes)
_MAX_STEPS = 2**53


def handle(args: argparse.Namespace) -> int:
    from mechint.plot import FIGURE_FORMATS, invariant_error_figure  # matplotlib on demand

    names = model.integrator_names(args)
    system = model.build_system(args)
    integrators = [model.build_integrator(args, system, name) for name in names]
    for integrator in integrators:
        model.check_serves(integrator, system, "--integrators")
    model.check_compensated(args, integrators)
    x0 = model.one_state(args, system)
    h = parsing.positive_float("--h", args.h)
    T = parsing.positive_float("--T", args.T)
    if not T / h <= _MAX_STEPS:
        raise InputError("--T", f"T/h = {T / h:g} steps is more than a run can take "
                         f"({_MAX_STEPS:.3g})", "choose a smaller --T or a larger --h")  # fmt: skip
    steps = round(T / h)
    if abs(steps * h - T) > 1e-9 * T:
        raise InputError("--T", f"T/h = {T / h:g} is not a whole number", "adjust --T or --h")
    out = io.check_writable(args.out, "--out", FIGURE_FORMATS) if args.out else None
    table_path = None
    if args.table:
        table_path = io.check_writable(args.table, "--table", {".csv": "csv", ".json": "json"})
    result = compare(system, integrators, x0, h, T, compensated=args.compensated)
    rows = result.table()
    _print(rows, result)
    if out is not None:
        errors = {
            name: invariant_errors(system, traj)
            for name, traj in zip(result.names, result.trajectories, strict=True)
        }
        title = f"{system!r}, h = {h:g}, T = {T:g}"
        invariant_error_figure(result.trajectories[0].t, errors, title).savefig(out, dpi=130)
    if table_path is not None:
        _write(rows, table_path)
    written = [str(p) for p in (out, table_path) if p is not None]
    if written:
        print("wrote " + " and ".join(written))
    return 0


def _print(rows, result) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print(f"{result.system!r}, h = {result.h:g}, T = {result.T:g}; reference: {result.reference}")
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        cells = [r["integrator"]] + [
            f"{r[k]:.3g}" if k == "wall s" else f"{r[k]:.2e}" for k in keys[1:] if k in r
        ]
        print("| " + " | ".join(cells) + " |")


def _write(rows, path) -> None:
    if path.suffix == ".json":
        path.write_text(json.dumps(rows, indent=1))
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
