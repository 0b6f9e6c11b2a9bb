"""Contextual escaping for markup formatted at run time.

``htmltext % args``, ``htmltext.format()`` and ``htmltext.format_map()`` (and so
every translation of a markup msgid, ``ptl_wsgi.i18n``) escape each value for
the place it lands, as a compiled ``[html]`` template does for the same literal
(docs/contextual-escaping.md, "Formatting at run time"):

* the trusted format string is parsed by the context engine
  (:mod:`ptl_wsgi.htmlcontext`) once, from text, and must end in text;
* a value in text, element text or a quoted plain attribute keeps HTML
  escaping: the twins' own code formats it, exactly as before;
* any other value gets that context's escaper (:mod:`ptl_wsgi.escapers`), after
  its conversion and spec; a ``%d`` that can only give digits is a number,
  followed as its digits (``<h%d>``), as the compiler does.

The twins (``_htmltext_py``, which the C twin's ``%``, ``format`` and
``format_map`` call) ask :func:`percent_plan` (escaper functions) or :func:`plan`
(escaper names, for ``str.format``) when they cut a format (cached with the
cut), and format a planned value with :func:`percent_escaped` or
:func:`field_escaped`.  A format without ``<`` is
text from end to end: neither the engine nor the escapers are imported for it.

This room is layer 1; the escapers are built on ``ptl_wsgi.html`` (layer 2), so
they are imported on first need, inside :func:`_escapers` (the one upward edge
tests/test_rooms.py allows).
"""

from __future__ import annotations

# Not typing.TYPE_CHECKING: importing typing costs every one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    Escaper = Callable[[Any], Any]

__all__ = [
    "digits_only",
    "escaper",
    "field_escaped",
    "percent_escaped",
    "percent_plan",
    "plan",
]


def plan(strings: tuple[str, ...], numbers: tuple[bool, ...] = ()) -> tuple[str | None, ...] | None:
    """The escaper name for each value between the literal *strings* of a format.

    None when every value lands where HTML escaping is the escaping (text,
    element text, a quoted plain attribute) or is a number: the twins' own
    code formats those.  *numbers* marks the values that are numbers (``%d``),
    followed as their digits and never escaped.  Raises ValueError
    (``ptl_wsgi.htmlcontext.ContextError``) where no value may go, and when
    the format does not end in text, naming the context.
    """
    if not any("<" in text for text in strings):
        return None  # no tag, no attribute, no script: text throughout
    from ptl_wsgi.htmlcontext import (
        TEXT,
        ContextError,
        advance,
        after_number,
        after_value,
        describe,
        ends_in_text,
        escaper_for,
    )

    ctx = TEXT
    names: list[str | None] = []
    for index, text in enumerate(strings[:-1]):
        ctx = advance(ctx, text)
        try:
            if index < len(numbers) and numbers[index]:
                names.append(None)
                ctx = after_number(ctx)
                continue
            names.append(escaper_for(ctx))
        except ContextError as exc:
            raise ContextError(
                f"no value may go at field {index + 1} of this markup format "
                f"({describe(ctx)}): {exc}; write it in the format, or format a whole "
                "tag or attribute as markup (htmltext)"
            ) from None
        ctx = after_value(ctx)
    ctx = advance(ctx, strings[-1]) if strings else ctx
    if not ends_in_text(ctx):
        raise ContextError(
            f"this markup format ends in {describe(ctx)}, not in text: a format is parsed "
            "on its own, from text, so it must close the tag, attribute, script, style or "
            "comment it opens"
        )
    return None if all(name is None for name in names) else tuple(names)


# -- % ------------------------------------------------------------------------------


def digits_only(field: str) -> bool:
    """Whether %-conversion *field* (``%05d``, without its ``(key)``) can output only a
    number: digits and a sign, never a letter or a space.

    Only ``%d``, ``%i`` and ``%u`` can: ``%x`` and ``%c`` give letters, ``%o`` and
    ``%x`` with ``#`` a ``0o`` or ``0x`` prefix, the float conversions ``inf``,
    ``nan`` and exponents, the `` `` flag and a width without ``0`` spaces.  Such a
    field is followed as a number (it may go where a name goes, ``<h%d>``); any other
    is a value, escaped for its context.
    """
    if field[-1:] not in ("d", "i", "u"):
        return False
    spec = field[1:-1].rstrip("hlL")
    flags = spec[: len(spec) - len(spec.lstrip("#0- +"))]
    if " " in flags or "*" in spec:
        return False
    width = spec[len(flags) :].partition(".")[0]
    return not width or ("0" in flags and "-" not in flags)


def percent_plan(strings: tuple[str, ...], fields: tuple[str, ...]) -> tuple[Any, ...] | None:
    """The escaper (a function, or None) of each %-field of a format, or None for none.

    *strings* are the format's literal texts around its *fields* (``%%`` made
    ``%``), *fields* the conversions as written without their key (``%-5s``).
    Raises as :func:`plan` does.
    """
    names = plan(strings, tuple(digits_only(field) for field in fields))
    if names is None:
        return None
    return tuple(None if name is None else escaper(name) for name in names)


def percent_escaped(escaper: Escaper, field: str, values: tuple[Any, ...], value: Any) -> str:
    """The output of one %-field that has an escaper.

    *field* is the conversion without its key (``%r``, ``%.5s``, ``%*d``) and
    *values* the tuple it takes (the value, after any ``*`` values).  A plain
    ``%s`` gives the *value* itself to *escaper* (markup stays markup, an int
    stays digits); any other field formats first, as ``escapers.percent_field``.
    """
    if field != "%s":
        value = field % values
    return str(escaper(value))


# -- str.format ---------------------------------------------------------------------


def field_escaped(name: str, value: Any, spec: str) -> str:
    """One ``str.format`` field with an escaper: *value* (converted already, if the field
    converts) formatted by *spec*, as ``escapers.format_value`` does, then escaped."""
    escapers = _escapers()
    if spec:
        value = escapers.format_value(value, -1, spec)
    return str(escapers.ESCAPERS[name](value))


# -- the escapers -------------------------------------------------------------------


def escaper(name: str) -> Escaper:
    """The escaper called *name* (``url_q``, ``js_value``, ...)."""
    function: Escaper = _escapers().ESCAPERS[name]
    return function


_loaded: list[ModuleType] = []


def _escapers() -> ModuleType:
    """``ptl_wsgi.escapers``, imported on first need (it is layer 2, on ptl_wsgi.html)."""
    if not _loaded:
        from ptl_wsgi import escapers

        _loaded.append(escapers)
    return _loaded[0]
