"""The ``ptl-wsgi`` command line (also ``python -m ptl_wsgi``)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Iterator, Sequence


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
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    compile_cmd = commands.add_parser(
        "compile",
        help="compile .ptl files into their __pycache__ (for read-only deployments)",
        description="Compile every .ptl file under each PATH into its bytecode cache.",
    )
    compile_cmd.add_argument("paths", nargs="+", metavar="PATH", help=".ptl file or directory")
    compile_cmd.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    compile_cmd.set_defaults(handler=_compile)
    check = commands.add_parser(
        "check",
        help="report syntax errors in .ptl files as file:line:col: message",
        description="Compile every .ptl file under each PATH in memory; exit 1 on any error.",
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help=".ptl file or directory")
    check.set_defaults(handler=_check)
    show = commands.add_parser(
        "show",
        help="print the Python a .ptl file compiles to",
        description="Print the Python source the PTL compiler produces for FILE.",
    )
    show.add_argument("file", metavar="FILE", help="a .ptl file")
    show.set_defaults(handler=_show)
    return parser


def _ptl_files(paths: Sequence[str]) -> Iterator[str]:
    """Each PATH that is a file, and every .ptl file below each directory, sorted."""
    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            yield from (os.path.join(root, f) for f in sorted(files) if f.endswith(".ptl"))


def _location(exc: SyntaxError, path: str) -> str:
    return f"{path}:{exc.lineno or 1}:{exc.offset or 1}: {exc.msg}"


def _compile(args: argparse.Namespace) -> int:
    from ptl_wsgi.importer import precompile

    failed = 0
    for path in _ptl_files(args.paths):
        try:
            cache = precompile(path)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
        except OSError as exc:
            print(f"{path}: cannot compile: {exc}", file=sys.stderr)
        else:
            if not args.quiet:
                print(f"{path} -> {cache}")
            continue
        failed += 1
    return 1 if failed else 0


def _check(args: argparse.Namespace) -> int:
    from ptl_wsgi.compiler import compile_ptl

    failed = 0
    for path in _ptl_files(args.paths):
        try:
            with open(path, "rb") as f:
                compile_ptl(f.read(), path)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
        except OSError as exc:
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
        else:
            continue
        failed += 1
    return 1 if failed else 0


def _show(args: argparse.Namespace) -> int:
    import ast

    from ptl_wsgi.compiler import parse_ptl

    try:
        with open(args.file, "rb") as f:
            tree = parse_ptl(f.read(), args.file)
    except SyntaxError as exc:
        print(_location(exc, args.file), file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{args.file}: cannot read: {exc}", file=sys.stderr)
        return 1
    print(ast.unparse(tree))
    return 0


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
