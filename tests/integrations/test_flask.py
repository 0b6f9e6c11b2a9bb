"""The Flask integration, with real Flask apps and their test clients."""

from __future__ import annotations

import html
import importlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import flask
import jinja2
import pytest
from flask import (
    Blueprint,
    Flask,
    flash,
    g,
    get_template_attribute,
    render_template_string,
    session,
    template_rendered,
)
from flask import render_template as jinja_render_template
from flask.signals import before_render_template
from werkzeug.debug import DebuggedApplication
from werkzeug.test import Client

import ptl_wsgi
from ptl_wsgi import loader as loader_module
from ptl_wsgi.contrib.flask import (
    PTL,
    TemplateNotFound,
    get_loader,
    render_template,
    render_text,
    stream_template,
)
from ptl_wsgi.contrib.flask import render_template_string as ptl_render_template_string
from ptl_wsgi.contrib.flask import stream_template_string as ptl_stream_template_string
from ptl_wsgi.html import htmltext

HERE = Path(__file__).resolve().parent / "flask_templates"
APP, BP_ONE, BP_TWO, OTHER_APP = (HERE / d for d in ("app", "bp_one", "bp_two", "other_app"))


def make_app(folder: Path = APP, **config: Any) -> Flask:
    app = Flask(__name__, template_folder=str(folder))
    app.config.update({"TESTING": True, "SECRET_KEY": "test", **config})
    return app


def add_view(app: Flask, name: str, /, **context: Any) -> None:
    """A GET view at /<name> that renders template *name* with *context*."""

    @app.get("/" + name, endpoint=name)
    def view() -> htmltext:
        return render_template(name, **context)


def write(path: Path, source: str) -> None:
    """Replace *path* with a later mtime, so a reload is due whatever the clock did."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(source, encoding="utf-8")
    later = max(before + 2_000_000_000, path.stat().st_mtime_ns)
    os.utime(path, ns=(later, later))


# -- setup ---------------------------------------------------------------------------


def test_ptl_app_and_returned_htmltext_is_html() -> None:
    app = make_app()
    PTL(app)
    add_view(app, "index.ptl", name="<World>")
    response = app.test_client().get("/index.ptl")
    assert response.status_code == 200
    assert response.content_type == "text/html; charset=utf-8"
    assert response.text == "<p>Hello, &lt;World&gt;!</p>"
    assert isinstance(app.extensions["ptl"].loader, loader_module.Loader)
    assert app.config["PTL_AUTO_RELOAD"] is None


def test_init_app_factory_two_apps_in_one_process() -> None:
    ptl = PTL()

    def create_app(folder: Path) -> Flask:
        app = make_app(folder)
        ptl.init_app(app)
        add_view(app, "other.ptl")
        return app

    one, two = create_app(APP), create_app(OTHER_APP)
    assert one.test_client().get("/other.ptl").text == "app one"
    assert two.test_client().get("/other.ptl").text == "app two"
    assert get_loader(one) is not get_loader(two)


def test_render_without_ptl_setup_says_so() -> None:
    app = make_app()
    with app.test_request_context(), pytest.raises(RuntimeError, match=r"PTL\(app\)"):
        render_template("index.ptl", name="x")


def test_app_folder_first_then_blueprints_in_registration_order() -> None:
    def create_app(*blueprints: Blueprint) -> Flask:
        app = make_app()
        PTL(app)
        for blueprint in blueprints:
            app.register_blueprint(blueprint)
        return app

    def blueprints() -> tuple[Blueprint, Blueprint]:
        return (
            Blueprint("one", __name__, template_folder=str(BP_ONE)),
            Blueprint("two", __name__, template_folder=str(BP_TWO)),
        )

    one, two = blueprints()
    app = create_app(one, two)
    with app.test_request_context():
        assert render_template("shared.ptl") == "shared from app"
        assert render_template("both.ptl") == "both from bp_one"
        # A blueprint's template imports the app's layout relatively.
        assert render_template("uses_app_layout.ptl", text="<x>") == (
            '<div class="box">&lt;x&gt;</div>'
        )
    one, two = blueprints()
    with create_app(two, one).test_request_context():
        assert render_template("both.ptl") == "both from bp_two"


def test_ptl_search_path_comes_last() -> None:
    app = make_app(BP_ONE, PTL_SEARCH_PATH=[str(OTHER_APP), "flask_templates/app"])
    PTL(app)
    with app.test_request_context():
        assert render_template("other.ptl") == "app two"
        assert render_template("shared.ptl") == "shared from bp_one"
        assert render_template("index.ptl", name="n") == "<p>Hello, n!</p>"  # relative to root


# -- context ---------------------------------------------------------------------------


def test_context_processors_app_and_blueprint() -> None:
    app = make_app()
    PTL(app)
    blueprint = Blueprint("section", __name__, url_prefix="/bp")

    @app.context_processor
    def site() -> dict[str, str]:
        return {"site": "S", "title": "from processor"}

    @blueprint.context_processor
    def section() -> dict[str, str]:
        return {"section": "B"}

    @blueprint.get("/page")
    def bp_page() -> htmltext:
        return render_template("context.ptl")

    @app.get("/page")
    def app_page() -> htmltext:
        return render_template("context.ptl", title="explicit <wins>")

    app.register_blueprint(blueprint)
    client = app.test_client()
    assert client.get("/bp/page").text == "S|B|from processor"
    assert client.get("/page").text == "S|-|explicit &lt;wins&gt;"


def test_flask_template_globals() -> None:
    app = make_app(SITE_NAME="Site & Co")
    PTL(app)
    app.add_template_global(lambda text: text.upper() + "!", "shout")

    @app.get("/globals")
    def globals_view() -> htmltext:
        flash("saved <ok>")
        session["user"] = "ann"
        g.colour = "blue"
        return render_template("globals.ptl")

    text = app.test_client().get("/globals").text
    assert text == (
        "url=/globals?q=a%26b flashes=saved &lt;ok&gt; config=Site &amp; Co path=/globals "
        "session=ann g=blue shout=HI!"
    )


def test_kwargs_template_sees_globals_but_not_jinja_helpers() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context():
        keys = render_template("globals.ptl:keys", mine=1).split(",")
    for key in ("url_for", "get_flashed_messages", "config", "request", "session", "g", "mine"):
        assert key in keys
    assert "lipsum" not in keys and "range" not in keys


def test_missing_parameter_names_template_and_parameter() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context(), pytest.raises(TypeError, match=r"'index\.ptl'.*'name'"):
        render_template("index.ptl")


# -- signals ---------------------------------------------------------------------------


def test_signals_carry_the_template() -> None:
    app = make_app()
    PTL(app)
    add_view(app, "index.ptl", name="N")
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def recorder(kind: str) -> Callable[..., None]:
        def receive(sender: Flask, template: Any, context: dict[str, Any], **_: Any) -> None:
            assert sender is app
            seen.append((kind, template.name, context))

        return receive

    with (
        before_render_template.connected_to(recorder("before"), app),
        template_rendered.connected_to(recorder("after"), app),
    ):
        app.test_client().get("/index.ptl")
    assert [(kind, name) for kind, name, _ in seen] == [
        ("before", "index.ptl"),
        ("after", "index.ptl"),
    ]
    assert seen[1][2]["name"] == "N"
    assert "request" in seen[1][2]  # the context after Flask's context processors


# -- views returning markup -----------------------------------------------------------


def test_view_returns_an_imported_template_functions_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ptl_wsgi.install()
    monkeypatch.syspath_prepend(str(HERE))
    pages = importlib.import_module("flask_test_pages")
    app = make_app()

    @app.get("/hi")
    def hi() -> htmltext:
        return pages.greeting("<Ann>")

    response = app.test_client().get("/hi")
    assert response.content_type == "text/html; charset=utf-8"
    assert response.text == "<h1>Hi &lt;Ann&gt;</h1>"


def test_plain_template_output_is_escaped() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context():
        assert render_template("plain.ptl") == "&lt;b&gt;plain&lt;/b&gt;"


# -- errors -----------------------------------------------------------------------------


def test_template_not_found_is_jinja2s_and_lists_where_it_looked() -> None:
    app = make_app()
    PTL(app)
    app.register_blueprint(Blueprint("one", __name__, template_folder=str(BP_ONE)))
    with app.test_request_context(), pytest.raises(TemplateNotFound) as info:
        render_template("nope/missing.ptl")
    error = info.value
    assert isinstance(error, jinja2.TemplateNotFound)
    assert isinstance(error, loader_module.TemplateNotFound)
    assert error.name == "nope/missing.ptl"
    assert error.templates == ["nope/missing.ptl"]
    assert error.tried == [str(APP / "nope/missing.ptl"), str(BP_ONE / "nope/missing.ptl")]
    for place in error.tried:
        assert place in str(error)


def test_missing_function_is_template_not_found() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context(), pytest.raises(jinja2.TemplateNotFound, match="'nope'"):
        render_template("index.ptl:nope")


@pytest.fixture
def debugged(tmp_path: Path) -> Iterator[Client]:
    """A client for the app wrapped in Werkzeug's debugger, as ``flask run --debug`` does."""
    app = make_app(tmp_path, TESTING=False, DEBUG=True)
    PTL(app)
    (tmp_path / "broken.ptl").write_text(
        'def render [html] ():\n    "<p>fine</p>"\n    x = = "ptl-broken-line"\n'
    )
    (tmp_path / "raises.ptl").write_text((APP / "raises.ptl").read_text())
    add_view(app, "broken.ptl")
    add_view(app, "raises.ptl", items=[1, 0])
    yield Client(DebuggedApplication(app, evalex=False))


def test_debugger_shows_ptl_syntax_error(debugged: Client, tmp_path: Path) -> None:
    response = debugged.get("/broken.ptl")
    assert response.status_code == 500
    page = html.unescape(response.text)
    assert "<h1>SyntaxError</h1>" in page
    assert f'File "{tmp_path / "broken.ptl"}", line 3\n    x = = "ptl-broken-line"' in page


def test_debugger_shows_ptl_frame_of_runtime_error(debugged: Client, tmp_path: Path) -> None:
    response = debugged.get("/raises.ptl")
    assert response.status_code == 500
    page = html.unescape(response.text)
    assert "ZeroDivisionError: division by zero" in page
    frame = re.search(
        rf'<cite class="filename">"{re.escape(str(tmp_path / "raises.ptl"))}"</cite>,\s*'
        r'line <em class="line">4</em>.*?<pre class="line current">(.*?)</pre>',
        page,
        re.DOTALL,
    )
    assert frame is not None
    assert '"<li>%s</li>" % (1 / item)' in frame.group(1)


# -- Jinja2 interplay --------------------------------------------------------------------


def test_jinja_markup_into_ptl_and_ptl_into_jinja() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context():
        button = get_template_attribute("macros.html", "button")("<Save>")
        out = render_template("interop.ptl", button=button, user_text="<script>")
        assert out == "<div><button>&lt;Save&gt;</button>&lt;script&gt;</div>"
        card = render_template("interop.ptl:card", title="R&D")
        assert card == "<b>R&amp;D</b>"
        assert render_template_string("{{ card }}|{{ text }}", card=card, text="<i>") == (
            "<b>R&amp;D</b>|&lt;i&gt;"
        )
        assert jinja_render_template("wrap.html", card=card, text="<i>") == (
            "<section><b>R&amp;D</b>|&lt;i&gt;</section>"
        )


# -- auto-reload ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "debug", "reloads"),
    [
        ({}, False, False),
        ({}, True, True),
        ({"TEMPLATES_AUTO_RELOAD": True}, False, True),
        ({"TEMPLATES_AUTO_RELOAD": False}, True, False),
        ({"PTL_AUTO_RELOAD": True, "TEMPLATES_AUTO_RELOAD": False}, False, True),
        ({"PTL_AUTO_RELOAD": False}, True, False),
    ],
)
def test_auto_reload_follows_flask(
    tmp_path: Path, config: dict[str, Any], debug: bool, reloads: bool
) -> None:
    page = tmp_path / "page.ptl"
    write(page, 'def render [html] ():\n    "old"\n')
    app = make_app(tmp_path, **config)
    PTL(app)
    app.debug = debug
    add_view(app, "page.ptl")
    client = app.test_client()
    assert client.get("/page.ptl").text == "old"
    write(page, 'def render [html] ():\n    "new"\n')
    assert client.get("/page.ptl").text == ("new" if reloads else "old")


def test_a_half_written_template_keeps_the_last_good_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    page = tmp_path / "page.ptl"
    write(page, 'def render [html] ():\n    "<p>good</p>"\n')
    app = make_app(tmp_path)
    PTL(app)
    app.debug = True  # auto-reload, as under `flask run --debug`
    add_view(app, "page.ptl")
    client = app.test_client()
    assert client.get("/page.ptl").text == "<p>good</p>"
    caplog.set_level(logging.WARNING, logger="ptl_wsgi.loader")
    write(page, 'def render [html] ():\n    "<p>ne')  # caught half-way through a save
    response = client.get("/page.ptl")
    assert (response.status_code, response.text) == (200, "<p>good</p>")
    assert any("page.ptl" in r.getMessage() for r in caplog.records if r.name == "ptl_wsgi.loader")
    write(page, 'def render [html] ():\n    "<p>new</p>"\n')
    assert client.get("/page.ptl").text == "<p>new</p>"


# -- streaming ----------------------------------------------------------------------------


def test_stream_template_yields_as_the_template_does() -> None:
    app = make_app()
    PTL(app)
    events: list[str] = []
    rendered: list[str] = []

    @app.get("/stream")
    def stream() -> Iterator[htmltext]:
        return stream_template("stream.ptl", items=["a", "<b>"], events=events)

    def on_rendered(sender: Flask, template: Any, **_: Any) -> None:
        rendered.append(template.name)

    with template_rendered.connected_to(on_rendered, app):
        response = app.test_client().get("/stream", buffered=False)
        assert response.is_streamed
        chunks = iter(response.response)
        assert next(chunks) == b"<ul data-path='/stream'>"
        assert events == [] and rendered == []  # nothing beyond the first yield has run
        assert next(chunks) == b"<li>a</li>"
        assert events == ["a"]
        assert b"".join(chunks) == b"<li>&lt;b&gt;</li>&lt;tail &amp; end&gt;"
        response.close()
    assert rendered == ["stream.ptl"]


def test_render_template_joins_a_generator_template() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context("/joined"):
        out = render_template("stream.ptl", items=["x"], events=[])
    assert out == "<ul data-path='/joined'><li>x</li>&lt;tail &amp; end&gt;"


def test_stream_of_an_html_template_is_one_chunk() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context():
        assert list(stream_template("index.ptl", name="<n>")) == ["<p>Hello, &lt;n&gt;!</p>"]


# -- one render_template: Flask's own functions render .ptl names ------------------------

PTL_SOURCE_MARK = "def render [html]"  # text of index.ptl's source, never to be served


def test_flasks_own_render_template_renders_ptl_and_jinja_in_one_app() -> None:
    app = make_app()
    PTL(app)

    @app.get("/ptl")
    def ptl_page() -> str:
        return flask.render_template("index.ptl", name="<W>")

    @app.get("/jinja")
    def jinja_page() -> str:
        return flask.render_template("page.html", title="<t>")

    client = app.test_client()
    response = client.get("/ptl")
    assert response.content_type == "text/html; charset=utf-8"
    assert response.text == "<p>Hello, &lt;W&gt;!</p>"
    assert client.get("/jinja").text == "<h1>&lt;t&gt;</h1>"
    with app.test_request_context():
        # Ours renders Jinja2 names too: it is Flask's function.
        assert render_template("page.html", title="&") == "<h1>&amp;</h1>"
        assert isinstance(flask.render_template("index.ptl", name="x"), htmltext)


def test_ptl_on_an_app_whose_jinja_env_exists_already() -> None:
    app = make_app()
    app.add_template_global(lambda: "G", "early")  # creates app.jinja_env before PTL(app)
    PTL(app)
    with app.test_request_context():
        assert flask.render_template("index.ptl", name="<n>") == "<p>Hello, &lt;n&gt;!</p>"
        assert flask.render_template_string("{{ early() }}") == "G"


def test_ptl_source_is_never_served_by_jinja() -> None:
    app = make_app()
    PTL(app)
    env = app.jinja_env
    with app.test_request_context():
        assert env.get_template("index.ptl").render(name="<j>") == "<p>Hello, &lt;j&gt;!</p>"
        with pytest.raises(jinja2.TemplateNotFound, match="no Jinja2 source"):
            env.loader.get_source(env, "index.ptl")
        included = flask.render_template_string('[{% include "index.ptl" %}]', name="<i>")
        assert included == "[<p>Hello, &lt;i&gt;!</p>]"
        with pytest.raises(jinja2.TemplateRuntimeError, match=r"cannot extend.*'index\.ptl'"):
            flask.render_template("extends.html", name="x")
        with pytest.raises(jinja2.TemplateRuntimeError, match="cannot extend"):
            flask.render_template_string('{% extends "index.ptl" %}', name="x")
        assert env.select_template(["gone.html", "index.ptl"]).render(name="s") == (
            "<p>Hello, s!</p>"
        )
        # A loader set later, directly on the environment, is wrapped as well.
        env.loader = jinja2.FileSystemLoader(str(APP))
        assert env.get_template("index.ptl").render(name="f") == "<p>Hello, f!</p>"
        with pytest.raises(jinja2.TemplateNotFound):
            env.loader.get_source(env, "index.ptl")
        assert env.get_template("page.html").render(title="ok") == "<h1>ok</h1>"


def test_custom_jinja_environment_with_its_own_loader_still_renders_ptl() -> None:
    class CustomFlask(Flask):
        def create_jinja_environment(self) -> Any:
            return flask.templating.Environment(self, loader=jinja2.FileSystemLoader(str(APP)))

    app = CustomFlask(__name__, template_folder=str(APP))
    app.config.update(TESTING=True)
    PTL(app)

    @app.get("/")
    def index() -> str:
        return flask.render_template("index.ptl", name="<c>")

    text = app.test_client().get("/").text
    assert PTL_SOURCE_MARK not in text
    assert text == "<p>Hello, &lt;c&gt;!</p>"


def test_jinja_include_of_ptl_renders_it_with_the_context() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context():
        out = flask.render_template("includes.html", name="<n>", title="R&D")
        assert out == "<main><p>Hello, &lt;n&gt;!</p>|<b>R&amp;D</b>|app one</main>"
        assert flask.render_template("include_no_context.html") == "[app one]"
        # A [plain] template's output is escaped wherever it is included, with context or not.
        included = '{% include "plain.ptl" %}|{% include "plain.ptl" without context %}'
        assert flask.render_template_string(included) == (
            "&lt;b&gt;plain&lt;/b&gt;|&lt;b&gt;plain&lt;/b&gt;"
        )


def test_jinja_import_of_ptl_gives_its_functions() -> None:
    app = make_app()
    PTL(app)
    with app.test_request_context():
        assert flask.render_template("imports.html", title="<x>") == (
            "<b>&lt;x&gt;</b>|<b>a&amp;b</b>"
        )
        assert get_template_attribute("interop.ptl", "card")("R&D") == "<b>R&amp;D</b>"
        with pytest.raises(jinja2.UndefinedError, match="nope"):
            flask.render_template_string('{% from "interop.ptl" import nope %}{{ nope() }}')
        with pytest.raises(jinja2.TemplateRuntimeError, match=r"import 'interop\.ptl'"):
            flask.render_template_string('{% import "interop.ptl:card" as c %}{{ c.x }}')


def test_jinja_import_of_a_ptl_module_without_a_render_template(tmp_path: Path) -> None:
    # A module of macros has no render: importing from it works, rendering it does not.
    write(tmp_path / "macros.ptl", "def card [html] (title):\n    '<b>%s</b>' % title\n")
    app = make_app(tmp_path)
    PTL(app)
    with app.test_request_context():
        source = '{% from "macros.ptl" import card %}{{ card("<x>") }}'
        assert flask.render_template_string(source) == "<b>&lt;x&gt;</b>"
        with pytest.raises(TemplateNotFound, match=r"no template 'render' in macros\.ptl"):
            flask.render_template("macros.ptl")


def test_blueprint_templates_through_flasks_render_template() -> None:
    app = make_app()
    PTL(app)
    blueprint = Blueprint("one", __name__, template_folder=str(BP_ONE), url_prefix="/one")

    @blueprint.get("/")
    def page() -> str:
        return flask.render_template("both.ptl") + "|" + flask.render_template("shared.ptl")

    app.register_blueprint(blueprint)  # after PTL(app)
    assert app.test_client().get("/one/").text == "both from bp_one|shared from app"


# -- render_template_string / stream_template_string: PTL source -----------------------


def test_render_template_string_renders_ptl_source() -> None:
    app = make_app()
    PTL(app)
    app.add_template_global(lambda text: text.upper(), "shout")

    @app.context_processor
    def site() -> dict[str, str]:
        return {"site": "S&S"}

    seen: list[Any] = []

    def record(sender: Flask, template: Any, context: dict[str, Any], **_: Any) -> None:
        seen.append((template, context["who"]))

    source = (
        "from .sub.layout import box\n"
        "def render [html] (who, site, shout):\n"
        '    box("<i>%s</i> %s %s" % (who, site, shout("hi")))\n'
    )
    with app.test_request_context(), template_rendered.connected_to(record, app):
        out = ptl_render_template_string(source, who="<script>")
        assert out == '<div class="box"><i>&lt;script&gt;</i> S&amp;S HI</div>'
        assert isinstance(out, htmltext)
        plain = 'def render [plain] ():\n    "<b>&</b>"\n'
        assert ptl_render_template_string(plain, who="w") == "&lt;b&gt;&amp;&lt;/b&gt;"
        # Flask's own _string function keeps meaning Jinja2 source.
        assert render_template_string("{{ who }}", who="<j>") == "&lt;j&gt;"
        with pytest.raises(jinja2.TemplateNotFound, match="'render'"):
            ptl_render_template_string('def other [html] ():\n    "x"\n')
    assert len(seen) == 3
    assert isinstance(seen[0][0], jinja2.Template) and seen[0][1] == "<script>"


def test_stream_template_string_streams_ptl_source() -> None:
    app = make_app()
    PTL(app)
    source = "def render(items):\n    for item in items:\n        yield item\n"

    @app.get("/s")
    def streamed() -> Any:
        return ptl_stream_template_string(source, items=["<a>", htmltext("<b>")])

    response = app.test_client().get("/s", buffered=False)
    assert response.is_streamed
    assert list(response.response) == [b"&lt;a&gt;", b"<b>"]
    response.close()


# -- lists of names ----------------------------------------------------------------------


def test_a_list_of_names_renders_the_first_that_exists() -> None:
    app = make_app()
    PTL(app)
    app.register_blueprint(Blueprint("one", __name__, template_folder=str(BP_ONE)))
    with app.test_request_context():
        names = ["gone.ptl", "index.ptl:nope", "index.ptl", "other.ptl"]
        assert flask.render_template(names, name="<l>") == "<p>Hello, &lt;l&gt;!</p>"
        assert render_template(["gone.html", "page.html"], title="t") == "<h1>t</h1>"
        assert flask.render_template(("gone.html", "other.ptl")) == "app one"
        assert list(flask.stream_template(["gone.ptl", "other.ptl"])) == ["app one"]
        with pytest.raises(TemplateNotFound) as info:
            flask.render_template(["a.ptl", "b.ptl", "c.html"])
    error = info.value
    assert isinstance(error, jinja2.TemplatesNotFound)
    assert error.templates == ["a.ptl", "b.ptl", "c.html"]
    places = [str(folder / name) for name in ("a.ptl", "b.ptl") for folder in (APP, BP_ONE)]
    assert error.tried[:4] == places
    assert str(APP / "c.html") in error.tried
    for text in ["'a.ptl'", "'b.ptl'", "'c.html'", *places]:
        assert text in str(error)


# -- EXPLAIN_TEMPLATE_LOADING ------------------------------------------------------------


def test_explain_template_loading_logs_each_place(caplog: pytest.LogCaptureFixture) -> None:
    app = make_app(EXPLAIN_TEMPLATE_LOADING=True)
    PTL(app)
    app.register_blueprint(Blueprint("one", __name__, template_folder=str(BP_ONE)))
    caplog.set_level(logging.INFO, logger=app.logger.name)
    with app.test_request_context():
        flask.render_template("both.ptl")
        with pytest.raises(jinja2.TemplateNotFound):
            flask.render_template("gone.ptl")
        flask.render_template("page.html", title="t")
    messages = [r.getMessage() for r in caplog.records if r.name == app.logger.name]
    assert len(messages) == 3
    found, missing, jinja = messages
    assert found.startswith("Locating template 'both.ptl':")
    # PTL's own folders (Jinja2's loader is not asked for a .ptl name), in search order.
    assert found.index(f"trying PTL folder of application {app.import_name!r}") < found.index(
        "trying PTL folder of blueprint 'one'"
    )
    assert found.count("-> no match") == 1
    assert f"-> found ({str(BP_ONE / 'both.ptl')!r})" in found
    assert missing.startswith("Locating template 'gone.ptl':")
    assert missing.count("-> no match") == 2
    assert "Error: the template could not be found." in missing
    assert jinja.startswith("Locating template 'page.html':")  # Flask's own, for Jinja2


def test_explain_is_silent_when_off(caplog: pytest.LogCaptureFixture) -> None:
    app = make_app()
    PTL(app)
    caplog.set_level(logging.DEBUG, logger=app.logger.name)
    with app.test_request_context():
        flask.render_template("index.ptl", name="n")
    assert not [r for r in caplog.records if r.name == app.logger.name]


# -- streaming and signals through Flask's functions -------------------------------------


def test_flasks_stream_template_streams_a_ptl_generator() -> None:
    app = make_app()
    PTL(app)
    events: list[str] = []

    @app.get("/stream")
    def stream() -> Any:
        return flask.stream_template("stream.ptl", items=["a", "<b>"], events=events)

    response = app.test_client().get("/stream", buffered=False)
    chunks = iter(response.response)
    assert next(chunks) == b"<ul data-path='/stream'>"
    assert events == []
    assert b"".join(chunks) == b"<li>a</li><li>&lt;b&gt;</li>&lt;tail &amp; end&gt;"
    response.close()


def test_signals_fire_once_per_render_with_the_rendered_template() -> None:
    app = make_app()
    PTL(app)
    seen: list[tuple[str, Any]] = []

    def recorder(kind: str) -> Callable[..., None]:
        def receive(sender: Flask, template: Any, context: dict[str, Any], **_: Any) -> None:
            seen.append((kind, template))

        return receive

    with (
        app.test_request_context(),
        before_render_template.connected_to(recorder("before"), app),
        template_rendered.connected_to(recorder("after"), app),
    ):
        flask.render_template(["gone.ptl", "index.ptl"], name="n")
        assert [(kind, t.name) for kind, t in seen] == [
            ("before", "index.ptl"),
            ("after", "index.ptl"),
        ]
        assert isinstance(seen[0][1], jinja2.Template)
        assert seen[0][1].filename == str(APP / "index.ptl")
        seen.clear()
        flask.render_template("includes.html", name="n", title="t")  # includes send none
        assert [(kind, t.name) for kind, t in seen] == [
            ("before", "includes.html"),
            ("after", "includes.html"),
        ]
        seen.clear()
        list(flask.stream_template("index.ptl", name="n"))
        assert [(kind, t.name) for kind, t in seen] == [
            ("before", "index.ptl"),
            ("after", "index.ptl"),
        ]


# -- render_text: raw text is explicit ----------------------------------------------------


def test_mail_body_is_raw_through_render_text_and_escaped_in_html() -> None:
    app = make_app()
    PTL(app)
    rendered: list[str] = []

    def on_rendered(sender: Flask, template: Any, **_: Any) -> None:
        rendered.append(template.name)

    @app.get("/mail")
    def mail_page() -> str:
        return flask.render_template("mail.ptl", user="Ann <a@b>")

    with app.test_request_context(), template_rendered.connected_to(on_rendered, app):
        body = render_text("mail.ptl", user="Ann <a@b>")
        assert body == "Dear Ann <a@b>, R&D <team> says hi."
        assert type(body) is str
        assert render_text(["gone.ptl", "mail.ptl"], user="x").startswith("Dear x,")
        html_body = render_template("mail.ptl", user="Ann <a@b>")
    assert rendered == ["mail.ptl", "mail.ptl", "mail.ptl"]
    assert html_body == "Dear Ann &lt;a@b&gt;, R&amp;D &lt;team&gt; says hi."
    assert app.test_client().get("/mail").text == html_body


def test_ptl_leaves_jinja_env_to_be_made_lazily_with_the_final_config() -> None:
    app = make_app()
    PTL(app)
    assert "jinja_env" not in app.__dict__
    app.config["TEMPLATES_AUTO_RELOAD"] = True  # set after PTL(app), as a factory may
    assert app.jinja_env.auto_reload is True
    with app.test_request_context():
        assert flask.render_template("other.ptl") == "app one"


def test_a_jinja_name_that_reaches_a_ptl_file_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "real.ptl", 'def render [html] ():\n    "rendered"\n')
    (tmp_path / "alias.html").symlink_to(tmp_path / "real.ptl")
    app = make_app(tmp_path)
    PTL(app)
    with app.test_request_context():
        assert flask.render_template("real.ptl") == "rendered"
        for name in ("alias.html", "REAL.PTL", "./real.ptl"):
            with pytest.raises(jinja2.TemplateNotFound) as info:
                flask.render_template(name)
            assert PTL_SOURCE_MARK not in str(info.value)
        with pytest.raises(jinja2.TemplateNotFound, match="is a PTL template"):
            flask.render_template("alias.html")


def test_jinja_include_and_import_of_ptl_in_an_async_flask_environment() -> None:
    # Jinja2's compiled code awaits an included template's root_render_func and imports
    # through _get_default_module_async when enable_async is on.
    app = make_app()
    app.jinja_options = {"enable_async": True}
    PTL(app)
    app.add_template_global("app one", "site")
    with app.test_request_context():
        out = flask.render_template("includes.html", name="<n>", title="R&D")
        assert out == "<main><p>Hello, &lt;n&gt;!</p>|<b>R&amp;D</b>|app one</main>"
        assert flask.render_template("include_no_context.html") == "[app one]"
        assert flask.render_template("imports.html", title="<t>") == (
            "<b>&lt;t&gt;</b>|<b>a&amp;b</b>"
        )


# -- the one header policy holds for Flask's responses ----------------------------------------

HOSTILE = ["\r", "\n", "\r\n", "\x00", "\x0b", "\x7f", "\x85", "\u2028"]


def header_app(**config: Any) -> Flask:
    app = make_app(**config)
    PTL(app)

    @app.get("/tuple")
    def in_a_tuple() -> Any:
        return "secret", 200, {"X-Next": flask.request.args["next"]}

    @app.get("/set")
    def set_on_the_response() -> Any:
        response = flask.make_response("secret")
        response.headers["X-Next"] = flask.request.args["next"]
        return response

    @app.get("/bug")
    def bug() -> Any:
        raise ValueError("Header values must not contain newline characters.")

    return app


@pytest.mark.parametrize("testing", [True, False], ids=["testing", "production"])
@pytest.mark.parametrize("path", ["/tuple", "/set"])
@pytest.mark.parametrize("char", HOSTILE)
def test_a_hostile_header_from_a_flask_view_is_a_400(char, path, testing, caplog):
    # CR/LF: werkzeug raises before any check of ours (a 500, or raised when testing);
    # U+0085, NUL, ...: werkzeug lets them through to the client.
    app = header_app(TESTING=testing, PTL_CSP=True)
    with caplog.at_level(logging.WARNING):
        response = app.test_client().get(path, query_string={"next": f"/a{char}Set-Cookie: s=1"})
    assert response.status_code == 400
    assert "X-Next" not in response.headers
    assert "Set-Cookie" not in response.headers
    assert b"secret" not in response.data
    assert "nonce-" in response.headers["Content-Security-Policy"]
    assert "refused GET " + path in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_good_headers_and_other_errors_of_a_flask_view_keep_their_answers():
    app = header_app(TESTING=False)
    client = app.test_client()
    response = client.get("/tuple", query_string={"next": "/fine\tok"})
    assert (response.status_code, response.headers["X-Next"]) == (200, "/fine\tok")
    assert client.get("/bug").status_code == 500  # our own ValueError, not werkzeug's check
    with pytest.raises(ValueError):
        header_app(TESTING=True).test_client().get("/bug")


def hooked_app(**config: Any) -> Flask:
    """An app with an after_request hook registered before ``PTL(app)`` and one after
    (Flask runs them in reverse: the first one last), each copying a query value into a
    header; a view that returns a response Flask must finalize."""
    app = make_app(**config)

    @app.after_request
    def before_ptl(response: flask.Response) -> flask.Response:
        if "before" in flask.request.args:
            response.headers["X-Before"] = flask.request.args["before"]
        return response

    PTL(app)

    @app.after_request
    def after_ptl(response: flask.Response) -> flask.Response:
        if "after" in flask.request.args:
            response.headers["X-After"] = flask.request.args["after"]
        return response

    @app.get("/")
    def page() -> Any:
        return "secret"

    return app


@pytest.mark.parametrize("testing", [True, False], ids=["testing", "production"])
@pytest.mark.parametrize("hook", ["before", "after"])
@pytest.mark.parametrize("char", [*HOSTILE, "\u0160"])
def test_a_hostile_header_from_any_after_request_hook_is_a_400(char, hook, testing, caplog):
    # The policy's check runs where every hook has run, whenever the hook was registered.
    app = hooked_app(TESTING=testing, PTL_CSP=True)
    with caplog.at_level(logging.WARNING):
        response = app.test_client().get("/", query_string={hook: f"/a{char}Set-Cookie: s=1"})
    assert response.status_code == 400
    assert "X-Before" not in response.headers and "X-After" not in response.headers
    assert "Set-Cookie" not in response.headers
    assert b"secret" not in response.data
    assert "nonce-" in response.headers["Content-Security-Policy"]
    assert "refused GET /" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_good_headers_from_after_request_hooks_are_sent() -> None:
    app = hooked_app(PTL_CSP=True)
    response = app.test_client().get("/", query_string={"before": "/b\tok", "after": "/a"})
    assert response.status_code == 200 and response.data == b"secret"
    assert (response.headers["X-Before"], response.headers["X-After"]) == ("/b\tok", "/a")
    assert len(response.headers.getlist("Content-Security-Policy")) == 1
