"""The declared contracts: every registered system and integrator subclasses its base and
carries its facts; the CLI options and experiment keys come from their tables; the
splitting schemes are checked coefficient data."""

import argparse
import dataclasses
from typing import Any, ClassVar, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.cli import model
from mechint.integrators import stages
from mechint.systems.base import validate_vector_state

S = mi.systems
I = mi.integrators


def _system(cls):
    if cls is S.NBody:  # its masses have no default
        return cls([1.0, 1e-3, 3e-4])
    return cls((2.0, 1.0, 2.0 / 3.0)) if cls is S.EulerTop else cls.example()


@pytest.mark.parametrize("cls", list(S.SYSTEMS.values()), ids=list(S.SYSTEMS))
def test_every_system_declares_its_facts(cls):
    system = _system(cls)
    assert isinstance(system, S.System) and not getattr(cls, "__abstractmethods__", None)
    x0 = system.example_state()
    x, batched = system.validate_state(x0)
    assert not batched
    names = {p.name for p in cls.parameter_table} | {s.name for s in cls.state_options}
    assert names, "the CLI needs its options"
    if isinstance(system, S.ExactSolution):  # the exact flow starts at x0
        at0 = system.exact_solution(x0, 0.0)
        for a, b in zip(jax.tree.leaves(at0), jax.tree.leaves(x), strict=True):
            assert np.max(np.abs(np.asarray(a) - b)) < 1e-14
    if isinstance(system, S.NaturalSplit):
        for flow in system.natural_split():
            assert flow.cannot_serve(system) is None and flow.traits.order == I.EXACT
    if isinstance(system, S.LevelSetSampler):
        spec = {
            f: np.asarray(v)
            for (f, _), v in zip(system.state_fields, jax.tree.leaves(x), strict=True)
        }
        sample = system.sample_level_set(np.random.default_rng(1), 4, spec)
        before = system.casimirs(jax.tree.map(jnp.asarray, x))
        after = system.casimirs(jax.tree.map(jnp.asarray, sample))
        for name, value in after.items():
            if name in before and cls is not S.EulerTop:  # the top's C is set by spec["C"]
                assert np.allclose(value, before[name], rtol=1e-12, atol=1e-12), name


@pytest.mark.parametrize("cls", list(I.INTEGRATORS.values()), ids=list(I.INTEGRATORS))
def test_every_integrator_declares_its_contract(cls):
    assert issubclass(cls, I.Integrator) and not getattr(cls, "__abstractmethods__", None)
    integrator = cls()
    assert hash(integrator) == hash(cls())  # static for jit: compiled once per setting
    assert isinstance(integrator.traits, I.Traits)
    systems = [_system(s) for s in S.SYSTEMS.values()] + USER_SYSTEMS
    served = [s for s in systems if integrator.cannot_serve(s) is None]
    assert served, "an integrator serves at least one registered system"


# The systems made from user functions (not in the CLI's registry): what they declare is
# held to the same contract.
USER_SYSTEMS: list[Any] = [
    S.RigidBodies([[1.0, 1.5, 2.0]] * 2, mass=1.0, potential=lambda x, R: -1.0 / jnp.sum(
        (x[0] - x[1]) ** 2) ** 0.5, translation_invariant=True, rotation_invariant=True),
]  # fmt: skip


@pytest.mark.parametrize("system", USER_SYSTEMS, ids=lambda s: type(s).__name__)
def test_user_function_systems_declare_their_facts(system):
    _, batched = system.validate_state(system.example_state())
    assert not batched
    assert isinstance(system, S.NaturalSplit)
    for flow in system.natural_split():
        assert flow.cannot_serve(system) is None and flow.traits.order == I.EXACT


def test_a_new_system_is_one_module_and_one_registry_line(monkeypatch):
    """The CLI's options and the build come from the system's own tables."""

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Decay(S.System):
        """ẋ = −k x."""

        k: float = 1.0
        name: ClassVar[str] = "decay"
        parameter_table: ClassVar[tuple] = (S.Parameter("k", "rate k > 0", required=True),)
        state_options: ClassVar[tuple] = (S.StateOption("x0", "initial value"),)
        state_fields = (("x", ("component",)),)

        @property
        def state_shape(self) -> tuple[int, ...]:
            return (1,)

        def vector_field(self, x):
            return -self.k * x

        def invariants(self, x):
            return {}

        def parameters(self):
            return {"k": float(self.k)}

        def validate_state(self, x, name="x0"):
            return validate_vector_state(name, x, 1)

        def example_state(self):
            return np.array([1.0])

    monkeypatch.setitem(S.SYSTEMS, "decay", Decay)
    parser = argparse.ArgumentParser()
    model.add_system_options(parser)
    model.add_integrator_options(parser)
    args = parser.parse_args(["--system", "decay", "--k", "2", "--x0", "1", "--integrator", "rk4"])
    system = model.build_system(args)
    assert isinstance(system, Decay) and np.asarray(system.k).tolist() == [2.0]
    x0, _ = model.initial_state(args, system)
    traj = mi.simulate(system, model.build_integrator(args, system), x0, 0.01, 100, 100)
    assert abs(traj.x[-1, 0] - np.exp(-2.0)) < 1e-9
    args = parser.parse_args(["--system", "decay", "--x0", "1", "--integrator", "rk4"])
    with pytest.raises(mi.InputError, match="--k: required"):
        model.build_system(args)


def test_integrator_settings_are_one_table_for_cli_and_experiments():
    kepler, top = S.Kepler(), S.EulerTop((3.0, 2.0, 1.0))
    assert cast(I.Composition, I.build("composition", kepler)).base == I.StormerVerlet()
    assert cast(I.Composition, I.build("composition", top)).base == I.Splitting()
    built = I.build("composition", kepler, {"scheme": "kahan-li8", "base": "midpoint"})
    assert built == I.Composition(I.ImplicitMidpoint(), "kahan-li8")
    assert I.build("rigid-body-splitting", top, {"order": "6"}) == I.RigidBodySplitting(6)
    with pytest.raises(mi.InputError, match="order: does not apply to kahan"):
        I.build("kahan", top, {"order": 4})
    with pytest.raises(mi.InputError, match="base: cannot be composition"):
        I.build("composition", kepler, {"base": "composition"})
    assert I.build("gauss", kepler, {"stages": "3"}) == I.Gauss(3)
    assert I.build("discrete-gradient", kepler, {"variant": "itoh-abe"}) == I.DiscreteGradient(
        "itoh-abe"
    )
    assert {n for n, _ in I.SETTINGS["variant"]} == {"symplectic-euler", "discrete-gradient"}
    assert set(I.SETTINGS) == {"variant", "scheme", "base", "order", "stages", "coordinates",
                               "kernel", "corrector", "corrector2", "n", "corrected",
                               "sigma"}  # fmt: skip
    # a wrapper named as the maps are, its base's default from the system
    with pytest.raises(mi.InputError, match="sigma: is required by reversible-adaptive"):
        I.build("reversible-adaptive", kepler)
    sigma = {"sigma": "mechint.exact:kepler_flow"}  # any function: only its reference here
    adaptive = cast(I.ReversibleAdaptive, I.build("reversible-adaptive", kepler, sigma))
    assert adaptive.base == I.StormerVerlet() and adaptive.sigma is mi.exact.kepler_flow
    assert {n for n, _ in I.SETTINGS["base"]} == {"composition", "reversible-adaptive"}


def test_splitting_schemes_are_checked_data():
    """Lie-Trotter has order 1 and Strang order 2 in the free algebra on 2, 3, 4 pieces
    (and no more); a scheme claiming more is refused on construction."""
    for m in (2, 3, 4):
        lt = stages.splitting_defects(stages.SPLITTING_SCHEMES["lie-trotter"].plan(m), m, 2)
        assert lt[1] < 1e-15 and lt[2] > 0.1
        st = stages.splitting_defects(stages.SPLITTING_SCHEMES["strang"].plan(m), m, 3)
        assert st[1] < 1e-15 and st[2] < 1e-15 and st[3] > 1e-3
    with pytest.raises(ValueError, match="order conditions fail"):
        stages.SplittingScheme("lie-trotter", order=2, symmetric=False)
    with pytest.raises(ValueError, match="higher than declared"):
        stages.SplittingScheme("strang", order=1, symmetric=True)


def test_user_objects_must_subclass_the_contracts():
    top = S.EulerTop((3.0, 2.0, 1.0))
    with pytest.raises(mi.InputError, match="not a mechint integrator"):
        mi.simulate(top, "kahan", np.ones(3), 0.1, 10)
    with pytest.raises(mi.InputError, match="not a mechint integrator"):
        I.Composition(base=cast(Any, "stormer-verlet"))  # a name, not an integrator
    with pytest.raises(mi.InputError, match="integrators"):
        I.Splitting(flows=cast(Any, ("drift",)))


def test_a_module_over_600_lines_says_why():
    """The house keeps modules to 600 lines; a longer one states its reason first thing,
    in its docstring."""
    import ast
    from pathlib import Path

    root = Path(mi.__file__).parent
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 600:
            doc = ast.get_docstring(ast.parse(text)) or ""
            assert "Longer than the house's 600 lines because" in doc, path.relative_to(root)
