"""PTL templates in Flask: ``PTL(app)``, :func:`render_template`, :func:`stream_template`.

A thin adapter over :class:`ptl_wsgi.loader.Loader` that follows Flask's own
template conventions::

    from ptl_wsgi.contrib.flask import PTL, render_template

    app = Flask(__name__)
    PTL(app)                      # or PTL().init_app(app) in a factory

    @app.get("/")
    def index():
        return render_template("index.ptl", posts=load_posts())

- Templates are looked for in the app's ``template_folder``, then in every
  blueprint's, in registration order, then in ``PTL_SEARCH_PATH``.
- Auto-reload follows ``PTL_AUTO_RELOAD`` if set, else ``TEMPLATES_AUTO_RELOAD``,
  else ``app.debug``.
- The context is the keyword arguments, Flask's context processors (app and
  blueprint: ``request``, ``g``, ...) and its template globals (``url_for``,
  ``get_flashed_messages``, ``config``, ``session``, ...); a template receives
  the keys it declares as parameters, or all of them with ``**kwargs``.
- With ``PTL_CSP = True``, every response gets a ``Content-Security-Policy``
  naming a fresh per-request nonce (``PTL_CSP_DIRECTIVES`` adds directives),
  which templates receive as ``csp_nonce``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import jinja2
from flask import Flask, Response, current_app, has_request_context, request, stream_with_context
from flask.signals import before_render_template, template_rendered
from jinja2.defaults import DEFAULT_NAMESPACE

from ptl_wsgi import loader as _loader
from ptl_wsgi.html import htmlescape, htmltext
from ptl_wsgi.safety import CSP_NONCE_KEY, content_security_policy, nonce_scope

__all__ = ["PTL", "TemplateNotFound", "get_loader", "render_template", "stream_template"]


class TemplateNotFound(_loader.TemplateNotFound, jinja2.TemplateNotFound):
    """A missing template, also a :class:`jinja2.TemplateNotFound`; ``tried`` lists where."""

    def __init__(self, name: str, tried: Iterable[str] = (), reason: str = "") -> None:
        super().__init__(name, tried, reason)
        self.templates = [name]  # jinja2's __init__, reached via super(), set it to the message


class PTL:
    """The Flask extension; one instance may serve several apps (``init_app``)."""

    def __init__(self, app: Flask | None = None) -> None:
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Register PTL on *app*: ``PTL_*`` config defaults, ``app.extensions["ptl"]``
        and the CSP request hooks (idle unless ``PTL_CSP`` is true)."""
        app.config.setdefault("PTL_AUTO_RELOAD", None)
        app.config.setdefault("PTL_SEARCH_PATH", [])
        app.config.setdefault("PTL_CSP", False)
        app.config.setdefault("PTL_CSP_DIRECTIVES", {})
        app.extensions["ptl"] = _AppState(app)
        # First of the app's hooks, so that one answering early (a login redirect) has a nonce.
        app.before_request_funcs.setdefault(None, []).insert(0, _csp_begin)
        app.after_request(_csp_header)
        app.teardown_request(_csp_end)
        app.context_processor(_csp_context)


class _AppState:
    """One app's loader, built at first use so that blueprints registered later count."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self._loader: _loader.Loader | None = None
        self._lock = threading.Lock()

    @property
    def loader(self) -> _loader.Loader:
        if self._loader is None:
            with self._lock:
                if self._loader is None:
                    self._loader = _loader.Loader(_search_path(self.app))
        return self._loader


def _search_path(app: Flask) -> list[str]:
    folders = [
        os.path.join(scaffold.root_path, scaffold.template_folder)
        for scaffold in (app, *app.iter_blueprints())
        if scaffold.template_folder is not None
    ]
    extra = [os.path.join(app.root_path, folder) for folder in app.config["PTL_SEARCH_PATH"]]
    return list(dict.fromkeys([*folders, *extra]))


def _auto_reload(app: Flask) -> bool:
    for key in ("PTL_AUTO_RELOAD", "TEMPLATES_AUTO_RELOAD"):
        if app.config.get(key) is not None:
            return bool(app.config[key])
    return app.debug


def get_loader(app: Flask | None = None) -> _loader.Loader:
    """The loader of *app* (default: the current app), e.g. for ``loader.module(path)``."""
    if app is None:
        app = current_app._get_current_object()  # type: ignore[attr-defined]
    try:
        state: _AppState = app.extensions["ptl"]
    except KeyError:
        raise RuntimeError("PTL is not set up on this app; call PTL(app) first") from None
    loader = state.loader
    loader.auto_reload = _auto_reload(app)
    return loader


# -- Content-Security-Policy nonce: one scope per request context -----------------------------

_SCOPE_ATTR = "_ptl_csp_scope"


def _csp_on() -> bool:
    return has_request_context() and bool(current_app.config["PTL_CSP"])


def _request_nonce() -> str:
    """The request's nonce; the first call opens its scope, which teardown closes."""
    nonce: str | None = request.environ.get(CSP_NONCE_KEY)
    if nonce is None:
        scope: AbstractContextManager[str] = nonce_scope()
        nonce = request.environ[CSP_NONCE_KEY] = scope.__enter__()
        setattr(request, _SCOPE_ATTR, scope)
    return nonce


def _csp_begin() -> None:
    if _csp_on():
        _request_nonce()


def _csp_header(response: Response) -> Response:
    if _csp_on():
        directives = current_app.config["PTL_CSP_DIRECTIVES"]
        policy = content_security_policy(_request_nonce(), directives)
        response.headers.setdefault("Content-Security-Policy", policy)
    return response


def _csp_end(exc: BaseException | None) -> None:
    # Teardown runs where Flask resets its own context variables: in wsgi_app,
    # where the scope was opened (Flask 3.1 runs it once more after a
    # stream_with_context stream, with no scope left to close), or, in Flask
    # 3.0, at the end of such a stream.
    scope: AbstractContextManager[str] | None = getattr(request, _SCOPE_ATTR, None)
    if scope is not None:
        delattr(request, _SCOPE_ATTR)
        scope.__exit__(None, None, None)


def _csp_context() -> dict[str, str]:
    return {"csp_nonce": _request_nonce()} if _csp_on() else {}


def _in_nonce_scope(chunks: Iterator[htmltext], nonce: str) -> Iterator[htmltext]:
    """*chunks*, each produced with *nonce* current: a stream runs after teardown.

    The scope is left before each yield, so it never outlives a step of the
    server's iteration, whatever context that runs in.
    """
    while True:
        with nonce_scope(nonce):
            chunk = next(chunks, None)
        if chunk is None:
            return
        yield chunk


def _prepare(name: str, context: dict[str, Any]) -> tuple[Flask, _loader.Template, dict[str, Any]]:
    """The app, the template and what it is called with; *context* gets Flask's additions."""
    app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
    try:
        template = get_loader(app).get_template(name)
    except _loader.TemplateNotFound as exc:
        raise TemplateNotFound(exc.name, exc.tried, exc.reason) from None
    app.update_template_context(context)
    before_render_template.send(
        app, _async_wrapper=app.ensure_sync, template=template, context=context
    )
    # Flask's globals minus Jinja's own helpers (range, lipsum, ...), below the context.
    globals_ = {
        key: value
        for key, value in app.jinja_env.globals.items()
        if DEFAULT_NAMESPACE.get(key) is not value
    }
    return app, template, {**globals_, **context}


def _chunks(result: Any) -> Iterator[htmltext]:
    """A template's output as markup: the value it returns, or each item it yields."""
    for chunk in result if isinstance(result, Iterator) else (result,):
        if chunk is not None:
            yield htmlescape(chunk)


def render_template(name: str, /, **context: Any) -> htmltext:
    """Render template *name* (``"dir/file.ptl"`` or ``"dir/file.ptl:function"``).

    Output that is not markup (a ``[plain]`` template's str) is escaped.
    """
    app, template, full_context = _prepare(name, context)
    result = htmltext("").join(_chunks(template.render(full_context)))
    template_rendered.send(app, _async_wrapper=app.ensure_sync, template=template, context=context)
    return result


def stream_template(name: str, /, **context: Any) -> Iterator[htmltext]:
    """Render template *name* as an iterator of markup chunks, for a streamed response.

    A template that is a generator (a plain ``def`` in a ``.ptl`` module that
    yields, say, the output of ``[html]`` templates) is sent chunk by chunk as
    it yields; any other template is sent as one chunk once it has run.
    """
    app, template, full_context = _prepare(name, context)
    result = template.render(full_context)
    nonce = request.environ.get(CSP_NONCE_KEY) if request else None

    def generate() -> Iterator[htmltext]:
        chunks = _chunks(result)
        yield from chunks if nonce is None else _in_nonce_scope(chunks, nonce)
        template_rendered.send(
            app, _async_wrapper=app.ensure_sync, template=template, context=context
        )

    # The request context must outlive the view while the response is sent.
    return stream_with_context(generate()) if request else generate()
