"""ASGI middleware: the one header policy and CSP nonces for any ASGI application.

::

    from ptl_wsgi.asgi import CSP, Middleware

    app = CSP(Middleware(app, loader=loader), {"img-src": ["'self'", "data:"]})

What every HTTP response that passes through gets, whichever object answered
(a Starlette, FastAPI, Litestar or Quart view, a mounted sub-application, a
bare ASGI callable):

* :class:`Middleware` holds its status and headers to :mod:`ptl_wsgi.headers`:
  a status that is not an int of ``100``-``599``, a header name that is not a
  token, a value with a control character (CR, LF, NUL, U+0085, ...) is
  refused with a logged ``400 Bad Request``, and whatever the application
  sends for it afterwards is dropped;
* a request the framework cannot route but answers with a 500 of its own (Starlette's
  ``{id:int}`` of more digits than ``int()`` reads) is the 404 it is;
* :class:`CSP` does the same, and gives each request a fresh nonce:
  :func:`ptl_wsgi.csp.csp_nonce` returns it while the application runs (the
  request's task, its threads and its streamed body), it is in
  ``scope["ptl_wsgi.csp_nonce"]``, and the response's
  ``Content-Security-Policy`` names it (a response that has one keeps it).

Bodies are the framework's: the integrations (:mod:`ptl_wsgi.contrib.starlette`,
:mod:`ptl_wsgi.contrib.litestar`) send template output through
:mod:`ptl_wsgi.output_policy`.  WebSocket and lifespan scopes pass through untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from ptl_wsgi.csp import CSP_NONCE_KEY, HEADER, RequestNonce, check_directives, check_hashes
from ptl_wsgi.headers import HeaderError, as_header_error, check_header

if TYPE_CHECKING:
    from ptl_wsgi.loader import Loader

__all__ = [
    "CSP",
    "LOADER_KEY",
    "ASGIApp",
    "Middleware",
    "check_response_start",
    "refusal_messages",
    "request_line",
    "scope_nonce",
]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
#: An ASGI 3 application.
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The scope key under which :class:`Middleware` publishes its loader (as WSGI's environ key).
LOADER_KEY = "ptl_wsgi.loader"

_CSP_HEADER = HEADER.lower().encode("latin-1")
_BODY_MESSAGES = frozenset(
    {"http.response.body", "http.response.zerocopysend", "http.response.pathsend"}
)


# What a framework raises for a request it cannot route, which it answers with a 500 of its
# own: the exception's type, the module of the frame that raised it, and the right answer.
# Starlette's int path convertor meets int()'s digit limit (a path of 5,000 digits).
_CLIENT_ERRORS: tuple[tuple[type[Exception], str, int, str], ...] = (
    (ValueError, "starlette.convertors", 404, "Not Found"),
)


def _client_error(exc: BaseException) -> tuple[int, str] | None:
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    module = tb.tb_frame.f_globals.get("__name__")
    for kind, where, status, reason in _CLIENT_ERRORS:
        if type(exc) is kind and module == where:
            return status, reason
    return None


def request_line(scope: Mapping[str, Any]) -> str:
    """``METHOD /path?query`` of an HTTP *scope*, for logs: never raises.

    The raw path and query string are bytes that need not be UTF-8; bytes
    that are not are shown as ``\\xNN``.
    """
    raw_path = scope.get("raw_path")
    if isinstance(raw_path, bytes):
        raw_path = raw_path.partition(b"?")[0]  # some servers and clients leave the query in it
    else:
        raw_path = str(scope.get("path", "")).encode("utf-8", "surrogateescape")
    line = f"{scope.get('method', '?')} {raw_path.decode('utf-8', 'backslashreplace')}"
    query = scope.get("query_string")
    if isinstance(query, bytes) and query:
        line += "?" + query.decode("utf-8", "backslashreplace")
    return line


def _header_pairs(headers: Any) -> Iterable[tuple[str, str]]:
    """ASGI's ``[(name, value), ...]`` of bytes as Latin-1 str, as the header policy reads them."""
    # The messages name types and positions, never a value: they go into the 400's body.
    pairs: Iterable[Any] = headers or ()
    for index, pair in enumerate(pairs):
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise HeaderError(f"header {index} is not a (name, value) pair") from None
        if not isinstance(name, bytes) or not isinstance(value, bytes):
            kinds = f"{type(name).__name__} and {type(value).__name__}"
            raise HeaderError(f"header {index} has a {kinds}: ASGI headers are bytes")
        yield name.decode("latin-1"), value.decode("latin-1")


def check_response_start(message: Mapping[str, Any]) -> None:
    """Raise :class:`~ptl_wsgi.headers.HeaderError` unless the ``http.response.start``
    *message* has a status of ``100``-``599`` and headers that keep the header policy."""
    status = message.get("status")
    if type(status) is not int:
        raise HeaderError(f"the status is a {type(status).__name__}, not an int")
    if not 100 <= status <= 599:
        raise HeaderError(f"status {status} is not an HTTP status code")
    for name, value in _header_pairs(message.get("headers")):
        check_header(name, value)


def refusal_messages(
    exc: HeaderError, scope: Mapping[str, Any], headers: Iterable[tuple[bytes, bytes]] = ()
) -> list[Message]:
    """The two messages of the logged 400 that replaces a response refused for *exc*."""
    log.warning("refused %s: %s", request_line(scope), exc)
    body = f"Bad Request: the response would carry an invalid header: {exc}\n"
    encoded = body.encode("utf-8", "backslashreplace")
    start_headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(encoded)).encode("ascii")),
        *headers,
    ]
    return [
        {"type": "http.response.start", "status": 400, "headers": start_headers},
        {"type": "http.response.body", "body": encoded, "more_body": False},
    ]


class _CheckedSend:
    """The ``send`` of one HTTP response: its start checked (a 400 instead), *extra*
    headers added where the response has none of that name, the rest passed on."""

    __slots__ = ("_extra", "_refused", "_scope", "_send", "started")

    def __init__(
        self, scope: Scope, send: Send, extra: tuple[tuple[bytes, bytes], ...] = ()
    ) -> None:
        self._scope = scope
        self._send = send
        self._extra = extra
        self._refused = False
        self.started = False

    async def refuse(self, exc: HeaderError) -> None:
        """Send the 400 for *exc* in place of the response (which has not started)."""
        self._refused = self.started = True
        for answer in refusal_messages(exc, self._scope, self._extra):
            await self._send(answer)

    async def run(self, app: ASGIApp, receive: Receive) -> None:
        """Run *app* with this ``send``; a header refused by the framework itself, raised
        before the response started (Starlette encoding a value as Latin-1), is the 400 too."""
        try:
            await app(self._scope, receive, self)
        except Exception as exc:
            if self.started:
                raise
            refused = as_header_error(exc)
            if refused is not None:
                await self.refuse(refused)
                return
            answer = _client_error(exc)
            if answer is None:
                raise
            log.info("answered %s %s to %s: %s", *answer, request_line(self._scope), exc)
            await self._answer(*answer)

    async def _answer(self, status: int, reason: str) -> None:
        self.started = True
        body = f"{reason}\n".encode("ascii")
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode("ascii")),
            *self._extra,
        ]
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})

    async def __call__(self, message: Message) -> None:
        kind = message.get("type")
        if kind == "http.response.start":
            try:
                check_response_start(message)
            except HeaderError as exc:
                await self.refuse(exc)
                return
            self.started = True
            if self._extra:
                headers: list[tuple[bytes, bytes]] = list(message.get("headers") or ())
                present = {bytes(name).lower() for name, _ in headers}
                headers += [pair for pair in self._extra if pair[0] not in present]
                message = {**message, "headers": headers}
        elif self._refused and (kind in _BODY_MESSAGES or kind == "http.response.trailers"):
            return  # the refused response's body never reaches the client
        elif kind == "http.response.trailers":
            # Sent after the body: too late for a 400, so the response is broken off.
            for name, value in _header_pairs(message.get("headers")):
                check_header(name, value)
        await self._send(message)


class Middleware:
    """Wrap an ASGI application to hold its HTTP responses to the header policy.

    *loader*, if given, is in ``scope["ptl_wsgi.loader"]`` for the application.
    """

    def __init__(self, app: ASGIApp, loader: Loader | None = None) -> None:
        self.app = app
        self.loader = loader

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self.loader is not None:
            scope[LOADER_KEY] = self.loader
        await _CheckedSend(scope, send).run(self.app, receive)


class CSP:
    """Wrap an ASGI application to send a ``Content-Security-Policy`` with a fresh nonce.

    The nonce is current (:func:`ptl_wsgi.csp.csp_nonce`) while the
    application handles the request, in its task and in what that task
    starts (threads included, which copy its context), and never outside it:
    concurrent requests each see their own; every ``<script>``, ``<style>`` and
    stylesheet ``<link>`` a template's literals write carries it.  *directives*
    and *hashes* (of static inline scripts, ``ptl-wsgi csp-hashes``) go to
    :func:`~ptl_wsgi.csp.content_security_policy` and are checked now.
    Responses are held to the header policy as by :class:`Middleware`.
    """

    def __init__(
        self,
        app: ASGIApp,
        directives: Mapping[str, str | Iterable[str] | None] | None = None,
        hashes: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.directives = check_directives(directives)
        self.hashes = check_hashes(hashes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        state = RequestNonce(scope)
        policy = state.policy(self.directives, self.hashes).encode("latin-1")
        checked = _CheckedSend(scope, send, ((_CSP_HEADER, policy),))
        with state:
            await checked.run(self.app, receive)


def scope_nonce(scope: Mapping[str, Any]) -> str | None:
    """The CSP nonce :class:`CSP` gave the request of *scope*, or None."""
    nonce = scope.get(CSP_NONCE_KEY)
    return nonce if isinstance(nonce, str) else None
