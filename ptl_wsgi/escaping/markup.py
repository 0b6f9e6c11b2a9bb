"""HTML around a value: comments, unquoted attribute values, attribute names (str to str).

The quoted-attribute layer is plain HTML escaping, the twins' own
(``escape_str``); the escapers are built with it in
:mod:`ptl_wsgi.escaping.escapers`.
"""

from __future__ import annotations

import re

from ptl_wsgi.escaping.css import is_safe_style
from ptl_wsgi.escaping.rules import (
    K_CSS,
    K_HTML,
    K_JS,
    K_PLAIN,
    K_SRCSET,
    K_URL,
    K_URL_LIST,
    SPACE_SEPARATED_URL_ATTRIBUTES,
    UNSAFE_URL,
    attribute_kind,
    is_markup,
)
from ptl_wsgi.escaping.url import decoded, is_safe_url, url_text

# Not typing.TYPE_CHECKING: importing typing costs a one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = [
    "attribute_names",
    "attributes",
    "comment",
    "drop",
    "unquoted",
    "unquoted_markup",
    "unquoted_markup_start",
    "unquoted_start",
]

_COMMENT_UNSAFE = re.compile("[-!<>&]")
_UNQUOTED_UNSAFE = re.compile("[\x00-\x20\x7f\"'`<=>&+]")
_UNQUOTED_MARKUP_UNSAFE = re.compile("[\x00-\x20\x7f\"'`<=>+]")  # "&": its references
_ATTR_NAMES = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_.:\-]*(?:\s+[A-Za-z_][A-Za-z0-9_.:\-]*)*\s*")


def _reference(match: re.Match[str]) -> str:
    return f"&#{ord(match.group())};"


def comment(text: str) -> str:
    """In an HTML comment nothing is decoded: references only keep ``-->`` from forming."""
    return _COMMENT_UNSAFE.sub(_reference, text)


def drop(text: str) -> str:
    """A value in a JS or CSS comment would do nothing but risk ending it."""
    return ""


def unquoted(text: str) -> str:
    """Inside an unquoted attribute value: every character that could end it, as a reference."""
    return _UNQUOTED_UNSAFE.sub(_reference, text)


def unquoted_start(text: str) -> str:
    """At the start of an unquoted value: as :func:`unquoted`, and empty becomes ``""``."""
    return unquoted(text) if text else '""'


def unquoted_markup(text: str) -> str:
    """Markup's text inside an unquoted attribute value: as :func:`unquoted`, but its
    character references kept (``&amp;`` means ``&`` there as in text)."""
    return _UNQUOTED_MARKUP_UNSAFE.sub(_reference, text)


def unquoted_markup_start(text: str) -> str:
    """At the start of an unquoted value: as :func:`unquoted_markup`, empty as ``""``."""
    return unquoted_markup(text) if text else '""'


def attribute_names(text: str) -> bool:
    """Whether *text* is only names of plain attributes (what may go between attributes)."""
    return _ATTR_NAMES.fullmatch(text) is not None and all(
        attribute_kind(name) == K_PLAIN for name in text.split()
    )


# -- whole attributes: the policy of beyond_escaping.attrs -------------------------------------

# The HTML attribute-name grammar: anything but controls, space, " ' > / = and
# noncharacters.  "<" and "`" are allowed by the grammar but refused here, as
# parse errors that some tools mishandle.
_NONCHARACTERS = "".join(
    chr(plane << 16 | 0xFFFE) + chr(plane << 16 | 0xFFFF) for plane in range(1, 17)
)
_NAME = re.compile(f"[^\x00-\x20\x7f-\x9f\"'>/=<`\ufdd0-\ufdef\ufffe\uffff{_NONCHARACTERS}]+")
# Lists of URLs are split on what separates them in any of them (commas,
# semicolons, whitespace); splitting finer than a browser does can only make a
# piece look *more* like a scheme, never less.
_URL_SEPARATORS = re.compile(r"[\s,;]+")


def _url_value(kind: str, local: str, value: Any, escape: Callable[[str], str]) -> str:
    text = url_text(value)
    if kind in (K_SRCSET, K_URL_LIST) or local in SPACE_SEPARATED_URL_ATTRIBUTES:
        safe = all(is_safe_url(piece) for piece in _URL_SEPARATORS.split(decoded(text)))
    else:
        safe = is_safe_url(text)
    return escape(text) if safe else UNSAFE_URL


def attributes(
    mapping: Mapping[str, Any], escape: Callable[[str], str], allow_events: bool = False
) -> str:
    """*mapping* as attribute markup (``' name="value"'`` each, in order); see
    ``beyond_escaping.attrs``.

    *escape* is HTML escaping of a str (a twin's ``escape_str``).
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
        trusted = is_markup(value)
        kind = attribute_kind(key)
        if kind in (K_JS, K_HTML) and not (allow_events or trusted):
            raise ValueError(
                f"attribute {name!r} is script: give its value as markup (htmltext) "
                "if it is trusted code"
            )
        if value is None or value is False:
            continue
        if value is True:
            out.append(f" {name}")
            continue
        if kind in (K_URL, K_SRCSET, K_URL_LIST):
            text = _url_value(kind, key.rpartition(":")[2], value, escape)
        elif trusted:
            # Markup is trusted as the attribute's source text, but a bare '"' in it
            # would end the quoted value; '&quot;' means the same there and cannot.
            text = str(value.__html__()).replace('"', "&quot;")
        elif kind == K_CSS and not is_safe_style(str(value)):
            continue
        else:
            text = escape(str(value))
        out.append(f' {name}="{text}"')
    return "".join(out)
