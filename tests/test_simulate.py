import dataclasses
import importlib
import itertools
from typing import Any, ClassVar, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.integrators.base import Integrator, Reason, Traits, status
from mechint.integrators.explicit_rk import ExplicitRungeKutta
from mechint.maps import map_columns
from tests.conftest import cache_size


def test_saved_grid_and_final_state(top, m0):
    traj = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 1000, 100)
    assert traj.t.shape == (11,) and traj.x.shape == (11, 3)
    assert np.allclose(traj.t, np.arange(11) * 1.0, rtol=0, atol=1e-15)
    assert np.array_equal(traj.x[0], m0)
    every = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 1000, 1)
    assert np.array_equal(every.x[::100], traj.x)  # bit-identical, whatever the save grid


def test_batch_runs_vectorized_and_matches_single_runs(top):
    """A batch's members equal their runs alone to round-off, not always bit for bit: XLA
    compiles the two loops as different programs (vectorised kernels, fused multiply-adds
    where LLVM chooses them; docs/concepts.md, "What is reproduced bit for bit")."""
    x0 = np.array([[0.45, 0.0, 0.89], [0.89, 0.1, 0.45], [0.1, -0.9, 0.3]])
    batch = mi.simulate(top, mi.integrators.RK4(), x0, 0.05, 200, 20)
    assert batch.x.shape == (3, 11, 3) and batch.batched
    for i in range(3):
        single = mi.simulate(top, mi.integrators.RK4(), x0[i], 0.05, 200, 20)
        assert np.max(np.abs(single.x - batch.x[i])) < 1e-15


def test_chunked_run_equals_one_chunk(top, m0, monkeypatch):
    whole = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 6000, 10)
    import sys

    monkeypatch.setattr(sys.modules["mechint.simulate"], "_CHUNK_BODY_STEPS", 700)
    chunked = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 6000, 10)
    assert np.array_equal(whole.x, chunked.x)


class _Clock:
    """An injected clock: each compiled call appears to take ``per_call(i)`` seconds."""

    def __init__(self, per_call):
        self.now, self.reads, self.per_call = 0.0, 0, per_call

    def __call__(self) -> float:
        self.reads += 1
        if self.reads % 2 == 1:  # a call begins (the driver reads the clock twice a call)
            self.now += self.per_call(self.reads // 2)
        return self.now


@pytest.mark.parametrize(
    ("machine", "per_call"),
    [
        ("steady", lambda i: 1e-3),
        ("busy", lambda i: 50.0 if i % 3 else 1e-4),  # rates jumping by 10^5
        ("stalled", lambda i: 1e4),  # every call slow as if the machine were swapping
    ],
)
def test_chunks_sized_by_time_give_the_same_states_with_one_compile(
    top, m0, machine, per_call, monkeypatch
):
    """Issue 31.7: chunk_seconds with an injected clock (not the wall clock): a short
    first chunk, then chunks sized from the measured rate, damped (at most 4 times
    longer, half as long, as the one before) and floored at the first chunk's length, so
    that a busy or stalled machine cannot break the run into thousands of calls; the
    states equal the run in one chunk, every chunk runs one compiled program."""
    import sys

    from mechint.simulate import _advance

    whole = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 200_000, 10)
    monkeypatch.setattr(sys.modules["mechint.simulate"], "_clock", _Clock(per_call))
    before = cache_size(_advance)
    chunks = []
    last = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 200_000, 10, keep=False,
                       chunk_steps=100_000, chunk_seconds=2e-3, on_chunk=chunks.append)  # fmt: skip
    sizes = [len(c.t) for c in chunks]
    sizes[0] -= 1  # x0
    assert np.array_equal(whole.x, np.concatenate([c.x for c in chunks]))
    first = 10_000 // 256  # saves per chunk at most (10^4), over 256
    assert sizes[0] == first and min(sizes[:-1]) >= first, sizes
    for a, b in itertools.pairwise(sizes[:-1]):  # the last chunk is what is left
        assert a / 2 - 1 <= b <= 4 * a + 1, (a, b)  # in steps, rounded to whole saves
    assert last.stats["calls"] == len(chunks) <= 20_000 // first + 1
    if machine == "steady":  # 1 ms per call, 2 ms wanted: the chunks grow
        assert max(sizes) >= 2 * first
    assert cache_size(_advance) - before <= 1
    assert last.stats["compile_time"] <= last.stats["wall_time"]
    with pytest.raises(mi.InputError, match="chunk_seconds"):
        mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 10, chunk_seconds=0.0)


def test_the_chunk_sizer_is_damped_and_floored():
    """ChunkSizer alone: from any sequence of measured times, sizes stay within
    [floor, cap] and change by at most 4x up and 2x down from one call to the next."""
    from mechint.simulate import ChunkSizer

    rng = np.random.default_rng(7)
    sizer = ChunkSizer(first=40, cap=10_000, seconds=0.5)
    sizes = [sizer.size]
    for _ in range(500):
        spent = float(10.0 ** rng.uniform(-6, 3))
        sizes.append(sizer.next(sizes[-1], spent))
    sizes = np.asarray(sizes)
    assert sizes.min() >= 40 and sizes.max() <= 10_000
    ratio = sizes[1:] / sizes[:-1]
    assert ratio.max() <= 4 and ratio.min() >= 0.5 - 1e-12
    assert ChunkSizer(first=40, cap=10_000, seconds=None).next(1, 1e9) == 10_000


def test_a_long_save_interval_runs_in_pieces(top, m0):
    """Issue 31.6: a save interval longer than a call's budget is run in pieces (each a
    call of at most ``chunk_steps`` body-steps, ``interrupt`` called between them): the
    same states, and an exception from ``interrupt`` stops the run between pieces."""
    whole = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 60_000, 20_000)
    pieces = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 60_000, 20_000, chunk_steps=3000)
    assert np.array_equal(whole.x, pieces.x)
    assert pieces.stats["calls"] == 3 * 7 and whole.stats["calls"] == 1
    calls = []

    def interrupt():
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 60_000, 20_000, chunk_steps=3000,
                    interrupt=interrupt)  # fmt: skip
    assert len(calls) == 4


def test_classes_for_instances_and_a_one_line_repr(top, m0):
    with pytest.raises(mi.InputError, match=r"integrator: got the class Kahan.*Kahan\(\)"):
        mi.simulate(top, mi.integrators.Kahan, m0, 0.01, 10)
    with pytest.raises(mi.InputError, match=r"system: got the class EulerTop"):
        mi.simulate(mi.systems.EulerTop, mi.integrators.Kahan(), m0, 0.01, 10)
    traj = mi.simulate(top, mi.integrators.Kahan(), np.stack([m0, m0]), 0.01, 1000, 10)
    text = repr(traj)
    assert "\n" not in text and len(text) < 300
    assert "101 samples" in text and "m(2, 101, 3)" in text and "0 failed" in text


def test_compiled_once_per_system_type_and_integrator(top, m0):
    from mechint.simulate import _advance

    mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 500, 50)
    before = cache_size(_advance)
    other = mi.systems.EulerTop((5.0, 3.0, 1.0))
    mi.simulate(other, mi.integrators.Kahan(), m0 * 2, 0.02, 500, 50)
    assert cache_size(_advance) == before


@dataclasses.dataclass(frozen=True)
class FailsAtTime(Integrator):
    """Explicit Euler that reports failure once t passes ``t_fail`` (a user integrator)."""

    t_fail: float = 0.37
    name: ClassVar[str] = "test-fail"
    traits = Traits(order=1, symmetric=False, explicit=True)

    def cannot_serve(self, system):
        return None

    def step(self, system, x, h):
        # the state carries time in its last component
        nxt = x + h * jnp.concatenate([system.vector_field(x[:3]), jnp.ones(1)])
        return nxt, status(nxt[3] <= self.t_fail + 1e-12, jnp.asarray(123.0), Reason.REPORTED)


@dataclasses.dataclass(frozen=True, eq=False)
class TimedTop(mi.systems.System):
    top: mi.systems.EulerTop
    state_fields = (("m", ("axis",)),)

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (4,)

    def vector_field(self, x):
        return self.top.vector_field(x)

    def invariants(self, x):
        return {}

    def parameters(self):
        return {}

    def example_state(self):
        return np.zeros(4)

    def validate_state(self, x, name="x0"):
        from mechint.systems.base import validate_vector_state

        return validate_vector_state(name, x, 4)


jax.tree_util.register_pytree_node(
    TimedTop, lambda s: ((s.top,), None), lambda _, c: TimedTop(c[0])
)


def test_failure_mid_run_names_step_and_keeps_samples(top):
    x0 = np.array([0.45, 0.0, 0.89, 0.0])
    with pytest.raises(mi.StepFailure) as info:
        mi.simulate(TimedTop(top), FailsAtTime(), x0, 0.01, 100, 5)
    f = info.value
    assert f.step == 38  # t = 0.38 > 0.37 first after step 38
    assert f.residual == 123.0
    assert "step 38" in str(f) and "reported a failed step" in str(f)
    assert f.code == Reason.REPORTED
    assert np.allclose(f.trajectory.t, np.arange(8) * 0.05)  # samples at steps 0, 5, ..., 35
    assert abs(f.last_state[3] - 0.37) < 1e-12  # state after 37 steps
    good = mi.simulate(TimedTop(top), FailsAtTime(t_fail=10.0), x0, 0.01, 35, 5)
    assert np.array_equal(good.x, f.trajectory.x)


def test_batch_failure_reports_member(top):
    integ = mi.integrators.ExplicitEuler()
    x0 = np.array([[0.45, 0.0, 0.89], [1e200, 1e200, 1e200]])
    with pytest.raises(mi.StepFailure, match="batch member 1") as info:
        mi.simulate(top, integ, x0, 0.1, 10, 1)
    assert info.value.step == 1 and info.value.batch_index == 1


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        ({"h": 0.0}, "h"),
        ({"h": float("nan")}, "h"),
        ({"h": "fast"}, "h"),
        ({"steps": 0}, "steps"),
        ({"steps": 2.5}, "steps"),
        ({"save_every": 3}, "save_every"),
        ({"save_every": 0}, "save_every"),
        ({"save_every": 200}, "save_every"),
        ({"x0": [1.0, 2.0]}, "x0"),
        ({"x0": [1.0, float("inf"), 2.0]}, "x0"),
        ({"x0": np.zeros((2, 2, 3))}, "x0"),
    ],
)
def test_bad_input_raises_before_work(top, m0, kwargs, parameter):
    args = {"x0": m0, "h": 0.1, "steps": 100, "save_every": 10, **kwargs}
    with pytest.raises(mi.InputError) as info:
        mi.simulate(top, mi.integrators.Kahan(), args.pop("x0"), **args)
    assert info.value.parameter == parameter


def test_save_every_error_suggests_a_divisor(top, m0):
    with pytest.raises(mi.InputError, match="such as 25"):
        mi.simulate(top, mi.integrators.Kahan(), m0, 0.1, 100, 24)


def test_integrator_that_cannot_serve_system_says_so_before_any_step(m0):
    class NotATop(mi.systems.System):
        state_fields = (("m", ("axis",)),)

        @property
        def state_shape(self) -> tuple[int, ...]:
            return (3,)

        def validate_state(self, x, name="x0"):
            return np.asarray(x, dtype=float), False

        def vector_field(self, x):
            return x

        def invariants(self, x):
            return {}

        def parameters(self):
            return {}

        def example_state(self):
            return np.zeros(3)

    jax.tree_util.register_pytree_node(NotATop, lambda s: ((), None), lambda _, c: NotATop())
    with pytest.raises(
        mi.UnsupportedError, match=r"Kahan cannot advance NotATop.*QuadraticVectorField"
    ):
        mi.simulate(NotATop(), mi.integrators.Kahan(), m0, 0.1, 10)
    with pytest.raises(mi.InputError, match="not a mechint system"):
        mi.simulate(object(), mi.integrators.Kahan(), m0, 0.1, 10)
    with pytest.raises(mi.InputError, match="not a mechint integrator"):
        mi.simulate(mi.systems.EulerTop((1, 2, 3)), "kahan", m0, 0.1, 10)


def test_float32_on_request():
    """The state and parameters are cast to float32; results agree with float64 to float32
    precision, and what a map keeps is kept to float32 round-off."""
    top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
    m0 = np.array([0.45, 0.0, 0.89])
    a = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 100, 10, dtype="float32")
    b = mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 100, 10)
    assert a.x.dtype == np.float32 and b.x.dtype == np.float64
    assert 1e-9 < np.max(np.abs(a.x - b.x)) < 1e-5
    kepler = mi.systems.Kepler()
    x0 = kepler.periapsis_state(0.5)
    for integrator in (mi.integrators.StormerVerlet(), mi.integrators.ImplicitMidpoint()):
        traj = mi.simulate(kepler, integrator, x0, 0.01, 1000, 100, dtype="float32")
        assert traj.x[0].dtype == np.float32
        assert np.max(mi.diagnostics.invariant_errors(kepler, traj)["L"]) < 1e-5
    with pytest.raises(mi.InputError, match="dtype"):
        mi.simulate(top, mi.integrators.Kahan(), m0, 0.01, 10, dtype="float16")


def test_traced_loops_in_static_blocks_take_the_same_steps(top, monkeypatch):
    """On a GPU a loop of a traced length runs in static blocks of 64 steps and the rest
    (integrate._blocks_for_traced_loops): forced here on the CPU, the same states bit
    for bit, a failure at the same step, for intervals below, at and across a block."""
    from mechint.simulate import _advance

    advance = cast(Any, _advance)  # clear_cache: the jitted function's, untyped

    x0 = np.array([[0.45, 0.0, 0.89, 0.0], [0.1, 0.7, -0.3, 0.0]])

    def runs():
        advance.clear_cache()  # the flag is read when the loop is traced
        out = [mi.simulate(TimedTop(top), FailsAtTime(t_fail=10.0), x0, 0.01, 260, e).x
               for e in (1, 65, 130)]  # fmt: skip
        with pytest.raises(mi.StepFailure) as info:  # fails at step 138 (t > 1.37)
            mi.simulate(TimedTop(top), FailsAtTime(t_fail=1.37), x0[0], 0.01, 260, 130)
        return out, info.value.step, info.value.trajectory.x

    plain = runs()
    # the module: the package's attribute of that name is the function integrate
    loop = importlib.import_module("mechint.integrate")
    monkeypatch.setattr(loop, "_blocks_for_traced_loops", lambda: True)
    blocked = runs()
    advance.clear_cache()
    assert plain[1] == blocked[1] == 138
    for a, b in zip(plain[0] + [plain[2]], blocked[0] + [blocked[2]], strict=True):
        assert np.array_equal(a, b)


def test_batch_loops_on_columns_take_the_same_steps(monkeypatch):
    """On a GPU a batch's loop carries its state as columns (integrate.tracked_step,
    ``columns_of``): forced here on the CPU, with the static blocks as there, the same
    states and failures as the (B, n) loop, bit for bit: the Euler top (Kahan, 3 steps an
    iteration; a member that fails at its first step; ``integrate``'s static loop under
    ``jax.jit``, saves of 10: three and a rest, and ``simulate``'s traced one, saves of
    70: a static block of 64, then two groups of three); on ``integrate``'s traced loop,
    the same tops forced, a state that carries its clock (RK4 with its stages' sums on
    the columns, 3 steps an iteration; saves of 70, and of 2, shorter than a group),
    and the discrete Lagrangian map's (3, 3) states; to round-off, two rigid bodies (a
    leaf of 18 entries a member stays whole, the momenta go by columns) whose LGVI XLA
    compiles differently."""
    from mechint.simulate import _advance

    loop = importlib.import_module("mechint.integrate")
    top = mi.systems.EulerTop((2.0, 1.0, 2.0 / 3.0))
    m0 = np.array([[0.45, 0.0, 0.89], [1e200, 1e200, 1e200], [0.1, 0.7, -0.3]])
    body = mi.systems.FreeRigidBody((1.0, 2.0, 3.0))
    M0 = np.stack([np.asarray(mi.lie.hat(m)) for m in (m0[0], m0[2])])
    pair = mi.systems.RigidBodies([(1.0, 2.0, 3.0), (2.0, 2.0, 3.0)])
    R, P = pair.example_state()
    rb0 = (np.stack([R, R]), np.stack([P, 0.5 * P]))
    forced = mi.systems.Forced(top, lambda t, m: 0.01 * m)  # the state carries its clock
    cases = [(top, mi.integrators.Kahan(), m0), (body, mi.integrators.DiscreteLagrangian(), M0),
             (pair, mi.integrators.LieGroupVariational(), rb0),
             (forced, mi.integrators.RK4(), m0)]  # fmt: skip
    loops = (_advance, loop._integrate_concrete, loop._integrate)
    programs = [cast(Any, f) for f in loops]  # clear_cache

    def runs():
        for f in programs:  # the flags are read when the loops are traced
            f.clear_cache()
        out = []
        a = jax.jit(lambda x: mi.integrate(top, cases[0][1], x, 0.05, 70, 10))(m0)  # static
        out.append((a.x, a.failed_step))
        for system, integrator, x0 in cases[1:]:  # concrete input: a traced loop
            a = mi.integrate(system, integrator, x0, 0.05, 140, save_every=70)
            out.append((a.x, a.failed_step))
        a = mi.integrate(forced, cases[3][1], m0, 0.05, 4, save_every=2)  # the same program
        b = mi.simulate(top, cases[0][1], m0, 0.05, 140, 70, throw=False)  # a traced loop
        return [*out, (a.x, a.failed_step), (b.x, b.failed_step)]

    # the layout itself: leaves of 1 to 16 entries a member go by columns, others whole
    x = (np.ones((4, 3)), np.zeros((4, 0)), np.ones((4, 5, 5)), np.arange(4.0))
    cols = loop.to_columns(x)
    assert [len(c) if isinstance(c, tuple) else c.shape for c in cols] == [3, (4, 0), (4, 5, 5), 1]
    back = loop.from_columns(cols, x)
    assert all(np.array_equal(a, b) and a.shape == b.shape for a, b in zip(x, back, strict=True))
    # a member's function on the columns (the members along the last axis of the small
    # leaves): the same values as on the stacked members, in the same columns
    x = (np.arange(12.0).reshape(4, 3), np.arange(100.0).reshape(4, 5, 5), np.arange(4.0))

    def member(s):
        return (s[0] * s[2] + s[0][::-1], s[1].T * s[0][1], jnp.sum(s[0]) * s[2])

    got, want = jax.jit(
        lambda x: (map_columns(member, x, loop.to_columns(x)), jax.vmap(member)(x))
    )(x)
    assert jax.tree.structure(got) == jax.tree.structure(loop.to_columns(want))
    for u, v in zip(jax.tree.leaves(got), jax.tree.leaves(loop.to_columns(want)), strict=True):
        assert np.array_equal(u, v)
    plain = runs()
    monkeypatch.setattr(loop, "_columns_in_loops", lambda: True)
    monkeypatch.setattr(loop, "_blocks_for_traced_loops", lambda: True)
    monkeypatch.setattr(Integrator, "batch_columns", True)  # every map, not only Kahan
    for cls in (mi.integrators.Kahan, ExplicitRungeKutta):  # 3 steps an iteration, a rest
        monkeypatch.setattr(cls, "batch_unroll", 3)
    on_gpu = runs()
    for f in programs:
        f.clear_cache()
    for i in (0, 3, 4, 5):  # the Euler tops: the second fails at its first step
        assert list(plain[i][1]) == [-1, 1, -1]
    for i, (p, got) in enumerate(zip(plain, on_gpu, strict=True)):
        assert list(p[1]) == list(got[1])
        for u, v in zip(jax.tree.leaves(p[0]), jax.tree.leaves(got[0]), strict=True):
            if i == 2:  # the rigid bodies
                assert np.max(np.abs(u - v)) < 1e-14
            else:
                assert np.array_equal(u, v, equal_nan=True)
