"""PTL templates in Quart: ``PTL(app)``, then Quart's own ``await render_template(...)``.

With ``PTL(app)``, Quart's :func:`quart.render_template` and
:func:`quart.stream_template` render ``.ptl`` names through ptl_wsgi, beside
Jinja2 templates::

    from quart import Quart, render_template
    from ptl_wsgi.contrib.quart import PTL

    app = Quart(__name__)
    PTL(app)                      # or PTL().init_app(app) in a factory

    @app.get("/")
    async def index():
        return await render_template("index.ptl", posts=await load_posts())

Quart is built on Flask's sans-IO app and renders as Flask does, through
``app.jinja_env``: the seam, the template class and the loader are those of the
Flask extension (:mod:`ptl_wsgi.contrib.flask_core`).  Quart's context
processors (async ones too), template globals, both signals, blueprints'
template folders, lists of names, ``PTL_AUTO_RELOAD``, ``PTL_SEARCH_PATH``,
``PTL_CSP`` and ``PTL_CSP_DIRECTIVES`` work as in Flask.  This module adds
what is Quart's own: async request hooks for the CSP nonce (kept in the
request's ASGI scope), awaitable render functions, and :func:`form_data` for
forms (a Quart request's form is read with ``await``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, MutableMapping, Sequence
from typing import Any

import jinja2
import quart
from quart import Quart, Response, current_app, has_request_context, request
from quart.wrappers.response import IterableBody

from ptl_wsgi import loader as _loader
from ptl_wsgi import output_policy
from ptl_wsgi.asgi import request_line
from ptl_wsgi.contrib import flask_core as _core
from ptl_wsgi.contrib.flask_core import PTLTemplate, TemplateNotFound, TemplatesNotFound
from ptl_wsgi.csp import CSP_NONCE_KEY, in_nonce_scope_async
from ptl_wsgi.forms.inputs import FormData
from ptl_wsgi.headers import HeaderError, check_headers

__all__ = [
    "PTL",
    "PTLTemplate",
    "TemplateNotFound",
    "TemplatesNotFound",
    "form_data",
    "get_loader",
    "render_template",
    "render_template_string",
    "render_text",
    "stream_template",
    "stream_template_string",
]


class _Quart(_core.Framework):
    name = "Quart"

    def request(self) -> Any:
        return request._get_current_object() if has_request_context() else None  # type: ignore[attr-defined]

    def store(self, request: Any) -> MutableMapping[str, Any]:
        return request.scope  # type: ignore[no-any-return]

    def current_app(self) -> Quart:
        return current_app._get_current_object()  # type: ignore[attr-defined,no-any-return]

    def refusal(self, exc: HeaderError, request: Any) -> Response:
        logging.getLogger(__name__).warning("refused %s: %s", request_line(request.scope), exc)
        body = f"Bad Request: the response would carry an invalid header: {exc}\n"
        return Response(body, status=400, mimetype="text/plain")

    def forms_adapter(self) -> Any:
        from ptl_wsgi.contrib.forms_quart import adapter

        return adapter

    def guard(self, app: Quart) -> None:  # type: ignore[override]
        _guard(app, self)

    def hook(self, function: Callable[..., Any]) -> Callable[..., Any]:
        # Async: Quart runs a sync hook in a worker thread, whose context variables (the
        # nonce's scope) would not reach the view.
        async def hook(*args: Any) -> Any:
            return function(*args)

        return hook

    async def returned(self, value: Any) -> Any:
        return value


_QUART = _Quart()


class PTL(_core.Extension):
    """The Quart extension: ``PTL(app)``, or ``PTL().init_app(app)`` in a factory."""

    framework = _QUART


def _guard(app: Quart, framework: _Quart) -> None:
    """Wrap ``app.handle_request``, which gives Quart's ASGI side each request's final
    response (after every ``after_request`` hook, an error handler's too), and
    ``app.handle_websocket``, which gives it a WebSocket's denial response: their headers
    held to the policy, and the request's CSP header added where it has none.  Checked as
    ``str``, before Quart encodes them (as UTF-8, which no server-side check could read back)."""
    _core.refuse_library_header_errors(
        app, framework, "handle_websocket_exception", _current_websocket
    )
    make_response = app.make_response
    if not getattr(make_response, "_ptl_guard", False):

        @functools.wraps(make_response)
        async def written_response(*args: Any) -> Any:
            # What a view returns written out (its streamed bodies, which Quart takes
            # only as real generators: in _held, each chunk as Quart iterates it).
            return await make_response(*(_core.written_value(arg, False) for arg in args))

        written_response._ptl_guard = True  # type: ignore[attr-defined]
        app.make_response = written_response  # type: ignore[method-assign, assignment]
    for method, csp in (("handle_request", True), ("handle_websocket", False)):
        handle = getattr(app, method)
        if not getattr(handle, "_ptl_guard", False):  # else PTL(app) twice
            setattr(app, method, _held(app, framework, handle, csp))


def _held(app: Quart, framework: _Quart, handle: Any, csp: bool) -> Any:
    @functools.wraps(handle)
    async def held(connection: Any) -> Any:
        __traceback_hide__ = __tracebackhide__ = True  # a bug's traceback is the app's
        response = await handle(connection)
        if response is None:
            return None  # a WebSocket accepted
        try:
            check_headers(response.headers.items())
        except HeaderError as exc:
            response = framework.refusal(exc, connection)
        policy = _core.csp_value(app, connection.scope) if csp else None
        if policy is not None:
            response.headers.setdefault(_core.CSP_HEADER, policy)
        nonce = connection.scope.get(CSP_NONCE_KEY) if csp else None
        if isinstance(nonce, str) and isinstance(response.response, IterableBody):
            # A streamed body is iterated by Quart after teardown closed the scope.
            response.response.iter = in_nonce_scope_async(response.response.iter, nonce)
        return response

    held._ptl_guard = True  # type: ignore[attr-defined]
    return held


def _current_websocket() -> Any:
    return quart.websocket._get_current_object()  # type: ignore[attr-defined]


def _app(app: Quart | None = None) -> Quart:
    if app is None:
        found: Quart = current_app._get_current_object()  # type: ignore[attr-defined]
        app = found
    _core.state_of(app, _QUART)
    return app


def get_loader(app: Quart | None = None) -> _loader.Loader:
    """The loader of *app* (default: the current app), e.g. for ``loader.module(path)``."""
    return _core.get_loader(_app(app))


# -- rendering: Quart's own functions, and PTL source ----------------------------------------

TemplateNames = str | jinja2.Template | Sequence[str | jinja2.Template]


async def render_template(template_name_or_list: TemplateNames, /, **context: Any) -> Any:
    """Quart's :func:`quart.render_template`, after checking that ``PTL(app)`` was called.

    A ``.ptl`` name (``"dir/file.ptl"``, ``"dir/file.ptl:function"``) gives
    ``htmltext``, output that is not markup (a ``[plain]`` template's str)
    escaped; a list renders the first name that exists.
    """
    __traceback_hide__ = __tracebackhide__ = True
    _app()
    return await quart.render_template(template_name_or_list, **context)  # type: ignore[arg-type]


async def stream_template(
    template_name_or_list: TemplateNames, /, **context: Any
) -> AsyncIterator[Any]:
    """Quart's :func:`quart.stream_template`, after checking that ``PTL(app)`` was called.

    A generator template is sent chunk by chunk as it yields; any other
    template as one chunk once it has run.
    """
    _app()
    return await quart.stream_template(template_name_or_list, **context)  # type: ignore[arg-type]


async def render_template_string(source: str, /, **context: Any) -> Any:
    """Render PTL *source* (its ``render`` template) as :func:`render_template` renders a
    file: context processors, globals, signals, escaping.  (Quart's own
    ``render_template_string`` renders Jinja2 source.)"""
    __traceback_hide__ = __tracebackhide__ = True
    template = _core.from_string(_app(), source)
    return await quart.render_template(template, **context)  # type: ignore[arg-type]


async def stream_template_string(source: str, /, **context: Any) -> AsyncIterator[Any]:
    """Stream PTL *source* (its ``render`` template) as :func:`stream_template` does."""
    return await quart.stream_template(_core.from_string(_app(), source), **context)


async def render_text(name: str | Sequence[str], /, **context: Any) -> str:
    """Render template *name* (or the first of a list) as raw text: a plain ``str``
    with nothing escaped, for mail bodies and ``text/plain`` responses.

    Context processors, globals and signals are as for :func:`render_template`;
    the output is :func:`ptl_wsgi.output_policy.text`, never fit for an HTML response.
    """
    __traceback_hide__ = __tracebackhide__ = True
    app = _app()
    template = _core.text_version(app.jinja_env.get_or_select_template(name))  # type: ignore[arg-type]
    return output_policy.text(await quart.render_template(template, **context))  # type: ignore[arg-type]


async def form_data(method: str = "post") -> FormData:
    """The current request's submission for a form with HTTP *method*, read (awaited):
    ``Form(await form_data())`` in a view, protected by Quart's CSRF policy."""
    real = request._get_current_object()  # type: ignore[attr-defined]
    if method.lower() == "get":
        return FormData(real.method, real.args, None, real)
    return FormData(real.method, await real.form, await real.files, real)
