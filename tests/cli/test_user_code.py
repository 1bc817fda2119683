"""The user's own maps and systems by name: ``--integrator package.module:Class``,
``--system package.module:Class``, experiment files, and installed packages' entry
points (``mechint.plugins``)."""

import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
import xarray as xr

import mechint as mi
from mechint import integrators, plugins, systems
from tests.cli.helpers import invoke

# one module name for every test (a module is imported once per process)
MODULE = "mechint_user_maps"
SOURCE = textwrap.dedent('''
    """A user's own map and system."""
    import dataclasses
    from typing import ClassVar

    from mechint.integrators import Integrator, Setting, Traits
    from mechint.maps import ok_status, serves_only
    from mechint.systems import Pendulum, Separable, register_pytree


    @dataclasses.dataclass(frozen=True)
    class SubstepLeapfrog(Integrator):
        """Störmer–Verlet in ``substeps`` steps of h/substeps: order 2, symplectic."""

        substeps: int = 2
        name: ClassVar[str] = "substep-leapfrog"
        traits = Traits(order=2, symmetric=True, explicit=True, symplectic=True)
        settings: ClassVar[tuple[Setting, ...]] = (
            Setting("substeps", "substep-leapfrog: leapfrog steps per step", int),
        )

        def cannot_serve(self, system):
            return serves_only(system, (Separable,))

        def step(self, system, x, h):
            q, p = x
            k = h / self.substeps
            for _ in range(self.substeps):
                p = p - 0.5 * k * system.potential_gradient(q)
                q = q + k * system.kinetic_gradient(p)
                p = p - 0.5 * k * system.potential_gradient(q)
            return (q, p), ok_status((q, p))


    @register_pytree(data=("omega",))
    class LongPendulum(Pendulum):
        name: ClassVar[str] = "long-pendulum"


    class Unregistered(Pendulum):
        name: ClassVar[str] = "unregistered"


    NOT_A_CLASS = 3
''')


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """The user's module on the path (this process's and its subprocesses')."""
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    return tmp_path


RUN = ["run", "--system", "kepler", "--q0", "0.5,0", "--p0", "0,1.7", "--h", "0.05",
       "--steps", "40", "--save-every", "10", "--quiet"]  # fmt: skip


def test_a_referenced_map_runs_checks_compares_and_sweeps_as_a_registered_one(
    user_module, tmp_path, capsys
):
    """``--integrator module:Class`` with the class's own setting as an option: the file
    equals the library's run bit for bit; check measures it; compare tables it beside a
    built-in map; an experiment file sweeps it (by reference, with settings); nothing
    stays registered after the command."""
    ref = f"{MODULE}:SubstepLeapfrog"
    out = tmp_path / "r.nc"
    code, _, err = invoke([*RUN, "--integrator", ref, "--substeps", "3", "--out", str(out)], capsys)
    assert code == 0, err
    cls: Any = integrators.get(ref)
    assert cls.__name__ == "SubstepLeapfrog" and integrators.build(ref, None, {"substeps": "3"})
    kepler = mi.systems.Kepler()
    run = mi.simulate(kepler, cls(substeps=3), ([0.5, 0.0], [0.0, 1.7]), 0.05, 40, 10)
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["q"].values, run.x[0]) and np.array_equal(ds["p"].values, run.x[1])
    assert ref not in integrators.INTEGRATORS and "substeps" not in integrators.SETTINGS

    code, out_text, err = invoke(["check", "--system", "kepler", "--eccentricity", "0.5",
                                  "--integrator", ref], capsys)  # fmt: skip
    assert code == 0, err
    assert "SubstepLeapfrog" in out_text and "symplectic" in out_text
    assert "contradict" not in out_text  # its declared traits hold

    code, out_text, err = invoke(["compare", "--system", "kepler", "--eccentricity", "0.5",
                                  "--integrators", f"{ref},stormer-verlet", "--substeps", "4",
                                  "--T", "5", "--h", "0.05"], capsys)  # fmt: skip
    assert code == 0, err
    assert "| substep-leapfrog |" in out_text and "| stormer-verlet |" in out_text

    exp = tmp_path / "exp.toml"
    exp.write_text(
        textwrap.dedent(f"""
        steps = 40
        save_every = 40
        h = [0.05]
        integrators = ["{ref}", {{name = "{ref}", substeps = 4}}, "stormer-verlet"]
        [system]
        name = "{MODULE}:LongPendulum"
        [initial]
        q = [[1.0], [0.5]]
        p = [[0.0], [0.1]]
    """)
    )
    code, _, err = invoke(["sweep", str(exp), "--out", str(tmp_path / "s.nc")], capsys)
    assert code == 0, err
    with xr.open_dataset(tmp_path / "s.nc", engine="h5netcdf") as ds:
        assert list(ds["integrator"].values) == [ref, f"{ref}(substeps=4)", "stormer-verlet"]
        mine = ds["q"].sel(integrator=f"{ref}(substeps=4)").isel(h=0).values
    # the library's run of the same class and states, bit for bit
    system = systems.get(f"{MODULE}:LongPendulum")()
    alone = mi.simulate(system, cls(substeps=4), ([[1.0], [0.5]], [[0.0], [0.1]]), 0.05, 40, 40)
    assert mine.shape == alone.x[0].shape, (mine.shape, alone.x[0].shape)
    np.testing.assert_array_equal(mine, alone.x[0])


def test_references_that_are_not_our_classes_are_refused_in_one_line(user_module, tmp_path,
                                                                     capsys):  # fmt: skip
    out = str(tmp_path / "x.nc")
    base = ["run", "--h", "0.1", "--steps", "2", "--out", out]
    cases = [
        (["--system", "kepler", "--integrator", f"{MODULE}:NOT_A_CLASS"],
         "--integrator", "not a subclass of mechint.maps.Integrator"),
        (["--system", "kepler", "--integrator", f"{MODULE}:LongPendulum"],
         "--integrator", "names LongPendulum, not a subclass"),
        (["--system", "kepler", "--integrator", "no_such_module_here:Map"],
         "--integrator", "cannot import"),
        (["--system", "kepler", "--integrator", "substep-leapfrogg"],
         "--integrator", "or a class of your own: package.module:Class"),
        (["--system", f"{MODULE}:SubstepLeapfrog", "--integrator", "kahan"],
         "--system", "not a subclass of mechint.systems.base.System"),
        (["--system", f"{MODULE}:Unregistered", "--integrator", "stormer-verlet", "--q0", "1",
          "--p0", "0"], "system", "is not registered as a JAX pytree"),
        # a setting of a referenced class, not given that class
        (["--system", "kepler", "--integrator", "kahan", "--substeps", "2"],
         "unrecognized option --substeps", ""),
    ]  # fmt: skip
    # modules that fail as they are imported: a bad input, named, not an internal error
    broken = [("broken_syntax", "def f(q)\n    return q\n"), ("broken_run", "x = 1 / 0\n"),
              ("broken_exit", "raise SystemExit(0)\n")]  # fmt: skip
    for name, source in broken:
        (user_module / f"{name}.py").write_text(source)
        problem = {"broken_syntax": "SyntaxError", "broken_run": "ZeroDivisionError",
                   "broken_exit": "SystemExit"}[name]  # fmt: skip
        cases.append((["--system", "kepler", "--integrator", f"{name}:Map"], "--integrator",
                      f"importing {name!r} failed: {problem}"))  # fmt: skip
    for args, name, text in cases:
        code, _, err = invoke([*base, *args], capsys)
        assert code == 2 and err.count("\n") == 1 and name in err and text in err, (args, err)
    assert not any(plugins.is_reference(n) for n in integrators.INTEGRATORS)
    assert not any(plugins.is_reference(n) for n in systems.SYSTEMS)


def test_an_installed_packages_entry_points_are_registered_and_broken_ones_named(user_module):
    """A package's ``mechint.integrators`` and ``mechint.systems`` entry points (its
    metadata on the path, as pip installs it): the map and the system appear in --help
    with their options and run by name, in a subprocess; an entry point that does not
    import, is not a map or does not match its class's name is left out with a note."""
    info = user_module / "user_maps-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: user-maps\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(f"""
        [mechint.integrators]
        substep-leapfrog = {MODULE}:SubstepLeapfrog
        broken = no_such_module_here:Map
        not-a-map = {MODULE}:NOT_A_CLASS
        other-name = {MODULE}:SubstepLeapfrog
        [mechint.systems]
        long-pendulum = {MODULE}:LongPendulum
    """)
    )

    def mechint(*args):
        return subprocess.run([sys.executable, "-m", "mechint", *args], capture_output=True,
                              text=True, timeout=180, env=os.environ.copy())  # fmt: skip

    shown = mechint("run", "--help")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "substep-leapfrog" in text and "long-pendulum" in text and "--substeps" in text
    notes = shown.stderr.splitlines()
    assert len(notes) == 3 and all(
        n.startswith("mechint run: note: the entry point") for n in notes
    )
    assert "broken = 'no_such_module_here:Map' of the package user-maps" in notes[0]
    assert "not-a-map" in notes[1] and "not a subclass of Integrator" in notes[1]
    assert "other-name" in notes[2] and "whose name is 'substep-leapfrog'" in notes[2]
    # the registries hold them (the methods table and the generic tests read these)
    listed = subprocess.run([sys.executable, "-c", "import mechint as mi; "
                             "from mechint import integrators as I, plugins; plugins.load(); "
                             "print(sorted(I.serving(mi.systems.Kepler())), "
                             "'long-pendulum' in mi.systems.SYSTEMS)"],
                            capture_output=True, text=True, timeout=180)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "'substep-leapfrog'" in listed.stdout and listed.stdout.strip().endswith("True")
    out = user_module / "p.nc"
    ran = mechint("run", "--system", "long-pendulum", "--q0", "1", "--p0", "0", "--integrator",
                  "substep-leapfrog", "--substeps", "2", "--h", "0.1", "--steps", "20", "--out",
                  str(out), "--quiet")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds["q"].shape == (21, 1) and np.all(np.isfinite(ds["q"].values))
