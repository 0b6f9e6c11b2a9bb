"""One response policy, whoever answered: the four findings of the integrations' review.

1. A CR or LF in a header value from a view (or ``publish.redirect``) is the documented
   400, not a 500 raised by werkzeug before ptl_wsgi's own check.
2. An id too large for SQLite, or for ``int()``, is a 404 on every example site.
3. A view that raises under a query string that is not UTF-8 is logged and answered 500.
4. ``Middleware(app)`` and ``CSP(app)`` hold a wrapped app's response to the header policy
   as they hold a view's.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from urllib.parse import quote
from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

import pytest
from servers import fetch, serve_in_thread
from werkzeug.test import Client

from ptl_wsgi.publish import Directory, Publisher, redirect
from ptl_wsgi.wsgi import CSP, Middleware, Response, view

ROOT = Path(__file__).resolve().parents[2]
SMUGGLED = "/\r\nSet-Cookie: session=attacker"
BREAKS = ["\r", "\n", "\r\n", "\x00", "\x0b", "\x85", "\u2028"]


def get(app, path="/", **kwargs):
    return Client(validator(app)).open(path, buffered=True, **kwargs)


# -- 1. a library's own header check must not turn a hostile value into a 500 ---------------


@pytest.mark.parametrize("char", BREAKS)
def test_a_header_in_a_views_tuple_is_a_400(char, caplog):
    app = view(lambda request: ("ok", 200, {"X-Next": request.args["next"]}))
    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        response = get(app, "/?next=" + quote(f"/a{char}Set-Cookie: s=1"))
    assert response.status_code == 400
    assert "Set-Cookie" not in response.headers
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("char", BREAKS)
def test_publish_redirect_with_a_hostile_location_is_a_400(char, caplog):
    class Root(Directory):
        _q_exports = ["go"]

        def go(self):
            from ptl_wsgi.publish import get_request

            return redirect(get_request().args["next"])

    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        response = get(Publisher(Root()), "/go?next=" + quote(f"/a{char}Set-Cookie: s=1"))
    assert response.status_code == 400
    assert "Set-Cookie" not in response.headers
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "build",
    [
        lambda value: Response("x", headers={"X-Next": value}),
        lambda value: Response("x", headers=[("X-Next", value)]),
    ],
)
def test_werkzeug_refusing_a_header_inside_the_view_is_a_400(build, caplog):
    # The same class: werkzeug's Headers raises ValueError for CR/LF before we see it.
    app = view(lambda request: build(request.args["next"]))
    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        response = get(app, "/?next=" + quote(SMUGGLED))
    assert response.status_code == 400
    assert "Set-Cookie" not in response.headers
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_header_set_on_a_response_inside_the_view_is_a_400():
    def page(request):
        response = Response("x")
        response.headers["Location"] = request.args["next"]
        return response

    response = get(view(page), "/?next=" + quote(SMUGGLED))
    assert response.status_code == 400


def test_other_value_errors_in_a_view_stay_500s(caplog):
    def page(request):
        raise ValueError("Header values must not contain newline characters.")

    with caplog.at_level(logging.ERROR, "ptl_wsgi"):
        response = get(view(page))
    assert response.status_code == 500  # our own ValueError, not werkzeug's header check
    assert caplog.records


def test_hostile_header_through_a_real_server_is_a_400():
    app = view(lambda request: ("ok", 200, {"X-Next": request.args["next"]}))
    with serve_in_thread(validator(app)) as base:
        status, headers, _ = fetch(base + "/?next=" + quote(SMUGGLED))
        assert status == 400
        assert "Set-Cookie" not in headers
        status, headers, body = fetch(base + "/?next=/fine")
        assert (status, headers["X-Next"], body) == (200, "/fine", b"ok")


# -- 2. ids too large for the database or for int() ----------------------------------------


def load_wsgi_site(tmp_path, monkeypatch):
    monkeypatch.setenv("PTL_WSGI_NOTES_DB", str(tmp_path / "notes.sqlite3"))
    spec = importlib.util.spec_from_file_location(
        "_wsgi_policy_app", ROOT / "example_sites" / "wsgi_app" / "app.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_app(debug=False)


HUGE_IDS = ["9223372036854775808", "99999999999999999999", "9" * 5000, "0" * 30 + "1"]


@pytest.mark.parametrize("note_id", HUGE_IDS)
def test_wsgi_site_answers_404_for_an_id_out_of_range(tmp_path, monkeypatch, note_id):
    site = load_wsgi_site(tmp_path, monkeypatch)
    assert get(site, f"/notes/{note_id}/").status_code == 404


def test_wsgi_site_largest_sqlite_id_is_still_a_lookup(tmp_path, monkeypatch):
    site = load_wsgi_site(tmp_path, monkeypatch)
    assert get(site, f"/notes/{2**63 - 1}/").status_code == 404
    assert get(site, "/notes/1/").status_code == 200


@pytest.mark.parametrize("note_id", [2**63, 10**30, -(2**70), "1", 1.5])
def test_wsgi_site_xmlrpc_get_of_an_id_out_of_range_is_a_404_fault(tmp_path, monkeypatch, note_id):
    import xmlrpc.client

    site = load_wsgi_site(tmp_path, monkeypatch)
    if isinstance(note_id, int):  # as <i8>, whatever its size: the marshaller refuses big ones
        param = f"<param><value><i8>{note_id}</i8></value></param>"
        body = f"<methodCall><methodName>notes.get</methodName><params>{param}</params>"
        body = (body + "</methodCall>").encode()
    else:
        body = xmlrpc.client.dumps((note_id,), "notes.get").encode()
    response = get(site, "/rpc", method="POST", data=body, content_type="text/xml")
    assert response.status_code == 200
    assert b"<name>faultCode</name>" in response.data
    # The note is not there (or the number is no XML-RPC integer): never an internal error.
    assert b"<int>404</int>" in response.data or b"<int>-32700</int>" in response.data


@pytest.mark.parametrize("entry_id", HUGE_IDS)
def test_flask_site_answers_404_for_an_id_out_of_range(tmp_path, monkeypatch, entry_id):
    monkeypatch.syspath_prepend(str(ROOT / "example_sites"))
    from flask_app import create_app

    app = create_app({"DATABASE": str(tmp_path / "guestbook.sqlite3"), "TESTING": True})
    response = app.test_client().get(f"/entries/{entry_id}")
    assert response.status_code == 404


# -- 3. logging a failed request whose query string is not UTF-8 ---------------------------


def test_error_under_a_non_utf8_query_string_is_logged_and_a_500(caplog):
    def page(request):
        raise RuntimeError("the real error")

    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/p\xe9", "QUERY_STRING": "q=\xff\xfe"}
    setup_testing_defaults(environ)
    statuses = []
    with caplog.at_level(logging.ERROR, "ptl_wsgi"):
        body = b"".join(view(page)(environ, lambda status, headers: statuses.append(status)))
    assert statuses == ["500 INTERNAL SERVER ERROR"]
    assert b"The server could not complete the request" in body
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "the real error" in record.exc_text
    assert "q=\\xff\\xfe" in record.getMessage()


# -- 4. one header policy for a wrapped app's responses too --------------------------------


def legacy_app(environ, start_response):
    start_response("302 Found", [("Location", "/\x85Set-Cookie: a=1"), ("Content-Length", "0")])
    return [b""]


def legacy_status_app(environ, start_response):
    start_response("200 OK\x85Set-Cookie: a=1", [("Content-Type", "text/plain")])
    return [b"secret"]


@pytest.mark.parametrize("wrap", [Middleware, CSP, lambda app: CSP(Middleware(app))])
@pytest.mark.parametrize("app", [legacy_app, legacy_status_app])
def test_a_wrapped_apps_hostile_header_is_a_400(wrap, app, caplog):
    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        response = get(wrap(app))
    assert response.status_code == 400
    assert "Location" not in response.headers
    assert b"secret" not in response.data
    assert "refused" in caplog.text


def test_a_wrapped_apps_hostile_header_through_a_real_server():
    with serve_in_thread(validator(CSP(Middleware(legacy_app)))) as base:
        status, headers, _ = fetch(base + "/")
    assert status == 400
    assert "Set-Cookie" not in headers
    assert "Location" not in headers


def test_a_wrapped_apps_good_response_passes_untouched():
    def app(environ, start_response):
        write = start_response("201 Created", [("X-A", "1"), ("Content-Type", "text/plain")])
        write(b"written ")
        return iter([b"and iterated"])

    # Not buffered: werkzeug's buffered test client drops what write() sent.
    response = Client(validator(CSP(Middleware(app)))).get("/")
    with response:
        response.get_data()
    assert response.status_code == 201
    assert response.headers["X-A"] == "1"
    assert response.data == b"written and iterated"
    assert "nonce-" in response.headers["Content-Security-Policy"]


def test_a_refused_wrapped_response_is_closed():
    closed = []

    class Body:
        def __iter__(self):
            yield b"secret"

        def close(self):
            closed.append(True)

    def app(environ, start_response):
        start_response("200 OK", [("X-Bad", "a\x00b")])
        return Body()

    response = get(Middleware(app))
    assert response.status_code == 400
    assert closed == [True]


@pytest.mark.parametrize("char", ["\x85", "\x00", "\x0b"])
def test_middleware_around_a_flask_app_holds_its_headers_to_the_policy(char):
    # Flask checks only CR and LF (raising, a 500): the rest would reach the client.
    from flask import Flask, request

    app = Flask(__name__)

    @app.get("/")
    def page():
        return ("ok", 200, {"X-Next": request.args["next"]})

    app.wsgi_app = Middleware(app.wsgi_app)
    response = app.test_client().get("/", query_string={"next": f"/a{char}Set-Cookie: s=1"})
    assert response.status_code == 400
    assert "X-Next" not in response.headers


@pytest.mark.parametrize("char", ["\x85", "\x00", "\x0b", "\x1c"])
def test_djangos_csp_middleware_holds_a_views_headers_to_the_policy(char, caplog):
    # Django refuses CR and LF itself (and MIME-encodes what is beyond Latin-1); the rest
    # of the C0 and C1 controls would reach the client past CSPMiddleware.
    from django.http import HttpResponse
    from django.test import RequestFactory

    from ptl_wsgi.contrib.django import CSPMiddleware

    def page(request):
        response = HttpResponse("secret")
        response["X-Next"] = request.GET["next"]
        return response

    request = RequestFactory().get("/p", {"next": f"/a{char}Set-Cookie: s=1"})
    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        response = CSPMiddleware(page)(request)
    assert response.status_code == 400
    assert "X-Next" not in response.headers
    assert b"secret" not in response.content
    assert "nonce-" in response.headers["Content-Security-Policy"]
    assert "refused GET /p?next=" in caplog.text
    fine = CSPMiddleware(page)(RequestFactory().get("/p", {"next": "/ok"}))
    assert (fine.status_code, fine.headers["X-Next"]) == (200, "/ok")


def test_a_wrapped_generator_app_that_starts_late_is_refused_too():
    # start_response called at the first step of the body, as a generator app does.
    steps = []

    def app(environ, start_response):
        start_response("200 OK", [("X-Bad", "a\x85b")])
        steps.append("started")
        yield b"secret"
        steps.append("went on")
        yield b"more"

    response = get(CSP(Middleware(app)))
    assert response.status_code == 400
    assert b"secret" not in response.data and b"more" not in response.data
    assert steps == ["started"]
    assert "nonce-" in response.headers["Content-Security-Policy"]


# -- a view's header values as werkzeug takes them: checked as the strings it will send -------


@pytest.mark.parametrize(
    "headers",
    [{"X-Count": 5}, [("X-Count", 5)], {"Link": ["</a>; rel=preload", "</b>; rel=preload"]}],
    ids=["int-in-dict", "int-in-list", "list-of-values"],
)
def test_a_views_header_values_that_are_not_str_are_sent_as_werkzeug_sends_them(headers):
    app = view(lambda request: ("ok", 200, headers))
    response = get(app)
    assert response.status_code == 200
    if "Link" in headers:
        assert response.headers.getlist("Link") == headers["Link"]
    else:
        assert response.headers["X-Count"] == "5"


@pytest.mark.parametrize("char", BREAKS)
def test_a_hostile_value_in_a_views_header_list_is_a_400(char):
    def page(request):
        return "ok", 200, {"Link": ["</a>", request.args["next"]]}

    response = get(view(page), "/?next=" + quote(f"/a{char}Set-Cookie: s=1"))
    assert response.status_code == 400
    assert "Set-Cookie" not in response.headers
