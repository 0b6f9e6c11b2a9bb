"""Content-Security-Policy nonces in WSGI, the publisher, Flask and Django.

In each, a template writes ``<script nonce="%s">`` and the response's header
must name the same nonce; every request gets its own, and none survives its
request, also on a server that serves every request from one thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from wsgiref.validate import validator

import pytest
from browser import XSSBrowser, unavailable
from django.core.exceptions import ImproperlyConfigured
from django.template import engines
from django.urls import path
from flask import Flask, abort, render_template_string
from flask import request as flask_request
from servers import fetch, serve_in_thread
from werkzeug.test import Client, EnvironBuilder

from ptl_wsgi.contrib.django import CSPMiddleware, html_response
from ptl_wsgi.contrib.flask import PTL, render_template, stream_template
from ptl_wsgi.csp import CSP_NONCE_KEY, csp_nonce, nonce_scope
from ptl_wsgi.html import htmltext
from ptl_wsgi.loader import Loader
from ptl_wsgi.publish import Directory, Publisher
from ptl_wsgi.wsgi import CSP, render, stream, view

PAGE = """\
from ptl_wsgi.csp import csp_nonce as current_nonce

def render [html] (csp_nonce):
    '<script nonce="%s">window.ran = 1</script>' % csp_nonce

def current [html] ():
    '<script nonce="%s">window.ran = 2</script>' % current_nonce()

def stream(csp_nonce=None):
    # Each chunk asks for the nonce only when the server pulls it.
    for n in range(3):
        yield current()
"""

HEADER_NONCE = re.compile(r"script-src 'nonce-([A-Za-z0-9_-]{20,})' 'strict-dynamic'")
BODY_NONCE = re.compile(r'<script nonce="([^"]*)">')


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("csp_templates")
    (folder / "page.ptl").write_text(PAGE, encoding="utf-8")
    return folder


def same_nonce(header: str | None, body: bytes | str, scripts: int = 1) -> str:
    """The nonce that *header* names, after checking that each of *body*'s scripts carries it."""
    assert header is not None, "no Content-Security-Policy header"
    match = HEADER_NONCE.search(header)
    assert match is not None, header
    text = body.decode() if isinstance(body, bytes) else body
    assert BODY_NONCE.findall(text) == [match.group(1)] * scripts, (header, text)
    return match.group(1)


def no_nonce_here() -> bool:
    """True when this context has no current nonce."""
    try:
        csp_nonce()
    except LookupError:
        return True
    return False


# -- csp.nonce_scope ------------------------------------------------------------------------


def test_nonce_scope_reenters_a_given_nonce_and_restores() -> None:
    with nonce_scope() as outer:
        with nonce_scope(outer) as again:
            assert again == outer == csp_nonce()
        assert csp_nonce() == outer
    assert no_nonce_here()


# -- WSGI ----------------------------------------------------------------------------------------


def wsgi_app(templates: Path) -> Any:
    """Views for ``/`` (a template), ``/stream`` (a lazy generator) and ``/bare``."""
    loader = Loader([templates])

    @view(loader=loader)
    def app(request: Any) -> Any:
        if request.path == "/stream":
            return stream(loader.render("page.ptl:stream", {}))
        if request.path == "/own":
            return render("page.ptl:current"), {"Content-Security-Policy": "default-src 'self'"}
        return render("page.ptl:current")

    return app


def test_wsgi_header_and_template_share_the_nonce_under_validate(templates: Path) -> None:
    app = CSP(wsgi_app(templates), {"img-src": "'self'", "base-uri": None})
    nonces = set()
    for wrapped in (validator(app), CSP(validator(wsgi_app(templates)))):
        for url, scripts in (("/", 1), ("/stream", 3)):
            response = Client(wrapped).get(url, buffered=True)
            header = response.headers["Content-Security-Policy"]
            nonces.add(same_nonce(header, response.data, scripts))
            assert response.headers.getlist("Content-Security-Policy") == [header]
            assert no_nonce_here()
    assert "img-src 'self'" in Client(app).get("/").headers["Content-Security-Policy"]
    assert "base-uri" not in Client(app).get("/").headers["Content-Security-Policy"]
    assert len(nonces) == 4


def test_wsgi_keeps_a_policy_the_application_set(templates: Path) -> None:
    response = Client(validator(CSP(wsgi_app(templates)))).get("/own", buffered=True)
    assert response.headers.getlist("Content-Security-Policy") == ["default-src 'self'"]


def test_wsgi_nonce_in_environ_and_publisher(templates: Path) -> None:
    class Root(Directory):
        _q_exports = [""]

        def _q_index(self) -> htmltext:
            return htmltext('<script nonce="%s"></script>') % csp_nonce()

    seen = {}

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        seen["environ"] = environ[CSP_NONCE_KEY]
        return Publisher(Root())(environ, start_response)

    response = Client(validator(CSP(app))).get("/", buffered=True)
    assert same_nonce(response.headers["Content-Security-Policy"], response.data) == seen["environ"]


def test_wsgi_bad_directive_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="invalid CSP source"):
        CSP(lambda environ, start_response: [], {"img-src": "'self'; script-src *"})


def test_wsgi_stream_iterated_from_other_contexts_and_threads(templates: Path) -> None:
    """Servers may pull each chunk from a different context; close() may come from yet another."""
    headers: dict[str, str] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info=None):
        headers.update(response_headers)
        return lambda data: None

    environ = EnvironBuilder("/stream").get_environ()
    body = CSP(wsgi_app(templates))(environ, start_response)
    assert no_nonce_here()
    chunks = [contextvars.Context().run(next, body)]
    with ThreadPoolExecutor(1) as pool:
        chunks.append(pool.submit(next, body).result())
    chunks.append(next(body))
    assert no_nonce_here()
    contextvars.Context().run(body.close)
    same_nonce(headers["Content-Security-Policy"], b"".join(chunks), scripts=3)


def test_wsgi_abandoned_stream_leaves_no_nonce(templates: Path) -> None:
    closed = []

    def app(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/html")])
        try:
            yield str(htmltext('<script nonce="%s"></script>') % csp_nonce()).encode()
            yield b"never sent"
        finally:
            closed.append(csp_nonce())  # close() runs inside the request's scope too

    response = Client(validator(CSP(app))).get("/")
    first = next(iter(response.response))
    assert no_nonce_here()
    response.close()
    assert no_nonce_here()
    assert closed == [same_nonce(response.headers["Content-Security-Policy"], first)]


def dispatcher(templates: Path) -> Any:
    """``/bare`` reports whether a nonce is current; anything else is the CSP-wrapped app."""
    with_csp = CSP(wsgi_app(templates))

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["PATH_INFO"] == "/bare":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"none" if no_nonce_here() else csp_nonce().encode()]
        return with_csp(environ, start_response)

    return app


def test_wsgi_real_server_one_thread_for_all_requests_leaks_nothing(templates: Path) -> None:
    with serve_in_thread(validator(dispatcher(templates)), threaded=False) as base:
        nonces = []
        for url, scripts in [("/", 1), ("/stream", 3)] * 3:
            status, headers, body = fetch(base + url)
            assert status == 200
            nonces.append(same_nonce(headers["Content-Security-Policy"], body, scripts))
            status, headers, body = fetch(base + "/bare")
            assert (body, headers["Content-Security-Policy"]) == (b"none", None)
    assert len(set(nonces)) == len(nonces)


def test_wsgi_real_threaded_server_concurrent_requests(templates: Path) -> None:
    with serve_in_thread(dispatcher(templates)) as base:

        def get(n: int) -> str:
            url, scripts = ("/stream", 3) if n % 2 else ("/", 1)
            status, headers, body = fetch(base + url)
            assert status == 200
            return same_nonce(headers["Content-Security-Policy"], body, scripts)

        with ThreadPoolExecutor(16) as pool:
            nonces = list(pool.map(get, range(64)))
    assert len(set(nonces)) == 64


# -- Flask -----------------------------------------------------------------------------------


def flask_app(templates: Path, **config: Any) -> Flask:
    app = Flask(__name__, template_folder=str(templates))
    app.config.update({"TESTING": True, "PTL_CSP": True, **config})
    PTL(app)

    @app.before_request
    def gate() -> Any:  # registered after PTL: answers before any view
        if flask_request.path == "/gate":
            return render_template("page.ptl")
        return None

    @app.get("/")
    def index() -> htmltext:
        assert flask_request.environ[CSP_NONCE_KEY] == csp_nonce()
        return render_template("page.ptl") + render_template("page.ptl:current")

    @app.get("/stream")
    def streamed() -> Any:
        return stream_template("page.ptl:stream")

    @app.get("/jinja")
    def jinja() -> str:
        return render_template_string('<script nonce="{{ csp_nonce }}"></script>')

    @app.get("/own")
    def own() -> Any:
        return render_template("page.ptl"), {"Content-Security-Policy": "default-src 'self'"}

    @app.get("/missing")
    def missing() -> Any:
        abort(404)

    @app.errorhandler(404)
    def not_found(error: Exception) -> Any:
        return render_template("page.ptl:current"), 404

    return app


def test_flask_header_and_template_share_the_nonce(templates: Path) -> None:
    app = flask_app(templates, PTL_CSP_DIRECTIVES={"img-src": ["'self'", "data:"]})
    client = app.test_client()
    nonces = []
    for url, scripts in [("/", 2), ("/stream", 3), ("/jinja", 1), ("/gate", 1), ("/missing", 1)]:
        response = client.get(url)
        header = response.headers["Content-Security-Policy"]
        nonces.append(same_nonce(header, response.text, scripts))
        assert "img-src 'self' data:" in header
        assert no_nonce_here()  # the test client runs the app in this very context
    assert len(set(nonces)) == len(nonces)


def test_flask_requests_in_one_app_context_get_their_own_nonces(templates: Path) -> None:
    app = flask_app(templates)
    with app.app_context():  # requests then share one app context, and g
        client = app.test_client()
        first, second = (client.get("/") for _ in range(2))
    assert same_nonce(first.headers["Content-Security-Policy"], first.text, 2) != same_nonce(
        second.headers["Content-Security-Policy"], second.text, 2
    )


def test_flask_keeps_a_policy_the_view_set(templates: Path) -> None:
    response = flask_app(templates).test_client().get("/own")
    assert response.headers.getlist("Content-Security-Policy") == ["default-src 'self'"]


def test_flask_csp_is_opt_in(templates: Path) -> None:
    app = flask_app(templates, PTL_CSP=False)

    @app.get("/off")
    def off() -> str:
        assert no_nonce_here()
        return render_template_string("{{ csp_nonce is defined }}")

    response = app.test_client().get("/off")
    assert (response.text, "Content-Security-Policy" in response.headers) == ("False", False)


def test_flask_real_server_one_thread_leaks_nothing(templates: Path) -> None:
    app = flask_app(templates)

    @app.get("/bare")
    def bare() -> str:
        return "none" if no_nonce_here() else csp_nonce()

    app.config["PTL_CSP"] = False  # the toggle is read per request
    with serve_in_thread(app, threaded=False) as base:
        for url, scripts in [("/stream", 3), ("/", 2)] * 2:
            app.config["PTL_CSP"] = True
            _, headers, body = fetch(base + url)
            same_nonce(headers["Content-Security-Policy"], body, scripts)
            app.config["PTL_CSP"] = False
            assert fetch(base + "/bare")[2] == b"none"


# -- Django ----------------------------------------------------------------------------------

DJANGO_PAGE = """\
from ptl_wsgi.csp import csp_nonce as current_nonce

def render [html] (csp_nonce="absent"):
    '<script nonce="%s">1</script>' % csp_nonce
    if csp_nonce != "absent":
        '<script nonce="%s">2</script>' % current_nonce()
"""


def django_page(request: Any) -> Any:
    template = engines["ptl"].from_string(DJANGO_PAGE)
    return html_response(template.render({}, request))


async def django_async_page(request: Any) -> Any:
    return django_page(request)


def django_own(request: Any) -> Any:
    response = django_page(request)
    response["Content-Security-Policy"] = "default-src 'self'"
    return response


urlpatterns = [
    path("page/", django_page),
    path("async/", django_async_page),
    path("own/", django_own),
]


@pytest.fixture
def csp_settings(settings: Any) -> Any:
    settings.ROOT_URLCONF = __name__
    settings.MIDDLEWARE = ["ptl_wsgi.contrib.django.CSPMiddleware", *settings.MIDDLEWARE]
    settings.PTL_CSP_DIRECTIVES = {"frame-ancestors": "'none'"}
    return settings


def test_django_header_and_template_share_the_nonce(csp_settings: Any, client: Any) -> None:
    nonces = []
    for _ in range(2):
        response = client.get("/page/")
        header = response.headers["Content-Security-Policy"]
        nonces.append(same_nonce(header, response.content, scripts=2))
        assert header.endswith("; frame-ancestors 'none'")
        assert response.wsgi_request.META[CSP_NONCE_KEY] == nonces[-1]
        assert no_nonce_here()
    assert nonces[0] != nonces[1]


def test_django_async_view_under_asgi(csp_settings: Any, async_client: Any) -> None:
    async def two() -> list[Any]:
        return [await async_client.get(url) for url in ("/async/", "/page/")]

    nonces = set()
    for response in asyncio.run(two()):
        assert response.status_code == 200
        nonces.add(same_nonce(response.headers["Content-Security-Policy"], response.content, 2))
    assert len(nonces) == 2


def test_django_keeps_a_policy_the_view_set(csp_settings: Any, client: Any) -> None:
    response = client.get("/own/")
    assert response.headers["Content-Security-Policy"] == "default-src 'self'"


def test_django_without_the_middleware(settings: Any, client: Any) -> None:
    settings.ROOT_URLCONF = __name__
    response = client.get("/page/")
    assert response.content == b'<script nonce="absent">1</script>'
    assert "Content-Security-Policy" not in response.headers


def test_django_bad_directives_are_improperly_configured(settings: Any) -> None:
    settings.PTL_CSP_DIRECTIVES = {"script-src;": "*"}
    with pytest.raises(ImproperlyConfigured, match="PTL_CSP_DIRECTIVES"):
        CSPMiddleware(lambda request: None)


# -- a real browser enforces it --------------------------------------------------------------

INJECTED = (
    '<script>alert("injected")</script><img src="/x" onerror="alert(\'handler\')">'
    "<script>window.__xss = 1</script>"
)


@pytest.mark.slow
@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_browser_runs_the_nonced_script_only(templates: Path) -> None:
    loader = Loader([templates])

    @view
    def page(request: Any) -> htmltext:
        # An injection that escaping missed, as htmltext: only CSP stands in its way.
        return loader.render("page.ptl:current", {}) + htmltext(INJECTED)

    with XSSBrowser() as browser, serve_in_thread(CSP(page)) as base:
        _, headers, body = fetch(base + "/")
        same_nonce(headers["Content-Security-Policy"], body)
        assert browser.visit(base + "/") == []
        assert browser.evaluate("window.ran") == 2
        # The control: the same page without the header runs everything.
        hits = browser.visit_response(base + "/control", body)
        assert browser.evaluate("window.ran") == 2
        assert len(hits) >= 3, hits


# -- a .ptl file's functions called from Jinja2 or a view (third CSP review, finding 6) -----


def test_flask_ptl_function_returned_by_a_view_is_written_out_but_not_in_jinja(
    tmp_path: Path,
) -> None:
    """A view's return value is written out (the nonce in its literals' tags); a .ptl
    function called from Jinja2 is Jinja2's to compose (its filters could put a value
    into the script), so its markup takes no nonce there: it fails closed."""
    from flask import get_template_attribute

    (tmp_path / "parts.ptl").write_text(
        "def app_js [html] ():\n    '<script src=\"/a.js\"></script>'\n"
    )
    app = Flask(__name__, template_folder=str(tmp_path))
    app.config.update(TESTING=True, PTL_CSP=True)
    PTL(app)

    @app.get("/jinja")
    def jinja() -> Any:
        return render_template_string(
            '{% import "parts.ptl" as p %}<p>{{ p.app_js() | replace("/a.js", "/b.js") }}</p>'
        )

    @app.get("/attribute")
    def attribute() -> Any:
        return get_template_attribute("parts.ptl", "app_js")()

    client = app.test_client()
    jinja_page = client.get("/jinja").get_data(as_text=True)
    assert jinja_page == '<p><script src="/b.js"></script></p>'
    response = client.get("/attribute")
    nonce = HEADER_NONCE.search(response.headers["Content-Security-Policy"])
    assert nonce is not None
    assert (
        response.get_data(as_text=True) == f'<script src="/a.js" nonce="{nonce.group(1)}"></script>'
    )


def test_quart_view_returning_a_sync_generator_under_ptl(tmp_path: Path) -> None:
    """Fifth CSP review, finding 5: Quart takes only real generators as a streamed body;
    PTL(app)'s make_response leaves them to the stream's own wrapping (no 500)."""
    from quart import Quart

    from ptl_wsgi.contrib.quart import PTL as QuartPTL

    for csp in (True, False):
        app = Quart(__name__)
        app.config.update(TESTING=True, PTL_CSP=csp)
        QuartPTL(app)

        @app.get("/")
        async def index() -> Any:
            return (chunk for chunk in ["<p>", "a", "</p>"]), 200, {"Content-Type": "text/html"}

        async def get(app: Quart = app) -> tuple[int, bytes]:
            response = await app.test_client().get("/")
            return response.status_code, await response.get_data()

        status, body = asyncio.run(get())
        assert status == 200 and body == b"<p>a</p>", (csp, status, body)
