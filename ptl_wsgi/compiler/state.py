"""The transformer's state: the base of its sections (see :mod:`ptl_wsgi.compiler`)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ptl_wsgi.compiler.csp import InlineScripts
from ptl_wsgi.compiler.nodes import _as_list, _target_name
from ptl_wsgi.compiler.scopes import _ScopeWalker
from ptl_wsgi.compiler.source import Spot, Templates, syntax_error
from ptl_wsgi.escaping.context import TEXT, Context, describe, settle


class _TemplateState(_ScopeWalker):
    """The transformer's state, and what every section of it uses: located errors,
    scopes that carry the HTML context, handlers that could see the output list,
    hoisted literals and temporaries."""

    def __init__(
        self,
        templates: Templates,
        filename: str,
        lines: list[str],
        contextual: bool = True,
        report: list[tuple[int, int, str, str | None]] | None = None,
        warnings: list[tuple[int, int, str]] | None = None,
        csp: list[tuple[int, int, str, str]] | None = None,
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
        # What a strict CSP forbids (line, column, kind, name), for `check --csp`; in a
        # module or template that asks for the strict mode (compiler.csp), errors.
        self.csp = csp
        self.csp_strict = False  # in the template being visited
        self.csp_module_strict = False
        # Where the CSP nonce goes in the literal parts of the last output value formatted
        # whole (empty: nowhere), and the first tag that takes it.
        self.fragment_nonces: tuple[tuple[int, ...], ...] = ()
        self.fragment_tag = ""
        # The template's literals evaluated out of place that take the nonce: where their
        # values join output (ids of csp.WrittenFlows' sinks, and those seen in text), the
        # places that could carry a nonce to a value (open literals, sinks out of text), and
        # the nodes that insert it (switched off at the template's end if any).
        self.nonce_sinks: dict[int, ast.expr] = {}
        self.sinks_in_text: set[int] = set()
        self.nonce_leaks: list[tuple[str, str, Spot]] = []
        self.nonce_gates: list[ast.expr] = []
        self.inline_scripts: InlineScripts | None = None  # for `csp-hashes`
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

    def taken_nonces(self) -> tuple[tuple[int, ...], ...]:
        """The nonce slots of the last output value formatted whole, forgotten here."""
        nonces, self.fragment_nonces = self.fragment_nonces, ()
        return nonces

    def error(self, message: str, node: Spot) -> SyntaxError:
        return syntax_error(message, self.filename, self.lines, node)

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

    def header(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Pass:
        """A node spanning a template's header line, to locate errors about the whole template."""
        header = ast.Pass()
        header.lineno = header.end_lineno = node.lineno
        header.col_offset = node.col_offset
        header.end_col_offset = len(self.lines[node.lineno - 1].rstrip().encode("utf-8"))
        return header

    def temporary(self) -> str:
        self.temporaries += 1
        return f"_ptl_v{self.temporaries}"

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
