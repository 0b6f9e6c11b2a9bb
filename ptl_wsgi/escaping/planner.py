"""Plans: which escaper each value between literal parts gets, cached per parts.

The compiler follows the context through a template's code; formatting at
run time (t-strings through ``htmlformat``) has only the literal parts, and
asks :func:`plan` here, which parses them once per distinct parts.
"""

from __future__ import annotations

from ptl_wsgi.escaping.context import (
    TEXT,
    ContextError,
    advance,
    after_number,
    after_value,
    describe,
    ends_in_text,
    escaper_for,
)
from ptl_wsgi.escaping.escapers import format_value
from ptl_wsgi.escaping.nonce import MARK, Follow, carries, inserted, mark, slots_of
from ptl_wsgi.escaping.rules import is_items, is_template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NamedTuple

    from ptl_wsgi.escaping.escapers import Escaper
else:
    from ptl_wsgi.escaping.context import NamedTuple  # (without typing: see there)

__all__ = ["Plan", "contextual_format", "needs_context", "plan", "with_marks"]


class Plan(NamedTuple):
    """The escaper name of each value (None: plain HTML escaping, as in text)."""

    names: tuple[str | None, ...]
    #: Every value lands where plain HTML escaping is exact (text, a quoted plain
    #: attribute value): the twins' own formatting is the contextual one.
    text_only: bool
    #: Where a CSP nonce attribute goes in each literal part (offsets, see
    #: ``context.advance``), or ``()`` when no tag of these parts takes one.
    nonces: tuple[tuple[int, ...], ...] = ()
    #: Which values land in text itself (not in a quoted attribute): where nested
    #: markup keeps its nonce slots.
    in_text: tuple[bool, ...] = ()


_PLANS: dict[tuple[tuple[str, ...], tuple[bool, ...]], Plan] = {}
_MAX_PLANS = 1024


def plan(strings: tuple[str, ...], numbers: tuple[bool, ...] = ()) -> Plan:
    """The plan for the values between literal *strings* (a t-string's or a format's).

    *numbers* marks values that are numbers (a format's ``%d``): followed as their
    digits (they may go where a name goes, ``<h%d>``), with no escaper.  Raises
    ValueError (:class:`~ptl_wsgi.escaping.context.ContextError`) where no value may
    go, or when the literal text does not end in text, naming the context.
    """
    key = (strings, numbers)
    found = _PLANS.get(key)
    if found is None:
        slots: list[tuple[int, ...]] = []
        in_text: list[bool] = []
        names = _names(strings, numbers, slots, in_text)
        nonces = tuple(slots) if any(slots) else ()
        found = Plan(names, all(name is None for name in names), nonces, tuple(in_text))
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()  # literal parts come from code, few; a flood is not kept
        _PLANS[key] = found
    return found


def _names(
    strings: tuple[str, ...],
    numbers: tuple[bool, ...],
    nonces: list[tuple[int, ...]],
    in_text: list[bool],
) -> tuple[str | None, ...]:
    ctx = TEXT
    names: list[str | None] = []
    for index, text in enumerate(strings[:-1]):
        slots: list[int] = []
        ctx = advance(ctx, text, slots=slots)
        nonces.append(tuple(slots))
        in_text.append(ends_in_text(ctx))
        try:
            if index < len(numbers) and numbers[index]:
                names.append(None)
                ctx = after_number(ctx)
                continue
            names.append(escaper_for(ctx))
        except ContextError as exc:
            raise ContextError(
                f"no value may go at value {index + 1} of this markup ({describe(ctx)}): "
                f"{exc}; write it in the literal, or give a whole tag or attribute as markup "
                "(htmltext)"
            ) from None
        ctx = after_value(ctx)
    if strings:
        slots = []
        ctx = advance(ctx, strings[-1], slots=slots)
        nonces.append(tuple(slots))
    if not ends_in_text(ctx):
        raise ContextError(
            f"this markup ends in {describe(ctx)}, not in text: a t-string or a format is "
            "parsed on its own, from text, so it must close the tag, attribute, script, "
            "style or comment it opens"
        )
    return tuple(names)


def needs_context(template: Any) -> bool:
    """Whether a text-only *template* still needs :func:`contextual_format`: a value is a
    nested Template (planned on its own) or items to join (which may hold Templates)."""
    for interpolation in template.interpolations:
        value = interpolation.value
        if (
            is_template(value)
            or carries(value)
            or (
                is_items(value)
                and interpolation.conversion is None
                and not interpolation.format_spec
            )
        ):
            return True
    return False


def contextual_format(
    template: Any,
    escapers: dict[str, Escaper],
    format_field: Callable[..., Any],
    join_items: bool = True,
    marks: bool = False,
) -> str:
    """A PEP 750 Template as markup text, each value escaped for the context it lands in.

    *escapers* and *format_field* are one twin's.  Conversion and format spec are
    applied first, then the escaper (which keeps markup where the language is HTML
    and escapes its text in a script or a style); a nested Template is
    formatted the same way, kept as markup in a text-like context and escaped as
    a value anywhere else.  In a text-like context (text, a quoted plain attribute),
    a list, tuple or generator (:func:`~ptl_wsgi.escaping.rules.is_items`) with
    neither conversion nor spec is its items joined, each item as a value there
    would be (nested lists flattened); anywhere else it is one value, as before (a
    JSON array in a script: joining would also let items split a sequence that an
    escaper refuses, ``expres`` + ``sion(``, between them).  With *join_items* false,
    *template*'s own items are one value everywhere, as in an ``[html]`` f-string (its
    nested t-strings still join theirs).  With *marks*, in a nonce scope, the CSP
    nonce's slots of the literal parts (and of nested t-strings in text) are marked
    with :data:`~ptl_wsgi.escaping.nonce.MARK`, for the carrier's ``marked``.
    """
    strings = tuple(template.strings)
    planned = plan(strings)
    names = planned.names
    if marks and planned.nonces:
        strings = with_marks(strings, planned.nonces)
    out: list[str] = []
    for index, (text, name, interpolation) in enumerate(
        zip(strings, names, template.interpolations, strict=False)
    ):
        out.append(text)
        value = interpolation.value
        if (
            join_items
            and name is None
            and is_items(value)
            and interpolation.conversion is None
            and not interpolation.format_spec
        ):
            _join_items(value, escapers, format_field, out, marks and planned.in_text[index])
            continue
        if is_template(value) and interpolation.conversion is None:
            nested_marks = marks and bool(planned.in_text) and planned.in_text[index]
            value = _Nested(contextual_format(value, escapers, format_field, marks=nested_marks))
            if name is not None:
                # Markup made for text: outside text it is a value like any other (its
                # own values were escaped for text, not for where it lands).
                value = str(value)
        conversion = -1 if interpolation.conversion is None else ord(interpolation.conversion)
        spec = interpolation.format_spec
        if name is None:
            # Text-like: what the same field of an f-string in an [html] template outputs;
            # markup that carries nonce slots keeps them (marked) where it lands in text.
            if marks and conversion == -1 and not spec and planned.in_text[index]:
                out.append(_marked_text(value, format_field))
                continue
            out.append(str(format_field(value, conversion, spec)))
            continue
        if conversion != -1 or spec:
            value = format_value(value, conversion, spec, format_field, _Nested)
        out.append(str(escapers[name](value)))
    out.append(strings[-1])
    return "".join(out)


def _join_items(
    items: Any,
    escapers: dict[str, Escaper],
    format_field: Callable[..., Any],
    out: list[str],
    marks: bool,
    follow: Follow | None = None,
) -> None:
    """Each of *items* as a lone value in a text-like context: markup (a nested Template
    formatted by its own contexts) kept, anything else escaped.  With *marks*, markup
    keeps its nonce slots only where what came before it (*follow*, through nested lists
    too) ends in text; a generator's markup keeps none (as when the twins format it)."""
    if marks and follow is None and (type(items) is list or type(items) is tuple):
        follow = Follow()
    elif type(items) is not list and type(items) is not tuple:
        follow = None
    for item in items:
        if is_items(item):
            _join_items(item, escapers, format_field, out, follow is not None, follow)
            continue
        here = follow is not None and follow.in_text()
        if is_template(item):
            item = _Nested(contextual_format(item, escapers, format_field, marks=here))
        text = _marked_text(item, format_field) if here else str(format_field(item, -1, ""))
        out.append(text)
        if follow is not None:
            follow.advance(text.replace(MARK, ""))


def _marked_text(value: Any, format_field: Callable[..., Any]) -> str:
    """*value*'s markup text in text, its nonce slots (if it carries any) marked."""
    slots = slots_of(value)
    if slots and mark():
        return inserted(str.__str__(value), slots, mark())
    return str(format_field(value, -1, ""))


def with_marks(strings: tuple[str, ...], nonces: tuple[tuple[int, ...], ...]) -> tuple[str, ...]:
    """*strings* with the nonce's mark at their *nonces* slots (a plan's) in a nonce
    scope; *strings* themselves outside one."""
    marked = mark()
    if not marked:
        return strings
    return tuple(inserted(text, slots, marked) for text, slots in zip(strings, nonces, strict=True))


class _Nested(str):
    """Markup text made here (a nested t-string, a field formatted by its own spec)."""

    __slots__ = ()

    def __html__(self) -> str:
        return str(self)
