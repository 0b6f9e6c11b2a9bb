"""The example sites, end to end: example_sites/wsgi_app and example_sites/cgi."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import xmlrpc.client
from pathlib import Path
from urllib.parse import urlencode
from wsgiref.validate import validator

import pytest
from servers import fetch, run_process_server, serve_in_thread
from werkzeug.test import Client

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "example_sites" / "wsgi_app"


def load_site():
    """Import example_sites/wsgi_app/app.py under a private module name."""
    spec = importlib.util.spec_from_file_location("_wsgi_example_app", SITE / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "notes.sqlite3"
    monkeypatch.setenv("PTL_WSGI_NOTES_DB", str(path))
    return path


@pytest.fixture
def site(db):
    return load_site().make_app(debug=False)


def get(app, path, **kwargs):
    return Client(validator(app)).open(path, buffered=True, **kwargs)


def test_database_is_created_on_first_use(db, site):
    assert not db.exists()  # making the app does not touch it
    response = get(site, "/")
    assert response.status_code == 200
    assert db.exists()
    assert b'<a href="/notes/1/">Welcome</a>' in response.data


def test_pages_are_ptl_and_escape(site):
    response = get(site, "/notes/1/")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.data
    assert b"<script>" not in response.data
    assert get(site, "/notes/1").status_code == 301
    assert get(site, "/notes/999/").status_code == 404
    assert get(site, "/notes/\u00b2/").status_code == 404
    assert get(site, "/nothing").status_code == 404
    assert get(site, "/style.css").headers["Content-Type"] == "text/css; charset=utf-8"


def test_adding_a_note(site):
    form = {"title": "<b>bold</b> & co", "body": "one\n\ntwo <i>"}
    response = get(site, "/notes/add", method="POST", data=form)
    assert response.status_code == 303
    location = response.headers["Location"]
    assert re.fullmatch(r"/notes/\d+/", location)
    page = get(site, location).data.decode()
    assert "<h1>&lt;b&gt;bold&lt;/b&gt; &amp; co</h1>" in page
    assert "<p>two &lt;i&gt;</p>" in page
    assert "&lt;b&gt;bold" in get(site, "/notes/").data.decode()

    response = get(site, "/notes/add", method="POST", data={"title": " ", "body": "<x>"})
    assert response.status_code == 400
    assert b"A note needs a title." in response.data
    assert b"&lt;x&gt;</textarea>" in response.data
    assert get(site, "/notes/add").status_code == 405


def test_links_respect_the_mount_point(site):
    mounted = {"SCRIPT_NAME": "/wsgi"}
    page = get(site, "/", environ_overrides=mounted).data.decode()
    hrefs = re.findall(r'(?:href|action)="([^"]+)"', page)
    assert hrefs and all(h.startswith("/wsgi/") for h in hrefs), hrefs
    response = get(site, "/notes", environ_overrides=mounted)
    assert response.headers["Location"] == "/wsgi/notes/"
    form = {"title": "t"}
    response = get(site, "/notes/add", method="POST", data=form, environ_overrides=mounted)
    assert response.headers["Location"].startswith("/wsgi/notes/")
    assert b"<dd>/wsgi</dd>" in get(site, "/about", environ_overrides=mounted).data


def test_xmlrpc_endpoint(site):
    with serve_in_thread(validator(site)) as base:
        proxy = xmlrpc.client.ServerProxy(base + "/rpc")
        assert set(proxy.system.listMethods()) >= {"notes.add", "notes.get", "notes.list"}
        note_id = proxy.notes.add("from rpc", "<body>")
        assert proxy.notes.get(note_id)["body"] == "<body>"
        assert next(n["title"] for n in proxy.notes.list()) == "from rpc"
        with pytest.raises(xmlrpc.client.Fault) as info:
            proxy.notes.get(12345)
        assert info.value.faultCode == 404
        with pytest.raises(xmlrpc.client.Fault) as info:
            proxy.notes.add("")
        assert info.value.faultString == "A note needs a title."
        with pytest.raises(xmlrpc.client.Fault) as info:
            proxy.notes.drop()
        assert info.value.faultCode == -32601
        # The note added over XML-RPC shows on the web page.
        assert b"from rpc" in fetch(base + "/notes/")[2]
        assert fetch(base + "/rpc")[0] == 405


def test_default_database_is_ignored_by_git():
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(
        ["git", "check-ignore", "-q", str(SITE / "notes.sqlite3")], cwd=ROOT, timeout=30
    )
    assert result.returncode == 0


def test_runs_standalone(db):
    command = [sys.executable, str(SITE / "app.py"), "--port", "{port}"]
    with run_process_server(command, ready_path="/") as base:
        status, _headers, body = fetch(base + "/")
        assert status == 200 and b"Welcome" in body
        form = urlencode({"title": "standalone"}).encode()
        status, headers, _body = fetch(base + "/notes/add", data=form)
        assert status == 303
        assert b"standalone" in fetch(base + headers["Location"])[2]
        proxy = xmlrpc.client.ServerProxy(base + "/rpc")
        assert any(n["title"] == "standalone" for n in proxy.notes.list())
    assert db.exists()


def test_cgi_example_runs_as_a_cgi_program(tmp_path):
    """The CGI example end to end (more in test_cgiapp.py, including behind lighttpd)."""
    script = tmp_path / "hello.cgi"
    shutil.copy(ROOT / "example_sites" / "cgi" / "hello.cgi", script)
    script.chmod(0o755)
    environ = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "GATEWAY_INTERFACE": "CGI/1.1",
        "REQUEST_METHOD": "GET",
        "QUERY_STRING": "name=%3Cdemo%3E",
        "SCRIPT_NAME": "/hello.cgi",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    result = subprocess.run([str(script)], env=environ, capture_output=True, timeout=60)
    assert result.stdout.startswith(b"Status: 200 OK\r\n"), result.stderr
    assert b"Hello, &lt;demo&gt;!" in result.stdout


def test_not_found_is_the_sites_own_page(site):
    response = get(site, "/notes/999/<b>")
    assert response.status_code == 404
    page = response.get_data(as_text=True)
    assert "<h1>Page not found</h1>" in page
    assert "<code>/notes/999/&lt;b&gt;</code>" in page
    assert '<link rel="stylesheet" href="/style.css" nonce="' in page  # the layout's own frame
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"


def test_favicon(site):
    response = get(site, "/favicon.svg")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "image/svg+xml"
    assert response.data == (ROOT / "example_sites" / "favicon.svg").read_bytes()
    response = get(site, "/favicon.ico")
    assert (response.status_code, response.headers["Location"]) == (301, "/favicon.svg")
    assert '<link rel="icon" href="/favicon.svg"' in get(site, "/").get_data(as_text=True)
