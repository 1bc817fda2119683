"""``mechint stability``: a MEGNO stability map over a grid of one body's elements."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from mechint import io, stability
from mechint.cli import guard, model, parsing
from mechint.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "stability",
        help="a MEGNO stability map of a planetary system over one body's elements",
        description="Vary one or two orbital elements of one body of a planetary system "
        "(a bodies file with elements) over a grid, run every point as one batch with a "
        "tangent vector (Wisdom-Holman by default), and write MEGNO <Y> (near 2: "
        "regular; growing: chaotic) and the largest Lyapunov exponent per point (NetCDF), "
        "and the map as a figure.",
        epilog="example (REBOUND's MEGNO example: Saturn's a and e next to Jupiter):\n"
        "  mechint stability --bodies examples/sun_jupiter_saturn.json --body 2 "
        "--grid a=7:10:60 --grid e=0:0.5:40 --h 5 --steps 629 --out map.nc --plot map.png",
    )
    p.add_argument("--bodies", required=True, help="a JSON bodies file with orbital elements "
                   "(see mechint.systems.nbody.read_bodies)")  # fmt: skip
    p.add_argument("--body", required=True, help="the body whose elements vary (1..N-1)")
    p.add_argument("--grid", action="append", required=True,
                   help="an element and its values, NAME=FIRST:LAST:COUNT (evenly spaced) or "
                   "NAME=v1,v2,...; once or twice (a 2-D map)")  # fmt: skip
    p.add_argument("--h", required=True, help="time step (> 0), in the units of G")
    p.add_argument("--steps", required=True, help="number of steps (>= 1)")
    p.add_argument("--escape", help="end a point's run where a body goes farther than this "
                   "from the centre of mass (default: the file's escape, else none)")  # fmt: skip
    p.add_argument("--integrator", default="wisdom-holman",
                   help="the map (default wisdom-holman), run with one tangent vector")  # fmt: skip
    for name, uses in model.integrators.SETTINGS.items():
        p.add_argument(f"--{name}", help="; ".join(s.help for _, s in uses))
    p.add_argument("--seed", default="0", help="picks the first tangent vector (default 0)")
    p.add_argument("--max-batch", default=str(stability.MAX_BATCH),
                   help=f"points run at once (default {stability.MAX_BATCH})")  # fmt: skip
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="a running Dask scheduler, tcp://HOST:PORT")
    where.add_argument("--cluster", help="start a local Dask cluster: local:N (N workers)")
    p.add_argument("--out", required=True, help="output file (.nc)")
    p.add_argument("--plot", help="figure of the map (.png, .pdf, .svg)")
    p.add_argument("--quiet", action="store_true", help="no summary line")
    p.set_defaults(handler=handle)


def grid_option(texts: list[str], option: str = "--grid") -> dict[str, np.ndarray]:
    """``NAME=FIRST:LAST:COUNT`` or ``NAME=v1,v2,...``, once or twice, as the grid."""
    if not 1 <= len(texts) <= 2:
        raise InputError(option, f"given {len(texts)} times", "give one or two elements")
    out: dict[str, np.ndarray] = {}
    for text in texts:
        name, eq, values = text.partition("=")
        name = name.strip()
        if not eq or name not in stability.ELEMENTS:
            raise InputError(option, f"expected NAME=FIRST:LAST:COUNT with NAME one of "
                             f"{', '.join(stability.ELEMENTS)}, got {text!r}"[:200],
                             "e.g. --grid a=7:10:100")  # fmt: skip
        if name in out:
            raise InputError(option, f"varies {name} twice")
        if ":" in values:
            parts = values.split(":")
            if len(parts) != 3:
                raise InputError(option, f"{text!r}: expected FIRST:LAST:COUNT")
            first = parsing.real(option, parts[0])
            last = parsing.real(option, parts[1])
            count = parsing.whole(option, parts[2])
            if count > 100_000:
                raise InputError(option, f"{count} values of {name}: more than 100000",
                                 "a coarser grid")  # fmt: skip
            out[name] = np.linspace(first, last, count)
        else:
            out[name] = parsing.numbers(option, values)
    return out


def handle(args: argparse.Namespace) -> int:
    from mechint.plot import FIGURE_FORMATS
    from mechint.systems.nbody import NBody, read_bodies_data

    data = read_bodies_data(args.bodies)
    if data["elements"] is None:
        raise InputError("--bodies", "gives positions and velocities; a map varies orbital "
                         "elements", "give every body but the first its elements")  # fmt: skip
    body = parsing.whole("--body", args.body)
    grid = grid_option(args.grid)
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    escape = (
        data["escape"] if args.escape is None else parsing.positive_float("--escape", args.escape)
    )
    max_batch = parsing.whole("--max-batch", args.max_batch)
    seed = parsing.whole("--seed", args.seed, minimum=0)
    system = NBody(data["masses"], data["G"])
    base = model.build_integrator(args, system)
    model.check_serves(base, system)
    out = io.check_writable(args.out, "--out", {".nc": "netcdf"})
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    from tqdm.auto import tqdm

    points = int(np.prod([v.size for v in grid.values()]))
    bar = tqdm(total=points, unit="point", delay=2.0, file=sys.stderr, leave=False)
    with guard.exclusive(out), bar:
        try:
            ds = stability.stability_map(
                data["masses"], data["elements"], body, grid, h=h, steps=steps, G=data["G"],
                frame=data["frame"], integrator=model.integrators.Tangent(base, seed=seed),
                escape=escape, max_batch=max_batch, scheduler=args.scheduler,
                cluster=args.cluster, on_result=bar.update,
            )  # fmt: skip
        except InputError as exc:  # name the option a value came from
            option = {"scheduler": "--scheduler", "cluster": "--cluster", "body": "--body",
                      "grid": "--grid", "escape": "--escape", "elements": "--bodies",
                      "max_batch": "--max-batch"}.get(exc.parameter.split("[")[0])  # fmt: skip
            if option is None and exc.parameter.startswith("elements"):
                option = "--bodies"
            raise InputError(option or exc.parameter, exc.problem, exc.fix) from None
        tmp = out.with_name(f".{out.name}.part.nc")
        ds.to_netcdf(tmp, engine="h5netcdf")
        io.replace_synced(tmp, out)
    if plot is not None:
        from mechint.plot import stability_figure

        stability_figure(ds).savefig(plot, dpi=130)
    if not args.quiet:
        y = ds["megno"].values
        print(f"{points} points: {int(np.sum(y < 2.5))} regular (<Y> < 2.5), "
              f"{int(np.sum(y >= 2.5))} chaotic, {int(ds['escaped'].sum())} escaped, "
              f"{int(np.sum(ds['failed_step'].values >= 0))} failed; wrote {out}"
              + (f" and {plot}" if plot else ""), file=sys.stderr)  # fmt: skip
    return 0
