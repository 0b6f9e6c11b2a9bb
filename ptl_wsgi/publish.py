"""A Quixote-style publisher: URLs traverse a tree of :class:`Directory` objects.

::

    # pages.ptl
    from ptl_wsgi.publish import Directory, get_request

    class Root(Directory):
        _q_exports = ["", "about", ("robots.txt", "robots")]

        def _q_index [html] (self):
            "<h1>Welcome</h1>"

        def about [html] (self):
            "<p>You asked for %s</p>" % get_request().path

    # app.py
    app = Publisher(pages.Root())

``/`` calls ``_q_index``, ``/about`` calls ``about``, a Directory reached
without its trailing slash redirects to the URL with one, and anything else
is a 404. Unlike Quixote's process-wide publisher, the current request and
publisher live in context variables: any number of publishers can share a
process and each serves many threads at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from werkzeug.exceptions import Forbidden, NotFound
from werkzeug.utils import redirect as _redirect
from werkzeug.wrappers import Request, Response

from ptl_wsgi.headers import check_header
from ptl_wsgi.wsgi import View, current_request

if TYPE_CHECKING:
    from ptl_wsgi.loader import Loader

__all__ = [
    "AccessError",
    "Directory",
    "Publisher",
    "TraversalError",
    "get_publisher",
    "get_request",
    "redirect",
]

PUBLISHER_KEY = "ptl_wsgi.publisher"


class TraversalError(NotFound):
    """No object at this URL: a 404."""


class AccessError(Forbidden):
    """Raised by ``_q_access`` (or any method) to refuse the request: a 403."""


def get_request() -> Request:
    """The request being published (Quixote's name for :func:`ptl_wsgi.wsgi.current_request`)."""
    return current_request()


def get_publisher() -> Publisher:
    """The publisher serving the current request."""
    publisher: Publisher | None = current_request().environ.get(PUBLISHER_KEY)
    if publisher is None:
        raise RuntimeError("no publisher is serving a request in this context")
    return publisher


def _quote(path: str) -> str:
    return quote(path, safe="/:@!$&'()*+,;=~")


def redirect(location: str, code: int = 302) -> Response:
    """A redirect to *location*; a path starting with ``/`` is under the application's root."""
    # Checked before werkzeug sees it (its own check raises a ValueError of its own for
    # CR/LF, and it would percent-encode U+0085): the view's request gets a 400.
    check_header("Location", location)
    if location.startswith("/") and not location.startswith("//"):
        location = current_request().script_root + location
    return _redirect(location, code)


class Directory:
    """A node of the URL tree.

    ``_q_exports`` lists the URL components this directory publishes, each the
    name of an attribute or a ``(component, attribute)`` pair for components
    that are not identifiers; ``""`` (the directory itself) means ``_q_index``.
    ``_q_lookup(component)`` resolves the rest (return None for a 404),
    ``_q_access()`` runs before anything below this directory and may raise
    :class:`AccessError`, and overriding ``_q_traverse(path)`` takes over
    traversal entirely.
    """

    _q_exports: Iterable[str | tuple[str, str]] = []

    def _q_translate(self, component: str) -> str | None:
        """The attribute name that exported *component* refers to, or None."""
        for export in self._q_exports:
            if isinstance(export, tuple):
                if export[0] == component:
                    return export[1]
            elif export == component:
                return component or "_q_index"
        if component == "" and hasattr(self, "_q_index"):
            return "_q_index"
        return None

    def _q_access(self) -> None:
        """Raise :class:`AccessError` (or any HTTP exception) to refuse access."""

    def _q_lookup(self, component: str) -> Any:
        """The object for a component that is not exported; None means 404."""
        return None

    def _q_traverse(self, path: list[str]) -> Any:
        """Resolve *path* (the URL's remaining components) and return the result."""
        self._q_access()
        component, rest = path[0], path[1:]
        name = self._q_translate(component)
        if name is not None:
            obj = getattr(self, name, None)
        else:
            obj = self._q_lookup(component)
        if obj is None:
            raise TraversalError()
        if rest:
            if hasattr(obj, "_q_traverse"):
                return obj._q_traverse(rest)
            raise TraversalError()
        if hasattr(obj, "_q_traverse"):
            return _add_slash()
        return obj() if callable(obj) else obj


def _add_slash() -> Response:
    request = current_request()
    location = _quote(request.script_root + request.path + "/")
    if request.query_string:
        location += "?" + request.query_string.decode("latin-1")
    # 301 may turn a POST into a GET in browsers; 308 keeps the method and body.
    return _redirect(location, 301 if request.method in ("GET", "HEAD") else 308)


class Publisher(View):
    """A WSGI application that publishes the Directory tree under *root*.

    Return values and errors are handled as for :func:`ptl_wsgi.wsgi.view`.
    """

    def __init__(
        self,
        root: Directory,
        *,
        loader: Loader | None = None,
        debug: bool | None = None,
        content_type: str | None = None,
    ) -> None:
        super().__init__(self._publish, debug=debug, content_type=content_type, loader=loader)
        self.root = root
        self.__name__ = type(self).__name__

    def _publish(self, request: Request) -> Any:
        request.environ[PUBLISHER_KEY] = self
        return self.root._q_traverse(request.path[1:].split("/"))
