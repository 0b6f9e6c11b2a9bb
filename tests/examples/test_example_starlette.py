"""The Starlette example site (example_sites/starlette_app): its test client, the demo's
a2wsgi mount, and uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from servers import fetch, run_process_server
from starlette.testclient import TestClient
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client
from werkzeug.wrappers import Response

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "example_sites" / "starlette_app" / "app.py"
SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
NONCE = re.compile(r"'nonce-([A-Za-z0-9_-]+)'")


def load_site():
    spec = importlib.util.spec_from_file_location("_starlette_example_app", APP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site():
    return load_site()


def test_search_escapes_the_query_and_scripts_run_by_nonce(site):
    client = TestClient(site.make_app([f"fact with {SCRIPT}", "other"]))
    response = client.get("/", params={"q": SCRIPT})
    assert response.status_code == 200
    assert response.template.name == "pages.ptl:search"
    assert f'value="{ESCAPED}"' in response.text
    assert f"<mark>{ESCAPED}</mark>: 1" in response.text
    assert SCRIPT not in response.text
    nonce = NONCE.search(response.headers["content-security-policy"]).group(1)
    assert f'<script nonce="{nonce}">' in response.text


def test_fact_pages_and_ids_out_of_range(site):
    client = TestClient(site.make_app(["one", "two"]))
    assert "<p>two</p>" in client.get("/facts/2").text
    for fact_id in ("0", "3", "99999999999999999999", "9" * 5000):
        response = client.get(f"/facts/{fact_id}")
        assert response.status_code == 404
    assert "Page not found" in client.get("/facts/3").text  # the site's PTL 404 page
    assert "Page not found" in client.get("/no/<page>").text
    assert "&lt;page&gt;" in client.get("/no/<page>").text


def test_the_stream_is_escaped_chunk_by_chunk(site):
    # Driven as a server drives it: older test clients read a stream whole.
    sent = []

    requested = []

    async def receive():
        if requested:  # after the request, the client just waits for the response
            await asyncio.Event().wait()
        requested.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/stream",
        "raw_path": b"/stream",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 50000),
    }
    asyncio.run(site.make_app([SCRIPT, "b"])(scope, receive, send))
    assert sent[0]["status"] == 200
    chunks = [m["body"] for m in sent if m["type"] == "http.response.body" and m.get("body")]
    assert len(chunks) >= 4  # head, list, items..., foot
    body = b"".join(chunks).decode()
    assert f">{ESCAPED}</a></li>" in body
    assert b"content-length" not in dict(sent[0]["headers"])


def test_mounted_as_in_the_demo(site):
    from a2wsgi import ASGIMiddleware

    app = DispatcherMiddleware(Response("index"), {"/starlette": ASGIMiddleware(site.app)})
    response = Client(app).get("/starlette/")
    assert response.status_code == 200
    assert 'href="http://localhost/starlette/facts/1"' in response.text  # under the mount
    assert NONCE.search(response.headers["Content-Security-Policy"])
    assert "&lt;b&gt;" in Client(app).get("/starlette/?q=<b>").text
    favicon = Client(app).get("/starlette/favicon.ico")
    assert favicon.status_code == 301
    assert favicon.headers["Location"].endswith("/starlette/favicon.svg")


@pytest.mark.slow
def test_under_uvicorn():
    pytest.importorskip("uvicorn")
    command = [sys.executable, str(APP), "--port", "{port}"]
    with run_process_server(command, cwd=ROOT, ready_path="/") as base:
        status, headers, body = fetch(base + "/?q=%3Cscript%3E%FF")
        assert status == 200
        assert "&lt;script&gt;\ufffd" in body.decode()
        assert NONCE.search(headers["Content-Security-Policy"])
        assert fetch(base + "/facts/" + "9" * 5000)[0] == 404
        status, _, body = fetch(base + "/no/%FF%3Cb%3E")  # a path that is not UTF-8
        assert status == 404
        assert "<code>/no/\ufffd&lt;b&gt;</code>" in body.decode()
        status, headers, body = fetch(base + "/stream")
        assert status == 200 and "Content-Length" not in headers
        assert body.decode().count("<li>") == len(load_site().FACTS)
