"""The one header policy: what may stand in an HTTP header, parsed or emitted.

Line ends are CRLF or LF only (never the other breaks ``str.splitlines``
knows, such as U+0085 or ``\\x0b``), and a name or value with any other
control character is refused with :class:`HeaderError`, so that no value can
start a header of its own in whichever parser reads it next.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "HeaderError",
    "as_header_error",
    "check_header",
    "check_headers",
    "check_status",
    "split_lines",
]

# C0 controls but HTAB, DEL, the C1 controls, and anything past Latin-1, which
# WSGI cannot carry (PEP 3333 headers are Latin-1 str).
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]|[^\x00-\xff]")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_STATUS = re.compile(r"[1-5][0-9][0-9] [^\x00-\x08\x0a-\x1f\x7f-\x9f]*\Z")
_LINE_END = re.compile(r"\r?\n")


class HeaderError(ValueError):
    """A header name, value or status line that may not be sent or accepted."""


def check_header(name: str, value: str) -> None:
    """Raise :class:`HeaderError` unless *name* is a token and *value* has no control character."""
    if not _TOKEN.match(name):
        raise HeaderError(f"header name {name!r} is not an HTTP token")
    bad = _BAD_VALUE.search(value)
    if bad is not None:
        raise HeaderError(
            f"header {name!r} has the character {bad.group()!r} at {bad.start()}, "
            "which may not stand in a header value"
        )


def check_headers(headers: Iterable[tuple[str, str]]) -> None:
    """:func:`check_header` for each ``(name, value)``."""
    for name, value in headers:
        check_header(name, value)


def check_status(status: str) -> None:
    """Raise :class:`HeaderError` unless *status* is ``"NNN reason"`` with no control character."""
    if not _STATUS.match(status):
        raise HeaderError(f"status line {status!r} is not 'NNN reason phrase'")


def split_lines(head: str) -> list[str]:
    """The lines of a header block, split at CRLF or LF and nowhere else."""
    return _LINE_END.split(head)


# Libraries that check or encode a header value themselves and raise before ptl_wsgi's
# check sees it: the exception's type, and the modules of the frame that raises it.
# Werkzeug's Headers refuses CR and LF; Starlette and Litestar encode every value as Latin-1
# (each place they do: headers, and cookies, which Litestar encodes in a module of their own);
# the standard library's cookies refuse a name holding a space, ';' or '=' (Starlette's
# set_cookie builds its header with them).  http.cookies.CookieError, named by its module so
# that nothing is imported here for it.
_LIBRARY_REFUSALS: tuple[tuple[type[Exception] | str, tuple[str, ...]], ...] = (
    (ValueError, ("werkzeug.datastructures.headers",)),
    ("http.cookies.CookieError", ("http.cookies",)),
    (
        UnicodeEncodeError,
        (
            "starlette.datastructures",
            "starlette.responses",
            "litestar.datastructures.headers",
            "litestar.datastructures.cookie",
        ),
    ),
)


def as_header_error(exc: BaseException) -> HeaderError | None:
    """*exc* as a :class:`HeaderError`: itself, or a library's own refusal of a header value.

    A view that builds its framework's response with a client's value in a
    header meets the framework's check (or encoding) before ptl_wsgi's; it is
    the same refusal and gets the same answer, the 400.  Anything else is None.
    """
    if isinstance(exc, HeaderError):
        return exc
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    module = tb.tb_frame.f_globals.get("__name__", "")
    for kind, modules in _LIBRARY_REFUSALS:
        if module in modules and (
            type(exc) is kind
            if isinstance(kind, type)
            else f"{type(exc).__module__}.{type(exc).__qualname__}" == kind
        ):
            if isinstance(exc, UnicodeEncodeError) and exc.encoding != "latin-1":
                return None  # a body's encoding, not a header's
            error = HeaderError(f"{module} refused a header value: {exc}")
            error.__cause__ = exc
            return error
    return None
