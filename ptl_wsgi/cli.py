"""The ``ptl-wsgi`` command line (also ``python -m ptl_wsgi``)."""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence


def version_text() -> str:
    """One line: package version, Python version, and the accelerator's state."""
    from ptl_wsgi import __version__
    from ptl_wsgi.html import ACCELERATOR_STATUS, IMPLEMENTATION

    if IMPLEMENTATION == "c":
        accel = "C accelerator active"
    else:
        accel = f"C accelerator inactive: {ACCELERATOR_STATUS}; using pure Python"
    return (
        f"ptl-wsgi {__version__} "
        f"(Python {platform.python_version()}, {platform.python_implementation()}; {accel})"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptl-wsgi",
        description="Tools for PTL templates: compile, check and inspect .ptl files.",
    )
    parser.add_argument(
        "--version", action="store_true", help="print versions and whether the C accelerator is on"
    )
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print(version_text())
        return 0
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    return int(handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
