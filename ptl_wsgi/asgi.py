"""ASGI middleware: the one header policy and CSP nonces for any ASGI application.

::

    from ptl_wsgi.asgi import CSP, Middleware

    app = CSP(Middleware(app, loader=loader), {"img-src": ["'self'", "data:"]})

What every HTTP response that passes through gets, whichever object answered
(a Starlette, FastAPI, Litestar or Quart view, a mounted sub-application, a
bare ASGI callable; a WebSocket's denial response, ``websocket.http.response.start``, too):

* :class:`Middleware` holds its status and headers to :mod:`ptl_wsgi.headers`:
  a status that is not an int of ``100``-``599``, a header name that is not a
  token, a value with a control character (CR, LF, NUL, U+0085, ...) is
  refused with a logged ``400 Bad Request``, and nothing the application
  sends afterwards reaches the server; headers may be any iterable (read once);
* a value the framework itself refuses (Starlette encoding a header or cookie
  as Latin-1) is the same 400, inside or around the framework's own error
  middleware: a 500 whose body is whole is held back until the application
  ends (its background tasks too), so that the 400 can replace it;
* a request the framework cannot route but answers with a 500 of its own (Starlette's
  ``{id:int}`` of more digits than ``int()`` reads) is the 404 it is;
* :class:`CSP` does the same, and gives each request a fresh nonce:
  :func:`ptl_wsgi.csp.csp_nonce` returns it while the application runs (the
  request's task, its threads and its streamed body), it is in
  ``scope["ptl_wsgi.csp_nonce"]``, and the response's
  ``Content-Security-Policy`` names it (a response that has one keeps it).

Bodies are the framework's: the integrations (:mod:`ptl_wsgi.contrib.starlette`,
:mod:`ptl_wsgi.contrib.litestar`) send template output through
:mod:`ptl_wsgi.output_policy`.  The rest of WebSocket scopes (accept, frames, close)
and lifespan scopes pass through untouched.
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
    method = scope.get("method") or ("WEBSOCKET" if scope.get("type") == "websocket" else "?")
    line = f"{method} {raw_path.decode('utf-8', 'backslashreplace')}"
    query = scope.get("query_string")
    if isinstance(query, bytes) and query:
        line += "?" + query.decode("utf-8", "backslashreplace")
    return line


def _listed(headers: Any) -> list[Any]:
    """A message's headers, which ASGI lets be any iterable, as a list: read once, so that
    what is checked is what is forwarded."""
    try:
        return list(headers or ())
    except TypeError:
        raise HeaderError(f"the headers are a {type(headers).__name__}, not pairs") from None


def _header_pairs(headers: list[Any]) -> Iterable[tuple[str, str]]:
    """ASGI's ``[(name, value), ...]`` of bytes as Latin-1 str, as the header policy reads them."""
    # The messages name types and positions, never a value: they go into the 400's body.
    for index, pair in enumerate(headers):
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise HeaderError(f"header {index} is not a (name, value) pair") from None
        if not isinstance(name, bytes) or not isinstance(value, bytes):
            kinds = f"{type(name).__name__} and {type(value).__name__}"
            raise HeaderError(f"header {index} has a {kinds}: ASGI headers are bytes")
        yield name.decode("latin-1"), value.decode("latin-1")


def check_response_start(message: Mapping[str, Any]) -> list[tuple[bytes, bytes]]:
    """The headers of the ``http.response.start`` (or ``websocket.http.response.start``)
    *message*, as a list (ASGI lets them be any iterable: forward this list, not the
    message's, which may be spent).  Raise :class:`~ptl_wsgi.headers.HeaderError` unless
    its status is an int of ``100``-``599`` and its headers keep the header policy."""
    status = message.get("status")
    if type(status) is not int:
        raise HeaderError(f"the status is a {type(status).__name__}, not an int")
    if not 100 <= status <= 599:
        raise HeaderError(f"status {status} is not an HTTP status code")
    return _checked_headers(message.get("headers"))


def _checked_headers(headers: Any) -> list[tuple[bytes, bytes]]:
    listed = _listed(headers)
    for name, value in _header_pairs(listed):
        check_header(name, value)
    return listed


def refusal_messages(
    exc: HeaderError,
    scope: Mapping[str, Any],
    headers: Iterable[tuple[bytes, bytes]] = (),
    kind: str = "http.response",
) -> list[Message]:
    """The two messages of the logged 400 that replaces a response refused for *exc*;
    *kind* ``"websocket.http.response"`` for a WebSocket's denial response."""
    log.warning("refused %s: %s", request_line(scope), exc)
    body = f"Bad Request: the response would carry an invalid header: {exc}\n"
    encoded = body.encode("utf-8", "backslashreplace")
    start_headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(encoded)).encode("ascii")),
        *headers,
    ]
    return [
        {"type": f"{kind}.start", "status": 400, "headers": start_headers},
        {"type": f"{kind}.body", "body": encoded, "more_body": False},
    ]


class _CheckedSend:
    """The ``send`` of one HTTP response (or WebSocket denial response, *kind*
    ``"websocket.http.response"``): its start checked (a 400 instead), *extra* headers
    added where the response has none of that name, the rest passed on."""

    __slots__ = ("_extra", "_held", "_kind", "_refused", "_scope", "_send", "started")

    def __init__(
        self,
        scope: Scope,
        send: Send,
        extra: tuple[tuple[bytes, bytes], ...] = (),
        kind: str = "http.response",
    ) -> None:
        self._scope = scope
        self._send = send
        self._extra = extra
        self._kind = kind
        self._refused = False
        # A 500 held back until the application ends: a framework's error middleware
        # inside it (Starlette's) sends its 500 before re-raising what may be a refusal.
        self._held: list[Message] | None = None
        self.started = False

    async def refuse(self, exc: HeaderError) -> None:
        """Send the 400 for *exc* in place of the response (which has not started);
        nothing the application sends afterwards reaches the server."""
        self._refused = self.started = True
        self._held = None
        for answer in refusal_messages(exc, self._scope, self._extra, self._kind):
            await self._send(answer)

    async def run(self, app: ASGIApp, receive: Receive) -> None:
        """Run *app* with this ``send``; a header refused by the framework itself, raised
        before the response started (Starlette encoding a value as Latin-1), is the 400 too,
        and so is one raised after the framework's own 500 for it."""
        try:
            await app(self._scope, receive, self)
        except Exception as exc:
            held, self._held = self._held, None
            if self.started and held is None:
                raise
            refused = as_header_error(exc)
            if refused is not None:
                await self.refuse(refused)
                return
            answer = _client_error(exc)
            if answer is not None:
                log.info("answered %s %s to %s: %s", *answer, request_line(self._scope), exc)
                await self._answer(*answer)
                return
            await self._release(held)
            raise
        await self._release()

    async def _release(self, held: list[Message] | None = None) -> None:
        held = held if held is not None else self._held
        self._held = None
        for message in held or ():
            await self._send(message)

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
        if self._refused:
            return  # the refused response's body, or anything else, never reaches the client
        kind = message.get("type")
        if kind == f"{self._kind}.start":
            try:
                headers = check_response_start(message)
            except HeaderError as exc:
                await self.refuse(exc)
                return
            self.started = True
            if self._extra:
                present = {bytes(name).lower() for name, _ in headers}
                headers += [pair for pair in self._extra if pair[0] not in present]
            message = {**message, "headers": headers}
            if message["status"] == 500 and kind == "http.response.start":
                self._held = [message]
                return
        elif kind == "http.response.trailers":
            # Sent after the body: too late for a 400, so the response is broken off.
            message = {**message, "headers": _checked_headers(message.get("headers"))}
        if self._held is not None:
            self._held.append(message)
            if kind == "http.response.body" and not message.get("more_body", False):
                return  # a whole error page: held until the application ends
            await self._release()  # a streamed 500 is no framework's error page
            return
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
            await self.app(scope, receive, _other_scope(scope, send))
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
            await self.app(scope, receive, _other_scope(scope, send))
            return
        state = RequestNonce(scope)
        policy = state.policy(self.directives, self.hashes).encode("latin-1")
        checked = _CheckedSend(scope, send, ((_CSP_HEADER, policy),))
        with state:
            await checked.run(self.app, receive)


def _other_scope(scope: Scope, send: Send) -> Send:
    """The ``send`` of a scope that is not HTTP: a WebSocket's denial response is an HTTP
    response, held to the policy; everything else passes untouched."""
    if scope.get("type") == "websocket":
        return _CheckedSend(scope, send, kind="websocket.http.response")
    return send


def scope_nonce(scope: Mapping[str, Any]) -> str | None:
    """The CSP nonce :class:`CSP` gave the request of *scope*, or None."""
    nonce = scope.get(CSP_NONCE_KEY)
    return nonce if isinstance(nonce, str) else None
