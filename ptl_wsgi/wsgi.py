"""Views as WSGI applications, and middleware that brings templates to any WSGI app.

A *view* is a callable ``view(request)`` taking a werkzeug
:class:`~werkzeug.wrappers.Request`; :func:`view` turns it into a WSGI
application::

    from ptl_wsgi.wsgi import view

    @view
    def app(request):
        return htmltext("<p>Hello, %s</p>") % request.args.get("name", "world")

What a view may return, and what is sent (see :func:`make_response`):

* :class:`~ptl_wsgi.html.htmltext` (what ``[html]`` templates return): ``text/html; charset=utf-8``
* ``str``: ``text/plain; charset=utf-8`` unless a content type is given
* ``bytes``: ``application/octet-stream`` unless a content type is given
* a werkzeug ``Response`` (or any ``HTTPException``): as it is
* a generator or iterator: streamed, see :func:`stream`
* ``(body, status)`` or ``(body, status, headers)``

The request being served is available to templates through
:func:`current_request`, which reads a context variable, so one application
object serves many threads at once.  :class:`CSP` adds a Content-Security-Policy
with a per-request nonce, which templates read with
:func:`ptl_wsgi.csp.csp_nonce`.
"""

from __future__ import annotations

import functools
import logging
import os
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from types import GeneratorType
from typing import TYPE_CHECKING, Any

from werkzeug.datastructures import Headers
from werkzeug.exceptions import BadRequest, HTTPException
from werkzeug.wrappers import Request, Response

from ptl_wsgi._iterate_in_context import in_context, setting
from ptl_wsgi.csp import HEADER, RequestNonce, check_directives, check_hashes
from ptl_wsgi.headers import HeaderError, as_header_error, check_headers, check_status
from ptl_wsgi.html import htmltext
from ptl_wsgi.output_policy import encoded, is_html_type, is_markup, markup, text
from ptl_wsgi.tracebacks import entry_point

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from ptl_wsgi.loader import Loader

__all__ = [
    "CSP",
    "LOADER_KEY",
    "Middleware",
    "Request",
    "Response",
    "View",
    "current_loader",
    "current_request",
    "debug_default",
    "error_response",
    "make_response",
    "render",
    "render_text",
    "stream",
    "view",
]

log = logging.getLogger(__name__)

#: The environ key under which :class:`Middleware` and views publish their loader.
LOADER_KEY = "ptl_wsgi.loader"

_request_var: ContextVar[Request | None] = ContextVar("ptl_wsgi_request", default=None)

HTML = "text/html; charset=utf-8"


def current_request() -> Request:
    """The request being served in this thread or task; RuntimeError outside one."""
    request = _request_var.get()
    if request is None:
        raise RuntimeError("no request is being served in this context")
    return request


def current_loader() -> Loader:
    """The template loader of the view or middleware serving the current request."""
    loader: Loader | None = current_request().environ.get(LOADER_KEY)
    if loader is None:
        raise RuntimeError("no template loader: pass loader=... to the view or Middleware")
    return loader


@entry_point
def render(
    name: str, context: Mapping[str, Any] | None = None, /, **values: Any
) -> str | Iterator[Any]:
    """Render template *name* (``"page.ptl:body"``) with the current loader."""
    merged = {**context, **values} if context else values
    return current_loader().render(name, merged)


@entry_point
def render_text(name: str, context: Mapping[str, Any] | None = None, /, **values: Any) -> str:
    """Render template *name* to raw text (plain ``str``), for mail bodies and ``text/plain``.

    The one explicit way around HTML escaping, named alike in every
    integration; see :func:`ptl_wsgi.output_policy.text`.
    """
    return text(render(name, context, **values))


def debug_default() -> bool:
    """Debugging is on when the environment sets ``PTL_WSGI_DEBUG=1``."""
    return os.environ.get("PTL_WSGI_DEBUG", "") not in ("", "0")


# -- turning return values into responses -------------------------------------------------


def stream(chunks: Iterable[Any], mimetype: str = "text/html", **kwargs: Any) -> Response:
    """A response that sends *chunks* as they are produced.

    When the response's type is HTML by any spelling (see
    :func:`ptl_wsgi.output_policy.is_html_type`; a ``Content-Type`` in *headers*
    counts too), every chunk that is not markup is escaped, bytes included, as
    in an ``[html]`` template; otherwise str chunks are sent as UTF-8 and bytes
    as they are.  The iterable's ``close()`` is called when the server closes
    the response.
    """
    # A full content type ("text/plain; charset=...") must not get a second charset.
    kind: dict[str, Any] = {"content_type": mimetype} if ";" in mimetype else {"mimetype": mimetype}
    response = Response(**kind, **kwargs)
    response.response = encoded(chunks, _is_html(response))
    return response


def _is_html(response: Response) -> bool:
    # Browsers combine repeated Content-Type headers; more than one is treated as HTML.
    types = response.headers.getlist("Content-Type")
    return len(types) != 1 or is_html_type(types[0])


def make_response(rv: Any, content_type: str | None = None) -> Response:
    """Turn what a view returned into a werkzeug Response (see the module doc).

    The body goes through the output policy (:mod:`ptl_wsgi.output_policy`): if the
    response's type is HTML by any spelling, whether it came from the body's
    kind, *content_type* or the view's headers, anything but markup is escaped.
    """
    status: int | str | None = None
    headers: Any = None
    if isinstance(rv, tuple):
        if len(rv) == 2 and isinstance(rv[1], (Mapping, list)):
            rv, headers = rv
        elif len(rv) in (2, 3):
            rv, status, *rest = rv
            headers = rest[0] if rest else None
        else:
            raise TypeError("a view's tuple must be (body, status) or (body, status, headers)")
    if isinstance(status, str):
        check_status(status)
    if headers:
        check_headers(_as_sent(headers).items())
    if isinstance(rv, HTTPException):
        rv = rv.get_response()
    if isinstance(rv, Response):
        if status is not None:
            rv.status = status
        if headers:
            rv.headers.update(headers)
        return rv
    if isinstance(rv, (GeneratorType, Iterator)):
        return stream(rv, content_type or "text/html", status=status, headers=headers)
    if isinstance(rv, str) and not isinstance(rv, htmltext):
        default = "text/plain; charset=utf-8"
    elif isinstance(rv, (bytes, bytearray)):
        default = "application/octet-stream"
    elif is_markup(rv):
        default = HTML
    elif rv is None:
        raise TypeError("the view returned None; return a body, a Response or raise an error")
    else:
        raise TypeError(f"a view cannot return {type(rv).__name__!r}")
    response = Response(status=status, headers=headers)
    if not _has_content_type(headers):
        response.content_type = content_type or default
    if _is_html(response):
        response.set_data(markup(rv))
    else:
        body = bytes(rv) if isinstance(rv, bytearray) else rv  # WSGI bodies are bytes
        response.set_data(body if isinstance(body, (str, bytes)) else text(body))
    return response


def _as_sent(headers: Any) -> Headers:
    """A view's *headers* as werkzeug will send them: an int as its digits, a list of
    values as one header each.  Werkzeug's own refusal of CR/LF is a HeaderError."""
    try:
        return Headers(headers)
    except ValueError as exc:
        refused = as_header_error(exc)
        if refused is None:
            raise
        raise refused from exc


def _has_content_type(headers: Any) -> bool:
    if not headers:
        return False
    names = headers.keys() if isinstance(headers, Mapping) else (h[0] for h in headers)
    return any(name.lower() == "content-type" for name in names)


def request_line(environ: Mapping[str, Any]) -> str:
    """``METHOD /path?query`` of the request in *environ*, for logs: never raises.

    PEP 3333 gives the path and query as Latin-1 ``str`` of the request's
    bytes, which need not be UTF-8; bytes that are not are shown as ``\\xNN``.
    """

    def readable(value: Any) -> str:
        raw = str(value).encode("latin-1", "replace")
        return raw.decode("utf-8", "backslashreplace")

    line = f"{environ.get('REQUEST_METHOD', '?')} {readable(environ.get('PATH_INFO', ''))}"
    query = environ.get("QUERY_STRING")
    return f"{line}?{readable(query)}" if query else line


def refusal(exc: HeaderError, environ: WSGIEnvironment) -> Response:
    """The 400 for a response that would carry an invalid header, logged as a warning.

    Almost always a client's value copied into a header: the request is
    refused, whichever view, publisher or wrapped application answered it.
    """
    log.warning("refused %s: %s", request_line(environ), exc)
    answer = BadRequest(f"The response would carry an invalid header: {exc}")
    return answer.get_response(environ)


_ERROR_PAGE = htmltext(
    "<!doctype html>\n<html><head><title>%(title)s</title></head>\n"
    "<body><h1>%(title)s</h1>\n%(body)s</body></html>\n"
)


def error_response(exc: BaseException, debug: bool = False) -> Response:
    """The 500 response for an unexpected error: generic, or the traceback when debugging.

    Template frames show their ``.ptl`` file and line, since compiled
    templates keep the template's filename.
    """
    title = "500 Internal Server Error"
    if debug:
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        body = htmltext("<pre>%s</pre>\n") % trace
    else:
        body = htmltext("<p>The server could not complete the request.</p>\n")
    page = _ERROR_PAGE % {"title": title, "body": body}
    return Response(page, status=500, content_type=HTML)


# -- the WSGI side --------------------------------------------------------------------------


def _exact(value: Any) -> str:
    # wsgiref.validate (and PEP 3333) want type(x) is str, not htmltext or another subclass.
    if type(value) is str:
        return value
    return str.__str__(value) if isinstance(value, str) else str(value)


def _strict_start_response(start_response: StartResponse) -> StartResponse:
    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        clean = [(_exact(k), _exact(v)) for k, v in headers]
        if exc_info is None:
            return start_response(_exact(status), clean)
        return start_response(_exact(status), clean, exc_info)

    return start


def _respond(
    app_iter: Iterable[bytes], request: Request, environ: WSGIEnvironment
) -> Iterable[bytes]:
    """*app_iter* with *request* current while the server iterates and closes it."""
    return in_context(app_iter, functools.partial(setting, _request_var, request), environ)


class _Checked:
    """One response of a wrapped WSGI application, held to the header policy.

    Its ``start_response`` checks the status and headers; a refused response
    is replaced by the 400 of :func:`refusal`, and whatever the application
    writes or yields for it is dropped (its body is still closed).
    """

    __slots__ = ("_environ", "_start_response", "refused")

    def __init__(self, environ: WSGIEnvironment, start_response: StartResponse) -> None:
        self._environ = environ
        self._start_response = start_response
        self.refused: Iterable[bytes] | None = None

    def start(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        try:
            check_status(_exact(status))
            check_headers((_exact(k), _exact(v)) for k, v in headers)
        except HeaderError as exc:
            answer = refusal(exc, self._environ)
            self.refused = answer(self._environ, self._restart(exc_info))
            return _discard
        if exc_info is None:
            return self._start_response(status, headers)
        return self._start_response(status, headers, exc_info)

    def _restart(self, exc_info: Any) -> StartResponse:
        def start(status: str, headers: list[tuple[str, str]], _exc_info: Any = None) -> Any:
            if exc_info is None:
                return self._start_response(status, headers)
            return self._start_response(status, headers, exc_info)

        return start


def _discard(data: bytes) -> None:
    """The ``write`` of a refused response: its body never reaches the client."""


class _GuardedBody:
    """A body whose application calls ``start_response`` only when iterated:
    once it has been refused, the 400's body is sent instead of the rest."""

    __slots__ = ("_body", "_checked", "_iter", "_replaced")

    def __init__(self, body: Iterable[bytes], checked: _Checked) -> None:
        self._body = body
        self._checked = checked
        self._iter: Iterator[bytes] | None = None
        self._replaced: Iterator[bytes] | None = None

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self._replaced is not None:
            return next(self._replaced)
        if self._iter is None:
            self._iter = iter(self._body)
        chunk = next(self._iter)
        if self._checked.refused is None:
            return chunk
        self._replaced = iter(self._checked.refused)
        return next(self._replaced)

    def close(self) -> None:
        close = getattr(self._body, "close", None)
        if close is not None:
            close()


def call_checked(
    app: WSGIApplication, environ: WSGIEnvironment, start_response: StartResponse
) -> Iterable[bytes]:
    """Call WSGI *app* with its response held to the header policy (:mod:`ptl_wsgi.headers`).

    What :class:`Middleware` and :class:`CSP` do with the application they
    wrap, so that which rule applies never depends on which object answered:
    a status or header that a view could not send is a logged 400 here too.
    """
    __traceback_hide__ = __tracebackhide__ = True  # a bug's traceback is the app's
    checked = _Checked(environ, start_response)
    body = app(environ, checked.start)
    if checked.refused is not None:
        close = getattr(body, "close", None)
        if close is not None:
            close()
        return checked.refused
    if isinstance(body, (list, tuple)):
        return body  # start_response was called: nothing runs later
    wrapper = environ.get("wsgi.file_wrapper")
    if isinstance(wrapper, type) and isinstance(body, wrapper):
        return body  # ditto, and sendfile() stays possible
    return _GuardedBody(body, checked)


class View:
    """A WSGI application that calls ``func(request)`` and sends what it returns.

    Werkzeug HTTP exceptions become their responses; any other exception is
    logged and becomes a generic 500, or a traceback page when *debug* is on.
    """

    def __init__(
        self,
        func: Callable[[Request], Any],
        *,
        debug: bool | None = None,
        content_type: str | None = None,
        loader: Loader | None = None,
        request_class: type[Request] = Request,
    ) -> None:
        self.func = func
        self.debug = debug_default() if debug is None else debug
        self.content_type = content_type
        self.loader = loader
        self.request_class = request_class
        self.__name__ = getattr(func, "__name__", type(self).__name__)
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def handle(self, request: Request) -> Any:
        """Produce the view's return value for *request* (subclasses override)."""
        return self.func(request)

    def get_response(self, request: Request) -> Response:
        """Call the view with *request* current and turn any outcome into a Response."""
        token = _request_var.set(request)
        try:
            response = make_response(self.handle(request), self.content_type)
        except HTTPException as exc:
            response = exc.get_response(request.environ)
        except Exception as exc:
            refused = as_header_error(exc)
            if refused is not None:
                return refusal(refused, request.environ)
            log.exception("error serving %s", request_line(request.environ))
            return error_response(exc, self.debug)
        finally:
            _request_var.reset(token)
        # Every response, a raised one (abort(Response(...))) too.
        try:
            check_status(response.status)
            check_headers(response.headers.items())
        except HeaderError as exc:
            return refusal(exc, request.environ)
        return response

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if self.loader is not None:
            environ[LOADER_KEY] = self.loader
        request = self.request_class(environ)
        response = self.get_response(request)
        app_iter = response(environ, _strict_start_response(start_response))
        return _respond(app_iter, request, environ)


def view(
    func: Callable[[Request], Any] | None = None,
    *,
    debug: bool | None = None,
    content_type: str | None = None,
    loader: Loader | None = None,
) -> Any:
    """Make ``func(request)`` a WSGI application; usable as ``@view`` or ``@view(...)``."""
    if func is None:
        return lambda f: View(f, debug=debug, content_type=content_type, loader=loader)
    return View(func, debug=debug, content_type=content_type, loader=loader)


class Middleware:
    """Wrap a WSGI application to give it templates, the current request and sub-views.

    * ``environ["ptl_wsgi.loader"]`` (and :func:`current_loader`, :func:`render`)
      give the application *loader*;
    * :func:`current_request` works while the application runs and while its
      response body is iterated, so templates called from it can use it;
    * *views* maps path prefixes to views (``{"/hello": hello}``) that are served
      like :func:`view` serves them, with the prefix moved to ``SCRIPT_NAME``.

    Every other response of the application passes through untouched,
    ``close()`` and ``wsgi.file_wrapper`` included.
    """

    def __init__(
        self,
        app: WSGIApplication,
        loader: Loader | None = None,
        views: Mapping[str, Callable[[Request], Any]] | None = None,
        *,
        debug: bool | None = None,
    ) -> None:
        self.app = app
        self.loader = loader
        self.debug = debug_default() if debug is None else debug
        self.views: dict[str, View] = {}
        for prefix, func in (views or {}).items():
            self.mount(prefix, func)

    def mount(self, prefix: str, func: Callable[[Request], Any]) -> View:
        """Serve *func* (a view, or a :class:`View`) at *prefix* and below it."""
        if not prefix.startswith("/") or (prefix.endswith("/") and prefix != "/"):
            raise ValueError(f"a mount prefix looks like '/name', not {prefix!r}")
        wrapped = func if isinstance(func, View) else View(func, debug=self.debug)
        self.views[prefix] = wrapped
        return wrapped

    def _match(self, path: str) -> tuple[str, View] | None:
        for prefix, mounted in self.views.items():
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return prefix, mounted
        return None

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if self.loader is not None:
            environ[LOADER_KEY] = self.loader
        found = self._match(environ.get("PATH_INFO", "") or "/") if self.views else None
        if found is not None:
            prefix, mounted = found
            environ = dict(environ)
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix.rstrip("/")
            environ["PATH_INFO"] = environ.get("PATH_INFO", "")[len(prefix.rstrip("/")) :]
            return mounted(environ, start_response)
        request = Request(environ, populate_request=False)
        token = _request_var.set(request)
        try:
            app_iter = call_checked(self.app, environ, start_response)
        finally:
            _request_var.reset(token)
        return _respond(app_iter, request, environ)


# -- Content-Security-Policy -----------------------------------------------------------------


class CSP:
    """Wrap a WSGI application to send a ``Content-Security-Policy`` with a fresh nonce.

    While the application runs and while its body is iterated,
    :func:`ptl_wsgi.csp.csp_nonce` returns the request's nonce (it is also
    in ``environ["ptl_wsgi.csp_nonce"]``), and the response's header names
    it; every ``<script>``, ``<style>`` and stylesheet ``<link>`` a template's
    literals write carries it.  *directives* and *hashes* (of static inline
    scripts, ``ptl-wsgi csp-hashes``) go to
    :func:`~ptl_wsgi.csp.content_security_policy`.  A response that already has
    the header keeps its own.
    """

    def __init__(
        self,
        app: WSGIApplication,
        directives: Mapping[str, str | Iterable[str] | None] | None = None,
        hashes: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.directives = check_directives(directives)
        self.hashes = check_hashes(hashes)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        state = RequestNonce(environ)
        policy = state.policy(self.directives, self.hashes)

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if not any(name.lower() == HEADER.lower() for name, _ in headers):
                headers = [*headers, (HEADER, policy)]
            if exc_info is None:
                return start_response(status, headers)
            return start_response(status, headers, exc_info)

        with state:
            app_iter = call_checked(self.app, environ, start)
        return state.iterate(app_iter, environ)
