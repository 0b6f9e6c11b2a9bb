"""Pure-Python twin of the ``ptl_wsgi._htmltext_c`` accelerator.

This module is the reference: the C twin must behave exactly like it, and
``tests/test_htmltext.py`` plus the differential property tests hold both to
that.  Do not import it directly; ``ptl_wsgi.html`` picks a twin and builds
the public ``htmltext`` class on top of its ``HtmlTextBase``.

Rules shared by every operation here:

* a value with ``__html__`` is trusted: its ``__html__()`` text is used as is;
* anything else is ``str()``-ed and escaped like ``html.escape(s, quote=True)``;
* ``None`` is skipped by the accumulators (``TemplateIO``, ``html_join``,
  ``plain_join``) and nowhere else.
"""

from __future__ import annotations

import _string

# Not typing.TYPE_CHECKING: importing typing costs every one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, TypeVar

    _R = TypeVar("_R")

_new_str = str.__new__

# The final public class, registered by ptl_wsgi.html once it is built.
_htmltext: type = str


def register(cls: type) -> None:
    """Tell this twin which class its functions must return."""
    global _htmltext
    _htmltext = cls


def escape_str(s: str) -> str:
    """Escape ``& < > " '`` in *s*; return *s* itself when nothing needs it."""
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


def markup_of(value: Any) -> str:
    """The markup text for *value*: its ``__html__()`` if it has one, else escaped ``str()``."""
    if type(value) is str:
        return escape_str(value)
    html = getattr(value, "__html__", None)
    if html is not None:
        return str(html())
    return escape_str(str(value))


def stringify(value: Any) -> str:
    """Return *value* as a plain ``str`` (``str()``, without escaping)."""
    if type(value) is str:
        return value
    return str(value)


def htmlescape(value: Any) -> Any:
    """Return *value* as htmltext: escaped, unless it has ``__html__``."""
    if type(value) is _htmltext:
        return value
    return _new_str(_htmltext, markup_of(value))


def html_join(parts: Iterable[Any]) -> Any:
    """Join template output as htmltext, escaping untrusted parts, skipping None."""
    return _new_str(_htmltext, "".join([markup_of(p) for p in parts if p is not None]))


def plain_join(parts: Iterable[Any]) -> str:
    """Join template output as plain text, skipping None."""
    return "".join([stringify(p) for p in parts if p is not None])


_CONVERTERS: dict[int, Callable[[object], str]] = {115: str, 114: repr, 97: ascii}
_SPECIAL = frozenset("&<>\"'")


def _format_markup(text: str, spec: str) -> str:
    """``format(text, spec)`` for markup *text*, escaping what the spec adds.

    A spec formats a str by cutting it and padding it with its fill
    character, which is text unless the spec itself is markup: it is escaped,
    so that a fill taken from a template's data cannot close an attribute.
    """
    formatted = format(text, spec)
    if not spec or getattr(spec, "__html__", None) is not None:
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


def format_field(value: Any, conversion: int, spec: str) -> str:
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
    return type(value) in (str, int, float) or type(value) is _htmltext


def field_output(value: Any, /) -> Any:
    """An f-string or ``str.format`` field's output in a compiled template.

    A str, int, float or htmltext is returned as it is (the final join escapes
    it); anything else is ``format_field(value, -1, "")``, as htmltext.
    """
    if _is_simple_output(value):
        return value
    return _new_str(_htmltext, format_field(value, -1, ""))


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


# -- % formatting -------------------------------------------------------------
#
# Each conversion is formatted on the raw value first and escaped afterwards,
# so widths and precisions count characters the way str does and a %c can
# never produce a bare markup character.  Numeric conversions produce only
# digits, signs, letters and spaces, so they are passed through unescaped.

_NUMERIC = frozenset("diouxXeEfFgG")
_TEXT = frozenset("sra")
_FLAGS = frozenset("#0- +")
_INCOMPLETE_KEY = "incomplete format key"


class _Spec:
    __slots__ = ("key", "spec", "kind", "stars", "error")

    def __init__(
        self, key: str | None, spec: str, kind: str, stars: int, error: str | None = None
    ) -> None:
        self.key = key
        self.spec = spec
        self.kind = kind  # "" for a spec cut short before its conversion character
        self.stars = stars
        self.error = error  # ValueError message, raised when formatting reaches this spec


def _memo(function: Callable[[str], _R]) -> Callable[[str], _R]:
    """Cache *function*'s results for up to 1024 format strings.

    Not functools.lru_cache: this twin runs where the C one is not built, and a
    one-shot process rendering from the bytecode cache should not import functools.
    """
    results: dict[str, _R] = {}

    def memoized(fmt: str) -> _R:
        try:
            return results[fmt]
        except KeyError:
            pass
        result = function(fmt)
        if len(results) >= 1024:
            results.clear()  # a crude bound: format strings come from templates, few
        results[fmt] = result
        return result

    memoized.__name__ = function.__name__
    memoized.__doc__ = function.__doc__
    return memoized


@_memo
def _parse_format(fmt: str) -> tuple[tuple[str | _Spec, ...], bool]:
    """Split *fmt* into literal text and conversion specs.

    The second item says whether every spec is a bare positional ``%s``.
    A malformed spec is kept with its error and parsing stops there: the
    error is raised when formatting reaches it, so that errors come in the
    same order, and with the same types, as with ``str % args``.
    """
    items: list[str | _Spec] = []
    simple = True
    literal_start = 0
    i = 0
    n = len(fmt)
    while True:
        i = fmt.find("%", i)
        if i < 0:
            break
        start = i
        i += 1
        if i < n and fmt[i] == "%":
            # Only an immediate "%%" is a literal percent, as with str.
            items.append(fmt[literal_start:start] + "%")
            i += 1
            literal_start = i
            continue
        if fmt[literal_start:start]:
            items.append(fmt[literal_start:start])
        literal_start = n
        key = None
        if i < n and fmt[i] == "(":
            depth = 1
            j = i + 1
            while j < n and depth:
                if fmt[j] == "(":
                    depth += 1
                elif fmt[j] == ")":
                    depth -= 1
                j += 1
            if depth:
                items.append(_Spec(None, "", "", 0, _INCOMPLETE_KEY))
                return tuple(items), False
            key = fmt[i + 1 : j - 1]
            i = j
        spec_start = i
        stars = 0
        while i < n and fmt[i] in _FLAGS:
            i += 1
        if i < n and fmt[i] == "*":
            stars += 1
            i += 1
        else:
            while i < n and fmt[i].isdigit():
                i += 1
        if i < n and fmt[i] == ".":
            i += 1
            if i < n and fmt[i] == "*":
                stars += 1
                i += 1
            else:
                while i < n and fmt[i].isdigit():
                    i += 1
        while i < n and fmt[i] in "hlL":
            i += 1
        if i >= n:
            items.append(_Spec(key, "", "", stars, "incomplete format"))
            return tuple(items), False
        kind = fmt[i]
        i += 1
        literal_start = i
        spec = "%" + fmt[spec_start:i]
        error = None
        if kind not in _NUMERIC and kind not in _TEXT and kind != "c":
            error = f"unsupported format character {kind!r} ({ord(kind):#x}) at index {i - 1}"
        if key is not None or spec != "%s":
            simple = False
        items.append(_Spec(key, spec, kind, stars, error))
    if fmt[literal_start:]:
        items.append(fmt[literal_start:])
    return tuple(items), simple


def _format_one(spec: _Spec, star_args: list[Any], value: Any) -> str:
    kind = spec.kind
    if kind in _NUMERIC:
        return spec.spec % (*star_args, value)
    if kind == "s" and type(value) is not str:
        html = getattr(value, "__html__", None)
        if html is not None:
            return spec.spec % (*star_args, str(html()))
    return escape_str(spec.spec % (*star_args, value))


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


def format_mod(fmt: str, arg: Any) -> str:
    """``fmt % arg`` with every text conversion escaped; returns markup as str.

    Errors follow ``str``: same exception types, raised in the same order.
    """
    items, simple = _parse_format(fmt)
    is_tuple = isinstance(arg, tuple)
    # str reads a tuple's real items (tuple C API), whatever a subclass says
    # its length, items or iteration are; tuple.__getitem__ gets them too.
    if not is_tuple:
        args: tuple[Any, ...] = (arg,)
    elif type(arg) is tuple:
        args = arg
    else:
        args = tuple.__getitem__(arg, slice(None))
    if simple and len(args) == sum(1 for item in items if type(item) is _Spec):
        values = iter(args)
        return "".join([item if type(item) is str else markup_of(next(values)) for item in items])
    mapping = arg if not is_tuple and not isinstance(arg, str) and _is_mapping(arg) else None
    out: list[str] = []
    index = 0
    for item in items:
        if isinstance(item, str):  # (items are str or _Spec: as fast as type() is, and narrows)
            out.append(item)
            continue
        if item.key is not None or item.error == _INCOMPLETE_KEY:
            if mapping is None:
                raise TypeError("format requires a mapping")
            if item.key is None:
                raise ValueError(item.error)
            # As with str, a keyed spec takes its value (and any "*") from the
            # mapping and uses up the positional arguments.
            source = (mapping[item.key],)
            pos = 0
            index = len(args)
        else:
            source = args
            pos = index
        star_args = []
        for _ in range(item.stars):
            if pos >= len(source):
                raise TypeError("not enough arguments for format string")
            if not isinstance(source[pos], int):
                raise TypeError("* wants int")
            star_args.append(source[pos])
            pos += 1
        if not item.kind:
            raise ValueError(item.error)
        if pos >= len(source):
            raise TypeError("not enough arguments for format string")
        value = source[pos]
        if item.key is None:
            index = pos + 1
        if item.error is not None:
            raise ValueError(item.error)
        out.append(_format_one(item, star_args, value))
    if mapping is None and index < len(args):
        raise TypeError("not all arguments converted during string formatting")
    return "".join(out)


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


def _rewrite_fields(fmt: str, in_spec: bool, depth: int) -> str:
    out = []
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
        if spec:
            # str.format refuses fields nested deeper than this itself.
            nested = _rewrite_fields(spec, True, depth + 1) if depth < 2 else spec
            out.append(":" + nested)
        out.append("}")
    return "".join(out)


@_memo
def _rewrite_format(fmt: str) -> str:
    try:
        return _rewrite_fields(fmt, False, 1)
    except ValueError:
        # Malformed: str.format raises, after what it formats before the fault.
        return fmt


class _FieldProxy:
    """Stands in for a ``str.format`` argument so that its output is escaped."""

    __slots__ = ("_ptl_value", "_ptl_mode")

    def __init__(self, value: Any, mode: int = _MARKUP) -> None:
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
            return _new_str(type(self), markup_of(other) + str(self))
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
        return _new_str(type(self), str.join(self, [markup_of(x) for x in iterable]))

    def format(self, *args: Any, **kwargs: Any) -> Any:
        return _new_str(
            type(self),
            str.format(
                _rewrite_format(str.__str__(self)),
                *[_FieldProxy(a) for a in args],
                **{k: _FieldProxy(v) for k, v in kwargs.items()},
            ),
        )

    def format_map(self, mapping: Any, /) -> Any:
        fmt = _rewrite_format(str.__str__(self))
        return _new_str(type(self), str.format_map(fmt, _MappingProxy(mapping)))


# -- TemplateIO -----------------------------------------------------------------


class TemplateIO:
    """Accumulates output; with ``html=True`` it escapes what it is given.

    ``io += value`` and ``io(value)`` add a value (None is skipped);
    ``io.getvalue()`` returns the text so far (htmltext when html is true).
    """

    __slots__ = ("html", "_parts")

    def __init__(self, html: bool = False) -> None:
        self.html = bool(html)
        self._parts: list[str] = []

    def __iadd__(self, value: Any, /) -> TemplateIO:
        if value is not None:
            self._parts.append(markup_of(value) if self.html else stringify(value))
        return self

    def __call__(self, value: Any) -> None:
        if value is not None:
            self._parts.append(markup_of(value) if self.html else stringify(value))

    def getvalue(self) -> Any:
        text = "".join(self._parts)
        return _new_str(_htmltext, text) if self.html else text

    def __str__(self) -> str:
        return "".join(self._parts)

    def __repr__(self) -> str:
        return f"<TemplateIO html={self.html} {''.join(self._parts)!r}>"
