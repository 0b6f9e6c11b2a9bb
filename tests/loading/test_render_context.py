"""ptl_wsgi.render_context(): the context of the render in progress, in every integration."""

from __future__ import annotations

import asyncio
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render as django_render
from django.test import SimpleTestCase
from django.urls import path
from flask import Flask, flash, template_rendered
from werkzeug.test import Client

import ptl_wsgi
from ptl_wsgi import render_context
from ptl_wsgi.contrib.flask import PTL, render_template, stream_template
from ptl_wsgi.loader import Loader
from ptl_wsgi.wsgi import render, view

# A layout that reads from the render context what pages do not pass, and pages that
# pass only what is theirs.
LAYOUT = """\
from ptl_wsgi import render_context


def page [html] (title, body):
    context = render_context()
    "<title>%s</title>" % title
    "<p>user=%s</p>" % context.get("user", "-")
    body


def keys [html] ():
    ",".join(sorted(render_context()))
"""

PAGE = """\
from .layout import page


def render [html] (title):
    page(title, "<main>%s</main>" % title)
"""

NESTED = """\
from ptl_wsgi import render_context


def render [html] (loader):
    "outer=%s;" % render_context()["who"]
    loader.render("nested.ptl:inner", {"who": "inner"})
    ";outer=%s" % render_context()["who"]


def inner [html] (who):
    "inner=%s" % render_context()["who"]


def fails [html] ():
    1 / 0
"""

STREAM = """\
from ptl_wsgi import htmltext, render_context


def render(steps, seen):
    try:
        for step in range(steps):
            yield htmltext("<p>%s %s</p>") % (step, render_context()["user"])
    finally:
        seen.append(dict(render_context()))
"""

WAITS = """\
from ptl_wsgi import render_context


def render [html] (barrier, who):
    arrived = barrier.wait()  # an assignment: a bare call would be output
    render_context()["who"]
"""


@pytest.fixture
def templates(tmp_path: Path) -> Path:
    for name, source in {
        "layout.ptl": LAYOUT,
        "page.ptl": PAGE,
        "nested.ptl": NESTED,
        "stream.ptl": STREAM,
        "waits.ptl": WAITS,
    }.items():
        (tmp_path / name).write_text(source)
    return tmp_path


@pytest.fixture
def loader(templates: Path) -> Any:
    loader = Loader([templates])
    yield loader
    loader.close()


# -- the loader ---------------------------------------------------------------------------


def test_outside_a_render_it_is_empty_and_read_only() -> None:
    assert ptl_wsgi.render_context is render_context
    context = render_context()
    assert isinstance(context, types.MappingProxyType) and dict(context) == {}
    with pytest.raises(TypeError):
        context["x"] = 1  # type: ignore[index]


def test_a_layout_reads_what_the_page_does_not_take(loader: Loader) -> None:
    html = loader.render("page.ptl", {"title": "<T>", "user": "<ann>"})
    assert html == "<title>&lt;T&gt;</title><p>user=&lt;ann&gt;</p><main>&lt;T&gt;</main>"
    assert dict(render_context()) == {}


def test_the_context_is_a_copy_of_what_render_was_given(loader: Loader) -> None:
    context = {"a": 1, "b": 2}
    assert loader.render("layout.ptl:keys", context) == "a,b"


def test_nested_renders_see_their_own_and_restore_the_outer(loader: Loader) -> None:
    html = loader.render("nested.ptl", {"loader": loader, "who": "outer"})
    assert html == "outer=outer;inner=inner;outer=outer"


def test_an_error_restores_the_context(loader: Loader) -> None:
    with pytest.raises(ZeroDivisionError):
        loader.render("nested.ptl:fails", {"x": 1})
    assert dict(render_context()) == {}


def test_a_stream_has_its_context_at_each_step_and_at_close(loader: Loader) -> None:
    seen: list[dict[str, Any]] = []
    stream = loader.render("stream.ptl", {"steps": 3, "seen": seen, "user": "ann"})
    assert next(stream) == "<p>0 ann</p>"
    assert dict(render_context()) == {}  # between steps, the caller's own (none)
    # Another render between two steps does not leak into the stream.
    assert loader.render("page.ptl", {"title": "t", "user": "bob"}).count("bob") == 1
    assert next(stream) == "<p>1 ann</p>"
    stream.close()
    assert seen[0]["user"] == "ann"
    assert dict(render_context()) == {}


def test_each_thread_has_its_own(loader: Loader) -> None:
    barrier = threading.Barrier(2, timeout=10)
    results: dict[str, str] = {}

    def run(who: str) -> None:
        results[who] = loader.render("waits.ptl", {"barrier": barrier, "who": who})

    threads = [threading.Thread(target=run, args=(who,)) for who in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {"one": "one", "two": "two"}


def test_each_task_has_its_own(loader: Loader) -> None:
    async def render_in_task(who: str) -> str:
        await asyncio.sleep(0)
        first = loader.render("layout.ptl:keys", {who: 1})
        await asyncio.sleep(0)
        return f"{first}/{len(render_context())}"

    async def both() -> list[str]:
        return await asyncio.gather(render_in_task("a"), render_in_task("b"))

    assert asyncio.run(both()) == ["a/0", "b/0"]


# -- Flask ----------------------------------------------------------------------------------

FLASK_LAYOUT = """\
from ptl_wsgi import htmltext, render_context


def page [html] (title, body):
    context = render_context()
    '<script nonce="%s"></script>' % context["csp_nonce"]
    "<p>%s %s</p>" % (context["request"].path, context["config"]["SITE"])
    for message in context["get_flashed_messages"]():
        "<p class=flash>%s</p>" % message
    body


def stream(count):
    for n in range(count):
        yield htmltext("<p>%s %s</p>") % (n, render_context()["request"].path)
"""


@pytest.fixture
def flask_app(tmp_path: Path) -> Flask:
    (tmp_path / "layout.ptl").write_text(FLASK_LAYOUT)
    (tmp_path / "page.ptl").write_text(PAGE)
    app = Flask(__name__, template_folder=str(tmp_path))
    app.config.update(TESTING=True, SECRET_KEY="s", PTL_CSP=True, SITE="<site>")
    PTL(app)

    @app.get("/page")
    def page() -> Any:
        flash("<hi>")
        return render_template("page.ptl", title="T")

    @app.get("/stream")
    def stream() -> Any:
        return stream_template("layout.ptl:stream", count=2)

    return app


def test_flask_layout_reads_request_globals_flashes_and_nonce(flask_app: Flask) -> None:
    events: list[Any] = []

    def record(sender: Any, template: Any, context: Any, **extra: Any) -> None:
        events.append(template.name)

    template_rendered.connect(record, flask_app)
    try:
        response = flask_app.test_client().get("/page")
    finally:
        template_rendered.disconnect(record, flask_app)
    html = response.get_data(as_text=True)
    nonce = response.headers["Content-Security-Policy"].split("'nonce-")[1].split("'")[0]
    assert f'<script nonce="{nonce}"></script>' in html
    assert "<p>/page &lt;site&gt;</p>" in html
    assert "<p class=flash>&lt;hi&gt;</p>" in html
    assert events == ["page.ptl"]  # still one event per render, layout or not


def test_flask_stream_has_the_context_at_each_step(flask_app: Flask) -> None:
    response = flask_app.test_client().get("/stream")
    assert response.get_data(as_text=True) == "<p>0 /stream</p><p>1 /stream</p>"


# -- WSGI views -----------------------------------------------------------------------------


def test_wsgi_render_and_stream(loader: Loader) -> None:
    page = view(lambda request: render("page.ptl", title="T", user="ann"), loader=loader)
    assert b"<p>user=ann</p><main>T</main>" in Client(page).get("/").data
    seen: list[dict[str, Any]] = []
    streamed = view(
        lambda request: render("stream.ptl", steps=2, seen=seen, user="bo"), loader=loader
    )
    assert Client(streamed).get("/").data == b"<p>0 bo</p><p>1 bo</p>"
    assert seen[0]["user"] == "bo"


# -- Django ---------------------------------------------------------------------------------

DJANGO_LAYOUT = """\
from ptl_wsgi import render_context


def page [html] (title, body):
    context = render_context()
    '<meta name="csrf" content="%s">' % context["csrf_token"]
    "<p>%s %s</p>" % (context["request"].path, context["site_name"])
    for message in context["messages"]:
        "<p class=message>%s</p>" % message
    body
"""


def django_page(request: HttpRequest) -> HttpResponse:
    messages.info(request, "<saved>")
    return django_render(request, "page.ptl", {"title": "T"})


async def django_async_page(request: HttpRequest) -> HttpResponse:
    return django_page(request)


urlpatterns = [path("page/", django_page), path("async/", django_async_page)]


@pytest.fixture
def django_templates(settings: Any, tmp_path: Path) -> Any:
    (tmp_path / "layout.ptl").write_text(DJANGO_LAYOUT)
    (tmp_path / "page.ptl").write_text(PAGE)
    templates = [dict(settings.TEMPLATES[0]), *settings.TEMPLATES[1:]]
    templates[0]["DIRS"] = [tmp_path]
    settings.TEMPLATES = templates
    settings.ROOT_URLCONF = __name__
    return settings


def check_django_page(html: str) -> None:
    assert '<meta name="csrf" content="' in html
    assert "<p>/page/ Test &lt;Site&gt;</p>" in html or "<p>/async/ Test &lt;Site&gt;</p>" in html
    assert "<p class=message>&lt;saved&gt;</p>" in html
    assert "<main>T</main>" in html


def test_django_layout_reads_request_csrf_processors_and_messages(
    django_templates: Any, client: Any
) -> None:
    check_django_page(client.get("/page/").content.decode())


def test_django_async_view(django_templates: Any, async_client: Any) -> None:
    async def two() -> list[Any]:
        return [await async_client.get(url) for url in ("/async/", "/page/")]

    for response in asyncio.run(two()):
        check_django_page(response.content.decode())


def test_django_test_client_sees_every_template(django_templates: Any, client: Any) -> None:
    response = client.get("/page/")
    case = SimpleTestCase()
    case.assertTemplateUsed(response, "page.ptl")
    case.assertTemplateUsed(response, "page.ptl:render")
    case.assertTemplateUsed(response, "layout.ptl")
    case.assertTemplateUsed(response, "layout.ptl:page", count=1)
    assert [t.name for t in response.templates] == [
        "page.ptl",
        "page.ptl:render",
        "layout.ptl",
        "layout.ptl:page",
    ]
    assert response.context["title"] == "T"
    # A nested template's context is what it was called with.
    assert response.context[-1]["title"] == "T" and "body" in response.context[-1]
