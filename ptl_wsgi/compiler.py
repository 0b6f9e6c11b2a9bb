"""The PTL compiler: ``.ptl`` source to a transformed ``ast.Module`` and a code object.

Compilation has two steps:

1. A tokenizer pre-pass finds template definitions (``def name [html] (...)``,
   ``def name [plain] (...)`` and the old ``template name(...)``), records
   which ``def`` (by line and column) is a template of which kind, and blanks
   the annotation so that the text is ordinary Python with every column
   unchanged.  This works on Python 3.10 and 3.11, where ``def f [html]`` is
   not Python, and on 3.12+, where it would parse as a PEP 695 generic.
2. ``ast.parse`` and one :class:`ast.NodeTransformer` rewrite template bodies:
   expression statements append to an output list, bare ``return`` and the
   end of the body return the joined output, and in ``[html]`` templates
   string literals become ``htmltext`` built once at import.

The generated code uses only the names imported at the top of every compiled
module: four from ``ptl_wsgi.html``, so cached bytecode works with either
htmltext twin, and the two template markers from ``ptl_wsgi._runtime``, so
running cached bytecode never imports this module, ``ast`` or ``tokenize``.
Every template gets ``__ptl_template__`` (``"html"`` or ``"plain"``), set by
an innermost decorator; that is how the loader tells templates from other
callables.
"""

from __future__ import annotations

import _string
import ast
import io
import keyword
import re
import sys
import threading
import tokenize
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import decode_source
from types import CodeType
from typing import Any, Protocol, TypeVar, cast

# Re-exported: they live in the light runtime module that generated code imports.
from ptl_wsgi._runtime import COMPILER_VERSION, mark_html_template, mark_plain_template
from ptl_wsgi.escaping.context import (
    TEXT,
    Context,
    ContextError,
    advance,
    after_number,
    after_value,
    describe,
    ends_in_text,
    escaper_for,
    join,
    settle,
)
from ptl_wsgi.escaping.formatting import digits_only
from ptl_wsgi.escaping.rules import INT_SAFE_BASES

__all__ = [
    "COMPILER_VERSION",
    "RESERVED_PREFIX",
    "TemplateScopes",
    "OPT_OUT",
    "compile_ptl",
    "concatenation_warnings",
    "context_report",
    "mark_html_template",
    "mark_plain_template",
    "parse_ptl",
    "python_view",
    "template_scopes",
]

#: Every name the compiler generates starts with this; user code may not use it.
RESERVED_PREFIX = "_ptl_"

_RUNTIME_NAMES = (
    ("htmltext", "_ptl_htmltext"),
    ("html_join", "_ptl_html_join"),
    ("plain_join", "_ptl_plain_join"),
    ("format_field", "_ptl_format_field"),
    ("field_output", "_ptl_field_output"),
    ("percent_output", "_ptl_percent_output"),
    ("loop_output", "_ptl_loop_output"),
    ("first_of", "_ptl_first_of"),
)
_MARKERS = (
    ("mark_html_template", "_ptl_mark_html"),
    ("mark_plain_template", "_ptl_mark_plain"),
)
_MARK = {"html": "_ptl_mark_html", "plain": "_ptl_mark_plain"}
_ESCAPER = "_ptl_esc_"  # + the escaper's name in ptl_wsgi.escapers
# The helpers values in other contexts need before their escaper, from ptl_wsgi.escapers.
_CONTEXT_HELPERS = (
    ("format_value", "_ptl_ctx_format"),
    ("percent_value", "_ptl_ctx_percent"),
    ("percent_field", "_ptl_ctx_field"),
    ("int", "_ptl_int"),
    ("type", "_ptl_type"),
)
# htmltext's %, format() and format_map() escape each value for where it lands in the
# format, parsed on its own from text (ptl_wsgi.escaping.formatting); a literal format of an
# [html] template calls these from ptl_wsgi.html instead, which HTML-escape every value:
# the compiler planned the format where it is output (its values are escaped for it
# already), or the template opted out of contextual escaping.
_HTML_FORMATTERS = (
    ("format_mod_html", "_ptl_html_mod"),
    ("format_html", "_ptl_html_format"),
    ("format_map_html", "_ptl_html_format_map"),
)


def _layerless(escaper: str) -> str:
    for layer in ("_u0", "_q", "_u"):
        if escaper.endswith(layer):
            return escaper[: -len(layer)]
    return escaper


#: A module (at its top level) or a template (among its first statements) that sets
#: this name to False gets plain HTML escaping everywhere: contextual escaping off.
OPT_OUT = "__ptl_contextual__"
_JOIN = {"html": "_ptl_html_join", "plain": "_ptl_plain_join"}
_OUT = "_ptl_out"
_EXTEND = "_ptl_extend"  # _ptl_out.extend, in templates that need it bound
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)
_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT})
_IGNORED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER})

# (line, UTF-8 column of the ``def`` or ``async``) -> "html" | "plain"
Templates = dict[tuple[int, int], str]

# Off only in tests: the general path, which the fast one must match exactly.
_SPLIT_OUTPUT = True

# Off only in tests: loops that only output text and their variable stay loops.
_FUSE_LOOPS = True
# Calls that output a fused loop's item (besides the escapers).
_ITEM_OUTPUTS = frozenset({"_ptl_field_output", "_ptl_percent_output"})
# Names (of builtins or attributes) that can read a template's local variables, which
# fused loops do not bind: a module that mentions one anywhere gets no fused loop.
_FRAME_READERS = frozenset(
    {"locals", "vars", "eval", "exec", "dir", "_getframe", "f_locals", "currentframe"}
)

# How an output value is formatted (see _Transformer.pieces).
_RAW, _FIELD, _PERCENT = 0, 1, 2


@dataclass
class _Text:
    """Trusted literal text of an output statement."""

    text: str
    node: ast.expr


@dataclass
class _Value:
    """A value of an output statement, already transformed, and how it is formatted."""

    value: ast.expr
    node: ast.expr
    rule: int
    conversion: int = -1
    spec: ast.expr | None = None
    fmt: ast.expr | None = None  # the whole format, for a lone %s whose value may be a tuple
    escaper: str | None = None  # where the value lands needs more than HTML escaping
    nested: bool = False  # a literal f-string or t-string, not visited yet (see value_code)


_Piece = _Text | _Value


def _text_of(part: ast.expr) -> str | None:
    """The literal text of an f-string's part, None for a field."""
    if isinstance(part, ast.Constant) and isinstance(part.value, str):
        return part.value
    return None


def _all_text(parts: list[ast.expr]) -> str | None:
    """The text of an f-string's *parts* if they are all literal text, else None."""
    texts = [_text_of(part) for part in parts]
    return None if None in texts else "".join(t for t in texts if t is not None)


_TemplateStr: type[ast.expr] | None = getattr(ast, "TemplateStr", None)  # Python 3.14+


def _as_fstring(node: ast.expr) -> ast.JoinedStr:
    """The f-string with a t-string's parts (PEP 750): what it means in a template."""
    values: list[ast.expr] = []
    for part in node.values:  # type: ignore[attr-defined]
        if isinstance(part, ast.Constant):
            values.append(part)
        else:  # ast.Interpolation
            field = ast.FormattedValue(part.value, part.conversion, part.format_spec)
            values.append(ast.copy_location(field, part))
    return ast.copy_location(ast.JoinedStr(values), node)


def _empty_spec(part: ast.FormattedValue) -> bool:
    spec = part.format_spec
    return spec is None or (
        isinstance(spec, ast.JoinedStr)
        and all(isinstance(p, ast.Constant) and p.value == "" for p in spec.values)
    )


def _percent_parts(fmt: str) -> list[str | None] | None:
    """*fmt* as text and ``None`` for each ``%s``; None if it has any other conversion."""
    parts: list[str | None] = []
    text: list[str] = []
    index = 0
    while True:
        found = fmt.find("%", index)
        if found < 0:
            text.append(fmt[index:])
            break
        text.append(fmt[index:found])
        kind = fmt[found + 1 : found + 2]
        if kind == "%":
            text.append("%")
        elif kind == "s":
            parts.append("".join(text))
            parts.append(None)
            text = []
        else:
            return None
        index = found + 2
    parts.append("".join(text))
    return parts


def _merged_text(pieces: list[_Piece]) -> list[_Piece]:
    """*pieces* with each run of adjacent texts made one text (one hoisted literal)."""
    merged: list[_Piece] = []
    for piece in pieces:
        if isinstance(piece, _Text) and merged and isinstance(merged[-1], _Text):
            merged[-1] = _Text(merged[-1].text + piece.text, merged[-1].node)
        else:
            merged.append(piece)
    return merged


def _fill(parts: list[str | None], ref: ast.expr, values: list[_Value]) -> list[_Piece]:
    filled = iter(values)
    return [_Text(part, ref) if part is not None else next(filled) for part in parts]


def _format_fields(
    fmt: str, count: int, names: list[str | None]
) -> list[str | int | tuple[str]] | None:
    """*fmt*'s text and plain fields (an argument's index, or ``(name,)``); None if any is not."""
    try:
        parsed = list(_string.formatter_parser(fmt))
    except ValueError:
        return None
    parts: list[str | int | tuple[str]] = []
    automatic: bool | None = None
    next_index = 0
    for text, field, spec, conversion in parsed:
        if text:
            parts.append(text)
        if field is None:
            continue
        if spec or conversion is not None:
            return None
        if field == "":
            if automatic is False:
                return None
            automatic, index = True, next_index
            next_index += 1
        elif field.isdecimal():  # what str.format reads as an index (not "²", a key)
            if automatic is True:
                return None
            automatic, index = False, int(field)
        elif field.isidentifier() and field in names:
            parts.append((field,))
            continue
        else:
            return None
        if index >= count:
            return None
        parts.append(index)
    return parts


def _byte_col(line: str, col: int) -> int:
    return len(line[:col].encode("utf-8"))


def _char_col(line: str, byte_col: int | None) -> int:
    # (byte_col None: the end of the line, as a node without an end position has.)
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _blank(lines: list[str], tok: tokenize.TokenInfo, replacement: str | None = None) -> None:
    (row, start), (_, end) = tok.start, tok.end
    line = lines[row - 1]
    text = replacement or " " * (end - start)
    lines[row - 1] = line[:start] + text.ljust(end - start) + line[end:]


def _preprocess(lines: list[str]) -> tuple[Templates, BaseException | None]:
    """Find template headers and blank their annotations in *lines* (in place).

    Returns the templates and the tokenizer's error, if it stopped on one; the
    parser then reports that error with CPython's own message and location.
    """
    templates: Templates = {}
    head: list[tokenize.TokenInfo] = []  # first significant tokens of the statement
    try:
        for tok in tokenize.generate_tokens(iter(list(lines)).__next__):
            if tok.type in _STATEMENT_START:
                head.clear()
            elif tok.type not in _IGNORED and len(head) < 6:
                head.append(tok)
                _match_header(head, lines, templates)
    except (tokenize.TokenError, SyntaxError) as exc:
        return templates, exc
    return templates, None


def _match_header(head: list[tokenize.TokenInfo], lines: list[str], templates: Templates) -> None:
    """Record and blank a template header if *head* (a statement's start) is one.

    Headers always start a statement: ``template NAME (``, ``def NAME [kind]``
    or ``async def NAME [kind]``.
    """
    strings = [t.string for t in head]
    kind = None
    if len(head) == 3 and strings[0] == "template" and strings[2] == "(":
        if head[1].type == tokenize.NAME and not keyword.iskeyword(head[1].string):
            kind = "plain"
            _blank(lines, head[0], "def")
    else:
        offset = 1 if strings[0] == "async" else 0
        if (
            len(head) == 5 + offset
            and strings[offset] == "def"
            and strings[offset + 2 :] in (["[", "html", "]"], ["[", "plain", "]"])
        ):
            kind = strings[offset + 3]
            for tok in head[offset + 2 :]:
                _blank(lines, tok)
    if kind is not None:
        row, col = head[0].start
        templates[(row, _byte_col(lines[row - 1], col))] = kind


_N = TypeVar("_N", bound=ast.AST)


class _Spot(Protocol):
    """A node with a place in the source: stmt, expr, arg, keyword... (not every AST)."""

    @property
    def lineno(self) -> int: ...
    @property
    def col_offset(self) -> int: ...
    @property
    def end_lineno(self) -> int | None: ...
    @property
    def end_col_offset(self) -> int | None: ...


def _located(node: _N, ref: ast.AST) -> _N:
    """Give the generated nodes in *node* (those without a location) *ref*'s location."""
    for child in ast.walk(node):
        if "lineno" in child._attributes and getattr(child, "lineno", None) is None:
            ast.copy_location(child, ref)
    return node


def _name(id: str, ref: ast.AST, ctx: ast.expr_context | None = None) -> ast.Name:
    return _located(ast.Name(id=id, ctx=ctx or ast.Load()), ref)


def _call(func: ast.expr, args: list[ast.expr], ref: ast.AST) -> ast.Call:
    return _located(ast.Call(func=func, args=args, keywords=[]), ref)


class _ScopeWalker(ast.NodeTransformer):
    """Which scope each piece of code runs in: the one place that decides it.

    ``self.kind`` is the innermost enclosing scope: ``"html"`` or ``"plain"``
    inside a template body, ``None`` in ordinary code (the module, classes,
    ordinary functions and lambdas, even when nested in a template).  A def's
    decorators run in the enclosing scope and its own kind governs its
    defaults; a class (decorators, bases and body) and a lambda are ordinary
    code.  Annotations, ``match`` patterns and ``type`` aliases are never
    visited: their literals stay ``str``.  The compiler's transformer and
    :func:`template_scopes` (for tools) both walk by these rules.
    """

    def __init__(self, templates: Templates) -> None:
        self.templates = templates
        self.kind: str | None = None

    @contextmanager
    def scope(self, kind: str | None) -> Iterator[None]:
        outer, self.kind = self.kind, kind
        try:
            yield
        finally:
            self.kind = outer

    def visit_list(self, nodes: list[Any]) -> list[Any]:
        return [new for node in nodes for new in _as_list(self.visit(node))]

    def visit_in(self, kind: str | None, nodes: list[Any]) -> list[Any]:
        with self.scope(kind):
            return self.visit_list(nodes)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        kind = self.templates.get((node.lineno, node.col_offset))
        # Decorators run in the enclosing scope; a def's own kind governs its
        # defaults.  Annotations are left alone: they are types, not output.
        node.decorator_list = self.visit_in(self.kind, node.decorator_list)
        args = node.args
        args.defaults = self.visit_in(kind, args.defaults)
        args.kw_defaults = [
            None if d is None else self.visit_in(kind, [d])[0] for d in args.kw_defaults
        ]
        if kind is None:
            node.body = self.visit_in(kind, node.body)
        else:
            self.visit_template_body(node, kind)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_template_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> None:
        """Visit a template's body in its own scope (the transformer also rewrites it)."""
        node.body = self.visit_in(kind, node.body)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        with self.scope(None):
            return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        with self.scope(None):
            return self.generic_visit(node)

    # Places where a literal must stay a str: the Python grammar or the meaning
    # of the code needs it (patterns, annotations, type aliases).
    def visit_match_case(self, node: ast.match_case) -> ast.AST:
        if node.guard is not None:
            node.guard = self.visit(node.guard)
        node.body = self.visit_list(node.body)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        node.target = self.visit(node.target)
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return node

    def visit_TypeAlias(self, node: ast.AST) -> ast.AST:
        return node


class _Transformer(_ScopeWalker):
    """Rewrites template bodies; everything else stays ordinary Python.

    Scopes are :class:`_ScopeWalker`'s.  Rules that need no rewriting
    (reserved names, ``yield``) are :func:`_check`'s.
    """

    def __init__(
        self,
        templates: Templates,
        filename: str,
        lines: list[str],
        contextual: bool = True,
        report: list[tuple[int, int, str, str | None]] | None = None,
        warnings: list[tuple[int, int, str]] | None = None,
    ) -> None:
        super().__init__(templates)
        self.filename = filename
        self.lines = lines
        # Contextual escaping (docs/contextual-escaping.md): on for the module unless it
        # opts out; ``tracking`` in the [html] template being visited, where ``ctx`` is the
        # HTML context the output has reached (None where no path reaches).
        self.contextual = contextual
        self.tracking = False
        self.ctx: Context | None = None
        self.loops: list[Context | None] = []
        self.escapers: set[str] = set()  # escaper names used, for the prologue
        self.helpers: set[str] = set()  # _CONTEXT_HELPERS used
        self.formatters: set[str] = set()  # _HTML_FORMATTERS used
        self.output_value: ast.expr | None = None  # an output statement's whole value
        self.template: ast.AST | None = None  # the template being visited
        self.report = report  # (line, column, context, escaper) of each value, for `check`
        self.warnings = warnings  # (line, column, message), for `check`
        self.added: set[int] = set()  # ids of the "+" chains checked (inner ones included)
        # For those warnings: names bound in the template to markup built with "+" (or a
        # TemplateIO), and the context that markup ends in.
        self.accumulators: dict[str, Context] = {}
        # The innermost try (in this template) whose finally block produces output.
        self.finally_output: ast.Expr | None = None
        self.literals: dict[str, ast.Assign] = {}  # text -> hoisted assignment
        self.temporaries = 0
        self.binds_extend = False  # the template being wrapped calls _EXTEND
        self.fusing = False  # the template being wrapped may have fused loops
        self.reads_frames = True  # the module may read a frame's locals (no loop is fused)
        self.name_uses: Counter[str] = Counter()  # in the template being wrapped
        # Inside a try or with block of the template: a handler (or a context manager
        # that swallows the error) could see the output list between two statements.
        self.guarded = False
        # The try bodies with handlers and with bodies being visited: (their start
        # context, the keyword, its line). Between any two of their statements an
        # exception may be caught and the output go on from there.
        self.catchers: list[tuple[Context, str, int]] = []

    def error(self, message: str, node: _Spot) -> SyntaxError:
        return _syntax_error(message, self.filename, self.lines, node)

    def visit_list(self, nodes: list[Any]) -> list[Any]:
        if self.catchers and self.tracking:
            out = []
            for node in nodes:
                if isinstance(node, ast.stmt):
                    self.check_catchable(node)
                out.extend(_as_list(self.visit(node)))
            return out
        # (Not super(): one frame less for long elif chains, which nest deeply.)
        return [new for node in nodes for new in _as_list(self.visit(node))]

    def check_catchable(self, node: ast.stmt) -> None:
        """Before *node*, the output must be where every enclosing handler starts."""
        if self.ctx is None:
            return
        here = settle(self.ctx)
        for start, guard, line in self.catchers:
            if here != settle(start):
                raise self.error(
                    f"an exception here may be caught by the '{guard}' at line {line}, and "
                    f"the output would go on from {describe(here)}, not from "
                    f"{describe(start)} where the '{guard}' starts; close what is open "
                    f"before this statement (in one output statement), or put the "
                    f"'{guard}' around the whole tag",
                    node,
                )

    @contextmanager
    def catching(self, keyword: str, node: ast.stmt) -> Iterator[None]:
        if not self.tracking or self.ctx is None:
            yield
            return
        self.catchers.append((self.ctx, keyword, node.lineno))
        try:
            yield
        finally:
            self.catchers.pop()

    @contextmanager
    def scope(self, kind: str | None, tracking: bool = False) -> Iterator[None]:
        outer = self.finally_output, self.guarded, self.tracking, self.ctx, self.loops
        catchers, self.catchers = self.catchers, []
        accumulators, self.accumulators = self.accumulators, {}
        self.finally_output, self.guarded = None, False
        self.tracking, self.ctx, self.loops = tracking, TEXT if tracking else None, []
        try:
            with super().scope(kind):
                yield
        finally:
            self.finally_output, self.guarded, self.tracking, self.ctx, self.loops = outer
            self.catchers = catchers
            self.accumulators = accumulators

    @contextmanager
    def guarding(self) -> Iterator[None]:
        outer, self.guarded = self.guarded, self.kind is not None
        try:
            yield
        finally:
            self.guarded = outer

    def visit_template_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> None:
        tracking = kind == "html" and self.contextual and not _opts_out(node.body)
        outer, self.template = self.template, node
        try:
            with self.scope(kind, tracking):
                node.body = self.visit_list(node.body)
                self.check_end(self.ctx, node, node)
        finally:
            self.template = outer
        self.wrap_template(node, kind)

    def header(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Pass:
        """A node spanning a template's header line, to locate errors about the whole template."""
        header = ast.Pass()
        header.lineno = header.end_lineno = node.lineno
        header.col_offset = node.col_offset
        header.end_col_offset = len(self.lines[node.lineno - 1].rstrip().encode("utf-8"))
        return header

    def wrap_template(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> None:
        first = node.body[0]
        prologue = ast.Assign([_name(_OUT, first, ast.Store())], ast.List([], ast.Load()))
        # The final join reports errors (a value whose __str__ fails) at the header.
        header = self.header(node)
        self.binds_extend = False
        self.fusing = kind == "html" and _SPLIT_OUTPUT and _FUSE_LOOPS and not self.reads_frames
        if self.fusing:
            self.name_uses = _name_uses(node)
        body = self.join_outputs(node.body)
        if self.binds_extend and self.fusing:  # fused loops may have taken every call
            self.binds_extend = any(
                isinstance(n, ast.Name) and n.id == _EXTEND for s in body for n in ast.walk(s)
            )
        last = body[-1]
        if hasattr(last, "_ptl_pieces") and not any(
            isinstance(n, ast.Name) and n.id in (_OUT, _EXTEND)
            for s in body[:-1]
            for n in ast.walk(s)
        ):
            # The template's one output statement, at its end: its pieces are joined
            # as they are, without a list (a short template costs a quarter less).
            assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            pieces = _located(ast.Tuple(_output_items(last.value), ast.Load()), last)
            join = _call(_name(_JOIN[kind], header), [pieces], header)
            node.body = [*body[:-1], _located(ast.Return(join), header)]
            node.decorator_list.append(_name(_MARK[kind], header))
            return
        start: list[ast.stmt] = [_located(prologue, first)]
        if self.binds_extend:
            extend = ast.Attribute(_name(_OUT, first), "extend", ast.Load())
            start.append(_located(ast.Assign([_name(_EXTEND, first, ast.Store())], extend), first))
        node.body = [
            *start,
            *body,
            _located(ast.Return(self.joined(kind, header)), header),
        ]
        # Innermost, so the mark is on the function itself whatever wraps it.
        node.decorator_list.append(_name(_MARK[kind], header))

    def join_outputs(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        """Join consecutive output statements of one block into one call, in every block."""
        joined: list[ast.stmt] = []
        run: list[ast.stmt] = []

        def end_run() -> None:
            if len(run) == 1:
                joined.append(run[0])
            elif run:
                # Emitted again from the pieces of all, so that text meeting text is one literal.
                # (ignore: visit_Expr sets _ptl_pieces on the output statements it makes.)
                pieces = [p for s in run for p in s._ptl_pieces]  # type: ignore[attr-defined]
                joined.append(self.output(pieces, run[0], run[-1]))
            run.clear()

        for statement in statements:
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(statement, field, None)
                    if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                        setattr(statement, field, self.join_outputs(block))
                for inner in getattr(statement, "handlers", ()) or getattr(statement, "cases", ()):
                    inner.body = self.join_outputs(inner.body)
            if self.fusing and isinstance(statement, ast.For):
                statement = self.fused_loop(statement)
            if hasattr(statement, "_ptl_pieces"):
                run.append(statement)
            else:
                end_run()
                joined.append(statement)
        end_run()
        return joined

    def fused_loop(self, loop: ast.For) -> ast.stmt:
        """*loop* as one loop_output() call, if it only outputs text and its own variable.

        The loop variable must be used nowhere else in the template (after the loop it
        is not bound).  The call spans the loop's lines, and is made after its parts
        are evaluated, at the ``for`` line: a tracer sees the ``for`` line, each body
        line once, then the ``for`` line again, as for a loop that ran.
        """
        target, body = loop.target, loop.body
        if (
            loop.orelse
            or not isinstance(target, ast.Name)
            or len(body) != 1
            or not hasattr(body[0], "_ptl_pieces")
            or not isinstance(body[0], ast.Expr)
            or not isinstance(call := body[0].value, ast.Call)
        ):
            return loop
        items = _output_items(call)
        texts = {_target_name(assign): text for text, assign in self.literals.items()}
        pattern: list[ast.expr] = []
        uses = 1
        for item in items:
            if isinstance(item, ast.Name) and item.id in texts:
                pattern.append(item)
            elif isinstance(item, ast.Name) and item.id == target.id:
                pattern.append(_located(ast.Constant(None), item))
                uses += 1
            elif (
                isinstance(item, ast.Call)
                and isinstance(item.func, ast.Name)
                and (item.func.id in _ITEM_OUTPUTS or item.func.id.startswith(_ESCAPER))
                and not item.keywords
                and item.args
                and isinstance(first := item.args[0], ast.Name)
                and first.id == target.id
                and all(
                    (isinstance(a, ast.Name) and a.id in texts) or _is_none(a)
                    for a in item.args[1:]
                )
            ):
                pattern.append(_located(ast.Tuple([item.func, *item.args[1:]], ast.Load()), item))
                uses += 1
            else:
                return loop
        if self.name_uses[target.id] != uses:
            return loop
        args = [_name(_OUT, loop), loop.iter, _located(ast.Tuple(pattern, ast.Load()), call)]
        first, last = pattern[0], pattern[-1]
        if len(pattern) > 1 and isinstance(first, ast.Name) and isinstance(last, ast.Name):
            # Between items the last text and the first are one piece.
            joint = _located(ast.Constant(texts[last.id] + texts[first.id]), last)
            args.append(_name(self.hoist(joint), last))
        fused = ast.Call(_name("_ptl_loop_output", loop), args, [])
        fused.lineno, fused.col_offset = loop.lineno, loop.col_offset
        fused.end_lineno, fused.end_col_offset = call.end_lineno, call.end_col_offset
        statement = ast.Expr(fused)
        ast.copy_location(statement, fused)
        return statement

    @staticmethod
    def joined(kind: str, ref: ast.AST) -> ast.Call:
        return _call(_name(_JOIN[kind], ref), [_name(_OUT, ref)], ref)

    # -- statements in template bodies -----------------------------------------

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if self.kind is None:
            return self.generic_visit(node)
        if isinstance(node.value, _COMPREHENSIONS):
            value = self.visit(node.value)
            if isinstance(value, ast.GeneratorExp):
                # Measured: extend() is faster with a list than with a generator.
                value = ast.copy_location(ast.ListComp(value.elt, value.generators), value)
            if self.tracking:
                escaper = self.escaper_at(self.ctx, node.value.elt)
                if escaper is not None:
                    piece = _Value(value.elt, node.value.elt, _RAW)
                    value.elt = self.escaped(piece, escaper, joined=True)
            func = ast.Attribute(_name(_OUT, node), "extend", ast.Load())
            return _located(ast.Expr(_call(func, [value], node)), node)
        pieces: list[_Piece] | None = (
            self.pieces(node.value) if self.kind == "html" and _SPLIT_OUTPUT else None
        )
        if (
            pieces is None
            and self.kind == "html"
            and _SPLIT_OUTPUT
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is str
        ):
            pieces = [_Text(node.value.value, node.value)]  # joins the literals beside it
        if pieces is None:
            # A literal's fragment (f-string, % or .format()) is parsed from where output is.
            self.output_value = node.value
            value = self.visit(node.value)
            followed, self.output_value = self.output_value is None, None
            pieces = [_Value(value, node.value, _RAW)]
            if followed:
                return self.output(pieces, node)
        self.track(pieces)
        return self.output(pieces, node)

    # -- contextual escaping -------------------------------------------------------
    #
    # In [html] templates the compiler follows the HTML context through the output
    # in the order it is produced (ptl_wsgi.escaping.context) and gives each value the
    # escaper of the context it lands in; values in text, RCDATA and quoted plain
    # attributes keep exactly the code they had before (the common case costs
    # nothing).  Branches must end in the same context, loop bodies where they
    # started, templates in text.

    def track(self, pieces: list[_Piece]) -> None:
        """Follow the context through an output statement's pieces; set their escapers."""
        if not self.tracking:
            return
        ctx = self.ctx if self.ctx is not None else TEXT  # unreachable code: any will do
        for piece in pieces:
            if isinstance(piece, _Text):
                ctx = self.advanced(ctx, piece.text, piece.node)
            else:
                piece.escaper = self.escaper_at(ctx, piece.node)
                ctx = after_value(ctx)
        self.ctx = ctx

    def advanced(self, ctx: Context, text: str, node: _Spot) -> Context:
        try:
            return advance(ctx, text)
        except ContextError as exc:
            raise self.error(
                f"cannot follow this markup: {exc}; write it so it is not ambiguous", node
            ) from None

    def escaper_at(self, ctx: Context | None, node: _Spot) -> str | None:
        """The escaper of a value at *node* in *ctx*; a located error where no value may go."""
        ctx = TEXT if ctx is None else ctx
        try:
            escaper = escaper_for(ctx)
        except ContextError as exc:
            try:
                where = describe(ctx)
            except ContextError:  # the text it holds back is what cannot be followed
                raise self.error(f"cannot follow this markup: {exc}", node) from None
            raise self.error(
                f"no value may go here ({where}): {exc}; write the name in the "
                "literal, or output a whole tag or attribute as markup (htmltext)",
                node,
            ) from None
        if self.report is not None:
            self.report.append((node.lineno, node.col_offset, describe(ctx), escaper))
        return escaper

    def escaped(self, piece: _Value, escaper: str, joined: bool = False) -> ast.expr:
        """The expression that outputs *piece* through *escaper* (conversion and spec first).

        *joined*: the result is a piece of the [html] template's output, which its join
        escapes for HTML unless it is markup; a quoted attribute's escaper is then its
        ``output_`` variant, which may leave that escaping (its ``q`` layer) to the join.
        """
        node, expr = piece.node, piece.value
        formatted = piece.conversion != -1 or piece.spec is not None
        held = None
        if not formatted and _layerless(escaper) in INT_SAFE_BASES:
            # An int's digits (and sign) are the same escaped or not: it is output as it
            # is, without a call ("/item/%s" % id costs what it did before).
            temp = self.temporary()
            held = _located(ast.NamedExpr(_name(temp, node, ast.Store()), expr), node)
            expr = _name(temp, node)
        if formatted:
            self.helpers.add("_ptl_ctx_format")
            expr = _call(
                _name("_ptl_ctx_format", node),
                [expr, _located(ast.Constant(piece.conversion), node),
                 piece.spec or _located(ast.Constant(""), node)],
                node,
            )  # fmt: skip
        elif piece.rule == _PERCENT and piece.fmt is not None:
            self.helpers.add("_ptl_ctx_percent")
            expr = _call(_name("_ptl_ctx_percent", node), [expr, piece.fmt], node)
        if joined and self.kind == "html" and escaper.endswith("_q"):
            escaper = f"output_{escaper}"
        self.escapers.add(escaper)
        call = _call(_name(_ESCAPER + escaper, node), [expr], node)
        if held is None:
            return call
        self.helpers.update(("_ptl_type", "_ptl_int"))
        test = ast.Compare(
            _call(_name("_ptl_type", node), [held], node), [ast.Is()], [_name("_ptl_int", node)]
        )
        return _located(ast.IfExp(test, _name(held.target.id, node), call), node)

    def fragment(
        self,
        node: ast.expr,
        parts: list[str | None],
        refs: Sequence[ast.expr],
        numeric: list[bool] | None = None,
    ) -> list[str | None]:
        """The escapers of the holes (None) in literal *parts* of expression *node*.

        The whole value of an output statement is parsed from the context output
        has reached (and moves it on); any other literal fragment from text.
        """
        holes = parts.count(None)
        if not self.tracking:
            return [None] * holes
        own = node is self.output_value
        ctx = (self.ctx if self.ctx is not None else TEXT) if own else TEXT
        escapers: list[str | None] = []
        refs_left = iter(refs)
        numbers = iter(numeric or [False] * holes)
        for part in parts:
            if part is None:
                ref = next(refs_left)
                if next(numbers):
                    # A number is digits (a sign, a point): safe wherever a name may go
                    # ("<h%d>"), and parsed as such.
                    escapers.append(None)
                    try:
                        ctx = after_number(ctx)
                    except ContextError as exc:
                        raise self.error(
                            f"no number may go here ({describe(ctx)}): {exc}", ref
                        ) from None
                    continue
                escapers.append(self.escaper_at(ctx, ref))
                ctx = after_value(ctx)
            else:
                ctx = self.advanced(ctx, part, node)
        if own:
            self.ctx, self.output_value = ctx, None
        return escapers

    def merge(
        self, node: ast.stmt, keyword: str, ends: list[tuple[str, Context | None]]
    ) -> Context | None:
        """The context where the paths *ends* of statement *node* meet, or a located error."""
        result: Context | None = None
        first = ""
        for label, ctx in ends:
            try:
                joined = join(result, ctx)
            except ContextError:
                assert result is not None and ctx is not None
                raise self.error(
                    f"the paths through this '{keyword}' end in different HTML contexts: "
                    f"{first} ends in {describe(result)}, {label} in {describe(ctx)}; "
                    "make each end in the same context (close in each what it opens)",
                    _keyword(node, keyword),
                ) from None
            if result is None and ctx is not None:
                first = label
            result = joined
        return result

    def check_end(self, ctx: Context | None, node: ast.stmt, template: ast.AST) -> None:
        """A template's output must end in text (where it starts) wherever it ends."""
        # A lone "<" at the end is text to a browser (and a template's output is assumed
        # balanced by its callers).
        if not self.tracking or ctx is None or ends_in_text(ctx):
            return
        where = (
            self.header(template)
            if isinstance(template, (ast.FunctionDef, ast.AsyncFunctionDef))
            else node
        )
        name = getattr(self.template, "name", "")
        raise self.error(
            f"template {name!r} ends in {describe(ctx)}, not in text: close what it opens "
            f"(tag, attribute, script, style or comment) before it ends, or opt out of "
            f"contextual escaping with {OPT_OUT} = False",
            where,
        )

    def check_loop_end(
        self, node: ast.stmt, keyword: str, start: Context | None, end: Context | None
    ) -> None:
        if not self.tracking or start is None or end is None or settle(start) == settle(end):
            return
        raise self.error(
            f"the body of this '{keyword}' loop starts in {describe(start)} but ends in "
            f"{describe(end)}; a loop body must end in the context where it starts "
            "(close in each iteration what it opens)",
            _keyword(node, keyword),
        )

    def visit_If(self, node: ast.If) -> ast.AST:
        if not self.tracking:
            return self.generic_visit(node)
        node.test = self.visit(node.test)
        start = self.ctx
        node.body = self.visit_list(node.body)
        ends = [(f"the branch at line {node.lineno}", self.ctx)]
        self.ctx = start
        node.orelse = self.visit_list(node.orelse)
        label = "the 'else' branch" if node.orelse else "the way around it (no 'else')"
        ends.append((label, self.ctx))
        line = self.lines[node.lineno - 1]
        keyword = "elif" if line[_char_col(line, node.col_offset) :].startswith("elif") else "if"
        self.ctx = self.merge(node, keyword, ends)
        return node

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.While) -> ast.AST:
        if not self.tracking:
            return self.generic_visit(node)
        keyword = {ast.While: "while", ast.AsyncFor: "async for"}.get(type(node), "for")
        if isinstance(node, ast.While):
            node.test = self.visit(node.test)
        else:
            node.target = self.visit(node.target)
            node.iter = self.visit(node.iter)
        start = self.ctx
        self.loops.append(start)
        try:
            node.body = self.visit_list(node.body)
        finally:
            self.loops.pop()
        self.check_loop_end(node, keyword, start, self.ctx)
        self.ctx = start
        node.orelse = self.visit_list(node.orelse)
        return node

    visit_AsyncFor = visit_While = visit_For

    def visit_Break(self, node: ast.Break | ast.Continue) -> ast.AST:
        if self.tracking and self.loops:
            keyword = "break" if isinstance(node, ast.Break) else "continue"
            start = self.loops[-1]
            if start is not None and self.ctx is not None and settle(start) != settle(self.ctx):
                raise self.error(
                    f"'{keyword}' in {describe(self.ctx)}, but the loop's body starts in "
                    f"{describe(start)}; close what this iteration opened before the '{keyword}'",
                    node,
                )
            self.ctx = None
        return node

    visit_Continue = visit_Break

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        self.generic_visit(node)  # (in place, as NodeTransformer's does)
        if self.tracking:
            self.ctx = None  # the output is not used
        return node

    def visit_Match(self, node: ast.Match) -> ast.AST:
        if not self.tracking:
            return self.generic_visit(node)
        node.subject = self.visit(node.subject)
        start = self.ctx
        ends = []
        for case in node.cases:
            self.ctx = start
            self.visit(case)
            ends.append((f"the 'case' at line {case.pattern.lineno}", self.ctx))
        last = node.cases[-1] if node.cases else None
        if not (last and last.guard is None and _irrefutable(last.pattern)):
            ends.append(("the way around every 'case'", start))
        self.ctx = self.merge(node, "match", ends)
        return node

    # -- output pieces ---------------------------------------------------------
    #
    # An output statement's output is a list of pieces in the order it is
    # produced: trusted literal text (_Text) and values (_Value), each value
    # with the rule that formats it: as a statement's value (_RAW), as an
    # f-string or str.format field (_FIELD, with its conversion and spec) or
    # as a %s (_PERCENT).  f-strings, and % and .format() on literals with
    # fields that can be reproduced exactly, are taken apart into pieces;
    # everything else is one _RAW value.  output() appends the pieces in one
    # call, each value through value_code(): the one place that decides what
    # a value becomes, so that it is the same for every style of template.
    # Consecutive output statements are joined into one call afterwards
    # (join_outputs), where no handler in the template could see the output
    # list between them.

    def pieces(self, value: ast.expr) -> list[_Piece] | None:
        """The pieces of an f-string, ``lit % args`` or ``lit.format()``; None for others."""
        if _TemplateStr is not None and isinstance(value, _TemplateStr):
            value = _as_fstring(value)
        if isinstance(value, ast.JoinedStr):
            return self.fstring_pieces(value)
        if (
            isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Mod)
            and isinstance(value.left, ast.Constant)
            and type(value.left.value) is str
        ):
            return self.percent_pieces(value)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "format"
            and isinstance(value.func.value, ast.Constant)
            and type(value.func.value.value) is str
        ):
            return self.format_pieces(value)
        return None

    def fstring_pieces(self, node: ast.JoinedStr) -> list[_Piece]:
        pieces: list[_Piece] = []
        for part in node.values:
            text = _text_of(part)
            if text is not None:
                pieces.append(_Text(text, part))
            elif isinstance(part, ast.FormattedValue):
                spec = None if _empty_spec(part) else self.spec(part)
                if _is_fstring(part.value):
                    # Visited once its context is known: markup in text, a str elsewhere.
                    pieces.append(
                        _Value(part.value, part, _FIELD, part.conversion, spec, nested=True)
                    )
                else:
                    pieces.append(
                        _Value(self.visit(part.value), part, _FIELD, part.conversion, spec)
                    )
        return pieces

    def percent_pieces(self, node: ast.BinOp) -> list[_Piece] | None:
        assert isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
        parts = _percent_parts(node.left.value)
        if parts is None:
            return None
        holes = parts.count(None)
        right = node.right
        if holes == 1 and not isinstance(right, (ast.Tuple, ast.Starred)):
            # One value, whatever it turns out to be: a tuple or an unusual type
            # goes to percent_output(), which is given the whole format.
            fmt = _name(self.hoist(node.left), node.left)
            return _fill(parts, node.left, [_Value(self.visit(right), right, _PERCENT, fmt=fmt)])
        if (
            isinstance(right, ast.Tuple)
            and len(right.elts) == holes
            and holes > 0
            and not any(isinstance(e, ast.Starred) for e in right.elts)
        ):
            values = self.evaluated_first(right.elts, _PERCENT, list(range(holes)))
            return _fill(parts, node.left, values)
        return None

    def format_pieces(self, node: ast.Call) -> list[_Piece] | None:
        assert isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Constant)
        assert isinstance(node.func.value.value, str)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            return None
        names = [k.arg for k in node.keywords]
        fields = _format_fields(node.func.value.value, len(node.args), names)
        if fields is None:
            return None
        order = [
            part if isinstance(part, int) else len(node.args) + names.index(part[0])
            for part in fields
            if not isinstance(part, str)
        ]
        if not order:
            return None  # no field: the arguments are evaluated for nothing, as written
        arguments = [*node.args, *(k.value for k in node.keywords)]
        filled = iter(self.evaluated_first(arguments, _FIELD, order))
        return [
            _Text(part, node.func.value) if isinstance(part, str) else next(filled)
            for part in fields
        ]

    def evaluated_first(
        self, expressions: list[ast.expr], rule: int, order: list[int]
    ) -> list[_Value]:
        """The values for fields that use *expressions* in *order*, all evaluated first.

        As ``%`` and ``str.format`` do, every argument is evaluated before any
        is formatted.  Arguments used once each, in order: the first field is
        ``first_of(a, (t2 := b), ...)``, the others read the temporaries (no
        tuple to make and free).  Otherwise the first field evaluates them all
        into a tuple (``(t := (a, b))[i]``) and the others index it.
        """
        if len(expressions) == 1 and order == [0]:
            return [_Value(self.visit(expressions[0]), expressions[0], rule)]
        if order == list(range(len(expressions))):
            head, *rest = expressions
            head_code = self.visit(head)
            temps = [self.temporary() for _ in rest]
            kept = [
                _located(ast.NamedExpr(_name(t, e, ast.Store()), self.visit(e)), e)
                for t, e in zip(temps, rest, strict=True)
            ]
            call = _call(_name("_ptl_first_of", head), [head_code, *kept], head)
            return [
                _Value(call, head, rule),
                *(_Value(_name(t, e), e, rule) for t, e in zip(temps, rest, strict=True)),
            ]
        temp = self.temporary()
        first = expressions[order[0]]
        everything = _located(
            ast.Tuple([self.visit(e) for e in expressions], ast.Load()), expressions[0]
        )
        held = _located(ast.NamedExpr(_name(temp, first, ast.Store()), everything), first)
        values = []
        for position, index in enumerate(order):
            ref = expressions[index]
            source = held if position == 0 else _name(temp, ref)
            item = ast.Subscript(source, _located(ast.Constant(index), ref), ast.Load())
            values.append(_Value(_located(item, ref), ref, rule))
        return values

    def temporary(self) -> str:
        self.temporaries += 1
        return f"_ptl_v{self.temporaries}"

    def output(
        self, pieces: list[_Piece], node: ast.stmt, last: ast.stmt | None = None
    ) -> ast.stmt:
        """One call that appends *pieces*: those of statement *node* (through *last*)."""
        items: list[ast.expr] = []
        for piece in _merged_text(pieces):
            if isinstance(piece, _Text):
                if piece.text:
                    literal = _located(ast.Constant(piece.text), piece.node)
                    items.append(_name(self.hoist(literal), piece.node))
            else:
                items.append(self.value_code(piece))
        last = last or node
        method = "append" if len(items) == 1 else "extend"
        if last.lineno != node.lineno:
            # Statements of several lines joined: the call runs after every piece is
            # evaluated, so it must be at the last line for a debugger or tracer to see
            # each line once, in order.  A method call runs at its first line (CPython
            # locates it at the attribute), a call of a name at the call's own place.
            func: ast.expr = _name(_EXTEND, node)
            self.binds_extend = True
        else:
            func = _located(ast.Attribute(_name(_OUT, node), method, ast.Load()), node)
        if method == "extend" or last.lineno != node.lineno:
            items = [_located(ast.Tuple(items, ast.Load()), last)]
        call = _located(ast.Call(func, items, []), last)
        statement = _located(ast.Expr(call), last)
        if not self.guarded and _SPLIT_OUTPUT:
            statement._ptl_pieces = pieces  # type: ignore[attr-defined]
        return statement

    def value_code(self, piece: _Value) -> ast.expr:
        """The expression that outputs one value by its piece's rule."""
        if piece.nested:
            piece.nested = False
            if piece.escaper is None:
                piece.value = self.visit(piece.value)
            else:
                piece.value = self.plain_fstring(piece.value)
        if piece.escaper is not None:
            return self.escaped(piece, piece.escaper, joined=True)
        node, expr = piece.node, piece.value
        if piece.rule == _RAW:
            return expr  # as it is: the final join escapes it
        if piece.conversion != -1 or piece.spec is not None:
            formatted = _call(
                _name("_ptl_format_field", node),
                [expr, _located(ast.Constant(piece.conversion), node),
                 piece.spec or _located(ast.Constant(""), node)],
                node,
            )  # fmt: skip
            return _call(_name("_ptl_htmltext", node), [formatted], node)
        # A str, int, float or htmltext goes to the output list as it is (one C
        # call that returns it); anything else is formatted now, by the rule of the
        # construct it came from.
        if piece.rule == _PERCENT:
            fmt = piece.fmt or _located(ast.Constant(None), node)
            return _call(_name("_ptl_percent_output", node), [expr, fmt], node)
        return _call(_name("_ptl_field_output", node), [expr], node)

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if self.kind is None:
            return self.generic_visit(node)
        if node.value is not None:
            raise self.error(
                "'return' with a value in a template; a template returns its output "
                "(use a bare 'return' to stop early)",
                node,
            )
        if self.finally_output is not None:
            raise self.error(
                "bare 'return' inside a 'try' whose 'finally' block produces output "
                f"(line {self.finally_output.lineno}): that output would be lost; "
                "move the 'return' out of the 'try' or the output out of the 'finally'",
                node,
            )
        self.check_end(self.ctx, node, node)
        if self.tracking:
            self.ctx = None
        node.value = self.joined(self.kind, node)
        return node

    def visit_With(self, node: ast.With | ast.AsyncWith) -> ast.AST:
        node.items = self.visit_list(node.items)
        # A context manager may swallow the exception (contextlib.suppress).
        with self.guarding(), self.catching("with", node):
            node.body = self.visit_list(node.body)
        return node

    visit_AsyncWith = visit_With

    def visit_Try(self, node: ast.Try) -> ast.AST:
        with self.guarding():
            return self.visit_guarded_try(node)

    def visit_guarded_try(self, node: ast.Try) -> ast.AST:
        output = _first_output(node.finalbody) if self.kind is not None else None
        # A bare return joins the output before the finally block runs.
        outer = self.finally_output
        if output is not None:
            self.finally_output = output
        try:
            start = self.ctx
            if node.handlers:
                with self.catching("try", node):
                    node.body = self.visit_list(node.body)
            else:
                node.body = self.visit_list(node.body)
            body_end = self.ctx
            handlers, ends = [], []
            for handler in node.handlers:
                # A handler is taken to start where the try did (an error before its output).
                self.ctx = start
                handlers.extend(self.visit_list([handler]))
                ends.append((f"the 'except' at line {handler.lineno}", self.ctx))
            node.handlers = handlers
            self.ctx = body_end
            node.orelse = self.visit_list(node.orelse)
            ends.insert(0, ("the 'try' block", self.ctx))
        finally:
            self.finally_output = outer
        if self.tracking:
            self.ctx = self.merge(node, "try", ends)
        node.finalbody = self.visit_list(node.finalbody)
        return node

    # (Same fields as Try; typeshed types the base method for TryStar alone on 3.11+.)
    visit_TryStar = visit_Try  # type: ignore[assignment, unused-ignore]

    # -- literals --------------------------------------------------------------

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if self.kind != "html" or type(node.value) is not str:
            return node
        if node is self.output_value:
            self.fragment(node, [node.value], [])
        return _name(self.hoist(node), node)

    def hoist(self, node: ast.Constant) -> str:
        assert type(node.value) is str  # (only str literals are hoisted)
        assign = self.literals.get(node.value)
        if assign is None:
            name = f"_ptl_lit_{len(self.literals)}"
            # Located by _add_prologue: at the template's line a breakpoint would stop here.
            call = ast.Call(ast.Name("_ptl_htmltext", ast.Load()), [ast.Constant(node.value)], [])
            assign = ast.Assign([ast.Name(name, ast.Store())], call)
            self.literals[node.value] = assign
        return _target_name(assign)

    def visit_TemplateStr(self, node: ast.expr) -> ast.AST:
        # In a template a t-string means what the same f-string means: in [html]
        # its literal parts are trusted and its values escaped; in [plain], text.
        if self.kind is None:
            return self.generic_visit(node)
        fstring = _as_fstring(node)
        if node is self.output_value:
            self.output_value = fstring
        visited: ast.AST = self.visit(fstring)
        return visited

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        if self.kind != "html":
            return self.generic_visit(node)
        text = _all_text(node.values)
        if text is not None:
            if node is self.output_value:
                self.fragment(node, [text], [])
            return self.visit_Constant(_located(ast.Constant(text), node))
        fields = [part for part in node.values if isinstance(part, ast.FormattedValue)]
        parts = [_text_of(part) for part in node.values]
        escapers = iter(self.fragment(node, parts, fields))
        for part in node.values:
            if not isinstance(part, ast.FormattedValue):
                continue
            escaper = next(escapers)
            if escaper is not None:
                spec = None if _empty_spec(part) else self.spec(part)
                value = (
                    self.plain_fstring(part.value)
                    if _is_fstring(part.value)
                    else self.visit(part.value)
                )
                piece = _Value(value, part, _FIELD, part.conversion, spec)
                part.value = self.escaped(piece, escaper)
                part.conversion = -1
                part.format_spec = None
            else:
                part.value = _call(
                    _name("_ptl_format_field", part),
                    [
                        self.visit(part.value),
                        _located(ast.Constant(part.conversion), part),
                        self.spec(part),
                    ],
                    part,
                )
                part.conversion = -1
                part.format_spec = None
        return _call(_name("_ptl_htmltext", node), [node], node)

    def spec(self, part: ast.FormattedValue) -> ast.expr:
        """The field's format spec as a plain str expression (never htmltext)."""
        spec = part.format_spec
        if spec is None:
            return _located(ast.Constant(""), part)
        assert isinstance(spec, ast.JoinedStr)  # (a format spec is an f-string)
        text = _all_text(spec.values)
        if text is not None:
            return _located(ast.Constant(text), spec)
        self.visit_spec_fields(spec)
        return spec

    def plain_fstring(self, node: ast.expr) -> ast.expr:
        """A literal f-string (or t-string) nested in a field outside text, as a plain str.

        Its markup was made for text: where it lands outside text (a URL, a
        script) the whole is a value, escaped there like any other.
        """
        fstring = _as_fstring(node) if not isinstance(node, ast.JoinedStr) else node
        self.visit_spec_fields(fstring)
        return fstring

    def visit_spec_fields(self, spec: ast.JoinedStr) -> None:
        # The spec stays an f-string (so a str); the expressions in it are template code.
        for field in spec.values:
            if isinstance(field, ast.FormattedValue):
                field.value = self.visit(field.value)
                if isinstance(field.format_spec, ast.JoinedStr):  # (or None)
                    self.visit_spec_fields(field.format_spec)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        literal = (
            self.kind == "html"
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and type(node.left.value) is str
        )
        if self.warnings is not None and self.tracking and isinstance(node.op, ast.Add):
            self.check_concatenation(node)
        # A format the compiler cannot read (str reads more: "%(f())s", "%.s") is not
        # planned here: htmltext's own % plans it at run time, never HTML-only.
        left = node.left
        readable = (
            literal
            and isinstance(left, ast.Constant)
            and isinstance(left.value, str)
            and _percent_holes(left.value) is not None
        )
        visited = self.visit_percent(node)
        if not literal or (self.tracking and not readable):
            return visited
        return self.formatted("_ptl_html_mod", [node.left, node.right], [], node)

    def check_concatenation(self, node: ast.BinOp) -> None:
        """Warn where ``+`` adds a value to markup that ends outside text.

        ``htmltext + value`` escapes the value as HTML wherever it lands; a format
        (an f-string, ``%``) would give it its context's escaper.  The chain is
        followed from where the output is (an output statement's whole value) or
        from text; a value in text or a quoted plain attribute is fine.
        """
        if id(node) in self.added:
            return
        operands = self.chain(node)
        if not any(_text_of(o) is not None or _is_fstring(o) for o in operands):
            return  # no literal: not markup this template wrote (numbers, str values)
        ctx = (self.ctx or TEXT) if node is self.output_value else TEXT
        self.follow_concatenation(operands, ctx, "+")

    def chain(self, value: ast.expr) -> list[ast.expr]:
        """The operands of "+" chain *value*, its "+" nodes marked as checked."""
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            self.added.add(id(value))
            return [*self.chain(value.left), *self.chain(value.right)]
        return [value]

    def follow_concatenation(
        self, operands: list[ast.expr], ctx: Context, operator: str
    ) -> Context | None:
        """Follow markup *operands* added in turn from *ctx*, warning for each value that
        lands outside text; the context after them, or None where it cannot be followed."""
        for operand in operands:
            try:
                text = _text_of(operand)
                if text is not None:
                    ctx = advance(ctx, text)
                    continue
                if _is_fstring(operand):
                    for part in operand.values:  # type: ignore[attr-defined]
                        part_text = _text_of(part)
                        ctx = after_value(ctx) if part_text is None else advance(ctx, part_text)
                    continue
            except ContextError:
                return None  # markup the compiler cannot follow: not this check's to report
            try:
                escaper = escaper_for(ctx)
            except ContextError as exc:
                self.warn_concatenation(operand, ctx, None, operator, str(exc))
                return None
            if escaper is not None:
                self.warn_concatenation(operand, ctx, escaper, operator)
            ctx = after_value(ctx)
        return ctx

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if self.warnings is not None and self.tracking:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.accumulators.pop(target.id, None)
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                start = self.accumulated(node.value)
                if start is not None:
                    self.accumulators[node.targets[0].id] = start
        return self.generic_visit(node)

    def accumulated(self, value: ast.expr) -> Context | None:
        """The context markup *value* ends in, if it starts an accumulation: a literal, a
        "+" chain with one, or a ``TemplateIO()``; None for anything else."""
        func = value.func if isinstance(value, ast.Call) else None
        if isinstance(func, (ast.Name, ast.Attribute)):
            name = func.id if isinstance(func, ast.Name) else func.attr
            return TEXT if name == "TemplateIO" else None
        operands = _added(value)
        if not any(_text_of(o) is not None or _is_fstring(o) for o in operands):
            return None
        warnings, self.warnings = self.warnings, []  # (the chain warns when it is visited)
        try:
            return self.follow_concatenation(operands, TEXT, "+")
        finally:
            self.warnings = warnings

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        target = node.target
        if self.warnings is not None and self.tracking and isinstance(target, ast.Name):
            ctx = self.accumulators.pop(target.id, None)
            if ctx is not None and isinstance(node.op, ast.Add):
                after = self.follow_concatenation(self.chain(node.value), ctx, "+=")
                if after is not None:
                    self.accumulators[target.id] = after
        return self.generic_visit(node)

    def warn_concatenation(
        self,
        node: ast.expr,
        ctx: Context,
        escaper: str | None,
        operator: str,
        refused: str = "",
    ) -> None:
        assert self.warnings is not None
        where = describe(settle(ctx))
        need = f"its escaper would be {escaper}" if escaper else f"no value may go there: {refused}"
        self.warnings.append(
            (
                node.lineno,
                node.col_offset,
                f"a value added with '{operator}' to markup lands in {where}, where it is only "
                f"HTML-escaped ({need}); write the markup and the value as one f-string "
                "or '%' format",
            )
        )

    def formatted(
        self, formatter: str, args: list[ast.expr], keywords: list[ast.keyword], node: ast.expr
    ) -> ast.expr:
        """A call of *formatter* (an _HTML_FORMATTERS alias) in place of *node*."""
        self.formatters.add(formatter)
        return _located(ast.Call(_name(formatter, node), args, keywords), node)

    def visit_percent(self, node: ast.BinOp) -> ast.AST:
        if not (
            self.tracking
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and type(node.left.value) is str
        ):
            return self.generic_visit(node)
        holes = _percent_holes(node.left.value)
        if holes is None:
            return self.generic_visit(node)  # str's % raises for it, as before
        parts: list[str | None] = []
        for text, hole in holes:
            parts.append(text)
            if hole is not None:
                parts.append(None)
        conversions = [hole for _, hole in holes if hole is not None]
        fields = _percent_fields(node.left.value)
        numeric = [_digits_only(field) for field in fields]
        escapers = self.fragment(node, parts, [node] * len(conversions), numeric)
        wanted = [
            i
            for i, (escaper, digits) in enumerate(zip(escapers, numeric, strict=True))
            if escaper is not None and not digits
        ]  # fmt: skip
        # A dict display's str keys, read before visiting hoists them into names.
        dict_keys: dict[str, int] = {}
        if isinstance(node.right, ast.Dict):
            for index, key in enumerate(node.right.keys):
                if not (isinstance(key, ast.Constant) and type(key.value) is str):
                    if wanted:  # ("**m" or a computed key may replace an entry escaped here)
                        raise self.fragment_error(node)
                    continue
                if key.value in dict_keys and wanted:
                    raise self.fragment_error(node)  # (the last entry wins, at run time)
                dict_keys.setdefault(key.value, index)
        specs: list[str | None] = [None] * len(conversions)
        if wanted:
            # An escaped field's conversion, flags, width and precision are applied to the
            # value before its escaper (as an f-string's spec is); the format keeps a
            # plain %s for the escaped text (a precision must not cut an escape short).
            fmt = node.left.value
            for i in sorted(wanted, reverse=True):
                match = fields[i]
                after_key = match.start() + 1 if match.group(1) is None else match.end(1) + 1
                spec = "%" + fmt[after_key : match.end()]
                if spec != "%s":
                    specs[i] = spec
                    plain = "%s" if match.group(1) is None else f"%({match.group(1)})s"
                    fmt = fmt[: match.start()] + plain + fmt[match.end() :]
            node.left = _located(ast.Constant(fmt), node.left)
        self.generic_visit(node)  # in place: the BinOp stays this node
        if not wanted:
            return node
        right = node.right
        keys = [key for key, _ in conversions]
        if any(conversions[i][1] == "c" for i in wanted) or any(k == "*" for k in keys):
            raise self.fragment_error(node)
        if all(k is None for k in keys):
            if isinstance(right, ast.Tuple) and not any(
                isinstance(e, ast.Starred) for e in right.elts
            ):
                if len(right.elts) == len(conversions):
                    for i in wanted:
                        right.elts[i] = self.percent_escaped(right.elts[i], specs[i], escapers[i])
                return node  # a wrong count raises as str's % does
            if len(conversions) == 1:
                left = node.left
                whole = _name(left.id, left) if isinstance(left, ast.Name) else left
                self.helpers.add("_ptl_ctx_percent")
                value = _call(_name("_ptl_ctx_percent", right), [right, whole], right)
                escaped = self.percent_escaped(value, specs[0], escapers[0])
                node.right = _located(ast.Tuple([escaped], ast.Load()), right)
                return node
        elif all(k is not None for k in keys) and isinstance(right, ast.Dict):
            named = [k for k in keys if k is not None]  # (every field has a key here)
            uses: dict[str, set[tuple[str | None, str | None, str]]] = {}
            for i, (_, conversion) in enumerate(conversions):
                uses.setdefault(named[i], set()).add((escapers[i], specs[i], conversion))
            if any(len(uses[named[i]]) > 1 for i in wanted):
                # One dict value escaped two ways: the first escaper's markup would be
                # trusted where the second lands.
                raise self.error(
                    "a '%' key is used where HTML needs different escaping (or "
                    "formatting) of its value; give each place its own key",
                    node,
                )
            if all(named[i] in dict_keys for i in wanted) and None not in right.keys:
                for i in wanted:
                    index = dict_keys[named[i]]
                    right.values[index] = self.percent_escaped(
                        right.values[index], specs[i], escapers[i]
                    )
                return node
        raise self.fragment_error(node)

    def percent_escaped(self, value: ast.expr, spec: str | None, escaper: str | None) -> ast.expr:
        """*value* of a %-field escaped; *spec* (``%r``, ``%.5s``, ...) formats it first."""
        assert escaper is not None
        if spec is not None:
            self.helpers.add("_ptl_ctx_field")
            value = _call(
                _name("_ptl_ctx_field", value), [value, _located(ast.Constant(spec), value)], value
            )
        return self.escaped(_Value(value, value, _PERCENT), escaper)

    def fragment_error(self, node: _Spot) -> SyntaxError:
        return self.error(
            "cannot tell which value of this '%' format lands where HTML needs more than "
            "HTML escaping; give the values as a tuple of %s fields, or use an f-string",
            node,
        )

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        method = (
            func.attr
            if self.kind == "html"
            and isinstance(func, ast.Attribute)
            and func.attr in ("format", "format_map")
            and isinstance(func.value, ast.Constant)
            and type(func.value.value) is str
            else None
        )
        visited = self.visit_format(node)
        if method is None or (method == "format_map" and self.tracking):
            # (A literal's format_map() is not planned here: htmltext's plans it at run time.)
            return visited
        assert isinstance(func, ast.Attribute)  # (visited in place: func.value is the literal)
        alias = "_ptl_html_format" if method == "format" else "_ptl_html_format_map"
        return self.formatted(alias, [func.value, *node.args], node.keywords, node)

    def visit_format(self, node: ast.Call) -> ast.AST:
        if not (
            self.tracking
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)
            and type(node.func.value.value) is str
        ):
            return self.generic_visit(node)
        fmt = node.func.value.value
        try:
            parsed = list(_string.formatter_parser(fmt))
        except ValueError:
            parsed = []  # str.format raises for it, as before
        parts: list[str | None] = []
        for text, field, _spec, _conversion in parsed:
            parts.append(text)
            if field is not None:
                parts.append(None)
        parts.append("")
        escapers = self.fragment(node, parts, [node] * parts.count(None))
        self.generic_visit(node)  # (in place, as NodeTransformer's does)
        if all(e is None for e in escapers):
            return node
        # Plain fields: each argument used where one escaper fits is wrapped in it.
        simple = not any(isinstance(a, ast.Starred) for a in node.args) and all(
            k.arg is not None for k in node.keywords
        )
        names = [k.arg for k in node.keywords]
        fields = _format_fields(fmt, len(node.args), names) if simple else None
        used: dict[int, set[str | None]] = {}
        if fields is not None:
            holes = [f for f in fields if not isinstance(f, str)]
            for hole, escaper in zip(holes, escapers, strict=True):
                index = hole if isinstance(hole, int) else len(node.args) + names.index(hole[0])
                used.setdefault(index, set()).add(escaper)
        if fields is None or any(len(e) > 1 for e in used.values()):
            raise self.error(
                "a field of this .format() lands where HTML needs more than HTML escaping, "
                "and its values cannot be told apart (an attribute or index field, or one "
                "value in two contexts); use an f-string",
                node,
            )
        for index, (escaper,) in used.items():
            if escaper is None:
                continue
            if index < len(node.args):
                arg = node.args[index]
                node.args[index] = self.escaped(_Value(arg, arg, _FIELD), escaper)
            else:
                keyword = node.keywords[index - len(node.args)]
                keyword.value = self.escaped(_Value(keyword.value, keyword.value, _FIELD), escaper)
        return node


def _added(value: ast.expr) -> list[ast.expr]:
    """The operands of a "+" chain, in order (*value* alone if it is not one)."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return [*_added(value.left), *_added(value.right)]
    return [value]


def _digits_only(field: re.Match[str]) -> bool:
    """Whether %-conversion *field* can output only digits and a sign (``%d``, ``%05d``):
    followed as a number, not escaped; the rule is ``escaping.formatting.digits_only``'s,
    which htmltext's ``%`` follows at run time."""
    key = field.group(1)
    return digits_only(field.group() if key is None else "%" + field.group()[len(key) + 3 :])


_PERCENT_SPEC = re.compile(
    r"%(?:\(([^)]*)\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])"
)


def _percent_holes(fmt: str) -> list[tuple[str, tuple[str | None, str] | None]] | None:
    """*fmt*'s text before each conversion, with its (key or "*", conversion); None if invalid."""
    holes: list[tuple[str, tuple[str | None, str] | None]] = []
    text: list[str] = []
    index = 0
    while True:
        found = fmt.find("%", index)
        if found < 0:
            text.append(fmt[index:])
            holes.append(("".join(text), None))
            return holes
        text.append(fmt[index:found])
        match = _PERCENT_SPEC.match(fmt, found)
        if match is None:
            return None
        key, width, precision, conversion = match.groups()
        index = match.end()
        if conversion == "%":
            text.append("%")
            continue
        star = "*" if "*" in (width, precision) else key
        holes.append(("".join(text), (star, conversion)))
        text = []


def _is_fstring(node: ast.expr) -> bool:
    """Whether *node* is a literal f-string or t-string."""
    return isinstance(node, ast.JoinedStr) or (
        _TemplateStr is not None and isinstance(node, _TemplateStr)
    )


def _percent_fields(fmt: str) -> list[re.Match[str]]:
    """The conversion fields of *fmt* (valid, as _percent_holes found it), without ``%%``."""
    fields: list[re.Match[str]] = []
    index = fmt.find("%")
    while index >= 0:
        match = _PERCENT_SPEC.match(fmt, index)
        assert match is not None
        if match.group(4) != "%":
            fields.append(match)
        index = fmt.find("%", match.end())
    return fields


def _opts_out(body: list[ast.stmt]) -> bool:
    """Whether *body* (a module's or template's) sets OPT_OUT to False in its first statements."""
    for statement in body[:8]:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == OPT_OUT
            and isinstance(statement.value, ast.Constant)
            and statement.value.value is False
        ):
            return True
    return False


def _keyword(node: _Spot, keyword: str) -> ast.Pass:
    """A node spanning the *keyword* that starts statement *node*, to locate an error."""
    spot = ast.Pass()
    spot.lineno = spot.end_lineno = node.lineno
    spot.col_offset = node.col_offset
    spot.end_col_offset = node.col_offset + len(keyword)
    return spot


def _irrefutable(pattern: ast.pattern) -> bool:
    if isinstance(pattern, ast.MatchAs):
        return pattern.pattern is None or _irrefutable(pattern.pattern)
    if isinstance(pattern, ast.MatchOr):
        return any(_irrefutable(p) for p in pattern.patterns)
    return False


# -- scopes for tools: what the compiler would do, without rewriting ----------------------


@dataclass
class TemplateScopes:
    """What :func:`template_scopes` found, in source order; the tree is left as it was.

    Each kind is the scope's by the compiler's rules: ``"html"``, ``"plain"`` or
    ``None`` (ordinary code).  ``literals`` are the ``str`` constants, f-strings
    and t-strings the compiler would see in that kind (in ``"html"`` it makes
    them ``htmltext``); literals that stay ``str`` whatever the scope
    (annotations, ``match`` patterns, ``type`` aliases, format specs' text) and
    the parts of an f-string are not listed.  ``outputs`` are the expression
    statements whose value a template outputs, ``returns`` the ``return``
    statements in template scope.
    """

    templates: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]
    literals: list[tuple[ast.expr, str | None]]
    outputs: list[tuple[ast.Expr, str]]
    returns: list[tuple[ast.Return, str]]


class _ScopeScan(_ScopeWalker):
    def __init__(self, templates: Templates) -> None:
        super().__init__(templates)
        self.found = TemplateScopes([], [], [], [])

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        kind = self.templates.get((node.lineno, node.col_offset))
        if kind is not None:
            self.found.templates.append((node, kind))
        return super().visit_FunctionDef(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if self.kind is not None:
            self.found.outputs.append((node, self.kind))
        return self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if self.kind is not None:
            self.found.returns.append((node, self.kind))
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is str:
            self.found.literals.append((node, self.kind))
        return node

    def visit_JoinedStr(self, node: ast.expr) -> ast.AST:
        # As the transformer does: field values run in this scope, a spec's text stays str.
        self.found.literals.append((node, self.kind))
        for part in node.values:  # type: ignore[attr-defined]
            if not isinstance(part, ast.Constant):  # FormattedValue, Interpolation
                self.visit_field(part)
        return node

    visit_TemplateStr = visit_JoinedStr

    def visit_field(self, part: ast.AST) -> None:
        self.visit(part.value)  # type: ignore[attr-defined]
        spec = getattr(part, "format_spec", None)
        for inner in spec.values if spec is not None else ():
            if not isinstance(inner, ast.Constant):
                self.visit_field(inner)


def template_scopes(tree: ast.Module, templates: Templates) -> TemplateScopes:
    """The templates, literals, outputs and returns of *tree*, scoped as the compiler scopes.

    *tree* is ordinary Python (:func:`python_view`'s text, parsed; *templates*
    its map) or another dialect whose templates the caller has found, keyed by
    the ``(line, UTF-8 column)`` of each template's ``def`` (or ``async``).
    """
    scan = _ScopeScan(templates)
    scan.visit(tree)
    found = scan.found
    for items in (found.templates, found.literals, found.outputs, found.returns):
        items.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
    return found


# -- rules checked on the parsed tree, before it is rewritten ------------------------------

_TEMPLATE_SCOPE = True  # the code runs in a template's own frame
_OTHER_SCOPE = False


def _check(
    tree: ast.Module, templates: Templates, filename: str, lines: list[str]
) -> tuple[int, _Spot | None]:
    """Reject reserved names anywhere and ``yield`` that would run in a template's frame.

    A walk over every node (format specs, annotations and defaults included),
    iterative so that its depth costs no stack.  Each node is visited with
    the scope its code runs in: a def's decorators, defaults and annotations
    and a class's bases run in the enclosing scope; bodies run in their own.
    Returns the tree's depth and its deepest node that has a location.
    """
    best, deepest = 0, None
    stack: list[tuple[ast.AST, bool, int]] = [(tree, _OTHER_SCOPE, 1)]
    while stack:
        node, in_template, depth = stack.pop()
        if depth > best and (spot := _spot(node)) is not None:
            best, deepest = depth, spot
        for name, ref in _bound_names(node):
            if name.startswith(RESERVED_PREFIX):
                raise _syntax_error(
                    f"{name!r}: names starting with {RESERVED_PREFIX!r} are reserved "
                    "for the code the PTL compiler generates",
                    filename,
                    lines,
                    _name_location(name, ref, lines),
                )
        if isinstance(node, (ast.Yield, ast.YieldFrom)) and in_template:
            raise _syntax_error(
                "'yield' in a template; templates cannot be generators", filename, lines, node
            )
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = (node.lineno, node.col_offset) in templates
            body: Sequence[ast.AST] = node.body
        elif isinstance(node, ast.Lambda):
            own, body = _OTHER_SCOPE, [node.body]
        elif isinstance(node, ast.ClassDef):
            own, body = _OTHER_SCOPE, node.body
        else:
            own, body = in_template, []
        inner = {id(child) for child in body}
        # Reversed, so nodes are checked in source order and the first error is reported.
        for child in reversed(list(ast.iter_child_nodes(node))):
            stack.append((child, own if id(child) in inner else in_template, depth + 1))
    return best, deepest


def _bound_names(node: ast.AST) -> list[tuple[str, _Spot]]:
    """The identifiers *node* itself names (binds or reads), with the node to locate them by.

    Attribute names and keyword-argument names are left out: they belong to
    another object's namespace, never to the scopes the generated code uses.
    """
    if isinstance(node, ast.Name):
        return [(node.id, node)]
    if isinstance(node, ast.arg):
        return [(node.arg, node)]
    if isinstance(node, ast.alias):
        return [(node.asname or node.name.partition(".")[0], node)]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, node)]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [(name, node) for name in node.names]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [] if node.name is None else [(node.name, node)]
    if isinstance(node, ast.MatchMapping):
        return [] if node.rest is None else [(node.rest, node)]
    if sys.version_info >= (3, 12) and isinstance(  # PEP 695 type parameters
        node, (ast.TypeVar, ast.ParamSpec, ast.TypeVarTuple)
    ):
        return [(node.name, node)]
    return []


def _name_location(name: str, ref: _Spot, lines: list[str]) -> _Spot:
    """A node spanning *name* where it first appears at or after *ref*'s start."""
    line = lines[ref.lineno - 1]
    start = _char_col(line, ref.col_offset)
    found = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)").search(line, start)
    if found is None:
        return ref
    col = _byte_col(line, found.start())
    return ast.Name(
        id=name,
        lineno=ref.lineno,
        end_lineno=ref.lineno,
        col_offset=col,
        end_col_offset=col + len(name.encode("utf-8")),
    )


def _first_output(statements: list[ast.stmt]) -> ast.Expr | None:
    """The first expression statement in *statements*, outside nested scopes."""
    for stmt in statements:
        if isinstance(stmt, ast.Expr):
            return stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                found = _first_output([child])
            elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                found = _first_output(child.body)
            else:
                continue
            if found is not None:
                return found
    return None


def _as_list(result: ast.AST | list[ast.AST] | None) -> list[ast.AST]:
    if result is None:
        return []
    return result if isinstance(result, list) else [result]


def _syntax_error(message: str, filename: str, lines: list[str], node: _Spot) -> SyntaxError:
    lineno, end_lineno = node.lineno, node.end_lineno or node.lineno
    line = lines[lineno - 1]
    offset = _char_col(line, node.col_offset) + 1
    end_offset = _char_col(lines[end_lineno - 1], node.end_col_offset) + 1
    return SyntaxError(message, (filename, lineno, offset, line, end_lineno, end_offset))


def _split_lines(source: str | bytes, filename: str) -> list[str]:
    if isinstance(source, bytes):
        data = source
        try:
            source = decode_source(data)
        except UnicodeDecodeError as exc:
            raise _decode_error(exc, data, filename) from None
        except SyntaxError as exc:  # a bad coding cookie or undecodable first lines
            raise _cookie_error(exc, data, filename) from None
    # CPython reads source with universal newlines; so do the tokenizer and parser here.
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    return io.StringIO(source).readlines()


def _decode_error(exc: UnicodeDecodeError, source: bytes, filename: str) -> SyntaxError:
    start = source.rfind(b"\n", 0, exc.start) + 1
    end = source.find(b"\n", exc.start)
    line = source[start : len(source) if end < 0 else end + 1].decode("utf-8", "replace")
    lineno = source.count(b"\n", 0, exc.start) + 1
    offset = len(source[start : exc.start].decode("utf-8", "replace")) + 1
    message = f"source is not valid {exc.encoding}: {exc.reason}"
    return SyntaxError(message, (filename, lineno, offset, line, lineno, offset + 1))


def _cookie_error(exc: SyntaxError, source: bytes, filename: str) -> SyntaxError:
    first_lines = source.splitlines(keepends=True)[:2] or [b""]
    lineno = 1
    for number, line in enumerate(first_lines, 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            lineno = number
            break
        if b"coding" in line:
            lineno = number
            break
    text = first_lines[lineno - 1].decode("utf-8", "replace")
    return SyntaxError(exc.msg, (filename, lineno, 1, text, lineno, 2))


def _fill_text(exc: SyntaxError, original: list[str]) -> SyntaxError:
    """Show the .ptl line (not the pre-processed one) in *exc*, with a usable end."""
    if exc.lineno is not None and 0 < exc.lineno <= len(original):
        exc.text = original[exc.lineno - 1]
    # CPython marks an unknown end with 0 or -1; say "one character" instead.
    if exc.lineno is not None and exc.offset is not None:
        if (exc.end_lineno or 0, exc.end_offset or 0) <= (exc.lineno, exc.offset):
            exc.end_lineno, exc.end_offset = exc.lineno, exc.offset + 1
    return exc


def _tokenizer_error(exc: BaseException, filename: str, original: list[str]) -> SyntaxError:
    if isinstance(exc, SyntaxError):
        exc.filename = filename
        return _fill_text(exc, original)
    message, (row, col) = exc.args
    row = min(row, len(original))
    return SyntaxError(message, (filename, row, col + 1, original[row - 1] if row else None))


def parse_ptl(source: str | bytes, filename: str = "<ptl>") -> ast.Module:
    """Parse PTL *source* and return the transformed module AST (plain Python).

    Raises SyntaxError, located in the .ptl source, for invalid PTL.
    """
    original = _split_lines(source, filename)
    return _on_fresh_stack(_parse_lines, original, filename)[0]


def python_view(
    source: str | bytes, filename: str = "<ptl>"
) -> tuple[str, dict[tuple[int, int], str]]:
    """*source* as ordinary Python with every line and column unchanged, and its templates.

    Template annotations (``[html]``, ``[plain]``) are blanked and ``template``
    becomes ``def``; the templates map ``(line, UTF-8 column)`` of each
    template's ``def`` (or ``async``) to its kind.  For tools (linters) that
    read Python: nothing else is rewritten, so positions in the view are
    positions in the ``.ptl`` file.
    """
    lines = _split_lines(source, filename)
    templates, _ = _preprocess(lines)
    return "".join(lines), templates


def context_report(
    source: str | bytes, filename: str = "<ptl>"
) -> list[tuple[int, int, str, str | None]]:
    """Each value of the ``[html]`` templates in *source*: line, column, context, escaper.

    Columns count characters from 1; the escaper is a name in
    :mod:`ptl_wsgi.escapers`, None for plain HTML escaping.  Raises SyntaxError
    as compiling does (a value where none may go, unbalanced branches, ...).
    """
    original = _split_lines(source, filename)
    report: list[tuple[int, int, str, str | None]] = []
    _on_fresh_stack(_parse_lines, original, filename, report)
    return [
        (line, _char_col(original[line - 1], col) + 1, context, escaper)
        for line, col, context, escaper in report
    ]


def concatenation_warnings(
    source: str | bytes, filename: str = "<ptl>"
) -> list[tuple[int, int, str]]:
    """Where an ``[html]`` template adds a value with ``+`` to markup that ends outside text.

    Line, column (characters from 1) and message of each, for ``ptl-wsgi check``:
    ``'<a href="' + url + '">'`` HTML-escapes *url* (``htmltext``'s ``+`` cannot know
    where it lands), where a format would check and encode it.  Raises SyntaxError
    as compiling does.
    """
    original = _split_lines(source, filename)
    warnings: list[tuple[int, int, str]] = []
    _on_fresh_stack(_parse_lines, original, filename, None, warnings)
    return [
        (line, _char_col(original[line - 1], col) + 1, message) for line, col, message in warnings
    ]


def compile_ptl(source: str | bytes, filename: str = "<ptl>") -> CodeType:
    """Compile PTL *source* to a module code object whose filename is *filename*.

    Raises SyntaxError, located in the .ptl source, for invalid PTL.
    """
    original = _split_lines(source, filename)
    return _on_fresh_stack(_compile_lines, original, filename)


def _compile_lines(original: list[str], filename: str) -> CodeType:
    tree, depth, deepest = _parse_lines(original, filename)
    with _recursion_room(depth), _nesting_limit(filename, original, deepest):
        try:
            return compile(tree, filename, "exec", dont_inherit=True)
        except SyntaxError as exc:
            # Errors found by the compiler proper (e.g. 'nonlocal' misuse) carry no source line.
            raise _fill_text(exc, original) from None


def _parse_lines(
    original: list[str],
    filename: str,
    report: list[tuple[int, int, str, str | None]] | None = None,
    warnings: list[tuple[int, int, str]] | None = None,
) -> tuple[ast.Module, int, _Spot | None]:
    """The transformed tree, its depth and its deepest located node."""
    for lineno, line in enumerate(original, 1):
        if "\0" in line:
            # Python versions disagree (ValueError or an unlocated SyntaxError).
            offset = line.index("\0") + 1
            raise SyntaxError(
                "source code cannot contain null bytes",
                (filename, lineno, offset, line, lineno, offset + 1),
            )
    lines = list(original)
    templates, token_error = _preprocess(lines)
    text = "".join(lines)
    # CPython's own limits, under the caller's recursion limit, decide what is too deep.
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as exc:
        raise _fill_text(exc, original) from None
    except (RecursionError, MemoryError):
        raise _too_deep(filename, original, _deepest_after_all(text, filename)) from None
    if token_error is not None:
        # The parser accepted what the tokenizer rejected; trust the stricter one.
        raise _tokenizer_error(token_error, filename, original)
    depth, deepest = _check(tree, templates, filename, original)
    if depth * 4 > _user_recursion_limit():
        # Deep enough that compiling (not just parsing) may exceed CPython's limits.
        try:
            compile(text, filename, "exec", dont_inherit=True)
        except (RecursionError, MemoryError):
            raise _too_deep(filename, original, deepest) from None
        except SyntaxError:
            pass  # reported, better located, when the transformed tree is compiled
    with _recursion_room(depth), _nesting_limit(filename, original, deepest):
        transformer = _Transformer(
            templates,
            filename,
            original,
            contextual=not _opts_out(tree.body),
            report=report,
            warnings=warnings,
        )
        transformer.reads_frames = _reads_frames(tree)
        tree = transformer.visit(tree)
        # Literals of statements joined with their neighbours may be unused now.
        used = {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name)
            and n.id.startswith(("_ptl_lit_", _ESCAPER, "_ptl_ctx_", "_ptl_int", "_ptl_type"))
        }
        literals = [a for a in transformer.literals.values() if _target_name(a) in used]
        _add_prologue(tree, literals, _escaper_imports(transformer, used))
    return tree, depth, deepest


def _output_items(call: ast.Call) -> list[ast.expr]:
    """The pieces an output statement's call (``append(x)`` or ``extend((x, y))``) adds."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "append":
        return list(call.args)
    tuple_ = call.args[0]
    assert isinstance(tuple_, ast.Tuple)  # (output() gives extend a tuple display)
    return list(tuple_.elts)


def _reads_frames(tree: ast.AST) -> bool:
    """Whether *tree* names anything in _FRAME_READERS (as a name, an attribute or a string)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _FRAME_READERS:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _FRAME_READERS:
            return True
        if isinstance(node, ast.Constant) and node.value in _FRAME_READERS:
            return True  # getattr(builtins, "locals")
    return False


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _name_uses(node: ast.AST) -> Counter[str]:
    """How often each name occurs in *node*; a global or nonlocal name counts twice."""
    uses: Counter[str] = Counter()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            uses[inner.id] += 1
        elif isinstance(inner, (ast.Global, ast.Nonlocal)):
            uses.update(inner.names * 2)
    return uses


def _target_name(assign: ast.Assign) -> str:
    """The name a hoisted literal is assigned to."""
    target = assign.targets[0]
    assert isinstance(target, ast.Name)  # (_Transformer.hoist makes it so)
    return target.id


def _spot(node: ast.AST) -> _Spot | None:
    """*node* if it has a location (then it has all four attributes), else None."""
    return cast("_Spot", node) if hasattr(node, "lineno") else None


def _depth(tree: ast.AST) -> tuple[int, _Spot | None]:
    """How deep *tree* is, and its deepest node that has a location."""
    best, deepest = 0, None
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > best and (spot := _spot(node)) is not None:
            best, deepest = depth, spot
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return best, deepest


def _deepest_after_all(text: str, filename: str) -> _Spot | None:
    """Where source that CPython found too deep to parse is deepest, if it can tell."""
    try:
        with _recursion_room(len(text)):
            return _depth(ast.parse(text, filename))[1]
    except (RecursionError, MemoryError, SyntaxError):
        return None


def _too_deep(filename: str, original: list[str], deepest: _Spot | None) -> SyntaxError:
    message = (
        "too deeply nested to compile (Python gives up here: "
        "maximum recursion depth exceeded during compilation)"
    )
    if deepest is not None:
        return _syntax_error(message, filename, original, deepest)
    # Without a tree the longest line is where deep nesting almost always is.
    lineno = max(range(len(original)), key=lambda i: len(original[i]), default=0) + 1
    text = original[lineno - 1] if original else ""
    return SyntaxError(message, (filename, lineno, 1, text, lineno, len(text.rstrip("\n")) + 1))


@contextmanager
def _nesting_limit(filename: str, original: list[str], deepest: _Spot | None) -> Iterator[None]:
    """Turn a RecursionError left over despite :func:`_recursion_room` into a SyntaxError."""
    try:
        yield
    except RecursionError:
        raise _too_deep(filename, original, deepest) from None


# -- room to compile: a fresh stack, and a recursion limit that fits the tree -------------
#
# How deep CPython lets source nest depends on how much of the recursion limit the
# caller has used already, so the same file would compile at one import and not at
# another.  Compiling in a new thread starts every file at the same depth; the limit
# is raised (for the whole interpreter, so shared by every compilation) while a deep
# tree is transformed and compiled, because the transformer recurses per level and
# compiling an AST counts levels more strictly than compiling source does.

_STACK_SIZE = 64 * 1024 * 1024
_thread_lock = threading.Lock()
_limit_lock = threading.Lock()
_limit_users = 0
_limit_before = 0
_T = TypeVar("_T")


def _on_fresh_stack(func: Callable[..., _T], *args: Any) -> _T:
    """``func(*args)`` in a new thread with a large stack, so the caller's depth is irrelevant."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, func(*args)))
        except BaseException as exc:  # handed to the calling thread
            outcome.append((False, exc))

    thread: threading.Thread | None
    thread = threading.Thread(target=run, name="ptl-compile", daemon=True)
    with _thread_lock:
        # stack_size() applies to every thread started meanwhile: keep the window short.
        previous = threading.stack_size()
        try:
            threading.stack_size(_STACK_SIZE)
        except (ValueError, RuntimeError):
            pass
        try:
            thread.start()
        except RuntimeError:  # no threads here (interpreter shutdown, some platforms)
            thread = None
        finally:
            threading.stack_size(previous)
    if thread is None:
        run()
    else:
        thread.join()
    ok, value = outcome[0]
    if ok:
        result: _T = value  # func's
        return result
    outcome.clear()
    try:
        raise value
    finally:
        value = None  # no reference cycle through the traceback


def _user_recursion_limit() -> int:
    """The recursion limit as set by the program, not as raised by a compilation."""
    with _limit_lock:
        return _limit_before if _limit_users else sys.getrecursionlimit()


@contextmanager
def _recursion_room(depth: int) -> Iterator[None]:
    """A recursion limit high enough to transform and compile a tree *depth* levels deep."""
    global _limit_users, _limit_before
    # Measured: the transformer takes up to four frames per level.
    needed = 4 * depth + 200
    with _limit_lock:
        if _limit_users == 0:
            _limit_before = sys.getrecursionlimit()
        _limit_users += 1
        if needed > sys.getrecursionlimit():
            sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        with _limit_lock:
            _limit_users -= 1
            if _limit_users == 0:
                sys.setrecursionlimit(_limit_before)


def _escaper_imports(transformer: _Transformer, used: set[str]) -> list[ast.stmt]:
    """The import of the escapers the generated code uses; none in most modules."""
    names = sorted(
        [(name, _ESCAPER + name) for name in transformer.escapers if _ESCAPER + name in used]
        + [(name, alias) for name, alias in _CONTEXT_HELPERS if alias in transformer.helpers]
    )
    formatters = [
        ast.alias(name=name, asname=alias)
        for name, alias in _HTML_FORMATTERS
        if alias in transformer.formatters
    ]
    imports: list[ast.stmt] = []
    if formatters:
        imports.append(ast.ImportFrom(module="ptl_wsgi.html", names=formatters, level=0))
    if names:
        aliases = [ast.alias(name=name, asname=asname) for name, asname in names]
        imports.append(ast.ImportFrom(module="ptl_wsgi.escapers", names=aliases, level=0))
    return imports


def _is_future_import(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _add_prologue(
    tree: ast.Module, literals: list[ast.Assign], imports: Sequence[ast.stmt] = ()
) -> None:
    """Insert the runtime import and the hoisted literals after docstring and __future__."""
    body = tree.body
    index = 0
    if body and ast.get_docstring(tree, clean=False) is not None:
        index = 1
    while index < len(body) and _is_future_import(body[index]):
        index += 1
    # The prologue runs at the docstring's (or last __future__ import's) line, else line 1:
    # never at a line of the module's own code, so a line breakpoint there stops there.
    ref: ast.AST = ast.Pass(lineno=1, col_offset=0, end_lineno=1, end_col_offset=0)
    if index:
        ref = body[index - 1]
    runtime = ast.ImportFrom(
        module="ptl_wsgi.html",
        names=[ast.alias(name=name, asname=asname) for name, asname in _RUNTIME_NAMES],
        level=0,
    )
    markers = ast.ImportFrom(
        module="ptl_wsgi._runtime",
        names=[ast.alias(name=name, asname=asname) for name, asname in _MARKERS],
        level=0,
    )
    body[index:index] = [_located(node, ref) for node in (runtime, markers, *imports, *literals)]
