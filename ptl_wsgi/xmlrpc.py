"""Serve an XML-RPC dispatcher from a view, a publisher method, or as a WSGI app.

Marshalling is the standard library's (:mod:`xmlrpc.client`); the dispatcher is
a :class:`xmlrpc.server.SimpleXMLRPCDispatcher`, anything with a
``_dispatch(method, params)`` method, or a function ``(method, params)``::

    from ptl_wsgi.xmlrpc import make_dispatcher, xmlrpc_app

    def add(a, b):
        return a + b

    app = xmlrpc_app(make_dispatcher(add))

Errors: a method other than POST gets 405 with ``Allow: POST``; a missing or
bad ``Content-Length`` 411 or 400, a body over *max_body* bytes 413.
XML-level problems are faults with the interoperability codes (-32700 parse
error, -32600 invalid request, -32601 method not found); a :class:`Fault`
raised by a method is sent as it is, and any other exception is logged and
sent as a generic -32500 fault that reveals nothing about the server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from xmlrpc.client import Fault, dumps, loads
from xmlrpc.server import SimpleXMLRPCDispatcher

from werkzeug.exceptions import (
    BadRequest,
    LengthRequired,
    MethodNotAllowed,
    RequestEntityTooLarge,
)
from werkzeug.wrappers import Request, Response

from ptl_wsgi.wsgi import View

__all__ = [
    "APPLICATION_ERROR",
    "INVALID_REQUEST",
    "MAX_BODY",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Fault",
    "XMLRPCApp",
    "handle_xmlrpc",
    "make_dispatcher",
    "xmlrpc_app",
]

log = logging.getLogger(__name__)

#: The default limit on a request body, in bytes.
MAX_BODY = 1024 * 1024

# Fault codes from the "specification for fault code interoperability".
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
APPLICATION_ERROR = -32500

# A SimpleXMLRPCDispatcher, an object with _dispatch(method, params), or such a function.
Dispatcher = Any


def make_dispatcher(
    *functions: Callable[..., Any],
    instance: Any = None,
    introspection: bool = True,
    allow_none: bool = True,
) -> SimpleXMLRPCDispatcher:
    """A dispatcher serving *functions* (under their ``__name__``) and *instance*."""
    dispatcher = SimpleXMLRPCDispatcher(allow_none=allow_none, encoding="utf-8")
    for function in functions:
        dispatcher.register_function(function)
    if instance is not None:
        dispatcher.register_instance(instance)
    if introspection:
        dispatcher.register_introspection_functions()
    return dispatcher


def _read_body(request: Request, max_body: int) -> bytes:
    raw = request.environ.get("CONTENT_LENGTH", "")
    if raw in ("", None):
        raise LengthRequired("An XML-RPC request needs a Content-Length header.")
    try:
        length = int(raw)
    except ValueError:
        raise BadRequest("The Content-Length header is not a number.") from None
    if length < 0:
        raise BadRequest("The Content-Length header is negative.")
    if length > max_body:
        raise RequestEntityTooLarge(
            f"The request body is {length} bytes; the limit is {max_body} bytes."
        )
    stream = request.environ["wsgi.input"]
    chunks, remaining = [], length
    while remaining > 0:
        chunk = stream.read(min(remaining, 65536))
        if not chunk:
            raise BadRequest("The request body is shorter than its Content-Length.")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _call(dispatcher: Dispatcher, method: str, params: tuple[Any, ...]) -> Any:
    if isinstance(dispatcher, SimpleXMLRPCDispatcher):
        if method not in dispatcher.funcs and dispatcher.instance is None:
            raise Fault(METHOD_NOT_FOUND, f"method {method!r} is not supported")
        return dispatcher._dispatch(method, params)
    if hasattr(dispatcher, "_dispatch"):
        return dispatcher._dispatch(method, params)
    return dispatcher(method, params)


def _fault_response(code: int, message: str) -> Response:
    body = dumps(Fault(code, message), methodresponse=True, encoding="utf-8")
    return Response(body.encode("utf-8"), content_type="text/xml; charset=utf-8")


def handle_xmlrpc(
    request: Request,
    dispatcher: Dispatcher,
    *,
    max_body: int = MAX_BODY,
    allow_none: bool = True,
) -> Response:
    """Answer one XML-RPC *request* with *dispatcher*; returns the response to send.

    Raises werkzeug HTTP exceptions for transport errors (405, 411, 400, 413),
    which views and publishers turn into responses.
    """
    if request.method != "POST":
        raise MethodNotAllowed(valid_methods=["POST"])
    data = _read_body(request, max_body)
    try:
        params, method = loads(data, use_builtin_types=True)
    except Exception as exc:
        # Expat and the unmarshaller describe the input, not the server, so say why.
        return _fault_response(PARSE_ERROR, f"parse error: malformed XML-RPC request ({exc})")
    if not method:
        return _fault_response(INVALID_REQUEST, "invalid request: no methodName in a methodCall")
    try:
        result = _call(dispatcher, method, params)
        body = dumps((result,), methodresponse=True, allow_none=allow_none, encoding="utf-8")
    except Fault as fault:
        return _fault_response(fault.faultCode, fault.faultString)
    except Exception:
        log.exception("XML-RPC method %r failed", method)
        return _fault_response(APPLICATION_ERROR, "internal error in the server")
    return Response(body.encode("utf-8"), content_type="text/xml; charset=utf-8")


class XMLRPCApp(View):
    """A WSGI application serving *dispatcher* at every path."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        max_body: int = MAX_BODY,
        allow_none: bool = True,
        debug: bool | None = None,
    ) -> None:
        super().__init__(self._serve, debug=debug)
        self.dispatcher = dispatcher
        self.max_body = max_body
        self.allow_none = allow_none
        self.__name__ = type(self).__name__

    def _serve(self, request: Request) -> Response:
        return handle_xmlrpc(
            request, self.dispatcher, max_body=self.max_body, allow_none=self.allow_none
        )


def xmlrpc_app(dispatcher: Dispatcher, **options: Any) -> XMLRPCApp:
    """A WSGI application serving *dispatcher*; *options* as for :class:`XMLRPCApp`."""
    return XMLRPCApp(dispatcher, **options)
