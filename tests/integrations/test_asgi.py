"""ptl_wsgi.asgi: the one header policy and CSP nonces for any ASGI application.

Bare ASGI callables, Starlette and FastAPI through their own test clients,
concurrent requests through httpx's ASGI transport, and uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys

import httpx
import pytest
from servers import fetch, run_process_server
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from ptl_wsgi.asgi import CSP, LOADER_KEY, Middleware, request_line
from ptl_wsgi.csp import CSP_NONCE_KEY, csp_nonce

BREAKS = ["\r", "\n", "\r\n", "\x00", "\x0b", "\x85", "\x7f"]
NONCE = re.compile(r"'nonce-([A-Za-z0-9_-]+)'")


def raw_app(status=200, headers=(), body=b"secret", trailers=None):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": list(headers)})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        await send({"type": "http.response.body", "body": b" more", "more_body": False})

    return app


@pytest.mark.parametrize("wrap", [Middleware, CSP, lambda app: CSP(Middleware(app))])
@pytest.mark.parametrize("char", BREAKS)
def test_a_wrapped_apps_hostile_header_value_is_a_400(wrap, char, caplog):
    value = f"/a{char}Set-Cookie: s=1".encode("latin-1")
    app = wrap(raw_app(302, [(b"location", value)]))
    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        client = TestClient(app)
        response = client.get("/", follow_redirects=False)
    assert response.status_code == 400
    assert "location" not in response.headers
    assert "set-cookie" not in response.headers
    assert b"secret" not in response.content
    assert "refused GET /" in caplog.text


@pytest.mark.parametrize(
    "start",
    [
        {"status": 200, "headers": [(b"x name", b"v")]},
        {"status": 200, "headers": [("x-str", "not bytes")]},
        {"status": 200, "headers": [(b"x-a", b"v", b"extra")]},
        {"status": 999, "headers": []},
        {"status": "200", "headers": []},
        {"status": True, "headers": []},
    ],
    ids=["name-not-a-token", "str-header", "triple", "status-999", "status-str", "status-bool"],
)
def test_a_malformed_response_start_is_a_400(start):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", **start})
        await send({"type": "http.response.body", "body": b"secret"})

    response = TestClient(Middleware(app)).get("/")
    assert response.status_code == 400
    assert b"secret" not in response.content
    assert b"not bytes" not in response.content  # the 400 never echoes a value


def test_a_good_response_passes_untouched_and_the_loader_is_in_the_scope():
    seen = {}

    async def app(scope, receive, send):
        seen["loader"] = scope.get(LOADER_KEY)
        await raw_app(201, [(b"x-a", b"v\ttab ~")])(scope, receive, send)

    loader = object()
    response = TestClient(Middleware(app, loader=loader)).get("/")
    assert response.status_code == 201
    assert response.headers["x-a"] == "v\ttab ~"
    assert response.content == b"secret more"
    assert seen["loader"] is loader


def test_trailers_are_checked_too():
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [],
                    "trailers": True})  # fmt: skip
        await send({"type": "http.response.body", "body": b"ok"})
        await send({"type": "http.response.trailers", "headers": [(b"x-t", b"a\r\nb: c")]})

    from ptl_wsgi.headers import HeaderError

    with pytest.raises(HeaderError):
        TestClient(Middleware(app)).get("/")


def test_websocket_and_lifespan_pass_through():
    async def app(scope, receive, send):
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.send", "text": str(CSP_NONCE_KEY in scope)})
            await send({"type": "websocket.close"})

    with TestClient(CSP(Middleware(app))).websocket_connect("/ws") as ws:
        assert ws.receive_text() == "False"


def drive(app, scope=None):
    """Run *app* for one request of *scope* (a GET / by default); the messages it sent."""
    sent = []
    scope = scope or {"type": "http", "method": "GET", "path": "/", "raw_path": b"/",
                      "query_string": b"", "headers": []}  # fmt: skip

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


@pytest.mark.parametrize("wrap", [Middleware, CSP], ids=["Middleware", "CSP"])
def test_headers_given_as_a_one_shot_iterable_are_checked_and_forwarded(wrap):
    # ASGI allows any iterable: listed once, so the check does not exhaust what is forwarded.
    def headers(*pairs):
        return (pair for pair in pairs)

    async def app(scope, receive, send):
        good = headers((b"content-type", b"text/html"), (b"x-frame-options", b"DENY"))
        await send({"type": "http.response.start", "status": 200, "headers": good})
        await send({"type": "http.response.body", "body": b"hi"})

    start = drive(wrap(app))[0]
    names = [name for name, _ in start["headers"]]
    assert names[:2] == [b"content-type", b"x-frame-options"]

    async def hostile(scope, receive, send):
        bad = headers((b"location", b"/\r\nSet-Cookie: a=1"))
        await send({"type": "http.response.start", "status": 302, "headers": bad})
        await send({"type": "http.response.body", "body": b"secret"})

    assert drive(wrap(hostile))[0]["status"] == 400


@pytest.mark.parametrize("wrap", [Middleware, CSP], ids=["Middleware", "CSP"])
def test_nothing_the_app_sends_after_a_refusal_reaches_the_server(wrap):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 302,
                    "headers": [(b"location", b"/\r\nSet-Cookie: a=1")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b"secret"})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"set-cookie", b"a=1")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b"evil"})

    sent = drive(wrap(app))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 400
    assert b"evil" not in sent[1]["body"]


def websocket_scope():
    return {"type": "websocket", "path": "/ws", "raw_path": b"/ws", "query_string": b"",
            "headers": [], "extensions": {"websocket.http.response": {}}}  # fmt: skip


@pytest.mark.parametrize("wrap", [Middleware, CSP], ids=["Middleware", "CSP"])
@pytest.mark.parametrize("char", BREAKS)
def test_a_websocket_denial_response_is_held_to_the_policy(wrap, char):
    # websocket.http.response.start is an HTTP response: the same policy, the same 400.
    value = f"/a{char}Set-Cookie: s=1".encode("latin-1")

    async def app(scope, receive, send):
        await send({"type": "websocket.http.response.start", "status": 403,
                    "headers": (pair for pair in [(b"location", value)])})  # fmt: skip
        await send({"type": "websocket.http.response.body", "body": b"secret"})
        await send({"type": "websocket.http.response.body", "body": b"more"})

    sent = drive(wrap(app), websocket_scope())
    assert [m["type"] for m in sent] == [
        "websocket.http.response.start",
        "websocket.http.response.body",
    ]
    assert sent[0]["status"] == 400
    assert all(name != b"location" for name, _ in sent[0]["headers"])
    assert b"secret" not in sent[1]["body"]


def test_a_good_websocket_denial_response_passes_untouched():
    async def app(scope, receive, send):
        await send({"type": "websocket.http.response.start", "status": 403,
                    "headers": (pair for pair in [(b"x-why", b"closed")])})  # fmt: skip
        await send({"type": "websocket.http.response.body", "body": b"no"})

    sent = drive(CSP(Middleware(app)), websocket_scope())
    assert sent[0]["status"] == 403
    assert list(sent[0]["headers"]) == [(b"x-why", b"closed")]
    assert sent[1]["body"] == b"no"


# -- Starlette and FastAPI views --------------------------------------------------------------


def starlette_app(*wrappers):
    def echo(request):
        return PlainTextResponse("ok", headers={"X-Next": request.query_params["next"]})

    async def nonce(request):
        return PlainTextResponse(csp_nonce())

    def sync_nonce(request):  # run in a worker thread: the context goes with it
        return PlainTextResponse(csp_nonce())

    app = Starlette(
        routes=[Route("/echo", echo), Route("/nonce", nonce), Route("/sync", sync_nonce)]
    )
    for wrapper, kwargs in wrappers:
        app.add_middleware(wrapper, **kwargs)
    return app


@pytest.mark.parametrize("char", [*BREAKS, "\u2028", "\u20ac"])
def test_a_starlette_views_hostile_header_is_a_400(char):
    # Starlette encodes header values as Latin-1 and checks nothing: the middleware does,
    # and a value beyond Latin-1 (Starlette's UnicodeEncodeError) is the same refusal.
    app = starlette_app((Middleware, {}))
    with TestClient(app) as client:
        response = client.get("/echo", params={"next": f"/a{char}Set-Cookie: s=1"})
        assert response.status_code == 400
        assert "set-cookie" not in response.headers
        response = client.get("/echo", params={"next": "/fine"})
        assert (response.status_code, response.headers["x-next"]) == (200, "/fine")


def test_other_errors_of_a_view_stay_500s():
    def body(request):
        return PlainTextResponse("\udc80")  # Starlette's UnicodeEncodeError, as UTF-8

    def value(request):
        raise ValueError("Header values must not contain newline characters.")

    app = Starlette(routes=[Route("/body", body), Route("/value", value)])
    app.add_middleware(Middleware)
    client = TestClient(app, raise_server_exceptions=False)
    assert client.get("/body").status_code == 500
    assert client.get("/value").status_code == 500


@pytest.mark.parametrize("wrap", [Middleware, CSP])
def test_a_huge_id_in_a_starlette_path_is_a_404(wrap):
    # Starlette's int convertor calls int() on any run of digits: over 4,300 it raises.
    def item(request):
        return PlainTextResponse(str(request.path_params["id"] % 1000))

    app = Starlette(routes=[Route("/items/{id:int}", item)])
    app.add_middleware(wrap)
    client = TestClient(app, raise_server_exceptions=False)
    assert client.get("/items/12345").text == "345"
    assert client.get("/items/" + "9" * 30).status_code == 200  # int() reads it
    response = client.get("/items/" + "9" * 5000)
    assert response.status_code == 404
    if wrap is CSP:
        assert "nonce-" in response.headers["content-security-policy"]


def around(app):
    return CSP(Middleware(app))


def added(app):
    app.add_middleware(Middleware)
    app.add_middleware(CSP)
    return app


@pytest.mark.parametrize("place", [around, added], ids=["CSP(Middleware(app))", "add_middleware"])
@pytest.mark.parametrize("where", ["header", "cookie", "cookie name"])
def test_a_value_starlette_cannot_encode_is_a_400_wherever_the_middleware_is(place, where, caplog):
    # Around the app, Starlette's own error middleware sends its 500 before re-raising the
    # UnicodeEncodeError: the middleware holds that 500 back and answers the 400 instead.
    def echo(request):
        response = PlainTextResponse("secret")
        if where == "header":
            response.headers["X-Next"] = request.query_params["next"]
        elif where == "cookie":
            response.set_cookie("next", request.query_params["next"])
        else:  # http.cookies refuses a name with a space, ';' or '=' (CookieError)
            response.set_cookie(request.query_params["next"], "1")
        return response

    app = place(Starlette(routes=[Route("/echo", echo)]))
    client = TestClient(app, raise_server_exceptions=False)
    hostile = "a; b=c" if where == "cookie name" else "/a\u2028b"
    with caplog.at_level(logging.WARNING):
        response = client.get("/echo", params={"next": hostile})
    assert response.status_code == 400
    assert b"secret" not in response.content
    assert "nonce-" in response.headers["content-security-policy"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    fine = "fine" if where == "cookie name" else "/fine"
    assert client.get("/echo", params={"next": fine}).status_code == 200


def test_a_huge_id_is_a_404_around_starlette_too():
    def item(request):
        return PlainTextResponse(str(request.path_params["id"]))

    app = around(Starlette(routes=[Route("/items/{id:int}", item)]))
    client = TestClient(app, raise_server_exceptions=False)
    assert client.get("/items/" + "9" * 5000).status_code == 404


def test_other_500s_around_starlette_reach_the_client_whole():
    def error_page(request):
        return PlainTextResponse("our own 500 page", status_code=500)

    def fails(request):
        raise RuntimeError("a bug")

    app = around(Starlette(routes=[Route("/page", error_page), Route("/bug", fails)]))
    client = TestClient(app, raise_server_exceptions=False)
    response = client.get("/page")
    assert (response.status_code, response.text) == (500, "our own 500 page")
    assert "nonce-" in response.headers["content-security-policy"]
    response = client.get("/bug")
    assert (response.status_code, response.text) == (500, "Internal Server Error")
    with pytest.raises(RuntimeError):
        TestClient(app).get("/bug")


def test_a_streamed_500_is_not_held():
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        assert len(sent) == 2, "streamed while the application runs"
        await send({"type": "http.response.body", "body": b"b", "more_body": False})

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "method": "GET", "path": "/", "query_string": b"", "headers": []}
    asyncio.run(Middleware(app)(scope, receive, send))
    assert [m.get("body") for m in sent] == [None, b"a", b"b"]


@pytest.mark.parametrize("path", ["/nonce", "/sync"])
def test_starlette_csp_nonce_matches_the_header(path):
    app = starlette_app((CSP, {"directives": {"img-src": "'self'"}}))
    with TestClient(app) as client:
        first = client.get(path)
        second = client.get(path)
    for response in (first, second):
        policy = response.headers["content-security-policy"]
        assert NONCE.search(policy).group(1) == response.text
        assert "img-src 'self'" in policy
    assert first.text != second.text


def test_a_response_that_has_a_policy_keeps_it():
    app = CSP(raw_app(200, [(b"Content-Security-Policy", b"default-src 'none'")]))
    response = TestClient(app).get("/")
    assert response.headers.get_list("content-security-policy") == ["default-src 'none'"]


def test_no_nonce_outside_the_request():
    app = starlette_app((CSP, {}))
    with TestClient(app) as client:
        client.get("/nonce")
    with pytest.raises(LookupError):
        csp_nonce()


def test_bad_directives_fail_at_start_up():
    with pytest.raises(ValueError, match="invalid CSP source"):
        CSP(raw_app(), {"script-src": "a;b"})


def test_fastapi_through_its_test_client():
    from fastapi import FastAPI
    from fastapi.testclient import TestClient as FastAPIClient

    app = FastAPI()
    app.add_middleware(CSP)

    @app.get("/next")
    def go(next: str) -> Response:
        return Response("ok", headers={"X-Next": next})

    @app.get("/nonce")
    async def nonce() -> dict[str, str]:
        return {"nonce": csp_nonce()}

    with FastAPIClient(app) as client:
        assert client.get("/next", params={"next": "/a\x85Set-Cookie: s=1"}).status_code == 400
        assert client.get("/next", params={"next": "/a\rb"}).status_code == 400
        response = client.get("/nonce")
        policy = response.headers["content-security-policy"]
        assert NONCE.search(policy).group(1) == response.json()["nonce"]


# -- concurrent requests: each sees its own nonce ---------------------------------------------


def test_concurrent_requests_never_share_a_nonce():
    async def main():
        arrived = asyncio.Event()
        waiting = 0
        count = 20

        async def app(scope, receive, send):
            nonlocal waiting
            before = csp_nonce()
            waiting += 1
            if waiting == count:
                arrived.set()
            await arrived.wait()  # every request is inside the app at once
            await asyncio.sleep(0)
            after = csp_nonce()
            body = f"{before} {after} {scope[CSP_NONCE_KEY]}".encode()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})

        transport = httpx.ASGITransport(app=CSP(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            responses = await asyncio.gather(*(client.get("/") for _ in range(count)))
        return responses

    responses = asyncio.run(main())
    nonces = set()
    for response in responses:
        before, after, in_scope = response.text.split()
        header = NONCE.search(response.headers["content-security-policy"]).group(1)
        assert before == after == in_scope == header
        nonces.add(header)
    assert len(nonces) == len(responses)


# -- logs never fail on the request's bytes ---------------------------------------------------


def test_request_line_reads_bytes_that_are_not_utf8():
    scope = {"method": "GET", "raw_path": b"/p\xe9", "path": "/p\ufffd", "query_string": b"q=\xff"}
    assert request_line(scope) == "GET /p\\xe9?q=\\xff"
    assert request_line({"path": "/x\udce9"}) == "? /x\\xe9"
    # Litestar's test client (and some servers) leave the query in raw_path.
    scope = {"method": "GET", "raw_path": b"/e?q=%0D", "query_string": b"q=%0D"}
    assert request_line(scope) == "GET /e?q=%0D"


def test_refusal_log_under_a_non_utf8_query_string(caplog):
    app = Middleware(raw_app(200, [(b"x-a", b"a\nb")]))
    with caplog.at_level(logging.WARNING, "ptl_wsgi"):
        client = TestClient(app)
        response = client.get("/p?q=%FF%FE")
    assert response.status_code == 400
    assert "refused GET /p?q=%FF%FE" in caplog.text


# -- a real server ------------------------------------------------------------------------------

UVICORN_APP = """
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ptl_wsgi.asgi import CSP, Middleware
from ptl_wsgi.csp import csp_nonce


def echo(request):
    return PlainTextResponse(csp_nonce(), headers={"X-Next": request.query_params["next"]})


app = Starlette(routes=[Route("/echo", echo)])
app.add_middleware(Middleware)
app.add_middleware(CSP)
"""


@pytest.mark.slow
def test_under_uvicorn(tmp_path):
    pytest.importorskip("uvicorn")
    (tmp_path / "asgi_site.py").write_text(UVICORN_APP)
    command = [sys.executable, "-m", "uvicorn", "--port", "{port}", "--host", "127.0.0.1",
               "--log-level", "warning", "asgi_site:app"]  # fmt: skip
    with run_process_server(command, cwd=tmp_path, ready_path="/echo?next=x") as base:
        status, headers, body = fetch(base + "/echo?next=/fine")
        assert status == 200
        assert headers["X-Next"] == "/fine"
        assert NONCE.search(headers["Content-Security-Policy"]).group(1) == body.decode()
        for hostile in ["%0D%0ASet-Cookie:%20s=1", "%C2%85Set-Cookie:%20s=1", "%00"]:
            status, headers, _ = fetch(base + "/echo?next=/a" + hostile)
            assert status == 400
            assert "Set-Cookie" not in headers
        # Not UTF-8: the server decodes it to U+FFFD, which Starlette cannot encode in a
        # header (its UnicodeEncodeError, raised in the view, is the same refusal).
        status, headers, _ = fetch(base + "/echo?next=%FF%FE")
        assert status == 400
        assert "X-Next" not in headers
