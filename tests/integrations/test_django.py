"""The Django template engine, in process, with tests/django_project's settings."""

from __future__ import annotations

import copy
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.template import (
    Context,
    RequestContext,
    TemplateDoesNotExist,
    TemplateSyntaxError,
    engines,
)
from django.template.loader import get_template, render_to_string, select_template
from django.template.utils import EngineHandler
from django.test import Client, RequestFactory, override_settings
from django.test.signals import template_rendered
from django.utils.autoreload import autoreload_started, file_changed
from django.utils.safestring import SafeString
from django.views.debug import ExceptionReporter

from ptl_wsgi import htmltext
from ptl_wsgi.contrib.django import PTLTemplates, html_response, render_text
from ptl_wsgi.loader import TemplateArgumentError
from tests.django_project import settings as settings_module

PROJECT = Path(__file__).parents[1] / "django_project"
APP_TEMPLATES = PROJECT / "testapp" / "templates"
BACKEND = "ptl_wsgi.contrib.django.PTLTemplates"


def make_engine(dirs, **options) -> PTLTemplates:
    return PTLTemplates({"NAME": "t", "DIRS": dirs, "APP_DIRS": False, "OPTIONS": options})


@pytest.fixture
def engine():
    return engines["ptl"]


@pytest.fixture
def tmp_engine(tmp_path):
    engine = make_engine([tmp_path], auto_reload=True)
    yield engine
    engine.loader.close()


@pytest.fixture
def broken_template(settings, tmp_path):
    """testapp/broken.ptl, with a syntax error on line 3, first in DIRS."""
    (tmp_path / "testapp").mkdir()
    broken = tmp_path / "testapp" / "broken.ptl"
    broken.write_text('def render [html] ():\n    "<p>fine</p>"\n    if True\n        "no"\n')
    templates = copy.deepcopy(settings.TEMPLATES)
    templates[0]["DIRS"] = [tmp_path, *templates[0]["DIRS"]]
    settings.TEMPLATES = templates  # Django rebuilds its engines
    return broken


def report_html(exc: BaseException) -> str:
    return ExceptionReporter(None, type(exc), exc, exc.__traceback__).get_traceback_html()


# -- configuration ------------------------------------------------------------------


def test_engine_is_configured_with_dirs_and_app_dirs(engine):
    assert isinstance(engine, PTLTemplates)
    dirs = [Path(d) for d in engine.template_dirs]
    assert PROJECT / "templates" in dirs
    assert APP_TEMPLATES in dirs
    assert engine.auto_reload is False  # DEBUG is off in the test settings


def test_dirs_come_before_app_directories(engine):
    assert engine.get_template("testapp/override.ptl").render() == "<p>from DIRS</p>"


def test_unknown_options_are_refused():
    with pytest.raises(ImproperlyConfigured, match=r"Unknown OPTIONS .*'t': bogus.*context_proc"):
        make_engine([], bogus=1)


def test_without_name_the_alias_clashes_with_django_templates():
    handler = EngineHandler(
        [
            {"BACKEND": BACKEND, "DIRS": [], "APP_DIRS": False, "OPTIONS": {}},
            {"BACKEND": "django.template.backends.django.DjangoTemplates"},
        ]
    )
    with pytest.raises(ImproperlyConfigured, match="aliases aren't unique, duplicates: django"):
        handler.all()


def test_auto_reload_follows_debug(settings):
    settings.DEBUG = True
    engine = make_engine([])
    assert engine.auto_reload
    engine.loader.close()


# -- lookups ------------------------------------------------------------------------


def test_other_names_fall_through_to_the_next_engine(engine):
    with pytest.raises(TemplateDoesNotExist) as info:
        engine.get_template("testapp/dtl.html")
    assert info.value.backend is engine
    assert "Skipped" in info.value.tried[0][1]
    assert get_template("testapp/dtl.html").backend.name == "django"
    assert get_template("admin/login.html").backend.name == "django"


def test_missing_template_lists_every_directory(engine):
    with pytest.raises(TemplateDoesNotExist) as info:
        engine.get_template("testapp/missing.ptl")
    exc = info.value
    assert exc.backend is engine
    names = [origin.name for origin, _status in exc.tried]
    assert str(PROJECT / "templates" / "testapp" / "missing.ptl") in names
    assert str(APP_TEMPLATES / "testapp" / "missing.ptl") in names
    assert {status for _origin, status in exc.tried} == {"Source does not exist"}
    assert exc.tried[0][0].loader_name == BACKEND


def test_missing_function_says_so(engine):
    with pytest.raises(TemplateDoesNotExist) as info:
        engine.get_template("testapp/index.ptl:nope")
    assert info.value.tried[0][1] == "No template 'nope' in this file"


def test_postmortem_on_the_debug_page():
    with pytest.raises(TemplateDoesNotExist) as info:
        get_template("testapp/missing.ptl")
    html = report_html(info.value)
    assert "Using engine <code>ptl</code>" in html
    assert f"{BACKEND}</code>: {APP_TEMPLATES / 'testapp' / 'missing.ptl'}" in html
    assert "Using engine <code>django</code>" in html


def test_select_template_on_the_engine_takes_the_first_that_exists(engine):
    template = engine.select_template(["testapp/missing.ptl", "testapp/about.ptl"])
    assert template.name == "testapp/about.ptl"
    assert engine.select_template(["testapp/index.ptl:row", "testapp/about.ptl"]).name == (
        "testapp/index.ptl:row"
    )


def test_select_template_lists_every_name_and_place(engine):
    names = ["testapp/first.ptl", "testapp/second.ptl:row", "testapp/x.html"]
    with pytest.raises(TemplateDoesNotExist) as info:
        engine.select_template(names)
    exc = info.value
    assert str(exc) == ", ".join(names)
    assert exc.backend is engine
    places = [origin.name for origin, _status in exc.tried]
    for directory in (PROJECT / "templates", APP_TEMPLATES):
        assert str(directory / "testapp" / "first.ptl") in places
        assert str(directory / "testapp" / "second.ptl") in places
    assert "testapp/x.html" in places
    assert [e.backend for e in exc.chain] == [engine] * 3


def test_get_template_of_a_list_points_at_select_template(engine):
    with pytest.raises(TypeError, match=r"one name.*select_template"):
        engine.get_template(["testapp/about.ptl"])


def test_django_select_template_and_render_to_string_take_lists():
    assert select_template(["testapp/missing.ptl", "testapp/about.ptl"]).backend.name == "ptl"
    assert select_template(["testapp/missing.ptl", "testapp/dtl.html"]).backend.name == "django"
    html = render_to_string(["testapp/nope.ptl", "testapp/index.ptl:row"], {"item": "<x>"})
    assert html == "<li>&lt;x&gt;</li>\n"


def test_postmortem_of_a_list_on_the_debug_page():
    with override_settings(DEBUG=True):
        response = Client(raise_request_exception=False).get("/missing-list/")
    html = response.content.decode()
    assert response.status_code == 500
    for name in ("first.ptl", "second.ptl"):
        assert f"{BACKEND}</code>: {APP_TEMPLATES / 'testapp' / name}" in html
        assert f"{PROJECT / 'templates' / 'testapp' / name}" in html


def test_named_function_and_render_to_string():
    assert render_to_string("testapp/index.ptl:row", {"item": "<x>"}) == "<li>&lt;x&gt;</li>\n"


def test_from_string_with_relative_import(engine):
    template = engine.from_string(
        "from .layout import page\ndef render [html] (name):\n    page('Hi', '<b>%s</b>' % name)\n"
    )
    html = template.render({"name": "<you>"})
    assert "<b>&lt;you&gt;</b>" in html and "<title>Hi</title>" in html
    assert template.name is None


def test_from_string_errors(engine):
    with pytest.raises(TemplateSyntaxError, match="render template"):
        engine.from_string("def other [html] ():\n    'x'\n")
    with pytest.raises(TemplateSyntaxError) as info:
        engine.from_string("def render [html] ():\n    if x\n")
    debug = info.value.template_debug
    assert (debug["name"], debug["line"], debug["during"]) == ("<string>", 2, "    if x")


# -- rendering through views ---------------------------------------------------------


def test_render_escapes_and_records_templates(client):
    response = client.get("/")
    html = response.content.decode()
    assert "<title>&lt;Items&gt;</title>" in html
    assert "<li>a&amp;b</li>" in html and "<li>&lt;i&gt;</li>" in html
    assert "<footer>Test &lt;Site&gt;</footer>" in html
    assert response["Content-Type"] == "text/html; charset=utf-8"
    # Every template that ran, in call order, under its file's name and its own.
    assert [t.name for t in response.templates] == [
        "testapp/index.ptl",
        "testapp/index.ptl:render",
        *["testapp/index.ptl", "testapp/index.ptl:items_list"],
        *["testapp/index.ptl", "testapp/index.ptl:row"] * 2,
        *["layout.ptl", "layout.ptl:page"],
    ]
    assert response.context["title"] == "<Items>"  # the view's value beats the processor's
    assert response.context["site_name"] == "Test <Site>"


def test_assert_template_used(client):
    from django.test import SimpleTestCase

    case = SimpleTestCase()
    response = client.get("/response/")
    case.assertTemplateUsed(response, "testapp/index.ptl")
    case.assertTemplateNotUsed(response, "testapp/form.ptl")
    with case.assertTemplateUsed("testapp/index.ptl:row"):
        render_to_string("testapp/index.ptl:row", {"item": 1})


def test_template_response_and_class_based_views(client):
    assert "<li>x</li>" in client.get("/response/").content.decode()
    about = client.get("/about/")
    assert about.content == b"<p>About says hello to &lt;you&gt;</p>"
    assert about.context["who"] == "<you>"


@pytest.mark.django_db
def test_list_view_and_model_form(client):
    response = client.post("/items/new/", {"name": "<script>alert(1)</script>"}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain == [("/items/", 302)]
    assert "<li>&lt;script&gt;alert(1)&lt;/script&gt;</li>" in html
    assert '<p class="message">Saved &lt;script&gt;' in html
    assert "<script>" not in html


@pytest.mark.django_db
def test_invalid_form_shows_django_widgets_unescaped(client):
    html = client.post("/items/create/", {"name": ""}).content.decode()
    assert '<input type="text" name="name"' in html
    assert "This field is required." in html
    assert "&lt;input" not in html


@pytest.mark.django_db
def test_csrf_input_passes_the_csrf_middleware():
    client = Client(enforce_csrf_checks=True)
    page = client.get("/items/new/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert client.post("/items/new/", {"name": "x"}).status_code == 403
    response = client.post("/items/new/", {"name": "x", "csrfmiddlewaretoken": token})
    assert response.status_code == 302


def test_csrf_token_and_request(client):
    response = client.get("/token/")
    html = response.content.decode()
    assert re.search(r'<meta name="csrf" content="[A-Za-z0-9]{32,}">', html)
    assert "<p>/token/</p>" in html
    assert "csrftoken" in response.cookies


@pytest.mark.parametrize("context_class", [Context, RequestContext])
def test_a_django_context_is_refused_as_django_engines_do(engine, context_class):
    context = (
        Context({"view": 1})
        if context_class is Context
        else RequestContext(RequestFactory().get("/"), {"view": 1})
    )
    with pytest.raises(TypeError) as ours:
        engine.get_template("testapp/about.ptl").render(context)
    with pytest.raises(TypeError) as djangos:
        engines["django"].get_template("testapp/dtl.html").render(context)
    assert str(ours.value) == f"context must be a dict rather than {context_class.__name__}."
    assert str(ours.value) == str(djangos.value)


def test_render_without_request_has_no_request_values(engine):
    with pytest.raises(TemplateArgumentError, match="csrf_token"):
        engine.get_template("testapp/token.ptl").render({})


def test_the_engine_itself_sends_template_rendered(engine):
    seen = []

    def record(sender, template, context, **kwargs):
        seen.append((template.name, context))

    template_rendered.connect(record)
    try:
        engine.get_template("testapp/about.ptl").render({"view": object()})
    finally:
        template_rendered.disconnect(record)
    assert seen[0][0] == "testapp/about.ptl"
    assert "view" in seen[0][1]


INDEX_TEMPLATES = [
    "testapp/index.ptl",
    "testapp/index.ptl:render",
    *["testapp/index.ptl", "testapp/index.ptl:items_list"],
    *["testapp/index.ptl", "testapp/index.ptl:row"] * 2,
    *["layout.ptl", "layout.ptl:page"],
]


def test_a_render_under_cprofile_records_templates_and_is_profiled(client):
    # django-debug-toolbar's profiling panel and django-silk run the view under cProfile;
    # the engine recorded templates with a profile hook of its own, which called cProfile's
    # (not a callable: every render a 500) and hid the render from the profiler.
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        response = client.get("/")
    finally:
        profiler.disable()
    assert response.status_code == 200
    assert "<li>a&amp;b</li>" in response.content.decode()
    assert [t.name for t in response.templates] == INDEX_TEMPLATES
    profiled = {(Path(file).name, function) for file, _, function in pstats.Stats(profiler).stats}
    assert {("index.ptl", "render"), ("index.ptl", "row"), ("layout.ptl", "page")} <= profiled


def test_a_profile_function_stays_installed_and_sees_the_render(client):
    seen: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.endswith(".ptl"):
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        response = client.get("/")
        assert sys.getprofile() is profile
    finally:
        sys.setprofile(None)
    assert [t.name for t in response.templates] == INDEX_TEMPLATES
    assert seen.count("row") == 2 and "page" in seen and "render" in seen


def test_templates_are_recorded_with_their_arguments(client):
    response = client.get("/")
    rows = [c for t, c in zip(response.templates, response.context, strict=True)
            if t.name == "testapp/index.ptl:row"]  # fmt: skip
    assert [dict(c.flatten())["item"] for c in rows] == ["a&b", "<i>"]


# -- output policy: raw text is explicit --------------------------------------------------


def test_plain_template_is_escaped_in_html_and_raw_in_render_text(engine):
    context = {"name": "<Ann>"}
    escaped = "Hello &lt;Ann&gt; &amp; welcome &lt;to&gt; the site\n"
    raw = "Hello <Ann> & welcome <to> the site\n"
    html = render_to_string("testapp/plain.ptl", context)
    assert html == escaped and isinstance(html, htmltext)
    assert engine.get_template("testapp/plain.ptl").render(context) == escaped
    text = render_text("testapp/plain.ptl", context)
    assert text == raw and type(text) is str
    # An [html] template's markup comes back as its characters, not as markup.
    row = render_text("testapp/index.ptl:row", {"item": "<x>"})
    assert row == "<li>&lt;x&gt;</li>\n" and type(row) is str


def test_render_text_takes_lists_and_refuses_other_engines_names():
    assert render_text(["testapp/nope.ptl", "testapp/plain.ptl"], {"name": "&"}).startswith(
        "Hello & & welcome"
    )
    with pytest.raises(TemplateDoesNotExist) as info:
        render_text(["testapp/nope.ptl", "testapp/dtl.html"])
    assert str(info.value) == "testapp/nope.ptl, testapp/dtl.html"
    with pytest.raises(TypeError, match="rather than Context"):
        render_text("testapp/plain.ptl", Context({"name": "x"}))


def test_mail_body_is_raw_and_the_page_is_escaped(client):
    response = client.get("/signup/", {"name": "Ann & <Bob>"})
    assert response.content == b"Hello Ann &amp; &lt;Bob&gt; &amp; welcome &lt;to&gt; the site\n"
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert len(mail.outbox) == 1
    assert mail.outbox[0].body == "Hello Ann & <Bob> & welcome <to> the site\n"
    names = [t.name for t in response.templates]
    assert names == ["testapp/plain.ptl", "testapp/plain.ptl:render"] * 2


def test_template_response_escapes_a_plain_template(rf, engine):
    from django.template.response import TemplateResponse

    response = TemplateResponse(rf.get("/"), "testapp/plain.ptl", {"name": "<b>"}).render()
    assert response.content.startswith(b"Hello &lt;b&gt; &amp;")


# -- test machinery without django.test in production ---------------------------------------

MINIMAL_SETTINGS = """
from pathlib import Path

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path

from ptl_wsgi.contrib.django import html_response, render_text

HERE = Path(__file__).resolve().parent
SECRET_KEY = "x"
ALLOWED_HOSTS = ["testserver"]
ROOT_URLCONF = "minimal_settings"
INSTALLED_APPS = []
TEMPLATES = [{"BACKEND": "ptl_wsgi.contrib.django.PTLTemplates", "NAME": "ptl",
              "DIRS": [HERE], "APP_DIRS": False, "OPTIONS": {}}]


def page(request):
    return render(request, "page.ptl", {"name": "<world>"})


def text(request):
    return HttpResponse(render_text("page.ptl", {"name": "<x>"}), content_type="text/plain")


urlpatterns = [path("", page), path("text/", text), path("html/", lambda r: html_response("<"))]
"""

PRODUCTION = """
import io, sys
from wsgiref.util import setup_testing_defaults
from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
for path in ("/", "/text/", "/html/"):
    environ = {"PATH_INFO": path, "wsgi.errors": io.StringIO()}
    setup_testing_defaults(environ)
    environ["HTTP_HOST"] = "testserver"
    statuses = []
    body = b"".join(application(environ, lambda status, headers: statuses.append(status)))
    print(statuses[0], body.decode())
print(sorted(name for name in sys.modules if name.startswith("django.test")))
"""


def test_production_does_not_import_django_test(tmp_path):
    (tmp_path / "minimal_settings.py").write_text(MINIMAL_SETTINGS)
    (tmp_path / "page.ptl").write_text('def render [html] (name):\n    "<p>%s</p>" % name\n')
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "minimal_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).parents[2])]),
    }
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PRODUCTION)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "200 OK <p>&lt;world&gt;</p>"
    assert lines[1] == "200 OK <p>&lt;x&gt;</p>"
    assert lines[2] == "200 OK &lt;"
    assert lines[3] == "[]"


TOOLBAR_APPS = [*settings_module.INSTALLED_APPS, "debug_toolbar"]


def test_debug_toolbar_lists_ptl_templates():
    import debug_toolbar  # noqa: F401  (a dev dependency: missing must fail, not skip)

    # Two steps: the toolbar's app reads STATIC_URL as INSTALLED_APPS changes.
    with (
        override_settings(STATIC_URL="/static/"),
        override_settings(
            DEBUG=True,
            INSTALLED_APPS=TOOLBAR_APPS,
            MIDDLEWARE=[
                *settings_module.MIDDLEWARE,
                "debug_toolbar.middleware.DebugToolbarMiddleware",
            ],
            ROOT_URLCONF="tests.django_project.urls_toolbar",
            INTERNAL_IPS=["127.0.0.1"],
            DEBUG_TOOLBAR_CONFIG={"IS_RUNNING_TESTS": False, "RENDER_PANELS": True},
        ),
    ):
        response = Client().get("/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="djDebug"' in html
    panel = html[html.index('id="TemplatesPanel"') :]
    # Every template that ran, as in response.templates: the page's and the layout's.
    assert "Templates (10 rendered)" in panel
    assert "testapp/index.ptl" in panel and "layout.ptl:page" in panel
    assert str(APP_TEMPLATES / "testapp" / "index.ptl") in panel
    assert "&#x27;items&#x27;: [&#x27;a&amp;b&#x27;, &#x27;&lt;i&gt;&#x27;]" in panel  # its context
    assert "&lt;Items&gt;" in html


# -- interop -------------------------------------------------------------------------


@pytest.mark.django_db
def test_django_safe_strings_and_forms_stay_unescaped_in_ptl(client):
    html = client.get("/interop/").content.decode()
    assert "<div><b>safe</b></div>" in html
    assert "<div><i>&lt;x&gt;</i></div>" in html
    assert "<div>&lt;script&gt;</div>" in html
    assert 'value="&quot;&gt;&lt;script&gt;"' in html  # Django escaped the bound value, once
    assert '<input type="text" name="name"' in html


def test_ptl_output_is_not_escaped_again_by_django_templates(client):
    html = client.get("/dtl/").content.decode()
    assert "<section><li>&lt;PTL&gt;</li>\n</section>" in html
    assert "<section>&lt;plain&gt;</section>" in html


def test_html_response():
    response = html_response(htmltext("<p>%s</p>") % "<x>")
    assert response.content == b"<p>&lt;x&gt;</p>"
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert html_response("<p>", status=400).content == b"&lt;p&gt;"
    assert html_response(SafeString("<p>")).content == b"<p>"


def test_html_response_follows_the_output_policy():
    assert html_response(b"<p>\xc3\xa9</p>").content == "&lt;p&gt;\u00e9&lt;/p&gt;".encode()
    assert html_response(None).content == b""
    assert html_response(iter([htmltext("<p>"), "<x>", None])).content == b"<p>&lt;x&gt;"
    # Not HTML: the text as it is, the way render_text gives it.
    text = html_response(htmltext("<p>a & b</p>"), content_type="text/plain")
    assert text.content == b"<p>a & b</p>"
    svg = html_response("<svg onload=x>", content_type="image/svg+xml")
    assert svg.content == b"&lt;svg onload=x&gt;"


def test_html_response_from_a_view(client):
    assert client.get("/fragment/", {"q": "<b>"}).content == b"<p>&lt;b&gt;</p>"


# -- errors on the debug page ------------------------------------------------------------


def test_syntax_error_has_template_debug(client, broken_template):
    with pytest.raises(TemplateSyntaxError) as info:
        client.get("/broken/")
    debug = info.value.template_debug
    assert debug["name"] == str(broken_template)
    assert debug["line"] == 3 and debug["during"] == "    if True"
    assert debug["source_lines"][0] == (1, "def render [html] ():")
    assert isinstance(info.value.__cause__, SyntaxError)
    html = report_html(info.value)
    assert "Error during template rendering" in html
    assert "broken.ptl</code>, error at line <strong>3</strong>" in html


def test_render_error_keeps_its_type_and_points_at_the_ptl_line(client):
    with pytest.raises(ZeroDivisionError) as info:
        client.get("/raises/")
    debug = info.value.template_debug
    assert debug["name"].endswith("raises.ptl")
    assert debug["line"] == 2
    assert debug["during"] == '    "<p>%s</p>" % (total / count)'
    assert (debug["top"], debug["bottom"], debug["total"]) == (0, 7, 7)
    html = report_html(info.value)
    assert "raises.ptl</code>, error at line <strong>2</strong>" in html


def test_missing_context_value_points_at_the_def(engine):
    with pytest.raises(TemplateArgumentError) as info:
        engine.get_template("testapp/needs_arg.ptl").render({})
    assert info.value.template_debug["line"] == 1


def test_syntax_error_in_an_imported_template(tmp_engine, tmp_path):
    (tmp_path / "layout.ptl").write_text("def page [html] (:\n")
    (tmp_path / "page.ptl").write_text("from .layout import page\n")
    with pytest.raises(TemplateSyntaxError) as info:
        tmp_engine.get_template("page.ptl")
    debug = info.value.template_debug
    assert (debug["name"], debug["line"]) == (str(tmp_path / "layout.ptl"), 1)


def test_import_error_in_a_template_points_at_the_import(tmp_engine, tmp_path):
    (tmp_path / "page.ptl").write_text("\nfrom .nowhere import x\n")
    with pytest.raises(ImportError) as info:
        tmp_engine.get_template("page.ptl")
    assert info.value.template_debug["line"] == 2


@pytest.mark.parametrize("name", ["direct", "indirect"])
def test_syntax_error_in_a_template_imported_while_rendering(client, broken_template, name):
    with pytest.raises(TemplateSyntaxError) as info:
        client.get(f"/include/{name}/")
    debug = info.value.template_debug
    assert (debug["name"], debug["line"]) == (str(broken_template), 3)
    assert debug["during"] == "    if True"
    assert isinstance(info.value.__cause__, SyntaxError)


@pytest.mark.parametrize("name", ["direct", "indirect"])
def test_debug_page_shows_the_broken_included_file(broken_template, name):
    with override_settings(DEBUG=True):
        client = Client(raise_request_exception=False)
        response = client.get(f"/include/{name}/", headers={"accept": "text/html"})
    html = response.content.decode()
    assert response.status_code == 500
    section = html[html.index('<div id="template">') :]
    section = section[: section.index("</div>")]
    assert "Error during template rendering" in section
    assert f"In template <code>{broken_template}</code>, error at line <strong>3</strong>" in (
        section
    )
    assert "include.ptl" not in section


def test_render_error_points_at_the_innermost_ptl_line(client):
    with pytest.raises(ZeroDivisionError) as info:
        client.get("/calls-raises/")
    debug = info.value.template_debug
    assert debug["name"] == str(APP_TEMPLATES / "testapp" / "raises.ptl")
    assert debug["line"] == 2


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/missing/", ["Template-loader postmortem", "Using engine <code>ptl</code>"]),
        ("/broken/", ["broken.ptl</code>, error at line <strong>3</strong>", "    if True"]),
        ("/raises/", ["raises.ptl</code>, error at line <strong>2</strong>", "ZeroDivisionError"]),
    ],
)
def test_debug_page(settings, broken_template, path, expected):
    settings.DEBUG = True
    response = Client(raise_request_exception=False).get(path, headers={"accept": "text/html"})
    html = response.content.decode()
    assert response.status_code == 500
    for text in expected:
        assert text in html


# -- reloading ---------------------------------------------------------------------------


def test_auto_reload_picks_up_edits(tmp_engine, tmp_path):
    page = tmp_path / "page.ptl"
    page.write_text("def render [html] ():\n    'one'\n")
    assert tmp_engine.get_template("page.ptl").render() == "one"
    page.write_text("def render [html] ():\n    'two, longer'\n")
    assert tmp_engine.get_template("page.ptl").render() == "two, longer"


def test_a_half_written_template_keeps_the_last_good_version(tmp_engine, tmp_path, caplog):
    page = tmp_path / "page.ptl"
    page.write_text("def render [html] ():\n    '<p>one</p>'\n")
    assert tmp_engine.get_template("page.ptl").render() == "<p>one</p>"
    caplog.set_level(logging.WARNING, logger="ptl_wsgi.loader")
    page.write_text("def render [html] ():\n    '<p>tw")  # caught half-way through a save
    assert tmp_engine.get_template("page.ptl").render() == "<p>one</p>"
    assert any("page.ptl" in r.getMessage() for r in caplog.records if r.name == "ptl_wsgi.loader")
    page.write_text("def render [html] ():\n    '<p>two, longer</p>'\n")
    assert tmp_engine.get_template("page.ptl").render() == "<p>two, longer</p>"


def test_autoreloader_reset_keeps_the_last_good_version(tmp_path, settings):
    # runserver's autoreloader: file_changed resets the engine, auto_reload or not.
    settings.TEMPLATES = [
        *settings.TEMPLATES,
        {
            "BACKEND": "ptl_wsgi.contrib.django.PTLTemplates",
            "NAME": "ptl_reset",
            "DIRS": [tmp_path],
        },
    ]
    engine = engines["ptl_reset"]
    assert engine.auto_reload is False
    page = tmp_path / "page.ptl"
    page.write_text("def render [html] ():\n    '<p>one</p>'\n")
    assert engine.get_template("page.ptl").render() == "<p>one</p>"
    page.write_text("def render [html] ():\n    '<p>tw")
    file_changed.send(sender=None, file_path=page)
    assert engine.get_template("page.ptl").render() == "<p>one</p>"
    page.write_text("def render [html] ():\n    '<p>two</p>'\n")
    file_changed.send(sender=None, file_path=page)
    assert engine.get_template("page.ptl").render() == "<p>two</p>"


def test_autoreloader_watches_ptl_files_in_every_directory(engine):
    class Reloader:
        watched: list[tuple[str, str]] = []

        def watch_dir(self, path, glob):
            self.watched.append((str(path), glob))

    autoreload_started.send(sender=Reloader())
    assert (str(APP_TEMPLATES), "**/*.ptl") in Reloader.watched
    assert (str(PROJECT / "templates"), "**/*.ptl") in Reloader.watched


def test_changed_ptl_file_resets_the_engine_instead_of_restarting(engine):
    template = APP_TEMPLATES / "testapp" / "about.ptl"
    before = engine.get_template("testapp/about.ptl").template
    results = file_changed.send(sender=None, file_path=template)
    assert any(result for _receiver, result in results)
    assert engine.get_template("testapp/about.ptl").template is not before  # read again
    assert engine.get_template("testapp/about.ptl").render({"view": 1}).startswith("<p>int")
    outside = Path(sys.prefix) / "elsewhere.ptl"
    assert not any(r for _, r in file_changed.send(sender=None, file_path=outside))
