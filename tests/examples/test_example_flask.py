"""The Flask example site end to end: a real server process and real HTTP requests."""

from __future__ import annotations

import re
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import fetch, run_process_server
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client
from werkzeug.wrappers import Response

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "example_sites" / "flask_app" / "app.py"
SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    database = tmp_path_factory.mktemp("flask_site") / "guestbook.sqlite3"
    command = [sys.executable, str(APP), "--port", "{port}", "--database", str(database)]
    with run_process_server(command, cwd=ROOT, ready_path="/") as url:
        yield url


def get(url: str, cookie: str = "") -> tuple[int, str, str]:
    status, headers, body = fetch(url, headers={"Cookie": cookie} if cookie else None)
    return status, headers.get("Content-Type", ""), body.decode("utf-8")


def form_session(base: str) -> tuple[str, str]:
    """The session cookie and CSRF token that come with a freshly served form."""
    _, headers, body = fetch(base + "/")
    cookie = headers["Set-Cookie"].split(";")[0]
    token = re.search(r'name="csrf_token" value="([^"]+)"', body.decode()).group(1)
    return cookie, token


def post_form(base: str, fields: dict[str, str], cookie: str = "") -> tuple[int, Any, str]:
    data = urllib.parse.urlencode(fields).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}
    status, response_headers, body = fetch(base + "/", data=data, headers=headers)
    return status, response_headers, body.decode("utf-8")


def sign(base: str, name: str, message: str) -> tuple[int, str, str]:
    """Fill in and post the form; returns the status, the redirect target and the cookie."""
    cookie, token = form_session(base)
    fields = {"name": name, "message": message, "csrf_token": token, "sign": "1"}
    status, headers, _ = post_form(base, fields, cookie)
    cookie = (headers.get("Set-Cookie") or cookie).split(";")[0]
    return status, headers.get("Location", ""), cookie


@pytest.mark.slow
def test_front_page_structure(base: str) -> None:
    status, content_type, page = get(base + "/")
    assert status == 200
    assert content_type == "text/html; charset=utf-8"
    assert page.startswith("<!doctype html>")
    assert "<title>Sign the guestbook · PTL guestbook</title>" in page
    assert '<form method="post" action="/">' in page
    assert 'name="csrf_token"' in page
    assert '<a href="/entries/">Archive</a>' in page
    assert page.rstrip().endswith("</html>")


@pytest.mark.slow
def test_posted_script_comes_back_escaped_to_everyone(base: str) -> None:
    status, location, cookie = sign(base, "Mallory <b>", SCRIPT)
    assert status == 302
    assert urllib.parse.urlsplit(location).path == "/"

    # The signer sees the flashed thanks, with their name escaped.
    _, _, page = get(base + "/", cookie)
    assert '<ul class="flashes">\n<li>Thanks for signing, Mallory &lt;b&gt;!</li>' in page
    # Everyone else sees the entry, escaped, and no flash.
    _, _, page = get(base + "/")
    assert "flashes" not in page
    assert f'<p class="message">{ESCAPED}</p>' in page
    assert '<span class="name">Mallory &lt;b&gt;</span>' in page
    assert SCRIPT not in page and "<b>" not in page

    entry_id = re.search(r'<article class="entry" id="entry-(\d+)">', page).group(1)
    status, _, entry_page = get(f"{base}/entries/{entry_id}")
    assert status == 200
    assert f"<h1>Signature #{entry_id}</h1>" in entry_page
    assert ESCAPED in entry_page and SCRIPT not in entry_page


@pytest.mark.slow
def test_invalid_form_is_shown_back_escaped(base: str) -> None:
    cookie, token = form_session(base)
    fields = {"name": "", "message": '"><img src=x onerror=1>', "csrf_token": token}
    status, _, page = post_form(base, fields, cookie)
    assert status == 400
    assert "This field is required." in page
    assert "&quot;&gt;&lt;img src=x onerror=1&gt;</textarea>" in page
    assert "<img" not in page


@pytest.mark.slow
def test_post_without_csrf_token_is_refused(base: str) -> None:
    status, _, page = post_form(base, {"name": "Eve", "message": "forged"})
    assert status == 400
    assert "did not come from this site" in page
    assert "forged</p>" not in get(base + "/")[2]


@pytest.mark.slow
def test_streamed_archive_and_about(base: str) -> None:
    sign(base, "Ann", "first & foremost")
    status, content_type, page = get(base + "/entries/")
    assert status == 200 and content_type.startswith("text/html")
    assert "<h1>Archive</h1>" in page
    assert "first &amp; foremost" in page
    assert page.rstrip().endswith("</html>")

    status, _, page = get(base + "/about")
    assert status == 200
    assert re.search(r"It holds \d+ signatures?\.", page)


@pytest.mark.slow
def test_missing_entry_is_404(base: str) -> None:
    status, _, _ = get(base + "/entries/999999")
    assert status == 404


def test_links_follow_the_mount_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The demo mounts the site under /flask/; every link and redirect must say so.
    monkeypatch.syspath_prepend(str(ROOT / "example_sites"))
    from flask_app import create_app

    app = create_app({"DATABASE": str(tmp_path / "db.sqlite3"), "TESTING": True})
    client = Client(DispatcherMiddleware(Response("root"), {"/flask": app}))
    page = client.get("/flask/").text
    hrefs = re.findall(r'(?:href|action)="([^"]*)"', page)
    assert hrefs and all(href.startswith("/flask/") for href in hrefs), hrefs
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    response = client.post("/flask/", data={"name": "Ann", "message": "hi", "csrf_token": token})
    assert response.status_code == 302
    assert urllib.parse.urlsplit(response.location).path == "/flask/"
    assert 'href="/flask/entries/1"' in client.get("/flask/").text


def test_message_newlines_become_line_breaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "example_sites"))
    from flask_app import create_app

    app = create_app({"DATABASE": str(tmp_path / "db.sqlite3"), "TESTING": True})
    client = app.test_client()
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/").text).group(1)
    message = f"first line\r\n{SCRIPT}\nthird"
    response = client.post("/", data={"name": "Ann", "message": message, "csrf_token": token})
    assert response.status_code == 302
    page = client.get("/").text
    assert f'<p class="message">first line<br />\n{ESCAPED}<br />\nthird</p>' in page
    assert SCRIPT not in page


def test_not_found_page_and_favicon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "example_sites"))
    from flask_app import create_app

    app = create_app({"DATABASE": str(tmp_path / "db.sqlite3"), "TESTING": True})
    client = app.test_client()
    for path in ("/no/such/<page>", "/entries/999999"):
        response = client.get(path)
        assert response.status_code == 404
        assert response.content_type == "text/html; charset=utf-8"
        page = response.text
        assert "<h1>Page not found</h1>" in page
        assert '<a class="brand" href="/">PTL guestbook</a>' in page  # the layout
        assert "<page>" not in page
    assert "<code>/no/such/&lt;page&gt;</code>" in client.get("/no/such/<page>").text
    icon = client.get("/favicon.svg")
    assert icon.status_code == 200
    assert icon.mimetype == "image/svg+xml"
    assert icon.data == (ROOT / "example_sites" / "favicon.svg").read_bytes()
    assert client.get("/favicon.ico").headers["Location"] == "/favicon.svg"
    assert '<link rel="icon" href="/favicon.svg"' in client.get("/").text
