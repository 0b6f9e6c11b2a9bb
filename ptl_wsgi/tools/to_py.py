"""Convert a ``.ptl`` module to a plain Python module whose templates give the same output.

Each template becomes an ordinary function marked ``@template("html")`` (or
``"plain"``, from :mod:`ptl_wsgi.py_templates`) that collects its output in an
explicit list and returns it joined by the function the compiler uses
(``html_join``, ``plain_join``).  In ``[html]`` scope, where the compiler
makes every string literal trusted markup, a plain literal becomes
``htmltext("...")`` and an f-string (or t-string) becomes
``html_fstring(t"...")``: literal parts trusted, each value escaped after its
conversion and format spec, a list or tuple in a field one value as in the
f-string (``htmlformat`` would join its items).  A t-string in a ``[plain]`` template becomes
the f-string it means there.  Which scope a literal, a statement or a
``return`` is in is the compiler's own answer
(:func:`ptl_wsgi.compiler.template_scopes`), so the converted module means
what the compiled one does.

The source is edited in place by position, so comments, blank lines and
layout stay; the module gains the imports it needs (after its docstring and
``__future__`` imports), one decorator line and two lines per template.
Names the module already uses are never shadowed: helpers are imported
under another name (``ptl_htmltext``) and the output list is called ``out``
unless the template uses that name.

The result needs Python 3.14 when it has t-strings; the conversion itself
needs 3.12+ (it reads f-strings token by token).
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass, field

from ptl_wsgi.compiler import compile_ptl, python_view, template_scopes
from ptl_wsgi.compiler.names import _opts_out
from ptl_wsgi.compiler.source import char_col, split_lines
from ptl_wsgi.tools.from_quixote import Problem

__all__ = ["PyConversion", "to_python"]

Pos = tuple[int, int]  # (line, character column)

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)
_JOIN = {"html": "html_join", "plain": "plain_join"}
_HTML_HELPERS = ("html_fstring", "html_join", "plain_join", "htmltext", "format_mod_html")
_QUIXOTE = frozenset({"ptl_html", "ptl_plain"})
_START_TOKENS = frozenset(
    t
    for t in (getattr(tokenize, "FSTRING_START", None), getattr(tokenize, "TSTRING_START", None))
    if t is not None
)
_END_TOKENS = frozenset(
    t
    for t in (getattr(tokenize, "FSTRING_END", None), getattr(tokenize, "TSTRING_END", None))
    if t is not None
)
# A \N{...} escape in a non-raw literal: its braces are not replacement fields.
_NAMED_ESCAPE = re.compile(r"\\(?:N\{[^}]*\}|.)", re.S)


@dataclass
class PyConversion:
    """The plain Python module, and what could not be converted (empty when all was).

    Each problem has a line, a column (from 1) and a message; the command line
    prints each as ``file:line:col: error: ...`` and writes nothing.  The one
    known: a Quixote 3 ``@ptl_html`` template, which ``ptl-wsgi convert``
    turns into this package's syntax first.
    """

    source: str
    problems: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class _String:
    """One string token: a plain literal, or an f-string or t-string with all its parts."""

    start: Pos
    end: Pos
    prefix: str  # letters before the opening quote, as written
    text: str  # the whole token


class _Edits:
    """Insertions and deletions by position, applied all at once.

    Insertions at one place come out in order of their key: a wrap that
    encloses another opens before it and closes after it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0]
        for line in _lines(text):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.inserts: list[tuple[int, tuple[int, int], str]] = []
        self.deletes: list[tuple[int, int]] = []

    def offset(self, pos: Pos) -> int:
        return self.line_starts[pos[0] - 1] + pos[1]

    def insert(self, pos: Pos, text: str, key: tuple[int, int] = (1, 0)) -> None:
        self.inserts.append((self.offset(pos), key, text))

    def wrap(self, start: Pos, end: Pos, before: str, after: str) -> None:
        span = self.offset(end) - self.offset(start)
        self.insert(start, before, (2, -span))  # wider wraps open first
        self.insert(end, after, (0, span))  # and close last

    def delete(self, start: Pos, end: Pos) -> None:
        self.deletes.append((self.offset(start), self.offset(end)))

    def replace(self, start: Pos, end: Pos, text: str) -> None:
        self.delete(start, end)
        self.insert(start, text, (3, 0))  # after any wrap that opens here

    def result(self) -> str:
        out: list[str] = []
        index = 0
        deletes = dict(self.deletes)
        places = sorted({o for o, _, _ in self.inserts} | set(deletes))
        by_place: dict[int, list[tuple[tuple[int, int], str]]] = {}
        for offset, key, text in self.inserts:
            by_place.setdefault(offset, []).append((key, text))
        for place in places:
            if place < index:
                continue  # inside a deleted span: nothing to keep there
            out.append(self.text[index:place])
            index = place
            out.extend(text for _, text in sorted(by_place.get(place, []), key=lambda kt: kt[0]))
            if place in deletes:
                index = max(index, deletes[place])
        out.append(self.text[index:])
        return "".join(out)


def _strings(text: str) -> list[_String]:
    """Every string token of *text*, nested ones (in f-string fields) included."""
    lines = _lines(text)
    found: list[_String] = []
    opened: list[tokenize.TokenInfo] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING:
            found.append(_String(tok.start, tok.end, _prefix(tok.string), tok.string))
        elif tok.type in _START_TOKENS:
            opened.append(tok)
        elif tok.type in _END_TOKENS:
            start = opened.pop()
            whole = _span(lines, start.start, tok.end)
            found.append(_String(start.start, tok.end, _prefix(start.string), whole))
    found.sort(key=lambda s: s.start)
    return found


def _lines(text: str) -> list[str]:
    # Lines as Python counts them: at "\n" only (str.splitlines also splits at a form
    # feed or "\u2028", which may stand in a line or a string literal).
    return io.StringIO(text, newline="\n").readlines()


def _prefix(token: str) -> str:
    return token[: len(token) - len(token.lstrip("rRbBuUfFtT"))]


def _span(lines: list[str], start: Pos, end: Pos) -> str:
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]]
    middle = lines[start[0] : end[0] - 1]
    return "".join([lines[start[0] - 1][start[1] :], *middle, lines[end[0] - 1][: end[1]]])


def _bound_and_read(tree: ast.AST) -> set[str]:
    """Every identifier *tree* names: read, bound, defined, imported, declared."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).partition(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):
            names.add(node.name)  # type: ignore[attr-defined]
    return names


def _free_name(wanted: str, taken: set[str], fallback: str) -> str:
    if wanted not in taken:
        return wanted
    candidate, number = fallback, 2
    while candidate in taken:
        candidate, number = f"{fallback}_{number}", number + 1
    return candidate


class _Converter:
    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.lines = _lines(text)
        self.view, self.kinds = python_view(text, filename)
        self.tree = ast.parse(self.view, filename)
        self.scopes = template_scopes(self.tree, self.kinds)
        self.edits = _Edits(text)
        self.problems: list[Problem] = []
        self.module_names = _bound_and_read(self.tree)
        self.helpers: dict[str, str] = {}  # helper -> the name it is imported as
        self.strings = _strings(self.view)
        self.owners: dict[int, ast.AST] = {}

    # -- positions ---------------------------------------------------------------

    def pos(self, lineno: int, byte_col: int) -> Pos:
        return lineno, char_col(self.lines[lineno - 1], byte_col)

    def start(self, node: ast.AST) -> Pos:
        return self.pos(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> Pos:
        return self.pos(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def helper(self, name: str) -> str:
        """The name under which *name* is imported into the converted module."""
        if name not in self.helpers:
            self.helpers[name] = _free_name(name, self.module_names, f"ptl_{name}")
        return self.helpers[name]

    # -- the conversion ----------------------------------------------------------

    def run(self) -> str:
        self.quixote_templates()
        for node, kind in self.scopes.templates:
            self.template(node, kind)
        for literal, literal_kind in self.scopes.literals:
            self.literal(literal, literal_kind)
        self.html_only_formats()
        self.imports()
        return self.edits.result()

    def quixote_templates(self) -> None:
        """Report Quixote 3's ``@ptl_html`` templates: plain Python here, they need converting."""
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Name) and decorator.id in _QUIXOTE:
                        line, col = self.start(decorator)
                        message = (
                            f"cannot convert: @{decorator.id} is a Quixote 3 template; "
                            "run 'ptl-wsgi convert --write' on the file first"
                        )
                        self.problems.append(Problem(line, col, message))

    def template(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> None:
        # A def always starts its line (after decorators, which have lines of their own).
        indent = self.lines[node.lineno - 1][: self.start(node)[1]]
        self.header(node)
        self.edits.insert((node.lineno, 0), f'{indent}@{self.helper("template")}("{kind}")\n')
        out = _free_name("out", _bound_and_read(node), "_out")
        join = f"{self.helper(_JOIN[kind])}({out})"
        first, last = node.body[0], node.body[-1]
        first_start = self.start(first)
        first_line = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", ()))])
        # Where output statements of several templates meet, the innermost's come first.
        depth = -len(indent)
        if first.lineno == node.lineno or self.lines[first.lineno - 1][: first_start[1]].strip():
            # The body is on the header's line: so is everything added to it.
            self.edits.insert(first_start, f"{out} = []; ", (-3, 0))
            if not isinstance(last, ast.Return):
                self.edits.insert(self.end(last), f"; return {join}", (9, 0))
        else:
            body_indent = self.lines[first.lineno - 1][: first_start[1]]
            self.edits.insert((first_line, 0), f"{body_indent}{out} = []\n", (-3, 0))
            if not isinstance(last, ast.Return):
                end_line = last.end_lineno or last.lineno
                ending = f"{body_indent}return {join}\n"
                if end_line < len(self.lines):
                    self.edits.insert((end_line + 1, 0), ending, (-5, depth))
                else:
                    tail = "" if self.lines[-1].endswith("\n") else "\n"
                    self.edits.insert((end_line, len(self.lines[-1])), tail + ending, (9, depth))
        for statement, _kind in self.scopes.outputs:
            if self.owner(statement) is node:
                method = "extend" if isinstance(statement.value, _COMPREHENSIONS) else "append"
                value = statement.value
                self.edits.wrap(self.start(value), self.end(value), f"{out}.{method}(", ")")
        for ret, _kind in self.scopes.returns:
            if self.owner(ret) is node:
                self.edits.insert(self.end(ret), f" {join}", (1, 0))

    def html_only_formats(self) -> None:
        """A literal ``%`` format of an ``[html]`` template that opts out of contextual
        escaping escapes its values as HTML (``format_mod_html``), as compiled: htmltext's
        own ``%`` would plan the format, and refuse one that is not balanced markup."""
        module_out = _opts_out(self.tree.body)
        for node, kind in self.scopes.templates:
            if kind != "html" or not (module_out or _opts_out(node.body)):
                continue
            for binop in ast.walk(node):
                if not (
                    isinstance(binop, ast.BinOp)
                    and isinstance(binop.op, ast.Mod)
                    and isinstance(binop.left, ast.Constant)
                    and isinstance(binop.left.value, str)
                ):
                    continue
                between = _span(self.lines, self.end(binop.left), self.start(binop.right))
                if between.strip() != "%":
                    continue  # (parentheses or a comment around the operator: left as it is)
                helper = self.helper("format_mod_html")
                self.edits.wrap(self.start(binop), self.end(binop), f"{helper}(", ")")
                self.edits.replace(self.end(binop.left), self.start(binop.right), ", ")

    def owner(self, node: ast.AST) -> ast.AST | None:
        """The innermost template around statement *node*."""
        if not self.owners:
            # Templates come in source order, outer first: a nested template claims
            # its own statements after the one around it.
            for template, _kind in self.scopes.templates:
                for child in ast.walk(template):
                    if isinstance(child, (ast.Expr, ast.Return)):
                        self.owners[id(child)] = template
        return self.owners.get(id(node))

    def header(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """``def f [html] (`` to ``def f(``; ``template f(`` to ``def f(``."""
        start = self.edits.offset(self.start(node))
        original = self.text[start:]
        if original.startswith("template"):
            self.edits.replace(self.start(node), (node.lineno, self.start(node)[1] + 8), "def")
            return
        view = self.view[start:]
        name = re.match(rf"(?:async\s+)?def\s+{re.escape(node.name)}", view)
        assert name is not None  # the compiler found this header
        after = name.end()
        blank = re.match(r"\s*", view[after:])
        assert blank is not None
        gap_end = start + after + blank.end()
        self.edits.deletes.append((start + after, gap_end))

    def literal(self, node: ast.expr, kind: str | None) -> None:
        if kind is None:
            return
        is_template = type(node).__name__ == "TemplateStr"
        if isinstance(node, ast.Constant):
            if kind == "html":
                opening = f"{self.helper('htmltext')}("
                self.edits.wrap(self.start(node), self.end(node), opening, ")")
            return
        pieces = self.pieces(node)
        if kind == "plain":
            if is_template:  # a t-string means the f-string there
                for piece in pieces:
                    self.set_prefix(piece, "f")
            return
        for piece in pieces:
            self.set_prefix(piece, "t")
        # html_fstring, not htmlformat: a list in a field is one value, as in the f-string.
        self.edits.wrap(self.start(node), self.end(node), f"{self.helper('html_fstring')}(", ")")

    def pieces(self, node: ast.expr) -> list[_String]:
        """The string tokens that make up literal *node* (not those nested in its fields)."""
        start, end = self.start(node), self.end(node)
        inside = [s for s in self.strings if start <= s.start and s.end <= end]
        top: list[_String] = []
        for piece in inside:
            if not top or piece.start >= top[-1].end:
                top.append(piece)
        return top

    def set_prefix(self, piece: _String, letter: str) -> None:
        """Make *piece* an f-string or t-string (``letter``), keeping its r."""
        old = piece.prefix
        raw = "".join(c for c in old if c in "rR")
        new = raw + (letter.upper() if any(c in "FT" for c in old) else letter)
        line, col = piece.start
        if any(c in "fFtT" for c in old):
            self.edits.replace(piece.start, (line, col + len(old)), new)
            return
        # A plain part joining an f-string: its braces must stay text.
        body = piece.text[len(old) :]
        body = body.replace("{", "{{").replace("}", "}}") if raw else _double_braces(body)
        self.edits.replace(piece.start, piece.end, new + body)

    def imports(self) -> None:
        if not self.helpers:
            return
        lines: list[str] = []
        if "template" in self.helpers:
            lines.append(_import_line("ptl_wsgi.py_templates", ["template"], self.helpers))
        html = [h for h in _HTML_HELPERS if h in self.helpers]
        if html:
            lines.append(_import_line("ptl_wsgi.html", sorted(html), self.helpers))
        body = self.tree.body
        index = 1 if body and ast.get_docstring(self.tree, clean=False) is not None else 0
        while (
            index < len(body)
            and isinstance(body[index], ast.ImportFrom)
            and body[index].module == "__future__"  # type: ignore[attr-defined]
        ):
            index += 1
        if index:
            at = (body[index - 1].end_lineno or 1) + 1
        else:
            at = 1
            # After a leading block of comments (shebang, coding cookie, licence).
            while at <= len(self.lines) and self.lines[at - 1].startswith("#"):
                at += 1
        text = "\n".join(lines) + "\n"
        if at > len(self.lines):
            tail = "" if not self.lines or self.lines[-1].endswith("\n") else "\n"
            end = (len(self.lines), len(self.lines[-1]) if self.lines else 0)
            self.edits.insert(end, tail + text)
        else:
            self.edits.insert((at, 0), text, (-9, 0))


def _import_line(module: str, names: list[str], aliases: dict[str, str]) -> str:
    parts = [n if aliases[n] == n else f"{n} as {aliases[n]}" for n in names]
    return f"from {module} import {', '.join(parts)}"


def _double_braces(body: str) -> str:
    """*body* (a non-raw literal's quoted text) with braces doubled outside ``\\N{...}``."""
    out: list[str] = []
    index = 0
    for escape in _NAMED_ESCAPE.finditer(body):
        out.append(body[index : escape.start()].replace("{", "{{").replace("}", "}}"))
        out.append(escape.group())
        index = escape.end()
    out.append(body[index:].replace("{", "{{").replace("}", "}}"))
    return "".join(out)


def to_python(source: str | bytes, filename: str = "<ptl>") -> PyConversion:
    """The plain Python module for PTL *source*; its templates output what the compiled ones do.

    Raises SyntaxError (located in the ``.ptl`` source) for invalid PTL and
    RuntimeError on Python before 3.12.  Parts that cannot be converted are
    listed in ``problems`` (and left as they are in ``source``).
    """
    if sys.version_info < (3, 12):
        raise RuntimeError("converting to Python needs Python 3.12 or later (to read f-strings)")
    # The compiler's own errors, located, for invalid PTL.  (ignore: mypy, as Python 3.10,
    # flags code after a version check's exit, mypy#10773; unused when it checks as 3.12+.)
    compile_ptl(source, filename)  # type: ignore[unreachable, unused-ignore]
    text = "".join(split_lines(source, filename))
    converter = _Converter(text, filename)
    converted = converter.run()
    return PyConversion(converted, sorted(set(converter.problems), key=lambda p: (p.line, p.col)))
