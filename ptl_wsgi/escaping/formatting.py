"""Contextual escaping for markup formatted at run time.

``htmltext % args``, ``htmltext.format()`` and ``htmltext.format_map()`` (and so
every translation of a markup msgid, ``ptl_wsgi.i18n``) escape each value for
the place it lands, as a compiled ``[html]`` template does for the same literal
(docs/contextual-escaping.md, "Formatting at run time"):

* the trusted format string is planned (:mod:`ptl_wsgi.escaping.planner`)
  once, from text, and must end in text;
* a value in text, element text or a quoted plain attribute keeps HTML
  escaping: the twins' own code formats it, exactly as before;
* any other value gets that context's escaper (:mod:`ptl_wsgi.escaping.escapers`), after
  its conversion and spec; a ``%d`` that can only give digits is a number,
  followed as its digits (``<h%d>``), as the compiler does.

The twins (``_htmltext_py``, which the C twin's ``%``, ``format`` and
``format_map`` call) ask :func:`percent_plan` (escaper functions) or :func:`plan`
(escaper names, for ``str.format``) when they cut a format (cached with the
cut), and format a planned value with :func:`percent_escaped` or
:func:`field_escaped`.  A format without ``<`` is
text from end to end: neither the engine nor the escapers are imported for it.

The twins' own room calls :func:`bind` with what the escapers are built for.
"""

from __future__ import annotations

# Not typing.TYPE_CHECKING: importing typing costs every one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Escaper = Callable[[Any], Any]

__all__ = [
    "digits_only",
    "bind",
    "template_markup",
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
    (:class:`~ptl_wsgi.escaping.context.ContextError`) where no value may go,
    and when the format does not end in text, naming the context.
    """
    if not any("<" in text for text in strings):
        return None  # no tag, no attribute, no script: text throughout
    from ptl_wsgi.escaping.planner import plan as plan_parts

    found = plan_parts(strings, numbers)
    return None if found.text_only else found.names


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
    if spec:
        from ptl_wsgi.escaping.escapers import format_value

        markup, _, format_field = _twin
        value = format_value(value, -1, spec, format_field, markup)
    return str(escaper(name)(value))


# -- the escapers ---------------------------------------------------------------------

# The markup class, HTML escaping and field formatting of the twin that formats (the
# Python twin binds its own; the C twin's formats call it): the escapers are built
# for them on first need, so a format with no value outside text loads none of them.
_twin: list[Any] = []
_built: list[Any] = []


def bind(markup: type, twin: Any, format_field: Callable[..., Any]) -> None:
    """Use *markup* (a str subclass with ``__html__``), *twin* (the htmltext twin module
    whose escapers are built: its ``escape_str`` and ``contextual_escaper``) and
    *format_field*."""
    _twin[:] = [markup, twin, format_field]
    _built.clear()


def escaper(name: str) -> Escaper:
    """The escaper called *name* (``url_q``, ``js_value``, ...)."""
    if not _built:
        from ptl_wsgi.escaping.escapers import for_class

        markup, twin, _ = _twin
        _built.append(for_class(markup, twin))
    function: Escaper = _built[0][name]
    return function


# -- t-strings ----------------------------------------------------------------------------


def template_markup(template: Any, text_markup: Callable[[Any], str]) -> str:
    """A t-string's markup text wherever markup is made of it (``htmlescape``, a join,
    ``TemplateIO``, a view's output): each value escaped for the context it lands in,
    as ``htmlformat`` does.  *text_markup* is the twin's own formatting, exact where
    every value lands in text or a quoted plain attribute."""
    from ptl_wsgi.escaping.planner import contextual_format, needs_context, plan

    strings = tuple(template.strings)
    planned = plan(strings)
    if planned.text_only and not needs_context(template):
        return text_markup(template)
    escaper("text")  # (built on first need)
    _, _, format_field = _twin
    return contextual_format(template, _built[0], format_field)
