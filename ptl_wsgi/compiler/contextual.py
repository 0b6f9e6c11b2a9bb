"""The contextual walk: the HTML context followed through an ``[html]`` template's output.

Each value gets the escaper of the context it lands in (``ptl_wsgi.escaping.context``);
branches must end in the same context, loop bodies where they started, templates in text.
"""

from __future__ import annotations

import _string
import ast
from collections.abc import Sequence
from typing import Any, cast

from ptl_wsgi.compiler import csp
from ptl_wsgi.compiler.names import OPT_OUT
from ptl_wsgi.compiler.nodes import _call, _located, _name
from ptl_wsgi.compiler.pieces import (
    _FIELD,
    _PERCENT,
    _digits_only,
    _format_fields,
    _is_fstring,
    _OutputPieces,
    _percent_fields,
    _percent_holes,
    _Piece,
    _Text,
    _text_of,
    _Value,
)
from ptl_wsgi.compiler.source import Spot, char_col
from ptl_wsgi.escaping.context import (
    K_NOTE,
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
from ptl_wsgi.escaping.rules import K_URL, NONCE_ELEMENTS, takes_nonce


def _spot_in(node: Spot, text: str, offset: int, lines: list[str]) -> Spot:
    """Where *offset* of literal *text* is in the source, if its literal spells it as it
    is (one line, no escapes); else the literal's own place."""
    line = node.lineno
    start, end = node.col_offset, node.end_col_offset
    if node.end_lineno == line and end is not None and 0 < line <= len(lines):
        source = lines[line - 1].encode("utf-8")[start:end].decode("utf-8", "replace")
        quote = len(source) - len(source.lstrip("rRbBuUfFtT"))
        body = source[quote:]
        for mark in ('"""', "'''", '"', "'"):
            if body.startswith(mark) and body.endswith(mark) and "\\" not in body:
                if body[len(mark) : len(body) - len(mark)] == text:
                    col = start + len((source[:quote] + mark + text[:offset]).encode("utf-8"))
                    return ast.Pass(
                        lineno=line, col_offset=col, end_lineno=line, end_col_offset=col
                    )
                break
    return node


def _tag_at(text: str, slot: int) -> str:
    """The name of the start tag whose nonce slot is *slot* of *text* (for messages)."""
    start = text.rfind("<", 0, slot)
    name = text[start + 1 : slot].split(None, 1)[0] if start >= 0 else "script"
    return name.lower().rstrip("/") or "script"


def _added(value: ast.expr) -> list[ast.expr]:
    """The operands of a "+" chain, in order (*value* alone if it is not one)."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return [*_added(value.left), *_added(value.right)]
    return [value]


def _mark_chain(node: ast.expr) -> None:
    """Mark the "+" nodes of the chain *node* is the top of (as :func:`_added` reads it)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node._ptl_in_chain = True  # type: ignore[attr-defined]
        _mark_chain(node.left)
        _mark_chain(node.right)


def _inside_nonced(ctx: Context) -> bool:
    """Whether *ctx* is inside an element that takes the CSP nonce: in its start tag, or
    in the text of a ``<script>`` or ``<style>``."""
    return ctx.nonce or ctx.element in NONCE_ELEMENTS


def _in_text(ctx: Context | None) -> bool:
    """Whether *ctx* is plain text, where markup made out of place may take the nonce."""
    return ctx is not None and settle(ctx) == TEXT


def _unnonced_kind(node: ast.expr) -> str:
    """The finding of a literal whose tags take no nonce (see evaluated_nonces)."""
    if getattr(node, "_ptl_msgid", False):
        return "msgid-no-nonce"
    if getattr(node, "_ptl_used", False):
        return "used-no-nonce"
    return "added-no-nonce" if getattr(node, "_ptl_tainted", False) else "literal-no-nonce"


def _without_last_slot(nonces: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Per-part *nonces* without the last slot of all."""
    for index in range(len(nonces) - 1, -1, -1):
        if nonces[index]:
            return [*nonces[:index], nonces[index][:-1], *nonces[index + 1 :]]
    return nonces


def _keyword(node: Spot, keyword: str) -> ast.Pass:
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


class _ContextualWalk(_OutputPieces):
    """The HTML context followed through a template's output: branches, loops,
    formats and the ``+`` warnings of ``ptl-wsgi check``."""

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
                if self.inline_scripts is not None:
                    self.inline_scripts.text(ctx, piece.text, piece.node)
                slots: list[int] = []
                ctx = self.advanced(ctx, piece.text, piece.node, slots)
                piece.nonces = tuple(slots)
            else:
                if self.inline_scripts is not None:
                    self.inline_scripts.value()
                piece.escaper = self.escaper_at(ctx, piece.node)
                piece.in_text = ends_in_text(ctx)
                ctx = after_value(ctx)
        self.ctx = ctx

    def advanced(
        self, ctx: Context, text: str, node: Spot, slots: list[int] | None = None
    ) -> Context:
        """The context after literal *text*; *slots* gets where the CSP nonce goes in it."""
        findings: list[tuple[int, str, str]] | None = None
        if self.csp is not None or self.csp_strict:
            findings = []
        try:
            after = advance(ctx, text, slots=slots, findings=findings)
        except ContextError as exc:
            raise self.error(
                f"cannot follow this markup: {exc}; write it so it is not ambiguous", node
            ) from None
        for offset, kind, name in findings or ():
            self.csp_finding(kind, name, _spot_in(node, text, offset, self.lines))
        return after

    def evaluated_nonces(self, text: str, node: ast.expr) -> tuple[int, ...]:
        """Where the CSP nonce goes in literal *text* (at *node*), which is evaluated where
        it stands, not output there: it becomes markup, which is written out later or
        elsewhere (assigned, chosen, added with "+", passed to a call).  It is parsed
        from where its "+" chain puts it (``_ptl_from``, see :meth:`follow_chain`) or
        from text, as markup is.  Only an element the literal writes whole takes the
        nonce: one it leaves open (its tag or its text) would run whatever is added to it,
        values only HTML-escaped.  A msgid (``_ptl_msgid``) takes none either (its
        translation is looked up by its text).  Each is reported."""
        start = getattr(node, "_ptl_from", TEXT)
        slots: list[int] = []
        try:
            after = advance(TEXT if start is None else start, text, slots=slots)
        except ContextError:
            self.open_literal(node, None)
            return ()  # (markup that cannot be followed is refused where it is output)
        if getattr(node, "_ptl_unit", False) and start is not None:
            self.open_literal(node, after)
        if getattr(node, "_ptl_msgid", False) or getattr(node, "_ptl_used", False) or start is None:
            if slots or _inside_nonced(after):
                name = _tag_at(text, slots[0]) if slots else after.element
                self.csp_finding(_unnonced_kind(node), name, node)
            return ()
        if getattr(node, "_ptl_open_last", False):
            return tuple(slots[:-1])  # (follow_chain reported it)
        if _inside_nonced(after) and not hasattr(node, "_ptl_from"):
            self.csp_finding("literal-no-nonce", after.element, node)
            if not after.nonce:
                return tuple(slots[:-1])  # (the element open at the end: its tag's slot)
        return tuple(slots)

    def follow_chain(self, node: ast.BinOp) -> None:
        """Mark each literal operand of "+" chain *node* with the context it lands in
        (``_ptl_from``), from where output is (an output statement's whole value) or
        from text, so that a literal that closes a tag another one opened takes the
        nonce at its ``>``.  A value that lands in a tag that takes the nonce or in the
        text of a script or style (only HTML-escaped there) makes no literal of the
        chain take it (``_ptl_from`` None, ``_ptl_tainted``), as does a chain the
        compiler cannot follow; an element the chain leaves open takes none
        (``_ptl_open_last``).  Each is reported."""
        if getattr(node, "_ptl_in_chain", False):
            return
        operands = _added(node)
        _mark_chain(node)
        literals = [o for o in operands if _text_of(o) is not None or _is_fstring(o)]
        if not literals and not any(id(o) in self.nonce_sinks for o in operands):
            return
        ctx: Context | None = (self.ctx or TEXT) if node is self.output_value else TEXT
        tainted = False
        last: ast.expr | None = None  # the literal operand with the chain's last slot
        for operand in operands:
            if id(operand) in self.nonce_sinks:
                self.sink(operand, ctx)
            if operand in literals:
                operand._ptl_from = ctx  # type: ignore[attr-defined]
            if ctx is None:
                continue
            parts = operand.values if _is_fstring(operand) else [operand]  # type: ignore[attr-defined]
            try:
                for part in parts:
                    text = _text_of(part)
                    if text is not None:
                        slots: list[int] = []
                        ctx = advance(ctx, text, slots=slots)
                        last = operand if slots else last
                    elif operand in literals:
                        ctx = after_value(ctx)  # (an f-string's value, escaped for where it is)
                    elif _inside_nonced(ctx):
                        tainted = True
                    else:
                        escaper_for(ctx)  # (where no value may go, the chain is not followed)
                        ctx = after_value(ctx)
            except ContextError:
                ctx = None
            if tainted:
                break
        if node is not self.output_value:
            self.open_literal(node, None if tainted else ctx)
        if tainted or ctx is None:
            for operand in literals:
                operand._ptl_from = None  # type: ignore[attr-defined]
                operand._ptl_tainted = tainted  # type: ignore[attr-defined]
        elif _inside_nonced(ctx):
            self.csp_finding("literal-no-nonce", ctx.element, node)
            if not ctx.nonce and last is not None:
                last._ptl_open_last = True  # type: ignore[attr-defined]

    def open_literal(self, node: ast.expr, after: Context | None) -> None:
        """Note literal *node*, evaluated out of place, if it ends (in *after*) elsewhere
        than in text (None: where the compiler cannot follow it)."""
        if not _in_text(after):
            where = "markup the compiler cannot follow" if after is None else describe(after)
            self.nonce_leaks.append(("open-no-nonce", where, node))

    def sink(self, node: ast.expr, ctx: Context | None) -> None:
        """Note markup made out of place (*node*) joining output in *ctx*: it may carry
        a nonce only in text."""
        self.sinks_in_text.add(id(node))
        if not _in_text(ctx):
            where = "where the compiler cannot follow" if ctx is None else describe(ctx)
            self.nonce_leaks.append(("sink-no-nonce", where, node))

    def settle_nonces(self) -> None:
        """At a template's end: if a literal evaluated out of place could carry a nonce to
        where a value points (one left open, markup made out of place output elsewhere
        than in text, or where the compiler did not see), none takes it (fails closed)."""
        gates, self.nonce_gates = self.nonce_gates, []
        leaks, self.nonce_leaks = self.nonce_leaks, []
        for key, node in self.nonce_sinks.items():
            if key not in self.sinks_in_text:
                leaks.append(("sink-no-nonce", "where the compiler cannot follow", node))
        if not gates or not leaks:
            return
        for kind, where, spot in leaks:
            self.csp_finding(kind, where, spot)
        for gate in gates:
            if isinstance(gate, ast.IfExp):
                gate.test = _located(ast.Constant(False), gate)
            elif isinstance(gate, ast.Constant):
                gate.value = cast(Any, ())  # (a tuple constant: no slots)

    def csp_finding(self, kind: str, name: str, node: Spot) -> None:
        """Report what a strict CSP forbids (``check --csp``); an error in the strict mode."""
        if self.csp_strict and csp.blocks(kind):
            raise self.error(f"{csp.message(kind, name)} ({csp.STRICT} is set)", node)
        if self.csp is not None:
            self.csp.append((node.lineno, node.col_offset, kind, name))

    def escaper_at(self, ctx: Context | None, node: Spot) -> str | None:
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
        if (self.csp is not None or self.csp_strict) and ctx.nonce:
            # A value in a tag that gets the nonce: its src, its type, its attributes.
            rel = ctx.kind[1:] if ctx.element == "link" and ctx.kind.startswith("=") else None
            if ctx.element == "link" and rel is not None and not takes_nonce("link", rel):
                pass  # (a link its literal rel keeps without the nonce: no script, no style)
            elif ctx.element == "script" and ctx.attr == K_URL:
                self.csp_finding("script-src-value", "", node)
            elif ctx.attr == K_URL:
                self.csp_finding("url-value", ctx.element, node)
            elif escaper in ("tag_attrs", "attr_name") or ctx.attr == K_NOTE:
                kind = "link-value" if ctx.element == "link" and rel is None else "tag-value"
                self.csp_finding(kind, ctx.element, node)
        return escaper

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
        start = getattr(node, "_ptl_from", TEXT)  # (a "+" chain's operand: see follow_chain)
        ctx = (self.ctx if self.ctx is not None else TEXT) if own else (start or TEXT)
        escapers: list[str | None] = []
        nonces: list[tuple[int, ...]] = []  # per literal part, where the CSP nonce goes
        first = ""  # the first tag that takes one
        refs_left = iter(refs)
        numbers = iter(numeric or [False] * holes)
        for part in parts:
            if part is None:
                if self.inline_scripts is not None:
                    self.inline_scripts.value()
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
                if self.inline_scripts is not None and own:
                    self.inline_scripts.text(ctx, part, node)
                slots: list[int] = []
                ctx = self.advanced(ctx, part, node, slots)
                # Output where it stands or evaluated (markup written later): the callers
                # pass these on (visit_Constant, visit_BinOp, visit_JoinedStr), or report
                # that they cannot (visit_format).
                nonces.append(tuple(slots))
                if slots and not first:
                    first = _tag_at(part, slots[0])
        if not own and getattr(node, "_ptl_unit", False) and start is not None:
            self.open_literal(node, ctx)
        if own:
            self.ctx, self.output_value = ctx, None
        elif start is None or getattr(node, "_ptl_used", False):
            if first:
                self.csp_finding(_unnonced_kind(node), first, node)  # (see follow_chain)
            first = ""
        elif getattr(node, "_ptl_open_last", False) or (
            _inside_nonced(ctx) and not hasattr(node, "_ptl_from")
        ):
            # The element open at its end takes none: what is added to it could be anything.
            if not hasattr(node, "_ptl_from"):
                self.csp_finding("literal-no-nonce", ctx.element, node)
            if not ctx.nonce or hasattr(node, "_ptl_from"):
                nonces = _without_last_slot(nonces)
                first = first if any(nonces) else ""
        self.fragment_nonces = tuple(nonces) if first else ()
        self.fragment_tag = first
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
        # Not even a lone "<" held back: text to a browser at the page's end, but a
        # template's output is output in its callers, which take it to be balanced: the
        # markup after it would make that "<" a tag (and carry a CSP nonce into it).
        if not self.tracking or ctx is None or (ends_in_text(ctx) and not ctx.pending):
            return
        if ends_in_text(ctx):
            raise self.error(
                f"template {getattr(self.template, 'name', '')!r} ends in a lone '<': "
                "its callers' markup after it would make it a tag; write &lt;",
                self.header(template)
                if isinstance(template, (ast.FunctionDef, ast.AsyncFunctionDef))
                else node,
            )
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
        if self.inline_scripts is not None:
            self.inline_scripts.interrupt()
        node.test = self.visit(node.test)
        start = self.ctx
        node.body = self.visit_list(node.body)
        ends = [(f"the branch at line {node.lineno}", self.ctx)]
        self.ctx = start
        node.orelse = self.visit_list(node.orelse)
        label = "the 'else' branch" if node.orelse else "the way around it (no 'else')"
        ends.append((label, self.ctx))
        line = self.lines[node.lineno - 1]
        keyword = "elif" if line[char_col(line, node.col_offset) :].startswith("elif") else "if"
        self.ctx = self.merge(node, keyword, ends)
        return node

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.While) -> ast.AST:
        if not self.tracking:
            return self.generic_visit(node)
        if self.inline_scripts is not None:
            self.inline_scripts.interrupt()
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
        if self.inline_scripts is not None:
            self.inline_scripts.interrupt()
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
        node._ptl_nonces = self.taken_nonces()  # type: ignore[attr-defined]  # (visit_BinOp's)
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
                unit = fields[i]
                spec = unit.field
                if spec != "%s":
                    specs[i] = spec
                    plain = "%s" if unit.key is None else f"%({unit.key})s"
                    fmt = fmt[: unit.start] + plain + fmt[unit.end :]
            node.left = _located(ast.Constant(fmt), node.left)
        node.left._ptl_unwritten = True  # type: ignore[attr-defined]  # (fragment saw it)
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

    def fragment_error(self, node: Spot) -> SyntaxError:
        return self.error(
            "cannot tell which value of this '%' format lands where HTML needs more than "
            "HTML escaping; give the values as a tuple of %s fields, or use an f-string",
            node,
        )

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
        if self.taken_nonces():
            # str.format's text is not cut here as the twin cuts it: no nonce goes in.
            self.csp_finding("no-nonce", self.fragment_tag, node)
        node.func.value._ptl_unwritten = True  # type: ignore[attr-defined]  # (fragment saw it)
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
