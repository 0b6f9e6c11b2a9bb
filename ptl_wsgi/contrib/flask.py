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
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import flask
import jinja2
from flask import Flask, Response, current_app, has_request_context, request
from werkzeug.wrappers import Response as WerkzeugResponse

from ptl_wsgi import loader as _loader
from ptl_wsgi import output_policy
from ptl_wsgi.contrib import flask_core as _core
from ptl_wsgi.contrib.flask_core import PTLTemplate, TemplateNotFound, TemplatesNotFound
from ptl_wsgi.csp import CSP_NONCE_KEY, in_nonce_scope
from ptl_wsgi.headers import HeaderError
from ptl_wsgi.tracebacks import entry_point
from ptl_wsgi.wsgi import call_checked, refusal

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

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

    def request(self) -> Any:
        return request._get_current_object() if has_request_context() else None  # type: ignore[attr-defined]

    def store(self, request: Any) -> MutableMapping[str, Any]:
        return request.environ  # type: ignore[no-any-return]

    def current_app(self) -> Flask:
        return current_app._get_current_object()  # type: ignore[attr-defined,no-any-return]

    def refusal(self, exc: HeaderError, request: Any) -> Response:
        answer = refusal(exc, request.environ)  # logged, as every refusal
        return current_app.response_class.force_type(answer, request.environ)  # type: ignore[return-value]

    def forms_adapter(self) -> Any:
        from ptl_wsgi.contrib.forms_flask import adapter

        return adapter

    def guard(self, app: Flask) -> None:  # type: ignore[override]
        # At the WSGI call, the public place of middleware, where the response is final:
        # after every after_request hook (Flask runs them last registered first, so one
        # registered before PTL(app) runs after any hook of PTL's) and the session's cookie.
        _guard(app)


_FLASK = _Flask()


class PTL(_core.Extension):
    """The Flask extension: ``PTL(app)``, or ``PTL().init_app(app)`` in a factory."""

    framework = _FLASK


def _guard(app: Flask) -> None:
    """Wrap ``app.wsgi_app``: its responses held to the header policy
    (:func:`ptl_wsgi.wsgi.call_checked`), the CSP header added where one has none; and
    ``app.make_response``: what a view returns written out (:func:`_core.written_value`)."""
    _write_responses(app)
    inner = app.wsgi_app
    if getattr(inner, "_ptl_guard", False):
        return  # PTL(app) twice

    @functools.wraps(inner)
    def wsgi_app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        __traceback_hide__ = __tracebackhide__ = True  # a bug's traceback is the app's

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            policy = _core.csp_value(app, environ)
            if policy is not None and not any(name.lower() == _CSP for name, _ in headers):
                headers = [*headers, (_core.CSP_HEADER, policy)]
            if exc_info is None:
                return start_response(status, headers)
            return start_response(status, headers, exc_info)

        body = call_checked(inner, environ, start)
        nonce = environ.get(CSP_NONCE_KEY)
        # A streamed body is iterated by the server after teardown closed the scope.
        return body if not isinstance(nonce, str) else in_nonce_scope(body, nonce, environ)

    wsgi_app._ptl_guard = True  # type: ignore[attr-defined]
    app.wsgi_app = wsgi_app  # type: ignore[method-assign]


def _write_responses(app: Flask) -> None:
    make_response = app.make_response
    if getattr(make_response, "_ptl_guard", False):
        return

    @functools.wraps(make_response)
    def written_response(returned: Any) -> Any:
        if isinstance(returned, WerkzeugResponse):
            if returned.is_streamed and not returned.direct_passthrough:
                # (a view's own Response of a generator; not a file the server sends)
                returned.response = output_policy.written_chunks(returned.response)
            return make_response(returned)
        return make_response(_core.written_value(returned))

    written_response._ptl_guard = True  # type: ignore[attr-defined]
    app.make_response = written_response  # type: ignore[method-assign, assignment]


_CSP = _core.CSP_HEADER.lower()


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
