"""Serve every example site from one process: ``python example_sites/serve.py``.

werkzeug's dispatcher mounts the Flask guestbook at ``/flask/``, the Django
notes at ``/django/``, the publisher-based WSGI site at ``/wsgi/``, the Starlette
site at ``/starlette/`` (an ASGI app, through a2wsgi) and the one-file CGI
program at ``/cgi/``; ``/`` is an index page (``index.ptl``) that
links them. SQLite files are created on first run, next to each site or in
``--data-dir``. Ctrl-C (or SIGTERM) stops the server with exit status 0.

Works from any directory; ``make demo`` runs it from the repository root.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
DJANGO_DIR = HERE / "django_site"
CGI_SCRIPT = HERE / "cgi" / "hello.cgi"
FAVICON = HERE / "favicon.svg"  # every site's icon

# SQLite file names inside --data-dir (distinct, since they all share one folder).
FLASK_DB = "guestbook.sqlite3"
DJANGO_DB = "django-notes.sqlite3"
WSGI_DB = "wsgi-notes.sqlite3"

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")  # Django's site allows these already
ANY_HOST = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class Site:
    """One mounted site, as the index page describes it."""

    key: str
    path: str  # the mount point, with a trailing slash: what the index links to
    name: str
    description: str
    data: str  # where its data lives ("" for none)
    app: Any
    note: str = ""  # printed when the demo starts (how to log in, say)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Serve every ptl_wsgi example site (Flask, Django, WSGI, ASGI, CGI) from one "
        "process."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (8000; 0 picks a free one)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="folder for the SQLite files, created if need be (default: each site's own default)",
    )
    return parser.parse_args(argv)


def _load_module(name: str, path: Path) -> ModuleType:
    """Import the file *path* as module *name* (wsgi_app is a folder of scripts, no package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def flask_site(data_dir: Path | None) -> Site:
    # The package is example_sites/flask_app; its folder is sys.path[0] when this
    # file runs as a script, but not when it is imported or run with -m.
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from flask_app import create_app

    config = {"DATABASE": str(data_dir / FLASK_DB)} if data_dir else None
    app = create_app(config)
    return Site(
        "flask",
        "/flask/",
        "The guestbook on Flask",
        "Flask's render_template with PTL templates: a ptl_wsgi.forms form with its CSRF "
        "token, flashed messages, a blueprint with its own templates, and an archive page "
        "streamed by a generator template. Sign it, markup and all.",
        app.config["DATABASE"],
        app,
    )


def django_site(data_dir: Path | None, host: str) -> Site:
    # Django's site is a project folder (ptlsite, notes), imported by top-level name.
    sys.path.insert(0, str(DJANGO_DIR))
    if data_dir:
        os.environ["PTLSITE_DB"] = str(data_dir / DJANGO_DB)
    if host not in LOCAL_HOSTS:
        # Django answers 400 to a Host it does not know: allow the one we listen on.
        hosts = os.environ.get("PTLSITE_HOSTS", "").split()
        os.environ["PTLSITE_HOSTS"] = " ".join([*hosts, "*" if host in ANY_HOST else host])
    # The site's own 404 page (and no tracebacks) unless PTLSITE_DEBUG=1 asks for Django's.
    os.environ.setdefault("PTLSITE_DEBUG", "0")
    # Not setdefault, as ptlsite does: a DJANGO_SETTINGS_MODULE left in the shell
    # (or pytest-django's) names another project, and this process serves this one.
    os.environ["DJANGO_SETTINGS_MODULE"] = "ptlsite.settings"
    import ptlsite

    ptlsite.setup_db()  # migrate: creates the database on first run, a no-op afterwards
    from django.conf import settings
    from ptlsite.wsgi import application

    user, password, kept = ptlsite.demo_admin()
    if password is None:
        login = f"user {user!r} (its password is the one you gave it)"
    else:
        login = f"user {user!r}, password {password!r} (kept in {kept})"

    return Site(
        "django",
        "/django/",
        "Notes on Django",
        "A ModelForm rendered by a PTL template with Django's CSRF input and form markup "
        "kept as they are (safe strings), messages after saving, and the admin's own "
        "Django templates beside the PTL pages.",
        str(settings.DATABASES["default"]["NAME"]),
        application,
        f"The admin is at /django/admin/: log in as {login}.",
    )


def wsgi_site(data_dir: Path | None) -> Site:
    module = _load_module("ptl_demo_wsgi_app", HERE / "wsgi_app" / "app.py")
    db_path = data_dir / WSGI_DB if data_dir else None
    app = module.make_app(db_path)
    return Site(
        "wsgi",
        "/wsgi/",
        "Notes on the publisher (plain WSGI)",
        "No framework: Quixote-style Directory traversal maps URLs to PTL methods, notes "
        "live in SQLite, and the same notes are an XML-RPC API at /wsgi/rpc.",
        str(db_path or module.DEFAULT_DB),
        app,
    )


def starlette_site() -> Site:
    from a2wsgi import ASGIMiddleware

    module = _load_module("ptl_demo_starlette_app", HERE / "starlette_app" / "app.py")
    return Site(
        "starlette",
        "/starlette/",
        "Facts on Starlette (ASGI)",
        "PTLTemplates in place of Jinja2Templates: a search page, a streamed generator "
        "template and a PTL 404 page, under the ASGI CSP middleware (served here from the "
        "demo's WSGI process through a2wsgi; uvicorn serves it on its own).",
        "",
        ASGIMiddleware(module.app),
    )


def cgi_site() -> Site:
    from ptl_wsgi.cgiapp import CGIGateway
    from ptl_wsgi.csp import NONCE
    from ptl_wsgi.wsgi import CSP

    # The script's #! line runs `python3 -m ptl_wsgi.cgiapp`: this Python must come first.
    gateway = CGIGateway(CGI_SCRIPT, env={"PATH": f"{sys.prefix}/bin:/usr/bin:/bin"})
    # Under the strict policy like the other sites: the gateway passes the nonce on.
    app = CSP(gateway, {"style-src": [NONCE]})
    return Site(
        "cgi",
        "/cgi/",
        "A one-file CGI program",
        "Templates, view and all in one executable PTL file, run as a new process for every "
        "request: a greeting from the query string (try ?name=you) and a form that echoes "
        "what you post.",
        "",
        app,
    )


def make_app(data_dir: Path | None = None, host: str = "127.0.0.1") -> Any:
    """The index page at ``/`` with every site mounted under its own path."""
    from werkzeug.exceptions import NotFound
    from werkzeug.middleware.dispatcher import DispatcherMiddleware
    from werkzeug.utils import redirect

    import ptl_wsgi
    from ptl_wsgi import htmltext
    from ptl_wsgi.csp import NONCE
    from ptl_wsgi.loader import Loader
    from ptl_wsgi.wsgi import CSP, render, view

    if data_dir:
        data_dir.mkdir(parents=True, exist_ok=True)
    sites = [
        flask_site(data_dir),
        django_site(data_dir, host),
        wsgi_site(data_dir),
        starlette_site(),
        cgi_site(),
    ]

    @view(loader=Loader([HERE]))
    def index(request: Any) -> Any:
        if request.path == "/favicon.svg":
            # SVG is active markup: the output policy escapes it unless trusted, as this file is.
            return htmltext(FAVICON.read_text("utf-8")), 200, {"Content-Type": "image/svg+xml"}
        if request.path == "/favicon.ico":
            return redirect("/favicon.svg", 301)
        if request.path != "/":
            raise NotFound()
        return render(
            "index.ptl",
            sites=sites,
            version=ptl_wsgi.__version__,
            implementation=ptl_wsgi.IMPLEMENTATION,
        )

    # The index page under the strict policy too (its <style> and <script> take the nonce).
    home = CSP(index, {"style-src": [NONCE]})
    app = DispatcherMiddleware(home, {site.path.rstrip("/"): site.app for site in sites})
    app.sites = sites  # type: ignore[attr-defined]  # for main() to print their notes
    return app


def _stop(signum: int, frame: FrameType | None) -> None:
    # The server loop ends on KeyboardInterrupt: make SIGTERM behave like Ctrl-C.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGINT too: a shell starts background jobs with SIGINT ignored, and then
    # Python installs no KeyboardInterrupt handler of its own.
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        from werkzeug.serving import make_server

        app = make_app(args.data_dir.resolve() if args.data_dir else None, args.host)
        # make_server, not run_simple: with --port 0 the URL needs the port it bound.
        server = make_server(args.host, args.port, app, threaded=True)
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(f"Serving ptl_wsgi example sites at http://{host}:{server.port}/", flush=True)
        for site in app.sites:
            if site.note:
                print(site.note, flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        server.serve_forever()  # returns on KeyboardInterrupt, after closing the socket
    except KeyboardInterrupt:
        pass  # stopped while starting up
    print("Stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
