"""htmltext with the real markup types and template engines of other projects.

Every library here recognises trusted markup by ``__html__``: htmltext must be
kept as markup by them, and their markup must be kept by htmltext.  No mocks:
real Flask, Django, Jinja2 and markupsafe.
"""

from __future__ import annotations

import html

import django
import jinja2
import markupsafe
import pytest
from django.conf import settings
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from flask import Flask, render_template_string
from markupsafe import Markup


def setup_django() -> None:
    """Configure Django minimally, unless a settings module already did.

    The suite's own settings (pytest-django) win when present; the template
    engine below is standalone so that it does not depend on them.
    """
    if not settings.configured:
        settings.configure(
            TEMPLATES=[
                {
                    "BACKEND": "django.template.backends.django.DjangoTemplates",
                    "APP_DIRS": False,
                    "DIRS": [],
                }
            ],
        )
    django.setup()


@pytest.fixture(scope="module")
def django_engine():
    """A standalone Django template engine (autoescaping, like every Django engine)."""
    setup_django()
    from django.template import Engine

    return Engine(autoescape=True)


def render_django(engine, source: str, **context) -> str:
    from django.template import Context

    return engine.from_string(source).render(Context(context))


# -- Flask ---------------------------------------------------------------------------


@pytest.fixture
def flask_app(impl):
    app = Flask(__name__)

    @app.route("/markup")
    def markup_view():
        return impl.htmltext("<b>x</b>")

    @app.route("/template")
    def template_view():
        return render_template_string(
            "<p>{{ trusted }} {{ untrusted }}</p>",
            trusted=impl.htmltext("<b>x</b>"),
            untrusted="<b>y</b>",
        )

    return app


def test_flask_view_returning_htmltext(flask_app):
    response = flask_app.test_client().get("/markup")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    assert response.content_type == "text/html; charset=utf-8"
    assert response.get_data(as_text=True) == "<b>x</b>"


def test_flask_template_keeps_htmltext_and_escapes_str(flask_app):
    response = flask_app.test_client().get("/template")
    assert response.status_code == 200
    assert response.get_data(as_text=True) == "<p><b>x</b> &lt;b&gt;y&lt;/b&gt;</p>"


# -- Django --------------------------------------------------------------------------


def test_django_template_keeps_htmltext(impl, django_engine):
    assert render_django(django_engine, "{{ v }}", v=impl.htmltext("<b>")) == "<b>"


def test_django_template_still_escapes_str(impl, django_engine):
    rendered = render_django(django_engine, "{{ a }}|{{ b }}", a=impl.htmltext("<i>"), b="<i>")
    assert rendered == "<i>|&lt;i&gt;"


def test_django_conditional_escape_keeps_htmltext(impl):
    result = conditional_escape(impl.htmltext("<b>&amp;</b>"))
    assert str(result) == "<b>&amp;</b>"


def test_htmlescape_keeps_mark_safe(impl):
    for value in (mark_safe("<b>"), SafeString("<b>")):
        result = impl.htmlescape(value)
        assert type(result) is impl.htmltext
        assert str(result) == "<b>"


def test_format_html_keeps_htmltext_and_escapes_str(impl):
    result = format_html("<p>{} {}</p>", impl.htmltext("<b>"), "<i>")
    assert isinstance(result, SafeString)
    assert str(result) == "<p><b> &lt;i&gt;</p>"


def test_htmltext_keeps_format_html_output(impl):
    fragment = format_html("<a href='{}'>x</a>", "?a=1&b=2")
    page = impl.htmltext("<li>{}</li>").format(fragment) + "<"
    assert type(page) is impl.htmltext
    assert str(page) == "<li><a href='?a=1&amp;b=2'>x</a></li>&lt;"


def test_htmltext_formats_django_safestring(impl):
    assert str(impl.htmltext("<p>%s</p>") % mark_safe("<i>")) == "<p><i></p>"
    assert str(impl.htmltext("<p>{}</p>").format(mark_safe("<i>"))) == "<p><i></p>"


# -- Jinja2 --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jinja_env():
    return jinja2.Environment(autoescape=True)


def test_jinja2_autoescape_keeps_htmltext(impl, jinja_env):
    template = jinja_env.from_string("{{ v }}|{{ s }}|{{ v|e }}")
    assert template.render(v=impl.htmltext("<b>"), s="<b>") == "<b>|&lt;b&gt;|<b>"


def test_jinja2_markup_flows_into_htmltext(impl, jinja_env):
    rendered = jinja_env.from_string("<i>{{ x }}</i>").render(x="&")
    assert isinstance(rendered, str)  # Jinja returns plain str; wrap it to trust it
    page = impl.htmltext("<div>%s</div>") % Markup(rendered)
    assert str(page) == "<div><i>&amp;</i></div>"


# -- markupsafe ----------------------------------------------------------------------


def test_markupsafe_escape_keeps_htmltext(impl):
    result = markupsafe.escape(impl.htmltext("<b>&amp;</b>"))
    assert type(result) is Markup
    assert str(result) == "<b>&amp;</b>"


def test_htmlescape_keeps_markup(impl):
    result = impl.htmlescape(Markup("<b>"))
    assert type(result) is impl.htmltext
    assert str(result) == "<b>"


def test_htmltext_percent_keeps_markup(impl):
    result = impl.htmltext("<p>%s</p>") % Markup("<i>")
    assert type(result) is impl.htmltext
    assert str(result) == "<p><i></p>"


def test_markup_operations_keep_htmltext(impl):
    ht = impl.htmltext("<b>")
    assert str(Markup("<p>%s</p>") % ht) == "<p><b></p>"
    assert str(Markup("<p>{}</p>").format(ht)) == "<p><b></p>"
    assert str(Markup("<br>").join([ht, "<"])) == "<b><br>&lt;"
    assert str(Markup("<i>") + ht) == "<i><b>"


def test_markup_and_htmltext_escape_the_same_characters(impl):
    """Both escape ``& < > " '``; only the entity spelling differs (``&#34;`` vs ``&quot;``)."""
    text = "<a href=\"x\">'&'</a> é 😀"
    ours, theirs = str(impl.htmlescape(text)), str(markupsafe.escape(text))
    assert html.unescape(ours) == html.unescape(theirs) == text
    assert not set(ours) & set("<>\"'")
    assert not set(theirs) & set("<>\"'")
