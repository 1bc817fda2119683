"""``mechint demo``: the free rigid body with Kahan, midpoint, RK4 and explicit Euler."""

from __future__ import annotations

import argparse
from pathlib import Path

from mechint import io
from mechint.demo import DEMO_FILES, run_demo
from mechint.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="write the demo figures and summary into a folder",
        description="Free rigid body: Kahan's map against implicit midpoint, RK4 and explicit "
        "Euler. Writes momentum_sphere.png, invariants.png and summary.txt.",
    )
    p.add_argument("--out", default="mechint-demo", help="folder to write (default mechint-demo)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a tenth of the steps, the same files (an install's smoke test)",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if not args.out.strip():
        raise InputError("--out", "is empty", "give a folder name, e.g. --out mechint-demo")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError("--out", f"{str(out)!r} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("--out", f"cannot create folder {str(out)!r}: {exc.strerror}") from None
    for name in DEMO_FILES:  # a FIFO or a link among them would block or stray
        io.check_writable(out / name, "--out", {Path(name).suffix: "demo"})
    result = run_demo(out, quick=args.quick)
    print(result["summary"], end="")
    print(f"wrote {out.resolve()}")
    return 0
