"""URLs: the scheme policy and the escapers for each part of a URL.

:func:`is_safe_url` is the one scheme check: ``safe_url`` and ``attrs``
(``ptl_wsgi.beyond_escaping``) and the escapers of a value at a URL's start use it.
The escapers take and return str; :mod:`ptl_wsgi.escaping.escapers` makes
them markup.
"""

from __future__ import annotations

import html
import re

from ptl_wsgi.escaping.rules import (
    DEFAULT_SCHEMES,
    RASTER_IMAGE_TYPES,
    SCRIPT_SCHEMES,
    UNSAFE_URL,
    is_markup,
)

# Not typing.TYPE_CHECKING: importing typing costs a one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "decoded",
    "is_safe_url",
    "url",
    "url_list",
    "url_path",
    "url_query",
    "url_slash",
    "url_text",
    "srcset",
]

_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
# A value must be base64 to pass as an image (the literal check in the context engine
# trusts the author's text and takes any raster data: URL).
_DATA_IMAGE = re.compile(
    rf"data:image/(?:{'|'.join(RASTER_IMAGE_TYPES)});base64,[a-z0-9+/=]*\Z", re.IGNORECASE
)
# Characters that browsers, old and new, drop or ignore while parsing a URL's
# scheme: C0 controls, space, DEL, and the zero-width and BOM characters.
_IGNORED = re.compile("[\x00-\x20\x7f\u00ad\u200b-\u200f\u2028\u2029\u2060\ufeff]+")
# html.unescape() repeated this often undoes any nesting a real attack uses.
_MAX_UNESCAPE = 8


def url_text(value: Any) -> str:
    """The URL that *value* denotes: markup (``__html__``) is decoded once, like a browser does."""
    if type(value) is str:
        return value
    if is_markup(value):
        return html.unescape(str(value.__html__()))
    return str(value)


def decoded(text: str) -> str:
    """*text* with character references decoded until nothing changes."""
    for _ in range(_MAX_UNESCAPE):
        once = html.unescape(text)
        if once == text:
            break
        text = once
    return text


def canonical(text: str) -> str:
    """*text* as the most lenient parser could read its scheme (only inspected, never output).

    Character references are decoded until nothing changes (so ``&amp;#106;avascript:``
    and ``javascript&colon;`` are seen for what a second decoding would make of them),
    then every ignorable character is removed, wherever it stands.
    """
    return _IGNORED.sub("", decoded(text))


def allowed_schemes(schemes: Iterable[str]) -> frozenset[str]:
    """*schemes* normalised; ValueError if one of them runs script."""
    allowed = frozenset(s.lower().rstrip(":") for s in schemes)
    forbidden = allowed & SCRIPT_SCHEMES
    if forbidden:
        raise ValueError(f"scheme(s) {sorted(forbidden)} run script and cannot be allowed")
    return allowed


def is_safe_url(
    value: Any, *, schemes: Iterable[str] = DEFAULT_SCHEMES, allow_data_images: bool = False
) -> bool:
    """Whether *value* is a URL that may go in an ``href``, ``src`` or ``action``.

    Relative URLs are; a URL with a scheme only if the scheme is in *schemes*;
    base64 raster images with *allow_data_images*.  See ``beyond_escaping.safe_url``.
    """
    allowed = allowed_schemes(schemes)
    seen = canonical(url_text(value))
    match = _SCHEME.match(seen)
    if match is None:
        # No scheme at all: relative, protocol-relative or a fragment.  A colon
        # after any character that cannot be in a scheme ("a/b:c", "%3A") is a
        # path to every browser.  Anything that starts like a scheme but is cut
        # short by a non-scheme character before its colon is refused anyway:
        # ``java<U+FFFD>script:`` is a relative path to a modern browser, but no
        # legitimate URL needs the benefit of that doubt.
        head = seen.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        return ":" not in head
    scheme = match.group(1).lower()
    if scheme == "data":
        return allow_data_images and _DATA_IMAGE.match(seen) is not None
    return scheme in allowed


# -- escapers: str to str ---------------------------------------------------------------

_KEEP_PATH = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&*+,;=%]")
_KEEP_QUERY = re.compile(r"[^A-Za-z0-9\-._~]")
_URL_IGNORED = re.compile("[\t\n\r]")  # browsers drop them anywhere in a URL
_LEADING = "".join(map(chr, range(0x21)))  # stripped from a URL's start


def _percent(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass"))


def url_path(text: str) -> str:
    """Normalise: percent-encode what a URL may not hold (quotes, spaces, parentheses, ...)."""
    return _KEEP_PATH.sub(_percent, text)


def url_slash(text: str) -> str:
    """Right after a leading "/" (or "scheme:"): as a path, but it cannot start a host."""
    text = url_path(text)
    return "%2F" + text[1:] if text.startswith("/") else text


def url_query(text: str) -> str:
    """Encode everything but unreserved characters: the value is one URL component."""
    return _KEEP_QUERY.sub(_percent, text)


def url(text: str) -> str:
    """A whole URL (a value at a URL's start): its scheme checked, then normalised.

    A value that is only a script scheme's name is refused too: the literal ``:``
    after it would complete the scheme (``f'{proto}://{host}'``).
    """
    if not is_safe_url(text):
        return UNSAFE_URL
    if _URL_IGNORED.sub("", text).lstrip(_LEADING).lower() in SCRIPT_SCHEMES:
        return UNSAFE_URL
    return url_path(text)


def url_list(text: str) -> str:
    """SVG animation ``values``: every ";"-separated item is checked as a URL's start.

    Items are kept as they are (the list also holds numbers: "0 0;1 1"); the HTML
    layer escapes what could end the attribute.
    """
    for item in text.split(";"):
        item = item.strip()
        if item and url(item) != url_path(item):
            return UNSAFE_URL
    return text


_SRCSET_DESCRIPTOR = re.compile(r"\d+(?:\.\d+)?[wx]\Z")


def srcset(text: str) -> str:
    """Image candidates: each URL checked and normalised, each descriptor a number."""
    out = []
    for candidate in text.split(","):
        parts = candidate.split()
        if not parts:
            out.append("")
            continue
        address, descriptors = parts[0], parts[1:]
        if not is_safe_url(address) or not all(_SRCSET_DESCRIPTOR.match(d) for d in descriptors):
            return UNSAFE_URL
        out.append(" ".join([url_path(address), *descriptors]))
    return ",".join(out)
