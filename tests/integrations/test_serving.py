"""Serving for real: the example under gunicorn and waitress, streaming, and a bounded load."""

from __future__ import annotations

import http.client
import importlib.util
import sys
import textwrap
import time
import xmlrpc.client
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from servers import fetch, run_process_server

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "example_sites" / "wsgi_app"
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


def load_benchmark():
    path = ROOT / "benchmarks" / "load_wsgi.py"
    spec = importlib.util.spec_from_file_location("_load_wsgi", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


load_wsgi = load_benchmark()
SERVERS = ["gunicorn", "waitress"]


@pytest.fixture(params=SERVERS)
def example_server(request, tmp_path):
    env = {"PTL_WSGI_NOTES_DB": str(tmp_path / "notes.sqlite3")}
    command = load_wsgi.server_command(request.param)
    with run_process_server(command, env=env, cwd=SITE, ready_path="/", timeout=60) as base:
        yield base


def test_example_site_under_a_real_server(example_server):
    base = example_server
    status, headers, body = fetch(base + "/")
    assert status == 200 and b"Recent notes" in body
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    status, headers, _ = fetch(base + "/notes/add", data=urlencode({"title": "<t>"}).encode())
    assert status == 303
    assert "&lt;t&gt;" in fetch(base + headers["Location"])[2].decode()
    assert fetch(base + "/notes")[0] == 301
    assert fetch(base + "/missing")[0] == 404
    proxy = xmlrpc.client.ServerProxy(base + "/rpc")
    assert proxy.notes.add("rpc", "") > 1
    with pytest.raises(xmlrpc.client.Fault):
        proxy.notes.get(99999)


def test_bounded_load_has_no_errors(example_server):
    port = urlsplit(example_server).port
    stats = load_wsgi.python_load("127.0.0.1", port, total=2000, concurrency=16, time_limit=90)
    assert stats.errors == 0, stats.first_errors
    assert stats.requests == 2000


STREAMING_APP = """\
import os
import time

from ptl_wsgi.html import htmltext
from ptl_wsgi.wsgi import Middleware, stream, view

MARKER = os.environ["CLOSE_MARKER"]


def chunks():
    try:
        yield htmltext("<p>first</p>")
        time.sleep(2)
        yield "<second>"
    finally:
        with open(MARKER, "a") as f:
            f.write("closed\\n")


@view
def streaming(request):
    return stream(chunks())


def plain(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"plain"]


app = Middleware(plain, views={"/stream": streaming})
"""


@pytest.mark.parametrize("server", SERVERS)
def test_streaming_and_close_through_a_real_server(server, tmp_path):
    (tmp_path / "streamapp.py").write_text(textwrap.dedent(STREAMING_APP))
    marker = tmp_path / "closed.txt"
    command = load_wsgi.server_command(server)
    command[command.index("app:app")] = "streamapp:app"
    if server == "gunicorn":
        command[command.index(str(SITE))] = str(tmp_path)
    env = {"CLOSE_MARKER": str(marker)}
    with run_process_server(command, env=env, cwd=tmp_path, ready_path="/") as base:
        assert fetch(base + "/")[2] == b"plain"
        parts = urlsplit(base)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            began = time.monotonic()
            connection.request("GET", "/stream")
            response = connection.getresponse()
            assert response.status == 200
            assert response.getheader("Content-Type") == "text/html; charset=utf-8"
            assert response.getheader("Content-Length") is None
            first = response.read1()
            # The first chunk arrives while the generator is still sleeping.
            assert first.startswith(b"<p>first</p>")
            assert time.monotonic() - began < 1.8
            rest = response.read()
        finally:
            connection.close()
        assert first + rest == b"<p>first</p>&lt;second&gt;"
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.read_text() == "closed\n"


@pytest.mark.slow
@pytest.mark.parametrize("site", ["flask", "django"])
def test_framework_site_under_gunicorn_bounded_load(site, tmp_path):
    """The Flask and Django examples under gunicorn (2 workers x 2 threads): no errors."""
    spec = load_wsgi.SITES[site]
    with load_wsgi.serve("gunicorn", str(tmp_path), site, workers=2, threads=2) as base:
        port = urlsplit(base).port
        stats = load_wsgi.python_load(
            "127.0.0.1", port, total=1000, concurrency=8, time_limit=90, pages=spec.pages
        )
    assert stats.errors == 0, stats.first_errors
    assert stats.requests == 1000
