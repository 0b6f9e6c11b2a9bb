"""PTL on Starlette: a small read-only site of facts, served by any ASGI server.

Run it on its own::

    python example_sites/starlette_app/app.py --port 8000     # uvicorn on 127.0.0.1

or as ``/starlette/`` of the demo (``make demo``), which serves this ASGI
application from its WSGI process through a2wsgi.  It shows
``PTLTemplates`` (``TemplateResponse``, ``url_for``, a streamed generator
template, a PTL 404 page) under ``ptl_wsgi.asgi``'s ``CSP`` and ``Middleware``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Route

from ptl_wsgi.asgi import CSP, Middleware
from ptl_wsgi.contrib.starlette import PTLTemplates

HERE = Path(__file__).resolve().parent
FAVICON = HERE.parent / "favicon.svg"

FACTS = [
    "In an [html] template every string literal is trusted markup.",
    "Every other value is escaped by the rule of the place it lands: <script> stays text.",
    "A value in an href has its scheme checked: javascript: URLs go nowhere.",
    "Templates are Python functions; layouts are function calls, not {% extends %}.",
    "A generator template streams its page, each chunk escaped as it is produced.",
    "Under the CSP middleware every request gets a fresh nonce for its scripts.",
]


def make_app(facts: list[str] | None = None, debug: bool = False) -> Starlette:
    """The site's ASGI application."""
    facts = list(FACTS if facts is None else facts)
    templates = PTLTemplates(directory=HERE / "templates")

    def search(request: Request) -> Response:
        q = request.query_params.get("q", "")
        found = [(i, fact) for i, fact in enumerate(facts, 1) if q.lower() in fact.lower()]
        return templates.TemplateResponse(request, "pages.ptl:search", {"q": q, "found": found})

    def fact(request: Request) -> Response:
        # {fact_id:int} is any run of digits: check the range before using it.
        fact_id = request.path_params["fact_id"]
        if not 1 <= fact_id <= len(facts):
            raise HTTPException(404)
        context = {"fact_id": fact_id, "fact": facts[fact_id - 1]}
        return templates.TemplateResponse(request, "pages.ptl:fact", context)

    def stream(request: Request) -> Response:
        context = {"facts": list(enumerate(facts, 1))}
        return templates.TemplateResponse(request, "pages.ptl:stream", context)

    def favicon(request: Request) -> Response:
        return FileResponse(FAVICON, media_type="image/svg+xml")

    def old_favicon(request: Request) -> Response:
        return RedirectResponse(request.url_for("favicon"), 301)

    async def not_found(request: Request, exc: Exception) -> Response:
        context = {"path": request.url.path}
        return templates.TemplateResponse(request, "pages.ptl:not_found", context, 404)

    routes = [
        Route("/", search, name="search"),
        Route("/facts/{fact_id:int}", fact, name="fact"),
        Route("/stream", stream, name="stream"),
        Route("/favicon.svg", favicon, name="favicon"),
        Route("/favicon.ico", old_favicon),
    ]
    app = Starlette(debug=debug, routes=routes, exception_handlers={404: not_found})
    app.add_middleware(Middleware)  # the header policy for every response
    app.add_middleware(CSP)  # outermost: a nonce for every request, error pages included
    return app


app = make_app()


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args: Any = parser.parse_args(argv)
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
