"""PTL as a Django template engine.

::

    TEMPLATES = [
        {"BACKEND": "ptl_wsgi.contrib.django.PTLTemplates", "NAME": "ptl",
         "DIRS": [BASE_DIR / "templates"], "APP_DIRS": True,
         "OPTIONS": {"context_processors": [...]}},
        {"BACKEND": "django.template.backends.django.DjangoTemplates", ...},
    ]

The engine claims only names of ``.ptl`` files (``"polls/index.ptl"``,
``"polls/index.ptl:row"``), so other names fall through to the next engine.
:class:`CSPMiddleware` adds a Content-Security-Policy with a per-request nonce,
which templates rendered with the request receive as ``csp_nonce``.
Output goes through :mod:`ptl_wsgi.output_policy`: rendering returns markup (a
``[plain]`` template's text is escaped); :func:`render_text` is the explicit
raw-text call, for mail bodies.  See ``docs/django.md``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.dispatch import Signal, receiver
from django.http import (
    FileResponse,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.template import Context, TemplateDoesNotExist, TemplateSyntaxError, engines
from django.template.backends.base import BaseEngine
from django.template.backends.utils import csrf_input_lazy, csrf_token_lazy
from django.template.base import Origin
from django.utils.autoreload import autoreload_started, file_changed
from django.utils.module_loading import import_string

from ptl_wsgi import loader as ptl_loader
from ptl_wsgi.csp import CSP_NONCE_KEY, HEADER, RequestNonce, check_directives, check_hashes
from ptl_wsgi.headers import HeaderError, check_headers
from ptl_wsgi.html import htmltext
from ptl_wsgi.loader import DEFAULT_FUNCTION
from ptl_wsgi.output_policy import chunks, is_html_type, joined, markup, text
from ptl_wsgi.tracebacks import entry_point, template_frame

__all__ = ["CSPMiddleware", "PTLTemplates", "Template", "html_response", "render_text"]

_OPTIONS = ("auto_reload", "context_processors")
_CONTEXT_LINES = 10
_Output = TypeVar("_Output", htmltext, str)


class PTLTemplates(BaseEngine):
    """Django template backend for PTL; ``OPTIONS``: ``context_processors``, ``auto_reload``."""

    app_dirname = "templates"

    def __init__(self, params: dict[str, Any]) -> None:
        params = dict(params)
        options = dict(params.pop("OPTIONS", {}))
        super().__init__(params)
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise ImproperlyConfigured(
                f"Unknown OPTIONS for the PTL template engine {self.name!r}: "
                f"{', '.join(unknown)}. Valid options: {', '.join(_OPTIONS)}."
            )
        self.context_processors: list[str] = list(options.get("context_processors", []))
        # Django's cached template loader is off with DEBUG, so follow it: re-check files then.
        self.auto_reload: bool = options.get("auto_reload", settings.DEBUG)
        self.loader = ptl_loader.Loader(self.template_dirs, self.auto_reload)

    @cached_property
    def template_context_processors(self) -> list[Callable[[HttpRequest], Mapping[str, Any]]]:
        return [import_string(path) for path in self.context_processors]

    def get_template(self, template_name: str) -> Template:
        """The template *template_name*; ``TemplateDoesNotExist`` for names of other files.

        The engine claims names of ``.ptl`` files and of ``.py`` files (plain
        Python template modules): a ``.py`` file in a template folder is never
        handed to another engine as template source.
        """
        if not isinstance(template_name, str):
            raise TypeError(
                f"get_template() takes one name, not {template_name!r}: "
                "use select_template() for a list"
            )
        path, function = ptl_loader.split_name(template_name)
        if not path.endswith(ptl_loader.SUFFIXES):
            skipped = Origin(template_name, template_name, self)
            raise TemplateDoesNotExist(
                template_name, [(skipped, "Skipped: not a .ptl or .py name")], backend=self
            )
        try:
            return Template(self.loader.get_template(template_name), self)
        except ptl_loader.TemplateNotFound as exc:
            tried = [
                (
                    Origin(place, template_name, self),
                    f"No template {function!r} in this file"
                    if os.path.isfile(place)
                    else "Source does not exist",
                )
                for place in exc.tried
            ]
            raise TemplateDoesNotExist(str(exc), tried, backend=self) from exc
        except SyntaxError as exc:
            raise _syntax_error(exc) from exc
        except Exception as exc:
            _annotate(exc)
            raise

    def select_template(self, template_names: Sequence[str]) -> Template:
        """The first of *template_names* that exists; ``TemplateDoesNotExist`` lists them all."""
        return _first_template([self], template_names)

    def from_string(self, template_code: str) -> Template:
        """A template from PTL source: its ``render`` template (relative imports start at DIRS)."""
        try:
            template = self.loader.from_string(template_code)
        except SyntaxError as exc:
            raise _syntax_error(exc, template_code) from exc
        except ptl_loader.TemplateNotFound as exc:
            raise TemplateSyntaxError(
                f"PTL source for from_string() must define a render template: {exc.reason}"
            ) from None
        return Template(template, self, template_code)

    def reset(self) -> None:
        """Forget every compiled template (the next lookup reads the files again).

        A template whose file then fails to load keeps its last good version
        (:meth:`ptl_wsgi.loader.Loader.reload`).
        """
        self.loader.reload()


class Template:
    """A PTL template as Django sees it: ``render(context=None, request=None)``."""

    def __init__(
        self, template: ptl_loader.Template, backend: PTLTemplates, source: str | None = None
    ) -> None:
        self.template = template
        self.backend = backend
        self.source = source
        # from_string() templates have no name, as in Django, so assertTemplateUsed skips them.
        self.name = None if source is not None else template.name
        self.origin = Origin(template.filename, self.name, backend)

    @entry_point
    def render(
        self, context: Mapping[str, Any] | None = None, request: HttpRequest | None = None
    ) -> htmltext:
        """Render with *context* as markup: a ``[plain]`` template's text comes back escaped.

        A *request* adds ``request``, ``csrf_input``, ``csrf_token``, ``csp_nonce``
        (under :class:`CSPMiddleware`) and the context processors' values (the
        view's *context* wins over them).
        """
        return self._render(context, request, _markup)

    @entry_point
    def render_text(
        self, context: Mapping[str, Any] | None = None, request: HttpRequest | None = None
    ) -> str:
        """Render like :meth:`render`, but return the output as raw text (never for HTML)."""
        return self._render(context, request, text)

    def _render(
        self,
        context: Mapping[str, Any] | None,
        request: HttpRequest | None,
        output: Callable[[Any], _Output],
    ) -> _Output:
        if context is not None and not isinstance(context, Mapping):
            # Django's own message (make_context): a Context is not a dict of values.
            raise TypeError(f"context must be a dict rather than {type(context).__name__}.")
        full: dict[str, Any] = {}
        if request is not None:
            full["request"] = request
            full["csrf_input"] = csrf_input_lazy(request)
            full["csrf_token"] = csrf_token_lazy(request)
            if CSP_NONCE_KEY in request.META:
                full["csp_nonce"] = request.META[CSP_NONCE_KEY]
            for processor in self.backend.template_context_processors:
                full.update(processor(request))
        full.update(context or {})
        signal = _template_rendered()
        if signal is None or not signal.has_listeners(self):
            return self._run(full, output)
        # A Context, as Django's engine sends: the debug toolbar reads its ``dicts``.
        signal.send(sender=self, template=self, context=Context(full))
        top = self.template
        calls: list[tuple[str, Callable[..., Any], dict[str, Any]]] = []
        try:
            with self.backend.loader.recording(calls):
                if self.source is None:  # (a template from a string has no name to record)
                    # Called here, first; the loader records the calls it makes.
                    name = top.name if ":" in top.name else f"{top.name}:{DEFAULT_FUNCTION}"
                    calls.append((name, top.function, top.call_arguments(full)))
                return self._run(full, output)
        finally:
            # Sent once the render is over (even a failed one), in call order, each
            # template under both its names: "layout.ptl" and "layout.ptl:page".
            for index, (name, function, arguments) in enumerate(calls):
                path = name.partition(":")[0]
                names: tuple[str, ...] = (path, name)
                if index == 0 and function is top.function:
                    names = tuple(n for n in names if n != self.name)  # the one sent above
                filename = function.__code__.co_filename
                for each in names:
                    ran = Template(ptl_loader.Template(each, filename, function), self.backend)
                    signal.send(sender=ran, template=ran, context=Context(arguments))

    def _run(self, full: dict[str, Any], output: Callable[[Any], _Output]) -> _Output:
        try:
            # Inside the try: a generator template runs while its output is collected.
            return output(self.template.render(full))
        except SyntaxError as exc:
            # A template imported while rendering (an include) is as broken as one at the top.
            raise _syntax_error(exc) from exc
        except Exception as exc:
            _annotate(exc, self)
            raise


@entry_point
def render_text(
    template_name: str | Sequence[str],
    context: Mapping[str, Any] | None = None,
    request: HttpRequest | None = None,
) -> str:
    """The output of the PTL template *template_name* (or the first of a list that exists)
    as raw text, for mail bodies and ``text/plain``: never put it in an HTML page."""
    names = [template_name] if isinstance(template_name, str) else template_name
    return _first_template(_ptl_engines(), names).render_text(context, request)


class CSPMiddleware:
    """Send a ``Content-Security-Policy`` naming a fresh nonce with every response.

    The nonce is ``csp_nonce`` in PTL templates rendered with the request,
    ``request.META["ptl_wsgi.csp_nonce"]``, and :func:`ptl_wsgi.csp.csp_nonce`
    while the view runs; every ``<script>``, ``<style>`` and stylesheet ``<link>``
    of a template's literals carries it.  The ``PTL_CSP_DIRECTIVES`` setting adds
    directives, ``PTL_CSP_HASHES`` hashes of static inline scripts (see
    :func:`~ptl_wsgi.csp.content_security_policy`).  A response that already has
    the header keeps its own.  Its headers are held to the header policy
    (:mod:`ptl_wsgi.headers`): a value with a control character that Django lets
    through (U+0085, NUL, ...) gives a logged 400.  A ``StreamingHttpResponse``
    has the nonce current at each step of its body and in ``close()``.  Sync
    and async.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        try:
            self.directives = check_directives(getattr(settings, "PTL_CSP_DIRECTIVES", None))
        except ValueError as exc:
            raise ImproperlyConfigured(f"PTL_CSP_DIRECTIVES: {exc}") from None
        try:
            self.hashes = check_hashes(getattr(settings, "PTL_CSP_HASHES", None))
        except ValueError as exc:
            raise ImproperlyConfigured(f"PTL_CSP_HASHES: {exc}") from None
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        state = RequestNonce(request.META)
        with state:
            response = self.get_response(request)
        return self._add_header(request, response, state)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        # Opened and closed within this coroutine: one task, one context.
        state = RequestNonce(request.META)
        with state:
            response = await self.get_response(request)
        return self._add_header(request, response, state)

    def _add_header(
        self, request: HttpRequest, response: HttpResponse, state: RequestNonce
    ) -> HttpResponse:
        try:
            # Django refuses CR and LF itself, not U+0085 or the other controls.
            check_headers(response.items())
        except HeaderError as exc:
            import logging

            path = request.get_full_path()  # percent-encodes what is not UTF-8
            logging.getLogger(__name__).warning("refused %s %s: %s", request.method, path, exc)
            response = HttpResponseBadRequest(
                f"Bad Request: the response would carry an invalid header: {exc}\n",
                content_type="text/plain; charset=utf-8",
            )
        response.setdefault(HEADER, state.policy(self.directives, self.hashes))
        if isinstance(response, StreamingHttpResponse) and not isinstance(response, FileResponse):
            _stream_in_scope(response, state)
        return response


def _stream_in_scope(response: StreamingHttpResponse, state: RequestNonce) -> None:
    """Give a streamed body its request's nonce back around each step and ``close()``.

    The handler iterates it after the middleware returned, its scope left (under
    ASGI a sync body is consumed in a thread, an async one in the handler's task).
    Django's documented way: a new iterator wrapping the original content.  (A
    ``FileResponse`` is left alone: it renders no template, and the server's file
    wrapper sends it.)
    """
    # The chunks as the view made them, before make_bytes() encodes them (which the
    # streaming_content getter does): each is written out (csp.written) in its step, the
    # nonce in the tags its template's literals wrote.  Django keeps them in _iterator
    # (since 1.5); without it, the encoded chunks are sent as they are (fail closed).
    made = getattr(response, "_iterator", None)
    content = response.streaming_content if made is None else made
    if response.is_async:
        response.streaming_content = state.iterate_async(content)
    else:
        response.streaming_content = state.iterate(content)
    # The original iterator's close() is among the response's closers, which close() calls.
    response.close = state.close_in_scope(response.close)


def html_response(content: Any, status: int = 200, **kwargs: Any) -> HttpResponse:
    """An ``HttpResponse`` of *content* (a value or an iterator of them) as HTML:
    htmltext and safe strings as they are, anything else escaped; with a
    ``content_type`` that is not HTML, the text as it is."""
    kwargs.setdefault("content_type", "text/html; charset=utf-8")
    body = chunks(content) if is_html_type(kwargs["content_type"]) else text(content)
    return HttpResponse(body, status=status, **kwargs)


def _markup(result: Any) -> htmltext:
    if isinstance(result, Iterator):
        return joined(result)
    return markup(result)


def _template_rendered() -> Signal | None:
    """Django's ``template_rendered`` signal, if the test client or a debug tool loaded it."""
    # Importing it imports django.test (client, testcases, utils): not in production.
    # Whoever listens to the signal has imported its module, so looking it up here is enough.
    module = sys.modules.get("django.test.signals")
    return None if module is None else module.template_rendered


def _first_template(candidates: Sequence[PTLTemplates], names: Sequence[str]) -> Template:
    """The first of *names* any of *candidates* has, names first, as Django's loader tries."""
    if isinstance(names, str):
        raise TypeError(f"expected a list of template names, got the string {names!r}")
    chain: list[TemplateDoesNotExist] = []
    for name in names:
        for engine in candidates:
            try:
                return engine.get_template(name)
            except TemplateDoesNotExist as exc:
                chain.append(exc)
    if not names:
        raise TemplateDoesNotExist("No template names provided")
    tried = [entry for exc in chain for entry in exc.tried]
    backend = candidates[0] if len(candidates) == 1 else None
    raise TemplateDoesNotExist(", ".join(names), tried, backend=backend, chain=chain)


def _template_debug(
    filename: str, line: int, message: str, source: str | None = None
) -> dict[str, Any]:
    """The ``template_debug`` dict Django's debug page shows, for *line* of *filename*."""
    if source is None:
        try:
            source = Path(filename).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            source = ""
    lines = source.splitlines(keepends=True)
    total = len(lines)
    top = max(0, line - 1 - _CONTEXT_LINES)
    bottom = min(total, line + _CONTEXT_LINES)
    start = sum(len(text) for text in lines[: line - 1])
    during = lines[line - 1] if 0 < line <= total else ""
    return {
        "name": filename,
        "message": message,
        "source_lines": [(n, text.rstrip("\r\n")) for n, text in enumerate(lines, 1)][top:bottom],
        "line": line,
        "before": "",
        "during": during.rstrip("\r\n"),
        "after": "",
        "total": total,
        "top": top,
        "bottom": bottom,
        "start": start,
        "end": start + len(during),
    }


def _syntax_error(exc: SyntaxError, source: str | None = None) -> TemplateSyntaxError:
    error = TemplateSyntaxError(str(exc))
    filename = exc.filename or "<string>"
    error.template_debug = _template_debug(filename, exc.lineno or 0, str(exc), source)
    return error


def _annotate(exc: Exception, template: Template | None = None) -> None:
    """Attach ``template_debug`` for the innermost ``.ptl`` line of *exc*'s traceback."""
    if hasattr(exc, "template_debug"):
        return
    own = template.template.filename if template is not None else None
    frame = template_frame(exc.__traceback__, own)
    location = (frame.filename, frame.lineno or 0) if frame is not None else None
    if location is None and template is not None:
        # Raised before the template ran (a parameter the context lacks): point at its def.
        code = getattr(template.template.function, "__code__", None)
        if code is not None:
            location = code.co_filename, code.co_firstlineno
    if location is not None:
        source = template.source if template is not None and location[0] == own else None
        # Django's debug page reads it off any exception.
        exc.template_debug = _template_debug(  # type: ignore[attr-defined]
            *location, str(exc), source
        )


def _ptl_engines() -> list[PTLTemplates]:
    return [engine for engine in engines.all() if isinstance(engine, PTLTemplates)]


@receiver(autoreload_started, dispatch_uid="ptl_wsgi_watch_templates")
def _watch_templates(sender: Any, **kwargs: Any) -> None:
    for engine in _ptl_engines():
        for directory in engine.template_dirs:
            sender.watch_dir(directory, "**/*.ptl")
            sender.watch_dir(directory, "**/*.py")


@receiver(file_changed, dispatch_uid="ptl_wsgi_template_changed")
def _template_changed(sender: Any, file_path: Path, **kwargs: Any) -> bool | None:
    # True tells the autoreloader the change is handled, so the server is not restarted.
    # A .py file in a template folder is a template module the engine reloads itself.
    if file_path.suffix not in ptl_loader.SUFFIXES:
        return None
    handled = None
    for engine in _ptl_engines():
        if any(Path(d).resolve() in file_path.resolve().parents for d in engine.template_dirs):
            engine.reset()
            handled = True
    return handled
