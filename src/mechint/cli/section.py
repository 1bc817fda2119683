"""``mechint section``: a Poincaré section, its points located on the map itself.

The run's crossings of a surface ``<field>_<i> = value`` (``q_1=0``; a field of the
system's state and a component from 1, as files name them) in a direction are recorded
by ``mi.Event`` and located on the map (``mechint.events``).  Initial states come from
the system's options, or, for a separable canonical system, are drawn on the surface at
an energy: ``--energy E --count N --seed S`` draws the other coordinates uniformly in
``[-box, box]`` and solves H = E for the momentum conjugate to the surface's coordinate
(its sign from the direction), rejecting draws with no solution.  Writes the run
(NetCDF: x0, the final state and every crossing, ``<name>_crossing_*``) and a figure of
two of the state's components at the crossings.
"""

from __future__ import annotations

import argparse
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np

from mechint import io, resources
from mechint.cli import guard, model, parsing
from mechint.errors import InputError
from mechint.events import Event
from mechint.simulate import simulate
from mechint.systems.canonical import Canonical, Separable

_SURFACE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)_?(\d+)\s*=\s*(\S+)\s*$")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "section",
        help="a Poincaré section: where runs cross a surface, located on the map",
        description="Record where runs cross a surface <field>_<i> = value in a direction, "
        "each crossing located on the map itself; write them (NetCDF) and a figure.",
        epilog="examples:\n"
        "  mechint section --system henon-heiles --energy 0.125 --count 40 --seed 1 "
        "--surface q_1=0 --direction 1 --integrator composition --scheme "
        "sofroniou-spaletta10 --h 0.05 --steps 40000 --out hh.nc --plot hh.png\n"
        "  mechint section --system heavy-top --inertia 1,1.5,2 --chi 1,0,0.5 "
        "--m0 0.6,-0.8,0.3 --gamma0 0,0.8,-0.6 --surface gamma_3=0 --direction 1 "
        "--axes m_1,m_2 --integrator rigid-body-splitting --order 4 --h 0.01 "
        "--steps 400000 --out top.nc --plot top.png",
    )
    model.add_system_options(p)
    model.add_integrator_options(p)
    p.add_argument("--surface", required=True, help="the surface, e.g. q_1=0 or gamma_3=0")
    p.add_argument("--direction", default="1",
                   help="+1: crossings upwards (default), -1: downwards, 0: both")  # fmt: skip
    p.add_argument("--h", required=True, help="time step (> 0)")
    p.add_argument("--steps", required=True, help="number of steps (>= 1)")
    p.add_argument("--crossings", default="1000",
                   help="crossings kept per initial state (default 1000; more are "
                   "counted and reported as overflow)")  # fmt: skip
    p.add_argument("--energy", help="draw the initial states on the surface at this energy "
                   "(separable canonical systems)")  # fmt: skip
    p.add_argument("--count", default="20", help="states drawn with --energy (default 20)")
    p.add_argument("--seed", default="0", help="seed of the draw with --energy (default 0)")
    p.add_argument("--box", default="1",
                   help="draw the other coordinates in [-box, box] (default 1)")  # fmt: skip
    p.add_argument("--axes", help="the two components drawn, e.g. q_2,p_2 (default: the "
                   "first two not fixed by the surface)")  # fmt: skip
    p.add_argument(
        "--out",
        required=True,
        help="output file: .nc (the run, its crossings "
        "included) or .csv (the crossings, a row each, the run's record in its "
        "sidecar)",
    )
    p.add_argument("--overwrite", action="store_true",
                   help="replace --out even when it holds an unfinished run (resumable by "
                   "mechint run --resume) or a file mechint did not write")  # fmt: skip
    p.add_argument("--plot", help="also write a figure (.png, .pdf or .svg)")
    p.add_argument("--quiet", action="store_true", help="no summary")
    p.set_defaults(handler=handle)


def component(system, text: str, option: str) -> tuple[int, int, float | None]:
    """(leaf index, flat component index, value or None) of ``<field>_<i>[=value]``."""
    match = _SURFACE.match(text if "=" in text else text + "=nan")
    fields = [name for name, _ in system.state_fields]
    if not match:
        raise InputError(option, f"cannot read {text!r}", f"write <field>_<i>=value, fields: "
                         f"{', '.join(fields)}")  # fmt: skip
    name, index, value = match.group(1), int(match.group(2)), match.group(3)
    if name not in fields:
        raise InputError(option, f"{name!r} is not a field of {system.name}'s state",
                         f"one of: {', '.join(fields)}")  # fmt: skip
    leaf = fields.index(name)
    size = int(np.size(jax.tree.leaves(system.example_state())[leaf]))
    if not 1 <= index <= size:
        raise InputError(option, f"{name}_{index}: {name} has components 1..{size}")
    number = None if value == "nan" else parsing.real(option, value)
    return leaf, index - 1, number


def _surface_event(system, surface: str, direction: int) -> tuple[Event, int, int]:
    leaf, index, value = component(system, surface, "--surface")
    if value is None:
        raise InputError("--surface", f"{surface!r} gives no value", "e.g. q_1=0")

    def crossing(t, x):
        return jnp.ravel(jax.tree.leaves(x)[leaf])[index] - value

    return Event(crossing, direction=direction, name="section"), leaf, index


def draw_on_surface(system, leaf: int, index: int, value: float, energy: float, count: int,
                    seed: int, box: float, direction: int):  # fmt: skip
    """``system.section_states`` for --energy (errors name the options)."""
    if not isinstance(system, Separable) or leaf != 0:
        raise InputError("--energy", "draws states on a surface q_i = c of a separable "
                         "canonical system", "give initial states instead")  # fmt: skip
    try:
        return system.section_states(index, value, energy, count, seed=seed, box=box,
                                     sign=-1.0 if direction < 0 else 1.0)  # fmt: skip
    except InputError as exc:
        name = "--box" if exc.parameter == "box" else "--energy"
        raise InputError(name, exc.problem, exc.fix) from None


def handle(args: argparse.Namespace) -> int:
    from mechint.plot import FIGURE_FORMATS

    model.relabel("--integrator", model.integrators.get, args.integrator)
    system = model.build_system(args)
    integrator = model.build_integrator(args, system)
    direction = parsing.whole("--direction", args.direction, minimum=-1)
    if direction not in (-1, 0, 1):
        raise InputError("--direction", f"must be -1, 0 or 1, got {direction}")
    event, leaf, index = _surface_event(system, args.surface, direction)
    axes = _axes(system, args.axes, leaf, index)
    h = parsing.positive_float("--h", args.h)
    steps = parsing.whole("--steps", args.steps)
    crossings = parsing.whole("--crossings", args.crossings)
    if args.energy is not None:
        given = [f"--{n}" for n in model.given_state_options(args, system)]
        if given or model.preset_state(args) is not None:
            raise InputError("--energy", "draws the initial states, and "
                             f"{', '.join(given) or '--preset'} gives one too",
                             "give --energy or an initial state, not both")  # fmt: skip
        value = component(system, args.surface, "--surface")[2]
        count = parsing.whole("--count", args.count)
        # the crossings of every drawn state, sized before the draw (fewer --count)
        state = sum(int(np.size(a)) for a in jax.tree.leaves(system.example_state()))
        resources.require_buffer("--count", count * (crossings + 4.0) * (state + 2.0),
                                 f"{count} drawn states × {crossings} crossings",
                                 "fewer states (--count) or --crossings")  # fmt: skip
        x0 = draw_on_surface(system, leaf, index, float(value or 0.0),
                             parsing.real("--energy", args.energy), count,
                             parsing.whole("--seed", args.seed, minimum=0),
                             parsing.positive_float("--box", args.box), direction)  # fmt: skip
    else:
        x0 = model.initial_state(args, system)[0]
    model.check_serves(integrator, system)
    out = io.check_writable(args.out, "--out", {".nc": "netcdf", ".csv": "csv"})
    plot = io.check_writable(args.plot, "--plot", FIGURE_FORMATS) if args.plot else None
    with guard.exclusive(out):  # the lock every command that writes --out takes
        if not args.overwrite:
            guard.keep_unfinished(out)
        try:
            traj = simulate(system, integrator, x0, h, steps, steps, events=[event],
                            max_events=crossings, throw=False)  # fmt: skip
        except InputError as exc:  # the crossings' slots, sized before the run
            if exc.parameter != "max_events":
                raise
            raise InputError("--crossings", exc.problem, "keep fewer (--crossings)") from None
        if out.suffix.lower() == ".csv":  # the crossings, a row each, and the run's record
            io.write_crossings_csv(traj, "section", out)
        else:
            traj.save(out)
    c = traj.events["section"]
    count = np.atleast_1d(c.count)
    if plot is not None:
        from mechint.plot import section_figure

        energy = None if args.energy is None else parsing.real("--energy", args.energy)
        section_figure(system, traj, axes, args.surface, energy).savefig(plot, dpi=130)
    if not args.quiet:
        over = int(np.sum(np.atleast_1d(c.overflowed)))
        failed = int(np.sum(traj.failed))
        # crossings the loop saw whose root the map's partial steps do not bracket (NaN)
        times = np.asarray(c.t).reshape(len(count), -1)
        kept = np.arange(times.shape[1]) < np.minimum(count, times.shape[1])[:, None]
        lost = int(np.sum(kept & np.isnan(times)))
        print(f"{int(count.sum())} crossings of {args.surface} by {len(count)} run(s) "
              f"(fewest {int(count.min())}, most {int(count.max())}); "
              + (f"{lost} not located on the map (NaN rows); " if lost else "")
              + f"{over} kept only the first {crossings}; {failed} failed; wrote {out}"
              + (f" and {plot}" if plot else ""), file=sys.stderr)  # fmt: skip
    return 1 if np.any(traj.failed) else 0


def _axes(system, text, leaf: int, index: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The two (leaf, component) pairs drawn: --axes, else for a surface q_i = c of a
    canonical system another q_j and its p_j, else the first two components of the
    state that the surface does not fix."""
    if text:
        parts = [s for s in text.split(",") if s.strip()]
        if len(parts) != 2:
            raise InputError("--axes", f"expected two components, got {text!r}", "e.g. q_2,p_2")
        got = [component(system, s, "--axes")[:2] for s in parts]
        return got[0], got[1]
    if isinstance(system, Canonical) and leaf == 0 and system.dof > 1:
        j = next(k for k in range(system.dof) if k != index)  # q_i fixed: another q, its p
        return (0, j), (1, j)
    free = []
    for i, a in enumerate(jax.tree.leaves(system.example_state())):
        free += [(i, j) for j in range(int(np.size(a))) if (i, j) != (leaf, index)]
    if len(free) < 2:
        raise InputError("--surface", f"{system.name}'s state has {len(free) + 1} components: "
                         "a section leaves too few to draw in a plane",
                         "a section of a system of three components or more")  # fmt: skip
    return free[0], free[1]
