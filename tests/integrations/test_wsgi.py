"""ptl_wsgi.wsgi: views as WSGI apps, Middleware, and WSGI conformance."""

from __future__ import annotations

import io
import logging
import sys
import threading
from wsgiref.util import FileWrapper, setup_testing_defaults
from wsgiref.validate import validator

import pytest
from servers import fetch, serve_in_thread
from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.test import Client
from werkzeug.wrappers import Response

from ptl_wsgi.html import htmltext
from ptl_wsgi.wsgi import (
    LOADER_KEY,
    Middleware,
    View,
    current_loader,
    current_request,
    make_response,
    render,
    stream,
    view,
)


def get(app, path="/", **kwargs):
    """Request *path* from *app* under wsgiref.validate, fully consumed and closed."""
    return Client(validator(app)).open(path, buffered=True, **kwargs)


def environ_for(path="/", method="GET", **extra):
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": ""}
    setup_testing_defaults(environ)
    environ.update(extra)
    return environ


class StartResponse:
    def __init__(self):
        self.status = None
        self.headers = None

    def __call__(self, status, headers, exc_info=None):
        self.status, self.headers = status, headers
        return lambda data: None


# -- return values ----------------------------------------------------------------------


def test_htmltext_is_sent_as_utf8_html():
    @view
    def app(request):
        return htmltext("<p>%s \u2603</p>") % request.args["q"]

    response = get(app, "/?q=<script>")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.data == "<p>&lt;script&gt; \u2603</p>".encode()


def test_str_is_plain_text_unless_told_otherwise():
    plain = view(lambda request: "<b>")
    assert get(plain).headers["Content-Type"] == "text/plain; charset=utf-8"
    assert get(plain).data == b"<b>"
    csv = view(lambda request: "a,b\n", content_type="text/csv; charset=utf-8")
    assert get(csv).headers["Content-Type"] == "text/csv; charset=utf-8"
    told = view(lambda request: ("{}", 200, {"Content-Type": "application/json"}))
    assert get(told).headers["Content-Type"] == "application/json"


def test_a_bytearray_body_is_sent_as_bytes():
    # PEP 3333 wants bytes from the body iterable (wsgiref.validate checks it), as a stream gives.
    response = get(view(lambda r: bytearray(b"\x00\x01")))
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert response.data == b"\x00\x01"
    assert type(make_response(bytearray(b"x")).response[0]) is bytes


def test_bytes_and_responses():
    assert get(view(lambda r: b"\x00\x01")).headers["Content-Type"] == "application/octet-stream"
    assert get(view(lambda r: b"\x00\x01")).data == b"\x00\x01"
    made = Response("made", status=201, headers={"X-Made": "1"}, mimetype="text/x-made")
    response = get(view(lambda r: made))
    assert (response.status_code, response.headers["X-Made"], response.data) == (
        201,
        "1",
        b"made",
    )


@pytest.mark.parametrize(
    ("returned", "status", "header"),
    [
        (("gone", 410), 410, None),
        (("gone", "410 Gone"), 410, None),
        (("made", 201, {"X-A": "a"}), 201, "a"),
        (("made", 201, [("X-A", "a")]), 201, "a"),
        (("ok", {"X-A": "a"}), 200, "a"),
        ((htmltext("<i>x</i>"), 202, {"X-A": htmltext("a")}), 202, "a"),
    ],
)
def test_tuples(returned, status, header):
    response = get(view(lambda request: returned))
    assert response.status_code == status
    assert response.headers.get("X-A") == header
    assert response.data == str(returned[0]).encode()


def test_markup_from_other_libraries_is_html():
    class Markup:
        def __html__(self):
            return "<em>safe</em>"

    response = get(view(lambda request: Markup()))
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.data == b"<em>safe</em>"


def test_make_response_rejects_nonsense():
    with pytest.raises(TypeError):
        make_response(None)
    with pytest.raises(TypeError):
        make_response(3.5)
    with pytest.raises(TypeError):
        make_response(("a", 200, {}, "extra"))


# -- errors -------------------------------------------------------------------------------


def test_http_exceptions_become_their_responses():
    def raising(request):
        if request.path == "/405":
            raise MethodNotAllowed(valid_methods=["POST"])
        raise NotFound()

    app = view(raising)
    assert get(app, "/missing").status_code == 404
    response = get(app, "/405")
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert get(view(lambda r: NotFound())).status_code == 404


def test_unexpected_errors_are_a_500_without_internals(caplog):
    def broken(request):
        raise ValueError("secret-db-password")

    with caplog.at_level(logging.ERROR, logger="ptl_wsgi.wsgi"):
        response = get(view(broken, debug=False), "/page?x=1")
    assert response.status_code == 500
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"secret" not in response.data
    assert b"ValueError" not in response.data
    assert b"Traceback" not in response.data
    # ... but the details are in the log.
    assert "GET /page?x=1" in caplog.text
    assert "secret-db-password" in caplog.text


def test_none_is_an_error():
    assert get(view(lambda request: None, debug=False)).status_code == 500


def test_debug_shows_the_escaped_traceback():
    def broken(request):
        raise ValueError("<script>alert(1)</script>")

    response = get(view(broken, debug=True))
    assert response.status_code == 500
    text = response.data.decode()
    assert "Traceback" in text
    assert "in broken" in text
    assert "ValueError: &lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script>" not in text


def test_debug_default_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("PTL_WSGI_DEBUG", "1")
    assert View(lambda r: "").debug is True
    monkeypatch.setenv("PTL_WSGI_DEBUG", "0")
    assert View(lambda r: "").debug is False


# -- the current request ------------------------------------------------------------------


def test_current_request_inside_and_outside():
    seen = []

    @view
    def app(request):
        seen.append(current_request() is request)
        return ""

    get(app)
    assert seen == [True]
    with pytest.raises(RuntimeError):
        current_request()


def test_current_request_while_streaming_and_after():
    def gen():
        yield htmltext("<p>")
        yield current_request().args["name"]  # escaped: a str in an HTML stream
        yield htmltext("</p>")

    response = get(view(lambda request: stream(gen())), "/?name=<b>")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.data == b"<p>&lt;b&gt;</p>"
    with pytest.raises(RuntimeError):
        current_request()


# -- streaming and close() ----------------------------------------------------------------


def test_streams_lazily_and_close_reaches_the_generator():
    events = []

    def gen():
        try:
            for i in range(3):
                events.append(f"yield {i}")
                yield f"{i}\n"
        finally:
            events.append("closed")

    app = validator(view(lambda request: stream(gen(), mimetype="text/plain")))
    start = StartResponse()
    body = app(environ_for(), start)
    assert events == []  # nothing produced before the server asks
    chunks = iter(body)
    assert next(chunks) == b"0\n"
    assert events == ["yield 0"]
    body.close()
    assert events == ["yield 0", "closed"]
    assert start.status.startswith("200")
    assert "Content-Length" not in dict(start.headers)


def test_a_returned_generator_is_streamed_as_html():
    def gen():
        yield htmltext("<b>")
        yield "&"

    assert get(view(lambda request: gen())).data == b"<b>&amp;"


def test_head_sends_no_body():
    response = get(view(lambda request: htmltext("<p>x</p>")), method="HEAD")
    assert response.status_code == 200
    assert response.data == b""


def test_served_over_http_in_threads():
    app = validator(view(lambda request: htmltext("<p>%s</p>") % request.args.get("n")))
    with serve_in_thread(app) as base:
        for n in range(5):
            status, _headers, body = fetch(f"{base}/?n={n}")
            assert (status, body) == (200, f"<p>{n}</p>".encode())


# -- Middleware -----------------------------------------------------------------------------


def plain_wsgi_app(environ, start_response):
    start_response("203 Non-Authoritative Information", [("Content-Type", "x/y"), ("X-K", "v")])
    return [b"one", b"two"]


def test_middleware_passes_other_responses_through():
    wrapped = Middleware(plain_wsgi_app, views={"/hello": lambda r: htmltext("<p>hi</p>")})
    start = StartResponse()
    body = wrapped(environ_for("/other"), start)
    assert list(body) == [b"one", b"two"]
    assert start.status == "203 Non-Authoritative Information"
    assert start.headers == [("Content-Type", "x/y"), ("X-K", "v")]
    response = get(wrapped, "/other")
    assert response.data == b"onetwo"


def test_middleware_sub_views_see_their_prefix_in_script_name():
    def hello(request):
        return htmltext("<p>%s|%s|%s</p>") % (request.script_root, request.path, request.url)

    wrapped = Middleware(plain_wsgi_app, views={"/hello": hello})
    response = get(wrapped, "/hello/there?x=1")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.data == b"<p>/hello|/there|http://localhost/hello/there?x=1</p>"
    assert get(wrapped, "/hello").status_code == 200
    assert get(wrapped, "/hellothere").data == b"onetwo"
    with pytest.raises(ValueError):
        wrapped.mount("hello/", hello)


def test_middleware_gives_the_app_the_request_and_loader():
    class FakeLoader:
        def render(self, name, context):
            return htmltext("<p>%s: %s</p>") % (name, context["who"])

    def app(environ, start_response):
        assert current_loader() is environ[LOADER_KEY]
        text = render("page.ptl", who=current_request().args["who"])
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [str(text).encode()]

    response = get(Middleware(app, loader=FakeLoader()), "/?who=<me>")
    assert response.data == b"<p>page.ptl: &lt;me&gt;</p>"
    assert get(view(lambda r: render("x.ptl", who="y"), loader=FakeLoader())).data == (
        b"<p>x.ptl: y</p>"
    )
    assert get(view(lambda r: render("x.ptl"), debug=False)).status_code == 500


def test_render_takes_context_keys_named_like_its_own_parameters():
    class EchoLoader:
        def render(self, name, context):
            return htmltext("%s %s") % (name, sorted(context.items()))

    page = view(lambda r: render("x.ptl", {"context": 1}, name="<n>"), loader=EchoLoader())
    assert get(page).data == (
        b"x.ptl [(&#x27;context&#x27;, 1), (&#x27;name&#x27;, &#x27;&lt;n&gt;&#x27;)]"
    )


def test_middleware_keeps_close_and_the_request_during_iteration():
    events = []

    class Body:
        def __iter__(self):
            yield current_request().path.encode()
            yield b"!"

        def close(self):
            events.append(("closed", current_request().path))

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Body()

    response = get(Middleware(app), "/streamed")
    assert response.data == b"/streamed!"
    assert events == [("closed", "/streamed")]


def test_middleware_leaves_file_wrappers_alone():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return environ["wsgi.file_wrapper"](io.BytesIO(b"file"))

    environ = environ_for("/f", **{"wsgi.file_wrapper": FileWrapper})
    body = Middleware(app)(environ, StartResponse())
    assert isinstance(body, FileWrapper)
    body.close()


def test_middleware_is_thread_safe():
    barrier = threading.Barrier(8, timeout=10)
    results = {}

    def app(environ, start_response):
        request = current_request()
        barrier.wait()  # every thread is inside the app at once
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [current_request().args["n"].encode(), str(request is current_request()).encode()]

    wrapped = Middleware(app)

    def worker(n):
        results[n] = b"".join(wrapped(environ_for("/", QUERY_STRING=f"n={n}"), StartResponse()))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert results == {n: f"{n}True".encode() for n in range(8)}


def test_view_keeps_the_function_name():
    @view(debug=False)
    def my_page(request):
        """Doc."""
        return ""

    assert my_page.__name__ == "my_page"
    assert my_page.__doc__ == "Doc."
    assert isinstance(my_page, View)


def test_importing_ptl_wsgi_does_not_import_werkzeug():
    import subprocess

    code = "import sys, ptl_wsgi; print('werkzeug' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_middleware_with_a_real_loader_and_ptl_templates(tmp_path):
    from ptl_wsgi.loader import Loader

    (tmp_path / "page.ptl").write_text(
        "from ptl_wsgi.wsgi import current_request\n\n"
        "def render [html] (who):\n"
        '    "<p>%s asked for %s</p>" % (who, current_request().path)\n'
    )
    loader = Loader([tmp_path])
    try:

        def app(environ, start_response):
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [render("page.ptl", who="<me>").encode()]

        wrapped = Middleware(
            app, loader=loader, views={"/sub": lambda r: render("page.ptl", who=1)}
        )
        assert get(wrapped, "/x").data == b"<p>&lt;me&gt; asked for /x</p>"
        assert get(wrapped, "/sub/y").data == b"<p>1 asked for /y</p>"
    finally:
        loader.close()


def test_the_innermost_loader_wins():
    outer, inner = object(), object()
    seen = []
    inner_view = View(lambda request: seen.append(current_loader()) or "", loader=inner)
    wrapped = Middleware(plain_wsgi_app, loader=outer, views={"/v": inner_view})
    get(wrapped, "/v")
    assert seen == [inner]
