"""ptl_wsgi.contrib.starlette: PTLTemplates in Starlette and FastAPI, through their test clients."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from servers import fetch, run_process_server
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient

from ptl_wsgi.asgi import CSP
from ptl_wsgi.contrib.starlette import PTLTemplates
from ptl_wsgi.loader import Loader, TemplateNotFound

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
NONCE = re.compile(r"'nonce-([A-Za-z0-9_-]+)'")

TEMPLATES = {
    "index.ptl": """
        from ptl_wsgi.csp import csp_nonce

        def render [html] (request, name, url_for, site="", csp_nonce=None):
            "<h1>Hello, %s</h1>" % name
            '<a href="%s">home</a>' % url_for("home")
            "<p>%s %s</p>" % (request.method, site)
            if csp_nonce:
                '<script nonce="%s"></script>' % csp_nonce

        def nonce [plain] ():
            csp_nonce()
    """,
    "plain.ptl": """
        def render [plain] (name):
            "<b>%s</b>" % name
    """,
    "stream.ptl": """
        from ptl_wsgi.csp import csp_nonce
        from ptl_wsgi.loader import render_context

        def item [html] (value):
            "<li>%s</li>" % value

        def render(items):
            yield "<ul>"
            for value in items:
                yield item(value)
                yield render_context()["extra"]
            yield csp_nonce() if render_context().get("nonced") else ""
    """,
}


@pytest.fixture
def folder(tmp_path):
    for name, source in TEMPLATES.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    return tmp_path


def make_app(templates, *, debug=False, middleware=()):
    def home(request):
        return templates.TemplateResponse(
            request, "index.ptl", {"name": request.query_params.get("name", "")}
        )

    async def home_async(request):
        return templates.TemplateResponse(request, "index.ptl", {"name": SCRIPT})

    def plain(request):
        return templates.TemplateResponse(
            request, "plain.ptl", {"name": SCRIPT}, media_type=request.query_params.get("type")
        )

    def stream(request):
        context = {"items": ["a", SCRIPT], "extra": b"<i>", "nonced": "n" in request.query_params}
        return templates.TemplateResponse(request, "stream.ptl", context)

    def echo(request):
        headers = {"X-Next": request.query_params["next"]}
        return templates.TemplateResponse(request, "index.ptl", {"name": "x"}, headers=headers)

    def nonce(request):
        return templates.TemplateResponse(request, "index.ptl:nonce", media_type="text/plain")

    routes = [
        Route("/", home, name="home"),
        Route("/async", home_async),
        Route("/plain", plain),
        Route("/stream", stream),
        Route("/echo", echo),
        Route("/nonce", nonce),
    ]
    app = Starlette(debug=debug, routes=routes)
    for wrapper in middleware:
        app.add_middleware(wrapper)
    return app


def test_template_response_escapes_and_reports_to_the_test_client(folder):
    templates = PTLTemplates(directory=folder)
    with TestClient(make_app(templates)) as client:
        for path in ("/?name=" + SCRIPT, "/async"):
            response = client.get(path)
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/html; charset=utf-8"
            assert ESCAPED in response.text
            assert SCRIPT not in response.text
            assert '<a href="http://testserver/">home</a>' in response.text
            assert response.template.name == "index.ptl"
            assert response.context["name"] == SCRIPT
            assert isinstance(response.context["request"], Request)
            assert "url_for" not in response.context  # a global, as in Jinja2Templates


def test_context_processors_and_response_options(folder):
    ran = []
    templates = PTLTemplates(
        directory=[folder], context_processors=[lambda request: {"site": "S&P"}]
    )

    def page(request):
        return templates.TemplateResponse(
            request,
            "index.ptl",
            {"name": "n"},
            status_code=201,
            headers={"X-A": "1"},
            background=BackgroundTask(ran.append, "done"),
        )

    app = Starlette(routes=[Route("/", page, name="home")])
    response = TestClient(app).get("/")
    assert response.status_code == 201
    assert response.headers["x-a"] == "1"
    assert "<p>GET S&amp;P</p>" in response.text
    assert response.context["site"] == "S&P"
    assert ran == ["done"]


def test_plain_output_is_escaped_in_html_and_raw_in_text(folder):
    client = TestClient(make_app(PTLTemplates(directory=folder)))
    assert client.get("/plain").text == "&lt;b&gt;" + ESCAPED + "&lt;/b&gt;"
    for html_type in ("application/xhtml+xml", "TEXT/HTML", "image/svg+xml"):
        assert SCRIPT not in client.get("/plain", params={"type": html_type}).text
    response = client.get("/plain", params={"type": "text/plain"})
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == f"<b>{SCRIPT}</b>"


def test_a_content_type_header_decides_the_policy(folder):
    templates = PTLTemplates(directory=folder)

    def page(request):
        headers = {"content-type": "text/html"}
        return templates.TemplateResponse(
            request, "plain.ptl", {"name": SCRIPT}, headers=headers, media_type="text/plain"
        )

    response = TestClient(Starlette(routes=[Route("/", page)])).get("/")
    assert SCRIPT not in response.text


def test_a_generator_template_streams_escaped_chunks(folder):
    client = TestClient(make_app(PTLTemplates(directory=folder)))
    with client.stream("GET", "/stream") as response:
        chunks = list(response.iter_raw())
        assert response.template.name == "stream.ptl"
    assert "content-length" not in response.headers
    assert b"".join(chunks) == (
        b"&lt;ul&gt;<li>a</li>&lt;i&gt;<li>" + ESCAPED.encode() + b"</li>&lt;i&gt;"
    )


def test_missing_templates_name_every_place_looked_in(folder, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    templates = PTLTemplates(directory=[folder, other])
    with pytest.raises(TemplateNotFound) as caught:
        templates.get_template("nope/page.ptl")
    message = str(caught.value)
    assert "'nope/page.ptl'" in message
    assert str(folder / "nope" / "page.ptl") in message
    assert str(other / "nope" / "page.ptl") in message
    with pytest.raises(TemplateNotFound, match="relative path"):
        templates.get_template("../index.ptl")

    def page(request):
        return templates.TemplateResponse(request, "missing.ptl")

    with pytest.raises(TemplateNotFound, match=r"missing\.ptl"):
        TestClient(Starlette(routes=[Route("/", page)])).get("/")


def test_get_template_and_loader_argument(folder):
    loader = Loader([folder])
    templates = PTLTemplates(loader=loader)
    assert templates.get_template("index.ptl:nonce").name == "index.ptl:nonce"
    assert templates.loader is loader
    with pytest.raises(TypeError):
        PTLTemplates()
    with pytest.raises(TypeError):
        PTLTemplates(directory=folder, loader=loader)


def test_the_request_comes_first(folder):
    templates = PTLTemplates(directory=folder)
    with pytest.raises(TypeError, match="request first"):
        templates.TemplateResponse("index.ptl", {"request": None})


def test_auto_reload_follows_debug(folder):
    templates = PTLTemplates(directory=folder)
    client = TestClient(make_app(templates, debug=True))
    assert "Hello" in client.get("/").text
    page = folder / "plain.ptl"
    page.write_text('def render [plain] (name):\n    "Bye %s" % name\n')
    stamp = time.time() + 5
    os.utime(page, (stamp, stamp))
    assert client.get("/plain", params={"type": "text/plain"}).text == f"Bye {SCRIPT}"
    assert PTLTemplates(directory=folder, auto_reload=False).get_template("plain.ptl")


@pytest.mark.parametrize("char", ["\r", "\n", "\x00", "\x85", "\u2028"])
def test_a_hostile_header_given_to_template_response_is_a_400(folder, char, caplog):
    client = TestClient(make_app(PTLTemplates(directory=folder)))
    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        response = client.get("/echo", params={"next": f"/a{char}Set-Cookie: s=1"})
    assert response.status_code == 400
    assert "set-cookie" not in response.headers
    assert "refused GET /echo" in caplog.text


def test_a_hostile_media_type_is_a_400(folder):
    client = TestClient(make_app(PTLTemplates(directory=folder)))
    response = client.get("/plain", params={"type": "text/html\r\nSet-Cookie: s=1"})
    assert response.status_code == 400
    assert "set-cookie" not in response.headers


def test_csp_nonce_reaches_templates_and_streams(folder):
    app = make_app(PTLTemplates(directory=folder), middleware=[CSP])
    with TestClient(app) as client:
        response = client.get("/")
        nonce = NONCE.search(response.headers["content-security-policy"]).group(1)
        assert f'<script nonce="{nonce}"></script>' in response.text
        response = client.get("/nonce")  # csp_nonce() in a sync view's thread
        assert response.text == NONCE.search(response.headers["content-security-policy"]).group(1)
        response = client.get("/stream?n=1")  # csp_nonce() while the body streams
        nonce = NONCE.search(response.headers["content-security-policy"]).group(1)
        assert response.text.endswith(nonce)


def test_concurrent_streams_each_see_their_own_nonce(folder):
    app = make_app(PTLTemplates(directory=folder), middleware=[CSP])

    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await asyncio.gather(*(client.get("/stream?n=1") for _ in range(12)))

    responses = asyncio.run(main())
    nonces = {NONCE.search(r.headers["content-security-policy"]).group(1) for r in responses}
    assert len(nonces) == len(responses)
    for response in responses:
        assert response.text.endswith(
            NONCE.search(response.headers["content-security-policy"]).group(1)
        )


def test_nonce_reaches_views_behind_base_http_middleware(folder):
    # BaseHTTPMiddleware runs the rest of the app in a task of its own: the context goes along.
    from starlette.middleware.base import BaseHTTPMiddleware

    async def passthrough(request, call_next):
        return await call_next(request)

    app = make_app(PTLTemplates(directory=folder), middleware=[CSP])
    app.add_middleware(BaseHTTPMiddleware, dispatch=passthrough)  # added last: around CSP
    inner = make_app(PTLTemplates(directory=folder))
    inner.add_middleware(BaseHTTPMiddleware, dispatch=passthrough)
    inner.add_middleware(CSP)  # CSP outermost, BaseHTTPMiddleware between it and the views
    for application in (app, inner):
        response = TestClient(application).get("/stream?n=1")
        nonce = NONCE.search(response.headers["content-security-policy"]).group(1)
        assert response.text.endswith(nonce)


def test_fastapi_with_ptl_templates(folder):
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse
    from fastapi.testclient import TestClient as FastAPIClient

    templates = PTLTemplates(directory=folder)
    app = FastAPI()
    app.add_middleware(CSP)

    @app.get("/", response_class=HTMLResponse, name="home")
    async def home(request: Request, name: str = ""):
        return templates.TemplateResponse(request, "index.ptl", {"name": name})

    @app.get("/sync", response_class=HTMLResponse)
    def sync(request: Request):
        return templates.TemplateResponse(request, "stream.ptl", {"items": [SCRIPT], "extra": ""})

    @app.get("/next")
    def go(request: Request, next: str):
        return templates.TemplateResponse(request, "index.ptl", {"name": ""}, headers={"X-N": next})

    with FastAPIClient(app) as client:
        response = client.get("/", params={"name": SCRIPT})
        assert ESCAPED in response.text
        assert response.template.name == "index.ptl"
        assert response.context["name"] == SCRIPT
        nonce = NONCE.search(response.headers["content-security-policy"]).group(1)
        assert f'nonce="{nonce}"' in response.text
        assert ESCAPED in client.get("/sync").text
        assert client.get("/next", params={"next": "a\r\nb"}).status_code == 400
        assert client.get("/next", params={"next": "/ok"}).headers["x-n"] == "/ok"


UVICORN_APP = """
from starlette.applications import Starlette
from starlette.routing import Route

from ptl_wsgi.asgi import CSP, Middleware
from ptl_wsgi.contrib.starlette import PTLTemplates

templates = PTLTemplates(directory="templates")


def home(request):
    return templates.TemplateResponse(request, "index.ptl", {"name": request.query_params["name"]})


def stream(request):
    items = request.query_params.getlist("i")
    context = {"items": items, "extra": "", "nonced": 1}
    return templates.TemplateResponse(request, "stream.ptl", context)


app = Starlette(routes=[Route("/", home, name="home"), Route("/stream", stream)])
app.add_middleware(Middleware)
app.add_middleware(CSP)
"""


@pytest.mark.slow
def test_under_uvicorn(folder, tmp_path_factory):
    pytest.importorskip("uvicorn")
    site = tmp_path_factory.mktemp("site")
    (site / "templates").symlink_to(folder)
    (site / "ptl_site.py").write_text(UVICORN_APP)
    command = [sys.executable, "-m", "uvicorn", "--port", "{port}", "--host", "127.0.0.1",
               "--log-level", "warning", "ptl_site:app"]  # fmt: skip
    with run_process_server(command, cwd=site, ready_path="/?name=x") as base:
        status, headers, body = fetch(base + "/?name=%3Cscript%3E%FF")
        assert status == 200
        nonce = NONCE.search(headers["Content-Security-Policy"]).group(1)
        assert "<h1>Hello, &lt;script&gt;\ufffd</h1>" in body.decode()
        assert f'nonce="{nonce}"' in body.decode()
        status, headers, body = fetch(base + "/stream?i=%3Cb%3E&i=2")
        nonce = NONCE.search(headers["Content-Security-Policy"]).group(1)
        assert body.decode() == f"&lt;ul&gt;<li>&lt;b&gt;</li><li>2</li>{nonce}"
        assert "Content-Length" not in headers
        # Concurrent streams: each body ends with its own response's nonce.
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda n: fetch(f"{base}/stream?i={n}"), range(24)))
        seen = set()
        for n, (status, headers, body) in enumerate(results):
            assert status == 200
            nonce = NONCE.search(headers["Content-Security-Policy"]).group(1)
            assert body.decode() == f"&lt;ul&gt;<li>{n}</li>{nonce}"
            seen.add(nonce)
        assert len(seen) == len(results)
