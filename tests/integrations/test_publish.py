"""ptl_wsgi.publish: Directory traversal, and one publisher serving many threads."""

from __future__ import annotations

import html
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from wsgiref.validate import validator

import pytest
from servers import fetch, serve_in_thread
from werkzeug.test import Client

from ptl_wsgi.html import htmltext
from ptl_wsgi.publish import (
    AccessError,
    Directory,
    Publisher,
    get_publisher,
    get_request,
    redirect,
)


def get(app, path="/", **kwargs):
    return Client(validator(app)).open(path, buffered=True, **kwargs)


class Item(Directory):
    _q_exports = ["", "edit"]

    def __init__(self, name):
        self.name = name

    def _q_index(self):
        return htmltext("<h1>%s</h1>") % self.name

    def edit(self):
        return f"edit {self.name}"


class Items(Directory):
    def _q_index(self):  # "" is published without being listed
        return "all items"

    def _q_lookup(self, component):
        if component.startswith("item-"):
            return Item(component[5:])
        return None


class Private(Directory):
    _q_exports = ["", "secret"]

    def _q_access(self):
        if get_request().args.get("key") != "k":
            raise AccessError()

    def _q_index(self):
        return "inside"

    def secret(self):
        return "the secret"


class Takeover(Directory):
    def _q_traverse(self, path):
        return "/".join(path)


class Root(Directory):
    _q_exports = [
        "",
        "items",
        "private",
        "raw",
        "takeover",
        "go",
        "whoami",
        ("robots.txt", "robots"),
        "not_callable",
    ]
    items = Items()
    private = Private()
    takeover = Takeover()
    not_callable = "a plain value"

    def _q_index(self):
        return htmltext("<p>home</p>")

    def raw(self):
        return b"bytes"

    def robots(self):
        return "User-agent: *\n"

    def go(self):
        return redirect("/items/")

    def whoami(self):
        return f"{type(get_publisher()).__name__}:{get_request().path}"

    def hidden(self):
        return "never published"


@pytest.fixture
def app():
    return Publisher(Root(), debug=False)


def test_index_and_exports(app):
    response = get(app, "/")
    assert (response.status_code, response.data) == (200, b"<p>home</p>")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert get(app, "/raw").data == b"bytes"
    assert get(app, "/robots.txt").data == b"User-agent: *\n"
    assert get(app, "/not_callable").data == b"a plain value"
    assert get(app, "/whoami").data == b"Publisher:/whoami"


def test_unknown_and_unexported_are_404(app):
    for path in ("/nope", "/hidden", "/_q_index", "/robots", "/items/other", "/raw/more"):
        assert get(app, path).status_code == 404, path


def test_lookup_and_nested_directories(app):
    assert get(app, "/items/").data == b"all items"
    assert get(app, "/items/item-<x>/").data == b"<h1>&lt;x&gt;</h1>"
    assert get(app, "/items/item-a/edit").data == b"edit a"
    assert get(app, "/items/item-a/edit/").status_code == 404


def test_trailing_slash_redirect(app):
    response = get(app, "/items?page=2")
    assert response.status_code == 301
    assert response.headers["Location"] == "/items/?page=2"
    response = get(app, "/items/item-a b")
    assert response.headers["Location"] == "/items/item-a%20b/"
    assert get(app, "/items", method="POST").status_code == 308


def test_urls_respect_script_name(app):
    response = get(app, "/items", environ_overrides={"SCRIPT_NAME": "/mount"})
    assert response.headers["Location"] == "/mount/items/"
    response = get(app, "/go", environ_overrides={"SCRIPT_NAME": "/mount"})
    assert (response.status_code, response.headers["Location"]) == (302, "/mount/items/")


def test_access_hook(app):
    assert get(app, "/private/").status_code == 403
    assert get(app, "/private/secret").status_code == 403
    assert get(app, "/private/secret?key=k").data == b"the secret"


def test_traverse_takeover(app):
    assert get(app, "/takeover/a/b/c").data == b"a/b/c"


def test_errors_in_methods_are_500s():
    class Broken(Directory):
        def _q_index(self):
            raise RuntimeError("internal detail")

    response = get(Publisher(Broken(), debug=False))
    assert response.status_code == 500
    assert b"internal detail" not in response.data
    assert b"internal detail" in get(Publisher(Broken(), debug=True)).data


def test_get_publisher_outside_a_request():
    with pytest.raises(RuntimeError):
        get_publisher()


class Echo(Directory):
    """Answers /<tag>/ with the tag, the query and the publisher's name, after a pause.

    The pause comes between reading the request once and reading it again, so
    overlapping requests would mix up if the request were shared state.
    """

    def __init__(self, label):
        self.label = label
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def _q_lookup(self, component):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            before = get_request().args["n"]
            time.sleep(0.01)
            request = get_request()
            return json.dumps(
                {
                    "tag": component,
                    "n": before,
                    "n_again": request.args["n"],
                    "path": request.path,
                    "publisher": get_publisher().root.label,
                }
            )
        finally:
            with self.lock:
                self.active -= 1


def test_many_concurrent_requests_each_get_their_own_response():
    """A threaded server, two publishers in one process, 32 clients at once."""
    first, second = Echo("first"), Echo("second")
    publishers = {"first": Publisher(first), "second": Publisher(second)}

    def dispatch(environ, start_response):
        # Two publishers in one process, chosen by the first path segment.
        _, name, rest = environ["PATH_INFO"].split("/", 2)
        environ["SCRIPT_NAME"] += "/" + name
        environ["PATH_INFO"] = "/" + rest
        return publishers[name](environ, start_response)

    requests = [("first" if i % 2 else "second", f"t{i}", str(i)) for i in range(600)]

    with serve_in_thread(validator(dispatch)) as base:

        def one(job):
            name, tag, n = job
            status, _headers, body = fetch(f"{base}/{name}/{tag}?n={n}", timeout=30)
            return job, status, body

        with ThreadPoolExecutor(max_workers=32) as pool:
            results = list(pool.map(one, requests, timeout=120))

    for (name, tag, n), status, body in results:
        assert status == 200
        data = json.loads(body)
        assert data == {"tag": tag, "n": n, "n_again": n, "path": f"/{tag}", "publisher": name}
    # The requests really did overlap.
    assert first.peak > 1 and second.peak > 1


# -- PTL templates as methods ---------------------------------------------------------------

PTL_SITE = """\
from ptl_wsgi.publish import Directory, get_request


class Page(Directory):
    _q_exports = ["", "hello", "broken"]

    def _q_index [html] (self):
        "<h1>Index of %s</h1>" % get_request().path

    def hello [html] (self):
        name = get_request().args.get("name", "world")
        "<p>Hello, %s!</p>" % name

    def broken [html] (self):
        "<p>before</p>"
        self.missing_attribute  # line 16
"""


@pytest.fixture
def ptl_root(tmp_path):
    from ptl_wsgi.loader import Loader

    (tmp_path / "site.ptl").write_text(PTL_SITE)
    loader = Loader([tmp_path])
    yield loader, loader.module("site.ptl").Page()
    loader.close()


def test_ptl_template_methods(ptl_root):
    loader, root = ptl_root
    app = Publisher(root, loader=loader, debug=False)
    response = get(app, "/")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.data == b"<h1>Index of /</h1>"
    assert get(app, "/hello?name=<i>").data == b"<p>Hello, &lt;i&gt;!</p>"
    assert get(app, "/broken").status_code == 500
    assert b"missing_attribute" not in get(app, "/broken").data


def test_debug_tracebacks_show_ptl_lines(ptl_root):
    loader, root = ptl_root
    response = get(Publisher(root, loader=loader, debug=True), "/broken")
    assert response.status_code == 500
    text = html.unescape(response.data.decode())
    assert re.search(r'site\.ptl", line 16, in broken', text), text
    assert "self.missing_attribute  # line 16" in text
    assert "AttributeError" in text
