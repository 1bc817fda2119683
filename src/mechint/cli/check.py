"""``mechint check``: measure every structural property of a map on a system."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from mechint.cli import model, parsing
from mechint.diagnostics import check


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check",
        help="measure what an integrator preserves on a system",
        description="One-step defects of the map at one state (symplectic or Poisson, energy, "
        "Casimirs, momentum maps, reversibility, the integrator's own kept quantities), their "
        "exponent in h over h, h/2, ..., h/16, and a verdict: exact (round-off), O(h^p), or "
        "below round-off at these h (where the map's own one-step error is too: larger h). "
        "Without a state option, a fixed generic state of the system is used.",
        epilog="example:\n  mechint check --system euler-top --inertia 3,2,1 --integrator kahan",
    )
    model.add_system_options(p)
    model.add_integrator_options(p)
    p.add_argument("--h", default="0.1", help="the largest step size (default 0.1)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    model.integrator_names(args)
    system = model.build_system(args)
    integrator = model.build_integrator(args, system)
    h = parsing.positive_float("--h", args.h)
    model.check_serves(integrator, system)
    x = model.one_state(args, system)
    rows = check(system, integrator, x, h)
    # a failed step or a non-finite defect is no measurement: exit 1 after the report
    code = 0 if all(np.all(np.isfinite(r.scaling.defect)) for r in rows) else 1
    if code:
        print("mechint check: some defects were not measured (a failed step or a non-finite "
              "defect: see the verdicts)", file=sys.stderr)  # fmt: skip
    if args.json:
        doc = {
            "system": repr(system),
            "integrator": type(integrator).__name__,
            "h": h,
            "properties": [r.as_dict() for r in rows],
        }
        print(json.dumps(doc, indent=1))
        return code
    print(f"{system!r} — {type(integrator).__name__}, h = {h:g} (exponent over h .. h/16)")
    print(rows.table())
    return code
