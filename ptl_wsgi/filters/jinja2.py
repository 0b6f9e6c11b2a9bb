"""Jinja2's builtin filters, tests and globals, with Jinja2's results, for converted templates.

``ptl-wsgi convert --from-jinja2`` writes ``{{ name|title }}`` as ``jinja.title(name)``
with ``from ptl_wsgi.filters import jinja2 as jinja``; nothing here imports Jinja2.
:data:`FILTERS` and :data:`TESTS` name the function of each Jinja2 filter and test
(Python's own where it is the same: ``abs``).

Markup is ``htmltext``: a value with ``__html__`` (``htmltext``, markupsafe's ``Markup``)
is markup here as it is in Jinja2, so the string filters keep it markup (``upper`` of
markup is markup) and ``escape`` leaves it alone.  The filters whose result depends on
whether the template escapes (``join``, ``replace``, ``xmlattr``, ``~``) take
``autoescape=True`` where the converted template is an ``[html]`` one.
"""

from __future__ import annotations

import json
import math
import pprint as _pprint
import random as _random
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import groupby as _groupby
from numbers import Number
from typing import Any, NamedTuple
from urllib.parse import quote_from_bytes

from ptl_wsgi.escaping.js import JSONMarkup
from ptl_wsgi.escaping.rules import is_markup
from ptl_wsgi.html import htmlescape, htmltext
from ptl_wsgi.idioms import Undefined, at, converted_name, is_undefined
from ptl_wsgi.loader import TemplateNotFound, loader_for

__all__ = [
    "FILTERS",
    "TESTS",
    "attr",
    "batch",
    "capitalize",
    "center",
    "concat",
    "cycler",
    "default",
    "dictsort",
    "escape",
    "extended",
    "filesizeformat",
    "first",
    "forceescape",
    "format_string",
    "groupby",
    "GLOBALS",
    "globals_only",
    "imported",
    "include",
    "indent",
    "items",
    "join",
    "joiner",
    "last",
    "length",
    "lower",
    "map_values",
    "maximum",
    "minimum",
    "namespace",
    "pprint_value",
    "random_item",
    "reject",
    "rejectattr",
    "replace",
    "required_block",
    "reverse",
    "rounded",
    "safe",
    "select",
    "selectattr",
    "sliced",
    "sort",
    "striptags",
    "title",
    "to_float",
    "to_int",
    "to_list",
    "to_string",
    "tojson",
    "total",
    "trim",
    "truncate",
    "unique",
    "upper",
    "urlencode",
    "urlize",
    "wordcount",
    "wordwrap",
    "xmlattr",
]


# -- markup --------------------------------------------------------------------------------


def _is_markup(value: object) -> bool:
    return is_markup(value)


def safe(value: Any) -> Any:
    """``|safe``: *value* as trusted markup."""
    if isinstance(value, htmltext):
        return value
    return htmltext(value.__html__() if _is_markup(value) else str(value))


def escape(value: Any) -> Any:
    """``|escape``, ``|e``: *value* escaped into markup; markup stays as it is."""
    if _is_markup(value):
        return safe(value)
    return htmlescape(str(value))


def forceescape(value: Any) -> Any:
    """``|forceescape``: escaped even if it is markup already."""
    text = value.__html__() if _is_markup(value) else value
    return htmlescape(str.__str__(str(text)))


def _markup_text(value: Any) -> str:
    """The text of markup *value*, as a plain ``str`` (whose methods escape nothing)."""
    return "".join([value.__html__()])


def _soft(value: Any) -> Any:
    """*value* as a string, markup kept as markup (Jinja2's ``soft_str``)."""
    if isinstance(value, str):
        return safe(value) if _is_markup(value) else value
    if _is_markup(value):
        return safe(value)
    return str(value)


def concat(*parts: Any, autoescape: bool = False) -> Any:
    """``a ~ b``: the parts as strings, joined; markup if one is and the template escapes."""
    if autoescape and any(_is_markup(part) for part in parts):
        return htmltext("").join(safe(p) if _is_markup(p) else str(p) for p in parts)
    return "".join(str(part) for part in parts)


# -- lookups by attribute name ---------------------------------------------------------------


def _attribute_getter(
    attribute: str | int | None,
    postprocess: Callable[[Any], Any] | None = None,
    default: Any = None,
) -> Callable[[Any], Any]:
    """Jinja2's ``attribute=`` argument: a dotted path of items or attributes, ints as indexes."""
    if attribute is None:
        parts: list[Any] = []
    elif isinstance(attribute, str):
        parts = [int(p) if p.isdigit() else p for p in attribute.split(".")]
    else:
        parts = [attribute]

    def get(item: Any) -> Any:
        for part in parts:
            item = at(item, part)
            if default is not None and is_undefined(item):
                item = default
        return postprocess(item) if postprocess is not None else item

    return get


def _fold(case_sensitive: bool) -> Callable[[Any], Any] | None:
    if case_sensitive:
        return None
    return lambda value: value.lower() if isinstance(value, str) else value


def _sort_key(attribute: str | int | None, case_sensitive: bool) -> Callable[[Any], Any]:
    if isinstance(attribute, str) and "," in attribute:
        getters = [
            _attribute_getter(a.strip(), _fold(case_sensitive)) for a in attribute.split(",")
        ]
        return lambda item: [get(item) for get in getters]
    return _attribute_getter(attribute, _fold(case_sensitive))


# -- filters --------------------------------------------------------------------------------


def attr(obj: Any, name: str) -> Any:
    """``|attr(name)``: the attribute only (never the item), else undefined."""
    try:
        return getattr(obj, name)
    except AttributeError:
        return Undefined(name)


def batch(value: Iterable[Any], linecount: int, fill_with: Any = None) -> Iterator[list[Any]]:
    """``|batch(n)``: lists of *n* items, the last filled up with *fill_with* if given."""
    rows: list[Any] = []
    for item in value:
        if len(rows) == linecount:
            yield rows
            rows = []
        rows.append(item)
    if rows:
        if fill_with is not None and len(rows) < linecount:
            rows += [fill_with] * (linecount - len(rows))
        yield rows


def capitalize(s: Any) -> Any:
    """``|capitalize``."""
    return _soft(s).capitalize()


def center(value: Any, width: int = 80) -> Any:
    """``|center(width)``."""
    return _soft(value).center(width)


def default(value: Any, default_value: Any = "", boolean: bool = False) -> Any:
    """``|default(x)``, ``|d(x)``: *default_value* for undefined (or, with *boolean*, false)."""
    if is_undefined(value) or (boolean and not value):
        return default_value
    return value


def dictsort(
    value: Mapping[Any, Any], case_sensitive: bool = False, by: str = "key", reverse: bool = False
) -> list[tuple[Any, Any]]:
    """``|dictsort``: the items sorted by key (or ``by="value"``)."""
    if by == "key":
        position = 0
    elif by == "value":
        position = 1
    else:
        raise ValueError("You can only sort by either 'key' or 'value'")
    fold = _fold(case_sensitive)

    def key(item: tuple[Any, Any]) -> Any:
        return fold(item[position]) if fold is not None else item[position]

    return sorted(value.items(), key=key, reverse=reverse)


def filesizeformat(value: Any, binary: bool = False) -> str:
    """``|filesizeformat``: ``13.0 kB``, or ``13.0 KiB`` with *binary*."""
    size = float(value)
    base = 1024 if binary else 1000
    prefixes = (
        ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
        if binary
        else ("kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")
    )
    if size == 1:
        return "1 Byte"
    if size < base:
        return f"{int(size)} Bytes"
    unit = base
    for i, prefix in enumerate(prefixes):
        unit = base ** (i + 2)
        if size < unit:
            return f"{base * size / unit:.1f} {prefix}"
    return f"{base * size / unit:.1f} {prefixes[-1]}"


def first(seq: Iterable[Any]) -> Any:
    """``|first``: the first item, else undefined."""
    for item in seq:
        return item
    return Undefined("first")


def format_string(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``|format(...)``: printf-style formatting of *value* (markup formats escape)."""
    if args and kwargs:
        raise TypeError("can't handle positional and keyword arguments at the same time")
    return _soft(value) % (kwargs or args)


class _Group(NamedTuple):
    grouper: Any
    list: list[Any]

    def __repr__(self) -> str:
        return tuple.__repr__(self)

    def __str__(self) -> str:
        return tuple.__str__(self)


def groupby(
    value: Iterable[Any], attribute: str | int, default: Any = None, case_sensitive: bool = False
) -> list[_Group]:
    """``|groupby(attribute)``: ``(grouper, list)`` pairs sorted by the attribute."""
    key = _attribute_getter(attribute, _fold(case_sensitive), default)
    groups = [_Group(k, list(items)) for k, items in _groupby(sorted(value, key=key), key)]
    if not case_sensitive:
        # The grouper shown is the first item's own value, not the folded one.
        plain = _attribute_getter(attribute, default=default)
        groups = [_Group(plain(g.list[0]), g.list) for g in groups]
    return groups


def indent(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> Any:
    """``|indent``: every line but the first (and blank ones) indented by *width*."""
    indention = width if isinstance(width, str) else " " * width
    newline: Any = "\n"
    s = _soft(s)
    if _is_markup(s):
        newline = htmltext("\n")
    s += newline  # so that splitlines() keeps a last empty line
    if blank:
        rv = (newline + indention).join(s.splitlines())
    else:
        lines = s.splitlines()
        rv = lines.pop(0)
        if lines:
            rv += newline + newline.join(indention + line if line else line for line in lines)
    if first:
        rv = indention + rv
    return rv


def items(value: Any) -> Iterator[tuple[Any, Any]]:
    """``|items``: a mapping's items; none for undefined."""
    if is_undefined(value):
        return
    if not isinstance(value, Mapping):
        raise TypeError("Can only get item pairs from a mapping.")
    yield from value.items()


def join(
    value: Iterable[Any], d: Any = "", attribute: str | int | None = None, autoescape: bool = False
) -> Any:
    """``|join(d)``: the items as strings; in an escaping template, markup if one item is."""
    if attribute is not None:
        value = map(_attribute_getter(attribute), value)
    if not autoescape:
        return str(d).join(map(str, value))
    parts = list(value)
    markup = False
    for i, item in enumerate(parts):
        if _is_markup(item):
            markup = True
        else:
            parts[i] = str(item)
    if markup:
        return escape(d).join(parts)
    return str(d).join(parts)


def last(seq: Any) -> Any:
    """``|last``: the last item, else undefined."""
    try:
        return next(iter(reversed(seq)))
    except StopIteration:
        return Undefined("last")
    except TypeError:
        items = list(seq)
        return items[-1] if items else Undefined("last")


def length(value: Any) -> int:
    """``|length``, ``|count``."""
    return len(value)


def lower(s: Any) -> Any:
    """``|lower``."""
    return _soft(s).lower()


def map_values(value: Iterable[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
    """``|map('filter', ...)`` or ``|map(attribute='x', default=...)``."""
    if "attribute" in kwargs and not args:
        attribute = kwargs.pop("attribute")
        fallback = kwargs.pop("default", None)
        if kwargs:
            raise TypeError(f"Unexpected keyword argument {next(iter(kwargs))!r}")
        get = _attribute_getter(attribute, default=fallback)
        return (get(item) for item in value)
    if not args:
        raise TypeError("map requires a filter argument")
    name, *rest = args
    function = _filter(name)
    return (function(item, *rest, **kwargs) for item in value)


def _extreme(
    value: Iterable[Any], case_sensitive: bool, attribute: str | int | None, pick: Any
) -> Any:
    items = list(value)
    if not items:
        return Undefined("min/max")
    return pick(items, key=_attribute_getter(attribute, _fold(case_sensitive)))


def maximum(value: Iterable[Any], case_sensitive: bool = False, attribute: Any = None) -> Any:
    """``|max``: the largest item (case folded unless *case_sensitive*), else undefined."""
    return _extreme(value, case_sensitive, attribute, max)


def minimum(value: Iterable[Any], case_sensitive: bool = False, attribute: Any = None) -> Any:
    """``|min``: the smallest item (case folded unless *case_sensitive*), else undefined."""
    return _extreme(value, case_sensitive, attribute, min)


def pprint_value(value: Any) -> str:
    """``|pprint``."""
    return _pprint.pformat(value)


def random_item(seq: Any) -> Any:
    """``|random``: one item at random, else undefined."""
    try:
        return _random.choice(seq)
    except IndexError:
        return Undefined("random")


def _select(value: Iterable[Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
            by_attribute: bool, keep: bool) -> Iterator[Any]:  # fmt: skip
    if by_attribute:
        if not args:
            raise TypeError("Missing parameter for attribute name")
        get = _attribute_getter(args[0])
        args = args[1:]
    else:
        get = _identity
    if args:
        name, *rest = args
        test = _test(name)

        def passes(item: Any) -> bool:
            return bool(test(get(item), *rest, **kwargs))
    else:

        def passes(item: Any) -> bool:
            return bool(get(item))

    return (item for item in value if passes(item) is keep)


def _identity(value: Any) -> Any:
    return value


def select(value: Iterable[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
    """``|select('test', ...)``: the items passing the test (true ones without a test)."""
    return _select(value, args, kwargs, by_attribute=False, keep=True)


def reject(value: Iterable[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
    """``|reject('test', ...)``: the items failing the test."""
    return _select(value, args, kwargs, by_attribute=False, keep=False)


def selectattr(value: Iterable[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
    """``|selectattr('attr', 'test', ...)``: the items whose attribute passes."""
    return _select(value, args, kwargs, by_attribute=True, keep=True)


def rejectattr(value: Iterable[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
    """``|rejectattr('attr', 'test', ...)``: the items whose attribute fails."""
    return _select(value, args, kwargs, by_attribute=True, keep=False)


def replace(s: Any, old: Any, new: Any, count: int | None = None, autoescape: bool = False) -> Any:
    """``|replace(old, new)``; in an escaping template, markup *old* or *new* escape *s* first."""
    if count is None:
        count = -1
    if not autoescape:
        return str(s).replace(str(old), str(new), count)
    if _is_markup(old) or (_is_markup(new) and not _is_markup(s)):
        s = escape(s)
    else:
        s = _soft(s)
    if not _is_markup(s):
        return s.replace(str(old), str(new), count)
    # Markup: markupsafe's replace, which looks for *old* as it is and escapes *new*.
    old_text = _markup_text(old) if _is_markup(old) else str(old)
    return htmltext(_markup_text(s).replace(old_text, _markup_text(escape(new)), count))


def reverse(value: Any) -> Any:
    """``|reverse``: a string reversed, else an iterator over the items backwards."""
    if isinstance(value, str):
        return value[::-1]
    try:
        return reversed(value)
    except TypeError:
        try:
            items = list(value)
        except TypeError as exc:
            raise TypeError(f"argument must be iterable: {exc}") from None
        items.reverse()
        return items


def rounded(value: float, precision: int = 0, method: str = "common") -> float:
    """``|round``: ``common`` (Python's round), ``ceil`` or ``floor``."""
    if method not in ("common", "ceil", "floor"):
        raise TypeError("method must be common, ceil or floor")
    if method == "common":
        return round(value, precision)
    function = math.ceil if method == "ceil" else math.floor
    scale: float = 10**precision
    return function(value * scale) / scale


def sliced(value: Iterable[Any], slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
    """``|slice(n)``: *n* columns of the items, in order."""
    seq = list(value)
    per, extra = divmod(len(seq), slices)
    offset = 0
    for number in range(slices):
        start = offset + number * per
        if number < extra:
            offset += 1
        end = offset + (number + 1) * per
        column = seq[start:end]
        if fill_with is not None and number >= extra:
            column.append(fill_with)
        yield column


def sort(
    value: Iterable[Any],
    reverse: bool = False,
    case_sensitive: bool = False,
    attribute: str | int | None = None,
) -> list[Any]:
    """``|sort``: the items sorted (case folded unless *case_sensitive*)."""
    return sorted(value, key=_sort_key(attribute, case_sensitive), reverse=reverse)


_TAG_OR_COMMENT = re.compile(r"<!--.*?-->|<[^>]*>", re.DOTALL)


def striptags(value: Any) -> str:
    """``|striptags``: tags and comments removed, spaces collapsed, entities read."""
    import html

    text = value.__html__() if _is_markup(value) else str(value)
    return html.unescape(" ".join(_TAG_OR_COMMENT.sub("", text).split()))


def to_float(value: Any, default: float = 0.0) -> float:
    """``|float``."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def to_int(value: Any, default: int = 0, base: int = 10) -> int:
    """``|int``: ``int()`` of the value (strings in *base*, floats truncated), else *default*."""
    try:
        if isinstance(value, str):
            return int(value, base)
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return default


def to_list(value: Iterable[Any]) -> list[Any]:
    """``|list``."""
    return list(value)


def to_string(value: Any) -> Any:
    """``|string``: a string, markup kept as markup."""
    return _soft(value)


_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"}


def tojson(value: Any, indent: int | None = None) -> Any:
    """``|tojson``: JSON safe in HTML (``<>&'`` as ``\\u`` escapes), as markup."""
    text = json.dumps(value, indent=indent, sort_keys=True)
    # JSONMarkup: markup, and in a script the JavaScript value it is (not a string of it).
    return JSONMarkup(re.sub(r"[<>&']", lambda m: _JSON_ESCAPES[m.group()], text))


def title(s: Any) -> str:
    """``|title``: each word capitalized (a word begins after a space or one of ``-([{<``)."""
    pieces = re.split(r"([-\s({\[<]+)", _soft(s))
    return "".join(piece[0].upper() + piece[1:].lower() for piece in pieces if piece)


def total(iterable: Iterable[Any], attribute: str | int | None = None, start: Any = 0) -> Any:
    """``|sum``."""
    if attribute is not None:
        iterable = map(_attribute_getter(attribute), iterable)
    return sum(iterable, start)


def trim(value: Any, chars: str | None = None) -> Any:
    """``|trim``."""
    return _soft(value).strip(chars)


def truncate(
    s: Any, length: int = 255, killwords: bool = False, end: str = "...", leeway: int = 5
) -> Any:
    """``|truncate``: at most *length* (+ *leeway*) characters, at a word end unless *killwords*."""
    if length < len(end):
        raise ValueError(f"expected length >= {len(end)}, got {length}")
    if leeway < 0:
        raise ValueError(f"expected leeway >= 0, got {leeway}")
    if len(s) <= length + leeway:
        return s
    if killwords:
        return s[: length - len(end)] + end
    return s[: length - len(end)].rsplit(" ", 1)[0] + end


def unique(
    value: Iterable[Any], case_sensitive: bool = False, attribute: str | int | None = None
) -> Iterator[Any]:
    """``|unique``: the items without repeats, in order (case folded unless *case_sensitive*)."""
    key = _attribute_getter(attribute, _fold(case_sensitive))
    seen = set()
    for item in value:
        k = key(item)
        if k not in seen:
            seen.add(k)
            yield item


def upper(s: Any) -> Any:
    """``|upper``."""
    return _soft(s).upper()


def _url_quote(value: Any, for_query: bool = False) -> str:
    if not isinstance(value, bytes):
        value = str(value).encode("utf-8")
    quoted = quote_from_bytes(value, b"" if for_query else b"/")
    return quoted.replace("%20", "+") if for_query else quoted


def urlencode(value: Any) -> Any:
    """``|urlencode``: a string quoted for a URL path, or pairs as a query string.

    The result is markup (its ``&`` escaped): it holds no character HTML or a URL could
    read as anything but itself, and as markup it goes into a URL's query as it is, as in
    Jinja2 (``href="?{{ params|urlencode }}"``), where a string would be one value.
    """
    if isinstance(value, str) or not isinstance(value, Iterable):
        return htmlescape(_url_quote(value))
    pairs = value.items() if isinstance(value, Mapping) else iter(value)
    return htmlescape("&".join(f"{_url_quote(k, True)}={_url_quote(v, True)}" for k, v in pairs))


# What urlize links: a web address (a scheme or www., or a name under a common top-level
# domain, or an IP address after a scheme), with a port and a path, query or fragment.
_WEB_ADDRESS = re.compile(
    r"^(?:(?:https?://|www\.)(?:[\w%-]+\.)*(?:[a-z]{2,63}|xn--[\w%]{2,59})"
    r"|(?:[\w%-]{2,63}\.)+(?:com|net|int|edu|gov|org|info|mil)"
    r"|https?://(?:\d{1,3}(?:\.\d{1,3}){3}|\[(?:[\da-f]{0,4}:){2}(?:[\da-f]{0,4}:?){1,6}\]))"
    r"(?::\d{1,5})?(?:[/?#]\S*)?$",
    re.IGNORECASE,
)
_EMAIL_ADDRESS = re.compile(r"^\S+@\w[\w.-]*\.\w+$")
_LEADING = re.compile(r"^(?:[(<]|&lt;)+")
_TRAILING = re.compile(r"(?:[)>.,\n]|&gt;)+$")
_SCHEME = re.compile(r"^[a-zA-Z][\w+.-]*:(?://)?$")


def _link(word: str, attributes: str, limit: int | None, extra_schemes: tuple[str, ...]) -> str:
    """*word* (escaped text) with the address in it made a link, as urlize does."""
    lead = _LEADING.match(word)
    head = lead.group() if lead else ""
    middle = word[len(head) :]
    tail = ""
    trail = _TRAILING.search(middle)
    if trail:
        middle, tail = middle[: trail.start()], trail.group()
    # A closing bracket that balances one in the address belongs to it.
    for opening, closing in (("(", ")"), ("<", ">"), ("&lt;", "&gt;")):
        missing = middle.count(opening) - middle.count(closing)
        for _ in range(min(missing, tail.count(closing))):
            end = tail.index(closing) + len(closing)
            middle, tail = middle + tail[:end], tail[end:]
    shown = middle if limit is None or len(middle) <= limit else middle[:limit] + "..."
    if _WEB_ADDRESS.match(middle):
        href = middle if middle.startswith(("http://", "https://")) else "https://" + middle
        middle = f'<a href="{href}"{attributes}>{shown}</a>'
    elif middle.startswith("mailto:") and _EMAIL_ADDRESS.match(middle[7:]):
        middle = f'<a href="{middle}">{middle[7:]}</a>'
    elif (
        "@" in middle[1:]
        and not middle.startswith(("www.", "@"))
        and ":" not in middle
        and _EMAIL_ADDRESS.match(middle)
    ):
        middle = f'<a href="mailto:{middle}">{middle}</a>'
    else:
        for scheme in extra_schemes:
            if middle != scheme and middle.startswith(scheme):
                middle = f'<a href="{middle}"{attributes}>{middle}</a>'
    return head + middle + tail


def urlize(
    value: Any,
    trim_url_limit: int | None = None,
    nofollow: bool = False,
    target: str | None = None,
    rel: str | None = None,
    extra_schemes: Iterable[str] | None = None,
    *,
    escaping: bool = False,
) -> Any:
    """``|urlize``: web and e-mail addresses in the text made links (``rel="noopener"``).

    The text is escaped; *escaping* says whether the template escapes (the result is
    then markup).  Links shown longer than *trim_url_limit* are cut and end in ``...``.
    """
    rel_values = set((rel or "").split()) | {"noopener"}
    if nofollow:
        rel_values.add("nofollow")
    attributes = f' rel="{htmlescape(" ".join(sorted(rel_values)))}"'
    if target:
        attributes += f' target="{htmlescape(target)}"'
    schemes = tuple(extra_schemes or ())
    for scheme in schemes:
        if _SCHEME.match(scheme) is None:
            raise ValueError(f"{scheme!r} is not a valid URI scheme prefix.")
    words = re.split(r"(\s+)", _markup_text(escape(value)))
    rv = "".join(_link(w, attributes, trim_url_limit, schemes) for w in words)
    return htmltext(rv) if escaping else rv


def wordcount(s: Any) -> int:
    """``|wordcount``."""
    return len(re.findall(r"\w+", str(_soft(s))))


def wordwrap(
    s: Any,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    """``|wordwrap``: each line wrapped at *width*, lines joined by *wrapstring* (a newline)."""
    wrapstring = "\n" if wrapstring is None else wrapstring
    return wrapstring.join(
        wrapstring.join(
            textwrap.wrap(
                line,
                width=width,
                expand_tabs=False,
                replace_whitespace=False,
                break_long_words=break_long_words,
                break_on_hyphens=break_on_hyphens,
            )
        )
        for line in str(s).splitlines()
    )


_ATTRIBUTE_NAME = re.compile(r"[\s/>=]")


def xmlattr(d: Mapping[str, Any], autoescape: bool = True, *, escaping: bool = False) -> Any:
    """``|xmlattr``: ``key="value"`` pairs (none and undefined values left out).

    *autoescape* is Jinja2's argument (a leading space); *escaping* says whether the
    template escapes (the result is then markup).
    """
    pairs = []
    for key, value in d.items():
        if value is None or is_undefined(value):
            continue
        if _ATTRIBUTE_NAME.search(key) is not None:
            raise ValueError(f"Invalid character in attribute name: {key!r}")
        pairs.append(f'{escape(key)}="{escape(value)}"')
    rv = " ".join(pairs)
    if autoescape and rv:
        rv = " " + rv
    return htmltext(rv) if escaping else rv


def include(
    importer: str, names: Any, context: Mapping[str, Any], ignore_missing: bool = False
) -> Any:
    """Render the first of the original template *names* (a name or a list) that exists.

    For converted templates naming what they include at render time: *importer* is the
    including module's ``__name__``, whose loader looks the converted names up.
    """
    loader = loader_for(importer)
    candidates = [names] if isinstance(names, str) else list(names)
    for name in candidates:
        try:
            template = loader.get_template(converted_name(str(name)))
        except TemplateNotFound:
            continue
        return template.render(context)
    if ignore_missing:
        return ""
    raise LookupError(f"none of the templates {candidates!r} exists")


#: The names Flask puts in its Jinja2 environment's globals (with Jinja2's own, which
#: converted templates have from this module): what an import without context sees.
GLOBALS = ("url_for", "get_flashed_messages", "config", "request", "session", "g")


def globals_only(context: Mapping[str, Any]) -> dict[str, Any]:
    """The part of *context* an ``{% import %}`` without context sees: the globals."""
    return {name: context[name] for name in GLOBALS if name in context}


def extended(page: Any, importer: str, names: Any) -> Any:
    """``{% extends name %}`` with a name computed at render time: *page* over that template.

    *page* is the converted child's instance (its blocks); the result is an instance of a
    class deriving from the child's class and then from the named template's, so the
    child's blocks fill the parent's page and ``super()`` reaches the parent's blocks.
    *names* may be a list: the first existing template is taken.
    """
    loader = loader_for(importer)
    candidates = [names] if isinstance(names, str) else list(names)
    for name in candidates:
        try:
            module = loader.module(converted_name(str(name)))
        except TemplateNotFound:
            continue
        both = type("Template", (type(page), module.Template), {})
        return both(**page.context)
    raise LookupError(f"none of the templates {candidates!r} exists")


def imported(template: Any) -> Any:
    """``{% import %}``: *template* (a converted template's instance) with its top level run.

    As Jinja2 runs an imported template's body, so that the names it sets at the top level
    are the module's (``forms.x``); its output is dropped.
    """
    template.page()
    return template


def required_block(name: str) -> None:
    """A ``{% block name required %}`` the page did not fill: Jinja2's error."""
    raise RuntimeError(f"Required block {name!r} not found.")


# -- globals ---------------------------------------------------------------------------------


class namespace:
    """``namespace(...)``: attributes a loop can set (``{% set ns.found = true %}``)."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        args[0].__dict__.update(dict(*args[1:], **kwargs))

    def __repr__(self) -> str:
        return f"<Namespace {self.__dict__!r}>"


class cycler:
    """``cycler(a, b, ...)``: ``next()`` gives each in turn; ``current``, ``reset()``."""

    def __init__(self, *items: Any) -> None:
        if not items:
            raise RuntimeError("at least one item has to be provided")
        self.items = items
        self.pos = 0

    def reset(self) -> None:
        """Back to the first item."""
        self.pos = 0

    @property
    def current(self) -> Any:
        """The item ``next()`` gives next."""
        return self.items[self.pos]

    def next(self) -> Any:
        """The current item; moves on."""
        rv = self.current
        self.pos = (self.pos + 1) % len(self.items)
        return rv

    __next__ = next


class joiner:
    """``joiner(sep)``: calling it gives ``""`` the first time, *sep* after."""

    def __init__(self, sep: str = ", ") -> None:
        self.sep = sep
        self.used = False

    def __call__(self) -> str:
        if not self.used:
            self.used = True
            return ""
        return self.sep


# -- tests -----------------------------------------------------------------------------------


def is_sequence(value: Any) -> bool:
    """``is sequence``: has a length and items."""
    try:
        len(value)
        value.__getitem__  # noqa: B018 (the lookup is the test)
    except Exception:
        return False
    return True


def is_iterable(value: Any) -> bool:
    """``is iterable``."""
    try:
        iter(value)
    except TypeError:
        return False
    return True


def is_number(value: Any) -> bool:
    """``is number``."""
    return isinstance(value, Number)


def is_integer(value: Any) -> bool:
    """``is integer``: an int, not a bool."""
    return isinstance(value, int) and value is not True and value is not False


def is_boolean(value: Any) -> bool:
    """``is boolean``."""
    return value is True or value is False


def is_escaped(value: Any) -> bool:
    """``is escaped``: markup (it has ``__html__``)."""
    return is_markup(value)


def is_sameas(value: Any, other: Any) -> bool:
    """``is sameas``: the very same object."""
    return value is other


def is_mapping(value: Any) -> bool:
    """``is mapping``."""
    return isinstance(value, Mapping)


def is_lower(value: Any) -> bool:
    """``is lower``."""
    return str(value).islower()


def is_upper(value: Any) -> bool:
    """``is upper``."""
    return str(value).isupper()


def is_filter(value: Any) -> bool:
    """``is filter``: a Jinja2 builtin filter's name."""
    return value in FILTERS


def is_test(value: Any) -> bool:
    """``is test``: a Jinja2 builtin test's name."""
    return value in TESTS


def _eq(a: Any, b: Any) -> bool:
    return bool(a == b)


def _ne(a: Any, b: Any) -> bool:
    return bool(a != b)


def _lt(a: Any, b: Any) -> bool:
    return bool(a < b)


def _le(a: Any, b: Any) -> bool:
    return bool(a <= b)


def _gt(a: Any, b: Any) -> bool:
    return bool(a > b)


def _ge(a: Any, b: Any) -> bool:
    return bool(a >= b)


#: Jinja2's builtin tests as functions (for ``select``/``reject``; converted tests are inline).
TESTS: dict[str, Callable[..., bool]] = {
    "boolean": is_boolean,
    "callable": callable,
    "defined": lambda v: not is_undefined(v),
    "divisibleby": lambda v, n: v % n == 0,
    "eq": _eq,
    "equalto": _eq,
    "==": _eq,
    "escaped": is_escaped,
    "even": lambda v: v % 2 == 0,
    "false": lambda v: v is False,
    "filter": is_filter,
    "float": lambda v: isinstance(v, float),
    "ge": _ge,
    ">=": _ge,
    "gt": _gt,
    "greaterthan": _gt,
    ">": _gt,
    "in": lambda v, seq: v in seq,
    "integer": is_integer,
    "iterable": is_iterable,
    "le": _le,
    "<=": _le,
    "lower": is_lower,
    "lessthan": _lt,
    "lt": _lt,
    "<": _lt,
    "mapping": is_mapping,
    "ne": _ne,
    "!=": _ne,
    "none": lambda v: v is None,
    "number": is_number,
    "odd": lambda v: v % 2 == 1,
    "sameas": is_sameas,
    "sequence": is_sequence,
    "string": lambda v: isinstance(v, str),
    "test": is_test,
    "true": lambda v: v is True,
    "undefined": is_undefined,
    "upper": is_upper,
}

#: Jinja2's builtin filters: the name of each one's function here (Python's ``abs``).
FILTERS: dict[str, str] = {
    "abs": "abs",
    "attr": "attr",
    "batch": "batch",
    "capitalize": "capitalize",
    "center": "center",
    "count": "length",
    "d": "default",
    "default": "default",
    "dictsort": "dictsort",
    "e": "escape",
    "escape": "escape",
    "filesizeformat": "filesizeformat",
    "first": "first",
    "float": "to_float",
    "forceescape": "forceescape",
    "format": "format_string",
    "groupby": "groupby",
    "indent": "indent",
    "int": "to_int",
    "items": "items",
    "join": "join",
    "last": "last",
    "length": "length",
    "list": "to_list",
    "lower": "lower",
    "map": "map_values",
    "max": "maximum",
    "min": "minimum",
    "pprint": "pprint_value",
    "random": "random_item",
    "reject": "reject",
    "rejectattr": "rejectattr",
    "replace": "replace",
    "reverse": "reverse",
    "round": "rounded",
    "safe": "safe",
    "select": "select",
    "selectattr": "selectattr",
    "slice": "sliced",
    "sort": "sort",
    "string": "to_string",
    "striptags": "striptags",
    "sum": "total",
    "title": "title",
    "tojson": "tojson",
    "trim": "trim",
    "truncate": "truncate",
    "unique": "unique",
    "upper": "upper",
    "urlencode": "urlencode",
    "urlize": "urlize",
    "wordcount": "wordcount",
    "wordwrap": "wordwrap",
    "xmlattr": "xmlattr",
}


def _filter(name: str) -> Callable[..., Any]:
    """The function of the builtin filter *name* (for ``map``)."""
    try:
        function_name = FILTERS[name]
    except KeyError:
        raise RuntimeError(f"No filter named {name!r}.") from None
    function: Callable[..., Any] = abs if function_name == "abs" else globals()[function_name]
    return function


def _test(name: str) -> Callable[..., bool]:
    try:
        return TESTS[name]
    except KeyError:
        raise RuntimeError(f"No test named {name!r}.") from None
