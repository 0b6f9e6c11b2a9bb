"""Ruff on ``.ptl`` files: ``ptl-wsgi lint [PATHS]``.

Ruff reads the compiler's column-preserving Python view of each file (the
template annotations blanked, nothing else changed), so every diagnostic's
line and column are the ``.ptl`` file's own.  The file is passed under its
real name, so the project's ruff configuration (``pyproject.toml``,
``ruff.toml``, per-file ignores) applies as it does to ``.py`` files.

Rules that flag what PTL means are dropped on output statements only (an
expression statement in a template body): ``B018`` (useless expression),
``B015`` (useless comparison) and ``PLW0133`` (exception built and not
raised) would fire on every line of output.  In ``[html]`` templates
``UP031`` (printf-style formatting) is dropped on ``"literal" % values``:
that is how PTL fills trusted markup with escaped values.  The same statements in ordinary
code are still reported.  There is no ``--fix``: a fix computed on the view is
not always a fix of the template (it can move or rewrite output), so fixes are
left to the author.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass

from ptl_wsgi.compiler import compile_ptl, python_view

__all__ = [
    "HTML_FORMAT_RULES",
    "OUTPUT_RULES",
    "Diagnostic",
    "RuffNotFound",
    "lint_file",
    "ruff_command",
]

#: Rules dropped on a template's output statements: there the "useless" expression is output.
OUTPUT_RULES = frozenset({"B018", "B015", "PLW0133"})
#: Rules dropped on ``literal % values`` in ``[html]`` templates: PTL's way to fill markup.
HTML_FORMAT_RULES = frozenset({"UP031"})


class RuffNotFound(RuntimeError):
    """Neither the ``ruff`` package nor a ``ruff`` program is installed."""


@dataclass(frozen=True)
class Diagnostic:
    """One finding, located in the ``.ptl`` file (1-based line and column)."""

    path: str
    line: int
    column: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.code} {self.message}"


def ruff_command() -> list[str]:
    """How to run ruff: the ``ruff`` package of this Python, else ``ruff`` on PATH."""
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    program = shutil.which("ruff")
    if program is None:
        raise RuffNotFound("ruff is not installed; install it with: pip install ruff")
    return [program]


def _ptl_positions(
    view: str, templates: dict[tuple[int, int], str]
) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """(line, UTF-8 column) of each output statement (an expression statement whose
    innermost enclosing function is a template; a nested def or lambda is not one),
    and of each ``"literal" % values`` in an ``[html]`` template."""
    outputs: set[tuple[int, int]] = set()
    formats: set[tuple[int, int]] = set()

    def visit(node: ast.AST, kind: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = templates.get((child.lineno, child.col_offset))
            elif isinstance(child, (ast.Lambda, ast.ClassDef)):
                inner = None
            elif isinstance(child, ast.Expr) and kind is not None:
                # Ruff may point at the statement or (parenthesized) at its value.
                outputs.add((child.lineno, child.col_offset))
                outputs.add((child.value.lineno, child.value.col_offset))
            elif (
                kind == "html"
                and isinstance(child, ast.BinOp)
                and isinstance(child.op, ast.Mod)
                and isinstance(child.left, ast.Constant)
                and isinstance(child.left.value, str)
            ):
                formats.add((child.lineno, child.col_offset))
            visit(child, inner)

    visit(ast.parse(view), None)
    return outputs, formats


def lint_file(path: str, command: list[str] | None = None) -> list[Diagnostic]:
    """Ruff's findings on the ``.ptl`` file at *path*, in the file's own positions.

    Raises SyntaxError (located in the file) for invalid PTL, OSError if it cannot
    be read, RuffNotFound without ruff.
    """
    with open(path, "rb") as f:
        source = f.read()
    compile_ptl(source, path)  # invalid PTL: the compiler's error, not ruff's
    view, templates = python_view(source, path)
    result = subprocess.run(
        [
            *(command or ruff_command()),
            "check",
            "--output-format=json",
            "--no-fix",
            "--extension=ptl:python",
            f"--stdin-filename={path}",
            "-",
        ],
        input=view.encode("utf-8"),
        capture_output=True,
        check=False,
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed on {path}: {result.stderr.decode(errors='replace')}")
    outputs, formats = _ptl_positions(view, templates)
    lines = view.splitlines()
    found = []
    for item in json.loads(result.stdout or b"[]"):
        row, column = item["location"]["row"], item["location"]["column"]
        code = item.get("code") or "E999"
        if code in OUTPUT_RULES and _at(outputs, lines, row, column):
            continue
        if code in HTML_FORMAT_RULES and _at(formats, lines, row, column):
            continue
        found.append(Diagnostic(path, row, column, code, item["message"]))
    return found


def _at(outputs: set[tuple[int, int]], lines: list[str], row: int, column: int) -> bool:
    # Ruff's columns count characters; the AST's count UTF-8 bytes.
    text = lines[row - 1] if 0 < row <= len(lines) else ""
    return (row, len(text[: column - 1].encode("utf-8"))) in outputs
