"""``mechint`` entry point: sub-commands, one-line errors, exit codes.

Exit codes: 0 success; 2 bad input (one line on stderr, before any work); 1 a run that
stopped at a failing step (what was computed is written, and the message says so).
"""

from __future__ import annotations

import argparse
import sys

from mechint._version import __version__
from mechint.cli import check, compare, demo, run, sweep
from mechint.errors import InputError, StepFailure


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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
    demo.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
    except InputError as exc:
        print(f"mechint {args.command}: error: {exc}", file=sys.stderr)
        code = 2
    except StepFailure as exc:
        print(f"mechint {args.command}: run stopped: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        print(f"mechint {args.command}: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)
