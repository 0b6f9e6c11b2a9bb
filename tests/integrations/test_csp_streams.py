"""Streamed responses keep the request's CSP nonce, in every integration.

A streamed body is iterated after the view returned, by the server, when the
request's nonce scope has been left (and perhaps in another thread or task).
Each test streams chunks rendered by a template whose literal writes a
``<script>``: under CSP every chunk must carry the nonce the response's header
names, two streams interleaved chunk by chunk must never see each other's
nonce, ``close()`` must run inside the scope, and without CSP the chunks are
exactly what the literal says.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from wsgiref.util import FileWrapper
from wsgiref.validate import validator

import pytest
from litestar import Litestar, get
from litestar.middleware import DefineMiddleware
from litestar.params import FromQuery
from litestar.response import Stream
from servers import fetch, serve_in_thread

from ptl_wsgi.csp import RequestNonce, csp_nonce, in_nonce_scope_async
from ptl_wsgi.loader import Loader

CHUNKS = 3
HEADER_NONCE = re.compile(r"'nonce-([A-Za-z0-9_-]{20,})'")
SCRIPT = re.compile(r"<script( nonce=\"([^\"]*)\")?>go\(\)</script><p>(\d+)</p>")


@pytest.fixture(scope="module")
def loader(tmp_path_factory: pytest.TempPathFactory) -> Loader:
    folder = tmp_path_factory.mktemp("stream_templates")
    (folder / "chunk.ptl").write_text(
        "def render [html] (n):\n    '<script>go()</script><p>%s</p>' % n\n", encoding="utf-8"
    )
    return Loader([folder])


def nonced(header: str | None, body: bytes | str, count: int = CHUNKS) -> str:
    """The nonce *header* names, after checking that each of *body*'s *count* chunks has it."""
    assert header is not None, "no Content-Security-Policy header"
    match = HEADER_NONCE.search(header)
    assert match is not None, header
    text = body.decode() if isinstance(body, bytes) else body
    found = [(nonce, int(n)) for _, nonce, n in SCRIPT.findall(text)]
    assert found == [(match.group(1), n) for n in range(count)], (header, text)
    return match.group(1)


def plain(body: bytes | str, count: int = CHUNKS) -> None:
    """*body* is the chunks as their literal wrote them: no nonce anywhere."""
    text = body.decode() if isinstance(body, bytes) else body
    assert text == "".join(f"<script>go()</script><p>{n}</p>" for n in range(count))


def no_nonce_here() -> bool:
    try:
        csp_nonce()
    except LookupError:
        return True
    return False


class Meet:
    """Two streams meet before each chunk, so that their steps alternate (threads)."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2, timeout=20)
        self.order: list[str] = []

    def wait(self, who: str) -> None:
        self.barrier.wait()
        self.order.append(who)


class AsyncMeet:
    """:class:`Meet` for tasks on one event loop (asyncio.Barrier is 3.11+)."""

    def __init__(self) -> None:
        self.arrived = 0
        self.event: asyncio.Event | None = None
        self.order: list[str] = []

    async def wait(self, who: str) -> None:
        if self.event is None:
            self.event = asyncio.Event()
        event = self.event
        self.arrived += 1
        if self.arrived % 2 == 0:
            self.event = asyncio.Event()
            event.set()
        else:
            await asyncio.wait_for(event.wait(), 20)
        self.order.append(who)
        await asyncio.sleep(0)  # let the other task run its step before this one's


def interleaved(order: list[str]) -> None:
    """The two streams took each step in the same round: their chunks alternated."""
    rounds = [set(order[i : i + 2]) for i in range(0, len(order), 2)]
    assert len(order) == 2 * CHUNKS and all(len(r) == 2 for r in rounds), order


def sync_chunks(
    loader: Loader, meet: Meet | None = None, who: str = "", closed: list[Any] | None = None
) -> Iterator[Any]:
    """What a user's generator streams: a template's output per step."""
    try:
        for n in range(CHUNKS):
            if meet is not None:
                meet.wait(who)
            yield loader.render("chunk.ptl", {"n": n})
    finally:
        if closed is not None:
            closed.append(None if no_nonce_here() else csp_nonce())


async def async_chunks(
    loader: Loader, meet: AsyncMeet | None = None, who: str = ""
) -> AsyncIterator[Any]:
    for n in range(CHUNKS):
        if meet is not None:
            await meet.wait(who)
        yield loader.render("chunk.ptl", {"n": n})


def two_at_once_threads(get: Callable[[str], tuple[Any, bytes]], paths: list[str]) -> list[str]:
    """GET two *paths* at once from threads; the nonces their headers named."""
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(get, paths))
    nonces = [nonced(headers.get("Content-Security-Policy"), body) for headers, body in results]
    assert nonces[0] != nonces[1]
    return nonces


# -- the helpers every integration uses ----------------------------------------------------------


def test_async_body_sees_the_nonce_at_each_step_and_at_aclose_from_any_task() -> None:
    seen: list[str | None] = []

    def current() -> str | None:
        return None if no_nonce_here() else csp_nonce()

    async def body() -> AsyncIterator[bytes]:
        try:
            seen.append(current())
            yield b"a"
            seen.append(current())
            yield b"b"
            yield b"never"
        finally:
            seen.append(current())

    async def main() -> list[bytes]:
        wrapped = in_nonce_scope_async(body(), "n1")
        # Each step in a task of its own, as servers may pull a body.
        chunks = [await asyncio.create_task(wrapped.__anext__()) for _ in range(2)]
        seen.append(current())  # nothing left current between steps
        await asyncio.create_task(wrapped.aclose())  # type: ignore[attr-defined]
        return chunks

    assert asyncio.run(main()) == [b"a", b"b"]
    assert seen == ["n1", "n1", None, "n1"]
    assert no_nonce_here()


def test_request_nonce_close_in_scope_restores_what_was_current() -> None:
    state = RequestNonce({})
    seen: list[str] = []
    state.close_in_scope(lambda: seen.append(csp_nonce()))()
    assert seen == [state.nonce]
    assert no_nonce_here()


# -- a bare ASGI driver, as a server calls an application -------------------------------------


async def asgi_get(app: Any, path: str) -> tuple[dict[str, str], bytes]:
    """Call ASGI *app* for ``GET path`` as a server does; its headers and whole body."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
        "extensions": {},
    }
    requested = False
    done = asyncio.Event()
    headers: dict[str, str] = {}
    body = bytearray()

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()  # as uvicorn: a disconnect once the response is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            for name, value in message.get("headers", []):
                headers[name.decode("latin-1").title()] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await asyncio.wait_for(app(scope, receive, send), 30)
    return headers, bytes(body)


def two_at_once_tasks(app: Any, paths: list[str]) -> list[str]:
    async def both() -> list[tuple[dict[str, str], bytes]]:
        return list(await asyncio.gather(*(asgi_get(app, path) for path in paths)))

    results = asyncio.run(both())
    nonces = [nonced(headers.get("Content-Security-Policy"), body) for headers, body in results]
    assert nonces[0] != nonces[1]
    assert no_nonce_here()
    return nonces


# -- WSGI: CSP(app) and the publisher ---------------------------------------------------------


def wsgi_app(loader: Loader, meet: Meet | None = None) -> Any:
    from ptl_wsgi import output_policy

    def app(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        who = environ.get("QUERY_STRING", "")
        for chunk in sync_chunks(loader, meet, who):
            yield str(output_policy.markup(chunk)).encode()

    return app


def test_wsgi_generator_body_keeps_the_nonce_under_validate(loader: Loader) -> None:
    from ptl_wsgi.wsgi import CSP

    with serve_in_thread(validator(CSP(wsgi_app(loader))), threaded=False) as base:
        _, headers, body = fetch(base + "/")
        nonced(headers["Content-Security-Policy"], body)
    with serve_in_thread(validator(wsgi_app(loader)), threaded=False) as base:
        _, headers, body = fetch(base + "/")
        plain(body)


def test_wsgi_two_interleaved_streams_on_threads(loader: Loader) -> None:
    from ptl_wsgi.wsgi import CSP

    meet = Meet()
    with serve_in_thread(validator(CSP(wsgi_app(loader, meet)))) as base:

        def get(path: str) -> tuple[Any, bytes]:
            _, headers, body = fetch(base + path)
            return headers, body

        two_at_once_threads(get, ["/?a", "/?b"])
    interleaved(meet.order)


def test_publisher_generator_body_keeps_the_nonce(loader: Loader) -> None:
    from ptl_wsgi.publish import Directory, Publisher
    from ptl_wsgi.wsgi import CSP

    class Root(Directory):
        _q_exports = [""]

        def _q_index(self) -> Iterator[Any]:
            return sync_chunks(loader)

    with serve_in_thread(validator(CSP(Publisher(Root())))) as base:
        _, headers, body = fetch(base + "/")
        nonced(headers["Content-Security-Policy"], body)


# -- Flask -----------------------------------------------------------------------------------


def flask_app(loader: Loader, csp: bool = True, meet: Meet | None = None) -> Any:
    from flask import Flask, Response, request, stream_with_context

    from ptl_wsgi.contrib.flask import PTL

    app = Flask(__name__)
    app.config.update(TESTING=True, PTL_CSP=csp)
    PTL(app)
    closed: list[Any] = []
    app.extensions["closed"] = closed

    @app.get("/response")
    def response() -> Any:
        return Response(
            sync_chunks(loader, meet, request.args["who"], closed), mimetype="text/html"
        )

    @app.get("/generator")
    def generator() -> Any:
        return sync_chunks(loader, meet, request.args["who"])

    @app.get("/with-context")
    def with_context() -> Any:
        who = request.args["who"]
        return Response(stream_with_context(sync_chunks(loader, meet, who)), mimetype="text/html")

    return app


FLASK_PATHS = ["/response", "/generator", "/with-context"]


@pytest.mark.parametrize("path", FLASK_PATHS)
def test_flask_streamed_body_keeps_the_nonce(loader: Loader, path: str) -> None:
    app = flask_app(loader)
    response = app.test_client().get(path + "?who=a")
    nonced(response.headers["Content-Security-Policy"], response.get_data())
    assert no_nonce_here()
    off = flask_app(loader, csp=False).test_client().get(path + "?who=a")
    plain(off.get_data())
    assert "Content-Security-Policy" not in off.headers


def test_flask_closes_an_abandoned_stream_inside_its_scope(loader: Loader) -> None:
    app = flask_app(loader)
    response = app.test_client().get("/response?who=a")
    first = next(iter(response.response))
    response.close()
    assert no_nonce_here()
    nonce = HEADER_NONCE.search(response.headers["Content-Security-Policy"]).group(1)  # type: ignore[union-attr]
    assert f'nonce="{nonce}"'.encode() in first
    assert app.extensions["closed"] == [nonce]


@pytest.mark.parametrize("path", FLASK_PATHS)
def test_flask_two_interleaved_streams_on_a_real_server(loader: Loader, path: str) -> None:
    meet = Meet()
    with serve_in_thread(flask_app(loader, meet=meet)) as base:

        def get(who: str) -> tuple[Any, bytes]:
            _, headers, body = fetch(f"{base}{path}?who={who}")
            return headers, body

        two_at_once_threads(get, ["a", "b"])
    interleaved(meet.order)


def test_flask_file_keeps_the_servers_file_wrapper(tmp_path: Any, loader: Loader) -> None:
    from flask import send_file

    (tmp_path / "a.css").write_text("p { color: teal }", encoding="utf-8")
    app = flask_app(loader)

    @app.get("/file")
    def file() -> Any:
        return send_file(tmp_path / "a.css")

    bodies: list[Any] = []

    def recording(environ: dict[str, Any], start_response: Any) -> Any:
        body = app(environ, start_response)
        bodies.append(body)
        return body

    with serve_in_thread(recording) as base:
        status, headers, body = fetch(base + "/file")
    assert (status, body) == (200, b"p { color: teal }")
    assert "'nonce-" in headers["Content-Security-Policy"]
    # Not wrapped for the nonce: the server may still send it with sendfile().
    assert isinstance(bodies[0], FileWrapper)


# -- Django ----------------------------------------------------------------------------------


def django_sync(request: Any) -> Any:
    from django.http import StreamingHttpResponse

    meet = DJANGO_MEETS.get("sync")
    return StreamingHttpResponse(
        sync_chunks(DJANGO_LOADER[0], meet, request.GET.get("who", ""), DJANGO_CLOSED),
        content_type="text/html",
    )


def django_async(request: Any) -> Any:
    from django.http import StreamingHttpResponse

    meet = DJANGO_MEETS.get("async")
    return StreamingHttpResponse(
        async_chunks(DJANGO_LOADER[0], meet, request.GET.get("who", "")), content_type="text/html"
    )


async def django_async_view_sync_body(request: Any) -> Any:
    return django_sync(request)


DJANGO_LOADER: list[Loader] = []
DJANGO_MEETS: dict[str, Any] = {}
DJANGO_CLOSED: list[Any] = []


def _django_urls() -> list[Any]:
    from django.urls import path

    return [
        path("sync/", django_sync),
        path("async/", django_async),
        path("async-view/", django_async_view_sync_body),
    ]


urlpatterns = _django_urls()


@pytest.fixture
def django_csp(settings: Any, loader: Loader, db: None) -> Iterator[Any]:
    # (db: a response's close() sends request_finished, which closes the connections.)
    settings.ROOT_URLCONF = __name__
    settings.MIDDLEWARE = ["ptl_wsgi.contrib.django.CSPMiddleware", *settings.MIDDLEWARE]
    DJANGO_LOADER[:] = [loader]
    DJANGO_MEETS.clear()
    DJANGO_CLOSED.clear()
    yield settings
    DJANGO_MEETS.clear()


def test_django_streaming_response_keeps_the_nonce(django_csp: Any) -> None:
    from django.core.handlers.wsgi import WSGIHandler

    with serve_in_thread(validator(WSGIHandler()), threaded=False) as base:
        _, headers, body = fetch(base + "/sync/")
        nonce = nonced(headers["Content-Security-Policy"], body)
    assert DJANGO_CLOSED == [nonce]  # close() ran in the request's scope
    django_csp.MIDDLEWARE = django_csp.MIDDLEWARE[1:]
    with serve_in_thread(validator(WSGIHandler()), threaded=False) as base:
        _, headers, body = fetch(base + "/sync/")
        plain(body)
        assert "Content-Security-Policy" not in headers


def test_django_closes_an_abandoned_stream_inside_its_scope(django_csp: Any) -> None:
    from django.core.handlers.wsgi import WSGIHandler
    from werkzeug.test import EnvironBuilder

    headers: dict[str, str] = {}

    def start_response(status: str, response_headers: Any, exc_info: Any = None) -> Any:
        headers.update(response_headers)
        return lambda data: None

    body = WSGIHandler()(EnvironBuilder("/sync/").get_environ(), start_response)
    first = next(iter(body))
    assert no_nonce_here()
    body.close()
    assert no_nonce_here()
    nonce = nonced(headers["Content-Security-Policy"], first, count=1)
    assert DJANGO_CLOSED == [nonce]


def test_django_test_client_stream_keeps_the_nonce(django_csp: Any, client: Any) -> None:
    response = client.get("/sync/")
    nonced(response.headers["Content-Security-Policy"], b"".join(response.streaming_content))
    assert no_nonce_here()


def test_django_two_interleaved_streams_on_threads(django_csp: Any) -> None:
    from django.core.handlers.wsgi import WSGIHandler

    meet = DJANGO_MEETS["sync"] = Meet()
    with serve_in_thread(validator(WSGIHandler())) as base:

        def get(who: str) -> tuple[Any, bytes]:
            _, headers, body = fetch(f"{base}/sync/?who={who}")
            return headers, body

        two_at_once_threads(get, ["a", "b"])
    interleaved(meet.order)


@pytest.mark.parametrize("path", ["/async/", "/async-view/", "/sync/"])
def test_django_asgi_streams_keep_the_nonce(django_csp: Any, path: str) -> None:
    import warnings

    from django.core.handlers.asgi import ASGIHandler

    with warnings.catch_warnings():
        # Django warns that a sync iterator is consumed whole under ASGI: what this checks too.
        warnings.simplefilter("ignore")
        headers, body = asyncio.run(asgi_get(ASGIHandler(), path))
    nonced(headers["Content-Security-Policy"], body)
    assert no_nonce_here()


def test_django_asgi_two_interleaved_async_streams(django_csp: Any) -> None:
    from django.core.handlers.asgi import ASGIHandler

    meet = DJANGO_MEETS["async"] = AsyncMeet()
    two_at_once_tasks(ASGIHandler(), ["/async/?who=a", "/async/?who=b"])
    interleaved(meet.order)


# -- Quart -----------------------------------------------------------------------------------


def quart_app(loader: Loader, csp: bool = True, meet: AsyncMeet | None = None) -> Any:
    from quart import Quart, request, stream_with_context

    from ptl_wsgi.contrib.quart import PTL

    app = Quart(__name__)
    app.config.update(TESTING=True, PTL_CSP=csp)
    PTL(app)

    @app.get("/generator")
    async def generator() -> Any:
        return (
            async_chunks(loader, meet, request.args.get("who", "")),
            200,
            {"Content-Type": "text/html"},
        )

    @app.get("/with-context")
    async def with_context() -> Any:
        @stream_with_context
        async def chunks() -> AsyncIterator[Any]:
            async for chunk in async_chunks(loader, meet, request.args.get("who", "")):
                yield chunk

        return chunks(), 200, {"Content-Type": "text/html"}

    return app


@pytest.mark.parametrize("path", ["/generator", "/with-context"])
def test_quart_streamed_body_keeps_the_nonce(loader: Loader, path: str) -> None:
    headers, body = asyncio.run(asgi_get(quart_app(loader), path))
    nonced(headers["Content-Security-Policy"], body)
    headers, body = asyncio.run(asgi_get(quart_app(loader, csp=False), path))
    plain(body)


@pytest.mark.parametrize("path", ["/generator", "/with-context"])
def test_quart_two_interleaved_streams(loader: Loader, path: str) -> None:
    meet = AsyncMeet()
    two_at_once_tasks(quart_app(loader, meet=meet), [path + "?who=a", path + "?who=b"])
    interleaved(meet.order)


# -- Starlette, Litestar and any ASGI application under ptl_wsgi.asgi.CSP ------------------------


def starlette_app(loader: Loader, csp: bool = True, meet: Any = None) -> Any:
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from ptl_wsgi import output_policy
    from ptl_wsgi.asgi import CSP

    def encoded(chunks: Iterator[Any]) -> Iterator[bytes]:
        return (str(output_policy.markup(chunk)).encode() for chunk in chunks)

    async def aencoded(chunks: AsyncIterator[Any]) -> AsyncIterator[bytes]:
        async for chunk in chunks:
            yield str(output_policy.markup(chunk)).encode()

    def sync_stream(request: Any) -> Any:
        who = request.query_params.get("who", "")
        return StreamingResponse(encoded(sync_chunks(loader, meet, who)), media_type="text/html")

    async def async_stream(request: Any) -> Any:
        who = request.query_params.get("who", "")
        return StreamingResponse(aencoded(async_chunks(loader, meet, who)), media_type="text/html")

    routes = [Route("/sync", sync_stream), Route("/async", async_stream)]
    return Starlette(routes=routes, middleware=[_middleware(CSP)] if csp else [])


def _middleware(cls: Any) -> Any:
    from starlette.middleware import Middleware

    return Middleware(cls)


@pytest.mark.parametrize("path", ["/sync", "/async"])
def test_starlette_streaming_response_keeps_the_nonce(loader: Loader, path: str) -> None:
    from starlette.testclient import TestClient

    with TestClient(starlette_app(loader)) as client:
        response = client.get(path)
        nonced(response.headers["content-security-policy"], response.content)
    with TestClient(starlette_app(loader, csp=False)) as client:
        plain(client.get(path).content)


def test_starlette_two_interleaved_async_streams(loader: Loader) -> None:
    meet = AsyncMeet()
    two_at_once_tasks(starlette_app(loader, meet=meet), ["/async?who=a", "/async?who=b"])
    interleaved(meet.order)


def test_starlette_two_interleaved_sync_streams_in_the_threadpool(loader: Loader) -> None:
    meet = Meet()
    two_at_once_tasks(starlette_app(loader, meet=meet), ["/sync?who=a", "/sync?who=b"])
    interleaved(meet.order)


def litestar_app(loader: Loader, csp: bool = True, meet: AsyncMeet | None = None) -> Any:
    from ptl_wsgi import output_policy
    from ptl_wsgi.asgi import CSP

    @get("/stream", media_type="text/html")
    async def stream(who: FromQuery[str] = "") -> Stream:
        async def encoded() -> AsyncIterator[bytes]:
            async for chunk in async_chunks(loader, meet, who):
                yield str(output_policy.markup(chunk)).encode()

        return Stream(encoded(), media_type="text/html")

    middleware = [DefineMiddleware(CSP)] if csp else []
    return Litestar([stream], middleware=middleware)


def test_litestar_stream_keeps_the_nonce(loader: Loader) -> None:
    from litestar.testing import TestClient

    with TestClient(litestar_app(loader)) as client:
        response = client.get("/stream")
        nonced(response.headers["content-security-policy"], response.content)
    with TestClient(litestar_app(loader, csp=False)) as client:
        plain(client.get("/stream").content)


def test_litestar_two_interleaved_streams(loader: Loader) -> None:
    meet = AsyncMeet()
    two_at_once_tasks(litestar_app(loader, meet=meet), ["/stream?who=a", "/stream?who=b"])
    interleaved(meet.order)


def test_bare_asgi_application_streaming_under_csp(loader: Loader) -> None:
    from ptl_wsgi import output_policy
    from ptl_wsgi.asgi import CSP

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for chunk in sync_chunks(loader):
            body = str(output_policy.markup(chunk)).encode()
            await send({"type": "http.response.body", "body": body, "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b""})

    headers, body = asyncio.run(asgi_get(CSP(app), "/"))
    nonced(headers["Content-Security-Policy"], body)
    plain(asyncio.run(asgi_get(app, "/"))[1])
