"""Convert Quixote 3.x decorator-style PTL to ptl_wsgi's ``def f [html] (...)`` syntax.

Quixote 3.x marks templates with ``@ptl_html`` / ``@ptl_plain`` and trusted
markup with ``F'...'`` h-strings; every other literal is a plain ``str``, which
an ``@ptl_html`` template *escapes*.  Here every literal in an ``[html]``
template is trusted.  The conversion therefore:

* turns ``@ptl_html def f(...)`` into ``def f [html] (...)`` (``[plain]`` alike);
* turns h-strings inside ``[html]`` templates into plain strings or f-strings;
* rewrites ``quixote.html`` imports of htmltext, htmlescape, TemplateIO and
  stringify to ``ptl_wsgi`` and drops the ``quixote.ptl`` decorator imports;
* warns about every plain literal in an ``@ptl_html`` template whose meaning
  changes (Quixote escaped it; here it becomes trusted markup), judging the
  characters it stands for (``'\\x3c'`` is a ``<``), not how it is spelled;
* warns about every bare ``return`` in a template (Quixote returns None, which
  no template here can; ptl_wsgi returns the output so far): reported, not
  rewritten;
* warns about what it cannot convert (h-strings outside ``[html]`` templates,
  ``return value`` in a template, other ``quixote.html`` names).

The source is edited token by token, so comments and layout stay as they are.
"""

from __future__ import annotations

import ast
import bisect
import io
import tokenize
from dataclasses import dataclass, field

from ptl_wsgi.compiler import compile_ptl, template_scopes

__all__ = ["Conversion", "Problem", "convert_source"]

_KINDS = {"ptl_html": "html", "ptl_plain": "plain"}
_HTML_NAMES = frozenset({"htmltext", "htmlescape", "TemplateIO", "stringify"})
_SPECIAL = frozenset("<>&\"'")
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)

Pos = tuple[int, int]  # (line, character column), as tokenize reports them


@dataclass(frozen=True)
class Problem:
    """Something the conversion changed in meaning or could not convert."""

    line: int
    col: int  # counted from 1
    message: str


@dataclass
class Conversion:
    """The converted source and what to tell the user about it."""

    source: str
    warnings: list[Problem] = field(default_factory=list)
    changed: bool = False


@dataclass(frozen=True)
class _Literal:
    """A string-literal expression (all its implicitly concatenated tokens)."""

    start: Pos
    end: Pos
    kind: str | None  # the template kind of its scope, as ptl_wsgi compiles it
    harmless_place: bool  # output as a statement, a subscript or a comparison operand


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


class _Scan:
    """Templates, literals and problems, scoped by the compiler's own rules.

    Quixote marks templates with decorators, so this finds them; which scope
    every literal and ``return`` is in is :func:`ptl_wsgi.compiler.template_scopes`'s
    answer, so that the converter judges a literal exactly as it will compile.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.literals: list[_Literal] = []
        self.templates: list[tuple[ast.FunctionDef, ast.Name, str]] = []
        self.warnings: list[Problem] = []
        self.kept_decorator = False  # a @ptl_html left in place needs its import

    def pos(self, lineno: int, byte_col: int) -> Pos:
        return lineno, _char_col(self.lines[lineno - 1], byte_col)

    def warn(self, node: ast.stmt | ast.expr, message: str) -> None:
        line, col = self.pos(node.lineno, node.col_offset)
        self.warnings.append(Problem(line, col + 1, message))

    def scan(self, tree: ast.Module) -> None:
        kinds: dict[tuple[int, int], str] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.find_template(node, kinds)
        scopes = template_scopes(tree, kinds)
        for ret, _kind in scopes.returns:
            self.warn(ret, _BARE_RETURN if ret.value is None else _RETURN_VALUE)
        harmless = _harmless_places(tree)
        in_fields: set[int] = set()
        for literal, _ in scopes.literals:
            if isinstance(literal, ast.JoinedStr):
                in_fields.update(_field_literals(literal))
        for node, kind in scopes.literals:
            if id(node) in in_fields:
                # Literals inside an f-string's fields are not tokens of their own (before
                # 3.12): judged here, by the characters of each constant in them.
                for inner in ast.walk(node) if kind == "html" else ():
                    if isinstance(inner, ast.Constant) and _SPECIAL & set(_text_of(inner)):
                        self.warn(inner, _TRUSTED)
                continue
            self.literals.append(
                _Literal(
                    self.pos(node.lineno, node.col_offset),
                    self.pos(node.end_lineno or node.lineno, node.end_col_offset or 0),
                    kind,
                    id(node) in harmless,
                )
            )

    def find_template(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, kinds: dict[tuple[int, int], str]
    ) -> None:
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Name) and decorator.id in _KINDS:
                if isinstance(node, ast.AsyncFunctionDef):
                    # Quixote ignores the decorator on an async def: not a template there.
                    self.warn(
                        decorator, "not converted: Quixote does not make async defs templates"
                    )
                    self.kept_decorator = True
                else:
                    kinds[(node.lineno, node.col_offset)] = _KINDS[decorator.id]
                    self.templates.append((node, decorator, _KINDS[decorator.id]))


def _harmless_places(tree: ast.Module) -> set[int]:
    """Ids of expressions where an htmltext literal behaves like a str if escaping cannot
    change it: output as a statement, a subscript, a comparison operand."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr):
            found.add(id(node.value))
        elif isinstance(node, ast.Subscript):
            found.add(id(node.slice))
        elif isinstance(node, ast.Compare):
            found.update(id(n) for n in (node.left, *node.comparators))
    return found


def _field_literals(node: ast.JoinedStr) -> set[int]:
    """Ids of the str constants inside *node*'s fields (not its own text or specs' text)."""
    found: set[int] = set()
    for part in node.values:
        if isinstance(part, ast.FormattedValue):
            found.update(
                id(inner)
                for inner in ast.walk(part.value)
                if isinstance(inner, (ast.Constant, ast.JoinedStr))
            )
            if isinstance(part.format_spec, ast.JoinedStr):  # (or None)
                found.update(_field_literals(part.format_spec))
    return found


_RETURN_VALUE = (
    "not converted: 'return' with a value in a template (use bare "
    "'return'; a template returns its output)"
)
_TRUSTED = (
    "changes meaning: Quixote escaped this plain literal, [html] trusts it as markup; "
    "if it is text, write it escaped (e.g. '&lt;' for '<')"
)
# Not rewritten: no [html] or [plain] template can return None, and moving the
# early exit elsewhere is a decision about the caller that only a person can make.
_BARE_RETURN = (
    "changes meaning: a bare 'return' in a template returns None in Quixote (its output is "
    "dropped) but the output so far here; restructure it if a caller relies on None"
)
_H_OUTSIDE = (
    "not converted: an h-string outside @ptl_html is htmltext in Quixote but a str here; "
    "use htmltext(...) or move it into an [html] template"
)


@dataclass(frozen=True)
class _Piece:
    """One string token (a whole f-string on Python 3.12+)."""

    start: Pos
    end: Pos
    text: str

    @property
    def prefix(self) -> str:
        return self.text[: len(self.text) - len(self.text.lstrip("rRbBuUfF"))]


def _pieces(tokens: list[tokenize.TokenInfo], lines: list[str]) -> list[_Piece]:
    pieces = []
    depth = 0
    start: Pos = (0, 0)
    for tok in tokens:
        if tok.type == tokenize.STRING and depth == 0:
            pieces.append(_Piece(tok.start, tok.end, tok.string))
        elif tok.type == _FSTRING_START:
            if depth == 0:
                start = tok.start
            depth += 1
        elif tok.type == _FSTRING_END:
            depth -= 1
            if depth == 0:
                pieces.append(_Piece(start, tok.end, _text(lines, start, tok.end)))
    return pieces


def _text(lines: list[str], start: Pos, end: Pos) -> str:
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]]
    middle = lines[start[0] : end[0] - 1]
    return "".join([lines[start[0] - 1][start[1] :], *middle, lines[end[0] - 1][: end[1]]])


def _characters(piece: _Piece) -> str:
    """The characters *piece* stands for once its escapes are read: ``'\\x3c'`` is ``<``.

    For an f-string, its literal text and format specs, not its fields' code.
    A piece that does not parse on its own is returned as written, quotes and
    all, so it is judged as containing everything.
    """
    try:
        node = ast.parse(piece.text.strip(), mode="eval").body
    except SyntaxError:
        return piece.text
    return _literal_characters(node)


def _literal_characters(node: ast.AST | None) -> str:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else ""
    if isinstance(node, ast.JoinedStr):
        return "".join(_literal_characters(part) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        return _literal_characters(node.format_spec)
    return ""


def _is_h_string(piece: _Piece) -> bool:
    # Exactly Quixote's rule: an F prefix alone (not f, rF or Fr).
    return piece.text[:2] in ("F'", 'F"')


class _Editor:
    """Collects non-overlapping replacements and applies them from the end."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.edits: list[tuple[Pos, Pos, str]] = []

    def replace(self, start: Pos, end: Pos, text: str) -> None:
        self.edits.append((start, end, text))

    def delete_lines(self, first: int, last: int) -> None:
        self.replace((first, 0), (last + 1, 0), "")

    def result(self) -> str:
        lines = [*self.lines, ""]
        for (sl, sc), (el, ec), text in sorted(self.edits, reverse=True):
            head = lines[sl - 1][:sc]
            tail = lines[el - 1][ec:] if el <= len(lines) else ""
            lines[sl - 1 : el] = [head + text + tail]
        return "".join(lines)


def _whole_lines(lines: list[str], node: ast.stmt | ast.expr, scan: _Scan) -> bool:
    """True if *node* is alone on its lines (a trailing comment aside)."""
    start = scan.pos(node.lineno, node.col_offset)
    end = scan.pos(node.end_lineno or node.lineno, node.end_col_offset or 0)
    before = lines[start[0] - 1][: start[1]]
    after = lines[end[0] - 1][end[1] :].strip()
    return not before.strip() and (not after or after.startswith("#"))


def _import_text(module: str, aliases: list[ast.alias]) -> str:
    names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in aliases)
    return f"from {module} import {names}"


def _convert_imports(tree: ast.Module, scan: _Scan, editor: _Editor, keep_ptl: bool) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("quixote.html", "quixote.ptl"):
                    scan.warn(
                        node,
                        f"not converted: 'import {alias.name}'; import the names "
                        "you use from ptl_wsgi instead",
                    )
            continue
        if not isinstance(node, ast.ImportFrom) or node.level:
            continue
        if node.module == "quixote.ptl":
            kept = [a for a in node.names if keep_ptl or a.name not in _KINDS]
            new = [_import_text("quixote.ptl", kept)] if kept else []
        elif node.module == "quixote.html":
            ours = [a for a in node.names if a.name in _HTML_NAMES]
            theirs = [a for a in node.names if a.name not in _HTML_NAMES]
            for alias in theirs:
                scan.warn(
                    node,
                    f"not converted: quixote.html.{alias.name} has no ptl_wsgi "
                    "equivalent (see ptl_wsgi.beyond_escaping for URLs and attributes)",
                )
            new = [
                _import_text(m, a) for m, a in (("ptl_wsgi", ours), ("quixote.html", theirs)) if a
            ]
        else:
            continue
        start = scan.pos(node.lineno, node.col_offset)
        end = scan.pos(node.end_lineno or node.lineno, node.end_col_offset or 0)
        if not new and _whole_lines(editor.lines, node, scan):
            editor.delete_lines(start[0], end[0])
        else:
            indent = "\n" + editor.lines[start[0] - 1][: start[1]]
            editor.replace(start, end, indent.join(new) or "pass")


def _convert_templates(scan: _Scan, tokens: list[tokenize.TokenInfo], editor: _Editor) -> None:
    by_start = {tok.start: i for i, tok in enumerate(tokens)}
    for node, decorator, kind in scan.templates:
        line, col = scan.pos(decorator.lineno, decorator.col_offset)
        before, after = editor.lines[line - 1][:col], editor.lines[line - 1][col:]
        after = after[len(decorator.id) :].strip()
        if before.strip() == "@" and (not after or after.startswith("#")):
            editor.delete_lines(line, line)
        else:
            scan.warn(decorator, "not converted: put the decorator on a line of its own")
            scan.kept_decorator = True
            continue
        index = by_start[scan.pos(node.lineno, node.col_offset)]  # the "def"
        name, paren = tokens[index + 1], tokens[index + 2]
        editor.replace(name.end, paren.start, f" [{kind}] ")


def _convert_strings(scan: _Scan, pieces: list[_Piece], editor: _Editor) -> None:
    literals = sorted(scan.literals, key=lambda lit: lit.start)
    starts = [lit.start for lit in literals]
    for piece in pieces:
        index = bisect.bisect_right(starts, piece.start) - 1
        literal = literals[index] if index >= 0 else None
        if literal is None or literal.end < piece.end:
            continue  # not an expression (a docstring of a module or class is one, though)
        line, col = piece.start
        if _is_h_string(piece):
            if literal.kind != "html":
                scan.warnings.append(Problem(line, col + 1, _H_OUTSIDE))
                continue
            body = piece.text[1:]
            editor.replace(piece.start, (line, col + 1), "f" if set("{}") & set(body) else "")
        elif literal.kind == "html" and "b" not in piece.prefix.lower():
            if literal.harmless_place and not _SPECIAL & set(_characters(piece)):
                continue
            scan.warnings.append(Problem(line, col + 1, _TRUSTED))


def convert_source(source: str, filename: str = "<ptl>") -> Conversion:
    """Convert decorator-style PTL *source*.

    Source in this package's syntax is returned unchanged; raises SyntaxError
    for source that is neither.
    """
    # Lines as Python counts them: str.splitlines would also split at a form feed.
    lines = io.StringIO(source, newline="\n").readlines()
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        compile_ptl(source, filename)  # raises for source that is not PTL either
        return Conversion(source)
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    scan = _Scan(lines)
    scan.scan(tree)
    editor = _Editor(lines)
    _convert_templates(scan, tokens, editor)
    _convert_strings(scan, _pieces(tokens, lines), editor)
    _convert_imports(tree, scan, editor, keep_ptl=scan.kept_decorator)
    converted = editor.result()
    warnings = sorted(set(scan.warnings), key=lambda w: (w.line, w.col, w.message))
    return Conversion(converted, warnings, converted != source)


def _text_of(node: ast.Constant) -> str:
    return node.value if isinstance(node.value, str) else ""
