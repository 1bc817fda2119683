"""Issue 18 (8, 9): hostile input is one line and exit 2, before any work; and the
property "no argument list or file makes the CLI print a traceback, hang, or leave a file
that claims to be complete when it is not", tested with hypothesis."""

import json
import os
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mechint as mi
from mechint import io
from mechint.errors import SpecialCaseWarning
from tests.cli.helpers import invoke
from tests.conftest import load_module

RUN = [
    "run",
    "--system",
    "euler-top",
    "--inertia",
    "2,1,0.6667",
    "--integrator",
    "kahan",
    "--h",
    "0.01",
    "--steps",
    "10",
    "--quiet",
]
TOML = (
    'steps = 10\nh = {h}\nintegrators = {integrators}\n[system]\nname = "euler-top"\n'
    "inertia = [2, 1, 0.6667]\n[initial]\nm = [[0.45, 0, 0.89]]\n{extra}"
)


def _npy_header(shape: str) -> bytes:
    h = "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }"
    h = h + " " * (118 - len(h)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode()


STATE_FILES = {
    "complex.npy": ("npy", np.array([0.45 + 1j, 0, 0.89]), "complex128"),
    "struct.npy": ("npy", np.zeros(3, dtype=[("a", float)]), "values"),
    "object.npy": ("raw", _npy_header("(3,)").replace(b"<f8", b"|O8"), "values"),
    "truncated.npy": ("raw", _npy_header("(3,)") + b"\0" * 8, "does not hold"),
    "huge.npy": ("raw", _npy_header("(1000000000000, 3)"), "does not hold"),
    "badheader.npy": (
        "raw",
        b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8', \n" + b"\0" * 24,
        "cannot read numbers",
    ),
    "notnpy.npy": ("raw", b"hello world", "cannot read numbers"),
    "object.json": ("text", '{"a": 1}', "holds dict"),
    "bools.json": ("text", "[true, false, true]", "holds bool"),
    "strings.json": ("text", '["0.45", 0, 0.89]', "holds str"),
    "null.json": ("text", "[null, 0, 0.89]", "holds NoneType"),
    "ragged.json": ("text", "[[1, 2], [3]]", "rectangular"),
    "deep.json": ("text", "[" * 100_000 + "]" * 100_000, "cannot read numbers"),
    "nested.json": ("text", "[[[[[[1]]]]]]", "deeper"),
    "binary.json": ("raw", bytes(range(256)), "cannot read numbers"),
}


@pytest.mark.parametrize("name", list(STATE_FILES))
def test_a_hostile_state_file_is_one_line(name, tmp_path, capsys):
    kind, content, needle = STATE_FILES[name]
    path = tmp_path / name
    if kind == "npy":
        np.save(path, content)
    elif kind == "raw":
        path.write_bytes(content)
    else:
        path.write_text(content)
    out = tmp_path / "o.nc"
    code, _, err = invoke([*RUN, "--x0", str(path), "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1 and "--x0" in err and needle in err, err
    assert not out.exists()


EXPERIMENTS = {
    "binary": (bytes(range(256)) * 4, "not valid TOML"),
    "deep": (("a = " + "[" * 100_000 + "]" * 100_000).encode(), "nested too deeply"),
    "wrong type": (TOML.format(h='"x"', integrators='["kahan"]', extra="").encode(), "h:"),
    "typos in random": (
        TOML.format(
            h="0.01", integrators='["kahan"]', extra="[initial.random]\ncnt = 3\nsead = 1\n"
        ).encode(),
        "unknown keys ['cnt', 'sead']",
    ),
    "empty h": (TOML.format(h="[]", integrators='["kahan"]', extra="").encode(), "h: is an empty"),
    "empty integrators": (
        TOML.format(h="0.01", integrators="[]", extra="").encode(),
        "integrators: is an empty",
    ),
    "integrators not a list": (
        TOML.format(h="0.01", integrators="3", extra="").encode(),
        "expected a list",
    ),
}


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_a_hostile_experiment_is_one_line(name, tmp_path, capsys):
    content, needle = EXPERIMENTS[name]
    path = tmp_path / "e.toml"
    path.write_bytes(content)
    out = tmp_path / "s.nc"
    code, _, err = invoke(["sweep", str(path), "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not out.exists()


def test_a_leading_minus_is_a_value_and_an_empty_demo_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "o.nc"
    code, _, err = invoke([*RUN, "--x0", "-0.45,0,0.89", "--out", str(out)], capsys)
    assert code == 0, err
    with io_open(out) as attrs:
        assert attrs["complete"] == 1
    code, _, err = invoke(["demo", "--out", ""], capsys)
    assert code == 2 and "--out: is empty" in err


class io_open:
    def __init__(self, path):
        attrs = io.saved_attrs(path)
        assert attrs is not None, path
        self.attrs = attrs

    def __enter__(self):
        return self.attrs

    def __exit__(self, *exc):
        return False


def test_an_output_folder_that_becomes_unwritable_is_one_line(tmp_path, capsys, monkeypatch):
    """The run stops at the checkpoint that cannot be written, in one line (exit 1)."""
    from mechint import runfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "o.nc"))

    monkeypatch.setattr(runfile.RunFile, "_merge", refuse)
    code, _, err = invoke([*RUN, "--x0", "0.45,0,0.89", "--out", str(tmp_path / "o.nc")], capsys)
    assert code == 1 and err.count("\n") == 1 and "Permission denied" in err, err


TOP = mi.systems.EulerTop((2.0, 1.0, 0.6667))
X = np.array([0.45, 0.0, 0.89])


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: mi.diagnostics.poisson_defect(TOP, mi.integrators.Kahan(), X, 0.0), "h: must"),
        (
            lambda: mi.diagnostics.check(TOP, mi.integrators.Kahan(), X, cast(Any, "h")),
            "h: expected",
        ),
        (
            lambda: mi.simulate(TOP, mi.integrators.Kahan(), X, 0.01, 10, chunk_steps=0),
            "chunk_steps",
        ),
        (lambda: mi.diagnostics.compare(TOP, [], X, 0.1, 1.0), "integrators: expected"),
        (
            lambda: mi.integrators.Composition(cast(Any, mi.integrators.StormerVerlet), "yoshida4"),
            "pass an instance",
        ),
        (lambda: mi.systems.EulerTop([[2, 1, 0.6667]]), "an array of shape (1, 3)"),
    ],
    ids=["poisson h=0", "check h str", "chunk_steps=0", "compare []", "class", "2-d inertia"],
)
def test_api_misuse_is_an_input_error_naming_the_parameter(call, needle):
    with pytest.raises(mi.InputError, match=None) as info:
        call()
    assert needle in str(info.value), str(info.value)


# --- the property ---------------------------------------------------------------------
NUMBERS = st.sampled_from(
    [
        "0.45,0,0.89",
        "-0.45,0,0.89",
        "1e308,1e308,1e308",
        "nan,0,1",
        "0,0,0",
        "1,2",
        "1;2;3",
        "",
        "abc",
        "inf,0,0",
        "1e-320,0,0",
        "0.45,0,0.89;0.89,0.1,0.45",
        "--",
        "-",
        "2,1,0.6667",
    ]
)
VALUES = st.one_of(
    NUMBERS,
    st.sampled_from(
        [
            "0",
            "-1",
            "1e308",
            "1e-308",
            "10",
            "7",
            "1.5",
            "nan",
            "10000000000000000000000",
            "0x10",
            "x",
        ]
    ),
    st.text(max_size=12),
)
COMMON = ["--system", "--inertia", "--x0", "--h", "--order", "--m0", "--chi", "--gamma0"]
OPTIONS = {
    "run": [
        *COMMON,
        "--integrator",
        "--steps",
        "--save-every",
        "--dtype",
        "--orientation",
        "--checkpoint-every",
    ],
    "check": [*COMMON, "--integrator"],
    "compare": [*COMMON, "--integrators", "--T"],
}
SYSTEMS = st.sampled_from(["euler-top"] * 5 + ["heavy-top", "free-rigid-body", "nope"])
INTEGRATORS = st.sampled_from(
    [
        "kahan",
        "midpoint",
        "discrete-lagrangian",
        "explicit-euler",
        "rigid-body-splitting",
        "Kahan",
        "verlet",
    ]
)


@st.composite
def argv(draw):
    command = draw(st.sampled_from(["run", "check", "compare"]))
    name = "--integrators" if command == "compare" else "--integrator"
    args = [command, "--system", draw(SYSTEMS), name, draw(INTEGRATORS)]
    args += ["--inertia", "2,1,0.6667", "--x0", "0.45,0,0.89", "--h", "0.01"]
    args += {"run": ["--steps", "20"], "check": [], "compare": ["--T", "0.2"]}[command]
    for _ in range(draw(st.integers(0, 2))):  # override or add options, hostile values
        args += [draw(st.sampled_from(OPTIONS[command])), draw(VALUES)]
    return args


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(args=argv())
def test_no_argument_list_gives_a_traceback_or_a_file_claiming_too_much(args, tmp_path, capsys):
    """Random and hostile arguments: exit 0, 1 or 2 (never an internal error), at most
    one line on stderr when refused, and a file left behind says whether it is complete."""
    out = (
        tmp_path
        / f"p{abs(hash(tuple(args))) % 10**9}"
        / ("o.png" if args[0] == "compare" else "o.nc")
    )
    out.parent.mkdir(exist_ok=True)
    out.unlink(missing_ok=True)
    full = [*args, "--out", str(out)] if args[0] != "check" else args
    if args[0] == "run":
        full += ["--quiet", "--overwrite"]
    try:
        code, _, err = invoke(full, capsys)
    except Exception as exc:  # pragma: no cover - the failure this test exists to catch
        pytest.fail(f"{args}: {type(exc).__name__}: {exc}")
    assert code in (0, 1, 2), (args, code, err)
    assert "internal error" not in err and "Traceback" not in err, (args, err)
    if code == 2:
        assert err.count("\n") == 1, (args, err)
    if out.exists() and args[0] == "run":
        attrs = io.saved_attrs(out)
        assert attrs is not None and (int(attrs["complete"]) == 1) == (code == 0), (args, code)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)),
    suffix=st.sampled_from([".npy", ".json", ".toml"]),
)
def test_no_file_content_gives_a_traceback(data, suffix, tmp_path, capsys):
    """Random bytes as a state file (.npy, .json) or an experiment (.toml)."""
    path = tmp_path / f"f{suffix}"
    path.write_bytes(data)
    out = tmp_path / "o.nc"
    argv = (
        ["sweep", str(path), "--out", str(out)]
        if suffix == ".toml"
        else [*RUN, "--x0", str(path), "--out", str(out), "--overwrite"]
    )
    code, _, err = invoke(argv, capsys)
    assert code in (0, 2), (data[:60], err)
    assert "internal error" not in err and (code == 0 or err.count("\n") == 1), (data[:60], err)
    for p in (out, path):
        if p.exists() and p != path:
            os.unlink(p)


def test_a_valid_json_state_still_reads(tmp_path, capsys):
    path = tmp_path / "x0.json"
    path.write_text(json.dumps([[0.45, 0, 0.89], [0.89, 0.1, 0.45]]))
    code, _, err = invoke([*RUN, "--x0", str(path), "--out", str(tmp_path / "o.nc")], capsys)
    assert code == 0, err


# -- issue 36: more hostile and extreme input ---------------------------------------------------
def test_huge_counts_are_one_line_not_an_overflow(tmp_path, capsys):
    for steps in ("1e20", str(2**64)):
        argv = [*RUN[:-3], "--steps", steps, "--save-every", steps, "--x0", "0.45,0,0.89",
                "--out", str(tmp_path / "o.nc")]  # fmt: skip
        code, _, err = invoke(argv, capsys)
        assert code == 2 and "--steps" in err and "2^53" in err, err
    top = mi.systems.EulerTop((2, 1, 0.6667))
    with pytest.raises(mi.InputError, match="steps: must be at most 2"):
        mi.integrate(top, mi.integrators.Kahan(), [0.45, 0, 0.89], 0.01, 2**64)


def test_complex_and_boolean_states_are_refused_by_the_api():
    top = mi.systems.EulerTop((2, 1, 0.6667))
    for x in (np.array([0.45 + 1j, 0, 0.89]), np.array([True, False, True])):
        with pytest.raises(mi.InputError, match="x0: expected real numbers"):
            mi.simulate(top, mi.integrators.Kahan(), x, 0.01, 10)


def test_float64_with_jax_64_bit_mode_turned_off_is_refused():
    import jax

    top = mi.systems.EulerTop((2, 1, 0.6667))
    jax.config.update("jax_enable_x64", False)
    try:
        for run in (mi.simulate, mi.integrate):
            with pytest.raises(mi.InputError, match="dtype: float64 needs JAX's 64-bit mode"):
                run(top, mi.integrators.Kahan(), [0.45, 0, 0.89], 0.01, 10)
    finally:
        jax.config.update("jax_enable_x64", True)


def test_one_integrator_means_one(capsys):
    argv = ["check", "--system", "euler-top", "--inertia", "2,1,0.6667", "--x0", "0.45,0,0.89",
            "--integrator", "kahan,midpoint", "--h", "0.1"]  # fmt: skip
    code, _, err = invoke(argv, capsys)
    assert code == 2 and "takes one integrator, got 2" in err


def test_out_that_is_not_a_plain_file_path(tmp_path, capsys):
    """A FIFO would block the first open forever; a dangling link would be "created" as a
    stray file at its target; a name too long for the file system: one line, exit 2."""
    fifo, link, target = tmp_path / "f.nc", tmp_path / "l.nc", tmp_path / "t.nc"
    os.mkfifo(fifo)
    link.symlink_to(target)
    for out, words in ((fifo, "not a regular file"), (link, "symbolic link"),
                       (tmp_path / ("b" * 300 + ".nc"), "too long")):  # fmt: skip
        code, _, err = invoke([*RUN, "--x0", "0.45,0,0.89", "--out", str(out)], capsys)
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert not target.exists()
    demo = tmp_path / "demo"
    demo.mkdir()
    os.mkfifo(demo / "summary.txt")
    code, _, err = invoke(["demo", "--out", str(demo)], capsys)
    assert code == 2 and "not a regular file" in err, err


@pytest.mark.parametrize("value", ["yes", [1, 2], float("nan")], ids=["text", "array", "nan"])
def test_a_complete_attribute_mechint_does_not_write(tmp_path, capsys, value):
    import h5netcdf

    out = tmp_path / "r.nc"
    argv = [*RUN, "--x0", "0.45,0,0.89", "--out", str(out)]
    assert invoke(argv, capsys)[0] == 0
    with h5netcdf.File(out, "a") as fh:
        fh.attrs["complete"] = value
    code, _, err = invoke(argv, capsys)
    assert code == 2 and "'complete' attribute" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["[1, 2]", "null", "[" * 100_000 + "]" * 100_000])
def test_a_csv_sidecar_that_is_not_a_table(tmp_path, capsys, text):
    """A sidecar that is a list, null or nested past Python's recursion: not a mechint
    record, so the file is one mechint did not write (kept unless --overwrite, as any
    other such file), never an internal error."""
    out = tmp_path / "c.csv"
    argv = [*RUN, "--x0", "0.45,0,0.89", "--out", str(out)]
    assert invoke(argv, capsys)[0] == 0
    io.csv_metadata_path(out).write_text(text)
    assert io.saved_attrs(out) is None
    before = out.read_bytes()
    code, _, err = invoke(argv, capsys)
    assert code == 2 and "not a file mechint wrote" in err and err.count("\n") == 1, err
    assert out.read_bytes() == before
    code, _, err = invoke([*argv, "--overwrite"], capsys)
    assert code == 0, err


def test_text_where_an_experiment_wants_numbers(tmp_path, capsys):
    path = tmp_path / "e.toml"
    path.write_text(TOML.format(h="0.01", integrators='["kahan"]', extra="").replace(
        "m = [[0.45, 0, 0.89]]", 'm = "/etc/passwd"'))  # fmt: skip
    code, _, err = invoke(["sweep", str(path), "--out", str(tmp_path / "s.nc")], capsys)
    assert code == 2 and "initial.m: expected numbers" in err


def test_a_truncated_segment_and_newlines_in_a_message(tmp_path, capsys):
    """A segment cut short (a bad zip) is refused by --resume in one line; an error whose
    text holds newlines (a crafted file's) is printed on one line."""
    from mechint.cli import main as cli
    from mechint.runfile import segment_dir

    out = tmp_path / "r.nc"
    argv = [*RUN[:-3], "--steps", "100", "--x0", "0.45,0,0.89", "--out", str(out)]
    assert invoke([*argv, "--quiet"], capsys)[0] == 0
    segment_dir(out).mkdir(exist_ok=True)
    (segment_dir(out) / "000000000001.npz").write_bytes(b"PK\x03\x04 truncated")
    code, _, err = invoke([*argv[:-4], "--steps", "200", "--out", str(out), "--resume"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert cli._oneline(mi.InputError("x", "a\nb\n\nc")) == "x: a b c"


def _inflate(src, dst, dim: str, n: int) -> None:
    """The attack benchmark's crafted file (``benchmarks/attack.py``: ``inflate``)."""
    attack = load_module("attack", Path(__file__).resolve().parents[2] / "benchmarks" / "attack.py")
    attack.inflate(src, dst, dim, n)


def test_a_crafted_file_declaring_more_than_it_stores_is_refused_before_reading(tmp_path, capsys):
    """Issue 36: a 15 kB .nc declaring 10¹¹ samples kept ``run --resume`` busy for hours
    (every fill value read before the checksum), a crafted sweep ended in a MemoryError
    (2.18 TiB); both are refused from the headers, as is a segment compressed into a zip
    bomb."""
    import zipfile

    from mechint.runfile import segment_dir

    run = [*RUN[:-3], "--steps", "100", "--x0", "0.45,0,0.89", "--quiet"]
    assert invoke([*run, "--out", str(tmp_path / "r.nc")], capsys)[0] == 0
    _inflate(tmp_path / "r.nc", tmp_path / "big.nc", "time", 10**11)
    code, _, err = invoke([*run, "--out", str(tmp_path / "big.nc"), "--resume"], capsys)
    assert code == 2 and "declares more data than it stores" in err, err
    toml = tmp_path / "e.toml"
    toml.write_text(TOML.format(h="[0.01, 0.02]", integrators='["kahan"]', extra=""))
    assert invoke(["sweep", str(toml), "--out", str(tmp_path / "s.nc")], capsys)[0] == 0
    _inflate(tmp_path / "s.nc", tmp_path / "bigs.nc", "sample", 10**11)
    code, _, err = invoke(["sweep", str(toml), "--out", str(tmp_path / "bigs.nc"), "--resume"],
                          capsys)  # fmt: skip
    assert code == 2 and "declares more data than it stores" in err, err
    # a segment whose member is deflated (what np.savez never writes): refused unopened
    segment_dir(tmp_path / "r.nc").mkdir(exist_ok=True)
    bomb = segment_dir(tmp_path / "r.nc") / f"{101:020d}.npz"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a/time.npy", b"\0" * 10**6)
    code, _, err = invoke([*run[:-1], "--out", str(tmp_path / "r.nc"), "--resume"], capsys)
    assert code == 2 and "compressed or larger than the file" in err, err
    # a stored 1 kB member whose header declares 10¹¹ numbers: refused, not allocated
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }"
    header += " " * (118 - len(header)) + "\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
    with zipfile.ZipFile(bomb, "w") as archive:
        archive.writestr("a/time.npy", npy + b"\0" * 800)
    code, _, err = invoke([*run[:-1], "--out", str(tmp_path / "r.nc"), "--resume"], capsys)
    assert code == 2 and "more than it holds" in err, err
    # a record attribute that is an array where mechint writes a number: another run
    import h5netcdf

    bomb.unlink()
    with h5netcdf.File(tmp_path / "r.nc", "a") as fh:
        fh.attrs["h"] = np.array([0.01, 0.02])
    code, _, err = invoke([*run[:-1], "--out", str(tmp_path / "r.nc"), "--resume"], capsys)
    assert code == 2 and "written by another run (h = " in err, err


def test_a_random_sample_too_large_is_refused_before_it_is_drawn(tmp_path, capsys, monkeypatch):
    """Issue 36: ``[initial.random] count = 1e8`` was refused after 28 s at 8.8 GB, with
    the advice "save_every 10", which equals the steps already; 1e9 was an internal error.
    The count is checked from one drawn state, and where no save interval helps the error
    names the count."""
    from mechint.systems.euler_top import EulerTop

    drawn = []
    original = EulerTop.sample_level_set
    monkeypatch.setattr(EulerTop, "sample_level_set",
                        lambda self, rng, count, spec: drawn.append(count) or original(
                            self, rng, count, spec))  # fmt: skip
    path = tmp_path / "r.toml"
    for count in ("100000000", "1e9"):
        random = f"m = [0.45, 0, 0.89]\n[initial.random]\ncount = {count}"
        path.write_text(TOML.format(h="0.01", integrators='["kahan"]', extra="").replace(
            "m = [[0.45, 0, 0.89]]", random))  # fmt: skip
        monkeypatch.setattr("mechint.resources.available_memory", lambda: 8 * 10**9)
        code, _, err = invoke(["sweep", str(path), "--out", str(tmp_path / "s.nc")], capsys)
        assert code == 2 and "initial.random.count" in err and "save_every" not in err, err
        assert "first and the last state would still not fit" in err
    assert drawn == [1, 1]
    # a run's batch: the option that sets its states, and how many of them would fit
    monkeypatch.setattr("mechint.resources.available_memory", lambda: 10**4)
    argv = [*RUN[:-3], "--steps", "1000", "--x0", ";".join(["0.45,0,0.89"] * 500),
            "--out", str(tmp_path / "b.nc")]  # fmt: skip
    code, _, err = invoke(argv, capsys)
    assert code == 2 and err.startswith("mechint run: error: --x0:") and "of the 500 runs" in err


def test_a_platform_jax_cannot_start_is_one_line(capsys, monkeypatch):
    """Issue 36: JAX_PLATFORMS=cuda on a machine without a GPU was an internal error (a
    bare AssertionError inside JAX)."""
    import jax

    def no_gpu():
        raise AssertionError

    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    monkeypatch.setattr(jax, "devices", no_gpu)
    code, _, err = invoke([*RUN, "--x0", "0.45,0,0.89", "--out", "o.nc"], capsys)
    assert code == 2 and err.startswith("mechint run: error: JAX_PLATFORMS: JAX cannot start")
    assert "'cuda'" in err and len(err.strip().splitlines()) == 1


def test_a_heavy_top_with_lagrange_numbers_says_so_in_one_line(tmp_path, capsys):
    """The command runs it and notes the Lagrange case on one line of stderr."""
    from mechint.cli import main as cli

    argv = ["run", "--system", "heavy-top", "--inertia", "1,1,0.5", "--chi", "0,0,1", "--m0",
            "0.1,0.2,1", "--gamma0", "0.3,0,0.95", "--integrator", "kahan", "--h", "0.01",
            "--steps", "10", "--quiet", "--out", str(tmp_path / "o.nc")]  # fmt: skip
    with pytest.warns(mi.SpecialCaseWarning) as caught:
        code, _, err = invoke(argv, capsys)
    assert code == 0, err
    line = cli._note("run")(caught[0].message, SpecialCaseWarning, "f.py", 1)
    assert line.startswith("mechint run: note: HeavyTop(") and "LagrangeTop" in line
    assert line.count("\n") == 1 and line.endswith("\n")
