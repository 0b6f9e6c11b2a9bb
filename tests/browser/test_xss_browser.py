"""The XSS corpus in a real browser: headless Chromium must run none of it.

A small WSGI app renders vectors taken from the query string (``?v=...&v=...``)
in one context per page: the five PTL template contexts of
tests/escaping/test_xss_strings.py, URLs through ``safe_url`` and ``attrs``, and data
through ``json_script``.  tests/support/browser.py loads each page with hooks on
alert/confirm/prompt and a ``window.__xss`` marker, provokes every event
handler, and reports any execution.

Vectors go through in batches, to keep the run short; a breakout could then
hide the vectors after it, so every page is also read back from the browser's
DOM, where each vector must be exactly the text or attribute value it was
meant to be.  Before trusting a clean result, the harness must flag the same
vectors rendered *without* escaping.

Needs playwright (pip) and chromium (apt); skipped with the reason otherwise.
"""

from __future__ import annotations

import http.cookiejar
import importlib.util
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import pytest
from browser import XSSBrowser, unavailable
from servers import fetch, run_process_server, serve_in_thread
from xss_cases import CONTEXTS, CONTEXTUAL, VECTORS, contextual_renderers, ptl_renderers

from ptl_wsgi.beyond_escaping import UNSAFE_URL, attrs, is_safe_url, json_script, safe_url
from ptl_wsgi.escapers import ESCAPERS, UNSAFE_CSS
from ptl_wsgi.html import htmlescape, htmltext

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(unavailable() is not None, reason=str(unavailable())),
]

BATCH = 32
BATCHES = [VECTORS[i : i + BATCH] for i in range(0, len(VECTORS), BATCH)]


def url_block(vector: str) -> htmltext:
    return htmltext(
        '<div class="url"><a class="href" href="%s">link</a>'
        '<form action="%s"><button formaction="%s">go</button></form>'
        '<p%s>attrs</p><a class="attrs"%s>attrs link</a></div>'
    ) % (
        safe_url(vector),
        safe_url(vector),
        safe_url(vector, allow_data_images=True),
        attrs({"title": vector, "class": vector, "data-v": vector}),
        attrs({"href": vector, "title": vector}),
    )


def json_value(vector: str) -> dict[str, Any]:
    return {"v": vector, "list": [vector, "</script>" + vector]}


def raw(context: str) -> Callable[[str], str]:
    """The output of a template that forgot to escape: the harness must flag it."""
    before, after = {**CONTEXTS, **CONTEXTUAL}[context]
    return lambda vector: before + vector + after


def html_escaped(context: str) -> Callable[[str], str]:
    """What plain HTML escaping (contextual escaping off) makes of a value there."""
    before, after = CONTEXTUAL[context]
    return lambda vector: before + str(htmlescape(vector)) + after


RENDERERS: dict[str, Callable[[str], Any]] = {
    **ptl_renderers(),
    **contextual_renderers(),
    "url": url_block,
    **{f"raw_{context}": raw(context) for context in [*CONTEXTS, *CONTEXTUAL]},
    **{f"html_{context}": html_escaped(context) for context in CONTEXTUAL},
}


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    page = environ["PATH_INFO"].strip("/")
    vectors = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True).get("v", [])
    if page == "json":
        content = "".join(
            str(json_script(json_value(v), f"data{i}")) for i, v in enumerate(vectors)
        )
    elif page in RENDERERS:
        content = "".join(str(RENDERERS[page](v)) for v in vectors)
    else:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    head = "<script>window.__v = []</script>"
    if page.endswith("title"):
        document = f"<!DOCTYPE html><html><head>{head}{content}</head><body></body></html>"
    else:
        document = f"<!DOCTYPE html><html><head>{head}</head><body>{content}</body></html>"
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
    return [document.encode()]


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_in_thread(app) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[XSSBrowser]:
    with XSSBrowser() as chromium:
        yield chromium


def page_url(base: str, page: str, vectors: list[str]) -> str:
    return f"{base}/{page}?{urlencode([('v', v) for v in vectors])}"


# What the browser's DOM holds for each context, in document order.
READ_BACK = {
    "element": "[...document.querySelectorAll('[id=ctx]')].map(e => e.textContent)",
    "double_quoted": "[...document.querySelectorAll('[id=ctx]')].map(e => e.title)",
    "single_quoted": "[...document.querySelectorAll('[id=ctx]')].map(e => e.title)",
    "title": "[...document.querySelectorAll('[id=ctx]')].map(e => e.textContent)",
    "textarea": "[...document.querySelectorAll('[id=ctx]')].map(e => e.value)",
}
# Every element the browser parsed, so that a stray one shows up.
TAGS = "[...document.querySelectorAll('body *, head *')].map(e => e.localName)"
HEAD_TAGS = ["script"]  # window.__v = []


def expected_tags(context: str, count: int) -> list[str]:
    before = CONTEXTS[context][0]
    return HEAD_TAGS + [tag for tag in ("div", "title", "textarea") if f"<{tag} " in before] * count


# Vectors that run when inserted raw, one or more per way the harness detects
# execution: dialog hooks, the marker, provoked events, script URLs, frames.
MUST_FLAG = {
    "element": [
        "<script>alert(1)</script>",
        "<script>confirm(1)</script>",
        "<script>prompt(1)</script>",
        "<script>window.__xss=1</script>",
        "<img src=x onerror=alert(1)>",
        "<svg onload=alert(1)>",
        "<input onfocus=alert(1) autofocus>",
        "<div onmouseover=alert(1)>hover</div>",
        "<div onclick=alert(1)>click</div>",
        "<details open ontoggle=alert(1)>",
        "<a href=javascript:alert(1)>x</a>",
        "<iframe src=javascript:alert(1)>",
        '<iframe srcdoc="<script>parent.alert(1)</script>"></iframe>',
        '<svg><a xlink:href="javascript:alert(1)"><text y=20>x</text></a></svg>',
        "<svg><animate onbegin=alert(1) attributeName=x dur=1s>",
        "<form><button formaction=javascript:alert(1)>x</button></form>",
    ],
    "double_quoted": ['" onmouseover="alert(1)', '"><script>alert(1)</script>'],
    "single_quoted": ["' onmouseover='alert(1)", "'><img src=x onerror=alert(1)>"],
    "title": ["</title><script>alert(1)</script>"],
    "textarea": ["</textarea><script>alert(1)</script>"],
    "href": ["javascript:alert(1)"],
    "src": ["javascript:alert(1)"],
    "unquoted": ["x onmouseover=alert(1)"],
    "js_double": ['");alert(1);//'],
    "js_single": ["');alert(1);//"],
    "js_template": ["${alert(1)}"],
    "js_expression": ["alert(1)"],
    "onclick": ["'+alert(1)+'"],
    "comment": ["--><script>alert(1)</script>"],
    "srcdoc": ["<script>parent.alert(1)</script>"],
    "svg_title_href": ["javascript:alert(1)"],
}


@pytest.mark.parametrize(
    ("context", "vector"),
    [(context, vector) for context, vectors in MUST_FLAG.items() for vector in vectors],
)
def test_harness_flags_unescaped_output(
    browser: XSSBrowser, site: str, context: str, vector: str
) -> None:
    assert browser.visit(page_url(site, f"raw_{context}", [vector])), "execution not detected"


def test_read_back_catches_a_silent_breakout(browser: XSSBrowser, site: str) -> None:
    # Runs nothing, but swallows the vector after it: the DOM check must notice.
    vectors = ["</textarea><textarea>", "<script>alert(1)</script>"]
    assert browser.visit(page_url(site, "raw_textarea", vectors)) == []
    assert browser.evaluate(READ_BACK["textarea"]) != vectors


def test_harness_passes_a_clean_page(browser: XSSBrowser, site: str) -> None:
    assert browser.visit(page_url(site, "raw_element", ["<b>plain</b> text"])) == []


@pytest.mark.parametrize("context", list(CONTEXTS))
def test_no_vector_executes_in_templates(browser: XSSBrowser, site: str, context: str) -> None:
    executed, garbled = {}, []
    for batch in BATCHES:
        hits = browser.visit(page_url(site, context, batch))
        if hits:
            executed[repr(batch)] = hits
        elif browser.evaluate(READ_BACK[context]) != batch or browser.evaluate(
            TAGS
        ) != expected_tags(context, len(batch)):
            garbled.append(batch)
    assert not executed, json.dumps(executed, indent=1)
    assert not garbled, garbled


# -- contextual escaping: every other place a value can land, plain template code ----------

CTX = "[...document.querySelectorAll('.ctx')]"
CONTEXTUAL_READ_BACK = {
    "href": f"{CTX}.map(e => e.getAttribute('href'))",
    "src": f"{CTX}.map(e => e.getAttribute('src'))",
    "srcset": f"{CTX}.map(e => e.getAttribute('srcset'))",
    "unquoted": f"{CTX}.map(e => e.title)",
    "js_double": "window.__v",
    "js_single": "window.__v",
    "js_template": "window.__v",
    "js_expression": "window.__v",
    "onclick": f"{CTX}.map(e => e.onclick())",
    "style_attribute": f"{CTX}.map(e => e.getAttribute('style'))",
    "style_element": f"{CTX}.map(e => e.textContent)",
    "comment": f"{CTX}.map(e => e.childNodes.length === 1 && e.firstChild.nodeType === 8"
    " ? e.firstChild.data : null)",
    "srcdoc": f"{CTX}.map(e => e.getAttribute('srcdoc'))",
    "svg_title_href": "[...document.querySelectorAll('.ctx a')].map(e => e.getAttribute('href'))",
}
CONTEXTUAL_TAGS = {
    "href": ["a"],
    "src": ["img"],
    "srcset": ["img"],
    "unquoted": ["div"],
    "js_double": ["script"],
    "js_single": ["script"],
    "js_template": ["script"],
    "js_expression": ["script"],
    "onclick": ["button"],
    "style_attribute": ["div"],
    "style_element": ["style"],
    "comment": ["div"],
    "srcdoc": ["iframe"],
    "svg_title_href": ["svg", "title", "a"],
}


def decoded(escaper: str, vector: str) -> str:
    """The escaper's output as the browser's HTML parser decodes it in an attribute."""
    import html

    return html.unescape(str(ESCAPERS[escaper](vector)))


def arrives_as(context: str, vector: str) -> Any:
    """What the page must read back for *vector*: the value itself where the context carries it."""
    if context in ("href", "src", "svg_title_href"):
        return decoded("url_q", vector)  # the scheme checked, the rest percent-encoded
    if context == "srcset":
        return decoded("srcset_q", vector)
    if context == "style_attribute":
        return "color: " + decoded("css_q", vector)  # one safe token, or the marker
    if context == "style_element":
        return "#none { color: " + str(ESCAPERS["css"](vector)) + " }"
    if context == "comment":
        return " " + str(ESCAPERS["comment"](vector)) + " "  # a comment decodes nothing
    if context == "srcdoc":
        return "<p>" + str(htmlescape(vector)) + "</p>"  # the inner document's text
    return vector  # unquoted attribute, JS strings and expressions, the handler's string


@pytest.mark.parametrize(
    "context", ["js_expression", "onclick", "href", "unquoted", "svg_title_href"]
)
def test_html_escaping_alone_fails_where_contextual_escaping_is_needed(
    browser: XSSBrowser, site: str, context: str
) -> None:
    # The hostile test the contextual one must pass: HTML escaping alone runs script here.
    vector = MUST_FLAG[context][0]
    assert browser.visit(page_url(site, f"html_{context}", [vector])), "no execution"


def test_html_escaping_alone_garbles_a_js_string(browser: XSSBrowser, site: str) -> None:
    # In a <script>, entities are not decoded: the string would hold "&quot;".
    assert browser.visit(page_url(site, "html_js_double", ['say "hi"'])) == []
    assert browser.evaluate("window.__v") == ["say &quot;hi&quot;"]


@pytest.mark.parametrize("context", list(CONTEXTUAL))
def test_no_vector_executes_in_any_context(browser: XSSBrowser, site: str, context: str) -> None:
    executed, garbled = {}, []
    for batch in BATCHES:
        hits = browser.visit(page_url(site, context, batch))
        if hits:
            executed[repr(batch)] = hits
            continue
        read = browser.evaluate(CONTEXTUAL_READ_BACK[context])
        tags = browser.evaluate(TAGS)
        if read != [arrives_as(context, v) for v in batch] or tags != HEAD_TAGS + CONTEXTUAL_TAGS[
            context
        ] * len(batch):
            garbled.append((batch, read))
    assert not executed, json.dumps(executed, indent=1)
    assert not garbled, garbled[:2]


def test_contextual_markers_are_what_the_escapers_say() -> None:
    assert decoded("url_q", "javascript:alert(1)") == UNSAFE_URL
    assert str(ESCAPERS["css"]("x;y")) == UNSAFE_CSS


def test_no_vector_executes_as_a_url(browser: XSSBrowser, site: str) -> None:
    executed, garbled = {}, []
    for batch in BATCHES:
        hits = browser.visit(page_url(site, "url", batch))
        if hits:
            executed[repr(batch)] = hits
            continue
        hrefs = browser.evaluate(
            "[...document.querySelectorAll('a.href')].map(a => a.getAttribute('href'))"
        )
        titles = browser.evaluate("[...document.querySelectorAll('a.attrs')].map(a => a.title)")
        if hrefs != [v if is_safe_url(v) else UNSAFE_URL for v in batch] or titles != batch:
            garbled.append(batch)
    assert not executed, json.dumps(executed, indent=1)
    assert not garbled, garbled


def test_json_script_executes_nothing_and_reads_back(browser: XSSBrowser, site: str) -> None:
    executed, garbled = {}, []
    for batch in BATCHES:
        hits = browser.visit(page_url(site, "json", batch))
        if hits:
            executed[repr(batch)] = hits
            continue
        parsed = browser.evaluate(
            f"[...Array({len(batch)}).keys()].map("
            "i => JSON.parse(document.getElementById('data' + i).textContent))"
        )
        if parsed != [json_value(v) for v in batch]:
            garbled.append(batch)
    assert not executed, json.dumps(executed, indent=1)
    assert not garbled, garbled


# -- the example sites ---------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def chunks(vectors: list[str], limit: int, separator: str) -> list[list[str]]:
    """*vectors* in groups whose joined length stays within *limit*."""
    groups: list[list[str]] = [[]]
    for vector in vectors:
        if groups[-1] and len(separator.join([*groups[-1], vector])) > limit:
            groups.append([])
        groups[-1].append(vector)
    return groups


@pytest.fixture(scope="module")
def wsgi_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    spec = importlib.util.spec_from_file_location(
        "_xss_wsgi_site", ROOT / "example_sites" / "wsgi_app" / "app.py"
    )
    # The example sites are part of the repository: missing is a failure.
    assert spec is not None and spec.loader is not None, "example_sites/wsgi_app/app.py"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    database = tmp_path_factory.mktemp("wsgi_site") / "notes.sqlite3"
    with serve_in_thread(module.make_app(database, debug=False)) as base:
        yield base


def post(url: str, fields: dict[str, str]) -> tuple[int, Any, bytes]:
    return fetch(url, data=urlencode(fields).encode(), method="POST")


def test_wsgi_site_notes(browser: XSSBrowser, wsgi_site: str) -> None:
    """Every vector posted as a note title (form post), and in batches as note bodies."""
    titles = [v for v in VECTORS if v.strip() and len(v) <= 200]
    for title in titles:
        status, headers, _ = post(wsgi_site + "/notes/add", {"title": title, "body": ""})
        assert status == 303, title
    bodies = chunks([v for v in VECTORS if "\n" not in v], 4000, "\n\n")
    note_pages = []
    for body in bodies:
        status, headers, _ = post(
            wsgi_site + "/notes/add", {"title": body[0], "body": "\n\n".join(body)}
        )
        assert status == 303
        note_pages.append((wsgi_site + headers["Location"].removeprefix(wsgi_site), body))

    assert browser.visit(wsgi_site + "/notes/") == []
    listed = browser.evaluate("[...document.querySelectorAll('ul.notes a')].map(a => a.text)")
    assert sorted(listed) == sorted(["Welcome", *titles, *(body[0] for body in bodies)])
    assert browser.visit(wsgi_site + "/") == []
    for url, body in note_pages:
        assert browser.visit(url) == [], url
        paragraphs = browser.evaluate(
            "[...document.querySelectorAll('article p:not(.meta)')].map(p => p.textContent)"
        )
        assert paragraphs == body
        assert browser.evaluate("document.title").startswith(body[0].strip()[:20].strip())


def test_wsgi_site_form_errors(browser: XSSBrowser, wsgi_site: str) -> None:
    """The form shown back after a refused post: the vectors in an input value and a textarea."""
    for body in chunks(VECTORS, 4000, "\n\n"):
        too_long = body[0] + "x" * 200
        status, _, page = post(
            wsgi_site + "/notes/add", {"title": too_long, "body": "\n\n".join(body)}
        )
        assert status == 400
        assert browser.visit_response(wsgi_site + "/notes/add", page) == []
        assert browser.evaluate("document.querySelector('input[name=title]').value") == too_long
        shown = browser.evaluate("document.querySelector('textarea[name=body]').value")
        assert shown == "\n\n".join(body)


def test_wsgi_site_paths(browser: XSSBrowser, wsgi_site: str) -> None:
    """Vectors as path components, in the 404 pages and the page that shows the path."""
    executed = {}
    for vector in VECTORS[::10]:
        for url in (
            f"{wsgi_site}/notes/{quote(vector, safe='')}/",
            f"{wsgi_site}/about/{quote(vector, safe='')}",
        ):
            hits = browser.visit(url)
            if hits:
                executed[url] = hits
    assert not executed, json.dumps(executed, indent=1)


@pytest.fixture(scope="module")
def flask_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    app = ROOT / "example_sites" / "flask_app" / "app.py"
    assert app.exists(), "example_sites/flask_app/app.py is part of the repository"
    database = tmp_path_factory.mktemp("flask_site") / "guestbook.sqlite3"
    command = [sys.executable, str(app), "--port", "{port}", "--database", str(database)]
    with run_process_server(command, cwd=ROOT, ready_path="/") as base:
        yield base


def flask_sign(base: str, name: str, message: str) -> tuple[int, Any, bytes]:
    """Post the guestbook form with a fresh session and CSRF token, as a browser would."""
    _, headers, page = fetch(base + "/")
    cookie = headers["Set-Cookie"].split(";")[0]
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.decode()).group(1)
    fields = {"name": name, "message": message, "csrf_token": token, "sign": "1"}
    return fetch(
        base + "/",
        data=urlencode(fields).encode(),
        headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"},
    )


def plain(text: str) -> bool:
    """Whether *text* is free of the control characters that forms may refuse or replace."""
    return re.search("[\x00-\x08\x0b-\x1f\x7f]", text) is None


def test_flask_site_guestbook(browser: XSSBrowser, flask_site: str) -> None:
    """Every vector signed as a name and a message; the archive, flashes and entry pages."""
    signed, flashes = [], []
    for vector in VECTORS:
        name = vector[:80]
        status, headers, page = flask_sign(flask_site, name, vector)
        if status == 400:
            assert not plain(vector) or not name.strip(), vector
            assert browser.visit_response(flask_site + "/", page) == []
            continue
        assert status == 302, vector
        signed.append(vector)
        if len(flashes) < 20:  # the signer's next page flashes their name back
            cookie = headers["Set-Cookie"].split(";")[0]
            flashes.append(fetch(flask_site + "/", headers={"Cookie": cookie})[2])
    for page in flashes:
        assert browser.visit_response(flask_site + "/", page) == []
    assert browser.visit(flask_site + "/") == []

    assert browser.visit(flask_site + "/entries/") == []
    messages = browser.evaluate("[...document.querySelectorAll('.message')].map(m=>m.textContent)")
    assert sorted(messages) == sorted(signed)
    for entry in browser.evaluate("[...document.querySelectorAll('a')].map(a => a.href)"):
        if re.search(r"/entries/\d+$", entry) and int(entry.rsplit("/", 1)[1]) % 25 == 0:
            assert browser.visit(entry) == [], entry


def test_flask_site_form_errors_and_paths(browser: XSSBrowser, flask_site: str) -> None:
    """Refused posts shown back (the message in a textarea), and vectors as path components."""
    for batch in chunks([v for v in VECTORS if plain(v)], 1000, "\n"):
        status, _, page = flask_sign(flask_site, "", "\n".join(batch))
        assert status == 400
        assert browser.visit_response(flask_site + "/", page) == []
        shown = browser.evaluate("document.querySelector('textarea').value")
        assert shown == "\n".join(batch)
    executed = {}
    for vector in VECTORS[::10]:
        url = f"{flask_site}/entries/{quote(vector, safe='')}"
        hits = browser.visit(url)
        if hits:
            executed[url] = hits
    assert not executed, json.dumps(executed, indent=1)


@pytest.fixture(scope="module")
def django_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    site = ROOT / "example_sites" / "django_site"
    assert (site / "manage.py").exists(), "example_sites/django_site is part of the repository"
    env = {
        **os.environ,
        "PTLSITE_DB": str(tmp_path_factory.mktemp("django_site") / "site.sqlite3"),
        "PTLSITE_DEBUG": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DJANGO_SETTINGS_MODULE": "ptlsite.settings",  # not the test suite's
    }
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=site, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    command = [sys.executable, "manage.py", "runserver", "--noreload", "127.0.0.1:{port}"]
    with run_process_server(command, cwd=site, env=env, ready_path="/") as base:
        yield base


class FormClient:
    """Posts forms with a cookie jar and the CSRF token of the page, redirects not followed."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect
        )

    def request(self, path: str, form: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
        data = None
        if form is not None:
            _, _, page = self.request(path)
            token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
            assert token, page[:500]
            data = urlencode({**form, "csrfmiddlewaretoken": token.group(1).decode()}).encode()
        try:
            with self.opener.open(self.base + path, data=data, timeout=15) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.headers, error.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_django_site_notes(browser: XSSBrowser, django_site: str) -> None:
    """Every vector posted as a note (title and text): the list, the flashed message, details."""
    client = FormClient(django_site)
    saved, details = [], []
    for vector in VECTORS:
        status, headers, page = client.request("/", {"title": vector[:200], "text": vector})
        if status != 302:  # refused: shown back with the errors
            assert not plain(vector) or not vector.strip(), (status, vector)
            assert browser.visit_response(django_site + "/", page) == []
            continue
        saved.append(vector[:200])
        details.append(headers["Location"])
        if len(details) % 10 == 1:  # the next page flashes "Saved “title”."
            _, _, flashed = client.request(headers["Location"])
            assert browser.visit_response(django_site + headers["Location"], flashed) == []
    assert browser.visit(django_site + "/") == []
    titles = browser.evaluate("[...document.querySelectorAll('a')].map(a => a.textContent)")
    assert set(saved) <= set(titles)
    for detail in details[::10]:
        assert browser.visit(django_site + detail) == [], detail


def test_django_site_form_errors_and_paths(browser: XSSBrowser, django_site: str) -> None:
    """Refused posts shown back, and vectors as path components."""
    client = FormClient(django_site)
    for batch in chunks([v for v in VECTORS if plain(v)], 4000, "\n"):
        status, _, page = client.request("/", {"title": "", "text": "\n".join(batch)})
        assert status != 302
        assert browser.visit_response(django_site + "/", page) == []
        assert browser.evaluate("document.querySelector('textarea').value") == "\n".join(batch)
    executed = {}
    for vector in VECTORS[::10]:
        url = f"{django_site}/{quote(vector, safe='')}/"
        hits = browser.visit(url)
        if hits:
            executed[url] = hits
    assert not executed, json.dumps(executed, indent=1)
