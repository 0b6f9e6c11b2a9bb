"""What the Flask and Quart extensions assume of Jinja2, Flask and Quart, each pinned alone.

``ptl_wsgi.contrib.flask_core`` plugs into the frameworks at the points listed
in docs/integrations.md.  Each test here checks one of those points against the
installed versions, without ptl_wsgi, so that a release that moves one fails
here, by name, rather than somewhere in the behaviour tests.  ``make test-flask30``
runs this file and the Flask tests against the oldest Flask supported.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import flask
import jinja2
import pytest
from flask.templating import DispatchingJinjaLoader
from jinja2.runtime import Context

from ptl_wsgi.contrib import flask_core

quart = pytest.importorskip("quart")


class Recording(jinja2.Template):
    """A template made as flask_core makes PTL's, recording how it is used."""

    calls: list[str]

    @classmethod
    def make(cls, environment: jinja2.Environment, name: str) -> Recording:
        namespace = {"name": name, "__file__": f"/{name}", "blocks": {}, "root": None}
        namespace["debug_info"] = ""
        template = cls.from_module_dict(environment, namespace, {"g": 1})
        assert isinstance(template, Recording)
        template.calls = []
        template.root_render_func = template._root  # type: ignore[method-assign]
        return template

    def _root(self, context: Context) -> Any:
        self.calls.append(f"root_render_func(x={context.get('x')})")
        return _async(["R"]) if self.environment.is_async else (item for item in ["R"])

    def render(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append("render")
        return "R"

    async def render_async(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append("render_async")
        return "R"

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        self.calls.append("generate")
        return iter(["R"])

    async def generate_async(self, *args: Any, **kwargs: Any) -> AsyncIterator[str]:
        self.calls.append("generate_async")
        yield "R"

    def make_module(self, vars: Any = None, shared: bool = False, locals: Any = None) -> Any:
        self.calls.append("make_module")
        return _Module(self)

    async def make_module_async(
        self, vars: Any = None, shared: bool = False, locals: Any = None
    ) -> Any:
        self.calls.append("make_module_async")
        return _Module(self)

    def _get_default_module(self, ctx: Context | None = None) -> Any:
        self.calls.append("_get_default_module")
        return _Module(self)

    async def _get_default_module_async(self, ctx: Context | None = None) -> Any:
        self.calls.append("_get_default_module_async")
        return _Module(self)


async def _async(items: list[str]) -> AsyncIterator[str]:
    for item in items:
        yield item


class _Module:
    def __init__(self, template: Recording) -> None:
        self._template = template
        self.f = lambda: "F"

    @property
    def _body_stream(self) -> list[str]:
        self._template.calls.append("_body_stream")
        return ["B"]


class _Loader(jinja2.DictLoader):
    """Jinja2 source for most names; the recording template for ``rec``."""

    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__(mapping)
        self.recording: Recording | None = None

    def load(self, environment: jinja2.Environment, name: str, globals: Any = None) -> Any:
        if name == "rec":
            self.recording = Recording.make(environment, name)
            return self.recording
        return super().load(environment, name, globals)


SOURCES = {
    "include": '{% include "rec" %}',
    "include_without": '{% include "rec" without context %}',
    "import": '{% import "rec" as m %}{{ m.f() }}',
    "from_import": '{% from "rec" import f %}{{ f() }}',
    "import_with": '{% import "rec" as m with context %}{{ m.f() }}',
}


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("source", "output", "calls"),
    [
        ("include", "R", ["root_render_func(x=1)"]),
        ("include_without", "B", ["_get_default_module", "_body_stream"]),
        ("import", "F", ["_get_default_module"]),
        ("from_import", "F", ["_get_default_module"]),
        ("import_with", "F", ["make_module"]),
    ],
)
def test_jinja2_compiled_code_calls_these_methods_of_an_included_or_imported_template(
    source: str, output: str, calls: list[str], is_async: bool
) -> None:
    loader = _Loader(SOURCES)
    env = jinja2.Environment(loader=loader, enable_async=is_async, cache_size=0)
    template = env.get_template(source)
    if is_async:
        rendered = asyncio.run(template.render_async(x=1))
        calls = [c if c.startswith(("root", "_body")) else c + "_async" for c in calls]
    else:
        rendered = template.render(x=1)
    assert rendered == output
    assert loader.recording is not None and loader.recording.calls == calls


def test_jinja2_builds_a_template_from_a_module_dict_without_compiling_source() -> None:
    env = jinja2.Environment()
    template = Recording.make(env, "page.ptl")
    assert (template.name, template.filename, template.blocks) == ("page.ptl", "/page.ptl", {})
    assert template.globals == {"g": 1} and template.environment is env
    assert template.is_up_to_date  # Jinja2's cache keeps it; the PTL loader reloads
    assert flask_core.DEFAULT_NAMESPACE["range"] is range  # the helpers a PTL render drops


@pytest.mark.parametrize("framework", ["flask", "quart"])
def test_the_app_makes_its_environment_at_first_use_from_jinja_environment(
    framework: str,
) -> None:
    module = flask if framework == "flask" else quart
    app = (flask.Flask if framework == "flask" else quart.Quart)(__name__)
    assert "jinja_env" not in app.__dict__  # not made yet: config set later still counts

    class Custom(module.templating.Environment):  # type: ignore[name-defined,misc]
        pass

    app.jinja_environment = Custom
    env = app.jinja_env
    assert type(env) is Custom and app.__dict__["jinja_env"] is env  # cached on the app
    assert isinstance(env.loader, DispatchingJinjaLoader)
    assert env.is_async is (framework == "quart")


def test_flask_renders_through_render_and_generate() -> None:
    app = flask.Flask(__name__)
    app.jinja_env.loader = loader = _Loader({})
    with app.test_request_context():
        assert flask.render_template("rec") == "R"
        assert loader.recording is not None and loader.recording.calls == ["render"]
        assert "".join(flask.stream_template("rec")) == "R"
        assert loader.recording.calls == ["render", "generate"]  # one template, cached
        # A template object is rendered as it is (render_template_string's way in).
        template = Recording.make(app.jinja_env, "given")
        assert flask.render_template(template) == "R" and template.calls == ["render"]


def test_quart_renders_through_render_async_and_generate_async() -> None:
    app = quart.Quart(__name__)
    app.jinja_env.loader = loader = _Loader({})

    async def main() -> None:
        async with app.test_request_context("/"):
            assert await quart.render_template("rec") == "R"
            assert loader.recording is not None and loader.recording.calls == ["render_async"]
            stream = await quart.stream_template("rec")
            assert [chunk async for chunk in stream] == ["R"]
            assert loader.recording.calls == ["render_async", "generate_async"]
            template = Recording.make(app.jinja_env, "given")
            assert await quart.render_template(template) == "R"
            assert template.calls == ["render_async"]

    asyncio.run(main())


@pytest.mark.parametrize("framework", ["flask", "quart"])
def test_the_dispatching_loader_searches_the_app_then_blueprints_jinja_loaders(
    tmp_path: Path, framework: str
) -> None:
    # flask_core lists where a missing Jinja2 name was looked for from these same
    # public parts: each scaffold's jinja_loader, app first, blueprints in order.
    for folder in ("app", "one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "both.html").write_text(folder)
    app_class, blueprint_class = (
        (flask.Flask, flask.Blueprint) if framework == "flask" else (quart.Quart, quart.Blueprint)
    )
    app = app_class(__name__, template_folder=str(tmp_path / "app"))
    for name in ("two", "one"):
        app.register_blueprint(
            blueprint_class(name, __name__, template_folder=str(tmp_path / name))
        )
    os.remove(tmp_path / "app" / "both.html")
    assert isinstance(app.jinja_env.loader, DispatchingJinjaLoader)
    source, filename, _uptodate = app.jinja_env.loader.get_source(app.jinja_env, "both.html")
    assert (source, filename) == ("two", str(tmp_path / "two" / "both.html"))
    paths = [
        scaffold.jinja_loader.searchpath
        for scaffold in (app, *app.iter_blueprints())
        if isinstance(scaffold.jinja_loader, jinja2.FileSystemLoader)
    ]
    assert paths == [[str(tmp_path / d)] for d in ("app", "two", "one")]


@pytest.mark.parametrize("framework", ["flask", "quart"])
def test_a_list_of_names_goes_through_the_environments_select_template(framework: str) -> None:
    seen: list[list[str]] = []

    class Recorded(jinja2.Environment):
        def select_template(self, names: Any, parent: Any = None, globals: Any = None) -> Any:
            seen.append(list(names))
            return super().select_template(names, parent, globals)

    module = flask if framework == "flask" else quart
    app = (flask.Flask if framework == "flask" else quart.Quart)(__name__)
    app.jinja_environment = type(  # type: ignore[assignment]
        "Env", (Recorded, module.templating.Environment), {}
    )
    app.jinja_env.loader = jinja2.DictLoader({"b.html": "B"})

    async def quart_render() -> str:
        async with app.test_request_context("/"):
            return str(await quart.render_template(["a.html", "b.html"]))

    if framework == "flask":
        with app.test_request_context():
            assert flask.render_template(["a.html", "b.html"]) == "B"
    else:
        assert asyncio.run(quart_render()) == "B"
    assert seen == [["a.html", "b.html"]]


# -- where PTL(app) holds responses to the header policy --------------------------------------


def hooked_app(framework: str) -> Any:
    """An app whose two after_request hooks and session each put a header on the response,
    and whose ``after`` query value is set by the hook registered first."""
    module = flask if framework == "flask" else quart
    app = module.Flask(__name__) if framework == "flask" else quart.Quart(__name__)
    app.secret_key = "seam"
    order: list[str] = []
    app.config["ORDER"] = order

    @app.after_request
    def registered_first(response: Any) -> Any:
        order.append("registered first")
        response.headers["X-First"] = module.request.args.get("after", "1")
        return response

    @app.after_request
    def registered_last(response: Any) -> Any:
        order.append("registered last")
        response.headers["X-Last"] = "1"
        return response

    @app.get("/")
    def view() -> str:
        module.session["seen"] = True
        return "body"

    return app


def test_flask_sends_the_wsgi_app_attributes_answer_after_every_hook_and_the_session() -> None:
    # PTL(app) wraps app.wsgi_app (Flask's documented place for middleware): what it sees at
    # start_response is final, every after_request hook (the first registered last) and
    # the session's cookie included.
    app = hooked_app("flask")
    inner = app.wsgi_app
    seen: list[list[tuple[str, str]]] = []

    def wsgi_app(environ: Any, start_response: Any) -> Any:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            seen.append(list(headers))
            return start_response(status, [*headers, ("X-Outer", "o")])

        return inner(environ, start)

    app.wsgi_app = wsgi_app  # type: ignore[method-assign]
    response = app.test_client().get("/")
    assert app.config["ORDER"] == ["registered last", "registered first"]
    assert {"X-First", "X-Last", "Set-Cookie"} <= {name for name, _ in seen[0]}
    assert (response.status_code, response.headers["X-Outer"]) == (200, "o")


def test_quart_sends_what_the_handle_request_attribute_returns_after_every_hook() -> None:
    # PTL(app) wraps app.handle_request, which Quart's ASGI side awaits for each request's
    # response and sends: every after_request hook and the session have run, and the
    # headers are still str (Quart encodes them when it sends them).
    app = hooked_app("quart")
    handle = app.handle_request
    seen: list[dict[str, str]] = []

    async def handle_request(request: Any) -> Any:
        response = await handle(request)
        seen.append(dict(response.headers))
        response.headers["X-Outer"] = "o"
        return response

    app.handle_request = handle_request  # type: ignore[method-assign]
    response = asyncio.run(app.test_client().get("/"))
    assert app.config["ORDER"] == ["registered last", "registered first"]
    assert {"X-First", "X-Last", "Set-Cookie"} <= set(seen[0])
    assert (response.status_code, response.headers["X-Outer"]) == (200, "o")


@pytest.mark.parametrize("framework", ["flask", "quart"])
def test_werkzeugs_refusal_in_a_hook_reaches_handle_exception_as_its_last_argument(
    framework: str,
) -> None:
    # PTL(app) wraps handle_exception to answer werkzeug's refusal of a header value (raised
    # in a view, in make_response or in an after_request hook) with the 400: the error is its
    # last argument (Quart 0.23 passes the request's context first), its result is the
    # response sent (through handle_request in Quart).
    app = hooked_app(framework)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    errors: list[BaseException] = []

    def handle_exception(*args: Any) -> Any:
        errors.append(args[-1])
        if framework == "flask":
            return flask.Response("answered", status=418)

        async def answer() -> Any:
            return quart.Response("answered", status=418)

        return answer()

    app.handle_exception = handle_exception  # type: ignore[method-assign]
    client = app.test_client()
    if framework == "flask":
        response = client.get("/", query_string={"after": "a\r\nb"})
        status, body = response.status_code, response.get_data(as_text=True)
    else:

        async def get() -> tuple[int, str]:
            response = await client.get("/", query_string={"after": "a\r\nb"})
            return response.status_code, await response.get_data(as_text=True)

        status, body = asyncio.run(get())
    (error,) = errors
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    assert type(error) is ValueError and tb is not None
    assert tb.tb_frame.f_globals["__name__"] == "werkzeug.datastructures.headers"
    assert (status, body) == (418, "answered")


def test_quart_sends_what_handle_websocket_returns_as_the_denial_response() -> None:
    # PTL(app) wraps app.handle_websocket too (a WebSocket view's response is sent as an HTTP
    # denial), and handle_websocket_exception, which gets werkzeug's refusal last.
    from quart.testing import WebsocketResponseError

    app = quart.Quart(__name__)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    errors: list[BaseException] = []

    @app.websocket("/ws")
    async def socket() -> Any:
        return "denied", 403, {"X-Next": quart.websocket.args["next"]}

    handle = app.handle_websocket

    async def handle_websocket(websocket: Any) -> Any:
        response = await handle(websocket)
        response.headers["X-Outer"] = "o"
        return response

    def handle_websocket_exception(*args: Any) -> Any:
        errors.append(args[-1])

        async def answer() -> Any:
            return quart.Response("answered", status=418)

        return answer()

    app.handle_websocket = handle_websocket  # type: ignore[method-assign]
    app.handle_websocket_exception = handle_websocket_exception  # type: ignore[method-assign]

    async def connect(query: str) -> Any:
        with pytest.raises(WebsocketResponseError) as info:
            async with app.test_client().websocket("/ws?" + query) as ws:
                await ws.receive()
        return info.value.response

    denied = asyncio.run(connect("next=/a"))
    assert (denied.status_code, denied.headers["X-Outer"]) == (403, "o")
    answered = asyncio.run(connect("next=%2Fa%0D%0Ab"))
    assert answered.status_code == 418 and type(errors[0]) is ValueError
