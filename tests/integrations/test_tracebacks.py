"""Runtime tracebacks keep the application's and the templates' frames, not ptl_wsgi's:
in Python's own traceback, Werkzeug's debugger (Flask) and Django's debug page."""

from __future__ import annotations

import html
import re
import traceback
from pathlib import Path

import flask
import pytest
from django.views.debug import ExceptionReporter
from ptl_helpers import write_files
from werkzeug.debug import DebuggedApplication

import ptl_wsgi
from ptl_wsgi import wsgi
from ptl_wsgi.contrib import flask as ptl_flask
from ptl_wsgi.loader import Loader, TemplateArgumentError
from ptl_wsgi.tracebacks import without_internal_frames

PACKAGE = str(Path(ptl_wsgi.__file__).parent)

TEMPLATES = {
    "page.ptl": """\
        from .layout import wrap

        def render [html] (user):
            "<h1>"
            wrap(user)
            "</h1>"
        """,
    "layout.ptl": """\
        def wrap [html] (user):
            "<b>%s</b>" % user.name
        """,
}


@pytest.fixture
def templates(tmp_path: Path) -> Path:
    write_files(tmp_path, TEMPLATES)
    return tmp_path


def places(tb) -> list[tuple[str, str]]:
    """(file name, function) of each frame, ptl_wsgi's marked as such."""
    return [
        (
            "ptl_wsgi/" + Path(f.filename).name
            if f.filename.startswith(PACKAGE)
            else Path(f.filename).name,
            f.name,
        )
        for f in traceback.extract_tb(tb)
    ]


TEMPLATE_FRAMES = [("page.ptl", "render"), ("layout.ptl", "wrap")]


def test_loader_render_keeps_only_its_entry_frame(templates: Path) -> None:
    loader = Loader([templates])

    def view() -> object:
        return loader.render("page.ptl", {"user": None})

    with pytest.raises(AttributeError) as info:
        view()
    assert places(info.value.__traceback__)[1:] == [
        ("test_tracebacks.py", "view"),
        ("ptl_wsgi/loader.py", "render"),  # Loader.render: the frame that re-raised
        *TEMPLATE_FRAMES,
    ]
    # The frame is marked for debuggers (Werkzeug's, Django's) and pytest.
    entry = [tb for tb in _entries(info.value.__traceback__) if _in_package(tb)]
    assert [tb.tb_frame.f_locals.get("__traceback_hide__") for tb in entry] == [True]
    assert entry[0].tb_frame.f_locals.get("__tracebackhide__") is True
    loader.close()


def test_template_call_and_render_trim_too(templates: Path) -> None:
    loader = Loader([templates])
    template = loader.get_template("page.ptl")
    with pytest.raises(AttributeError) as info:
        template.render({"user": None})
    assert places(info.value.__traceback__)[1:] == [
        ("ptl_wsgi/loader.py", "render"),
        *TEMPLATE_FRAMES,
    ]
    with pytest.raises(AttributeError) as info:
        template(None)
    assert places(info.value.__traceback__)[1:] == [
        ("ptl_wsgi/loader.py", "__call__"),
        *TEMPLATE_FRAMES,
    ]
    loader.close()


def test_full_tracebacks_on_request(templates: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTL_WSGI_FULL_TRACEBACKS", "1")
    loader = Loader([templates])
    with pytest.raises(AttributeError) as info:
        loader.render("page.ptl", {"user": None})
    frames = places(info.value.__traceback__)
    assert frames[-2:] == TEMPLATE_FRAMES
    assert frames.count(("ptl_wsgi/loader.py", "render")) >= 2  # Loader's and Template's
    loader.close()


def test_an_error_raised_by_ptl_wsgi_keeps_its_frame(templates: Path) -> None:
    loader = Loader([templates])
    with pytest.raises(TemplateArgumentError) as info:
        loader.render("page.ptl", {})
    # Raised in Template.render itself: that frame is where it happened.
    assert places(info.value.__traceback__)[-2:] == [
        ("ptl_wsgi/loader.py", "render"),
        ("ptl_wsgi/loader.py", "render"),
    ]
    loader.close()


def test_without_internal_frames_keeps_an_unrelated_traceback() -> None:
    def fail() -> None:
        raise ValueError("x")

    try:
        fail()
    except ValueError as exc:
        before = places(exc.__traceback__)
        assert places(without_internal_frames(exc).__traceback__) == before


def _entries(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _in_package(tb) -> bool:
    name = tb.tb_frame.f_code.co_filename
    return name.startswith(PACKAGE) and not name.endswith(".ptl")


# -- Flask: Python's traceback and Werkzeug's debugger -----------------------------------


def make_app(templates: Path) -> flask.Flask:
    app = flask.Flask(__name__, template_folder=str(templates))
    ptl_flask.PTL(app)

    @app.route("/ours")
    def ours() -> object:
        return ptl_flask.render_template("page.ptl", user=0)

    @app.route("/flask")
    def flasks() -> object:
        return flask.render_template("page.ptl", user=0)

    return app


@pytest.mark.parametrize("url,view", [("/ours", "ours"), ("/flask", "flasks")])
def test_flask_traceback(templates: Path, url: str, view: str) -> None:
    app = make_app(templates)
    app.testing = True
    with pytest.raises(AttributeError) as info:
        app.test_client().get(url)
    frames = places(info.value.__traceback__)
    start = frames.index(("test_tracebacks.py", view))
    internal = [p for p in frames[start:] if p[0].startswith("ptl_wsgi/")]
    assert internal == [("ptl_wsgi/tracebacks.py", "entry")]  # one frame, marked hidden
    assert frames[-2:] == TEMPLATE_FRAMES
    assert ("templating.py", "render_template") in frames  # Flask's own frames stay


def test_werkzeug_debugger_shows_no_ptl_wsgi_frame(templates: Path) -> None:
    app = make_app(templates)
    app.config["PROPAGATE_EXCEPTIONS"] = True
    app.wsgi_app = DebuggedApplication(app.wsgi_app, evalex=False)  # type: ignore[method-assign]
    response = app.test_client().get("/ours")
    assert response.status_code == 500
    page = response.get_data(as_text=True)
    files = [
        html.unescape(m) for m in re.findall(r'<cite class="filename">"([^"<]*)"</cite>', page)
    ]
    assert files, page[:2000]
    assert not [f for f in files if f.startswith(PACKAGE)], files
    assert [Path(f).name for f in files[-2:]] == ["page.ptl", "layout.ptl"]
    assert str(Path(__file__)) in files  # the view


def test_wsgi_render_trims_the_logged_traceback(
    templates: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loader = Loader([templates])
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/", "wsgi.input": None}
    view = wsgi.View(lambda request: wsgi.render("page.ptl", user=None), loader=loader)
    with caplog.at_level("ERROR", logger="ptl_wsgi.wsgi"):
        view(environ, lambda *args: None)
    (record,) = [r for r in caplog.records if r.exc_info]
    frames = places(record.exc_info[2])
    start = frames.index(("test_tracebacks.py", "<lambda>"))
    assert frames[start:] == [
        ("test_tracebacks.py", "<lambda>"),
        ("ptl_wsgi/tracebacks.py", "entry"),
        *TEMPLATE_FRAMES,
    ]
    loader.close()


# -- Django's debug page ------------------------------------------------------------------


def test_django_debug_page_shows_no_ptl_wsgi_frame(templates: Path) -> None:
    from ptl_wsgi.contrib.django import PTLTemplates

    engine = PTLTemplates({"NAME": "t", "DIRS": [templates], "APP_DIRS": False, "OPTIONS": {}})

    def view() -> object:
        return engine.get_template("page.ptl").render({"user": 0})

    try:
        view()
    except AttributeError as exc:
        reporter = ExceptionReporter(None, type(exc), exc, exc.__traceback__)
        frames = [
            (Path(f["filename"]).name, f["function"]) for f in reporter.get_traceback_frames()
        ]
        internal = [
            f["filename"]
            for f in reporter.get_traceback_frames()
            if f["filename"].startswith(PACKAGE)
        ]
    else:
        pytest.fail("no error")
    assert internal == []
    assert frames == [
        ("test_tracebacks.py", "test_django_debug_page_shows_no_ptl_wsgi_frame"),
        ("test_tracebacks.py", "view"),
        *TEMPLATE_FRAMES,
    ]
    engine.loader.close()


def test_flask_stream_traceback(templates: Path) -> None:
    write_files(
        templates,
        {
            "stream.ptl": """\
                from .layout import wrap

                def render(users):
                    for user in users:
                        yield wrap(user)
                """
        },
    )
    app = flask.Flask(__name__, template_folder=str(templates))
    ptl_flask.PTL(app)

    @app.route("/")
    def index() -> object:
        return app.response_class(ptl_flask.stream_template("stream.ptl", users=[0]))

    app.testing = True
    with pytest.raises(AttributeError) as info:
        app.test_client().get("/").get_data()
    frames = places(info.value.__traceback__)
    start = frames.index(("templating.py", "generate"))  # Flask's, where it iterates
    assert frames[start + 1 :] == [
        ("ptl_wsgi/flask_core.py", "_produce"),  # marked __traceback_hide__
        ("stream.ptl", "render"),
        ("layout.ptl", "wrap"),
    ]
