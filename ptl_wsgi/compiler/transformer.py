"""The transformer: template bodies rewritten, statement by statement and literal by literal."""

from __future__ import annotations

import ast
from typing import Any, cast

from ptl_wsgi.compiler import csp, switches
from ptl_wsgi.compiler.fusion import _LoopFusion, _name_uses, _output_items
from ptl_wsgi.compiler.names import _EXTEND, _JOIN, _MARK, _OUT, _opts_out
from ptl_wsgi.compiler.nodes import _call, _located, _name
from ptl_wsgi.compiler.pieces import (
    _FIELD,
    _RAW,
    _all_text,
    _as_fstring,
    _empty_spec,
    _is_fstring,
    _percent_holes,
    _Piece,
    _Text,
    _text_of,
    _Value,
)
from ptl_wsgi.escaping.context import TEXT, ends_in_text

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)


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


class _Transformer(_LoopFusion):
    """Rewrites template bodies; everything else stays ordinary Python.

    Scopes are :class:`_ScopeWalker`'s.  Rules that need no rewriting
    (reserved names, ``yield``) are :func:`_check`'s.  The sections are its bases:
    the state (:mod:`.state`), output pieces (:mod:`.pieces`), the contextual walk
    (:mod:`.contextual`) and loop fusion (:mod:`.fusion`); here are the template
    bodies' statements and literals.
    """

    def visit_template_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> None:
        tracking = kind == "html" and self.contextual and not _opts_out(node.body)
        outer, self.template = self.template, node
        outer_strict = self.csp_strict
        self.csp_strict = tracking and (self.csp_module_strict or csp.asks_strict(node.body))
        if self.inline_scripts is not None:
            self.inline_scripts.interrupt()
        outer_nonces = self.nonce_sinks, self.sinks_in_text, self.nonce_leaks, self.nonce_gates
        self.nonce_sinks, self.sinks_in_text, self.nonce_leaks, self.nonce_gates = {}, set(), [], []
        if tracking:
            flows = csp.WrittenFlows(node.body, self.reads_frames)
            for literal in flows.literals:
                if id(literal) in flows.units:
                    literal._ptl_unit = True  # type: ignore[attr-defined]
            for literal in flows.unwritten():
                literal._ptl_used = True  # type: ignore[attr-defined]
            self.nonce_sinks = flows.sinks
        try:
            with self.scope(kind, tracking):
                node.body = self.visit_list(node.body)
                self.check_end(self.ctx, node, node)
            self.settle_nonces()
        finally:
            self.template = outer
            self.csp_strict = outer_strict
            self.nonce_sinks, self.sinks_in_text, self.nonce_leaks, self.nonce_gates = outer_nonces
        self.wrap_template(node, kind)

    def wrap_template(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> None:
        first = node.body[0]
        prologue = ast.Assign([_name(_OUT, first, ast.Store())], ast.List([], ast.Load()))
        # The final join reports errors (a value whose __str__ fails) at the header.
        header = self.header(node)
        self.binds_extend = False
        self.fusing = (
            kind == "html"
            and switches.SPLIT_OUTPUT
            and switches.FUSE_LOOPS
            and not self.reads_frames
        )
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

    @staticmethod
    def joined(kind: str, ref: ast.AST) -> ast.Call:
        return _call(_name(_JOIN[kind], ref), [_name(_OUT, ref)], ref)

    # -- statements in template bodies -----------------------------------------

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if self.kind is None:
            return self.generic_visit(node)
        if id(node.value) in self.nonce_sinks:  # (markup made out of place: in text only)
            self.sink(node.value, self.ctx if self.tracking else None)
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
                elif self.ctx is not None and not ends_in_text(self.ctx):
                    value.elt = _call(_name("_ptl_outside_text", node), [value.elt], node)
            func = ast.Attribute(_name(_OUT, node), "extend", ast.Load())
            return _located(ast.Expr(_call(func, [value], node)), node)
        pieces: list[_Piece] | None = (
            self.pieces(node.value) if self.kind == "html" and switches.SPLIT_OUTPUT else None
        )
        if (
            pieces is None
            and self.kind == "html"
            and switches.SPLIT_OUTPUT
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
            # A literal output whole: the nonce goes in it as in a piece of text.
            text = _Text(node.value, node, (self.taken_nonces() or ((),))[0])
            return self.nonced(_name(self.hoist(node), node), text)
        if self.tracking and not getattr(node, "_ptl_unwritten", False):
            # Trusted markup evaluated here, written out later or elsewhere: the nonce goes
            # in where it is evaluated (in a nonce scope), as it would where it is output.
            slots = self.evaluated_nonces(node.value, node)
            if slots:
                start = getattr(node, "_ptl_from", TEXT)
                literal, text = _name(self.hoist(node), node), _Text(node.value, node, slots)
                nonced = self.nonced(literal, text, start is not None and start != TEXT)
                self.nonce_gates.append(nonced)
                return nonced
        return _name(self.hoist(node), node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        # A literal compared with (or looked for in a tuple, list, set or dict) is not
        # written out: it is left as it is.
        for operand in (node.left, *node.comparators):
            csp.mark_unwritten(operand)
        return self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        csp.mark_unwritten(node.slice)  # (a key, not written out)
        return self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        for key in node.keys:
            if key is not None:
                csp.mark_unwritten(key)
        return self.generic_visit(node)

    def visit_TemplateStr(self, node: ast.expr) -> ast.AST:
        # In a template a t-string means what the same f-string means: in [html]
        # its literal parts are trusted and its values escaped; in [plain], text.
        if self.kind is None:
            return self.generic_visit(node)
        fstring = _as_fstring(node)
        if node is self.output_value:
            self.output_value = fstring
        for mark in ("_ptl_from", "_ptl_msgid", "_ptl_unwritten", "_ptl_used", "_ptl_unit"):
            if hasattr(node, mark):
                setattr(fstring, mark, getattr(node, mark))
        visited: ast.AST = self.visit(fstring)
        return visited

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        if self.kind != "html":
            return self.generic_visit(node)
        text = _all_text(node.values)
        if text is not None:
            constant = _located(ast.Constant(text), node)
            for mark in ("_ptl_from", "_ptl_msgid", "_ptl_unwritten", "_ptl_used", "_ptl_unit"):
                if hasattr(node, mark):
                    setattr(constant, mark, getattr(node, mark))
            if node is self.output_value:
                self.output_value = constant
            return self.visit_Constant(constant)
        own = node is self.output_value
        fields = [part for part in node.values if isinstance(part, ast.FormattedValue)]
        parts = [_text_of(part) for part in node.values]
        escapers = iter(self.fragment(node, parts, fields))
        nonces = self.taken_nonces()
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
        if nonces:
            node.values = self.nonce_fields(node.values, nonces, own)
            return _call(_name("_ptl_nonce_marked", node), [node], node)
        return _call(_name("_ptl_htmltext", node), [node], node)

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
        own = node is self.output_value
        if isinstance(node.op, ast.Add) and self.tracking:
            self.follow_chain(node)
        visited = self.visit_percent(node)
        nonces = getattr(node, "_ptl_nonces", ())  # (visit_percent's, where output or not)
        if not literal or (self.tracking and not readable):
            return visited  # (htmltext's % plans it at run time, and puts the nonce in)
        args = [node.left, node.right]
        if nonces:
            # The nonce goes in at these slots of the format's texts, per render.
            slots = _located(ast.Constant(cast(Any, nonces)), node)
            if not own:
                self.nonce_gates.append(slots)
            args.append(slots)
        return self.formatted("_ptl_html_mod", args, [], node)

    def formatted(
        self, formatter: str, args: list[ast.expr], keywords: list[ast.keyword], node: ast.expr
    ) -> ast.expr:
        """A call of *formatter* (an _HTML_FORMATTERS alias) in place of *node*."""
        self.formatters.add(formatter)
        return _located(ast.Call(_name(formatter, node), args, keywords), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if self.kind == "html" and (self.csp is not None or self.csp_strict):
            for key, name in csp.attrs_events(node):
                self.csp_finding("attrs-event", name, key)
        if self.kind == "html":
            csp.mark_call_arguments(node)
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
