"""PTL templates in Flask: ``PTL(app)``, then Flask's own ``render_template``.

With ``PTL(app)``, Flask's :func:`flask.render_template` and
:func:`flask.stream_template` render ``.ptl`` names through ptl_wsgi, beside
Jinja2 templates::

    from flask import Flask, render_template
    from ptl_wsgi.contrib.flask import PTL

    app = Flask(__name__)
    PTL(app)                      # or PTL().init_app(app) in a factory

    @app.get("/")
    def index():
        return render_template("index.ptl", posts=load_posts())

The seam is ``app.jinja_env``, which all of Flask's render functions go
through (:mod:`ptl_wsgi.contrib.flask_core`, shared with the Quart extension):
its loader is wrapped so that a ``.ptl`` name (``"dir/file.ptl"``,
``"dir/file.ptl:function"``) loads a :class:`PTLTemplate`, a
:class:`jinja2.Template` whose rendering calls the PTL template and sends its
output through :mod:`ptl_wsgi.output_policy`.  Flask does the rest as for Jinja2:
context processors, globals, both signals, streaming, lists of names.  Jinja2
never sees a ``.ptl`` file's source: ``{% include %}`` of a ``.ptl`` name
renders it, ``{% import %}`` gives its functions, ``{% extends %}`` is an error.
This module adds what is Flask's own: the request hooks of CSP nonces, the
forms' CSRF policy, and the render functions.

- Templates are looked for in the app's ``template_folder``, then in every
  blueprint's, in registration order, then in ``PTL_SEARCH_PATH``.
- Auto-reload follows ``PTL_AUTO_RELOAD`` if set, else ``TEMPLATES_AUTO_RELOAD``,
  else ``app.debug``.
- The context is the keyword arguments, Flask's context processors (app and
  blueprint: ``request``, ``g``, ...) and its template globals (``url_for``,
  ``get_flashed_messages``, ``config``, ``session``, ...); a template receives
  the keys it declares as parameters, or all of them with ``**kwargs``.
- With ``PTL_CSP = True``, every response gets a ``Content-Security-Policy``
  naming a fresh per-request nonce (``PTL_CSP_DIRECTIVES`` adds directives,
  ``PTL_CSP_HASHES`` hashes of static inline scripts), which every
  ``<script>``, ``<style>`` and stylesheet ``<link>`` of a template's literals
  carries, and which templates receive as ``csp_nonce``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import flask
import jinja2
from flask import Flask, Response, current_app, has_request_context, request

from ptl_wsgi import loader as _loader
from ptl_wsgi import output_policy
from ptl_wsgi.contrib import flask_core as _core
from ptl_wsgi.contrib.flask_core import PTLTemplate, TemplateNotFound, TemplatesNotFound
from ptl_wsgi.csp import CSP_NONCE_KEY, RequestNonce, in_nonce_scope
from ptl_wsgi.headers import HeaderError, as_header_error, check_headers
from ptl_wsgi.tracebacks import entry_point
from ptl_wsgi.wsgi import refusal

__all__ = [
    "PTL",
    "PTLTemplate",
    "TemplateNotFound",
    "TemplatesNotFound",
    "get_loader",
    "render_template",
    "render_template_string",
    "render_text",
    "stream_template",
    "stream_template_string",
]


class _Flask(_core.Framework):
    name = "Flask"

    def request_nonce(self) -> str | None:
        return request.environ.get(CSP_NONCE_KEY) if has_request_context() else None

    def blueprint(self) -> str | None:
        return request.blueprint if has_request_context() else None


_FLASK = _Flask()


class PTL:
    """The Flask extension; one instance may serve several apps (``init_app``)."""

    def __init__(self, app: Flask | None = None) -> None:
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Register PTL on *app*: ``PTL_*`` config defaults, ``app.extensions["ptl"]``,
        ``.ptl`` names in ``app.jinja_env``, the CSP request hooks (idle unless
        ``PTL_CSP`` is true), the header policy (:mod:`ptl_wsgi.headers`: a
        response header with a control character is a logged 400) and Flask's
        CSRF policy for forms."""
        _core.set_up(app, _FLASK)
        # Forms made in a request get Flask's CSRF policy whatever they are given (None
        # for an empty form, say), not only flask.request.
        from ptl_wsgi.contrib.forms_flask import adapter
        from ptl_wsgi.forms.adapters import register

        register(adapter)
        # First of the app's hooks, so that one answering early (a login redirect) has a nonce.
        app.before_request_funcs.setdefault(None, []).insert(0, _csp_begin)
        app.before_request_funcs[None].insert(0, _ensure_jinja)
        app.after_request(_response_policy)
        _refuse_library_header_errors(app)
        app.teardown_request(_csp_end)
        app.context_processor(_csp_context)


def _app(app: Flask | None = None) -> Flask:
    if app is None:
        # The proxy's object (current_app is typed as the Flask it stands for).
        found: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
        app = found
    _core.state_of(app, _FLASK)
    return app


def get_loader(app: Flask | None = None) -> _loader.Loader:
    """The loader of *app* (default: the current app), e.g. for ``loader.module(path)``."""
    return _core.get_loader(_app(app))


def _ensure_jinja() -> None:
    # A create_jinja_environment that builds its environment without app.jinja_environment
    # is caught here, before any view renders.
    _core.install_jinja(current_app._get_current_object(), create=True)  # type: ignore[attr-defined]


# -- rendering: Flask's own functions, and PTL source ----------------------------------------


@entry_point
def render_template(
    template_name_or_list: str | jinja2.Template | Sequence[str | jinja2.Template],
    /,
    **context: Any,
) -> Any:
    """Flask's :func:`flask.render_template`, after checking that ``PTL(app)`` was called.

    A ``.ptl`` name (``"dir/file.ptl"``, ``"dir/file.ptl:function"``) returns
    ``htmltext``, output that is not markup (a ``[plain]`` template's str)
    escaped; a list renders the first name that exists.
    """
    _app()
    return flask.render_template(template_name_or_list, **context)  # type: ignore[arg-type]


def stream_template(
    template_name_or_list: str | jinja2.Template | Sequence[str | jinja2.Template],
    /,
    **context: Any,
) -> Iterator[Any]:
    """Flask's :func:`flask.stream_template`, after checking that ``PTL(app)`` was called.

    A generator template (a plain ``def`` in a ``.ptl`` module that yields,
    say, the output of ``[html]`` templates) is sent chunk by chunk as it
    yields; any other template is sent as one chunk once it has run.
    """
    _app()
    return flask.stream_template(template_name_or_list, **context)  # type: ignore[arg-type]


@entry_point
def render_template_string(source: str, /, **context: Any) -> Any:
    """Render PTL *source* (its ``render`` template) as :func:`render_template` renders a
    file: context processors, globals, signals, escaping.  (Flask's own
    ``render_template_string`` renders Jinja2 source.)"""
    return flask.render_template(_core.from_string(_app(), source), **context)


def stream_template_string(source: str, /, **context: Any) -> Iterator[Any]:
    """Stream PTL *source* (its ``render`` template) as :func:`stream_template` does."""
    return flask.stream_template(_core.from_string(_app(), source), **context)


@entry_point
def render_text(
    name: str | Sequence[str],
    /,
    **context: Any,
) -> str:
    """Render template *name* (or the first of a list) as raw text: a plain ``str``
    with nothing escaped, for mail bodies and ``text/plain`` responses.

    Context processors, globals and signals are as for :func:`render_template`;
    the output is :func:`ptl_wsgi.output_policy.text`, never fit for an HTML response.
    """
    app = _app()
    template = app.jinja_env.get_or_select_template(name)  # type: ignore[arg-type]
    return output_policy.text(flask.render_template(_core.text_version(template), **context))


# -- Content-Security-Policy nonce: one scope per request context -----------------------------

_STATE_ATTR = "_ptl_csp_state"


def _csp_on() -> bool:
    return has_request_context() and _core.csp_on(current_app)


def _request_nonce() -> str:
    """The request's nonce; the first call opens its scope, which teardown closes."""
    nonce: str | None = request.environ.get(CSP_NONCE_KEY)
    if nonce is None:
        state = RequestNonce(request.environ)
        setattr(request, _STATE_ATTR, state)
        nonce = state.open()
    return nonce


def _csp_begin() -> None:
    if _csp_on():
        _request_nonce()


def _refusal(exc: HeaderError) -> Response:
    answer = refusal(exc, request.environ)  # logged, as every refusal
    return current_app.response_class.force_type(answer, request.environ)  # type: ignore[return-value]


def _response_policy(response: Response) -> Response:
    """The header policy (werkzeug lets U+0085, NUL and the like through), then the CSP."""
    try:
        check_headers(response.headers.items())
    except HeaderError as exc:
        response = _refusal(exc)
    if _csp_on():
        nonce = _request_nonce()
        response.headers.setdefault(_core.CSP_HEADER, _core.csp_header(current_app, nonce))
        # A streamed body is iterated by the server after teardown closed the scope.
        body: Iterable[Any] = response.response
        response.response = in_nonce_scope(body, nonce, request.environ)
    return response


def _refuse_library_header_errors(app: Flask) -> None:
    """Make werkzeug's own refusal of a header value (CR/LF) the 400, not Flask's 500.

    Werkzeug raises it in the view, or in Flask's ``make_response`` of what the view
    returned, outside every error handler; both reach ``handle_exception`` (which
    re-raises when testing), the one place that sees them, so it is wrapped.
    """
    handle = app.handle_exception
    if getattr(handle, "_ptl_refusals", False):
        return  # PTL(app) twice

    @functools.wraps(handle)
    def handle_exception(e: Exception) -> Response:
        __traceback_hide__ = __tracebackhide__ = True  # a bug's traceback is the app's
        refused = as_header_error(e)
        if refused is None:
            return handle(e)
        return app.finalize_request(_refusal(refused), from_error_handler=True)

    handle_exception._ptl_refusals = True  # type: ignore[attr-defined]
    app.handle_exception = handle_exception  # type: ignore[method-assign]


def _csp_end(exc: BaseException | None) -> None:
    # Teardown runs where Flask resets its own context variables: in wsgi_app,
    # where the scope was opened (Flask 3.1 runs it once more after a
    # stream_with_context stream, with no scope left to close), or, in Flask
    # 3.0, at the end of such a stream.
    state: RequestNonce | None = getattr(request, _STATE_ATTR, None)
    if state is not None:
        delattr(request, _STATE_ATTR)
        state.close()


def _csp_context() -> dict[str, str]:
    return {"csp_nonce": _request_nonce()} if _csp_on() else {}
