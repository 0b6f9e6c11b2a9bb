"""The one output policy: what a template or view produced, on its way into a response.

Every integration (the WSGI adapter and :func:`~ptl_wsgi.wsgi.stream`, the
publisher, CGI, the Flask backend, the Django engine) sends output through
these functions, so the rule is the same everywhere:

* into a response whose type is HTML by any spelling (:func:`is_html_type`),
  markup (:func:`is_markup`: :class:`~ptl_wsgi.html.htmltext`, anything with
  ``__html__``, a t-string's ``Template`` rendered as by
  :func:`~ptl_wsgi.html.htmlformat`) passes and everything else (a ``[plain]``
  template's str, a str, bytes, numbers) is escaped;
* markup a template's literals wrote carries the CSP nonce's slots
  (:mod:`ptl_wsgi.escaping.nonce`): the request's nonce goes in here, as the
  markup enters the response, and nowhere before;
* raw text is explicit: :func:`text` (and each integration's ``render_text``)
  returns a template's output as plain ``str``, for mail bodies and
  ``text/plain`` responses (a ``Template`` as its plain f-string would be).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ptl_wsgi.escaping import rules
from ptl_wsgi.escaping.nonce import written
from ptl_wsgi.html import htmlescape, htmltext

__all__ = [
    "body_bytes",
    "chunks",
    "encoded",
    "written_chunks",
    "is_html_type",
    "is_markup",
    "joined",
    "markup",
    "text",
]

# Types a browser renders as active markup, where a script in the body runs.
_HTML_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml",
     "text/xsl"}
)  # fmt: skip
# Types a browser sniffs the body of, so a body starting "<html" is read as HTML.
_SNIFFED_TYPES = frozenset({"application/unknown", "unknown/unknown", "*/*"})
_VALID_MIMETYPE = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]+/[!#$%&'*+.^_`|~0-9a-z-]+\Z")


def is_html_type(content_type: str | None) -> bool:
    """Whether a response of *content_type* may be rendered as markup by a browser.

    Parameters and case do not matter (``"TEXT/HTML; charset=utf-8"`` is
    HTML), every XML type counts (``application/xhtml+xml``, ``image/svg+xml``,
    ``…+xml``), and so does every type a browser sniffs or cannot parse: none,
    an empty or malformed one, ``application/unknown``, and a list (browsers
    take the last of ``"text/plain, text/html"``).
    """
    if content_type is None or "," in content_type:
        return True
    mimetype = content_type.split(";", 1)[0].strip().lower()
    if not _VALID_MIMETYPE.match(mimetype) or mimetype in _SNIFFED_TYPES:
        return True
    return mimetype in _HTML_TYPES or mimetype.endswith("+xml")


def is_markup(value: Any) -> bool:
    """Whether *value* is output as markup: htmltext, anything with ``__html__``, or a t-string."""
    return isinstance(value, htmltext) or rules.is_markup(value) or rules.is_template(value)


def _decoded(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return value


def markup(value: Any) -> htmltext:
    """*value* as it may enter an HTML response: markup as it is (with the request's CSP
    nonce in the tags its template's literals wrote), anything else escaped.

    Bytes are read as UTF-8 and escaped like str; ``None`` is the empty string.
    """
    if value is None:
        return htmltext("")
    made: htmltext = written(htmlescape(_decoded(value)))
    return made


def chunks(result: Any) -> Iterator[htmltext]:
    """A template's or view's output as markup chunks: the value, or each item of an iterator.

    A generator (a generator template, a streamed view) is consumed lazily;
    ``None`` items are skipped.
    """
    items: Iterable[Any] = result if isinstance(result, Iterator) else (result,)
    for item in items:
        if item is not None:
            yield written(htmlescape(_decoded(item)))


def joined(result: Any) -> htmltext:
    """A template's or view's whole output as one markup: :func:`markup` of the value,
    or the markup of each item of an iterator joined (``None`` items skipped).

    Output that already is ``htmltext`` is returned as it is, not copied (a page
    is tens of kilobytes).
    """
    if isinstance(result, Iterator):
        return htmltext("").join(chunks(result))
    return markup(result)


def body_bytes(chunk: Any, html: bool) -> bytes:
    """One chunk of a response body as the bytes sent, by the policy of the response's type.

    Into an HTML response (*html*: :func:`is_html_type` of its type) the chunk
    as :func:`markup`, UTF-8; into any other, bytes as they are and anything
    else as :func:`text`, UTF-8.  Every integration that streams a body (WSGI's
    :func:`~ptl_wsgi.wsgi.stream`, the ASGI ones) sends each chunk through here.
    """
    if html:
        return markup(chunk).encode("utf-8")
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return bytes(chunk)
    return text(chunk).encode("utf-8")


class encoded:  # lower case: used like a function, as chunks() is
    """Iterate a body's *chunks* as bytes (:func:`body_bytes`), each as it is produced;
    ``close()`` reaches the chunks' own, for a server that stops a stream early."""

    __slots__ = ("_chunks", "_html", "_iter")

    def __init__(self, chunks: Iterable[Any], html: bool) -> None:
        self._chunks = chunks
        self._iter = iter(chunks)
        self._html = html

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        chunk = next(self._iter)
        while chunk is None:  # as chunks() skips them
            chunk = next(self._iter)
        return body_bytes(chunk, self._html)

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


class written_chunks:  # lower case: used like a function, as chunks() is
    """Iterate a body's *chunks*, each written out (:func:`ptl_wsgi.csp.written`) as it is
    produced, for a framework that encodes a ``str`` chunk itself; ``close()`` reaches the
    chunks' own."""

    __slots__ = ("_chunks", "_iter")

    def __init__(self, chunks: Iterable[Any]) -> None:
        self._chunks = chunks
        self._iter = iter(chunks)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        return written(next(self._iter))

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


def text(result: Any) -> str:
    """A template's output as raw text (``str``), for mail bodies and ``text/plain``.

    Markup is returned as the plain ``str`` of its characters; an iterator's
    items are joined.  Nothing here is fit for an HTML response.
    """
    items: Iterable[Any] = result if isinstance(result, Iterator) else (result,)
    return "".join(_plain(item) for item in items if item is not None)


def _plain(value: Any) -> str:
    value = _decoded(value)
    if rules.is_template(value):
        return _template_text(value)
    # str.__str__ drops the markup type: the result must not pass as trusted anywhere.
    return str.__str__(value) if isinstance(value, str) else str(value)


_CONVERSIONS: dict[str, Callable[[object], str]] = {"s": str, "r": repr, "a": ascii}


def _template_text(template: Any) -> str:
    """A t-string as raw text: what the same f-string gives, nested t-strings included."""
    out = [template.strings[0]]
    for interpolation, literal in zip(template.interpolations, template.strings[1:], strict=True):
        value, conversion, spec = (
            interpolation.value, interpolation.conversion, interpolation.format_spec
        )  # fmt: skip
        if conversion is None and not spec and rules.is_template(value):
            out.append(_template_text(value))
        else:
            if conversion is not None:
                value = _CONVERSIONS[conversion](value)
            out.append(str.__str__(format(value, spec)))
        out.append(literal)
    return "".join(out)
