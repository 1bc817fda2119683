"""mkdocs hooks: the pages generated from the code at every build (``docs/generated/``).

- ``methods.md``: the methods table, from each integrator's declared traits and, for
  every registered system it serves, what it declares it keeps (``preserved``, read by
  ``jax.eval_shape``: nothing is computed).
- ``cli.md``: every command's ``--help``.
- ``gallery/<example>.md``: each script of ``examples/`` (its docstring, its source and,
  in a full build, what it prints and the figure it draws).
- ``figures/``: the figures of the paper pages (a full build).

A full build (``make docs``) runs the examples in their quick mode; ``MECHINT_DOCS_QUICK=1``
(``make test``) skips running them, the pages then say where the figures come from.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "generated"
SNIPPETS = ROOT / "build" / "docs-snippets"  # included by pages, not pages themselves
EXAMPLES = ROOT / "examples"
QUICK = os.environ.get("MECHINT_DOCS_QUICK") == "1"

# The gallery's examples, in reading order, with the figure option each one takes.
GALLERY = {
    "quickstart": None,
    "kahan_theorem": "out",
    "kahan_integrability": "out",  # the report page: run in full (FULL, below)
    "suris_theorems": None,
    "marsden_examples": None,
    "ge_marsden": "out",
    "heavy_top": "out",
    "sections": "out",
    "forced": "out",
    "rigid_bodies": "out",
    "periodic_orbit": None,
    "lyapunov": None,
    "transit_inference": None,
    "pendulum_chain": "out",
    "link_chain": "out",
    "rigid_water": "out",
    "system_identification": "out",
    "planetary": "out",
    "recipes": "out",
}


# Examples the site shows in full rather than in quick mode (a report page; ~25 s).
FULL = {"kahan_integrability"}


def on_pre_build(config, **kwargs) -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "gallery").mkdir(parents=True)
    (OUT / "figures").mkdir()
    (OUT / "methods.md").write_text(methods_page())
    (OUT / "cli.md").write_text(cli_page())
    (OUT / "api").mkdir()
    for page, (title, intro, names) in API.items():
        (OUT / "api" / f"{page}.md").write_text(api_page(title, intro, names))
    shutil.rmtree(SNIPPETS, ignore_errors=True)
    SNIPPETS.mkdir(parents=True)
    for name, figure in GALLERY.items():
        (OUT / "gallery" / f"{name}.md").write_text(gallery_page(name, figure))


# -- the methods table ---------------------------------------------------------------
def _yes(flag: bool) -> str:
    return "yes" if flag else "—"


def methods_page() -> str:
    import jax

    import mechint as mi
    from mechint import plugins
    from mechint.integrators import registry

    plugins.load()  # the installed packages' maps and systems are tabled too
    from mechint.maps import EXACT

    systems = {}
    for name, cls in mi.systems.SYSTEMS.items():
        system = _example_system(cls)
        if system is not None:
            systems[name] = system
    lines = [
        "# Methods",
        "",
        "Generated from the code at every build: each integrator's declared traits "
        "(`Integrator.traits`) and, for every registered system it can advance, the "
        "quantities it declares it keeps exactly (`Integrator.preserved`; the tests "
        "measure each claim to round-off).  *Poisson* means symplectic on canonical "
        "systems.",
        "",
        "| integrator | class | order | symmetric | explicit | symplectic | Poisson |",
        "|---|---|---|---|---|---|---|",
    ]
    built = {}
    for name in registry.INTEGRATORS:
        integrator = registry.build(name, systems["euler-top"])
        built[name] = integrator
        t = integrator.traits
        order = "exact" if t.order == EXACT else str(t.order)
        lines.append(
            f"| `{name}` | `{type(integrator).__name__}` | {order} | {_yes(t.symmetric)} | "
            f"{_yes(t.explicit)} | {_yes(t.symplectic)} | {_yes(t.poisson)} |"
        )
    lines += [
        "",
        "## What each keeps, system by system",
        "",
        "With its default settings; '—' where it cannot advance the system (it says why "
        "when asked).  The names are the systems' invariants (see the API reference of "
        "each system, and the files' `long_name` attributes).",
        "",
    ]
    header = "| integrator | " + " | ".join(f"`{s}`" for s in systems) + " |"
    lines += [header, "|---|" + "---|" * len(systems)]
    served = {key: registry.serving(system) for key, system in systems.items()}
    for name in registry.INTEGRATORS:
        cells = []
        for key, system in systems.items():
            integrator = served[key].get(name)
            if integrator is None:  # it cannot advance the system
                cells.append("—")
                continue
            x = system.example_state()
            kept = jax.eval_shape(lambda x, i=integrator, s=system: i.preserved(s, x, 0.01), x)
            cells.append(", ".join(sorted(kept)) or "nothing exactly")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _example_system(cls):
    """A registered system with example parameters (the CLI's defaults where it has them)."""
    import mechint as mi

    examples = {
        "EulerTop": lambda: cls((2.0, 1.0, 2.0 / 3.0)),
        "FreeRigidBody": lambda: cls((1.0, 2.0, 3.0, 4.5)),
        "QuadraticPotentialTop": lambda: cls((1.0, 2.0, 3.0)),
        "ClebschTop": lambda: cls((1.0, 2.0, 3.0)),
        "HeavyTop": lambda: cls((1.0, 1.5, 2.0), (0.1, 0.2, 1.0)),
        "LotkaVolterra": lambda: cls(1.0, 1.0, 1.0, 1.0),
        "NBody": lambda: mi.systems.nbody.outer_solar_system()[0],
    }
    try:
        return examples.get(cls.__name__, cls.example)()
    except (TypeError, mi.InputError):
        return None


# -- the API reference ---------------------------------------------------------------
def _public(module: str) -> list[str]:
    """``module``'s public names (its ``__all__``), as dotted paths."""
    import importlib

    mod = importlib.import_module(module)
    return [f"{module}.{name}" for name in mod.__all__ if not name.startswith("_")]


API = {
    "running": (
        "Running",
        "The drivers: ``simulate`` (host driver: chunks sized by time, progress, "
        "checkpoints, failures as data) on top of ``integrate`` (pure, traceable under "
        "jit, vmap and grad); the run's plan both validate with; their results; events "
        "and save times; the errors; sweeps over parameter grids.",
        lambda: [
            "mechint.simulate",
            "mechint.plan.make_plan",
            "mechint.plan.Plan",
            "mechint.Trajectory",
            "mechint.integrate",
            "mechint.Solution",
            "mechint.Event",
            "mechint.Crossings",
            "mechint.events",
            "mechint.sweep",
            "mechint.InputError",
            "mechint.StepFailure",
            "mechint.UnsupportedError",
            "mechint.SpecialCaseWarning",
        ],
    ),
    "systems": ("Systems", "The models: each a frozen JAX pytree that carries its facts.",
                lambda: _public("mechint.systems")),
    "integrators": (
        "Integrators",
        "The one-step maps, each with its declared traits; the protocol they follow "
        "(``mechint.maps``) and how maps and systems of your own are named "
        "(``mechint.plugins``) are at the end.",
        lambda: [*_public("mechint.integrators"), "mechint.maps", "mechint.plugins"],
    ),
    "exact": ("Exact solutions", "References to measure maps against.",
              lambda: _public("mechint.exact")),
    "diagnostics": ("Diagnostics", "What a map keeps, measured.",
                    lambda: _public("mechint.diagnostics")),
    "io": ("Files, sweeps and figures", "Saved runs (NetCDF, CSV with its sidecar), "
           "experiment files, stability maps, and the figures.",
           lambda: ["mechint.io", "mechint.runfile", "mechint.sweeps", "mechint.stability",
                    *_public("mechint.plot")]),
    "lie": ("Lie groups, attitudes and solvers", "so(n), Symm(n), SO(3) quaternions, the "
            "Cayley map; attitudes as quaternions, Euler angles, axis-angle vectors and in "
            "an orbit's LVLH frame (mechint.attitude); Newton's method and the small dense "
            "solves.",
            lambda: [*_public("mechint.lie"), *_public("mechint.attitude"),
                     *_public("mechint.solvers")]),
}  # fmt: skip


def api_page(title: str, intro: str, names) -> str:
    lines = [f"# {title}", "", intro, ""]
    for name in names():
        lines += [f"::: {name}", "    options:", "      heading_level: 2", ""]
    return "\n".join(lines)


# -- the command line ----------------------------------------------------------------
def cli_page() -> str:
    from mechint.cli.main import build_parser

    parser = build_parser()
    lines = [
        "# Command line",
        "",
        "Generated from `mechint <command> --help` at every build.  After `make demo`, "
        "activate the environment (`source .venv/bin/activate`) to type `mechint`.  Every "
        "option takes both spellings (`--save-every` or `--save_every`), and an option "
        "that is not one names the nearest that are (`--stepz`: did you mean `--steps`?).",
        "",
    ]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        lines += [f"## `mechint {name}`", "", "```text", command.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


# -- the gallery ---------------------------------------------------------------------
def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"gallery_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[module.__name__] = module  # as an import does (dataclasses look it up)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def gallery_page(name: str, figure: str | None) -> str:
    source = (EXAMPLES / f"{name}.py").read_text()
    module = _load(name)
    doc = (module.__doc__ or name).strip()
    title, _, rest = doc.partition("\n")
    body = []
    for line in rest.strip().splitlines():  # the usage line as code, not as links
        usage = line.strip().startswith("python examples/")
        body.append(f"    {line.strip()}" if usage else line)
    lines = [f"# {title.rstrip('.')}", "", "\n".join(body), ""]
    if QUICK:
        lines += ["*(Output and figure are drawn by the full build, `make docs`.)*", ""]
    else:
        kwargs = {"quick": name not in FULL}
        if figure:
            kwargs[figure] = str(OUT / "figures" / f"{name}.png")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            module.main(**kwargs)
        text = printed.getvalue().replace(str(ROOT) + "/", "").rstrip()
        output = ["```text", text, "```", ""]
        mode = "" if name in FULL else " (quick mode)"
        lines += [f"## What it prints{mode}", "", *output]
        if figure:
            lines += [f"![{title}](../figures/{name}.png)", ""]
    _snippets(name, title, figure)
    lines += [f"## The script: `examples/{name}.py`", "", "```python", source.rstrip(), "```", ""]
    if not QUICK:
        (SNIPPETS / f"{name}-output.md").write_text("\n".join(output))
    return "\n".join(lines)


def _snippets(name: str, title: str, figure: str | None) -> None:
    """What the paper pages include (``--8<--``): the example's figure and output, or,
    in a quick build, a line saying where they come from."""
    note = f"*(Drawn by the full build, `make docs`, from `examples/{name}.py`.)*\n"
    fig = f"![{title}](../generated/figures/{name}.png)\n" if figure and not QUICK else note
    (SNIPPETS / f"{name}-figure.md").write_text(fig)
    if QUICK:
        (SNIPPETS / f"{name}-output.md").write_text(note)
