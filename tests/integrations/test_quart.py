"""The Quart integration, with real Quart apps and their own test client."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import jinja2
import pytest

quart = pytest.importorskip("quart")

from ptl_helpers import write_files  # noqa: E402
from quart import Blueprint, Quart, flash, g, session  # noqa: E402
from quart.signals import before_render_template, template_rendered  # noqa: E402

from ptl_wsgi.contrib.quart import (  # noqa: E402
    PTL,
    PTLTemplate,
    TemplateNotFound,
    TemplatesNotFound,
    get_loader,
    render_template,
    render_template_string,
    render_text,
    stream_template,
    stream_template_string,
)
from ptl_wsgi.csp import csp_nonce  # noqa: E402
from ptl_wsgi.html import htmltext  # noqa: E402

HERE = Path(__file__).resolve().parent / "flask_templates"  # the Flask tests' templates
APP, BP_ONE, BP_TWO, OTHER_APP = (HERE / d for d in ("app", "bp_one", "bp_two", "other_app"))
NONCE = re.compile(r"'nonce-([^']+)'")

_T = TypeVar("_T")


def run(coroutine: Awaitable[_T]) -> _T:
    async def main() -> _T:
        return await coroutine

    return asyncio.run(main())


def make_app(folder: Path = APP, **config: Any) -> Quart:
    app = Quart(__name__, template_folder=str(folder))
    app.config.update({"TESTING": True, "SECRET_KEY": "test", **config})
    return app


async def get(app: Quart, path: str) -> tuple[int, Any, str]:
    response = await app.test_client().get(path)
    return response.status_code, response.headers, await response.get_data(as_text=True)


def in_request(app: Quart, body: Callable[[], Awaitable[_T]], path: str = "/") -> _T:
    async def main() -> _T:
        async with app.test_request_context(path):
            return await body()

    return run(main())


# -- rendering through Quart's own functions ---------------------------------------------------


def test_quart_render_template_renders_ptl_names_with_escaping() -> None:
    app = make_app()
    PTL(app)

    @app.get("/")
    async def index() -> str:
        return await quart.render_template("index.ptl", name="<script>")

    status, headers, body = run(get(app, "/"))
    assert (status, body) == (200, "<p>Hello, &lt;script&gt;!</p>")
    assert headers["Content-Type"].startswith("text/html")


def test_render_template_returns_htmltext_and_escapes_plain_output() -> None:
    app = make_app()
    PTL(app)

    async def body() -> tuple[Any, Any]:
        return await render_template("index.ptl", name="R&D"), await render_template("plain.ptl")

    page, plain = in_request(app, body)
    assert isinstance(page, htmltext) and page == "<p>Hello, R&amp;D!</p>"
    # A [plain] template's str is not markup: the one output policy escapes it.
    assert plain == "&lt;b&gt;plain&lt;/b&gt;"


def test_without_ptl_the_render_functions_refuse_rather_than_send_source() -> None:
    # Quart's own render_template would find index.ptl in templates/ and send its source.
    app = make_app()
    with pytest.raises(RuntimeError, match=r"PTL\(app\)"):
        in_request(app, lambda: render_template("index.ptl", name="x"))
    source = in_request(app, lambda: quart.render_template("index.ptl", name="x"))
    assert "def render [html]" in source  # what the check stands between


@pytest.mark.parametrize("name", ["index.ptl", "index.PTL", "index.ptl:render", "mod.py", "MOD.Py"])
def test_jinja2_never_reads_a_template_module_as_source(tmp_path: Path, name: str) -> None:
    write_files(tmp_path, {"index.ptl": APP.joinpath("index.ptl").read_text(), "mod.py": "x = 1\n"})
    app = make_app(tmp_path)
    PTL(app)
    env = app.jinja_env
    with pytest.raises(jinja2.TemplateNotFound):
        env.loader.get_source(env, name)


def test_a_jinja2_name_that_is_a_ptl_file_is_refused(tmp_path: Path) -> None:
    write_files(tmp_path, {"index.ptl": APP.joinpath("index.ptl").read_text()})
    os.symlink(tmp_path / "index.ptl", tmp_path / "alias.html")
    app = make_app(tmp_path)
    PTL(app)

    with pytest.raises(TemplateNotFound, match="is a PTL template, not Jinja2 source"):
        in_request(app, lambda: quart.render_template("alias.html", name="x"))


def test_quart_context_processors_sync_and_async_app_and_blueprint() -> None:
    app = make_app()
    PTL(app)
    bp = Blueprint("section", __name__)

    @app.context_processor
    async def site() -> dict[str, str]:
        return {"site": "<site>"}

    @bp.context_processor
    def section() -> dict[str, str]:
        return {"section": "bp&"}

    @bp.get("/page")
    async def page() -> str:
        return await quart.render_template("context.ptl", title="T")

    @app.get("/outside")
    async def outside() -> str:
        return await quart.render_template("context.ptl")

    app.register_blueprint(bp, url_prefix="/bp")
    assert run(get(app, "/bp/page"))[2] == "&lt;site&gt;|bp&amp;|T"
    assert run(get(app, "/outside"))[2] == "&lt;site&gt;|-|-"


def test_quart_template_globals_reach_templates_that_declare_them() -> None:
    app = make_app(SITE_NAME="<Site>")
    PTL(app)
    app.add_template_global(lambda text: text.upper() + "!", "shout")

    @app.get("/globals", endpoint="globals_view")
    async def view() -> str:
        await flash("saved <ok>")
        session["user"] = "<u>"
        g.colour = "red&blue"
        return await render_template("globals.ptl")

    body = run(get(app, "/globals"))[2]
    assert body == (
        "url=/globals?q=a%26b flashes=saved &lt;ok&gt; config=&lt;Site&gt; path=/globals "
        "session=&lt;u&gt; g=red&amp;blue shout=HI!"
    )


def test_signals_carry_the_ptl_template_and_the_context() -> None:
    app = make_app()
    PTL(app)
    seen: list[tuple[str, str | None, str, str]] = []

    def before(sender: Quart, template: Any, context: dict[str, Any], **extra: Any) -> None:
        seen.append(("before", template.name, type(template).__name__, context["name"]))

    def after(sender: Quart, template: Any, context: dict[str, Any], **extra: Any) -> None:
        seen.append(("after", template.name, os.path.basename(template.filename), "-"))

    with (
        before_render_template.connected_to(before, app),
        template_rendered.connected_to(after, app),
    ):
        in_request(app, lambda: quart.render_template(["gone.ptl", "index.ptl"], name="n"))
    assert seen == [
        ("before", "index.ptl", "PTLTemplate", "n"),
        ("after", "index.ptl", "index.ptl", "-"),
    ]


def test_blueprint_template_folders_in_registration_order_with_relative_imports() -> None:
    app = make_app()
    PTL(app)
    app.register_blueprint(Blueprint("one", __name__, template_folder=str(BP_ONE)))
    app.register_blueprint(Blueprint("two", __name__, template_folder=str(BP_TWO)))

    async def body() -> list[str]:
        return [
            await render_template("shared.ptl"),  # the app's folder first
            await render_template("both.ptl"),  # then blueprints in registration order
            await render_template("uses_app_layout.ptl", text="<t>"),
        ]

    assert in_request(app, body) == [
        "shared from app",
        "both from bp_one",
        '<div class="box">&lt;t&gt;</div>',
    ]


def test_a_missing_name_and_a_list_name_every_place_looked_in(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    PTL(app)
    app.register_blueprint(Blueprint("one", __name__, template_folder=str(BP_ONE)))
    with pytest.raises(TemplateNotFound) as one:
        in_request(app, lambda: render_template("gone.ptl"))
    assert one.value.tried == [str(tmp_path / "gone.ptl"), str(BP_ONE / "gone.ptl")]
    assert isinstance(one.value, jinja2.TemplateNotFound)

    with pytest.raises(TemplatesNotFound) as many:
        in_request(app, lambda: render_template(["gone.ptl", "gone.html"]))
    assert many.value.templates == ["gone.ptl", "gone.html"]
    assert many.value.tried == [
        str(tmp_path / "gone.ptl"),
        str(BP_ONE / "gone.ptl"),
        str(tmp_path / "gone.html"),
        str(BP_ONE / "gone.html"),
    ]


def test_py_template_modules_render_by_name(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "cards.py": """
                from ptl_wsgi.html import htmltext
                from ptl_wsgi.py_templates import template

                @template("html")
                def card(title):
                    return htmltext("<b>%s</b>") % title

                def helper(title):
                    return "<unmarked>"
            """
        },
    )
    app = make_app(tmp_path)
    PTL(app)
    assert in_request(app, lambda: render_template("cards.py:card", title="<t>")) == (
        "<b>&lt;t&gt;</b>"
    )
    with pytest.raises(TemplateNotFound):
        in_request(app, lambda: render_template("cards.py:helper", title="x"))


# -- streaming ------------------------------------------------------------------------------


def test_stream_template_runs_a_generator_template_step_by_step() -> None:
    app = make_app()
    PTL(app)
    events: list[str] = []

    async def body() -> list[str]:
        stream = await stream_template("stream.ptl", items=["a", "<b>"], events=events)
        chunks = []
        async for chunk in stream:
            chunks.append((chunk, list(events)))
        return chunks

    chunks = in_request(app, body, "/s")
    assert chunks == [
        ("<ul data-path='/s'>", []),  # nothing ran ahead of the first chunk
        ("<li>a</li>", ["a"]),
        ("<li>&lt;b&gt;</li>", ["a", "<b>"]),
        ("&lt;tail &amp; end&gt;", ["a", "<b>"]),  # a str yielded: escaped
    ]


def test_stream_template_through_the_test_client() -> None:
    app = make_app()
    PTL(app)

    @app.get("/list")
    async def listing() -> Any:
        return await quart.stream_template("stream.ptl", items=["x"], events=[])

    status, _headers, body = run(get(app, "/list"))
    assert (status, body) == (200, "<ul data-path='/list'><li>x</li>&lt;tail &amp; end&gt;")


# -- PTL source, raw text ---------------------------------------------------------------------


def test_render_template_string_renders_ptl_source_and_quarts_own_stays_jinja2() -> None:
    app = make_app()
    PTL(app)
    source = (
        "from .sub.layout import box\n"
        "def render [html] (title, request):\n"
        "    box('%s at %s' % (title, request.path))\n"
    )

    async def body() -> tuple[str, str, str]:
        ours = await render_template_string(source, title="<T>")
        chunks = [c async for c in await stream_template_string(source, title="S")]
        jinja = await quart.render_template_string("{{ title }}", title="<j>")
        return ours, "".join(chunks), jinja

    ours, streamed, jinja = in_request(app, body, "/x")
    assert ours == '<div class="box">&lt;T&gt; at /x</div>'
    assert streamed == '<div class="box">S at /x</div>'
    assert jinja == "&lt;j&gt;"


def test_render_text_is_raw_and_plain_str() -> None:
    app = make_app()
    PTL(app)
    text = in_request(app, lambda: render_text("mail.ptl", user="<Ann>"))
    assert text == "Dear <Ann>, R&D <team> says hi."
    assert type(text) is str


# -- Jinja2 and PTL together, in Quart's async environment -------------------------------------


def test_jinja_include_and_import_of_ptl_in_an_async_environment() -> None:
    app = make_app(SITE_NAME="app one")
    PTL(app)
    app.add_template_global("app one", "site")

    async def body() -> list[str]:
        return [
            await quart.render_template("includes.html", name="<n>", title="R&D"),
            await quart.render_template("include_no_context.html"),
            await quart.render_template("imports.html", title="<t>"),
        ]

    includes, without_context, imports = in_request(app, body)
    assert includes == "<main><p>Hello, &lt;n&gt;!</p>|<b>R&amp;D</b>|app one</main>"
    assert without_context == "[app one]"
    assert imports == "<b>&lt;t&gt;</b>|<b>a&amp;b</b>"


def test_jinja_extends_of_ptl_is_an_error() -> None:
    app = make_app()
    PTL(app)
    with pytest.raises(jinja2.TemplateRuntimeError, match="cannot extend the PTL template"):
        in_request(app, lambda: quart.render_template("extends.html"))


# -- Content-Security-Policy ------------------------------------------------------------------


def csp_app(tmp_path: Path, **config: Any) -> Quart:
    write_files(
        tmp_path,
        {
            "page.ptl": """
                from ptl_wsgi.csp import csp_nonce as current

                def render [html] (csp_nonce):
                    '<script nonce="%s"></script>' % csp_nonce
                    '<i>%s</i>' % current()

                def stream(count):
                    for index in range(count):
                        yield script(current())

                def script [html] (nonce):
                    '<script nonce="%s"></script>' % nonce
            """
        },
    )
    app = make_app(tmp_path, **{"PTL_CSP": True, **config})
    PTL(app)

    @app.get("/")
    async def page() -> str:
        return await render_template("page.ptl")

    @app.get("/stream")
    async def streamed() -> Any:
        return await stream_template("page.ptl:stream", count=2)

    @app.get("/own")
    async def own() -> Any:
        return "x", 200, {"Content-Security-Policy": "default-src 'self'"}

    @app.get("/plain")
    async def plain() -> Any:
        return "x"

    @app.get("/redirect")
    async def redirect() -> Any:
        return quart.redirect("/")

    return app


def test_csp_header_names_the_nonce_templates_receive(tmp_path: Path) -> None:
    app = csp_app(tmp_path, PTL_CSP_DIRECTIVES={"img-src": ["'self'", "data:"]})
    _status, headers, body = run(get(app, "/"))
    nonce = NONCE.search(headers["Content-Security-Policy"]).group(1)  # type: ignore[union-attr]
    assert body == f'<script nonce="{nonce}"></script><i>{nonce}</i>'
    assert "img-src 'self' data:" in headers["Content-Security-Policy"]
    assert NONCE.search(run(get(app, "/"))[1]["Content-Security-Policy"]).group(1) != nonce  # type: ignore[union-attr]


def test_csp_nonce_is_current_while_a_stream_is_sent(tmp_path: Path) -> None:
    app = csp_app(tmp_path)
    _status, headers, body = run(get(app, "/stream"))
    nonce = NONCE.search(headers["Content-Security-Policy"]).group(1)  # type: ignore[union-attr]
    assert body == f'<script nonce="{nonce}"></script>' * 2


def test_csp_concurrent_requests_each_keep_their_own_nonce(tmp_path: Path) -> None:
    # Requests interleaved on one event loop: a nonce leaking from one task to another
    # would show as a body naming another response's nonce.
    app = csp_app(tmp_path)

    async def many() -> list[tuple[int, Any, str]]:
        return await asyncio.gather(*(get(app, p) for p in ["/", "/stream"] * 10))

    nonces = set()
    for _status, headers, body in run(many()):
        nonce = NONCE.search(headers["Content-Security-Policy"]).group(1)  # type: ignore[union-attr]
        assert set(re.findall(r'nonce="([^"]+)"|<i>([^<]+)</i>', body)) <= {
            (nonce, ""),
            ("", nonce),
        }
        nonces.add(nonce)
    assert len(nonces) == 20
    with pytest.raises(LookupError):
        csp_nonce()  # and none is left current here


def test_csp_a_views_own_header_is_kept_and_early_answers_get_one(tmp_path: Path) -> None:
    app = csp_app(tmp_path)
    assert run(get(app, "/own"))[1]["Content-Security-Policy"] == "default-src 'self'"
    assert "'nonce-" in run(get(app, "/redirect"))[1]["Content-Security-Policy"]


def test_csp_is_opt_in(tmp_path: Path) -> None:
    app = csp_app(tmp_path, PTL_CSP=False)
    assert "Content-Security-Policy" not in run(get(app, "/plain"))[1]
    with pytest.raises(TypeError, match="csp_nonce"):  # no csp_nonce in the context
        in_request(app, lambda: render_template("page.ptl"))


# -- set-up, reload, errors -------------------------------------------------------------------


def test_one_extension_several_apps_each_with_its_own_templates() -> None:
    ptl = PTL()
    first, second = make_app(APP), make_app(OTHER_APP)
    ptl.init_app(first)
    ptl.init_app(second)
    assert get_loader(first) is not get_loader(second)
    assert in_request(first, lambda: render_template("other.ptl")) != in_request(
        second, lambda: render_template("other.ptl")
    )


def test_an_environment_made_before_ptl_is_converted() -> None:
    app = make_app()
    app.add_template_global("early", "made")  # creates app.jinja_env now
    PTL(app)
    assert in_request(app, lambda: quart.render_template("index.ptl", name="<e>")) == (
        "<p>Hello, &lt;e&gt;!</p>"
    )
    assert isinstance(app.jinja_env.get_template("index.ptl"), PTLTemplate)


def test_auto_reload_follows_the_config(tmp_path: Path) -> None:
    write_files(tmp_path, {"page.ptl": "def render [html] ():\n    'one'\n"})
    app = make_app(tmp_path, TEMPLATES_AUTO_RELOAD=True)
    PTL(app)
    assert in_request(app, lambda: render_template("page.ptl")) == "one"
    (tmp_path / "page.ptl").write_text("def render [html] ():\n    'two, longer'\n")
    assert in_request(app, lambda: render_template("page.ptl")) == "two, longer"
    app.config["PTL_AUTO_RELOAD"] = False
    (tmp_path / "page.ptl").write_text("def render [html] ():\n    'three, longer still'\n")
    assert in_request(app, lambda: render_template("page.ptl")) == "two, longer"


def test_an_error_in_a_template_shows_its_ptl_frame() -> None:
    app = make_app()
    PTL(app)
    with pytest.raises(ZeroDivisionError) as info:
        in_request(app, lambda: render_template("raises.ptl", items=[1, 0]))
    frames = traceback.extract_tb(info.value.__traceback__)
    assert (os.path.basename(frames[-1].filename), frames[-1].lineno) == ("raises.ptl", 4)


def test_a_syntax_error_is_located_in_the_ptl_file(tmp_path: Path) -> None:
    write_files(tmp_path, {"broken.ptl": "def render [html] ():\n    'a' +\n"})
    app = make_app(tmp_path)
    PTL(app)
    with pytest.raises(SyntaxError) as info:
        in_request(app, lambda: render_template("broken.ptl"))
    assert (os.path.basename(info.value.filename or ""), info.value.lineno) == ("broken.ptl", 2)


def test_a_bad_template_is_a_500_not_a_leak_through_the_test_client(tmp_path: Path) -> None:
    write_files(tmp_path, {"page.ptl": "def render [html] (secret):\n    '%s' % (1 / 0)\n"})
    app = make_app(tmp_path, TESTING=False)
    PTL(app)

    @app.get("/")
    async def page() -> str:
        return await render_template("page.ptl", secret="s3cr3t")

    status, _headers, body = run(get(app, "/"))
    assert status == 500
    assert "s3cr3t" not in body and "def render" not in body


@pytest.mark.parametrize(
    "source",
    ["async def render(name):\n    return name\n", "async def render(name):\n    yield name\n"],
)
def test_an_async_function_is_no_template_and_says_so(tmp_path: Path, source: str) -> None:
    # Sent on, a coroutine would be escaped as "<coroutine object ...>", never run.
    write_files(tmp_path, {"page.ptl": source})
    app = make_app(tmp_path)
    PTL(app)
    with pytest.raises(TemplateNotFound, match=r"'render' in page.ptl is an ordinary function"):
        in_request(app, lambda: quart.render_template("page.ptl", name="x"))


def test_explain_template_loading_logs_every_ptl_folder(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(APP, EXPLAIN_TEMPLATE_LOADING=True)
    PTL(app)
    app.register_blueprint(Blueprint("one", __name__, template_folder=str(BP_ONE)))
    with caplog.at_level(logging.INFO, logger=app.logger.name):
        in_request(app, lambda: render_template("both.ptl"))
    log = "\n".join(record.getMessage() for record in caplog.records)
    assert "Locating template 'both.ptl':" in log
    assert f"trying PTL folder of application {__name__!r}" in log
    assert f"-> found ({str(BP_ONE / 'both.ptl')!r})" in log


def test_a_websocket_handler_renders_ptl() -> None:
    app = make_app()
    PTL(app)

    @app.websocket("/ws")
    async def ws() -> None:
        name = await quart.websocket.receive()
        await quart.websocket.send(await render_template("index.ptl", name=name))

    async def talk() -> str:
        async with app.test_client().websocket("/ws") as socket:
            await socket.send("<ws>")
            return str(await socket.receive())

    assert run(talk()) == "<p>Hello, &lt;ws&gt;!</p>"


def test_render_text_in_an_app_context_without_a_request() -> None:
    # A mail sent from a background task or a command: no request, no nonce, same context rules.
    app = make_app(PTL_CSP=True)
    PTL(app)

    async def body() -> str:
        async with app.app_context():
            return await render_text("mail.ptl", user="<Ann>")

    assert run(body()) == "Dear <Ann>, R&D <team> says hi."


def test_an_error_in_a_streamed_template_shows_its_ptl_frame(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {"stream.ptl": "def render(items):\n    for item in items:\n        yield str(1 / item)\n"},
    )
    app = make_app(tmp_path)
    PTL(app)

    async def body() -> list[str]:
        return [chunk async for chunk in await stream_template("stream.ptl", items=[1, 0])]

    with pytest.raises(ZeroDivisionError) as info:
        in_request(app, body)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert (os.path.basename(frames[-1].filename), frames[-1].lineno) == ("stream.ptl", 3)
    assert not any(f.filename.endswith("flask_core.py") and f.name == "_call" for f in frames)


@pytest.mark.parametrize(
    "name",
    ["../secret.ptl", "sub/../../secret.ptl", "/abs/secret.ptl", "sub\\..\\..\\secret.ptl",
     "secret.ptl\x00.html", "~/secret.ptl", "secret.ptl:__class__"],
)  # fmt: skip
def test_a_hostile_name_reads_nothing_outside_the_template_folders(
    tmp_path: Path, name: str
) -> None:
    # A name that reaches render_template from a request must not climb out of the folders.
    write_files(tmp_path, {"secret.ptl": "def render [html] ():\n    'SECRET'\n"})
    (tmp_path / "templates" / "sub").mkdir(parents=True)
    app = make_app(tmp_path / "templates")
    PTL(app)
    with pytest.raises(jinja2.TemplateNotFound) as info:
        in_request(app, lambda: render_template(name))
    assert "SECRET" not in str(info.value)


def test_a_loader_set_later_on_an_environment_made_before_ptl_is_wrapped_too() -> None:
    app = make_app()
    app.add_template_global("early", "made")  # creates app.jinja_env now
    PTL(app)
    env = app.jinja_env
    env.loader = jinja2.FileSystemLoader(str(APP))  # by hand, after PTL(app)
    with pytest.raises(jinja2.TemplateNotFound, match="no Jinja2 source"):
        env.loader.get_source(env, "index.ptl")
    page = in_request(app, lambda: quart.render_template("index.ptl", name="<h>"))
    assert page == "<p>Hello, &lt;h&gt;!</p>"


# -- forms ----------------------------------------------------------------------------------


def forms_app() -> Quart:
    from ptl_wsgi.contrib.quart import form_data
    from ptl_wsgi.forms import Form, TextWidget

    app = make_app()
    PTL(app)

    @app.route("/comment", methods=["GET", "POST"])
    async def comment() -> Any:
        form = Form(await form_data())  # CSRF: Quart's, automatic inside a Quart request
        form.add(TextWidget, "text", required=True)
        if form.validate():
            return f"saved {form.values['text']}"
        return str(form.render())

    return app


def test_a_quart_request_given_to_form_unread_is_a_clear_error() -> None:
    # Its form is a coroutine: read as fields it would be a confusing failure (and a
    # coroutine never awaited); the error says how to read it.
    from ptl_wsgi.forms import Form

    app = forms_app()

    async def post() -> None:
        async with app.test_request_context("/unread", method="POST", form={"text": "x"}):
            Form(quart.request)

    with pytest.raises(TypeError, match=r"await form_data\(\)"):
        run(post())


def test_forms_in_quart_are_protected_by_quarts_csrf_policy() -> None:
    from ptl_wsgi.contrib.forms_quart import QuartCSRF

    app = forms_app()

    async def exchange() -> tuple[str, str, str]:
        client = app.test_client()
        page = await (await client.get("/comment")).get_data(as_text=True)
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        forged = await client.post("/comment", form={"text": "<x>"})
        good = await client.post("/comment", form={"text": "<x>", "csrf_token": token})
        return page, await forged.get_data(as_text=True), await good.get_data(as_text=True)

    page, forged, good = run(exchange())
    assert 'name="text"' in page
    assert "saved" not in forged and 'value="&lt;x&gt;"' in forged  # shown back, not saved
    assert good == "saved <x>"

    async def policy() -> Any:
        from ptl_wsgi.forms import Form

        async with app.test_request_context("/", method="POST"):
            return Form(None)["csrf_token"].policy

    assert isinstance(run(policy()), QuartCSRF)  # PTL(app) registers it, as Flask's


def test_quart_forms_without_a_secret_key_are_a_clear_error() -> None:
    from ptl_wsgi.contrib.quart import form_data
    from ptl_wsgi.forms import Form

    app = Quart(__name__)
    PTL(app)

    async def make() -> None:
        async with app.test_request_context("/", method="POST"):
            Form(await form_data())

    with pytest.raises(RuntimeError, match=r"QuartCSRF needs app.config\['SECRET_KEY'\]"):
        run(make())


@pytest.mark.parametrize("ptl_csp", [True, False])
def test_under_the_asgi_csp_middleware_quart_uses_its_nonce(tmp_path: Path, ptl_csp: bool) -> None:
    # One nonce per request whoever makes it: the ASGI middleware's, in the scope, is the one
    # the Quart hooks find (as Flask's find the WSGI middleware's in the environ).
    from ptl_wsgi.asgi import CSP

    app = csp_app(tmp_path, PTL_CSP=ptl_csp)
    app.asgi_app = CSP(app.asgi_app)  # type: ignore[method-assign]
    # page.ptl takes csp_nonce from the context, which PTL_CSP gives; the stream calls csp_nonce().
    for path in ("/", "/stream") if ptl_csp else ("/stream",):
        _status, headers, body = run(get(app, path))
        assert len(headers.getlist("Content-Security-Policy")) == 1
        nonce = NONCE.search(headers["Content-Security-Policy"]).group(1)  # type: ignore[union-attr]
        assert nonce in body and set(re.findall(r'nonce="([^"]+)"', body)) == {nonce}


# -- the one header policy holds for Quart's responses, as for Flask's --------------------------


def header_app(**config: Any) -> Quart:
    app = make_app(**config)
    PTL(app)

    @app.get("/tuple")
    async def in_a_tuple() -> Any:
        return "secret", 200, {"X-Next": quart.request.args["next"]}

    @app.get("/set")
    async def set_on_the_response() -> Any:
        response = await quart.make_response("secret")
        response.headers["X-Next"] = quart.request.args["next"]
        return response

    return app


@pytest.mark.parametrize("testing", [True, False], ids=["testing", "production"])
@pytest.mark.parametrize("path", ["/tuple", "/set"])
@pytest.mark.parametrize("char", ["\r\n", "\x00", "\x85", "\u2028"])
def test_a_hostile_header_from_a_quart_view_is_a_400(char, path, testing, caplog):
    app = header_app(TESTING=testing, PTL_CSP=True)
    query = urlencode({"next": f"/a{char}Set-Cookie: s=1"})
    with caplog.at_level(logging.WARNING):
        status, headers, body = run(get(app, f"{path}?{query}"))
    assert status == 400
    assert "X-Next" not in headers
    assert "secret" not in body
    assert "nonce-" in headers["Content-Security-Policy"]
    assert "refused GET " + path in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    status, headers, _ = run(get(app, f"{path}?next=/fine"))
    assert (status, headers["X-Next"]) == (200, "/fine")


def hooked_app(**config: Any) -> Quart:
    """An app with an after_request hook registered before ``PTL(app)`` and one after
    (Quart runs them in reverse: the first one last), each copying a query value into a
    header."""
    app = make_app(**config)

    @app.after_request
    async def before_ptl(response: quart.Response) -> quart.Response:
        if "before" in quart.request.args:
            response.headers["X-Before"] = quart.request.args["before"]
        return response

    PTL(app)

    @app.after_request
    async def after_ptl(response: quart.Response) -> quart.Response:
        if "after" in quart.request.args:
            response.headers["X-After"] = quart.request.args["after"]
        return response

    @app.get("/")
    async def page() -> Any:
        return "secret"

    return app


@pytest.mark.parametrize("testing", [True, False], ids=["testing", "production"])
@pytest.mark.parametrize("hook", ["before", "after"])
@pytest.mark.parametrize("char", ["\r\n", "\n", "\x00", "\x85", "\u2028", "\u0160"])
def test_a_hostile_header_from_any_after_request_hook_is_a_400(char, hook, testing, caplog):
    # The policy's check runs where every hook has run, whenever the hook was registered.
    app = hooked_app(TESTING=testing, PTL_CSP=True)
    query = urlencode({hook: f"/a{char}Set-Cookie: s=1"})
    with caplog.at_level(logging.WARNING):
        status, headers, body = run(get(app, f"/?{query}"))
    assert status == 400
    assert "X-Before" not in headers and "X-After" not in headers
    assert "Set-Cookie" not in headers
    assert "secret" not in body
    assert "nonce-" in headers["Content-Security-Policy"]
    assert "refused GET /" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_good_headers_from_after_request_hooks_are_sent() -> None:
    app = hooked_app(PTL_CSP=True)
    status, headers, body = run(get(app, "/?" + urlencode({"before": "/b\tok", "after": "/a"})))
    assert (status, body) == (200, "secret")
    assert (headers["X-Before"], headers["X-After"]) == ("/b\tok", "/a")
    assert len(headers.getlist("Content-Security-Policy")) == 1


@pytest.mark.parametrize("testing", [True, False], ids=["testing", "production"])
@pytest.mark.parametrize("char", ["\r\n", "\x85", "\u2028"])
def test_a_hostile_header_on_a_websockets_denial_response_is_a_400(char, testing, caplog):
    # A WebSocket view that answers with a response (a denial) sends it as HTTP too.
    from quart.testing import WebsocketResponseError

    app = make_app(TESTING=testing)
    PTL(app)

    @app.websocket("/ws")
    async def socket() -> Any:
        return "denied", 403, {"X-Next": quart.websocket.args["next"]}

    async def connect(next_value: str) -> Any:
        with pytest.raises(WebsocketResponseError) as info:
            async with app.test_client().websocket("/ws?" + urlencode({"next": next_value})) as ws:
                await ws.receive()
        return info.value.response

    with caplog.at_level(logging.WARNING):
        response = run(connect(f"/a{char}Set-Cookie: s=1"))
    assert response.status_code == 400 and "X-Next" not in response.headers
    assert re.search(r"refused (GET|WEBSOCKET) /ws\?next=", caplog.text)  # the test scope has GET
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    response = run(connect("/fine"))
    assert (response.status_code, response.headers["X-Next"]) == (403, "/fine")
