"""Output statements as pieces: literal text and values, each with its formatting rule.

An output statement's output is a list of pieces in the order it is produced
(:class:`_Text` and :class:`_Value`); :class:`_OutputPieces` takes f-strings, ``%``
and ``.format()`` on literals apart into them and emits one call that appends
them.  How the compiler reads literal ``%`` formats (with ``escaping.printf``) is here.
"""

from __future__ import annotations

import _string
import ast
from dataclasses import dataclass
from typing import Any, cast

from ptl_wsgi.compiler import switches
from ptl_wsgi.compiler.names import _ESCAPER, _EXTEND, _OUT, _layerless
from ptl_wsgi.compiler.nodes import _call, _located, _name
from ptl_wsgi.compiler.state import _TemplateState
from ptl_wsgi.escaping.formatting import digits_only
from ptl_wsgi.escaping.printf import PercentUnit, scan_percent
from ptl_wsgi.escaping.rules import INT_SAFE_BASES

# How an output value is formatted (see _Transformer.pieces).
_RAW, _FIELD, _PERCENT = 0, 1, 2


@dataclass
class _Text:
    """Trusted literal text of an output statement."""

    text: str
    node: ast.expr
    nonces: tuple[int, ...] = ()  # where the request's CSP nonce goes in text (offsets)


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
    in_text: bool = True  # lands in text itself (else in an attribute value or RCDATA)
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
    units, tail, complete = scan_percent(fmt)
    if not complete or any(unit.source != "%s" for unit in units):
        return None
    parts: list[str | None] = []
    for unit in units:
        parts.extend((unit.literal, None))
    parts.append(tail)
    return parts


def _merged_text(pieces: list[_Piece]) -> list[_Piece]:
    """*pieces* with each run of adjacent texts made one text (one hoisted literal)."""
    merged: list[_Piece] = []
    for piece in pieces:
        if isinstance(piece, _Text) and merged and isinstance(merged[-1], _Text):
            first = merged[-1]
            shifted = tuple(len(first.text) + slot for slot in piece.nonces)
            merged[-1] = _Text(first.text + piece.text, first.node, first.nonces + shifted)
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


def _digits_only(field: PercentUnit) -> bool:
    """Whether %-conversion *field* can output only digits and a sign (``%d``, ``%05d``):
    followed as a number, not escaped; the rule is ``escaping.formatting.digits_only``'s,
    which htmltext's ``%`` follows at run time."""
    return digits_only(field.field)


# The conversions str's % knows; "%" (with flags or a width) is a literal percent.
_CONVERSIONS = frozenset("diouxXeEfFgGcrsa%")


def _compiler_reads(unit: PercentUnit) -> bool:
    """Whether the compiler plans a literal format with *unit* (htmltext's % plans the rest).

    Narrower than str (and the run-time cut): no parentheses in a key, digits after a
    ``.``, one length modifier (what that leaves to htmltext's %: finding 1 of
    tests/escaping/test_escaping_attack_findings.py).
    """
    return (
        (unit.key is None or ")" not in unit.key)
        and unit.precision != ""
        and len(unit.length) <= 1
        and unit.conversion in _CONVERSIONS
    )


def _percent_units(fmt: str) -> tuple[list[PercentUnit], str] | None:
    """*fmt*'s units and the text after the last, if the compiler reads every unit."""
    units, tail, complete = scan_percent(fmt)
    if not complete or not all(_compiler_reads(unit) for unit in units):
        return None
    return units, tail


def _percent_holes(fmt: str) -> list[tuple[str, tuple[str | None, str] | None]] | None:
    """*fmt*'s text before each conversion, with its (key or "*", conversion); None if invalid."""
    read = _percent_units(fmt)
    if read is None:
        return None
    units, tail = read
    holes: list[tuple[str, tuple[str | None, str] | None]] = []
    text: list[str] = []
    for unit in units:
        text.append(unit.literal)
        if unit.conversion == "%":
            text.append("%")
            continue
        holes.append(("".join(text), ("*" if unit.stars else unit.key, unit.conversion)))
        text = []
    text.append(tail)
    holes.append(("".join(text), None))
    return holes


def _is_fstring(node: ast.expr) -> bool:
    """Whether *node* is a literal f-string or t-string."""
    return isinstance(node, ast.JoinedStr) or (
        _TemplateStr is not None and isinstance(node, _TemplateStr)
    )


def _percent_fields(fmt: str) -> list[PercentUnit]:
    """The conversion fields of *fmt* (valid, as _percent_holes found it), without ``%%``."""
    read = _percent_units(fmt)
    assert read is not None
    return [unit for unit in read[0] if unit.conversion != "%"]


class _OutputPieces(_TemplateState):
    """Output statements as pieces, and the one call that appends them."""

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

    def output(
        self, pieces: list[_Piece], node: ast.stmt, last: ast.stmt | None = None
    ) -> ast.stmt:
        """One call that appends *pieces*: those of statement *node* (through *last*)."""
        items: list[ast.expr] = []
        for piece in _merged_text(pieces):
            if isinstance(piece, _Text):
                if piece.text:
                    literal = _located(ast.Constant(piece.text), piece.node)
                    items.append(self.nonced(_name(self.hoist(literal), piece.node), piece))
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
        if not self.guarded and switches.SPLIT_OUTPUT:
            statement._ptl_pieces = pieces  # type: ignore[attr-defined]
        return statement

    def nonced(self, literal: ast.Name, piece: _Text, placed: bool = False) -> ast.expr:
        """*literal*, or where its text takes the CSP nonce, the markup that carries
        those slots in a nonce scope (the literal itself outside one):
        ``(_ptl_nonced(lit, slots) if _ptl_nonce_used[0] else lit)``: until a process
        enters a nonce scope (CSP off), a list lookup.  *placed*: the slots were found
        from where a ``+`` chain puts the literal, not from text."""
        if not piece.nonces:
            return literal
        node = piece.node
        self.helpers.update(("_ptl_nonce_used", "_ptl_nonced"))
        test = ast.Subscript(
            _name("_ptl_nonce_used", node), _located(ast.Constant(0), node), ast.Load()
        )
        slots = _located(ast.Constant(cast(Any, piece.nonces)), node)  # (a tuple constant)
        args: list[ast.expr] = [_name(literal.id, node), slots]
        if placed:
            args.append(_located(ast.Constant(True), node))
        insert = _call(_name("_ptl_nonced", node), args, node)
        return _located(ast.IfExp(_located(test, node), insert, literal), node)

    def nonce_fields(
        self, values: list[ast.expr], nonces: tuple[tuple[int, ...], ...], own: bool = True
    ) -> list[ast.expr]:
        """An f-string's *values* with a field that marks each slot of its literal parts
        (*nonces*, one tuple per part, in order) for ``_ptl_nonce_marked``, which takes
        the marks out into slots its markup carries:
        ``(_ptl_nonce_mark() if _ptl_nonce_used[0] else "")``, empty outside a scope."""
        self.helpers.update(("_ptl_nonce_used", "_ptl_nonce_mark", "_ptl_nonce_marked"))
        parts = iter(nonces)
        out: list[ast.expr] = []
        for value in values:
            slots = next(parts) if _text_of(value) is not None else ()
            if not slots:
                out.append(value)
                continue
            text = cast(str, _text_of(value))
            start = 0
            for slot in slots:
                if slot > start:
                    out.append(_located(ast.Constant(text[start:slot]), value))
                test = ast.Subscript(
                    _name("_ptl_nonce_used", value), _located(ast.Constant(0), value), ast.Load()
                )
                attribute = _call(_name("_ptl_nonce_mark", value), [], value)
                empty = _located(ast.Constant(""), value)
                field = _located(ast.IfExp(_located(test, value), attribute, empty), value)
                if not own:  # (evaluated out of place: see _ContextualWalk.settle_nonces)
                    self.nonce_gates.append(field)
                out.append(_located(ast.FormattedValue(field, -1, None), value))
                start = slot
            if start < len(text):
                out.append(_located(ast.Constant(text[start:]), value))
        return out

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
            if not piece.in_text:
                # Markup that carries nonce slots keeps none outside text (escaping.nonce).
                return _call(_name("_ptl_outside_text", node), [expr], node)
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
            output = "_ptl_percent_output" if piece.in_text else "_ptl_percent_outside"
            return _call(_name(output, node), [expr, fmt], node)
        output = "_ptl_field_output" if piece.in_text else "_ptl_field_outside"
        return _call(_name(output, node), [expr], node)

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
