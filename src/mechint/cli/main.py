"""``mechint`` entry point: sub-commands, one-line errors, exit codes.

Exit codes: 0 success; 2 bad input (one line on stderr, before any work); 1 a run that
stopped at a failing step (what was computed is written, and the message says so).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import textwrap
import warnings

import numpy as np

from mechint import plugins
from mechint._version import __version__
from mechint.cli import (
    check,
    compare,
    demo,
    integrals,
    model,
    run,
    section,
    stability,
    sweep,
)
from mechint.errors import InputError, StepFailure


class _Formatter(argparse.HelpFormatter):
    """Descriptions and epilogs keep their line breaks, each line filled to the width; an
    example command (a line starting with ``mechint``) is wrapped with `` \\``
    continuations, so that it can be pasted into a shell as it is printed."""

    def _fill_text(self, text, width, indent):
        out = []
        for line in text.splitlines():
            body = line.strip()
            command = body.startswith("mechint ")
            lead = indent + " " * (len(line) - len(line.lstrip()))
            wrapped = textwrap.wrap(body, max(width - len(lead) - 2, 20), break_on_hyphens=False,
                                    break_long_words=False) or [""]  # fmt: skip
            if command:
                out.append(" \\\n".join(lead + ("" if i == 0 else "    ") + part
                                         for i, part in enumerate(wrapped)))  # fmt: skip
            else:
                out.extend(lead + part for part in wrapped)
        return "\n".join(out)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2; examples printed
    one per line (``_Formatter``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):  # pyright: ignore[reportIncompatibleMethodOverride]
        """Every option in both spellings (``--rotation-invariant`` for
        ``--rotation_invariant`` and back); an unknown option is an error naming the
        nearest known ones ("did you mean")."""
        known = self._option_string_actions
        spelled = []
        for arg in list(sys.argv[1:] if args is None else args):
            name, eq, value = arg.partition("=")
            if arg.startswith("--") and arg != "--" and name not in known:
                for other in (name[:2] + name[2:].replace("-", "_"),
                              name[:2] + name[2:].replace("_", "-")):  # fmt: skip
                    if other in known:
                        arg = other + eq + value
                        break
            spelled.append(arg)
        if self._subparsers is None:  # a command's own parser: its options are all known
            for arg in spelled:  # (before argparse's checks: a typo is the first error)
                if arg == "--":  # the rest are values
                    break
                name = arg.partition("=")[0]
                prefix = self.allow_abbrev and any(o.startswith(name) for o in known)
                if name.startswith("--") and name not in known and not prefix:
                    near = difflib.get_close_matches(name, list(known), n=3, cutoff=0.75)
                    hint = f"; did you mean {' or '.join(near)}?" if near else ""
                    self.error(f"unrecognized option {name}{hint}")
        return super().parse_known_args(spelled, namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mechint",
        description="Mechanical integrators: structure-preserving maps for rigid bodies.",
    )
    parser.add_argument("--version", action="version", version=f"mechint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run.add_parser(sub)
    check.add_parser(sub)
    compare.add_parser(sub)
    sweep.add_parser(sub)
    integrals.add_parser(sub)
    section.add_parser(sub)
    stability.add_parser(sub)
    demo.add_parser(sub)
    return parser


def negative_values(argv: list[str]) -> list[str]:
    """``--x0 -0.45,0,0.89`` as ``--x0=-0.45,0,0.89``: argparse takes a value that starts
    with '-' for an option unless it is one plain number (no option of ours starts with
    '-' and a digit)."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and re.match(r"-\.?\d", arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    # NumPy's floating-point warnings (an overflow in an invariant of a huge state) would
    # add lines to a one-line report; the report says what failed, and where
    np.seterr(all="ignore")
    argv = negative_values(sys.argv[1:] if argv is None else list(argv))
    command = next((a for a in argv if not a.startswith("-")), "")
    # a warning (a system's numbers that are a special case, a package's entry point
    # left out) is one line too
    shown, warnings.formatwarning = warnings.formatwarning, _note(command)
    try:
        # the classes of installed packages and those the options reference
        # (package.module:Class) are registered while the command runs: their options
        # are the parser's
        with plugins.referenced(argv):
            _command(argv)
    except InputError as exc:  # a reference that is not a class of ours
        print(f"mechint {command}: error: {_oneline(exc, 1000)}", file=sys.stderr)
        sys.exit(2)
    finally:
        warnings.formatwarning = shown
    return 0  # not reached: the command exits with its code


def _command(argv: list[str]) -> None:
    """Parse ``argv`` and run its command; exits with the command's code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.formatwarning = _note(args.command)
    try:
        _backend()
        code = args.handler(args)
    except InputError as exc:  # one line, whatever a crafted file's text holds
        exc = model.as_option(args, exc)  # a parameter of the library named as its option
        print(f"mechint {args.command}: error: {_oneline(exc, 1000)}", file=sys.stderr)
        code = 2
    except StepFailure as exc:
        print(f"mechint {args.command}: run stopped: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        print(f"mechint {args.command}: interrupted", file=sys.stderr)
        code = 130
    except OSError as exc:  # a disk that fills, a folder that becomes unwritable
        print(f"mechint {args.command}: error: {_oneline(exc)}", file=sys.stderr)
        code = 1
    except Exception as exc:  # a bug: one line for the user, the traceback on request
        if os.environ.get("MECHINT_DEBUG"):
            raise
        print(f"mechint {args.command}: internal error: {type(exc).__name__}: "
              f"{_oneline(exc)} (please report it; MECHINT_DEBUG=1 shows the traceback)",
              file=sys.stderr)  # fmt: skip
        code = 1
    sys.exit(code)


def _note(command: str):
    """``warnings.formatwarning`` for the command: one line, ``mechint <command>: note:``."""

    def line(message, *_args, **_kwargs) -> str:
        return f"mechint {command}: note: {_oneline(Exception(message), 1000)}\n"

    return line


def _backend() -> None:
    """JAX's platform starts (``JAX_PLATFORMS=cuda`` on a machine without a GPU fails
    inside JAX with a bare AssertionError or RuntimeError): else InputError naming it."""
    import jax

    try:
        jax.devices()
    except Exception as exc:  # JAX raises AssertionError or RuntimeError
        wanted = os.environ.get("JAX_PLATFORMS") or os.environ.get("JAX_PLATFORM_NAME") or ""
        why = f": {_oneline(exc)}" if str(exc).strip() else " (no such device here)"
        raise InputError("JAX_PLATFORMS", f"JAX cannot start the platform {wanted!r} on this "
                         f"machine: {type(exc).__name__}{why}", "unset it, or set "
                         "JAX_PLATFORMS=cpu") from None  # fmt: skip


def _oneline(exc: BaseException, most: int = 300) -> str:
    """The message on one line (newlines and runs of spaces as one space), cut at ``most``."""
    text = " ".join(str(exc).split())
    return text[:most] or type(exc).__name__
