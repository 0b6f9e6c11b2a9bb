"""The htmltext type: trusted markup, and the functions that escape everything else.

Two twins implement the hot paths: the C accelerator ``ptl_wsgi._htmltext_c``
and the pure-Python ``ptl_wsgi._htmltext_py``.  This module picks the C twin
when it is built and not forced off with ``PTL_WSGI_PURE_PYTHON=1``, and
builds the public :class:`htmltext` class on the twin's base so that both
share one definition of the less frequent str methods.
"""

from __future__ import annotations

import os
from _thread import allocate_lock  # threading's lock type, without importing threading
from types import SimpleNamespace

from ptl_wsgi.escaping.nonce import CURRENT as _nonce
from ptl_wsgi.escaping.nonce import USED as _nonce_used
from ptl_wsgi.escaping.nonce import carrier as _nonce_carrier
from ptl_wsgi.escaping.rules import is_markup, is_template

# Not typing.TYPE_CHECKING: importing typing costs every one-shot process its time.
# (Nor functools, copyreg, or the Python twin when the C one is active: each is
# imported where it is needed, off the path of a render from the bytecode cache.)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import ModuleType
    from typing import Any

__all__ = [
    "htmltext",
    "htmlescape",
    "htmlformat",
    "H",
    "html_fstring",
    "stringify",
    "TemplateIO",
    "html_join",
    "plain_join",
    "format_field",
    "field_output",
    "percent_output",
    "outside_text",
    "field_outside_text",
    "percent_outside_text",
    "loop_output",
    "first_of",
    "IMPLEMENTATION",
    "ACCELERATOR_STATUS",
    "implementation",
    "ValuelessAttr",
    "href",
    "htmltag",
    "js_escape",
    "nl2br",
    "pluralize",
    "truncate",
    "url_quote",
    "url_with_query",
]


def _escape_args(markup_of: Any, args: Iterable[Any]) -> list[Any]:
    return [markup_of(a) if isinstance(a, str) or is_markup(a) else a for a in args]


def _escape_kwargs(markup_of: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(kwargs, _escape_args(markup_of, kwargs.values()), strict=True))


def _template_io(
    markup_of: Any, stringify: Any, cls: type, twin_name: str, join: Any, nonced: type
) -> type:
    """TemplateIO over one twin's functions (no benchmark reaches it: no C of its own)."""
    carriers = (nonced,)

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
            self(value)
            return self

        def __call__(self, value: Any) -> None:
            if value is not None:
                if not self.html:
                    self._parts.append(stringify(value))
                elif type(value) in carriers:  # (markup carrying nonce slots: kept)
                    self._parts.append(value)
                else:
                    self._parts.append(markup_of(value))

        def getvalue(self) -> Any:
            if self.html and any(type(part) in carriers for part in self._parts):
                # Joined as html_join joins markup: slots kept where their markup lands
                # in text.
                return join(
                    [p if type(p) in carriers else str.__new__(cls, p) for p in self._parts]
                )
            text = "".join(self._parts)
            return str.__new__(cls, text) if self.html else text

        def __str__(self) -> str:
            return "".join(self._parts)

        def __repr__(self) -> str:
            return f"<TemplateIO html={self.html} {''.join(self._parts)!r}>"

        def __reduce__(self) -> tuple[Any, ...]:
            # Like htmltext's pickles: by a function, so either twin's loads anywhere.
            return (_unpickle_template_io, (self.html, list(self._parts), twin_name))

    TemplateIO.__module__ = __name__
    TemplateIO.__qualname__ = "TemplateIO"
    return TemplateIO


def _build(twin: ModuleType) -> SimpleNamespace:
    """Build the htmltext class on *twin*'s base and collect the twin's API."""
    markup_of = twin.markup_of

    def _wrap_text(name: str) -> Any:
        str_method = getattr(str, name)

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            escaped, named = _escape_args(markup_of, args), _escape_kwargs(markup_of, kwargs)
            return str.__new__(type(self), str_method(self, *escaped, **named))

        method.__name__ = name
        method.__wrapped__ = str_method  # type: ignore[attr-defined]  # inspect: str's signature
        method.__doc__ = f"Like :meth:`str.{name}`, escaping text arguments; returns htmltext."
        return method

    def _wrap_strip(name: str) -> Any:
        # The argument is a set of characters, not text: escaping it would strip
        # the letters of entities ("&lt;" -> "&l").  Stripping trusted markup
        # leaves trusted markup, so the characters are used as given (as Markup does).
        str_method = getattr(str, name)

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return str.__new__(type(self), str_method(self, *args, **kwargs))

        method.__name__ = name
        method.__wrapped__ = str_method  # type: ignore[attr-defined]  # inspect: str's signature
        method.__doc__ = f"Like :meth:`str.{name}`; returns htmltext."
        return method

    def _wrap_parts(name: str) -> Any:
        str_method = getattr(str, name)

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            cls = type(self)
            escaped, named = _escape_args(markup_of, args), _escape_kwargs(markup_of, kwargs)
            parts = str_method(self, *escaped, **named)
            return type(parts)(str.__new__(cls, p) for p in parts)

        method.__name__ = name
        method.__wrapped__ = str_method  # type: ignore[attr-defined]  # inspect: str's signature
        method.__doc__ = f"Like :meth:`str.{name}`, escaping text arguments; parts are htmltext."
        return method

    twin_name = "c" if twin.__name__.endswith("_c") else "python"

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        if type(self) is not cls:
            # A subclass pickles by reference, like any str subclass.
            if protocol >= 2:
                return str.__reduce_ex__(self, protocol)
            # (copyreg's protocol 0/1 path would pickle a C base instance.)
            import copyreg

            state = getattr(self, "__dict__", None) or None
            newobj = copyreg.__newobj__  # type: ignore[attr-defined]  # not in typeshed
            return (newobj, (type(self), str(self)), state)
        if _active is not None and cls is _active.htmltext:
            return (_unpickle, (str(self),))
        # The other twin's class (tests, benchmarks): keep it on the round trip.
        return (_unpickle, (str(self), twin_name))

    namespace: dict[str, Any] = {
        "__slots__": (),
        "__module__": __name__,
        "__doc__": (
            "A str of trusted markup.\n\n"
            "``htmltext(x)`` trusts ``x``: its ``__html__()`` if it has one, else ``str(x)``.\n"
            "Operators and methods escape every operand or argument that is not\n"
            "markup (``+``, ``%``, ``format``, ``join``, ...), and return htmltext;\n"
            "``%``, ``format`` and ``format_map`` escape each value for the place it\n"
            "lands in the format (a URL, a script, ...), as a compiled template does."
        ),
        "__repr__": lambda self: f"{type(self).__name__}({str.__repr__(self)})",
        "__reduce_ex__": __reduce_ex__,
    }
    for name in (
        "capitalize", "casefold", "center", "expandtabs", "ljust", "lower",
        "removeprefix", "removesuffix", "replace", "rjust",
        "swapcase", "title", "upper", "zfill",
    ):  # fmt: skip
        namespace[name] = _wrap_text(name)
    for name in ("lstrip", "rstrip", "strip"):
        namespace[name] = _wrap_strip(name)
    for name in ("partition", "rpartition", "rsplit", "split", "splitlines"):
        namespace[name] = _wrap_parts(name)
    cls = type("htmltext", (twin.HtmlTextBase,), namespace)
    cls.__qualname__ = "htmltext"
    twin.register(cls)
    nonced, nonced_join = _nonce_carrier(cls, markup_of, twin.template_join)
    twin.register_nonced(nonced, nonced_join, _nonce_used)
    api = SimpleNamespace(
        name=twin_name,
        module=twin,
        htmltext=cls,
        nonced=nonced,
        htmlescape=twin.htmlescape,
        htmlformat=twin.htmlformat,
        stringify=twin.stringify,
        TemplateIO=_template_io(
            twin.markup_of, twin.stringify, cls, twin_name, twin.html_join, nonced
        ),
        html_join=twin.html_join,
        template_join=twin.template_join,
        plain_join=twin.plain_join,
        format_field=twin.format_field,
        field_output=twin.field_output,
        percent_output=twin.percent_output,
        outside_text=twin.outside_text,
        field_outside_text=twin.field_outside_text,
        percent_outside_text=twin.percent_outside_text,
        loop_output=twin.loop_output,
        first_of=twin.first_of,
        escape_str=twin.escape_str,
    )
    return api


def _load_c() -> tuple[ModuleType | None, str]:
    if os.environ.get("PTL_WSGI_PURE_PYTHON", "") not in ("", "0"):
        return None, "forced off by PTL_WSGI_PURE_PYTHON"
    try:
        from ptl_wsgi import _htmltext_c
    except ImportError as exc:
        return None, f"not built ({exc})"
    return _htmltext_c, "active"


_c_twin, ACCELERATOR_STATUS = _load_c()
_active: SimpleNamespace | None = None


_built: dict[str, SimpleNamespace] = {}
_build_lock = allocate_lock()


def implementation(name: str) -> SimpleNamespace:
    """Return the API of one twin, ``"c"`` or ``"python"``, for tests and benchmarks.

    Raises ImportError for ``"c"`` when the accelerator is not built.
    """
    built = _built.get(name)
    if built is not None:
        return built
    if name == "python":
        from ptl_wsgi import _htmltext_py as twin
    elif name == "c":
        from ptl_wsgi import _htmltext_c as twin
    else:
        raise ValueError(f"unknown implementation {name!r}; expected 'c' or 'python'")
    # Built once: a second build would register another class with the twin, and
    # its functions would return instances of a class no caller holds.
    with _build_lock:
        built = _built.get(name)
        if built is None:
            built = _built[name] = _build(twin)
    return built


_active = implementation("c" if _c_twin is not None else "python")

#: ``"c"`` or ``"python"``: which twin this process uses.
IMPLEMENTATION: str = _active.name

htmltext = _active.htmltext
htmlescape = _active.htmlescape
#: HTML escaping of a str (no markup check), the escapers' quoted-attribute layer.
escape_str = _active.escape_str
_twin_htmlformat = _active.htmlformat
_twin_contextual_htmlformat = _active.module.contextual_htmlformat
_plan: Any = None  # ptl_wsgi.escaping.planner.plan, imported on the first t-string
_needs_context: Any = None  # ptl_wsgi.escaping.planner.needs_context, with it


# The strings of t-strings whose values all land in text (by the engine's plan): the
# twin's contextual_htmlformat() formats such a t-string itself, with no call here.
_text_only_strings: dict[tuple[str, ...], bool] = {}
_MAX_TEXT_ONLY = 1024


def _htmlformat_in_context(template: Any, /, join_items: bool = True) -> Any:
    """:func:`htmlformat` of a t-string the twin did not format itself (:func:`html_fstring`'s
    without *join_items*)."""
    global _plan, _needs_context
    if _plan is None:
        # Imported here: the context engine (re) is not needed by a cached render.
        from ptl_wsgi.escaping.planner import needs_context as _needs_context
        from ptl_wsgi.escaping.planner import plan as _plan
    strings = getattr(template, "strings", None)
    if type(strings) is not tuple or not is_template(template):
        return _twin_htmlformat(template)  # the twin's TypeError
    planned = _plan(strings)
    if planned.text_only and not (planned.nonces and _in_nonce_scope()):
        if not planned.nonces:
            # (A plan with nonces is the twin's only outside a nonce scope: not cached.)
            if len(_text_only_strings) >= _MAX_TEXT_ONLY:
                _text_only_strings.clear()  # literal parts come from code: a flood is not kept
            _text_only_strings[strings] = True
        if join_items and not _needs_context(template):
            return _twin_htmlformat(template)
    from ptl_wsgi.escaping.escapers import for_class
    from ptl_wsgi.escaping.planner import contextual_format

    escapers = for_class(htmltext, implementation(IMPLEMENTATION).module)
    if not _in_nonce_scope():
        return htmltext(contextual_format(template, escapers, format_field, join_items))
    # The nonce slots of its literals (nested ones in text too), carried by its markup.
    # (whether it ends in text, with its values, is followed if something is added after it)
    return _marked(contextual_format(template, escapers, format_field, join_items, marks=True))


def _fstring_in_context(template: Any, /) -> Any:
    """:func:`html_fstring` of a t-string the twin did not format itself."""
    return _htmlformat_in_context(template, False)


def _in_nonce_scope() -> bool:
    return _nonce_used[0] and _nonce.get() is not None


_marked = _active.nonced.marked
_active.module.set_htmlformat(_text_only_strings, _htmlformat_in_context, _fstring_in_context)

#: A t-string as htmltext, each value escaped for the context it lands in.
#:
#: ``htmlformat(t'<a href="{url}">{label}</a>')`` does what the compiler does
#: for an ``[html]`` template (docs/contextual-escaping.md): the literal parts
#: are trusted and parsed once per distinct ``strings`` tuple; a value in text
#: or a quoted plain attribute is HTML-escaped (by the twin's own
#: ``htmlformat``), a value in a URL, script, style, unquoted attribute, ...
#: gets that context's escaper.  A nested t-string is formatted the same way,
#: and escaped as a value where it lands outside text.  Anything but a
#: Template is a TypeError; literal parts that put a value where none may go
#: (a tag name) or that do not end in text are a ValueError.  A list, tuple or
#: generator in text is its items joined (docs/tstrings.md).
#:
#: (The twin's ``contextual_htmlformat``, which formats a t-string whose values all land
#: in text itself and calls ``_htmlformat_in_context`` for any other: a Python function
#: around it took a third of a one-value t-string's time.)
htmlformat = _twin_contextual_htmlformat
#: Short for :func:`htmlformat`, as in Quixote: ``H(t"<b>{name}</b>")``.
H = htmlformat
#: A t-string as the same f-string in an ``[html]`` template makes it: :func:`htmlformat`,
#: but a list, tuple or generator in one of its own fields is one value (its ``format()``,
#: escaped), never its items joined.  ``ptl-wsgi convert --to-py`` writes the f-strings
#: of ``[html]`` templates as ``html_fstring(t"...")`` (docs/tstrings.md).
html_fstring = _active.module.contextual_fstring
stringify = _active.stringify
TemplateIO = _active.TemplateIO
html_join = _active.html_join
# A compiled template's join (trusts its parts' places: not for application code).
_template_join = _active.template_join
plain_join = _active.plain_join
format_field = _active.format_field
field_output = _active.field_output
percent_output = _active.percent_output
outside_text = _active.outside_text
field_outside_text = _active.field_outside_text
percent_outside_text = _active.percent_outside_text
loop_output = _active.loop_output
first_of = _active.first_of


def _unpickling_api(twin: str | None) -> SimpleNamespace:
    """The twin a pickle names if this process has it, else the active one."""
    if twin is not None and twin != IMPLEMENTATION:
        try:
            return implementation(twin)
        except ImportError:
            pass
    assert _active is not None  # (set at import, before anything can be unpickled)
    return _active


def _unpickle(text: str, twin: str | None = None) -> Any:
    # Pickles name this function, not a twin's class, so they load in any process.
    return _unpickling_api(twin).htmltext(text)


def _unpickle_template_io(html: bool, parts: list[str], twin: str | None = None) -> Any:
    out = _unpickling_api(twin).TemplateIO(html)
    out._parts = parts
    return out


# Quixote's helpers and the text filters, bound to the active twin.  Loaded on
# first use: they need ptl_wsgi.beyond_escaping (re, urllib, secrets), which a template
# served from the bytecode cache never does.
_HELPERS = frozenset({"htmltag", "href", "url_quote", "url_with_query", "nl2br", "js_escape"})
_FILTERS = frozenset({"ValuelessAttr", "pluralize", "truncate"})
# HTML-only formatting for compiled templates (the Python twin's code serves both twins).
_HTML_FORMATTERS = frozenset({"format_mod_html", "format_html", "format_map_html"})


def _html_formatters() -> dict[str, Any]:
    """``%``, ``format()`` and ``format_map()`` of markup with every value HTML-escaped.

    htmltext's own operators escape each value for the context it lands in,
    parsing the format from text.  A compiled ``[html]`` template calls these
    instead for its literal formats: the compiler planned them where they are
    output (their values are escaped for it already, and an output statement
    may continue a tag), or the template opted out of contextual escaping.
    """
    from ptl_wsgi import _htmltext_py as twin

    cls = htmltext
    mod, fmt_args, fmt_map = twin.format_mod_html, twin.format_html, twin.format_map_html

    nonced = implementation(IMPLEMENTATION).nonced

    def format_mod_html(fmt: Any, arg: Any, nonces: Any = (), /) -> Any:
        formatted = mod(str(fmt), arg, nonces)
        if nonces and type(formatted) is tuple:  # (text, slots) in a nonce scope
            return nonced.made(*formatted)
        return cls(formatted)

    def format_html(fmt: Any, /, *args: Any, **kwargs: Any) -> Any:
        return cls(fmt_args(str(fmt), *args, **kwargs))

    def format_map_html(fmt: Any, mapping: Any, /) -> Any:
        return cls(fmt_map(str(fmt), mapping))

    return {"format_mod_html": format_mod_html, "format_html": format_html,
            "format_map_html": format_map_html}  # fmt: skip


if TYPE_CHECKING:  # what __getattr__ below gives, as type checkers should see it
    from ptl_wsgi._quixote_helpers import Helpers, ValuelessAttr, pluralize, truncate

    _typed = Helpers(_active)
    htmltag = _typed.htmltag
    href = _typed.href
    url_quote = _typed.url_quote
    url_with_query = _typed.url_with_query
    nl2br = _typed.nl2br
    js_escape = _typed.js_escape


_helpers_bound: list[Any] = []


def _bound_helpers() -> Any:
    if not _helpers_bound:
        from ptl_wsgi._quixote_helpers import Helpers

        _helpers_bound.append(Helpers(implementation(IMPLEMENTATION)))  # (that is _active)
    return _helpers_bound[0]


def __getattr__(name: str) -> Any:
    if name in _HELPERS:
        value = getattr(_bound_helpers(), name)
    elif name in _FILTERS:
        from ptl_wsgi import _quixote_helpers

        value = getattr(_quixote_helpers, name)
    elif name in _HTML_FORMATTERS:
        value = _html_formatters()[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
