"""The escapers of contextual escaping: one per place a value can land, by name.

The context engine (:mod:`ptl_wsgi.escaping.context`) names the escaper a
place needs; :func:`build` makes the functions for one htmltext class, each
taking any value and returning markup of that class (a non-negative int is
returned as it is where its digits mean the same escaped or not, and the join
formats it).  Values that are markup (:func:`~ptl_wsgi.escaping.rules.is_markup`)
pass through unchanged in every context, as they do in text, except that a
URL's scheme is still checked.

A name is ``BASE`` (inside ``<script>``, ``<style>`` or a comment) or
``BASE_LAYER``: the base encodes for the inner language (``url``, ``js``,
``css`` modules), the layer for the HTML around it: ``q`` a quoted attribute
value (HTML escaping), ``u`` an unquoted one, ``u0`` the start of an unquoted
one.  See docs/contextual-escaping.md for the table.
"""

from __future__ import annotations

import html

from ptl_wsgi.escaping import css, js, markup, url
from ptl_wsgi.escaping.rules import (
    INT_SAFE_BASES,
    UNSAFE_CSS,
    UNSAFE_URL,
    URL_START_BASES,
    is_markup,
)

# Not typing.TYPE_CHECKING: importing typing costs a one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Escaper = Callable[[Any], Any]
    Text = Callable[[str], str]

__all__ = ["build", "for_class", "format_value", "percent_field", "percent_value"]


def format_value(
    value: Any,
    conversion: int,
    spec: str,
    format_field: Callable[..., Any],
    markup: Callable[[str], Any],
) -> Any:
    """An f-string or ``str.format`` field's value with its conversion and spec applied.

    Markup (``__html_format__``, ``__html__``) with no conversion stays markup (made
    by *markup*; *format_field*, a twin's, formats it as in text); anything else
    becomes the str that the field would produce.
    """
    if conversion == -1 and type(value) is not str:
        html_format = getattr(value, "__html_format__", None)
        if html_format is not None:
            return markup(html_format(spec))
        if is_markup(value):
            return markup(format_field(value, -1, spec))
    if conversion == 115:
        value = str(value)
    elif conversion == 114:
        value = repr(value)
    elif conversion == 97:
        value = ascii(value)
    return format(value, spec)


def percent_value(value: Any, fmt: Any) -> Any:
    """The value a lone ``%s`` formats: a 1-tuple gives its item, as ``fmt % value`` does."""
    if isinstance(value, tuple):
        if tuple.__len__(value) != 1:
            _ = str(fmt) % value  # str's own error for the wrong number of values
            raise ValueError("percent_value(): fmt must have one field")
        value = tuple.__getitem__(value, 0)
    return value


def percent_field(value: Any, spec: str) -> str:
    """*value* formatted by one %-field *spec* (``%r``, ``%.5s``: no key), before its escaper."""
    return spec % (value,)


def _identity(text: str) -> str:
    return text


def _bases(escape: Text) -> dict[str, Text]:
    return {
        "text": _identity,
        "comment": markup.comment,
        "drop": markup.drop,
        "url": url.url,
        "url_path": url.url_path,
        "url_slash": url.url_slash,
        "url_query": url.url_query,
        "srcset": url.srcset,
        "url_list": url.url_list,
        "js_string": js.js_string,
        "json_string": js.json_string,
        "js_regexp": js.js_regexp,
        "css": css.css,
        "css_string": css.css_string,
        "srcdoc": escape,
    }


def _layers(escape: Text) -> dict[str, Text]:
    return {"": _identity, "q": escape, "u": markup.unquoted, "u0": markup.unquoted_start}


def build(cls: type, escape: Text) -> dict[str, Escaper]:
    """Every escaper, by the name the context engine gives it, returning *cls* markup.

    *escape* is HTML escaping of a str (the twin's ``escape_str``).
    """

    def make(text: str) -> Any:
        return str.__new__(cls, text)

    def to_markup(value: Any) -> Any:
        """*cls* for a markup value, else None."""
        if type(value) is cls:
            return value
        if not is_markup(value):
            return None
        return make(str(value.__html__()))

    def compose(name: str, base: Text, layer: Text) -> Escaper:
        ints = name in INT_SAFE_BASES
        # Where a URL starts, markup is trusted as markup but its scheme is still
        # checked: markup made for text (a fragment, a helper template's result) has
        # its values escaped for text only, and a script URL in it would run.
        checks_scheme = name in URL_START_BASES

        def escaper(value: Any) -> Any:
            if type(value) is str:
                text = value
            elif type(value) is int and ints and value >= 0:
                return value
            else:
                found = to_markup(value)
                if found is not None:
                    if checks_scheme and UNSAFE_URL in base(html.unescape(str(found))):
                        return make(layer(UNSAFE_URL))
                    return found
                text = str(value)
            return make(layer(base(text)))

        return escaper

    def compose_js_value(layer: Text, encode: Callable[[Any], str] = js.js_value) -> Escaper:
        def escaper(value: Any) -> Any:
            found = to_markup(value)
            if found is not None:
                return found
            return make(layer(encode(value)))

        return escaper

    def attr_name(value: Any) -> Any:
        """Between a tag's attributes: only names of plain attributes pass."""
        found = to_markup(value)
        if found is not None:
            return found
        text = value if type(value) is str else str(value)
        if text and not markup.attribute_names(text):
            return make(UNSAFE_CSS)
        return make(text)

    def tag_attrs(value: Any) -> Any:
        """Right after a tag's name: attribute names, after a space (even for an empty
        value: "<scr" + "" + "ipt>" must not be the <script> the compiler did not see)."""
        escaped = attr_name(value)
        return escaped if is_markup(value) else make(" " + escaped)

    escapers: dict[str, Escaper] = {}
    layers = _layers(escape)
    for base_name, base in _bases(escape).items():
        for layer_name, layer in layers.items():
            name = f"{base_name}_{layer_name}" if layer_name else base_name
            escapers[name] = compose(base_name, base, layer)
    for layer_name, layer in layers.items():
        name = f"js_value_{layer_name}" if layer_name else "js_value"
        escapers[name] = compose_js_value(layer)
    escapers["json_value"] = compose_js_value(_identity, js.json_value)  # (script bodies only)
    escapers["attr_name"] = attr_name
    escapers["tag_attrs"] = tag_attrs
    for name, function in escapers.items():
        function.__name__ = function.__qualname__ = name
    return escapers


_built: dict[type, dict[str, Escaper]] = {}


def for_class(cls: type, escape: Text) -> dict[str, Escaper]:
    """:func:`build` for *cls*, once: compiled templates, t-strings and run-time
    formatting of one twin share its escapers."""
    found = _built.get(cls)
    if found is None:
        found = _built.setdefault(cls, build(cls, escape))
    return found
