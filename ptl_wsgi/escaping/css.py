"""CSS: the filter for values and the escaper for strings (str to str).

Only values that cannot leave a CSS value or load anything pass the filter
(Go's rule, stricter); anything else becomes :data:`~ptl_wsgi.escaping.rules.UNSAFE_CSS`.
"""

from __future__ import annotations

import re

from ptl_wsgi.escaping.rules import (
    CSS_LOADING_FUNCTIONS,
    CSS_UNSAFE_WORDS,
    SCRIPT_SCHEMES,
    UNSAFE_CSS,
)

__all__ = ["REFUSED", "css", "css_string"]

_UNSAFE_CHARS = re.compile("[\x00-\x1f\x7f\"'()/;:@\\[\\]\\\\`{}<>&!*=]")
#: What the filter refuses though each of its characters passes, ignoring case:
#: ``--`` (a custom property's name, or a comment's end to an old parser) and the words.
REFUSED = ("--", *CSS_UNSAFE_WORDS)
_UNSAFE_WORDS = re.compile("|".join(map(re.escape, REFUSED)), re.IGNORECASE)
_STRING_UNSAFE = re.compile("[\x00-\x1f\x7f\"'()\\\\<>&/:;@`{}\\[\\]+\u2028\u2029\ud800-\udfff]")


def css(text: str) -> str:
    """A CSS value (a colour, a length, a name), or UNSAFE_CSS."""
    if _UNSAFE_CHARS.search(text) or _UNSAFE_WORDS.search(text):
        return UNSAFE_CSS
    return text


def css_string(text: str) -> str:
    """Inside a CSS string: CSS hex escapes (with the space that ends them)."""
    return _STRING_UNSAFE.sub(lambda m: f"\\{ord(m.group()):x} ", text)


# What makes a whole style attribute load a resource or run code, in any browser old
# or new; a backslash (CSS escapes) or comment could spell any of them.
_UNSAFE_STYLE = re.compile(
    "|".join(
        [
            r"\\",
            r"/\*",
            *(re.escape(function) + r"\(" for function in CSS_LOADING_FUNCTIONS),
            *CSS_UNSAFE_WORDS,
            *(f"{scheme}:" for scheme in sorted(SCRIPT_SCHEMES)),
        ]
    )
)


def is_safe_style(text: str) -> bool:
    """Whether a whole ``style`` attribute value *text* loads nothing and runs nothing."""
    from ptl_wsgi.escaping.url import canonical

    return _UNSAFE_STYLE.search(canonical(text).lower()) is None
