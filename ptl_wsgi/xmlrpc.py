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
error, -32600 invalid request, -32601 method not found, -32602 invalid
params); a :class:`Fault` raised by a method is sent as it is, and any other
exception is logged and sent as a generic -32500 fault that reveals nothing
about the server.

Requests are parsed by expat with two refusals of our own, both before the
parser does any work for them: a DTD (``<!DOCTYPE``, and with it every entity
declaration, whose expansion would let a 1 MB body become hundreds of MB) and
elements nested deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from typing import Any, NoReturn
from xml.parsers import expat
from xmlrpc.client import Fault, Unmarshaller, dumps
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
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_BODY",
    "MAX_DEPTH",
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

#: How deeply the elements of a request may nest (an array nests three deep
#: per level: ``<array><data><value>``).  Deeper values would only exhaust the
#: recursion of whatever marshals or walks them.
MAX_DEPTH = 200

_DIGITS = re.compile(r"[0-9]+\Z")  # str.isdigit() also accepts "²" and other scripts' digits

# Fault codes from the "specification for fault code interoperability".
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
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
    if not isinstance(raw, str) or _DIGITS.match(raw) is None:
        raise BadRequest("The Content-Length header is not a number.")
    digits = raw.lstrip("0") or "0"
    # More digits than the limit has: too large, without converting them (int() has a limit too).
    if len(digits) > len(str(max_body)) or int(digits) > max_body:
        shown = digits if len(digits) <= 30 else f"a {len(digits)}-digit number of"
        raise RequestEntityTooLarge(
            f"The request body is {shown} bytes; the limit is {max_body} bytes."
        )
    length = int(digits)
    stream = request.environ["wsgi.input"]
    chunks, remaining = [], length
    while remaining > 0:
        chunk = stream.read(min(remaining, 65536))
        if not chunk:
            raise BadRequest("The request body is shorter than its Content-Length.")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class _Refused(Exception):
    """A request refused while parsing; the message is for the client."""


def _refuse_dtd(*_args: Any) -> NoReturn:
    raise _Refused("invalid request: a DTD (<!DOCTYPE ...>) is not allowed in XML-RPC")


def _parse(data: bytes) -> tuple[tuple[Any, ...], str | None]:
    """``xmlrpc.client.loads(data, use_builtin_types=True)``, refusing DTDs and deep nesting."""
    unmarshaller = Unmarshaller(use_builtin_types=True)
    # What xmlrpc.client's own parser tells it (expat gives None for an undeclared
    # encoding, which typeshed's str does not allow): UTF-8 by default.
    unmarshaller.xml(None, None)  # type: ignore[arg-type]
    parser = expat.ParserCreate()
    depth = 0

    def start(tag: str, attributes: dict[str, str]) -> None:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise _Refused(f"invalid request: elements nested more than {MAX_DEPTH} deep")
        unmarshaller.start(tag, attributes)

    def end(tag: str) -> None:
        nonlocal depth
        depth -= 1
        unmarshaller.end(tag)

    # The DOCTYPE handler runs before its internal subset is read, so no entity
    # is ever declared, let alone expanded; the others are belt and braces.
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    parser.ExternalEntityRefHandler = _refuse_dtd
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = unmarshaller.data
    parser.Parse(data, True)
    return unmarshaller.close(), unmarshaller.getmethodname()


def _check_arguments(function: Callable[..., Any], method: str, params: tuple[Any, ...]) -> None:
    """Raise an invalid-params Fault if *params* do not fit *function*'s signature."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return  # some builtins have none; let the call decide
    try:
        signature.bind(*params)
    except TypeError as exc:
        raise Fault(INVALID_PARAMS, f"invalid params for {method!r}: {exc}") from None


def _call(dispatcher: Dispatcher, method: str, params: tuple[Any, ...]) -> Any:
    if isinstance(dispatcher, SimpleXMLRPCDispatcher):
        if method not in dispatcher.funcs and dispatcher.instance is None:
            raise Fault(METHOD_NOT_FOUND, f"method {method!r} is not supported")
        if method in dispatcher.funcs:
            # A call with the wrong arguments is the client's mistake, not a server error.
            _check_arguments(dispatcher.funcs[method], method, params)
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
        params, method = _parse(data)
    except _Refused as exc:
        return _fault_response(INVALID_REQUEST, str(exc))
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
