"""Type checkers on templates: ``ptl-wsgi stubs`` and ``ptl-wsgi typecheck``.

``stubs`` writes a ``.pyi`` stub beside each ``.ptl`` file, so that mypy and
pyright resolve ``import pages`` from ``.py`` code to the template module and
check each call against the template's signature: an ``[html]`` template
returns :class:`~ptl_wsgi.html.htmltext`, a ``[plain]`` one ``str``.  Stubs,
not a mypy plugin: a stub is read by every checker (and editor), a plugin by
mypy alone.

``typecheck`` checks the code inside templates.  Each ``.ptl`` file is read
through the compiler's column-preserving Python view with one change: a
template gets its return annotation (`` -> "_ptl_htmltext"``, inserted after
the parameters; the import goes on a line added at the end), so calls
between templates are typed too.  The views go into a temporary copy of the
project's Python files, the checker runs there with the project's own
configuration, and every diagnostic is mapped back to its ``.ptl`` line and
column.  Dropped, because they are what PTL means: the missing return of a
template, a template's bare ``return``, and pyright's unused-expression
warning on output statements.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ptl_wsgi.compiler import compile_ptl, python_view

__all__ = [
    "CHECKERS",
    "CheckerNotFound",
    "Diagnostic",
    "stub_source",
    "typecheck",
    "write_stubs",
]

#: The checkers ``typecheck`` can run, in the order it looks for them.
CHECKERS = ("mypy", "pyright")

_RETURN_TYPES = {"html": "_ptl_htmltext", "plain": "str"}
_IMPORT = "from ptl_wsgi.html import htmltext as _ptl_htmltext\n"
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})


class CheckerNotFound(RuntimeError):
    """The requested type checker (or any, when none was requested) is not installed."""


@dataclass(frozen=True)
class Diagnostic:
    """One finding of a checker, located in the ``.ptl`` file (1-based line and column)."""

    path: str
    line: int
    column: int
    severity: str
    message: str
    code: str

    def __str__(self) -> str:
        code = f"  [{self.code}]" if self.code else ""
        return f"{self.path}:{self.line}:{self.column}: {self.severity}: {self.message}{code}"


# -- stubs ------------------------------------------------------------------------


def stub_source(source: str | bytes, filename: str = "<ptl>") -> str:
    """The ``.pyi`` stub of the ``.ptl`` module *source*.

    Templates become functions returning ``htmltext`` (``[html]``) or ``str``
    (``[plain]``), their parameters (annotations and defaults as written, default
    values as ``...``) kept; other functions and classes keep their signatures;
    module and class variables become annotations (``Any`` where they have none);
    imports stay.  Raises SyntaxError (located in the file) for invalid PTL.
    """
    compile_ptl(source, filename)  # invalid PTL: the compiler's error
    view, templates = python_view(source, filename)
    tree = ast.parse(view, filename)
    body = _stub_body(tree.body, templates)
    header = [
        f"# Stub of {os.path.basename(filename)} for type checkers, by `ptl-wsgi stubs`."
        " Regenerate, do not edit.",
        "from typing import Any",
        "",
        _IMPORT.rstrip(),
        "",
    ]
    parts = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            parts.append("")  # a blank line before each definition, as formatters put it
        parts.append(ast.unparse(node))
    return "\n".join(header + parts) + "\n"


def _stub_body(
    statements: Iterable[ast.stmt], templates: dict[tuple[int, int], str], in_class: bool = False
) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in statements:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = templates.get((node.lineno, node.col_offset))
            out.append(_stub_function(node, kind, in_class))
        elif isinstance(node, ast.ClassDef):
            node.body = _stub_body(node.body, templates, True) or [ast.Expr(ast.Constant(...))]
            out.append(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            node.value = ast.Constant(...) if node.value is not None else None
            out.append(node)
        elif isinstance(node, ast.Assign):
            out.extend(_stub_assign(node))
        elif isinstance(node, ast.If):
            # if TYPE_CHECKING / version checks: both branches, as written.
            node.body = _stub_body(node.body, templates, in_class) or [ast.Pass()]
            node.orelse = _stub_body(node.orelse, templates, in_class)
            out.append(node)
        elif isinstance(node, ast.Try):
            out.extend(_stub_body(node.body, templates, in_class))  # the names meant to exist
    return out


def _stub_function(
    node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str | None, in_class: bool
) -> ast.FunctionDef | ast.AsyncFunctionDef:
    args = node.args
    if kind is not None:
        # A template's unannotated parameter is Any, said so: strict checkers refuse
        # untyped stubs.  (A method's self or cls is left to the checker.)
        decorators = node.decorator_list
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in decorators)
        params = [*args.posonlyargs, *args.args]
        if in_class and not static:
            params = params[1:]
        for arg in (*params, args.vararg, *args.kwonlyargs, args.kwarg):
            if arg is not None and arg.annotation is None:
                arg.annotation = ast.Name("Any", ast.Load())
    args.defaults = [ast.Constant(...) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(...) for d in args.kw_defaults]
    if kind is not None:
        node.returns = ast.Name(_RETURN_TYPES[kind], ast.Load())
    node.body = [ast.Expr(ast.Constant(...))]
    return node


def _stub_assign(node: ast.Assign) -> list[ast.stmt]:
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        name = node.targets[0].id
        if name == "__all__":
            return [node]
        if isinstance(node.value, ast.Constant) and node.value.value is not None:
            annotation = type(node.value.value).__name__
        else:
            annotation = "Any"
        return [
            ast.AnnAssign(
                ast.Name(name, ast.Store()), ast.Name(annotation, ast.Load()), None, simple=1
            )
        ]
    return []


def write_stubs(paths: Iterable[str], check: bool = False) -> list[str]:
    """Write ``X.pyi`` beside each ``X.ptl`` in *paths*; return the stubs that changed.

    With *check*, write nothing: return the stubs that are missing or out of date.
    """
    changed = []
    for path in paths:
        with open(path, "rb") as f:
            text = stub_source(f.read(), path)
        target = os.path.splitext(path)[0] + ".pyi"
        try:
            with open(target, encoding="utf-8") as f:
                current: str | None = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            changed.append(target)
            if not check:
                with open(target, "w", encoding="utf-8") as f:
                    f.write(text)
    return changed


# -- typecheck --------------------------------------------------------------------


@dataclass
class _View:
    """One ``.ptl`` file as the checker reads it, and how to map its positions back."""

    path: str  # the .ptl file as the user named it
    lines: list[str]  # the original lines (for columns)
    inserted: dict[int, tuple[int, int]] = field(default_factory=dict)  # line -> (col, length)
    headers: set[int] = field(default_factory=set)  # template def lines
    bare_returns: set[tuple[int, int]] = field(default_factory=set)  # (line, char col)
    outputs: set[tuple[int, int]] = field(default_factory=set)  # (line, char col)
    last_line: int = 0  # lines after this one were added


def _view(path: str, source: bytes) -> tuple[str, _View]:
    """The checker's text for the .ptl *source* and its position map."""
    compile_ptl(source, path)  # invalid PTL: the compiler's error, not the checker's
    text, templates = python_view(source, path)
    lines = text.splitlines(keepends=True)
    info = _View(path, list(lines), last_line=len(lines))
    tree = ast.parse(text, path)
    for node, kind in _templates(tree, templates):
        info.headers.add(node.lineno)
        for child in _own_nodes(node):
            if isinstance(child, ast.Return) and child.value is None:
                info.bare_returns.add((child.lineno, _chars(lines, child)))
            elif isinstance(child, ast.Expr):
                info.outputs.add((child.lineno, _chars(lines, child)))
                info.outputs.add((child.value.lineno, _chars(lines, child.value)))
        if node.returns is not None:
            info.headers.add(node.returns.lineno)  # where a checker says it returns nothing
            continue
        line, col = _after_parameters(lines, node)
        annotation = f' -> "{_RETURN_TYPES[kind]}"'
        text_line = lines[line - 1]
        lines[line - 1] = text_line[:col] + annotation + text_line[col:]
        info.inserted[line] = (col, len(annotation))
        info.headers.add(line)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.append(_IMPORT)
    return "".join(lines), info


def _chars(lines: list[str], node: ast.expr | ast.stmt) -> int:
    """*node*'s column in characters (the AST's are UTF-8 bytes)."""
    line = lines[node.lineno - 1].encode("utf-8")
    return len(line[: node.col_offset].decode("utf-8", "replace"))


def _templates(
    tree: ast.Module, templates: dict[tuple[int, int], str]
) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = templates.get((node.lineno, node.col_offset))
            if kind is not None:
                yield node, kind


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of *function*'s body, not those of nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _after_parameters(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> Pos:
    """(line, character column) just after the ``)`` that closes *node*'s parameters."""
    start = node.lineno
    rest = iter(lines[start - 1 :])
    depth = 0
    seen_name = False
    for tok in tokenize.generate_tokens(lambda: next(rest, "")):
        if not seen_name:
            seen_name = tok.type == tokenize.NAME and tok.string == node.name
            continue
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
            if depth == 0:
                return tok.end[0] + start - 1, tok.end[1]
    raise ValueError(f"no parameter list for {node.name!r} at line {start}")


Pos = tuple[int, int]


def _checker_command(name: str | None) -> tuple[str, list[str]]:
    """(name, command) of the checker to run: *name*, or the first of CHECKERS installed."""
    for candidate in (name,) if name else CHECKERS:
        if importlib.util.find_spec(candidate) is not None:
            return candidate, [sys.executable, "-m", candidate]
        program = shutil.which(candidate)
        if program is not None:
            return candidate, [program]
    wanted = name or " or ".join(CHECKERS)
    raise CheckerNotFound(
        f"{wanted} is not installed; install it with: pip install {name or 'mypy'}"
    )


def _project_files(root: str) -> Iterator[str]:
    """The Python and PTL files under *root* (relative paths), as a checker would see them."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and d not in _SKIPPED_DIRS and not d.startswith("venv")
        )
        for name in sorted(files):
            if name.endswith((".py", ".pyi", ".ptl")) or name == "py.typed":
                yield os.path.relpath(os.path.join(directory, name), root)


def typecheck(
    paths: Sequence[str], checker: str | None = None, root: str = "."
) -> list[Diagnostic]:
    """The checker's findings in the ``.ptl`` files *paths*, in their own positions.

    *root* is the project: its Python files are what the templates import, its
    configuration (``pyproject.toml``, ``mypy.ini``, ``pyrightconfig.json``) is the
    checker's.  Raises SyntaxError (located in the file) for invalid PTL, OSError
    for an unreadable file, CheckerNotFound without the checker.
    """
    name, command = _checker_command(checker)
    root = os.path.abspath(root)
    wanted = {os.path.abspath(p) for p in paths}
    views: dict[str, _View] = {}
    with tempfile.TemporaryDirectory(prefix="ptl-typecheck-") as mirror:
        project = list(_project_files(root))
        template_views: list[str] = []
        ptl = {os.path.splitext(r)[0] for r in project if r.endswith(".ptl")}
        for relative in project:
            source_path = os.path.join(root, relative)
            base, suffix = os.path.splitext(relative)
            if suffix == ".pyi" and base in ptl:
                continue  # a template's stub (ptl-wsgi stubs): its view stands in for it
            if suffix == ".ptl":
                target = os.path.join(mirror, base + ".py")
                template_views.append(target)
                with open(source_path, "rb") as f:
                    source = f.read()
                if source_path in wanted:
                    text, views[target] = _view(_display(source_path), source)
                else:
                    try:
                        text = _view(source_path, source)[0]
                    except SyntaxError:
                        continue  # not checked here; importing it is an error
            else:
                target = os.path.join(mirror, relative)
                with open(source_path, "rb") as f:
                    text = f.read().decode("utf-8", "surrogateescape")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        missing = wanted - {os.path.join(root, r) for r in project}
        for path in sorted(missing):
            # A file outside the project: checked alone.
            with open(path, "rb") as f:
                text, info = _view(_display(path), f.read())
            target = os.path.join(mirror, "_outside", os.path.basename(path)[:-4] + ".py")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
            views[target] = info
        if not views:
            return []
        # A template directory is one package to the loader (its files import each other
        # relatively): to the checker too.  Each package tree is checked on its own, as two
        # template directories may both have a "layout" module.
        for directory in {os.path.dirname(p) for p in template_views}:
            init = os.path.join(directory, "__init__.py")
            if directory != mirror and not os.path.exists(init):
                with open(init, "w", encoding="utf-8"):
                    pass
        groups: dict[str, list[str]] = {}
        for target in sorted(views):
            groups.setdefault(_package_root(os.path.dirname(target), mirror), []).append(target)
        found = []
        for targets in groups.values():
            if name == "mypy":
                found += _run_mypy(command, targets, mirror, root)
            else:
                found += _run_pyright(command, targets, root)
        return sorted(
            (d for d in (_map(views, *item) for item in found) if d is not None),
            key=lambda d: (d.path, d.line, d.column),
        )


def _package_root(directory: str, mirror: str) -> str:
    """The outermost package directory containing *directory* (itself if not a package)."""
    while directory != mirror:
        parent = os.path.dirname(directory)
        if parent == directory or not os.path.exists(os.path.join(parent, "__init__.py")):
            break
        directory = parent
    return directory


def _display(path: str) -> str:
    """*path* as the user would name it: relative to the working directory when inside it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


_Found = tuple[str, int, int, str, str, str, str]  # file, line, col, severity, message, code, kind


def _run_mypy(command: list[str], targets: list[str], mirror: str, root: str) -> list[_Found]:
    result = subprocess.run(
        [
            *command,
            "--output=json",
            "--no-error-summary",
            f"--cache-dir={os.path.join(mirror, '.mypy_cache')}",
            *targets,
        ],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(f"mypy failed: {result.stderr or result.stdout}")
    found = []
    for line in result.stdout.splitlines():
        if not line.startswith("{"):
            continue
        item = json.loads(line)
        file = os.path.join(root, item["file"]) if not os.path.isabs(item["file"]) else item["file"]
        found.append(
            (
                os.path.realpath(file),
                item["line"],
                item["column"],
                item["severity"],
                item["message"],
                item.get("code") or "",
                "mypy",
            )
        )
    return found


def _run_pyright(command: list[str], targets: list[str], root: str) -> list[_Found]:
    result = subprocess.run(
        # This Python's environment: where ptl_wsgi (and the project's packages) are.
        [*command, "--outputjson", "--pythonpath", sys.executable, *targets],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    try:
        report = json.loads(result.stdout)
    except ValueError:
        raise RuntimeError(f"pyright failed: {result.stderr or result.stdout}") from None
    found = []
    for item in report.get("generalDiagnostics", []):
        start = item["range"]["start"]
        found.append(
            (
                os.path.realpath(item["file"]),
                start["line"] + 1,
                start["character"],
                item["severity"],
                item["message"].split("\n")[0],
                item.get("rule", ""),
                "pyright",
            )
        )
    return found


def _map(
    views: dict[str, _View],
    file: str,
    line: int,
    column: int,
    severity: str,
    message: str,
    code: str,
    kind: str,
) -> Diagnostic | None:
    """The diagnostic in the .ptl file, or None if it is not the author's concern."""
    info = next((v for target, v in views.items() if os.path.realpath(target) == file), None)
    if info is None or line > info.last_line or severity == "information":
        return None  # another file, the added import, or a reveal_type-style note
    text = info.lines[line - 1] if line <= len(info.lines) else ""
    inserted = info.inserted.get(line)
    if kind == "mypy":
        # mypy counts a non-ASCII character's extra UTF-8 bytes off its column.
        view_text = text if inserted is None else _with_insert(text, inserted)
        column = _from_mypy_column(view_text, column)
    else:
        view_text = text if inserted is None else _with_insert(text, inserted)
        column = len(view_text.encode("utf-16-le")[: 2 * column].decode("utf-16-le", "replace"))
    if inserted is not None:
        col, length = inserted
        if col <= column < col + length:
            return None  # the inserted annotation: the template "returns nothing"
        if column >= col + length:
            column -= length
    if line in info.headers and (
        code in ("return", "empty-body")
        or (code == "reportReturnType" and "must return value" in message)
    ):
        return None  # "Missing return statement" for the template itself
    if (line, column) in info.bare_returns and code in ("return-value", "reportReturnType"):
        return None  # a template's bare return: it returns its output
    if code == "reportUnusedExpression" and (line, column) in info.outputs:
        return None  # an output statement
    return Diagnostic(info.path, line, column + 1, severity, message, code)


def _with_insert(text: str, inserted: tuple[int, int]) -> str:
    col, length = inserted
    return text[:col] + "x" * length + text[col:]


def _from_mypy_column(text: str, column: int) -> int:
    extra = 0
    for index, char in enumerate(text):
        if index - extra >= column:
            return index
        extra += len(char.encode("utf-8")) - 1
    return max(column, 0)
