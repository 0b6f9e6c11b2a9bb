"""PTL templates in Litestar: ``PTLTemplateEngine``, Litestar's template engine protocol.

::

    from litestar import Litestar, get
    from litestar.template import TemplateConfig
    from ptl_wsgi.contrib.litestar import PTLPlugin, PTLTemplateEngine, Template

    @get("/")
    async def index() -> Template:
        return Template(template_name="index.ptl", context={"name": "world"})

    app = Litestar([index], template_config=TemplateConfig(directory="templates",
                                                           engine=PTLTemplateEngine),
                   plugins=[PTLPlugin()])   # the header policy (and CSP nonces: csp=True)

Names are the :class:`~ptl_wsgi.loader.Loader`'s (``"blog/post.ptl"``,
``"blog/post.ptl:sidebar"``).  A render returns markup: output that is not
markup is escaped (:mod:`ptl_wsgi.output_policy`), a generator template's chunks
joined.  The context is Litestar's (``request``, ``csrf_input`` as markup)
plus the registered callables (``url_for``, ``csrf_token``,
``url_for_static_asset``, and any :meth:`~PTLTemplateEngine.register_template_callable`
adds), and ``csp_nonce`` under :class:`ptl_wsgi.asgi.CSP`.

Litestar guesses a template response's media type from the name's suffix.
:class:`Template` (a subclass of Litestar's) makes every PTL name
``text/html``; with Litestar's own ``Template``, the engine registers
``.ptl`` as ``text/html`` with :mod:`mimetypes`, which covers ``"page.ptl"``
but not ``"page.ptl:sidebar"`` or ``.py`` templates (give those
``media_type=MediaType.HTML``).
"""

from __future__ import annotations

import functools
import http.cookies
import logging
import mimetypes
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar.config.app import AppConfig
from litestar.enums import MediaType
from litestar.exceptions import TemplateNotFoundException
from litestar.exceptions.responses import create_exception_response
from litestar.middleware import DefineMiddleware
from litestar.response.template import Template as _LitestarTemplate
from litestar.template.base import (
    TemplateEngineProtocol,
    csrf_token,
    url_for,
    url_for_static_asset,
)

from ptl_wsgi import loader as _loader
from ptl_wsgi import output_policy
from ptl_wsgi.asgi import CSP, Middleware, request_line, scope_nonce
from ptl_wsgi.csp import Directives, check_directives, check_hashes
from ptl_wsgi.headers import HeaderError, as_header_error
from ptl_wsgi.html import htmltext
from ptl_wsgi.tracebacks import entry_point
from ptl_wsgi.wsgi import debug_default

if TYPE_CHECKING:
    from litestar.plugins import InitPlugin
else:
    try:  # Litestar 2.15 and later; the protocol it replaced before
        from litestar.plugins import InitPlugin
    except ImportError:  # pragma: no cover (Litestar 2.12 to 2.14)
        from litestar.plugins import InitPluginProtocol as InitPlugin

__all__ = [
    "EXCEPTION_HANDLERS",
    "PTLPlugin",
    "PTLTemplate",
    "PTLTemplateEngine",
    "Template",
    "TemplateNotFound",
    "is_ptl_name",
    "refuse_header",
]

log = logging.getLogger(__name__)

Directory = str | os.PathLike[str]


def is_ptl_name(name: str | None) -> bool:
    """Whether template *name* is one a :class:`~ptl_wsgi.loader.Loader` serves
    (its file part ends in ``.ptl`` or ``.py``)."""
    return name is not None and _loader.split_name(name)[0].endswith(_loader.SUFFIXES)


def _register_media_type() -> None:
    # Litestar reads a Template's media type off the name's suffix: "page.ptl" is HTML.
    if mimetypes.guess_type("page.ptl")[0] is None:
        mimetypes.add_type("text/html", ".ptl")


class TemplateNotFound(TemplateNotFoundException):
    """Litestar's error for a missing template; ``tried`` lists every place looked in
    (also in ``__cause__``, the loader's error, which Litestar's log shows)."""

    def __init__(self, error: _loader.TemplateNotFound) -> None:
        super().__init__(template_name=error.name)
        self.tried = error.tried
        self.reason = error.reason
        self.__cause__ = error


class PTLTemplate:
    """One template as Litestar renders it: ``render(**context)`` gives markup."""

    def __init__(self, engine: PTLTemplateEngine, template: _loader.Template) -> None:
        self.engine = engine
        self.template = template
        self.name = template.name

    def render(self, *args: Any, **kwargs: Any) -> str:
        """The template's output for the context, as ``htmltext``."""
        return self.engine._render(self.template, dict(*args, **kwargs))

    def __repr__(self) -> str:
        return f"<PTLTemplate {self.name!r}>"


class PTLTemplateEngine(TemplateEngineProtocol[PTLTemplate, Mapping[str, Any]]):
    """Templates under *directory* (one folder or a list), or of a :class:`~ptl_wsgi.loader.Loader`
    given as *engine_instance* (``TemplateConfig(instance=PTLTemplateEngine.from_loader(...))``).

    *auto_reload* (default: the app's ``debug``, or ``PTL_WSGI_DEBUG=1``)
    reloads edited templates, keeping the last good version of a broken one.
    """

    def __init__(
        self,
        directory: Directory | Sequence[Directory] | None = None,
        engine_instance: _loader.Loader | None = None,
        *,
        auto_reload: bool | None = None,
    ) -> None:
        if (directory is None) == (engine_instance is None):
            raise TypeError("PTLTemplateEngine takes a directory or a Loader, one of them")
        if engine_instance is None:
            assert directory is not None
            folders = [directory] if isinstance(directory, (str, os.PathLike)) else directory
            engine_instance = _loader.Loader(folders)
        self.loader = engine_instance
        self.auto_reload = auto_reload
        self._callables: dict[str, Callable[..., Any]] = {}
        self.register_template_callable("url_for", url_for)
        self.register_template_callable("csrf_token", csrf_token)
        self.register_template_callable("url_for_static_asset", url_for_static_asset)
        _register_media_type()

    @classmethod
    def from_loader(cls, loader: _loader.Loader) -> PTLTemplateEngine:
        """An engine serving *loader*'s templates."""
        return cls(engine_instance=loader)

    def get_template(self, template_name: str) -> PTLTemplate:
        """The template called *template_name*; :class:`TemplateNotFound` if there is none."""
        try:
            return PTLTemplate(self, self.loader.get_template(template_name))
        except _loader.TemplateNotFound as exc:
            raise TemplateNotFound(exc) from exc

    def register_template_callable(self, key: str, template_callable: Callable[..., Any]) -> None:
        """Give templates ``key``: *template_callable* with the render's context as its
        first argument, as Litestar's other engines do."""
        self._callables[key] = template_callable

    @entry_point
    def render_string(self, template_string: str, context: Mapping[str, Any]) -> str:
        """Render PTL source (its ``render`` template) with *context*, as markup."""
        return self._render(self.loader.from_string(template_string), dict(context))

    @entry_point
    def _render(self, template: _loader.Template, context: dict[str, Any]) -> str:
        request = context.get("request")
        scope = getattr(request, "scope", None)
        if self.auto_reload is not None:
            self.loader.auto_reload = self.auto_reload
        else:
            app = getattr(request, "app", None)
            self.loader.auto_reload = bool(getattr(app, "debug", False)) or debug_default()
        values: dict[str, Any] = {
            key: functools.partial(function, context) for key, function in self._callables.items()
        }
        nonce = scope_nonce(scope) if isinstance(scope, Mapping) else None
        if nonce is not None:
            values["csp_nonce"] = nonce
        values.update(context)
        csrf_input = context.get("csrf_input")
        if type(csrf_input) is str:
            # Litestar builds it from the escaped token: markup, as Jinja2 gets it.
            values["csrf_input"] = htmltext(csrf_input)
        return output_policy.joined(template.render(values))


def refuse_header(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Litestar's exception handler for a header value it cannot encode: the logged 400.

    Litestar encodes header values as Latin-1 inside its exception handling,
    so a client's value beyond Latin-1 copied into a header would be its 500;
    any other error gets Litestar's own answer.  Installed by :class:`PTLPlugin`,
    or by ``Litestar(..., exception_handlers=EXCEPTION_HANDLERS)``.
    """
    refused = as_header_error(exc)
    if refused is None:
        if request.app.debug:
            from litestar.exceptions.responses._debug_response import create_debug_response

            return create_debug_response(request, exc)
        return create_exception_response(request, exc)
    return _refusal(request, refused)


def _refusal(request: Request[Any, Any, Any], refused: HeaderError) -> Response[Any]:
    log.warning("refused %s: %s", request_line(request.scope), refused)
    return Response(
        f"Bad Request: the response would carry an invalid header: {refused}\n",
        status_code=400,
        media_type=MediaType.TEXT,
    )


#: ``Litestar(exception_handlers=EXCEPTION_HANDLERS)``: :func:`refuse_header` for the error
#: Litestar raises for a header value beyond Latin-1 (:class:`PTLPlugin` installs it too).
EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    UnicodeEncodeError: refuse_header,
    # The standard library's cookie refuses control characters (Python 3.14 and later).
    http.cookies.CookieError: refuse_header,
}

ExceptionHandler = Callable[[Request[Any, Any, Any], Exception], Response[Any]]


def _refusing_first(own: ExceptionHandler) -> ExceptionHandler:
    """The app's own handler for encoding errors, after the refusal of a header's."""

    @functools.wraps(own)
    def handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
        refused = as_header_error(exc)
        return own(request, exc) if refused is None else _refusal(request, refused)

    handler._ptl_refusals = True  # type: ignore[attr-defined]
    return handler


class PTLPlugin(InitPlugin):
    """Every response of a Litestar app held to the header policy, in one switch::

        app = Litestar(..., plugins=[PTLPlugin()])         # PTLPlugin(csp=True) for nonces

    A status or header the policy refuses, whoever set it (a view, a hook, a
    middleware of the app's), is the logged 400: the plugin puts
    :class:`ptl_wsgi.asgi.Middleware` (with *csp*, :class:`ptl_wsgi.asgi.CSP`
    with *directives* and *hashes*) outside the app's own middleware, and
    :func:`refuse_header` in its exception handlers for the error Litestar
    raises itself for a value beyond Latin-1, where no middleware can see it.
    An exception handler of the app's for that error keeps every other one.
    """

    def __init__(
        self,
        *,
        csp: bool = False,
        directives: Directives | None = None,
        hashes: Sequence[str] = (),
    ) -> None:
        self.csp = csp
        self.directives = check_directives(directives)  # a bad one is an error now
        self.hashes = tuple(check_hashes(hashes))

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        """Add the policy's middleware and exception handler to *app_config*."""
        handlers = app_config.exception_handlers
        for error in EXCEPTION_HANDLERS:
            own = handlers.get(error)
            if own is None:
                handlers[error] = refuse_header
            elif own is not refuse_header and not getattr(own, "_ptl_refusals", False):
                handlers[error] = _refusing_first(own)
        # Any: ptl_wsgi.asgi's apps are typed by ASGI's own message dicts, not Litestar's.
        policy: Any = Middleware
        if self.csp:
            csp: Any = CSP
            policy = DefineMiddleware(csp, directives=self.directives, hashes=self.hashes)
        app_config.middleware.insert(0, policy)  # the first is the outermost
        return app_config


class Template(_LitestarTemplate):
    """Litestar's :class:`~litestar.response.Template`, ``text/html`` by default for
    every PTL name (``"page.ptl:sidebar"`` and ``.py`` templates too)."""

    def __init__(self, template_name: str | None = None, **kwargs: Any) -> None:
        if kwargs.get("media_type") is None and is_ptl_name(template_name):
            kwargs["media_type"] = MediaType.HTML
        super().__init__(template_name, **kwargs)
