"""The escapers of contextual autoescaping: one per place a value can land.

The compiler (through :mod:`ptl_wsgi.htmlcontext`) decides at compile time
which escaper a value needs; compiled templates call the escapers here at run
time, bound as ``_ptl_esc_NAME``.  Each returns htmltext, so the final join of
the template output keeps it as it is (a non-negative int is returned as it is:
its digits are the same escaped or not, and the join formats it).  Values with
``__html__`` (htmltext, ``Markup``, a template's result) are trusted in every
context: they pass through unchanged, as they do in text.

An escaper's name is ``BASE`` (inside ``<script>``, ``<style>`` or a comment) or
``BASE_LAYER``: the base encodes for the inner language, the layer for the HTML
around it: ``q`` a quoted attribute value (HTML escaping), ``u`` an unquoted
one (every character that could end it as a character reference), ``u0`` the
start of an unquoted one (as ``u``, and an empty value becomes ``""``).
See docs/contextual-escaping.md for the table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ptl_wsgi.html import format_field, htmlescape, htmltext

# Re-exported for compiled templates (as _ptl_int, _ptl_type): names no template can shadow.
int = int
type = type

__all__ = [
    "ESCAPERS",
    "UNSAFE_CSS",
    "contextual_format",
    "format_value",
    "percent_field",
    "percent_value",
    "plan",
]

#: What the CSS filter outputs instead of a value that could leave a CSS value;
#: an identifier no stylesheet uses, so that it is visible and harmless.
UNSAFE_CSS = "ZptlZ"

Escaper = Callable[[Any], Any]


# -- formatting, before escaping ----------------------------------------------------


def format_value(value: Any, conversion: int, spec: str) -> Any:
    """An f-string or ``str.format`` field's value with its conversion and spec applied.

    Markup (``__html_format__``, ``__html__``) with no conversion stays markup,
    as in text; anything else becomes the str that the field would produce.
    """
    if conversion == -1 and type(value) is not str:
        html_format = getattr(value, "__html_format__", None)
        if html_format is not None:
            return htmltext(html_format(spec))
        if getattr(value, "__html__", None) is not None:
            return htmltext(format_field(value, -1, spec))
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


def _markup(value: Any) -> Any:
    """htmltext for a markup value, else None."""
    if type(value) is htmltext:
        return value
    html = getattr(value, "__html__", None)
    if html is None or isinstance(value, type):
        return None
    return htmltext(html())


def _text(value: Any) -> str:
    return value if type(value) is str else str(value)


# -- bases: the inner language ------------------------------------------------------


def _identity(text: str) -> str:
    return text


def _escape_html(text: str) -> str:
    return str(htmlescape(text))


_COMMENT_UNSAFE = re.compile("[-!<>&]")


def _comment(text: str) -> str:
    # In a comment nothing is decoded: references only keep "-->" and "<!--" from forming.
    return _COMMENT_UNSAFE.sub(lambda m: f"&#{ord(m.group())};", text)


def _drop(text: str) -> str:
    # A value in a JS or CSS comment would do nothing but risk ending it.
    return ""


# URLs: the scheme policy is safety.is_safe_url's (imported when first needed).
_URL_KEEP_PATH = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&*+,;=%]")
_URL_KEEP_QUERY = re.compile(r"[^A-Za-z0-9\-._~]")


def _percent(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass"))


def _url_path(text: str) -> str:
    """Normalise: percent-encode what a URL may not hold (quotes, spaces, parentheses, ...)."""
    return _URL_KEEP_PATH.sub(_percent, text)


def _url_slash(text: str) -> str:
    """Right after a leading "/" (or "scheme:"): as a path, but it cannot start a host."""
    text = _url_path(text)
    return "%2F" + text[1:] if text.startswith("/") else text


def _url_query(text: str) -> str:
    """Encode everything but unreserved characters: the value is one URL component."""
    return _URL_KEEP_QUERY.sub(_percent, text)


# Scheme names that run script: a value that is one of them, alone at the start of a
# URL, becomes that scheme with the literal ":" after it (f'{proto}://{host}').
_SCRIPT_SCHEMES = frozenset({"javascript", "vbscript", "livescript", "data"})
_URL_IGNORED = re.compile("[\t\n\r]")  # browsers drop them anywhere in a URL


def _url(text: str) -> str:
    from ptl_wsgi.safety import UNSAFE_URL, is_safe_url

    if not is_safe_url(text):
        return UNSAFE_URL
    word = _URL_IGNORED.sub("", text).lstrip("".join(map(chr, range(0x21)))).lower()
    if word in _SCRIPT_SCHEMES:
        return UNSAFE_URL
    return _url_path(text)


def _url_list(text: str) -> str:
    """SVG animation ``values``: every ";"-separated item is checked as a URL's start.

    Items are kept as they are (the list also holds numbers: "0 0;1 1"); the HTML
    layer escapes what could end the attribute.
    """
    for item in text.split(";"):
        if item.strip() and _url(item.strip()) != _url_path(item.strip()):
            from ptl_wsgi.safety import UNSAFE_URL

            return UNSAFE_URL
    return text


_SRCSET_DESCRIPTOR = re.compile(r"\d+(?:\.\d+)?[wx]\Z")


def _srcset(text: str) -> str:
    from ptl_wsgi.safety import UNSAFE_URL, is_safe_url

    out = []
    for candidate in text.split(","):
        parts = candidate.split()
        if not parts:
            out.append("")
            continue
        url, descriptors = parts[0], parts[1:]
        if not is_safe_url(url) or not all(_SRCSET_DESCRIPTOR.match(d) for d in descriptors):
            return UNSAFE_URL
        out.append(" ".join([_url_path(url), *descriptors]))
    return ",".join(out)


_JS_STRING_UNSAFE = re.compile("[\\\\\"'`$<>&/\x00-\x1f\x7f\u2028\u2029\ud800-\udfff]")
_JS_REGEXP_UNSAFE = re.compile(
    "[\\\\\"'`$<>&/\x00-\x1f\x7f\u2028\u2029\ud800-\udfff.*+?^|()\\[\\]{}-]"
)
_JS_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _js_char(match: re.Match[str]) -> str:
    char = match.group()
    short = _JS_SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _js_string(text: str) -> str:
    """Inside a JS string of either quote or a template literal: the string holds *text*."""
    return _JS_STRING_UNSAFE.sub(_js_char, text)


def _json_string(text: str) -> str:
    """Inside a string of a JSON script: ``\\uXXXX`` escapes, valid in JSON and in JS."""
    return _JS_STRING_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _js_regexp(text: str) -> str:
    """Inside a JS regular expression: *text* matches itself; empty is "(?:)" (not "//")."""
    if not text:
        return "(?:)"
    return _JS_REGEXP_UNSAFE.sub(_js_char, text)


# "/" too: should the compiler ever take a regular expression for an expression, a
# value still could not end it.
_JSON_UNSAFE = re.compile("[<>&/\u2028\u2029\ud800-\udfff]")


def _js_value(value: Any) -> str:
    """A JS expression: the value as a JSON literal, spaced so it cannot join its neighbours."""
    import json

    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        text = json.dumps(value)  # NaN and the infinities are JS expressions too
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = json.dumps(str(value), ensure_ascii=False)
    text = _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return f" {text} "


def _json_value(value: Any) -> str:
    """In a JSON script: the value as JSON (NaN and the infinities, not JSON, as null)."""
    import json

    try:
        text = json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False
        )
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), default=str)
    text = _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return f" {text} "


def _finite(value: Any) -> Any:
    """*value* with every float that is not finite (in lists, tuples, dicts) as None."""
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value


# CSS: only values that cannot leave a value or load anything (Go's filter, stricter).
_CSS_UNSAFE_CHARS = re.compile("[\x00-\x1f\x7f\"'()/;:@\\[\\]\\\\`{}<>&!*=]|--")
_CSS_UNSAFE_WORDS = re.compile(r"expression|binding|behavior|url|import", re.IGNORECASE)


def _css(text: str) -> str:
    if _CSS_UNSAFE_CHARS.search(text) or _CSS_UNSAFE_WORDS.search(text):
        return UNSAFE_CSS
    return text


_CSS_STRING_UNSAFE = re.compile(
    "[\x00-\x1f\x7f\"'()\\\\<>&/:;@`{}\\[\\]+\u2028\u2029\ud800-\udfff]"
)


def _css_string(text: str) -> str:
    """Inside a CSS string: CSS hex escapes (with the space that ends them)."""
    return _CSS_STRING_UNSAFE.sub(lambda m: f"\\{ord(m.group()):x} ", text)


# -- layers: the HTML around ----------------------------------------------------------

_UNQUOTED_UNSAFE = re.compile("[\x00-\x20\x7f\"'`<=>&+]")


def _unquoted(text: str) -> str:
    return _UNQUOTED_UNSAFE.sub(lambda m: f"&#{ord(m.group())};", text)


def _unquoted_start(text: str) -> str:
    return _unquoted(text) if text else '""'


_BASES: dict[str, Callable[[str], str]] = {
    "text": _identity,
    "attr_name": _identity,  # filtered in _attr_name
    "comment": _comment,
    "drop": _drop,
    "url": _url,
    "url_path": _url_path,
    "url_slash": _url_slash,
    "url_query": _url_query,
    "srcset": _srcset,
    "url_list": _url_list,
    "js_string": _js_string,
    "json_string": _json_string,
    "js_regexp": _js_regexp,
    "css": _css,
    "css_string": _css_string,
    "srcdoc": _escape_html,
}
_URL_STARTS = (_url, _url_list, _srcset)
_LAYERS: dict[str, Callable[[str], str]] = {
    "": _identity,
    "q": _escape_html,
    "u": _unquoted,
    "u0": _unquoted_start,
}


def _compose(base: Callable[[str], str], layer: Callable[[str], str], ints: bool = True) -> Escaper:
    # Where a URL starts, markup is trusted as markup but its scheme is still checked:
    # markup made in a template for text (a fragment, a helper template's result) has
    # its values escaped for text only, and a script URL in it would run.
    checks_scheme = base in _URL_STARTS

    def escape(value: Any) -> Any:
        if type(value) is str:
            text = value
        elif type(value) is int and ints and value >= 0:
            # Digits mean the same in every context these escapers serve: the int goes
            # to the output as it would in text (the common "/item/%s" % id costs nothing).
            return value
        else:
            markup = _markup(value)
            if markup is not None:
                if checks_scheme and _refused_url(base, markup):
                    return htmltext(layer(_unsafe_url()))
                return markup
            text = str(value)
        return htmltext(layer(base(text)))

    return escape


def _refused_url(base: Callable[[str], str], markup: str) -> bool:
    """True when the URL check *base* refuses (some URL of) the text *markup* stands for."""
    from html import unescape

    return _unsafe_url() in base(unescape(str(markup)))


def _unsafe_url() -> str:
    from ptl_wsgi.safety import UNSAFE_URL

    return UNSAFE_URL


def _compose_js_value(
    layer: Callable[[str], str], encode: Callable[[Any], str] = _js_value
) -> Escaper:
    def escape(value: Any) -> Any:
        markup = _markup(value)
        if markup is not None:
            return markup
        return htmltext(layer(encode(value)))

    return escape


_ATTR_NAMES = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_.:\-]*(?:\s+[A-Za-z_][A-Za-z0-9_.:\-]*)*\s*")


def _attr_name(value: Any) -> Any:
    """Attribute names between a tag's attributes: only names of plain attributes pass."""
    markup = _markup(value)
    if markup is not None:
        return markup
    text = _text(value)
    if not text:
        return htmltext("")
    from ptl_wsgi.htmlcontext import attribute_kind

    if _ATTR_NAMES.fullmatch(text) is None or any(
        attribute_kind(name) != "plain" for name in text.split()
    ):
        return htmltext(UNSAFE_CSS)
    return htmltext(text)


def _tag_attrs(value: Any) -> Any:
    """Right after a tag's name: attribute names as between attributes, after a space.

    The space is there even for an empty value: "<scr" + "" + "ipt>" must not be
    the <script> the compiler did not see.
    """
    escaped = _attr_name(value)
    if type(value) is not htmltext and not hasattr(value, "__html__"):
        return htmltext(" " + escaped)
    return escaped


def _build() -> dict[str, Escaper]:
    escapers: dict[str, Escaper] = {}
    for base_name, base in _BASES.items():
        for layer_name, layer in _LAYERS.items():
            name = f"{base_name}_{layer_name}" if layer_name else base_name
            escapers[name] = _compose(base, layer, ints=base is not _drop)
            escapers[name].__name__ = escapers[name].__qualname__ = name
    for layer_name, layer in _LAYERS.items():
        name = f"js_value_{layer_name}" if layer_name else "js_value"
        escapers[name] = _compose_js_value(layer)
        escapers[name].__name__ = escapers[name].__qualname__ = name
    escapers["json_value"] = _compose_js_value(_identity, _json_value)  # (script bodies only)
    escapers["json_value"].__name__ = escapers["json_value"].__qualname__ = "json_value"
    escapers["attr_name"] = _attr_name
    escapers["tag_attrs"] = _tag_attrs
    return escapers


#: Every escaper, by the name :func:`ptl_wsgi.htmlcontext.escaper_for` gives it.
ESCAPERS: dict[str, Escaper] = _build()
globals().update(ESCAPERS)  # compiled templates import them by name


# -- t-strings: the same at run time --------------------------------------------------


_PLANS: dict[tuple[str, ...], tuple[Escaper | None, ...]] = {}
_MAX_PLANS = 1024


def plan(strings: tuple[str, ...]) -> tuple[Escaper | None, ...]:
    """The escaper for each interpolation between *strings* (a Template's literal parts).

    :func:`ptl_wsgi.htmlcontext.plan`'s names as functions (that room cannot
    import this one).  None means a text-like context: plain HTML escaping.
    Raises ValueError (:class:`ptl_wsgi.htmlcontext.ContextError`) where no
    value may go, or when the template does not end in text.
    """
    found = _PLANS.get(strings)
    if found is None:
        found = _plan(strings)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()  # templates are few; a flood of distinct ones is not worth keeping
        _PLANS[strings] = found
    return found


def _plan(strings: tuple[str, ...]) -> tuple[Escaper | None, ...]:
    from ptl_wsgi.htmlcontext import plan as plan_names

    return tuple(None if name is None else ESCAPERS[name] for name in plan_names(strings))


def contextual_format(template: Any) -> htmltext:
    """A PEP 750 Template as htmltext, each value escaped for the context it lands in.

    Conversion and format spec are applied first, then the escaper; markup
    values are kept; a nested Template is formatted the same way, kept as
    markup in a text-like context and escaped as a value anywhere else.
    """
    strings = tuple(template.strings)
    escapers = plan(strings)
    out: list[str] = []
    for text, escaper, interpolation in zip(
        strings, escapers, template.interpolations, strict=False
    ):
        out.append(text)
        value = interpolation.value
        if _is_template(value) and interpolation.conversion is None:
            value = contextual_format(value)
            if escaper is not None:
                # Markup made for text: outside text it is a value like any other (its
                # own values were escaped for text, not for where it lands).
                value = str(value)
        conversion = -1 if interpolation.conversion is None else ord(interpolation.conversion)
        spec = interpolation.format_spec
        if escaper is None:
            # Text-like: what the same field of an f-string in an [html] template outputs.
            out.append(str(format_field(value, conversion, spec)))
            continue
        if conversion != -1 or spec:
            value = format_value(value, conversion, spec)
        out.append(str(escaper(value)))
    out.append(strings[-1])
    return htmltext("".join(out))


def _is_template(value: Any) -> bool:
    cls = type(value)
    return cls.__name__ == "Template" and cls.__module__ in ("string.templatelib", "templatelib")
