"""The Django example site, end to end: real server processes, real HTTP requests."""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from servers import run_process_server

SITE = Path(__file__).resolve().parents[2] / "example_sites" / "django_site"
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
HOSTILE = "<script>alert(1)</script>"

pytestmark = pytest.mark.slow


class Browser:
    """Just enough of a browser: a cookie jar, form posts, redirects not followed."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), self._NoRedirect
        )

    def request(self, path: str, form: dict[str, str] | None = None) -> tuple[int, Any, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            with self.opener.open(self.base + path, data=data, timeout=15) as response:
                return response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.headers, error.read().decode()


def site_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PTLSITE_DB": str(tmp_path / "site.sqlite3"),
        "PTLSITE_DEBUG": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # pytest-django exported the suite's settings module; children use the site's.
        "DJANGO_SETTINGS_MODULE": "ptlsite.settings",
    }


def manage(site: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=site,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def runserver(site: Path, env: dict[str, str], *options: str) -> Any:
    return run_process_server(
        [sys.executable, "manage.py", "runserver", *options, "127.0.0.1:{port}"],
        cwd=site,
        env=env,
        ready_path="/",
    )


@pytest.fixture
def migrated(tmp_path: Path) -> dict[str, str]:
    env = site_env(tmp_path)
    result = manage(SITE, env, "migrate", "--noinput")
    assert result.returncode == 0, result.stdout + result.stderr
    return env


def test_djangos_own_test_runner_passes() -> None:
    # The test database is in memory: PTLSITE_DB is never touched.
    result = manage(SITE, site_env(Path("/nonexistent")), "test", "--noinput", "notes")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r"Ran [1-9]\d* tests", output) and "OK" in output


def test_runserver_end_to_end(migrated: dict[str, str]) -> None:
    with runserver(SITE, migrated, "--noreload") as base:
        browser = Browser(base)
        status, _headers, page = browser.request("/")
        assert status == 200 and "<h1>Notes</h1>" in page
        token = TOKEN.search(page).group(1)
        note = {"title": "XSS attempt", "text": HOSTILE}

        status, _headers, page = browser.request("/", note)
        assert status == 403 and "CSRF" in page

        status, headers, _page = browser.request("/", {**note, "csrfmiddlewaretoken": token})
        assert status == 302
        detail = headers["Location"]
        assert re.fullmatch(r"/\d+/", detail)

        status, _headers, page = browser.request(detail)
        assert status == 200
        assert "<h1>XSS attempt</h1>" in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert HOSTILE not in page
        assert "Saved “XSS attempt”." in page

        status, _headers, page = browser.request("/")
        assert f'<a href="{detail}">XSS attempt</a>' in page
        assert "Saved" not in page  # messages are shown once

        status, _headers, page = browser.request("/admin/login/")
        assert status == 200 and "csrfmiddlewaretoken" in page and "Django" in page
        assert browser.request("/static/admin/css/base.css")[0] == 200


MOUNTED = """
import sys
from werkzeug.exceptions import NotFound
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.serving import run_simple
sys.path.insert(0, {site!r})
import ptlsite
ptlsite.setup_db()
from ptlsite.wsgi import application
app = DispatcherMiddleware(NotFound(), {{"/django": application}})
run_simple("127.0.0.1", int(sys.argv[1]), app)
"""


def test_mounted_under_a_prefix(tmp_path: Path) -> None:
    script = MOUNTED.format(site=str(SITE))
    env = site_env(tmp_path)
    with run_process_server(
        [sys.executable, "-c", script, "{port}"], env=env, ready_path="/django/"
    ) as base:
        browser = Browser(base)
        status, _headers, page = browser.request("/django/")
        assert status == 200
        assert '<a href="/django/">Notes</a>' in page
        assert '<a href="/django/admin/login/?next=%2Fdjango%2F">Log in</a>' in page
        assert '<link rel="icon" href="/django/favicon.svg"' in page
        assert 'action="/django/"' in page
        token = TOKEN.search(page).group(1)
        form = {"title": "t", "text": "x", "csrfmiddlewaretoken": token}
        status, headers, _page = browser.request("/django/", form)
        assert status == 302 and re.fullmatch(r"/django/\d+/", headers["Location"])
        status, _headers, page = browser.request("/django/admin/login/")
        assert status == 200 and "/django/static/admin/css/" in page
        assert browser.request("/django/static/admin/css/base.css")[0] == 200


def test_runserver_picks_up_template_edits(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite3"))
    env = site_env(tmp_path)
    assert manage(site, env, "migrate", "--noinput").returncode == 0
    # The layout sits in DIRS, which Django's own template autoreloading does not cover.
    layout = site / "templates" / "layout.ptl"
    with runserver(site, env) as base:  # with Django's autoreloader
        assert "<nav>" in Browser(base).request("/")[2]
        layout.write_text(layout.read_text().replace("<nav>", "<nav id=edited>"))
        deadline = time.monotonic() + 20
        page = ""
        while time.monotonic() < deadline and "<nav id=edited>" not in page:
            time.sleep(0.2)
            try:
                page = Browser(base).request("/")[2]
            except OSError:
                page = ""  # between two server processes, were it to restart
        assert "<nav id=edited>" in page and "<h1>Notes</h1>" in page
