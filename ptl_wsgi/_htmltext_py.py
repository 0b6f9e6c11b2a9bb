"""Pure-Python twin of the ``ptl_wsgi._htmltext_c`` accelerator.

This module is the reference: the C twin must behave exactly like it, and
``tests/htmltext/test_htmltext.py`` plus the differential property tests hold both to
that.  Do not import it directly; ``ptl_wsgi.html`` picks a twin and builds
the public ``htmltext`` class on top of its ``HtmlTextBase``.

Rules shared by every operation here:

* a value with ``__html__`` is trusted: its ``__html__()`` text is used as is;
* anything else is ``str()``-ed and escaped like ``html.escape(s, quote=True)``;
* ``None`` is skipped by the accumulators (``html_join``, ``plain_join``, and
  ``ptl_wsgi.html``'s ``TemplateIO``) and nowhere else.
"""

from __future__ import annotations

import _string
import sys

from ptl_wsgi.escaping import formatting as _markup_format
from ptl_wsgi.escaping.nonce import CURRENT as _nonce
from ptl_wsgi.escaping.nonce import USED as _nonce_used
from ptl_wsgi.escaping.nonce import holds_nonced as _holds_nonced
from ptl_wsgi.escaping.rules import is_template as _is_template

# Not typing.TYPE_CHECKING: importing typing costs every one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, NoReturn, TypeVar

    from ptl_wsgi.escaping.printf import PercentUnit as _Unit

    _R = TypeVar("_R")

_new_str = str.__new__

# The final public class, registered by ptl_wsgi.html once it is built.
_htmltext: type = str


def register(cls: type, /) -> None:
    """Tell this twin which class its functions must return."""
    global _htmltext
    _htmltext = cls


# The markup that carries CSP nonce slots and its join (escaping.nonce.carrier), also
# registered by ptl_wsgi.html: passed on as it is where markup is output in text, and
# a join that holds one keeps their slots.
_nonced: type | None = None
_nonced_join: Any = None


def register_nonced(cls: type, join: Callable[..., Any], used: list[bool], /) -> None:
    """Tell this twin the class of markup that carries nonce slots, and its join
    (*used*, ``escaping.nonce.USED``, is the C twin's)."""
    global _nonced, _nonced_join
    _nonced, _nonced_join = cls, join


def escape_str(s: str, /) -> str:
    """Escape ``& < > " '`` in *s*; return *s* itself when nothing needs it."""
    if type(s) is not str:
        # A str subclass (from a __str__ or __format__) could answer "in" and
        # replace() as it likes: escape its characters, as a plain str.
        s = str.__str__(s)
    if "&" in s:
        s = s.replace("&", "&amp;")
    if "<" in s:
        s = s.replace("<", "&lt;")
    if ">" in s:
        s = s.replace(">", "&gt;")
    if '"' in s:
        s = s.replace('"', "&quot;")
    if "'" in s:
        s = s.replace("'", "&#x27;")
    return s


def contextual_escaper(cls: type, reference: Any, plan: Any, output: bool = False, /) -> Any:
    """The escaper of one context (``ptl_wsgi.escaping.escapers.build``): in this twin,
    *reference* itself.  The C twin answers common values from *plan* instead."""
    return reference


def markup_of(value: Any, /) -> str:
    """The markup text for *value*: its ``__html__()`` if it has one, else escaped ``str()``.

    A t-string (``string.templatelib.Template``) is markup by :func:`htmlformat`'s rule.
    """
    if type(value) is str:
        return escape_str(value)
    html = getattr(value, "__html__", None)
    if html is not None:
        return str(html())
    if _is_template(value):
        return _template_markup_in_context(value)
    return escape_str(str(value))


def _template_markup_in_context(template: Any) -> str:
    # Each value escaped for where it lands, as htmlformat does (both twins' markup_of).
    return _markup_format.template_markup(template, _template_markup)


# -- t-strings (PEP 750, Python 3.14+) ------------------------------------------


def _template_markup(template: Any) -> str:
    if not _is_template(template):
        raise TypeError(
            "htmlformat() argument must be a string.templatelib.Template, "
            f"not {type(template).__name__}"
        )
    strings = template.strings
    out = [strings[0]]
    for interpolation, literal in zip(template.interpolations, strings[1:], strict=True):
        value = interpolation.value
        conversion = interpolation.conversion
        spec = interpolation.format_spec
        if conversion is None and not spec and _is_template(value):
            out.append(_template_markup(value))
        elif conversion is None:
            # As the same f-string field in a template: markup, its spec applied, is kept.
            out.append(format_field(value, -1, spec))
        else:
            out.append(_converted_markup(value, conversion, spec))
        out.append(literal)
    return "".join(out)


def _converted_markup(value: Any, conversion: str, spec: str) -> str:
    convert = _CONVERSIONS.get(conversion)
    if convert is None:
        raise ValueError(f"htmlformat(): unknown conversion {conversion!r}")
    return escape_str(str(format(convert(value), spec)))


def htmlformat(template: Any, /) -> Any:
    """A t-string as htmltext: ``htmlformat(t"<b>{name}</b>")``.

    The literal parts are trusted; each interpolation means what the same
    f-string field means in an ``[html]`` template (:func:`format_field`): a
    markup value (one with ``__html__``) is kept, its spec applied; anything
    else, and any converted value (``!r``, ``!s``, ``!a``), is formatted and
    escaped.  A nested t-string with neither conversion nor spec is kept as
    markup.  Anything but a Template is a TypeError.
    """
    return _new_str(_htmltext, _template_markup(template))


_contextual: list[Any] = []  # set_htmlformat()'s text-only strings and fallback
_ITEMS = (list, tuple, type(_ for _ in ()))


def contextual_htmlformat(template: Any, /) -> Any:
    """``htmlformat()`` of ptl_wsgi.html: a t-string whose strings :func:`set_htmlformat`'s
    dict marks as text-only is formatted here as the escaping engine's
    ``contextual_format`` formats it (nested t-strings and items included; a nested
    t-string whose strings are not marked by the fallback, alone); any other by the
    fallback (contextual formatting)."""
    if not _contextual:
        raise RuntimeError("contextual_htmlformat(): set_htmlformat() first")
    text_only, fallback, _ = _contextual
    if _formats_itself(template, text_only):
        out: list[str] = []
        _contextual_markup(template, text_only, fallback, out)
        return _new_str(_htmltext, "".join(out))
    return fallback(template)


def contextual_fstring(template: Any, /) -> Any:
    """:func:`contextual_htmlformat` with the t-string's own lists, tuples and generators
    one value each (their ``format()``), as in an ``[html]`` f-string; a t-string not
    marked goes to :func:`set_htmlformat`'s third callable."""
    if not _contextual or _contextual[2] is None:
        raise RuntimeError("contextual_fstring(): set_htmlformat() with its third argument first")
    text_only, fallback, fstring_fallback = _contextual
    if _formats_itself(template, text_only):
        out: list[str] = []
        _contextual_markup(template, text_only, fallback, out, join=False)
        return _new_str(_htmltext, "".join(out))
    return fstring_fallback(template)


def _formats_itself(template: Any, text_only: Any) -> bool:
    """Whether this twin formats *template* itself: its strings are marked text-only
    and (once a nonce scope was entered) no value holds markup carrying nonce slots,
    which the engine's formatting keeps (as the C twin decides)."""
    if not _is_template(template) or text_only.get(template.strings) is not True:
        return False
    return not (_nonce_used[0] and _holds_nonced(template, _is_template))


def _contextual_markup(
    template: Any, text_only: Any, fallback: Any, out: list[str], join: bool = True
) -> None:
    # In a text-only t-string every value lands in text (or a quoted plain attribute).
    if text_only.get(template.strings) is not True:
        markup = fallback(template)
        if not isinstance(markup, str):
            raise TypeError(f"htmlformat()'s fallback returned {type(markup).__name__}, not str")
        out.append(markup)
        return
    strings = template.strings
    interpolations = template.interpolations
    if type(strings) is not tuple or type(interpolations) is not tuple:
        raise TypeError("htmlformat(): malformed Template")
    if len(strings) != len(interpolations) + 1:
        raise TypeError("htmlformat(): malformed Template")
    out.append(strings[0])
    for interpolation, literal in zip(interpolations, strings[1:], strict=True):
        value = interpolation.value
        conversion = interpolation.conversion
        spec = interpolation.format_spec
        if conversion is not None:
            out.append(_converted_markup(value, conversion, spec))
        elif join and not spec and type(value) in _ITEMS:
            _join_markup(value, text_only, fallback, out)
        elif _is_template(value):
            if spec:
                nested: list[str] = []
                _contextual_markup(value, text_only, fallback, nested)
                out.append(format_field(_new_str(_htmltext, "".join(nested)), -1, spec))
            else:
                _contextual_markup(value, text_only, fallback, out)
        else:
            out.append(format_field(value, -1, spec))
        out.append(literal)


def _join_markup(items: Any, text_only: Any, fallback: Any, out: list[str]) -> None:
    # Each item as a lone value in text: a t-string by its own contexts, markup kept.
    for item in items:
        if type(item) in _ITEMS:
            _join_markup(item, text_only, fallback, out)
        elif _is_template(item):
            _contextual_markup(item, text_only, fallback, out)
        else:
            out.append(format_field(item, -1, ""))


def set_htmlformat(
    text_only: dict[Any, bool], fallback: Any, fstring_fallback: Any = None, /
) -> None:
    """The dict of text-only strings and the formatting of every other t-string, for
    :func:`contextual_htmlformat` (and :func:`contextual_fstring`)."""
    if (
        type(text_only) is not dict
        or not callable(fallback)
        or (fstring_fallback is not None and not callable(fstring_fallback))
    ):
        raise TypeError("set_htmlformat() takes a dict and a callable (and another callable)")
    _contextual[:] = [text_only, fallback, fstring_fallback]


def stringify(value: Any, /) -> str:
    """Return *value* as a plain ``str`` (``str()``, without escaping)."""
    if type(value) is str:
        return value
    return str(value)


def htmlescape(value: Any, /) -> Any:
    """Return *value* as htmltext: escaped, unless it has ``__html__``."""
    if type(value) is _htmltext or type(value) is _nonced:
        return value
    return _new_str(_htmltext, markup_of(value))


def html_join(parts: Iterable[Any], /) -> Any:
    """Join template output as htmltext, escaping untrusted parts, skipping None.

    Markup carrying CSP nonce slots keeps them where the context, followed through the
    parts before it, is text (``escaping.nonce``)."""
    return _join(parts, True)


def template_join(parts: Iterable[Any], /) -> Any:
    """:func:`html_join` of a compiled template's output: its values outside text the
    compiler made plain, so markup carrying nonce slots keeps them with no following."""
    return _join(parts, False)


def _join(parts: Iterable[Any], follow: bool) -> Any:
    if _nonced is not None:
        if type(parts) is not list and type(parts) is not tuple:
            parts = list(parts)
        carried = [index for index, part in enumerate(parts) if type(part) is _nonced]
        if carried:
            return _nonced_join(parts, None, follow, carried)
    return _new_str(_htmltext, "".join([markup_of(p) for p in parts if p is not None]))


def plain_join(parts: Iterable[Any], /) -> str:
    """Join template output as plain text, skipping None."""
    return "".join([stringify(p) for p in parts if p is not None])


_CONVERTERS: dict[int, Callable[[object], str]] = {115: str, 114: repr, 97: ascii}
_CONVERSIONS: dict[str, Callable[[object], str]] = {"s": str, "r": repr, "a": ascii}
_SPECIAL = frozenset("&<>\"'")


def _format_markup(text: str, spec: str) -> str:
    """``format(text, spec)`` for markup *text*, escaping what the spec adds.

    A spec formats a str by cutting it and padding it with its fill
    character, which is text unless the spec itself is markup: it is escaped,
    so that a fill taken from a template's data cannot close an attribute.
    """
    formatted = format(text, spec)
    if not spec:
        return formatted
    if text not in formatted:
        # A precision that cut the markup would leave a tag or an attribute open: what
        # is left of it is text, escaped (the visible failure).
        return escape_str(formatted)
    if getattr(spec, "__html__", None) is not None:
        return formatted
    # A fill other than " " or "0" is the character before an align character.
    if len(spec) < 2 or spec[1] not in "<>=^" or spec[0] not in _SPECIAL:
        return formatted
    # Where the text went: the same spec on as many NULs (the fill is not one).
    layout = format("\0" * len(text), spec)
    start = layout.find("\0")
    if start < 0:
        return escape_str(formatted)
    end = layout.rfind("\0") + 1
    return escape_str(formatted[:start]) + formatted[start:end] + escape_str(formatted[end:])


def format_field(value: Any, conversion: int, spec: str, /) -> str:
    """Markup for one f-string field: convert, apply *spec*, then escape.

    *conversion* is the ``ast.FormattedValue`` code: -1 for none, or the
    ordinal of ``s``, ``r`` or ``a``.  A value with ``__html_format__`` or
    ``__html__`` and no conversion keeps its markup.
    """
    if type(conversion) is not int:
        # Exactly int: an int subclass could compare equal to a code it is not.
        raise TypeError(f"format_field() conversion must be int, not {type(conversion).__name__}")
    if conversion != -1:
        convert = _CONVERTERS.get(conversion)
        if convert is None:
            raise ValueError(f"format_field() got an unknown conversion code {conversion}")
        return escape_str(format(convert(value), spec))
    if type(value) is not str:
        html_format = getattr(value, "__html_format__", None)
        if html_format is not None:
            return str(html_format(spec))
        html = getattr(value, "__html__", None)
        if html is not None:
            return _format_markup(str(html()), spec) if spec else str(html())
    return escape_str(format(value, spec))


def _is_simple_output(value: Any) -> bool:
    return type(value) in (str, int, float) or type(value) is _htmltext or type(value) is _nonced


def field_output(value: Any, /) -> Any:
    """An f-string or ``str.format`` field's output in a compiled template.

    A str, int, float or htmltext is returned as it is (the final join escapes
    it); anything else is ``format_field(value, -1, "")``, as htmltext.
    """
    if _is_simple_output(value):
        return value
    return _new_str(_htmltext, format_field(value, -1, ""))


def outside_text(value: Any, /) -> Any:
    """A value a compiled template outputs outside text (an attribute value, RCDATA):
    *value* itself, but markup that carries nonce slots as plain markup, so that no
    nonce goes where a value may send it (``escaping.nonce``)."""
    if type(value) is _nonced:
        return _new_str(_htmltext, value)
    return value


def field_outside_text(value: Any, /) -> Any:
    """:func:`field_output` outside text (see :func:`outside_text`)."""
    return outside_text(field_output(value))


def percent_output(value: Any, fmt: Any, /) -> Any:
    """A ``%s`` field's output in a compiled template.

    A str, int, float or htmltext is returned as it is; anything else as its
    markup.  With *fmt* (the whole format, which has one ``%s``), a tuple is
    the format's values, as ``fmt % value`` takes it, and raises what that raises.
    """
    if _is_simple_output(value):
        return value
    if fmt is not None and isinstance(value, tuple):
        if tuple.__len__(value) != 1:
            _ = fmt % value  # str's own error for the wrong number of values
            raise ValueError("percent_output(): fmt must have one field")
        value = tuple.__getitem__(value, 0)
        if _is_simple_output(value):
            return value
    return htmlescape(value)


def percent_outside_text(value: Any, fmt: Any, /) -> Any:
    """:func:`percent_output` outside text (see :func:`outside_text`)."""
    return outside_text(percent_output(value, fmt))


def first_of(first: Any, /, *evaluated: Any) -> Any:
    """Return *first*: ``"%s %s" % (a, b)`` in a template evaluates ``b`` in this call."""
    return first


_LOOP_SLOTS = 32  # slot 0 is the item; 1 to 31 hold the values read from it


def loop_output(
    out: list[Any], iterable: Any, pattern: tuple[Any, ...], joint: Any = None, /
) -> None:
    """A fused output loop of a compiled template.

    For each item of *iterable*, appends *pattern*'s parts to *out*: ``None``
    stands for the item, a tuple ``(f, *extra)`` for ``f(item, *extra)``,
    anything else for itself.  A part ``(k, path)`` (*k* an int from 1 to 31)
    reads a value from the item into slot *k*, each step of the path an
    attribute's name (an exact str) or an item's key; ``(k,)`` then stands for
    that value and ``(k, f, *extra)`` for ``f(value, *extra)``.  Reads and
    calls are made in the pattern's order.  With a *joint* (the pattern's last
    and first parts as one text), the joint is appended between items instead
    of them.
    """
    if (
        type(out) is not list
        or not isinstance(pattern, tuple)
        or (joint is not None and len(pattern) < 2)
    ):
        raise TypeError("loop_output() takes a list, an iterable, a tuple and an optional joint")
    first = 0 if joint is None else 1
    parts = pattern[first : len(pattern) - first]
    started = False
    for item in iterable:
        if joint is not None:
            out.append(joint if started else pattern[0])
        started = True
        slots: dict[int, Any] = {}
        for part in parts:
            if part is None:
                out.append(item)
            elif type(part) is not tuple or not part:
                out.append(part)
            elif type(part[0]) is int:
                _loop_slot_part(out, part, item, slots)
            elif len(part) <= 4:
                # (pyright's narrowing by len() forgets that part is not empty)
                out.append(part[0](item, *part[1:]))  # pyright: ignore[reportGeneralTypeIssues]
            else:
                out.append(part)
    if started and joint is not None:
        out.append(pattern[-1])


def _loop_slot_part(
    out: list[Any], part: tuple[Any, ...], item: Any, slots: dict[int, Any]
) -> None:
    """A part ``(k, ...)`` of loop_output()'s pattern, for *item*."""
    k, *rest = part
    if not 1 <= k < _LOOP_SLOTS or len(rest) > 4:
        raise TypeError("loop_output(): a bad slot part")
    if len(rest) == 1 and type(rest[0]) is tuple:
        if not rest[0]:
            raise TypeError("loop_output(): a bad slot part")
        value = item
        for step in rest[0]:
            value = getattr(value, step) if type(step) is str else value[step]
        slots[k] = value
        return
    if k not in slots:
        raise TypeError("loop_output(): a slot output before it is read")
    if not rest:
        out.append(slots[k])
    else:
        out.append(rest[0](slots[k], *rest[1:]))


# -- % formatting -------------------------------------------------------------
#
# str's own % is the grammar, on every Python version: this code only cuts a
# format into literal text and conversion units, and str formats each unit
# (so widths and precisions count characters as str does) before the unit's
# output is escaped; a %c can never produce a bare markup character.  Whether
# a format fits its arguments (malformed units, too few or too many values, a
# mapping key without a mapping, and whatever else a version refuses) is asked
# of str too, with stand-in values that run no code of the caller's, so every
# error is str's own, with its message, raised where str would raise it.


def _memo(function: Callable[[Any], _R]) -> Callable[[Any], _R]:
    """Cache *function*'s results for up to 1024 arguments.

    Not functools.lru_cache: this twin runs where the C one is not built, and a
    one-shot process rendering from the bytecode cache should not import functools.
    """
    results: dict[Any, _R] = {}

    def memoized(key: Any) -> _R:
        try:
            return results[key]
        except KeyError:
            pass
        result = function(key)
        if len(results) >= 1024:
            results.clear()  # a crude bound: format strings come from templates, few
        results[key] = result
        return result

    memoized.__name__ = function.__name__
    memoized.__doc__ = function.__doc__
    return memoized


_UNPLANNED: Any = object()  # a cut's plan until _plan() makes it


@_memo
def _split_format(fmt: str) -> list[Any]:
    """The units of *fmt* (``escaping.printf``), the literal text after the last,
    whether every unit is a bare positional ``%s``, the contextual plan (_plan())
    ``[units, tail, simple, plan]``, the plan ``_UNPLANNED`` until asked for.

    The cut stops at anything it cannot read (``%(`` without its ``)``, a unit
    without a conversion character): str refuses such a format, and the check
    in format_mod() raises its error before that point is reached.
    """
    # Imported on the first format cut: a process that formats nothing never loads it.
    from ptl_wsgi.escaping.printf import scan_percent

    units, tail, complete = scan_percent(fmt)
    if not complete:
        return [tuple(units), "", False, None]
    simple = all(unit.source == "%s" for unit in units)
    return [tuple(units), tail, simple, _UNPLANNED]


def _plan(cut: list[Any]) -> tuple[Any, ...] | ValueError | None:
    """The escaper of each unit of a cut (``escaping.formatting.percent_plan``), None when
    every unit lands in text, or the ValueError that refuses the format; kept in
    the cut.  Not made for HTML-only formatting, which needs no context engine."""
    units, tail = cut[0], cut[1]
    plan: tuple[Any, ...] | ValueError | None
    strings = (*(unit.literal for unit in units), tail)
    fields = tuple(unit.field for unit in units)
    try:
        plan = _markup_format.percent_plan(strings, fields)
    except ValueError as exc:
        plan = exc
    cut[3] = plan
    return plan


def _with_slots(out: list[str], nonces: Any) -> tuple[str, tuple[int, ...]]:
    """The text of *out* (a format's literal texts at its even places, the text after
    the last unit last) and where the CSP nonce goes in it: *nonces*, one tuple of
    slots per literal text, moved to where each text landed."""
    slots: list[int] = []
    at = 0
    for place, text in enumerate(out):
        if not place % 2:
            slots.extend(at + slot for slot in nonces[place // 2])
        at += len(text)
    return "".join(out), tuple(slots)


_stand_in_types: dict[tuple[str, str, str, type], type] = {}


def _stand_in_type(like: type, base: type) -> type:
    """A subclass of *base* named as *like* is (module, name, qualified name),
    for str's messages that name a value's type (3.15 names it with its module)."""
    key = (str(like.__module__), like.__name__, like.__qualname__, base)
    cls = _stand_in_types.get(key)
    if cls is None:
        namespace: dict[str, Any] = {
            "__module__": key[0],
            "__qualname__": key[2],
            "__index__": lambda self: 0,
            "__float__": lambda self: 0.0,
        }
        if base is dict:
            namespace["__missing__"] = lambda self, key: 0
        if len(_stand_in_types) >= 1024:
            _stand_in_types.clear()
        cls = _stand_in_types[key] = type(key[1], (base,), namespace)
    return cls


def _shape(arg: Any, mapping: bool) -> tuple[str, type, int]:
    """What str's % looks at in *arg* besides its values' code: its kind, its
    type (named in some messages) and how many values a tuple holds."""
    if isinstance(arg, tuple):
        return "tuple", type(arg), tuple.__len__(arg)
    return ("mapping" if mapping else "value"), type(arg), 1


_ZEROS: dict[type, Any] = {bool: False, int: 0, float: 0.0, str: "0", type(None): None}


def _stand_in(kind: str, cls: type, length: int) -> Any:
    """A value that str's % reads as it reads one of this shape, running no
    code of the caller's: items and mapping values are 0, which every
    conversion and every "*" accepts, and the type has the same name."""
    if kind == "tuple":
        zeros = (0,) * length
        return zeros if cls is tuple else tuple.__new__(_stand_in_type(cls, tuple), zeros)
    if kind == "mapping":
        return _stand_in_type(cls, dict)()
    if cls in _ZEROS:
        return _ZEROS[cls]
    for base in (bool, int, float, str):
        if issubclass(cls, base):
            return _stand_in_type(cls, base)(_ZEROS[base])
    return _stand_in_type(cls, object)()


def _outcome(fmt: str, value: Any) -> tuple[type, str] | None:
    try:
        _ = fmt % value
    except (TypeError, ValueError, OverflowError) as exc:
        return type(exc), str(exc)
    return None


@_memo
def _failing_unit(key: tuple[str, str, type, int]) -> int | None:
    """Where str's % fails for a format and a shape of value, or None.

    *key* is the format and the shape; the result is the index of the unit
    at which str raises, len(units) for an error after the last one.
    """
    fmt, kind, cls, length = key
    stand_in = _stand_in(kind, cls, length)
    failure = _outcome(fmt, stand_in)
    if failure is None:
        return None
    units = _split_format(fmt)[0]
    for index, unit in enumerate(units):
        if _outcome(fmt[: unit.end], stand_in) == failure:
            return index
    return len(units)


def _is_mapping(arg: Any) -> bool:
    """Whether str's ``%`` takes *arg* as its mapping.

    str asks PyMapping_Check (a mapping slot, which e.g. deque lacks although
    it has ``__getitem__``); Python code cannot ask that directly, but
    ``"" % arg`` with a non-tuple *arg* fails exactly when the answer is no,
    and runs no code of *arg*'s.
    """
    try:
        _ = "" % arg  # noqa: F507, UP031
    except TypeError:
        return False
    return True


def _format_unit(unit: _Unit, value: Any, shown: Any, escaper: Any = None) -> str:
    """One unit formatted by str: *value* is what it gets (a tuple, a mapping
    or the single value), *shown* the value it converts; with an *escaper*
    (the unit lands outside text), that escaper's output."""
    if escaper is not None:
        values = value if type(value) is tuple else (shown,)
        return _markup_format.percent_escaped(escaper, unit.field, values, shown)
    if unit.source[-1] == "s" and type(shown) is not str:
        html = getattr(shown, "__html__", None)
        if html is not None:
            markup = str(html())
            if unit.key is not None:
                formatted = unit.source % {unit.key: markup}
            elif type(value) is tuple:
                formatted = unit.source % (*value[:-1], markup)
            else:
                formatted = unit.source % (markup,)
            # (a precision that cut the markup leaves text, escaped: see _format_markup)
            return formatted if markup in formatted else escape_str(formatted)
    return escape_str(unit.source % value)


def format_mod(fmt: str, arg: Any, /) -> str:
    """``fmt % arg`` with every conversion escaped for its context; returns markup as str.

    *fmt* is parsed from text (``escaping.formatting``): a value in text or a quoted
    plain attribute is HTML-escaped, one in a URL, script, style, unquoted
    attribute, ... gets that context's escaper.  Errors are str's: same
    exceptions and messages, raised in the same order, before the ValueError
    of a format that does not end in text or puts a value where none may go.
    """
    formatted: str = _format_mod(fmt, arg, True)
    return formatted


def format_mod_html(fmt: str, arg: Any, nonces: Any = (), /) -> Any:
    """``fmt % arg`` with every conversion HTML-escaped, wherever it lands.

    For formats the compiler planned (their values are escaped already for
    where they land) and templates that opt out of contextual escaping.
    *nonces*: where the CSP nonce goes in the format's literal texts (the
    compiler's slots, one tuple per text): in a nonce scope the result is
    ``(text, slots)``, the slots moved to where the texts landed, for the markup
    that carries them (``escaping.nonce``).  Only the compiler gives slots: a
    format made at run time (a translation, ``htmltext(value)``) never takes the nonce.
    """
    if nonces and _nonce_used[0] and _nonce.get() is not None:
        if len(nonces) == len(_split_format(fmt)[0]) + 1:
            return _format_mod(fmt, arg, False, nonces)
    return _format_mod(fmt, arg, False)


def _format_mod(fmt: str, arg: Any, contextual: bool, nonces: Any = None) -> Any:
    # str, or with *nonces* (text, slots): see format_mod_html().
    cut = _split_format(fmt)
    units, tail, simple, plan = cut
    if not contextual:
        plan = None
    elif plan is _UNPLANNED:
        plan = _plan(cut)
    finish: Any = "".join if nonces is None else (lambda out: _with_slots(out, nonces))
    is_tuple = isinstance(arg, tuple)
    # str reads a tuple's real items (tuple C API), whatever a subclass says
    # its length, items or iteration are; tuple.__getitem__ gets them too.
    if not is_tuple:
        args: tuple[Any, ...] = (arg,)
    elif type(arg) is tuple:
        args = arg
    else:
        args = tuple.__getitem__(arg, slice(None))
    if simple and plan is None and len(args) == len(units):
        out = []
        for unit, value in zip(units, args, strict=True):
            out.append(unit.literal)
            out.append(markup_of(value))
        out.append(tail)
        return finish(out)
    if simple and type(plan) is tuple and len(args) == len(units):
        # Bare %s fields, as many as values: str's % cannot refuse them.
        out = []
        for unit, value, escaper in zip(units, args, plan, strict=True):
            out.append(unit.literal)
            out.append(markup_of(value) if escaper is None else str(escaper(value)))
        out.append(tail)
        return finish(out)
    mapping = not is_tuple and not isinstance(arg, str) and _is_mapping(arg)
    shape = _shape(arg, mapping)
    failing = _failing_unit((fmt, *shape))
    escapers = None
    if plan is not None and failing is None:
        if isinstance(plan, ValueError):
            raise type(plan)(*plan.args)  # a new one each time: no traceback is kept
        escapers = plan
    out = []
    index = 0
    for number, unit in enumerate(units):
        if number == failing:
            break
        escaper = None if escapers is None else escapers[number]
        out.append(unit.literal)
        if unit.key is not None:
            # arg is the mapping (str refused anything else at this unit); pyright
            # joins its isinstance narrowings of arg (Any) above into "tuple | str | Any".
            shown = arg[unit.key]  # pyright: ignore[reportCallIssue, reportArgumentType]
            out.append(_format_unit(unit, {unit.key: shown}, shown, escaper))
            index = len(args)  # as with str: a keyed unit uses up the positional values
            continue
        if not is_tuple:
            out.append(_format_unit(unit, arg, arg, escaper))
            index = 1
            continue
        taken = args[index : index + unit.stars + 1]
        try:
            out.append(_format_unit(unit, taken, taken[-1], escaper))
        except (TypeError, ValueError, OverflowError):
            if index:
                # str numbers the value in its message: the same unit, after as
                # many units that take one value each and show nothing.
                padded = "%.0s" * index + unit.source
                _ = padded % (*(None,) * index, *taken)
            raise
        index += unit.stars + 1
    if failing is not None:
        # str's own error, where str raises it: the units before are given
        # stand-ins (formatted already), the failing one its real values,
        # which str may refuse before it reaches the fault in the format.
        stand_in = _stand_in(*shape)
        if is_tuple:
            _ = fmt % type(stand_in)((*stand_in[:index], *args[index:]))
        _ = fmt % (arg if not is_tuple and not mapping and index == 0 else stand_in)
        raise AssertionError(f"{fmt!r} % {arg!r} was expected to fail")  # pragma: no cover
    out.append(tail)
    return finish(out)


# -- str.format ---------------------------------------------------------------
#
# str.format applies a field's conversion itself and then formats the str it
# got, so a proxy could only escape before the spec (cutting "&lt;" to "&l").
# The format string is therefore rewritten first: a conversion "!r" becomes
# a lookup of the attribute "\0r" on the proxy, which converts (at the point
# where str.format would) into a proxy that escapes after formatting; and a
# field inside a spec gets "\0p", a proxy formatted without escaping, since
# what it gives is a spec, as in an f-string (what that spec then adds to
# the output is escaped by format_field).

_MARKUP, _TEXT_FIELD, _PLAIN = 0, 1, 2
_CONVERSION_ATTRS: dict[str, Callable[[object], str]] = {"\0s": str, "\0r": repr, "\0a": ascii}


#
# Contextual escaping (escaping.formatting) adds to each top-level field that lands
# outside text a lookup of "\0e" and its escaper's name (after the conversion's):
# that proxy formats its value with the spec, then escapes it for where it lands.


def _rewrite_fields(
    fmt: str,
    in_spec: bool,
    depth: int,
    escapers: tuple[str | None, ...] | None = None,
) -> str:
    out = []
    number = 0
    for literal, field, spec, conversion in _string.formatter_parser(fmt):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        out.append("{" + field)
        if conversion in ("s", "r", "a"):
            out.append(".\0" + conversion)
        elif conversion is not None:
            out.append("!" + conversion)  # str.format's own error, in its place
        if in_spec:
            out.append(".\0p")
        elif escapers is not None and escapers[number] is not None and conversion in _CONVERTED:
            out.append(f".\0e{escapers[number]}")
        number += 1
        if spec:
            # str.format refuses fields nested deeper than this itself.
            nested = _rewrite_fields(spec, True, depth + 1) if depth < 2 else spec
            out.append(":" + nested)
        out.append("}")
    return "".join(out)


_CONVERTED = (None, "s", "r", "a")


@_memo
def _rewrite_plain(fmt: str) -> str:
    """*fmt* rewritten for the proxies, every field escaped as HTML."""
    try:
        return _rewrite_fields(fmt, False, 1)
    except ValueError:
        # Malformed: str.format raises, after what it formats before the fault.
        return fmt


@_memo
def _rewrite_format(fmt: str) -> str | tuple[str, ValueError]:
    """*fmt* rewritten for the proxies, each field escaped for its context; or the
    plain rewriting and the ValueError that refuses *fmt* (``escaping.formatting``)."""
    plain = _rewrite_plain(fmt)
    try:
        parsed = list(_string.formatter_parser(fmt))
    except ValueError:
        return plain
    strings: list[str] = []
    text = ""
    for literal, field, _spec, _conversion in parsed:
        text += literal
        if field is not None:
            strings.append(text)
            text = ""
    strings.append(text)
    try:
        escapers = _markup_format.plan(tuple(strings))
    except ValueError as exc:
        return plain, exc
    if escapers is None:
        return plain
    try:
        return _rewrite_fields(fmt, False, 1, escapers)
    except ValueError:
        return plain  # malformed in a spec: str.format raises for it


def _refuse(rewritten: tuple[str, ValueError], args: tuple[Any, ...], kwargs: Any) -> NoReturn:
    """Raise the ValueError of a refused format, after str.format's own errors (a
    malformed format, a missing argument or key), which stand-ins find without
    running any code of the values'."""
    plain, refusal = rewritten
    if kwargs is None:
        str.format_map(plain, _StandInMapping(args[0]))
    else:
        str.format(plain, *[_STAND_IN] * len(args), **dict.fromkeys(kwargs, _STAND_IN))
    raise type(refusal)(*refusal.args)


class _StandIn:
    """A format argument with every attribute and item, which formats as nothing."""

    __slots__ = ()

    def __getattr__(self, name: str) -> _StandIn:
        return self

    def __getitem__(self, key: Any) -> _StandIn:
        return self

    def __format__(self, spec: str) -> str:
        return ""


_STAND_IN = _StandIn()


class _StandInMapping:
    """The mapping's keys (str.format_map's KeyError is the mapping's), stand-in values."""

    __slots__ = ("_mapping",)

    def __init__(self, mapping: Any) -> None:
        self._mapping = mapping

    def __getitem__(self, key: Any) -> _StandIn:
        _ = self._mapping[key]  # its KeyError, if any
        return _STAND_IN


class _FieldProxy:
    """Stands in for a ``str.format`` argument so that its output is escaped."""

    __slots__ = ("_ptl_value", "_ptl_mode")

    def __init__(self, value: Any, mode: int | str = _MARKUP) -> None:
        object.__setattr__(self, "_ptl_value", value)
        object.__setattr__(self, "_ptl_mode", mode)

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, "_ptl_value")
        if name[:1] == "\0":
            if name == "\0p":
                return _FieldProxy(value, _PLAIN)
            convert = _CONVERSION_ATTRS.get(name)
            if convert is not None:
                return _FieldProxy(convert(value), _TEXT_FIELD)
            if name[:2] == "\0e":
                return _FieldProxy(value, name[2:])  # the mode is an escaper's name
        return _FieldProxy(getattr(value, name))

    def __getitem__(self, key: Any) -> Any:
        return _FieldProxy(object.__getattribute__(self, "_ptl_value")[key])

    def __format__(self, spec: str) -> str:
        value = object.__getattribute__(self, "_ptl_value")
        mode = object.__getattribute__(self, "_ptl_mode")
        if mode == _MARKUP:
            return format_field(value, -1, spec)
        if mode == _TEXT_FIELD:
            return escape_str(format(value, spec))
        if type(mode) is str:
            return _markup_format.field_escaped(mode, value, spec)
        return format(value, spec)

    # Conversions that were not rewritten (a malformed format string).
    def __str__(self) -> str:
        return escape_str(str(object.__getattribute__(self, "_ptl_value")))

    def __repr__(self) -> str:
        return escape_str(repr(object.__getattribute__(self, "_ptl_value")))


class _MappingProxy:
    __slots__ = ("_mapping",)

    def __init__(self, mapping: Any) -> None:
        self._mapping = mapping

    def __getitem__(self, key: Any) -> _FieldProxy:
        return _FieldProxy(self._mapping[key])


def format_html(fmt: str, /, *args: Any, **kwargs: Any) -> str:
    """``fmt.format(*args, **kwargs)`` with every field HTML-escaped, wherever it lands
    (see format_mod_html()); returns markup as str."""
    return str.format(
        _rewrite_plain(fmt),
        *[_FieldProxy(a) for a in args],
        **{k: _FieldProxy(v) for k, v in kwargs.items()},
    )


def format_map_html(fmt: str, mapping: Any, /) -> str:
    """``fmt.format_map(mapping)`` with every field HTML-escaped (see format_mod_html())."""
    return str.format_map(_rewrite_plain(fmt), _MappingProxy(mapping))


# -- the hot base class -------------------------------------------------------


class HtmlTextBase(str):
    """The operators of htmltext; ``ptl_wsgi.html`` adds the rest of the str API."""

    __slots__ = ()

    def __new__(cls, value: Any = "") -> Any:
        if type(value) is not str:
            html = getattr(value, "__html__", None)
            value = str(html()) if html is not None else str(value)
        return _new_str(cls, value)

    def __html__(self) -> Any:
        return self

    def __add__(self, other: Any, /) -> Any:
        if isinstance(other, str) or hasattr(other, "__html__"):
            return _new_str(type(self), str.__add__(self, markup_of(other)))
        return NotImplemented

    def __radd__(self, other: Any, /) -> Any:
        if isinstance(other, str) or hasattr(other, "__html__"):
            return _new_str(type(self), markup_of(other) + str.__str__(self))
        return NotImplemented

    def __mul__(self, count: Any, /) -> Any:
        result = str.__mul__(self, count)
        if result is NotImplemented:
            return result
        return _new_str(type(self), result)

    def __rmul__(self, count: Any, /) -> Any:
        return self.__mul__(count)

    def __mod__(self, arg: Any, /) -> Any:
        return _new_str(type(self), format_mod(str(self), arg))

    def join(self, iterable: Iterable[Any], /) -> Any:
        if _nonced is not None:
            if type(iterable) is not list and type(iterable) is not tuple:
                iterable = list(iterable)
            for item in iterable:
                if type(item) is _nonced:
                    return _nonced_join(iterable, self)
        return _new_str(type(self), str.join(self, [markup_of(x) for x in iterable]))

    def format(self, *args: Any, **kwargs: Any) -> Any:
        source = str.__str__(self)
        fmt = _rewrite_format(source)
        if not isinstance(fmt, str):
            _refuse(fmt, args, kwargs)
        proxies = {k: _FieldProxy(v) for k, v in kwargs.items()}
        return _new_str(type(self), str.format(fmt, *[_FieldProxy(a) for a in args], **proxies))

    def format_map(self, mapping: Any, /) -> Any:
        source = str.__str__(self)
        fmt = _rewrite_format(source)
        if not isinstance(fmt, str):
            _refuse(fmt, (mapping,), None)
        return _new_str(type(self), str.format_map(fmt, _MappingProxy(mapping)))


# Values formatted outside text are escaped by the escaping engine's escapers, built on
# first need for this twin's markup, HTML escaping and field formatting.
_markup_format.bind(HtmlTextBase, sys.modules[__name__], format_field)
