"""``mechint integrals``: find the integrals a map keeps in a monomial basis (the continuous
flow: ``mi.diagnostics.find_integrals(..., integrator=None)``)."""

from __future__ import annotations

import argparse
import json

from mechint import io
from mechint.cli import model, parsing
from mechint.diagnostics import find_integrals, monomials
from mechint.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "integrals",
        help="find the integrals a map keeps, from its orbits (HK basis)",
        description="Along orbits of the map, the relations Σ c_j φ_j = 0 among the monomials "
        "φ_j of the state's coordinates up to --degree (the constant included) that hold at "
        "every point: the null space of the matrix [φ_j(x_k)], by the SVD of its "
        "column-scaled form, with the singular values, the gap that decides its dimension, "
        "the relations in reduced row echelon form and their check on the orbit's "
        "continuation. Without a state option, a fixed generic state of the system is used; "
        "a batch of states gives one orbit each.",
        epilog="example:\n  mechint integrals --system euler-top --inertia 2,1,0.6667 "
        "--integrator kahan --degree 2",
    )
    model.add_system_options(p)
    model.add_integrator_options(p)
    p.add_argument("--degree", default="2", help="the monomials' highest degree (default 2)")
    p.add_argument("--h", default="0.1", help="the step size (default 0.1)")
    p.add_argument("--points", help="orbit points used (default 3 × the basis size + 20)")
    p.add_argument("--stride", help="steps between points (default: the orbit spans ~2000)")
    p.add_argument(
        "--rtol", default="1e-11", help="singular values ≤ rtol σ_max: the null space (1e-11)"
    )
    p.add_argument("--json", help="also write the result as JSON to this file")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    model.integrator_names(args)
    system = model.build_system(args)
    integrator = model.build_integrator(args, system)
    model.check_serves(integrator, system)
    degree = parsing.whole("--degree", args.degree, 0)
    h = parsing.positive_float("--h", args.h)
    rtol = parsing.positive_float("--rtol", args.rtol)
    points = None if args.points is None else parsing.whole("--points", args.points)
    stride = None if args.stride is None else parsing.whole("--stride", args.stride)
    out = io.check_writable(args.json, "--json", {".json": "json"}) if args.json else None
    x0 = model.states_or_example(args, system)
    basis = model.relabel("--degree", monomials, system, degree, x0)
    try:
        found = find_integrals(system, integrator, x0, h, basis, points=points, stride=stride,
                               rtol=rtol)  # fmt: skip
    except InputError as exc:  # named as the option that set it
        option = {"points": "--points", "stride": "--stride", "rtol": "--rtol",
                  "basis": "--degree"}.get(exc.parameter, exc.parameter)  # fmt: skip
        raise InputError(option, exc.problem, exc.fix) from None
    print(f"{system!r} — {type(integrator).__name__}, h = {h:g}, monomials of degree ≤ {degree}")
    print(found.table())
    if out is not None:
        doc = {"system": repr(system), "integrator": type(integrator).__name__, "h": h,
               "degree": degree, **found.as_dict()}  # fmt: skip
        out.write_text(json.dumps(doc, indent=1))
        print(f"wrote {out}")
    return 0
