"""PTL templates in Starlette and FastAPI: ``PTLTemplates``, in place of ``Jinja2Templates``.

::

    from ptl_wsgi.contrib.starlette import PTLTemplates

    templates = PTLTemplates(directory="templates")

    async def homepage(request):
        return templates.TemplateResponse(request, "index.ptl", {"name": "world"})

It mirrors :class:`starlette.templating.Jinja2Templates`: the request is in
the context, ``url_for`` (the request's) is given to every template,
``context_processors`` add to the context, and the test client reports
``response.template`` and ``response.context``.  Names are the
:class:`~ptl_wsgi.loader.Loader`'s (``"blog/post.ptl"``, ``"blog/post.ptl:sidebar"``);
bodies go through :mod:`ptl_wsgi.output_policy`; a generator template is sent as a
stream, each chunk escaped as it is produced.  Under
:class:`ptl_wsgi.asgi.CSP` templates get the request's nonce as ``csp_nonce``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ptl_wsgi import output_policy
from ptl_wsgi.asgi import refusal_messages, scope_nonce
from ptl_wsgi.headers import HeaderError, check_header, check_headers
from ptl_wsgi.loader import Loader, Template
from ptl_wsgi.tracebacks import entry_point
from ptl_wsgi.wsgi import debug_default

__all__ = ["PTLTemplates", "TemplateResponse", "TemplateStreamingResponse"]

ContextProcessor = Callable[[Request], Mapping[str, Any]]
HTML = "text/html"


class _Reported:
    """What a template response reports to Starlette's test client (``response.template``
    and ``response.context``), as Starlette's own does for Jinja2."""

    template: Template
    context: dict[str, Any]

    async def _report(self, scope: Scope, send: Send) -> None:
        if "http.response.debug" in scope.get("extensions", {}):
            info = {"template": self.template, "context": self.context}
            await send({"type": "http.response.debug", "info": info})


class TemplateResponse(_Reported, Response):
    """A rendered template: its output as one body."""

    def __init__(
        self, template: Template, context: dict[str, Any], content: bytes, **kwargs: Any
    ) -> None:
        self.template = template
        self.context = context
        super().__init__(content, **kwargs)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._report(scope, send)
        await super().__call__(scope, receive, send)


class TemplateStreamingResponse(_Reported, StreamingResponse):
    """A generator template's output, sent chunk by chunk as it yields."""

    def __init__(
        self, template: Template, context: dict[str, Any], content: Any, **kwargs: Any
    ) -> None:
        self.template = template
        self.context = context
        super().__init__(content, **kwargs)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._report(scope, send)
        await super().__call__(scope, receive, send)


class _Refused(Response):
    """The logged 400 of :mod:`ptl_wsgi.asgi` for a response whose headers break the policy."""

    def __init__(self, exc: HeaderError, request: Request) -> None:
        super().__init__(status_code=400)
        self._messages = refusal_messages(exc, request.scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        for message in self._messages:
            await send(message)


class PTLTemplates:
    """Templates under *directory* (a folder or a list of them), or of a *loader*.

    *auto_reload* (default: the app's ``debug``, or ``PTL_WSGI_DEBUG=1``)
    reloads edited templates, keeping the last good version of a broken one.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        *,
        context_processors: Sequence[ContextProcessor] | None = None,
        loader: Loader | None = None,
        auto_reload: bool | None = None,
    ) -> None:
        if (directory is None) == (loader is None):
            raise TypeError("PTLTemplates takes either directory=... or loader=...")
        if loader is None:
            assert directory is not None
            folders = [directory] if isinstance(directory, (str, os.PathLike)) else directory
            loader = Loader(folders)
        self.loader = loader
        self.context_processors = list(context_processors or [])
        self.auto_reload = auto_reload

    def _reload_setting(self, request: Request | None) -> None:
        if self.auto_reload is not None:
            self.loader.auto_reload = self.auto_reload
            return
        app = request.scope.get("app") if request is not None else None
        self.loader.auto_reload = bool(getattr(app, "debug", False)) or debug_default()

    def get_template(self, name: str) -> Template:
        """The template called *name*; :class:`~ptl_wsgi.loader.TemplateNotFound` names
        every place it was looked for."""
        self._reload_setting(None)
        return self.loader.get_template(name)

    @entry_point
    def TemplateResponse(  # Starlette's name
        self,
        request: Request,
        name: str,
        context: dict[str, Any] | None = None,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        media_type: str | None = None,
        background: BackgroundTask | None = None,
    ) -> Response:
        """Render template *name* into a response, as ``Jinja2Templates.TemplateResponse``.

        The body's type is *media_type* (default ``text/html``), or a
        ``Content-Type`` in *headers*; when it is HTML by any spelling
        (:func:`ptl_wsgi.output_policy.is_html_type`), output that is not markup is
        escaped.  *headers* or a *media_type* that break the header policy (a
        client's value with a CR, LF, NUL, U+0085, ...) give the logged 400 instead.
        """
        if not isinstance(request, Request):
            raise TypeError(
                "TemplateResponse(request, name, context, ...) takes the request first, "
                f"not {type(request).__name__!r}"
            )
        try:
            check_headers(headers.items() if headers else ())
            if media_type is not None:
                check_header("Content-Type", media_type)
        except HeaderError as exc:
            return _Refused(exc, request)
        context = dict(context or {})
        context.setdefault("request", request)
        for processor in self.context_processors:
            context.update(processor(request))
        self._reload_setting(request)
        template = self.loader.get_template(name)
        # What Jinja2Templates gives as globals: in the render, not in response.context.
        values: dict[str, Any] = {"url_for": request.url_for}
        nonce = scope_nonce(request.scope)
        if nonce is not None:
            values["csp_nonce"] = nonce
        values.update(context)
        result = template.render(values)
        content_type = _content_type(headers) or media_type or HTML
        html = output_policy.is_html_type(content_type)
        kwargs: dict[str, Any] = {
            "status_code": status_code,
            "headers": headers,
            "media_type": media_type or HTML,
            "background": background,
        }
        if isinstance(result, Iterator):
            stream = output_policy.encoded(result, html)
            return TemplateStreamingResponse(template, context, stream, **kwargs)
        return TemplateResponse(template, context, output_policy.body_bytes(result, html), **kwargs)


def _content_type(headers: Mapping[str, str] | None) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == "content-type":
            return value
    return None
