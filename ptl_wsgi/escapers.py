"""The escapers of :mod:`ptl_wsgi.escaping`, bound to the active htmltext twin.

Compiled templates import them from here by name (``url_q as _ptl_esc_url_q``),
with the helpers that values in other contexts need before their escaper; a
template file's bytecode names this module, so the name stays.  Everything
is built in :mod:`ptl_wsgi.escaping.escapers`; nothing is decided here.
"""

from __future__ import annotations

from ptl_wsgi.escaping.escapers import for_class, one_for_class, percent_field, percent_value
from ptl_wsgi.escaping.escapers import format_value as _format_value
from ptl_wsgi.escaping.nonce import CURRENT as _nonce
from ptl_wsgi.escaping.nonce import USED as nonce_used
from ptl_wsgi.escaping.nonce import mark as nonce_mark
from ptl_wsgi.escaping.rules import UNSAFE_CSS
from ptl_wsgi.html import IMPLEMENTATION, format_field, htmltext, implementation

# Not typing.TYPE_CHECKING: importing typing costs a one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ptl_wsgi.escaping.escapers import Escaper

# Re-exported for compiled templates (as _ptl_int, _ptl_type): names no template can shadow.
int = int
type = type

__all__ = [
    "ESCAPERS",
    "OUTPUTS",
    "UNSAFE_CSS",
    "contextual_format",
    "format_value",
    "nonce",
    "nonce_mark",
    "nonce_marked",
    "nonce_used",
    "nonced",
    "percent_field",
    "percent_value",
]

_twin = implementation(IMPLEMENTATION).module
_OUTPUT = "output_"
#: Every escaper, by the name :func:`ptl_wsgi.escaping.context.escaper_for` gives it
#: (made on first use, as every escaper here: see ``__getattr__``).
ESCAPERS: dict[str, Escaper]
#: What a compiled template calls for a value in a quoted attribute that is a piece of
#: its output, by ``output_`` and the escaper's name (``BASE_q``).
OUTPUTS: dict[str, Escaper]


def __getattr__(name: str) -> Any:
    """What compiled templates import, made on first use (PEP 562), so that a render
    makes only the escapers its templates use: an escaper by its name; ``output_`` and
    the name of one for a quoted attribute, the same escaper for a value that is a piece
    of the template's output (the template's join escapes a str for HTML, and that is
    the escaper's last step: see ``for_class``); ``ESCAPERS`` and ``OUTPUTS``."""
    if name == "ESCAPERS":
        found: Any = for_class(htmltext, _twin)
    elif name == "OUTPUTS":
        found = {
            _OUTPUT + key: escaper
            for key, escaper in for_class(htmltext, _twin, outputs=True).items()
            if key.endswith("_q")
        }
    else:
        outputs = name.startswith(_OUTPUT) and name.endswith("_q")
        try:
            found = one_for_class(
                htmltext, _twin, name[len(_OUTPUT) :] if outputs else name, outputs
            )
        except KeyError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = found
    return found


#: The request's CSP nonce, or None outside a nonce scope.
nonce = _nonce.get
# ``nonce_used[0]``: a nonce scope was ever entered; compiled templates test it before
# calling :func:`nonced` (with CSP off a literal that could take a nonce costs a lookup).


_made_nonced = implementation(IMPLEMENTATION).nonced.literal
#: An f-string's markup with the nonce marks (``nonce_mark``) taken out into slots.
nonce_marked = implementation(IMPLEMENTATION).nonced.marked


def nonced(literal: htmltext, slots: tuple[int, ...], placed: bool = False) -> htmltext:
    """*literal* carrying *slots*, where the compiler found the request's nonce goes
    (``escaping.nonce``: it goes in when the page is written out); outside a nonce
    scope, *literal* itself.  *placed*: found from where a ``+`` chain puts it."""
    if _nonce.get() is None:
        return literal
    made: htmltext = _made_nonced(literal, slots, placed)  # (its text, copied once)
    return made


def format_value(value: Any, conversion: int, spec: str) -> Any:
    """An f-string or ``str.format`` field's value with its conversion and spec applied."""
    return _format_value(value, conversion, spec, format_field, htmltext)


def contextual_format(template: Any) -> htmltext:
    """A PEP 750 Template as htmltext, each value escaped for the context it lands in."""
    from ptl_wsgi.escaping.planner import contextual_format as plan_and_format

    return htmltext(plan_and_format(template, for_class(htmltext, _twin), format_field))
