"""JavaScript: escapers for strings, regular expressions and values, and JSON for scripts.

Each takes and returns str (``js_value`` takes any value);
:mod:`ptl_wsgi.escaping.escapers` makes them markup.
"""

from __future__ import annotations

import re

from ptl_wsgi.escaping.rules import JSON_UNSAFE

# Not typing.TYPE_CHECKING: importing typing costs a one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "JSONMarkup",
    "js_regexp",
    "js_string",
    "js_value",
    "json_string",
    "json_text",
    "json_value",
]

_STRING_UNSAFE = re.compile("[\\\\\"'`$<>&/\x00-\x1f\x7f\u2028\u2029\ud800-\udfff]")
_REGEXP_UNSAFE = re.compile(
    "[\\\\\"'`$<>&/\x00-\x1f\x7f\u2028\u2029\ud800-\udfff.*+?^|()\\[\\]{}-]"
)
_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_JSON_UNSAFE = re.compile(f"[{JSON_UNSAFE}]")
# "/" too in a JS value: should a regular expression ever be taken for an expression,
# a value still could not end it.
_VALUE_UNSAFE = re.compile(f"[{JSON_UNSAFE}/]")


class JSONMarkup(str):
    """JSON text that is safe in a page (``<``, ``>``, ``&`` written as ``\\u`` escapes):
    markup in HTML, and, where a JavaScript or JSON value goes in a script, that value
    as it is (:func:`~ptl_wsgi.escaping.rules.is_json_markup`).  Anywhere else in a
    script or a style it is a value like any other markup.  Make it only of JSON a
    trusted encoder wrote: it is trusted as data, as ``htmltext`` is as markup."""

    __slots__ = ()
    __ptl_json__ = True

    def __html__(self) -> str:
        return str(self)


def _char(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _unicode_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def js_string(text: str) -> str:
    """Inside a JS string of either quote or a template literal: the string holds *text*."""
    return _STRING_UNSAFE.sub(_char, text)


def json_string(text: str) -> str:
    """Inside a string of a JSON script: ``\\uXXXX`` escapes, valid in JSON and in JS."""
    return _STRING_UNSAFE.sub(_unicode_escape, text)


def js_regexp(text: str) -> str:
    """Inside a JS regular expression: *text* matches itself; empty is "(?:)" (not "//")."""
    if not text:
        return "(?:)"
    return _REGEXP_UNSAFE.sub(_char, text)


def js_value(value: Any) -> str:
    """A JS expression: the value as a JSON literal, spaced so it cannot join its neighbours."""
    import json  # (not for a page without such a value)

    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        text = json.dumps(value)  # NaN and the infinities are JS expressions too
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = json.dumps(str(value), ensure_ascii=False)
    return f" {_VALUE_UNSAFE.sub(_unicode_escape, text)} "


def json_value(value: Any) -> str:
    """In a JSON script: the value as JSON (NaN and the infinities, not JSON, as null)."""
    import json

    try:
        text = json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False
        )
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), default=str)
    return f" {_JSON_UNSAFE.sub(_unicode_escape, text)} "


def _finite(value: Any) -> Any:
    """*value* with every float that is not finite (in lists, tuples, dicts) as None."""
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value


def json_text(value: Any) -> str:
    """*value* as compact JSON that no page can misread: :data:`JSON_UNSAFE` as ``\\uXXXX``.

    Raises TypeError for values JSON cannot represent and ValueError for NaN and
    the infinities, which ``JSON.parse`` rejects.
    """
    import json

    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return _JSON_UNSAFE.sub(_unicode_escape, text)
