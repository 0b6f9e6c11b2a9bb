"""The Flask integration, with real Flask apps and their test clients."""

from __future__ import annotations

import html
import importlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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
    stream_template,
)
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
