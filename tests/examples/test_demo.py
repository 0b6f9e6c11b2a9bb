"""The demo (``make demo``): ``example_sites/serve.py`` started as a user starts it.

Plain HTTP checks of the index and every mount, a real headless Chromium that
clicks from the index into each site and submits a form there (screenshots in
``test-artifacts/demo/``), and a clean stop on SIGINT.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import chromium_path, unavailable
from servers import fetch, run_process_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "example_sites" / "serve.py"
ARTIFACTS = ROOT / "test-artifacts" / "demo"
SITES = ("/flask/", "/django/", "/wsgi/", "/starlette/", "/cgi/")
BROWSER_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
URL_LINE = re.compile(r"Serving ptl_wsgi example sites at (http://127\.0\.0\.1:(\d+)/)")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Not created in advance: serve.py must make it.
    return tmp_path_factory.mktemp("demo") / "data"


@pytest.fixture(scope="module")
def demo(data_dir: Path) -> Iterator[str]:
    """The demo server's base URL, started from the repository root like ``make demo``."""
    command = [sys.executable, str(SERVE), "--port", "{port}", "--data-dir", str(data_dir)]
    # Django's migrations on first run take a few seconds; ready once / answers.
    with run_process_server(command, cwd=ROOT, ready_path="/", timeout=60) as base:
        yield base


def get(url: str) -> tuple[int, Any, str]:
    status, headers, body = fetch(url)
    return status, headers, body.decode("utf-8", "replace")


# --- plain HTTP ------------------------------------------------------------


def test_index_links_every_site(demo: str) -> None:
    status, headers, body = get(demo + "/")
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert "<h1>ptl_wsgi example sites</h1>" in body
    for path in SITES:
        assert f'<a href="{path}">' in body
    # The descriptions are data, so index.ptl escapes them.
    assert "Flask&#x27;s render_template" in body


@pytest.mark.parametrize(
    ("path", "marker"),
    [
        ("/flask/", "Sign the guestbook"),
        ("/flask/about", "guestbook"),
        ("/flask/entries/", "Archive"),
        ("/django/", "<h1>Notes</h1>"),
        ("/wsgi/", "<h1>Notes</h1>"),
        ("/wsgi/about", "/wsgi"),
        ("/starlette/", "<h1>Facts about PTL</h1>"),
        ("/starlette/stream", '<a href="http://127.0.0.1'),
        ("/cgi/", "Hello, world!"),
    ],
)
def test_every_mount_answers(demo: str, path: str, marker: str) -> None:
    status, _, body = get(demo + path)
    assert status == 200, body[:500]
    assert marker in body


@pytest.mark.parametrize(
    "path", ["/flask/static/style.css", "/django/static/admin/css/base.css", "/wsgi/style.css"]
)
def test_stylesheets_are_served_under_their_mount(demo: str, path: str) -> None:
    status, headers, _ = get(demo + path)
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")


def test_links_honour_the_mount_point(demo: str) -> None:
    # Every site builds URLs from SCRIPT_NAME; a link to the root would escape the mount.
    for path, link in [
        ("/flask/", 'href="/flask/entries/'),
        ("/django/", 'href="/django/admin/login/'),
        ("/wsgi/", 'href="/wsgi/notes/"'),
        ("/starlette/", '/starlette/facts/1">'),
    ]:
        assert link in get(demo + path)[2]


# Every page of every site, under the strict Content-Security-Policy (issue #31).
PAGES = [
    "/", "/flask/", "/flask/about", "/flask/entries/", "/flask/no/such/page",
    "/django/", "/django/no/such/page", "/wsgi/", "/wsgi/about", "/wsgi/notes/",
    "/wsgi/no/such/page", "/cgi/", "/cgi/?name=you",
]  # fmt: skip


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_under_the_strict_policy_with_nothing_hand_written(
    demo: str, path: str
) -> None:
    _, headers, body = get(demo + path)
    policy = headers["Content-Security-Policy"]
    nonce = policy.split("'nonce-")[1].split("'")[0]
    assert policy.startswith(f"script-src 'nonce-{nonce}' 'strict-dynamic' https: 'unsafe-inline'")
    assert f"style-src 'nonce-{nonce}'" in policy and "object-src 'none'" in policy
    # Each script, style and stylesheet carries the nonce; the templates never write it.
    tags = re.findall(r"<(?:script|style|link rel=\"stylesheet\")[^>]*>", body)
    assert tags and all(f'nonce="{nonce}"' in tag for tag in tags), tags
    assert "<script>document.body.dataset.js" not in body


def test_no_template_of_the_demo_writes_a_nonce() -> None:
    for template in (ROOT / "example_sites").rglob("*"):
        if template.suffix in (".ptl", ".cgi"):
            text = template.read_text(encoding="utf-8").lower()
            assert "nonce=" not in text and "csp_nonce" not in text, template


def test_unknown_paths_are_404(demo: str) -> None:
    assert get(demo + "/nowhere")[0] == 404


@pytest.mark.parametrize("site", ["/flask/", "/django/", "/wsgi/", "/starlette/"])
def test_each_site_has_its_own_404_page(demo: str, site: str) -> None:
    status, headers, body = get(demo + site + "no/such/<page>")
    assert status == 404
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert "Page not found" in body and 'rel="icon"' in body  # rendered in the site's layout
    assert "&lt;page&gt;" in body and "<page>" not in body
    assert "Traceback" not in body  # Django runs with DEBUG off in the demo


@pytest.mark.parametrize("site", ["", "/flask", "/django", "/wsgi", "/starlette"])
def test_favicons(demo: str, site: str) -> None:
    status, headers, body = get(f"{demo}{site}/favicon.svg")
    assert status == 200
    assert headers["Content-Type"].startswith("image/svg+xml")
    assert body == (ROOT / "example_sites" / "favicon.svg").read_text()
    status, headers, _ = get(f"{demo}{site}/favicon.ico")
    assert status == 301 and headers["Location"].endswith(f"{site}/favicon.svg")


def test_django_is_french_when_asked(demo: str) -> None:
    status, _, body = fetch(demo + "/django/", headers={"Accept-Language": "fr-FR,fr;q=0.9"})
    text = body.decode()
    assert status == 200
    assert '<html lang="fr">' in text and "Nouvelle note" in text and "Connexion" in text


def test_cgi_escapes_the_query(demo: str) -> None:
    query = urllib.parse.urlencode({"name": "<script>x</script>"})
    status, _, body = get(f"{demo}/cgi/?{query}")
    assert status == 200
    assert "Hello, &lt;script&gt;x&lt;/script&gt;!" in body
    assert "<script>" not in body


def test_sqlite_files_are_created_in_the_data_dir(demo: str, data_dir: Path) -> None:
    get(demo + "/wsgi/")  # the WSGI site creates its file on first use
    names = sorted(path.name for path in data_dir.glob("*.sqlite3"))
    assert names == ["django-notes.sqlite3", "guestbook.sqlite3", "wsgi-notes.sqlite3"]


# --- a real browser ----------------------------------------------------------


@pytest.fixture(scope="module")
def page(demo: str) -> Iterator[Any]:
    """A Chromium page (system browser, never a download), with dialogs recorded."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=BROWSER_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1000, "height": 800})
            context.set_default_timeout(15_000)
            page = context.new_page()
            page.dialogs = []  # a script that ran would most likely call alert()

            def on_dialog(dialog: Any) -> None:
                page.dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", on_dialog)
            # Every securitypolicyviolation Chromium reports, recorded before any script runs.
            context.add_init_script(
                "window.__violations = [];"
                'document.addEventListener("securitypolicyviolation", (e) => '
                'window.__violations.push(e.violatedDirective + " " + (e.blockedURI || "inline")));'
            )
            yield page
        finally:
            browser.close()


def payload(site: str) -> str:
    """Text with markup in it, unique to this run; a script in it would set window.__demo_xss."""
    return f"{site} {uuid.uuid4().hex[:8]} <script>window.__demo_xss=1;alert(1)</script> & <b>b</b>"


def open_from_index(page: Any, base: str, path: str) -> None:
    page.goto(base + "/")
    page.click(f'a[href="{path}"]')
    page.wait_for_url(base + path + "**")


def assert_shown_as_text(page: Any, text: str) -> None:
    """*text* is visible verbatim (escaped, so the browser shows the tags), and ran nothing;
    the page broke none of its Content-Security-Policy."""
    assert text in page.inner_text("body")
    assert page.evaluate("typeof window.__demo_xss") == "undefined"
    assert page.dialogs == []
    assert page.evaluate("window.__violations") == []


def shoot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("path", [*PAGES, "/django/admin/login/"])
def test_browser_no_page_violates_its_policy(page: Any, demo: str, path: str) -> None:
    page.goto(demo + path, wait_until="load")
    assert page.evaluate("window.__violations") == []
    if not path.startswith("/django/admin/"):  # (the admin's own templates)
        # The layout's inline script ran: the nonce the engine wrote is the header's.
        assert page.evaluate("document.body.dataset.js") == "ran"
    # The stylesheet or <style> applied: the body's font is the sites' system-ui.
    assert "system-ui" in page.evaluate("getComputedStyle(document.body).fontFamily")


def test_browser_index(page: Any, demo: str) -> None:
    page.goto(demo + "/")
    assert page.title() == "ptl_wsgi example sites"
    assert page.locator("section.site h2 a").count() == len(SITES)
    shoot(page, "index")


def test_browser_flask_guestbook(page: Any, demo: str) -> None:
    open_from_index(page, demo, "/flask/")
    shoot(page, "flask-form")
    message = payload("flask")
    page.fill("#id_name", "Ann <i>O'Hara</i>")
    page.fill("#id_message", message)
    page.click("button[name=sign]")
    page.wait_for_url(demo + "/flask/")
    assert_shown_as_text(page, "Thanks for signing, Ann <i>O'Hara</i>!")
    assert_shown_as_text(page, message)
    shoot(page, "flask")


def test_browser_django_notes(page: Any, demo: str) -> None:
    open_from_index(page, demo, "/django/")
    shoot(page, "django-form")
    title, text = payload("django title"), payload("django text")
    page.fill("#id_title", title)
    page.fill("#id_text", text)
    page.click("button[type=submit]")  # with Django's CSRF token from the form
    page.wait_for_url(re.compile(re.escape(demo) + r"/django/\d+/$"))
    assert_shown_as_text(page, f"Saved “{title}”.")
    assert_shown_as_text(page, text)
    assert page.locator("h1").inner_text() == title
    shoot(page, "django")


def test_browser_wsgi_notes(page: Any, demo: str) -> None:
    open_from_index(page, demo, "/wsgi/")
    shoot(page, "wsgi-form")
    title, body = payload("wsgi title"), payload("wsgi body")
    page.fill("input[name=title]", title)
    page.fill("textarea[name=body]", body)
    page.click("text=Add note")
    page.wait_for_url(re.compile(re.escape(demo) + r"/wsgi/notes/\d+/$"))
    assert page.locator("h1").inner_text() == title
    assert_shown_as_text(page, body)
    page.click("text=Home")
    assert_shown_as_text(page, title)  # listed under "Recent notes"
    shoot(page, "wsgi")


def test_browser_django_admin_login_with_the_demo_password(
    page: Any, demo: str, data_dir: Path
) -> None:
    # serve.py prints this password; it keeps it beside the database.
    password = (data_dir / "django-notes.sqlite3.admin-password").read_text().strip()
    page.goto(demo + "/django/")
    page.click("text=Log in")
    page.fill("#id_username", "admin")
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(demo + "/django/")
    assert_shown_as_text(page, "Signed in as admin")
    page.click("header a[href='/django/admin/']")
    page.wait_for_url(demo + "/django/admin/")
    shoot(page, "django-admin")
    page.goto(demo + "/django/")
    page.click("text=Log out")
    page.wait_for_load_state()
    page.goto(demo + "/django/")
    assert "Log in" in page.inner_text("header")


def test_browser_cgi_page(page: Any, demo: str) -> None:
    open_from_index(page, demo, "/cgi/")
    assert_shown_as_text(page, "Hello, world!")
    name = "<script>window.__demo_xss=1</script>"
    page.goto(f"{demo}/cgi/?{urllib.parse.urlencode({'name': name})}")
    assert_shown_as_text(page, f"Hello, {name}!")
    shoot(page, "cgi-form")
    message = payload("cgi")
    page.fill("input[name=message]", message)
    page.click("text=Send")
    page.wait_for_selector("p.echo")
    assert_shown_as_text(page, f"You wrote: {message}")
    assert_shown_as_text(page, f"Hello, {name}!")  # the POST went back to the same query
    shoot(page, "cgi")


# --- stopping ----------------------------------------------------------------


def test_port_zero_prints_the_url_and_sigint_stops_cleanly(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, str(SERVE), "--port", "0", "--data-dir", str(tmp_path)],
        cwd=tmp_path,  # any directory works, not only the repository root
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        match = None
        while match is None and time.monotonic() < deadline and process.poll() is None:
            match = next(filter(None, map(URL_LINE.search, list(lines))), None)
            time.sleep(0.05)
        assert match, f"no URL printed:\n{''.join(lines)}"
        assert int(match[2]) != 0
        assert get(match[1])[0] == 200

        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
        reader.join(timeout=5)
        output = "".join(lines)
        assert "Traceback" not in output, output
        assert output.rstrip().endswith("Stopped."), output
        password = (tmp_path / "django-notes.sqlite3.admin-password").read_text().strip()
        assert f"log in as user 'admin', password {password!r}" in output, output
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
