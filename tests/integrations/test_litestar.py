"""ptl_wsgi.contrib.litestar: PTLTemplateEngine through Litestar's own test client."""

from __future__ import annotations

import http.cookies
import logging
import re
import textwrap

import pytest
from litestar import Litestar, MediaType, get
from litestar.middleware import DefineMiddleware
from litestar.params import FromQuery
from litestar.response import Response
from litestar.response import Template as LitestarTemplate
from litestar.template import TemplateConfig
from litestar.testing import TestClient

from ptl_wsgi.asgi import CSP, Middleware
from ptl_wsgi.contrib.litestar import (
    EXCEPTION_HANDLERS,
    PTLPlugin,
    PTLTemplateEngine,
    Template,
    TemplateNotFound,
)
from ptl_wsgi.loader import Loader

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
NONCE = re.compile(r"'nonce-([A-Za-z0-9_-]+)'")

TEMPLATES = {
    "index.ptl": """
        def render [html] (name, url_for, request, csrf_input="", csp_nonce=None, shout=None):
            "<h1>Hello, %s</h1>" % name
            '<a href="%s">home</a>' % url_for("home")
            "<p>%s</p>" % request.method
            csrf_input
            if csp_nonce:
                '<script nonce="%s"></script>' % csp_nonce
            if shout:
                "<p>%s</p>" % shout(name)

        def sidebar [html] (name):
            "<aside>%s</aside>" % name
    """,
    "plain.ptl": """
        def render [plain] (name):
            "<b>%s</b>" % name
    """,
    "stream.ptl": """
        def item [html] (value):
            "<li>%s</li>" % value

        def render(items):
            yield "<ul>"
            for value in items:
                yield item(value)
    """,
}


@pytest.fixture
def folder(tmp_path):
    for name, source in TEMPLATES.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    return tmp_path


@get("/", name="home")
async def home(name: FromQuery[str] = "") -> LitestarTemplate:
    return LitestarTemplate(template_name="index.ptl", context={"name": name})


@get("/sidebar", sync_to_thread=True)
def sidebar(name: FromQuery[str] = "") -> Template:
    return Template(template_name="index.ptl:sidebar", context={"name": name})


@get("/plain", sync_to_thread=False)
def plain() -> Template:
    return Template(template_name="plain.ptl", context={"name": SCRIPT})


@get("/stream", sync_to_thread=False)
def stream() -> Template:
    return Template(template_name="stream.ptl", context={"items": ["a", SCRIPT]})


@get("/string", sync_to_thread=False)
def string(name: FromQuery[str]) -> LitestarTemplate:
    source = 'def render [html] (name):\n    "<em>%s</em>" % name\n'
    return LitestarTemplate(template_str=source, context={"name": name})


@get("/missing", sync_to_thread=False)
def missing() -> Template:
    return Template(template_name="missing.ptl")


@get("/echo", sync_to_thread=False)
def echo(next: FromQuery[str]) -> Response[str]:
    return Response("ok", headers={"X-Next": next})


def make_app(folder, **kwargs):
    config = TemplateConfig(directory=folder, engine=PTLTemplateEngine)
    handlers = [home, sidebar, plain, stream, string, missing, echo]
    return Litestar(handlers, template_config=config, **kwargs)


def test_templates_render_escaped_html(folder):
    with TestClient(make_app(folder)) as client:
        response = client.get("/", params={"name": SCRIPT})
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert f"<h1>Hello, {ESCAPED}</h1>" in response.text
        assert '<a href="/">home</a>' in response.text
        assert "<p>GET</p>" in response.text
        assert '<input type="hidden" name="_csrf_token" value="" />' in response.text
        for path in ("/sidebar", "/plain"):  # ptl_wsgi's Template: HTML for every PTL name
            response = client.get(path, params={"name": SCRIPT})
            assert response.headers["content-type"] == "text/html; charset=utf-8"
            assert SCRIPT not in response.text
        assert client.get("/plain").text == f"&lt;b&gt;{ESCAPED}&lt;/b&gt;"


def test_a_generator_template_is_joined_and_escaped(folder):
    with TestClient(make_app(folder)) as client:
        assert client.get("/stream").text == f"&lt;ul&gt;<li>a</li><li>{ESCAPED}</li>"


def test_render_string(folder):
    with TestClient(make_app(folder)) as client:
        response = client.get("/string", params={"name": SCRIPT})
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.text == f"<em>{ESCAPED}</em>"


def test_register_template_callable_gets_the_context(folder):
    def shout(context, value):
        return f"{value.upper()}! ({context['request'].method})"

    config = TemplateConfig(
        directory=folder,
        engine=PTLTemplateEngine,
        engine_callback=lambda engine: engine.register_template_callable("shout", shout),
    )
    app = Litestar([home], template_config=config)
    with TestClient(app) as client:
        shouted = "&lt;SCRIPT&gt;ALERT(1)&lt;/SCRIPT&gt;! (GET)"
        assert f"<p>{shouted}</p>" in client.get("/", params={"name": SCRIPT}).text


def test_missing_template_is_litestars_error_with_the_places(folder, caplog):
    engine = PTLTemplateEngine(directory=[folder])
    with pytest.raises(TemplateNotFound) as caught:
        engine.get_template("nope.ptl")
    assert caught.value.tried == [str(folder / "nope.ptl")]
    assert "nope.ptl" in caught.value.detail
    with TestClient(make_app(folder)) as client:
        assert client.get("/missing").status_code == 500


def test_engine_from_a_loader_and_bad_arguments(folder):
    engine = PTLTemplateEngine.from_loader(Loader([folder]))
    assert engine.get_template("index.ptl:sidebar").render(name="<") == "<aside>&lt;</aside>"
    with pytest.raises(TypeError):
        PTLTemplateEngine()
    with pytest.raises(TypeError):
        PTLTemplateEngine(folder, Loader([folder]))


def test_litestars_own_template_of_a_ptl_file_is_html(folder):
    # The engine registers .ptl as text/html for Litestar's guess from the suffix.
    with TestClient(make_app(folder)) as client:
        response = client.get("/")
    assert response.headers["content-type"] == "text/html; charset=utf-8"


def test_csp_nonce_and_header_policy_under_litestar(folder, caplog):
    # logging_config=None: Litestar's own would replace the handler caplog reads.
    middleware = [DefineMiddleware(CSP), Middleware]
    app = make_app(folder, middleware=middleware, logging_config=None)
    with TestClient(app) as client:
        first = client.get("/", params={"name": "x"})
        second = client.get("/", params={"name": "x"})
        nonces = []
        for response in (first, second):
            nonce = NONCE.search(response.headers["content-security-policy"]).group(1)
            assert f'<script nonce="{nonce}"></script>' in response.text
            nonces.append(nonce)
        assert nonces[0] != nonces[1]
        with caplog.at_level(logging.WARNING, "ptl_wsgi"):
            for char in ("\r\n", "\x85", "\x00"):
                response = client.get("/echo", params={"next": f"/a{char}Set-Cookie: s=1"})
                assert response.status_code == 400
                assert "set-cookie" not in response.headers
        refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        assert len(refusals) == 3
        assert all(m.startswith("refused GET /echo?next=%2Fa") for m in refusals)
        assert all(m.split(":")[0].count("?") == 1 for m in refusals)  # the query once
        assert client.get("/echo", params={"next": "/ok"}).headers["x-next"] == "/ok"


def test_media_type_given_is_kept(folder):
    @get("/text", sync_to_thread=False)
    def text() -> Template:
        return Template(template_name="plain.ptl", context={"name": "a"}, media_type=MediaType.TEXT)

    config = TemplateConfig(directory=folder, engine=PTLTemplateEngine)
    with TestClient(Litestar([text], template_config=config)) as client:
        response = client.get("/text")
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == "&lt;b&gt;a&lt;/b&gt;"  # markup always: safe under any type


@pytest.mark.parametrize("debug", [False, True])
def test_a_header_value_beyond_latin1_is_a_400_with_the_handlers(folder, caplog, debug):
    @get("/body", sync_to_thread=False)
    def body() -> Response[str]:
        return Response("\udc80")  # a body Litestar cannot encode: still its own 500

    app = make_app(folder, exception_handlers=EXCEPTION_HANDLERS, logging_config=None)
    app.register(body)
    app.debug = debug
    with caplog.at_level(logging.WARNING, "ptl_wsgi"), TestClient(app) as client:
        for char in ("\u2028", "\u20ac"):
            response = client.get("/echo", params={"next": f"/a{char}b"})
            assert response.status_code == 400
            assert "x-next" not in response.headers
        assert client.get("/echo", params={"next": "/ok"}).status_code == 200
        assert client.get("/body").status_code == 500
    assert "refused GET /echo?next=%2Fa%E2%80%A8b" in caplog.text


@pytest.mark.parametrize("wrap", [None, lambda app: CSP(Middleware(app))], ids=["bare", "around"])
def test_a_cookie_value_beyond_latin1_is_a_400_with_the_handlers(folder, caplog, wrap):
    # The same class in another module: Litestar's Cookie encodes its header as Latin-1.
    @get("/cookie", sync_to_thread=False)
    def cookie(value: FromQuery[str]) -> Response[str]:
        response = Response("secret")
        response.set_cookie("next", value)
        return response

    app = make_app(folder, exception_handlers=EXCEPTION_HANDLERS, logging_config=None)
    app.register(cookie)
    with caplog.at_level(logging.WARNING), TestClient(wrap(app) if wrap else app) as client:
        response = client.get("/cookie", params={"value": "/a\u2028b"})
        assert response.status_code == 400
        assert "set-cookie" not in response.headers
        assert "secret" not in response.text
        assert client.get("/cookie", params={"value": "/ok"}).status_code == 200
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# -- PTLPlugin: the header policy with one switch, no exception handlers given ------------------


def test_litestar_answers_a_header_beyond_latin1_with_its_500_inside_every_middleware(folder):
    # Why PTLPlugin adds an exception handler: Litestar encodes a response's headers where its
    # own exception middleware, between the route and every middleware of the app's, answers
    # the error with a finished 500 that no middleware can tell from any other.
    app = make_app(folder, middleware=[Middleware], logging_config=None)
    with TestClient(app) as client:
        assert client.get("/echo", params={"next": "/a\u2028b"}).status_code == 500


@get("/cookie", sync_to_thread=False)
def cookie(value: FromQuery[str]) -> Response[str]:
    response = Response("secret")
    response.set_cookie("next", value)
    return response


@get("/body", sync_to_thread=False)
def unencodable_body() -> Response[str]:
    return Response("\udc80")  # a body Litestar cannot encode: not a header's error


@get("/ascii", sync_to_thread=False)
def ascii_only() -> str:
    return "caf\u00e9".encode("ascii").decode()  # the app's own UnicodeEncodeError


def _cookie_refuses(char: str) -> bool:
    """Whether this Python's http.cookies refuses *char* in a value (3.14 refuses controls)."""
    try:
        http.cookies.SimpleCookie()["next"] = f"/a{char}b"
    except http.cookies.CookieError:
        return True
    return False


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("char", ["\u2028", "\u20ac", "\u0160", "\r\n", "\x85", "\x00"])
def test_the_plugin_makes_any_hostile_header_value_a_400(folder, caplog, debug, char):
    app = make_app(folder, plugins=[PTLPlugin()], logging_config=None, debug=debug)
    app.register(cookie)
    beyond_latin1 = ord(char[-1]) > 0xFF
    with caplog.at_level(logging.WARNING), TestClient(app) as client:
        response = client.get("/echo", params={"next": f"/a{char}b"})
        assert response.status_code == 400
        assert "x-next" not in response.headers
        response = client.get("/cookie", params={"value": f"/a{char}b"})
        refused = beyond_latin1 or _cookie_refuses(char)
        if refused:  # what Litestar cannot encode, or what http.cookies refuses (3.14+)
            assert response.status_code == 400
            assert "set-cookie" not in response.headers and "secret" not in response.text
        else:  # an older standard library's cookie quotes a control character as an escape
            assert response.status_code == 200
            assert char not in response.headers["set-cookie"]
    assert caplog.text.count("refused GET /") == (2 if refused else 1)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_the_plugin_leaves_good_responses_and_other_errors_alone(folder):
    app = make_app(folder, plugins=[PTLPlugin()], logging_config=None)
    app.register(unencodable_body)
    with TestClient(app) as client:
        assert client.get("/echo", params={"next": "/ok\tok"}).headers["x-next"] == "/ok\tok"
        assert client.get("/", params={"name": SCRIPT}).text.startswith(f"<h1>Hello, {ESCAPED}")
        assert client.get("/body").status_code == 500  # Litestar's own answer


def test_the_plugin_keeps_the_apps_own_handler_for_other_encoding_errors(folder):
    def teapot(request, exc):
        return Response("own handler", status_code=418)

    app = make_app(
        folder,
        plugins=[PTLPlugin()],
        exception_handlers={UnicodeEncodeError: teapot},
        logging_config=None,
    )
    app.register(ascii_only)
    with TestClient(app) as client:
        assert client.get("/ascii").status_code == 418
        assert client.get("/echo", params={"next": "/a\u2028b"}).status_code == 400


def test_the_plugin_with_csp_gives_each_request_a_nonce(folder):
    app = make_app(folder, plugins=[PTLPlugin(csp=True, directives={"img-src": "'self'"})])
    with TestClient(app) as client:
        page = client.get("/", params={"name": "x"})
        refused = client.get("/echo", params={"next": "/a\u2028b"})
    policy = page.headers["content-security-policy"]
    nonce = NONCE.search(policy).group(1)  # type: ignore[union-attr]
    assert f'<script nonce="{nonce}"></script>' in page.text and "img-src 'self'" in policy
    assert refused.status_code == 400 and "nonce-" in refused.headers["content-security-policy"]


def test_the_plugins_middleware_is_outside_the_apps_own(folder, caplog):
    # A middleware of the app's that sets a header is held to the policy too.
    def adds_a_header(app):
        async def middleware(scope, receive, send):
            async def sending(message):
                if message["type"] == "http.response.start":
                    message["headers"] = [*message["headers"], (b"x-mw", b"a\x85b")]
                await send(message)

            await app(scope, receive, sending)

        return middleware

    app = make_app(folder, plugins=[PTLPlugin()], middleware=[adds_a_header], logging_config=None)
    with caplog.at_level(logging.WARNING), TestClient(app) as client:
        response = client.get("/echo", params={"next": "/ok"})
    assert response.status_code == 400 and "x-mw" not in response.headers


def test_auto_reload_follows_the_apps_debug(folder):
    import os
    import time

    with TestClient(make_app(folder, debug=True)) as client:
        assert client.get("/sidebar", params={"name": "a"}).text == "<aside>a</aside>"
        page = folder / "index.ptl"
        page.write_text(page.read_text().replace("<aside>", "<nav>").replace("</aside>", "</nav>"))
        stamp = time.time() + 5
        os.utime(page, (stamp, stamp))
        assert client.get("/sidebar", params={"name": "a"}).text == "<nav>a</nav>"
