#!/usr/bin/env python3
"""End to end: the page benchmark through Flask's, Quart's and Django's own render calls.

::

    .venv/bin/python benchmarks/end_to_end.py              # Flask, Quart, then Django
    .venv/bin/python benchmarks/end_to_end.py --rounds 41 --write
    .venv/bin/python benchmarks/end_to_end.py --only flask --quick

The page is ``articles`` of ``benchmarks/templates.py`` (a layout, a header and
100 articles through a sub-template; the same data, the same markup in every
engine, checked identical before timing), loaded from files by each framework's
own loader:

* Flask (one app, ``PTL(app)``): ``flask.render_template`` of
  ``ptl_pages.ptl:articles`` against ``articles.html`` in Jinja2;
* Quart (one app, ``PTL(app)``, Python 3.11+): ``await quart.render_template``
  of the same names, Jinja2 in Quart's async mode;
* Django (one settings module, three engines): ``render_to_string`` with the
  PTL engine, the Django template language and Django's Jinja2 backend.

Each is timed twice: the *template part* (the render call alone, inside a
request context for Flask and Quart) and the *whole request* (the framework's
WSGI application called directly with a fresh environ, the ASGI one with a fresh
scope for Quart, the response body joined: URL routing, the view, the render,
the response object).  Quart's calls each run to completion on one event loop.
Every process runs one framework (``--only``); rounds are interleaved (each
candidate once per round, in turn) and the table shows medians of per-call
times and of per-round ratios.

Targets (the script exits 1 on a miss): the template part at most ``0.2x``
Jinja2's (Flask, Quart) and DTL's and Django's Jinja2 backend's (Django), and the whole
request faster than theirs:
the 75th percentile of the per-round ratios below 1, so that the gain is more
than the noise between rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import io
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTION = "## End to end: Flask, Quart and Django"
TEMPLATE_TARGET = 0.2
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _results import interleaved, write_section  # noqa: E402
from templates import ITEMS, JINJA_TEMPLATES  # noqa: E402 - the page benchmark's data

TITLE = "Articles"
PTL_NAME = "ptl_pages.ptl:articles"


def write_templates(folder: Path) -> None:
    """The same page for every engine: ``ptl_pages.ptl``, Jinja2 and DTL sources."""
    (folder / "ptl").mkdir()
    shutil.copy(HERE / "tpl" / "ptl_pages.ptl", folder / "ptl" / "ptl_pages.ptl")
    for engine in ("jinja", "dtl"):
        (folder / engine).mkdir()
        for name, source in JINJA_TEMPLATES.items():
            if engine == "dtl":
                source = source.replace("row.values()", "row.values")
            (folder / engine / name).write_text(source)


def normalise(html: Any) -> str:
    return re.sub(r">\s+<", "><", str(html))


def wsgi_caller(app: Callable[..., Any], path: str, marker: bytes) -> Callable[[], bytes]:
    """A call of the WSGI *app* for GET *path*, as a server makes it; checks the response."""
    from wsgiref.util import setup_testing_defaults

    base: dict[str, Any] = {"PATH_INFO": path, "REQUEST_METHOD": "GET"}
    setup_testing_defaults(base)
    base["HTTP_HOST"] = "127.0.0.1"
    seen: list[str] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        seen.append(status)

    def call() -> bytes:
        environ = dict(base)
        environ["wsgi.input"] = io.BytesIO()
        environ["wsgi.errors"] = sys.stderr
        result = app(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if seen.pop() != "200 OK" or marker not in body:
            raise SystemExit(f"GET {path}: unexpected response {body[:200]!r}")
        return body

    return call


# -- the frameworks -------------------------------------------------------------------


def flask_app(folder: Path) -> Any:
    """One Flask app, ``PTL(app)``: ``/ptl`` and ``/jinja`` serve the page."""
    import flask

    from ptl_wsgi.contrib.flask import PTL

    app = flask.Flask(__name__, template_folder=str(folder / "jinja"))
    app.config["PTL_SEARCH_PATH"] = [str(folder / "ptl")]
    PTL(app)

    @app.get("/ptl")
    def ptl_page() -> str:
        return flask.render_template(PTL_NAME, items=ITEMS, title=TITLE)

    @app.get("/jinja")
    def jinja_page() -> str:
        return flask.render_template("articles.html", items=ITEMS, title=TITLE)

    return app


def flask_candidates(folder: Path) -> dict[str, dict[str, Callable[[], Any]]]:
    """``{part: {engine: call}}`` for Flask: PTL and Jinja2 in one app."""
    import flask

    app = flask_app(folder)
    context = app.test_request_context("/")
    context.push()  # the template part runs inside a request, as in a view
    render = flask.render_template
    return {
        "template part": {
            "PTL": lambda: render(PTL_NAME, items=ITEMS, title=TITLE),
            "Jinja2": lambda: render("articles.html", items=ITEMS, title=TITLE),
        },
        "whole request": {
            "PTL": wsgi_caller(app.wsgi_app, "/ptl", b"<h1>Articles</h1>"),
            "Jinja2": wsgi_caller(app.wsgi_app, "/jinja", b"<h1>Articles</h1>"),
        },
    }


def quart_app(folder: Path) -> Any:
    """One Quart app, ``PTL(app)``: ``/ptl`` and ``/jinja`` serve the page."""
    import quart

    from ptl_wsgi.contrib.quart import PTL

    app = quart.Quart(__name__, template_folder=str(folder / "jinja"))
    app.config["PTL_SEARCH_PATH"] = [str(folder / "ptl")]
    PTL(app)

    @app.get("/ptl")
    async def ptl_page() -> str:
        return str(await quart.render_template(PTL_NAME, items=ITEMS, title=TITLE))

    @app.get("/jinja")
    async def jinja_page() -> str:
        return await quart.render_template("articles.html", items=ITEMS, title=TITLE)

    return app


def asgi_caller(
    app: Any, path: str, marker: bytes, loop: asyncio.AbstractEventLoop
) -> Callable[[], bytes]:
    """A call of the ASGI *app* for GET *path*, as a server makes it; checks the response."""
    base: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80),
    }  # fmt: skip

    async def request() -> bytes:
        sent: list[dict[str, Any]] = []
        done = asyncio.Event()
        messages = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await done.wait()  # as a server: the client leaves once the response is sent
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await app(dict(base), receive, send)
        body = b"".join(message.get("body", b"") for message in sent[1:])
        if sent[0].get("status") != 200 or marker not in body:
            raise SystemExit(f"GET {path}: unexpected response {body[:200]!r}")
        return body

    return lambda: loop.run_until_complete(request())


def quart_candidates(folder: Path) -> dict[str, dict[str, Callable[[], Any]]]:
    """``{part: {engine: call}}`` for Quart: PTL and Jinja2 (async mode) in one app."""
    import quart

    app = quart_app(folder)
    loop = asyncio.new_event_loop()
    # The template part runs inside a request, as in a view: the request context is pushed
    # once, in a context each call's task starts from (Task's context=, Python 3.11+).
    context = contextvars.copy_context()
    loop.run_until_complete(
        loop.create_task(app.test_request_context("/").push(), context=context)  # type: ignore[call-arg]
    )
    render = quart.render_template

    def in_request(make: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: loop.run_until_complete(loop.create_task(make(), context=context))  # type: ignore[call-arg]

    return {
        "template part": {
            "PTL": in_request(lambda: render(PTL_NAME, items=ITEMS, title=TITLE)),
            "Jinja2": in_request(lambda: render("articles.html", items=ITEMS, title=TITLE)),
        },
        "whole request": {
            "PTL": asgi_caller(app, "/ptl", b"<h1>Articles</h1>", loop),
            "Jinja2": asgi_caller(app, "/jinja", b"<h1>Articles</h1>", loop),
        },
    }


DJANGO_NAMES = {"ptl": PTL_NAME, "dtl": "articles.html", "jinja2": "articles.html"}
CONTEXT = {"items": ITEMS, "title": TITLE}


def django_app(folder: Path) -> Any:
    """Django configured with three engines; ``/ptl/``, ``/dtl/``, ``/jinja2/`` serve the page."""
    import django
    from django.conf import settings

    settings.configure(
        DEBUG=False,
        ALLOWED_HOSTS=["127.0.0.1"],
        SECRET_KEY="benchmark only",
        ROOT_URLCONF="_end_to_end_urls",
        INSTALLED_APPS=[],
        MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
        TEMPLATES=[
            {
                "BACKEND": "ptl_wsgi.contrib.django.PTLTemplates",
                "NAME": "ptl",
                "DIRS": [str(folder / "ptl")],
            },
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "NAME": "dtl",
                "DIRS": [str(folder / "dtl")],
            },
            {
                "BACKEND": "django.template.backends.jinja2.Jinja2",
                "NAME": "jinja2",
                "DIRS": [str(folder / "jinja")],
            },
        ],
    )
    django.setup()
    from django.core.wsgi import get_wsgi_application
    from django.http import HttpResponse
    from django.template.loader import render_to_string
    from django.urls import path

    names = DJANGO_NAMES

    def view(engine: str) -> Callable[..., HttpResponse]:
        def page(request: Any) -> HttpResponse:
            return HttpResponse(render_to_string(names[engine], CONTEXT, request, using=engine))

        return page

    urls = types.ModuleType("_end_to_end_urls")
    urls.urlpatterns = [path(f"{engine}/", view(engine)) for engine in names]  # type: ignore[attr-defined]
    sys.modules[urls.__name__] = urls
    return get_wsgi_application()


def django_candidates(folder: Path) -> dict[str, dict[str, Callable[[], Any]]]:
    """``{part: {engine: call}}`` for Django: PTL, DTL and Jinja2 engines in one project."""
    app = django_app(folder)
    from django.template.loader import render_to_string

    names, context = DJANGO_NAMES, CONTEXT
    labels = {"ptl": "PTL", "dtl": "DTL", "jinja2": "Jinja2 (Django backend)"}
    return {
        "template part": {
            labels[e]: (lambda e=e: render_to_string(names[e], context, using=e)) for e in names
        },
        "whole request": {
            labels[e]: wsgi_caller(app, f"/{e}/", b"<h1>Articles</h1>") for e in names
        },
    }


FRAMEWORKS = {"flask": flask_candidates, "quart": quart_candidates, "django": django_candidates}
if sys.version_info < (3, 11):  # Quart's candidates need Task(context=)
    del FRAMEWORKS["quart"]


def served(framework: str) -> Any:
    """The WSGI app of *framework* on the templates in ``$PTL_BENCH_TEMPLATES``.

    For servers: ``gunicorn --chdir benchmarks "end_to_end:served('flask')"``
    (``benchmarks/serve_pages.py`` writes the templates and runs that).
    """
    folder = Path(os.environ["PTL_BENCH_TEMPLATES"])
    return flask_app(folder) if framework == "flask" else django_app(folder)


#: The engines each framework's PTL figures are held to.
BASELINE = {"flask": ["Jinja2"], "quart": ["Jinja2"], "django": ["DTL", "Jinja2 (Django backend)"]}


# -- timing ---------------------------------------------------------------------------


def check_same_page(parts: dict[str, dict[str, Callable[[], Any]]]) -> None:
    for part, calls in parts.items():
        outputs = {name: call() for name, call in calls.items()}
        if part == "whole request":
            outputs = {name: out.decode() for name, out in outputs.items()}
        reference = normalise(outputs["PTL"])
        for name, output in outputs.items():
            if normalise(output) != reference:
                raise SystemExit(f"{part}: {name} renders another page than PTL")


def run_framework(framework: str, rounds: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_templates(folder)
        parts = FRAMEWORKS[framework](folder)
        check_same_page(parts)
        baseline = BASELINE[framework]
        result: dict[str, Any] = {}
        for part, calls in parts.items():
            times = interleaved(calls, rounds, seconds)
            ratios = {
                name: sorted(p / b for p, b in zip(times["PTL"], times[name], strict=True))
                for name in calls
                if name != "PTL"
            }
            result[part] = {
                "medians": {name: statistics.median(t) for name, t in times.items()},
                "ratio": {name: statistics.median(r) for name, r in ratios.items()},
                "ratio_p75": {name: r[(len(r) * 3) // 4] for name, r in ratios.items()},
            }
        result["baseline"] = baseline
        return result


def verdicts(framework: str, result: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """``(target, met, figure)`` rows for one framework."""
    rows = []
    for baseline in result["baseline"]:
        template = result["template part"]["ratio"][baseline]
        whole = result["whole request"]
        whole_ratio, whole_p75 = whole["ratio"][baseline], whole["ratio_p75"][baseline]
        rows += [
            (
                f"{framework}: template part <= {TEMPLATE_TARGET}x {baseline}",
                template <= TEMPLATE_TARGET,
                f"{template:.3f}x",
            ),
            (
                f"{framework}: whole request faster than with {baseline}",
                whole_p75 < 1,
                f"{whole_ratio:.3f}x (p75 {whole_p75:.3f}x, "
                f"{(1 - whole_ratio) * 100:.0f} % less time)",
            ),
        ]
    return rows


def table(framework: str, result: dict[str, Any]) -> list[str]:
    lines = [
        f"| {framework} | engine | us per call | PTL / engine (median of rounds) | p75 |",
        "|---|---|---:|---:|---:|",
    ]
    for part in ("template part", "whole request"):
        data = result[part]
        for name, seconds in data["medians"].items():
            ratio = f"{data['ratio'][name]:.3f}" if name in data["ratio"] else ""
            p75 = f"{data['ratio_p75'][name]:.3f}" if name in data["ratio_p75"] else ""
            lines.append(f"| {part} | {name} | {seconds * 1e6:.1f} | {ratio} | {p75} |")
    return lines


def versions() -> str:
    from importlib.metadata import version

    parts = [f"{p} {version(p)}" for p in ("flask", "quart", "werkzeug", "jinja2", "django")]
    parts.append(f"Python {platform.python_version()} on {platform.system()} {platform.machine()}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    parts.append(f"{os.cpu_count()} CPUs, load average {load}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds (default 21)")
    parser.add_argument(
        "--seconds", type=float, default=0.1, help="time per candidate per round (default 0.1)"
    )
    parser.add_argument("--quick", action="store_true", help="5 rounds of 0.02 s: a rough check")
    parser.add_argument("--only", choices=sorted(FRAMEWORKS), help="one framework, in this process")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 5, 0.02

    if args.only is None:
        # One process per framework: Flask's and Django's imports and state stay apart.
        failed = False
        outputs = []
        for framework in FRAMEWORKS:
            command = [sys.executable, __file__, "--only", framework]
            command += ["--rounds", str(args.rounds), "--seconds", str(args.seconds)]
            done = subprocess.run(command, capture_output=True, text=True)
            sys.stdout.write(done.stdout)
            sys.stderr.write(done.stderr)
            failed |= done.returncode != 0
            outputs.append(done.stdout.rstrip("\n"))
        if args.write:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            command = "python benchmarks/end_to_end.py --write"
            if (args.rounds, args.seconds) != (21, 0.1):
                command += f" --rounds {args.rounds} --seconds {args.seconds}"
            write_section(
                SECTION,
                [
                    SECTION,
                    "",
                    "`benchmarks/end_to_end.py`: the `articles` page (layout + 100",
                    "articles) through Flask's and Quart's `render_template` and Django's",
                    "`render_to_string`, one process per framework, the template part alone",
                    "and the whole request (the WSGI or ASGI app called directly); interleaved",
                    "rounds, medians (see the script's docstring).",
                    "",
                    f"Command (from the repository root), run {when}:",
                    "",
                    "```",
                    f".venv/bin/{command}",
                    "```",
                    "",
                    *outputs,
                ],
            )
        return 1 if failed else 0

    result = run_framework(args.only, args.rounds, args.seconds)
    rows = verdicts(args.only, result)
    print("\n".join(table(args.only, result)))
    print()
    for target, met, figure in rows:
        print(f"- {target}: **{'met' if met else 'NOT met'}** ({figure})")
    print(f"- {versions()}; {args.rounds} rounds of {args.seconds:g} s per candidate.\n")
    return 0 if all(met for _, met, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
