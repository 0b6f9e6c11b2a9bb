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
from collections.abc import AsyncIterator, Sequence
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
from ptl_wsgi.csp import CSP_NONCE_KEY, RequestNonce, in_nonce_scope_async
from ptl_wsgi.forms.inputs import FormData
from ptl_wsgi.headers import HeaderError, as_header_error, check_headers

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

    def request_nonce(self) -> str | None:
        if not has_request_context():
            return None
        nonce = request.scope.get(CSP_NONCE_KEY)
        return nonce if isinstance(nonce, str) else None

    def blueprint(self) -> str | None:
        return request.blueprint if has_request_context() else None


_QUART = _Quart()


class PTL:
    """The Quart extension; one instance may serve several apps (``init_app``)."""

    def __init__(self, app: Quart | None = None) -> None:
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Quart) -> None:
        """Register PTL on *app*: ``PTL_*`` config defaults, ``app.extensions["ptl"]``,
        ``.ptl`` names in ``app.jinja_env``, the CSP request hooks (idle unless
        ``PTL_CSP`` is true), the header policy (:mod:`ptl_wsgi.headers`: a
        response header with a control character is a logged 400) and Quart's
        CSRF policy for forms."""
        _core.set_up(app, _QUART)
        # Forms made in a request get Quart's CSRF policy whatever they are given.
        from ptl_wsgi.contrib.forms_quart import adapter
        from ptl_wsgi.forms.adapters import register

        register(adapter)
        # Async hooks: Quart runs a sync one in a worker thread, whose context variables
        # (the nonce's scope) would not reach the view.  First of the app's hooks, so that
        # one answering early (a login redirect) has a nonce.
        app.before_request_funcs.setdefault(None, []).insert(0, _csp_begin)
        app.before_request_funcs[None].insert(0, _ensure_jinja)
        app.after_request(_response_policy)
        _refuse_library_header_errors(app)
        app.teardown_request(_csp_end)
        app.context_processor(_csp_context)


def _app(app: Quart | None = None) -> Quart:
    if app is None:
        found: Quart = current_app._get_current_object()  # type: ignore[attr-defined]
        app = found
    _core.state_of(app, _QUART)
    return app


def get_loader(app: Quart | None = None) -> _loader.Loader:
    """The loader of *app* (default: the current app), e.g. for ``loader.module(path)``."""
    return _core.get_loader(_app(app))


async def _ensure_jinja() -> None:
    # A create_jinja_environment that builds its environment without app.jinja_environment
    # is caught here, before any view renders.
    _core.install_jinja(current_app._get_current_object(), create=True)  # type: ignore[attr-defined]


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


# -- Content-Security-Policy nonce: one scope per request -------------------------------------

_STATE_ATTR = "_ptl_csp_state"


def _csp_on() -> bool:
    return has_request_context() and _core.csp_on(current_app)


def _request_nonce() -> str:
    """The request's nonce; the first call opens its scope, which teardown closes."""
    nonce = request.scope.get(CSP_NONCE_KEY)
    if not isinstance(nonce, str):
        state = RequestNonce(request.scope)  # type: ignore[arg-type]
        setattr(request, _STATE_ATTR, state)
        nonce = state.open()
    return nonce


async def _csp_begin() -> None:
    if _csp_on():
        _request_nonce()


def _refusal(exc: HeaderError) -> Response:
    logging.getLogger(__name__).warning("refused %s: %s", request_line(request.scope), exc)
    body = f"Bad Request: the response would carry an invalid header: {exc}\n"
    return Response(body, status=400, mimetype="text/plain")


async def _response_policy(response: Response) -> Response:
    """The header policy (werkzeug lets U+0085, NUL and the like through), then the CSP."""
    try:
        check_headers(response.headers.items())
    except HeaderError as exc:
        response = _refusal(exc)
    if _csp_on():
        nonce = _request_nonce()
        response.headers.setdefault(_core.CSP_HEADER, _core.csp_header(current_app, nonce))
        # A streamed body is iterated by Quart after teardown closed the scope.
        if isinstance(response.response, IterableBody):
            response.response.iter = in_nonce_scope_async(response.response.iter, nonce)
    return response


def _refuse_library_header_errors(app: Quart) -> None:
    """Make werkzeug's own refusal of a header value (CR/LF) the 400, not Quart's 500.

    Werkzeug raises it in the view, or in Quart's ``make_response`` of what the view
    returned, outside every error handler; both reach ``handle_exception`` (which
    re-raises when testing), the one place that sees them, so it is wrapped.
    """
    # Typed as Any: the two signatures differ between Quart releases (see below).
    wrapped: Any = app
    handle = wrapped.handle_exception
    if getattr(handle, "_ptl_refusals", False):
        return  # PTL(app) twice

    @functools.wraps(handle)
    async def handle_exception(*args: Any) -> Any:
        # Quart 0.23 passes the request's context first (handle_exception(ctx, error),
        # finalize_request(ctx, result, ...)); earlier Quarts pass the error alone.
        __traceback_hide__ = __tracebackhide__ = True  # a bug's traceback is the app's
        *context, error = args
        refused = as_header_error(error)
        if refused is None:
            return await handle(*args)
        return await wrapped.finalize_request(*context, _refusal(refused), from_error_handler=True)

    handle_exception._ptl_refusals = True  # type: ignore[attr-defined]
    wrapped.handle_exception = handle_exception


async def _csp_end(exc: BaseException | None) -> None:
    # Quart runs teardown again when a stream_with_context stream ends (a copy of the
    # request context is popped): the state is gone by then, nothing is closed twice.
    state: RequestNonce | None = getattr(request, _STATE_ATTR, None)
    if state is not None:
        delattr(request, _STATE_ATTR)
        state.close()


async def _csp_context() -> dict[str, str]:
    return {"csp_nonce": _request_nonce()} if _csp_on() else {}
