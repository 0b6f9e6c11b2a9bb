"""Templates in plain ``.py`` modules, through the loader, a Flask app and the Django project.

A name ``"dir/file.py"`` or ``"dir/file.py:function"`` reaches only functions
of that file marked ``@template(...)``; everything else about it (search
order, errors naming every place looked in, reloading, imports between
``.ptl`` and ``.py`` modules) is as for ``.ptl`` files.  The modules here are
written without t-strings, so that they run on every supported Python.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import jinja2
import pytest
from flask import Flask, render_template

from ptl_wsgi.contrib.flask import PTL
from ptl_wsgi.html import htmltext
from ptl_wsgi.loader import Loader, TemplateNotFound

MakeLoader = Callable[..., Loader]

PAGE_PY = '''\
"""Page templates, in plain Python."""
from ptl_wsgi.html import html_join, htmltext, plain_join
from ptl_wsgi.py_templates import template

from .layout import frame  # a .ptl template


@template("html")
def render(title):
    out = []
    out.append(frame(title, sidebar()))
    return html_join(out)


@template("html")
def sidebar():
    out = []
    out.append(htmltext("<aside>side</aside>"))
    return html_join(out)


@template("plain")
def subject(title):
    out = []
    out.append(title.upper())
    return plain_join(out)


def ordinary(title):
    return htmltext("<script>%s</script>" % title)


def stream(title):
    yield htmltext("<script>")


async def coroutine(title):
    return htmltext("<script>")


class Widget:
    pass


alias = sidebar
_private = sidebar
'''

LAYOUT_PTL = """\
def frame [html] (title, body):
    "<title>%s</title>" % title
    body
"""

USES_PY_PTL = """\
from .page import sidebar

def render [html] ():
    "<main>"
    sidebar()
    "</main>"
"""


def write(path: Path, source: str) -> Path:
    """Write *path* (dedented), with an mtime later than before, as an editor saves."""
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.stat().st_mtime_ns if path.exists() else None
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    if before is not None:
        later = max(before + 2_000_000_000, path.stat().st_mtime_ns)
        os.utime(path, ns=(later, later))
    return path


@pytest.fixture
def make_loader() -> Iterator[MakeLoader]:
    loaders: list[Loader] = []

    def make(*search_path: Path, auto_reload: bool = False) -> Loader:
        loader = Loader(search_path, auto_reload=auto_reload)
        loaders.append(loader)
        return loader

    yield make
    for loader in loaders:
        loader.close()


@pytest.fixture
def site(tmp_path: Path) -> Path:
    write(tmp_path / "page.py", PAGE_PY)
    write(tmp_path / "layout.ptl", LAYOUT_PTL)
    write(tmp_path / "uses_py.ptl", USES_PY_PTL)
    return tmp_path


# -- the loader ---------------------------------------------------------------------------


def test_py_names_resolve_to_marked_functions(site: Path, make_loader: MakeLoader) -> None:
    loader = make_loader(site)
    result = loader.render("page.py", {"title": "<T>"})
    assert result == "<title>&lt;T&gt;</title><aside>side</aside>"
    assert type(result) is htmltext
    assert loader.render("page.py:sidebar") == "<aside>side</aside>"
    assert loader.render("page.py:alias") == "<aside>side</aside>"
    assert loader.render("page.py:subject", {"title": "<t>"}) == "<T>"
    assert loader.get_template("page.py:sidebar").filename == str(site.resolve() / "page.py")
    # A .ptl module imports the .py one, and the .py one a .ptl one: one module each.
    assert loader.render("uses_py.ptl") == "<main><aside>side</aside></main>"
    assert loader.module("page.py") is sys.modules[loader.package + ".page"]


PRIVATE = "(names starting with '_' are private)"
NOT_MARKED = 'decorate it with @template("html") or @template("plain") from ptl_wsgi.py_templates'


@pytest.mark.parametrize(
    "name, reason",
    [
        ("page.py:ordinary", f"'ordinary' in page.py is not marked as a template: {NOT_MARKED}"),
        # Unlike a .ptl module's, a .py module's generators are no streamed templates.
        ("page.py:stream", f"'stream' in page.py is not marked as a template: {NOT_MARKED}"),
        ("page.py:coroutine", f"'coroutine' in page.py is not marked as a template: {NOT_MARKED}"),
        ("page.py:frame", "'frame' in page.py is imported from layout.ptl"),
        ("page.py:htmltext", "'htmltext' in page.py is a class, not a template"),
        ("page.py:template", "'template' in page.py is imported from ptl_wsgi.py_templates"),
        ("page.py:Widget", "'Widget' in page.py is a class, not a template"),
        ("page.py:_private", f"no template '_private' in page.py {PRIVATE}"),
        ("page.py:__builtins__", f"no template '__builtins__' in page.py {PRIVATE}"),
        ("page.py:nothing", "no template 'nothing' in page.py"),
    ],
)  # fmt: skip
def test_unmarked_functions_never_resolve(
    name: str, reason: str, site: Path, make_loader: MakeLoader
) -> None:
    with pytest.raises(TemplateNotFound) as info:
        make_loader(site).get_template(name)
    assert info.value.reason == reason
    assert info.value.tried == [str(site.resolve() / "page.py")]


def test_a_py_helper_module_in_the_template_folder_serves_nothing(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    write(tmp_path / "helpers.py", "import os\ndef render():\n    return os.environ\n")
    write(tmp_path / "__init__.py", "")
    loader = make_loader(tmp_path)
    with pytest.raises(TemplateNotFound, match="not marked as a template"):
        loader.render("helpers.py")
    with pytest.raises(TemplateNotFound, match=r"relative path ending in \.ptl or \.py"):
        loader.render("__init__.py")
    assert loader.list_templates() == ["helpers.py"]


def test_missing_py_template_lists_every_place(tmp_path: Path, make_loader: MakeLoader) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    with pytest.raises(TemplateNotFound) as info:
        make_loader(first, second).get_template("blog/post.py:sidebar")
    expected = [str(d.resolve() / "blog" / "post.py") for d in (first, second)]
    assert info.value.tried == expected
    for place in expected:
        assert place in str(info.value)


def test_search_order_and_listing(tmp_path: Path, make_loader: MakeLoader) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    marked = 'from ptl_wsgi.py_templates import template\n@template("plain")\ndef render():\n'
    write(first / "x.py", marked + '    return "first"\n')
    write(second / "x.py", marked + '    return "second"\n')
    write(second / "y.ptl", 'def render [plain] ():\n    "y"\n')
    loader = make_loader(first, second)
    assert loader.render("x.py") == "first"
    assert loader.list_templates() == ["x.py", "y.ptl"]


def test_a_ptl_and_a_py_file_of_one_name_are_refused(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    write(tmp_path / "page.ptl", 'def render [plain] ():\n    "ptl"\n')
    write(tmp_path / "page.py", PAGE_PY)
    loader = make_loader(tmp_path)
    for name in ("page.ptl", "page.py"):
        with pytest.raises(TemplateNotFound, match="are the same module: remove or rename one"):
            loader.get_template(name)


def test_same_name_in_two_search_directories_is_refused(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write(first / "page.ptl", 'def render [plain] ():\n    "ptl"\n')
    write(second / "page.py", PAGE_PY)
    write(second / "layout.ptl", LAYOUT_PTL)
    loader = make_loader(first, second)
    assert loader.render("page.ptl") == "ptl"
    with pytest.raises(TemplateNotFound, match="already loaded from") as info:
        loader.get_template("page.py")
    assert str(first.resolve() / "page.ptl") in str(info.value)


def test_edited_py_template_is_reloaded(
    site: Path, make_loader: MakeLoader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # caches are what is tested
    loader = make_loader(site, auto_reload=True)
    path = site / "page.py"
    assert loader.render("page.py:sidebar") == "<aside>side</aside>"
    write(path, PAGE_PY.replace("<aside>side</aside>", "<aside>new!</aside>"))
    assert loader.render("page.py:sidebar") == "<aside>new!</aside>"
    # An edit within the same second, of the same size: Python's own .pyc (checked by whole
    # seconds and size) would give the old code back; the hash-checked cache does not.
    stamp = path.stat().st_mtime_ns
    path.write_text(PAGE_PY.replace("<aside>side</aside>", "<aside>NEW!</aside>"))
    later = stamp + 1 if (stamp + 1) % 1_000_000_000 else stamp - 1
    os.utime(path, ns=(later, later))
    assert loader.render("page.py:sidebar") == "<aside>NEW!</aside>"


def test_broken_py_template_reports_its_file_and_line(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    write(tmp_path / "bad.py", "x = 1\ndef render(:\n")
    with pytest.raises(SyntaxError) as info:
        make_loader(tmp_path).get_template("bad.py")
    assert (info.value.filename, info.value.lineno) == (str(tmp_path.resolve() / "bad.py"), 2)


# -- Flask -----------------------------------------------------------------------------


@pytest.fixture
def flask_app(site: Path) -> Iterator[Flask]:
    write(site / "helpers.py", 'SECRET = "s3cret"\ndef render():\n    return SECRET\n')
    app = Flask(__name__, template_folder=str(site))
    app.config.update(TESTING=True, SECRET_KEY="test")
    PTL(app)

    @app.get("/<path:name>")
    def page(name: str) -> str:
        return render_template(name, title="<T>")

    yield app


def test_flask_renders_py_templates(flask_app: Flask) -> None:
    client = flask_app.test_client()
    response = client.get("/page.py")
    assert response.status_code == 200
    assert response.text == "<title>&lt;T&gt;</title><aside>side</aside>"
    response = client.get("/page.py:subject")
    assert response.text == "&lt;T&gt;"  # a [plain] result, escaped into the HTML page


@pytest.mark.parametrize("name", ["helpers.py", "page.py:ordinary", "HELPERS.PY", "page.py:stream"])
def test_flask_never_renders_a_py_file_as_jinja_source(flask_app: Flask, name: str) -> None:
    """Jinja2 would render helpers.py's source; the loader refuses its unmarked function."""
    flask_app.config["TESTING"] = False  # the error page, as a user would see it
    response = flask_app.test_client().get("/" + name)
    assert response.status_code == 500
    assert "s3cret" not in response.text and "SECRET" not in response.text
    assert "<script>" not in response.text
    with flask_app.app_context(), pytest.raises(jinja2.TemplateNotFound) as info:
        render_template(name)
    assert "SECRET" not in str(info.value)


def test_flask_py_template_reloads_in_debug(site: Path) -> None:
    app = Flask(__name__, template_folder=str(site))
    app.config.update(TESTING=True, TEMPLATES_AUTO_RELOAD=True)
    PTL(app)
    with app.app_context():
        assert render_template("page.py:sidebar") == "<aside>side</aside>"
        write(site / "page.py", PAGE_PY.replace("side</aside>", "edited</aside>"))
        assert render_template("page.py:sidebar") == "<aside>edited</aside>"


# -- Django ----------------------------------------------------------------------------


def test_django_renders_py_templates() -> None:
    from django.test import Client

    response = Client().get("/py/render/")
    assert response.status_code == 200
    assert response.content.decode() == (
        "<h1>&lt;T&gt;</h1><ul><li>a&amp;b</li><li>&lt;i&gt;</li></ul>"
    )
    framed = Client().get("/py/framed/").content.decode()
    assert "<title>&lt;T&gt;</title>" in framed and "<h1>&lt;T&gt;</h1><ul></ul>" in framed


@pytest.mark.parametrize("name", ["helper", "stream", "page", "nothing"])
def test_django_never_resolves_unmarked_functions(name: str) -> None:
    from django.template import TemplateDoesNotExist
    from django.test import Client

    with pytest.raises(TemplateDoesNotExist) as info:
        Client().get(f"/py/{name}/")
    assert "converted.py" in str(info.value.tried or info.value)


def test_django_engine_claims_py_names() -> None:
    """The DTL engine after it in settings would render a .py file's source as a template."""
    from django.template.loader import get_template

    template = get_template("testapp/converted.py")
    assert type(template).__module__ == "ptl_wsgi.contrib.django"
    assert template.render({"title": "<x>", "items": []}) == "<h1>&lt;x&gt;</h1><ul></ul>"


def test_django_autoreload_resets_the_engine_for_a_py_template() -> None:
    """A .py template edited under runserver reloads with the engine, not by a restart."""
    from django.template import engines
    from django.utils.autoreload import autoreload_started, file_changed

    engines.all()  # runserver's system checks build the engines (importing ours) first

    class Reloader:
        watched: list[tuple[str, str]] = []

        def watch_dir(self, path: Path, glob: str) -> None:
            self.watched.append((str(path), glob))

    autoreload_started.send(sender=Reloader())
    app_templates = Path(__file__).parents[1] / "django_project" / "testapp" / "templates"
    assert (str(app_templates), "**/*.py") in Reloader.watched
    engine = engines["ptl"]
    module = engine.get_template("testapp/converted.py").template.module
    converted = app_templates / "testapp" / "converted.py"
    results = file_changed.send(sender=None, file_path=converted)
    assert any(result for _receiver, result in results)
    # The engine's loader forgot its modules (Loader.reload): the file is read again.
    assert engine.get_template("testapp/converted.py").template.module is not module
    # A .py file outside the template folders is Django's to restart for.
    outside = Path(__file__)
    assert not any(r for _, r in file_changed.send(sender=None, file_path=outside))


# -- the development server and `ptl-wsgi render` ------------------------------------------


def test_dev_server_and_render_command_serve_py_templates(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from werkzeug.test import Client

    from ptl_wsgi.cli import main
    from ptl_wsgi.devserver import template_app

    app = template_app(str(site))
    try:
        client = Client(app)
        assert client.get("/page.py:sidebar").text == "<aside>side</aside>"
        assert client.get("/page.py?title=<x>").text == (
            "<title>&lt;x&gt;</title><aside>side</aside>"
        )
        response = client.get("/page.py:ordinary")
        assert response.status_code == 404 and "not marked as a template" in response.text
        index = client.get("/").text
        assert '<a href="/page.py">page.py</a>' in index
        assert '<a href="/layout">layout.ptl</a>' in index
    finally:
        app.loader.close()
    assert main(["render", str(site / "page.py:sidebar")]) == 0
    assert capsys.readouterr().out == "<aside>side</aside>\n"
    assert main(["render", str(site / "page.py:stream")]) == 1
    assert "'stream' in page.py is not marked as a template" in capsys.readouterr().err
