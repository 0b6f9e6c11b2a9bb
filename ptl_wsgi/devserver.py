"""The WSGI applications behind ``ptl-wsgi serve`` (development only).

* :func:`template_app` serves a directory of templates: ``/blog/post`` renders
  ``blog/post.ptl``'s ``render`` (``/blog/post:sidebar`` its ``sidebar``) with
  the query parameters as context, and ``/`` lists every template.  Edits show
  at the next request (the loader's auto-reload), without a restart.
* :func:`publisher_app` serves ``module:root``, a :class:`~ptl_wsgi.publish.Directory`,
  through a :class:`~ptl_wsgi.publish.Publisher`; the server restarts on edits.

Both show tracebacks on errors: never expose them beyond your own machine.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from werkzeug.exceptions import BadRequest, NotFound

from ptl_wsgi.html import htmltext
from ptl_wsgi.importer import install
from ptl_wsgi.loader import Loader, TemplateArgumentError, TemplateNotFound
from ptl_wsgi.publish import Directory, Publisher
from ptl_wsgi.wsgi import Request, View

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

__all__ = ["index_page", "publisher_app", "template_app"]


def index_page(loader: Loader, script_root: str = "") -> htmltext:
    """An HTML page linking to every template under *loader*'s search path."""
    items = htmltext("").join(
        htmltext('<li><a href="%s">%s</a></li>\n')
        % (script_root + "/" + quote(name.removesuffix(".ptl")), name)
        for name in loader.list_templates()
    )
    return (
        htmltext(
            "<!doctype html>\n<title>Templates</title>\n<h1>Templates</h1>\n"
            "<p>Query parameters become the template's arguments: "
            "<code>/page?name=value</code>.</p>\n<ul>\n%s</ul>\n"
        )
        % items
    )


def template_app(directory: str) -> View:
    """Serve the templates in *directory*, reloading edited ones at the next request."""
    loader = Loader([directory], auto_reload=True)

    def serve(request: Request) -> Any:
        path = request.path.strip("/")
        if not path:
            return index_page(loader, request.script_root)
        file, colon, function = path.partition(":")
        # /blog/post is blog/post.ptl; a plain Python template goes by its file name.
        name = path if file.endswith(".py") else f"{file}.ptl{colon}{function}"
        try:
            return loader.render(name, request.args.to_dict())
        except TemplateNotFound as exc:
            raise NotFound(str(exc)) from None
        except TemplateArgumentError as exc:
            raise BadRequest(f"{exc}; pass it as ?name=value") from None

    return View(serve, debug=True, loader=loader)


def publisher_app(spec: str, path: str = ".") -> WSGIApplication:
    """A debugging Publisher over ``module:attribute`` (a Directory, or its class).

    *path* goes first on ``sys.path`` and ``.ptl`` modules become importable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected MODULE:ROOT, such as 'pages:Root', not {spec!r}")
    install()
    sys.path.insert(0, path)
    root = getattr(importlib.import_module(module_name), attribute)
    if isinstance(root, type) and issubclass(root, Directory):
        root = root()
    if not isinstance(root, Directory):
        raise TypeError(f"{spec} is a {type(root).__name__}, not a Directory or Directory class")
    return Publisher(root, debug=True)
