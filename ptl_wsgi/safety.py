"""Helpers for the places where HTML escaping alone is not enough.

Escaping makes text inert in element content and in quoted attribute values.
It does nothing for what a value *means* once it is there: an escaped
``javascript:alert(1)`` is still a script URL in an ``href``, an escaped
``alert(1)`` is still a script in an ``onclick``, and escaping is the wrong
encoding inside ``<script>``.  This module covers those cases:

* :func:`safe_url` -- a URL for ``href``/``src``/``action``, with script
  schemes replaced by :data:`UNSAFE_URL`;
* :func:`attrs` -- a dict rendered as attributes, refusing invalid names and
  event handlers, sending URL-valued attributes through :func:`safe_url`;
* :func:`json_script` -- data for scripts, as JSON in a
  ``<script type="application/json">`` element;
* :func:`new_nonce`, :func:`csp_nonce`, :func:`nonce_scope` and
  :func:`content_security_policy` -- a per-request Content-Security-Policy
  nonce; they live in :mod:`ptl_wsgi.csp` and are re-exported here, their
  former home, so existing imports keep working.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ptl_wsgi.csp import (
    CSP_NONCE_KEY,
    content_security_policy,
    csp_nonce,
    new_nonce,
    nonce_scope,
)
from ptl_wsgi.html import htmlescape, htmltext

__all__ = [
    "CSP_NONCE_KEY",
    "DEFAULT_SCHEMES",
    "UNSAFE_URL",
    "URL_ATTRIBUTES",
    "attrs",
    "content_security_policy",
    "csp_nonce",
    "is_safe_url",
    "json_script",
    "new_nonce",
    "nonce_scope",
    "safe_url",
]

# -- URLs ---------------------------------------------------------------------

#: The schemes :func:`safe_url` accepts unless told otherwise.
DEFAULT_SCHEMES: tuple[str, ...] = ("http", "https", "mailto", "tel")

#: What :func:`safe_url` returns instead of a refused URL: it goes nowhere, and
#: the fragment makes the refusal easy to spot in a page or a log.
UNSAFE_URL = "about:invalid#ptl-unsafe-url"

# Schemes that run script or render attacker-chosen documents; no allow-list may name them.
_FORBIDDEN_SCHEMES = frozenset({"javascript", "vbscript", "livescript", "data", "blob"})

_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
# Raster images only: SVG may carry script.
_DATA_IMAGE = re.compile(
    r"data:image/(?:png|gif|jpeg|webp|avif|bmp);base64,[a-z0-9+/=]*\Z", re.IGNORECASE
)
# Characters that browsers, old and new, drop or ignore while parsing a URL's
# scheme: C0 controls, space, DEL, and the zero-width and BOM characters.
_IGNORED = re.compile("[\x00-\x20\x7f\u00ad\u200b-\u200f\u2028\u2029\u2060\ufeff]+")
# html.unescape() repeated this often undoes any nesting a real attack uses.
_MAX_UNESCAPE = 8


def _url_text(value: Any) -> str:
    """The URL that *value* denotes: markup (``__html__``) is decoded once, like a browser does."""
    if type(value) is str:
        return value
    markup = getattr(value, "__html__", None)
    if markup is not None:
        return html.unescape(str(markup()))
    return str(value)


def _canonical(url: str) -> str:
    """*url* as the most lenient parser could read its scheme.

    Character references are decoded until nothing changes (so
    ``&amp;#106;avascript:`` and ``javascript&colon;`` are seen for what a
    second decoding would make of them), then every ignorable character is
    removed, wherever it stands.  The result is only inspected, never output.
    """
    return _IGNORED.sub("", _decoded(url))


def _check_schemes(schemes: Iterable[str]) -> frozenset[str]:
    allowed = frozenset(s.lower().rstrip(":") for s in schemes)
    forbidden = allowed & _FORBIDDEN_SCHEMES
    if forbidden:
        raise ValueError(f"scheme(s) {sorted(forbidden)} run script and cannot be allowed")
    return allowed


def is_safe_url(
    value: Any, *, schemes: Iterable[str] = DEFAULT_SCHEMES, allow_data_images: bool = False
) -> bool:
    """Whether :func:`safe_url` would keep *value*; see there for the rules."""
    allowed = _check_schemes(schemes)
    canonical = _canonical(_url_text(value))
    match = _SCHEME.match(canonical)
    if match is None:
        # No scheme at all: relative, protocol-relative or a fragment.  A colon
        # after any character that cannot be in a scheme ("a/b:c", "%3A") is a
        # path to every browser.  Anything that starts like a scheme but is cut
        # short by a non-scheme character before its colon is refused anyway:
        # ``java<U+FFFD>script:`` is a relative path to a modern browser, but no
        # legitimate URL needs the benefit of that doubt.
        head = canonical.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        return ":" not in head
    scheme = match.group(1).lower()
    if scheme == "data":
        return allow_data_images and _DATA_IMAGE.match(canonical) is not None
    return scheme in allowed


def safe_url(
    value: Any, *, schemes: Iterable[str] = DEFAULT_SCHEMES, allow_data_images: bool = False
) -> htmltext:
    """*value* as an escaped URL for a quoted ``href``, ``src`` or ``action`` value.

    Relative URLs (``/a``, ``a/b``, ``?q``, ``#f``, ``//host/path``) are kept.
    A URL with a scheme is kept only if the scheme is in *schemes*
    (``http``, ``https``, ``mailto`` and ``tel`` by default); with
    *allow_data_images*, base64 ``data:`` URLs of raster images are kept too.
    Everything else becomes :data:`UNSAFE_URL`, a harmless ``about:`` URL,
    rather than raising, so an attacker's input cannot break the page.

    The scheme is judged after the normalisations that browsers apply and
    then some: character references decoded (repeatedly), tabs, newlines,
    control characters and spaces removed anywhere, case ignored.  A value
    with ``__html__`` is taken as markup and decoded once.  ``javascript``,
    ``vbscript``, ``data`` and ``blob`` can never be put in *schemes*.
    """
    url = _url_text(value)
    if not is_safe_url(url, schemes=schemes, allow_data_images=allow_data_images):
        return htmltext(UNSAFE_URL)
    return htmlescape(url)


# -- attributes -------------------------------------------------------------------

#: Attributes whose value is a URL (or, for SVG animation, may become one);
#: :func:`attrs` sends their values through :func:`safe_url`.  A prefixed
#: name (``xlink:href``, ``foo:href``) counts by its local part too.
URL_ATTRIBUTES = frozenset(
    {
        "action", "background", "cite", "codebase", "data", "formaction", "href",
        "icon", "longdesc", "lowsrc", "dynsrc", "manifest", "poster", "src",
        "xlink:href", "xml:base", "classid", "archive", "profile", "usemap",
        "itemtype", "attributionsrc",
        # Lists of URLs: every one of them is checked.
        "srcset", "imagesrcset", "ping",
        # <animate attributeName="href" to="javascript:..."> sets a link's URL.
        "from", "to", "by", "values",
    }
)  # fmt: skip

# Attributes holding several URLs, split on what separates them in any of
# them (commas, semicolons, whitespace); splitting finer than a browser does
# can only make a piece look *more* like a scheme, never less.
_URL_LISTS = frozenset({"srcset", "imagesrcset", "ping", "archive", "values"})
_URL_SEPARATORS = re.compile(r"[\s,;]+")

# Attributes that are script whatever their value: event handlers (matched by
# prefix) and srcdoc, whose value is a whole HTML document.
_SCRIPT_ATTRIBUTES = frozenset({"srcdoc"})

# What makes a style attribute load a resource or run code, in any browser
# old or new; a backslash (CSS escapes) or comment could spell any of them.
_UNSAFE_STYLE = re.compile(
    r"[\\]|/\*|url\(|image\(|image-set\(|cross-fade\(|element\(|src\(|expression"
    r"|behavior|binding|@import|javascript:|vbscript:"
)

# The HTML attribute-name grammar: anything but controls, space, " ' > / = and
# noncharacters.  "<" and "`" are allowed by the grammar but refused here, as
# parse errors that some tools mishandle.
_NAME = re.compile(
    "[^\x00-\x20\x7f-\x9f\"'>/=<`\ufdd0-\ufdef\ufffe\uffff"
    "\U0001fffe\U0001ffff\U0002fffe\U0002ffff\U0003fffe\U0003ffff\U0004fffe\U0004ffff"
    "\U0005fffe\U0005ffff\U0006fffe\U0006ffff\U0007fffe\U0007ffff\U0008fffe\U0008ffff"
    "\U0009fffe\U0009ffff\U000afffe\U000affff\U000bfffe\U000bffff\U000cfffe\U000cffff"
    "\U000dfffe\U000dffff\U000efffe\U000effff\U000ffffe\U000fffff\U0010fffe\U0010ffff]+"
)


def _url_value(name: str, value: Any) -> htmltext:
    if name.rpartition(":")[2] in _URL_LISTS:
        text = _url_text(value)
        pieces = _URL_SEPARATORS.split(_decoded(text))
        if all(is_safe_url(piece) for piece in pieces):
            return htmlescape(text)
        return htmltext(UNSAFE_URL)
    return safe_url(value)


def _decoded(text: str) -> str:
    """*text* with character references decoded until nothing changes."""
    for _ in range(_MAX_UNESCAPE):
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    return text


def _is_safe_style(text: str) -> bool:
    canonical = _IGNORED.sub("", _decoded(text)).lower()
    return _UNSAFE_STYLE.search(canonical) is None


def _markup_value(value: Any) -> str:
    # Markup is trusted as the attribute's source text, but a bare '"' in it
    # would end the quoted value; '&quot;' means the same there and cannot.
    return str(value.__html__()).replace('"', "&quot;")


def _is_url_attribute(key: str) -> bool:
    return key in URL_ATTRIBUTES or key.rpartition(":")[2] in URL_ATTRIBUTES


def attrs(mapping: Mapping[str, Any], *, allow_events: bool = False) -> htmltext:
    """Render *mapping* as attributes: ``' name="value"'`` each, in order.

    ``True`` renders a bare attribute, ``False`` and ``None`` leave it out;
    values with ``__html__`` (markup) are trusted as attribute source text
    (only a ``"`` in them is escaped), anything else is ``str()``-ed and
    escaped.  Values of :data:`URL_ATTRIBUTES` go through :func:`safe_url`
    (each URL of ``srcset``, ``ping`` and the like); a ``style`` value that is
    not markup is left out if it could load a resource or run code
    (``url(``, ``expression``, ``@import``, CSS escapes, ...).

    Raises ValueError for a name outside the HTML attribute-name grammar, a
    name given twice (ignoring case), or an event handler (``on*``) or
    ``srcdoc`` attribute whose value is not markup, unless *allow_events* is
    true: those are script, which escaping does not make safe.
    """
    seen: set[str] = set()
    out: list[str] = []
    for name, value in mapping.items():
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise ValueError(f"invalid attribute name {name!r}")
        key = name.lower()
        if key in seen:
            raise ValueError(f"attribute {name!r} given twice")
        seen.add(key)
        markup = getattr(value, "__html__", None) is not None and not isinstance(value, type)
        if (key.startswith("on") or key in _SCRIPT_ATTRIBUTES) and not (allow_events or markup):
            raise ValueError(
                f"attribute {name!r} is script: give its value as markup (htmltext) "
                "if it is trusted code"
            )
        if value is None or value is False:
            continue
        if value is True:
            out.append(f" {name}")
            continue
        if _is_url_attribute(key):
            text = str(_url_value(key, value))
        elif markup:
            text = _markup_value(value)
        elif key == "style" and not _is_safe_style(str(value)):
            continue
        else:
            text = str(htmlescape(value))
        out.append(f' {name}="{text}"')
    return htmltext("".join(out))


# -- JSON for scripts ---------------------------------------------------------------

# Inside a JSON string these can only be escaped, never meaningful: "<" and ">"
# would let "</script" or "<!--" end or derail the element, "&" keeps the text
# inert if it is ever parsed as HTML, U+2028/U+2029 end a line in old
# JavaScript, and lone surrogates could not be encoded as UTF-8.
_JSON_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_script(value: Any, element_id: str | None = None, nonce: str | None = None) -> htmltext:
    """*value* as JSON in a ``<script type="application/json">`` element.

    Read it back in the page with
    ``JSON.parse(document.getElementById(element_id).textContent)``.
    ``<``, ``>``, ``&``, U+2028, U+2029 and lone surrogates are written as
    ``\\uXXXX`` escapes, so no value can close the element or open a comment.
    Raises TypeError for values that JSON cannot represent and ValueError
    for NaN and infinities, which JSON.parse would reject.
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    body = _JSON_UNSAFE.sub(_json_escape, text)
    attributes = attrs({"type": "application/json", "id": element_id, "nonce": nonce})
    return htmltext(f"<script{attributes}>{body}</script>")
