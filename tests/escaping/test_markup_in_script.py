"""A markup value is HTML: in a script or a style it is a value, never code.

Markup (``htmltext``, markupsafe's ``Markup``, Django's ``SafeString``, anything with
``__html__``) is trusted as HTML.  JavaScript, JSON and CSS are other languages: HTML
escaping protects nothing there, and Django's ``format_html`` makes every argument
such markup (``conditional_escape``), so trusting markup as code let
``format_html('<script>var n = {};</script>', user)`` run ``user`` (review finding
P1).  In those contexts a markup value is escaped as its text would be, through every
path that escapes a value: the escapers of both twins, ``%``, ``.format()``,
``.format_map()``, ``format_html``, compiled ``[html]`` templates and t-strings.
Text-like contexts keep markup as markup.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from browser import BROWSER_ONLY
from django.utils.html import format_html
from django.utils.safestring import SafeString
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup
from ptl_helpers import HtmlObject, compiled

from ptl_wsgi.escaping.escapers import for_class
from ptl_wsgi.escaping.rules import MARKUP_AS_VALUE_BASES

# Markup around a value, the value written VALUE: every place in a script or a style.
SCRIPT_AND_STYLE = {
    "js value": "<script>var n = VALUE;</script>",
    "js string": '<script>var s = "VALUE";</script>',
    "js single-quoted string": "<script>var s = 'VALUE';</script>",
    "js template literal": "<script>var s = `VALUE`;</script>",
    "js regexp": "<script>var r = /VALUE/;</script>",
    "js line comment": "<script>// VALUE\n</script>",
    "js block comment": "<script>/* VALUE */</script>",
    "json value": '<script type="application/json">{"a": VALUE}</script>',
    "json string": '<script type="application/ld+json">{"a": "VALUE"}</script>',
    "event handler value": '<a onclick="f(VALUE)">x</a>',
    "event handler string": "<a onclick=\"f('VALUE')\">x</a>",
    "framework attribute": "<button @click=\"go('VALUE')\">x</button>",
    "css value": "<style>p { color: VALUE }</style>",
    "css string": '<style>p { content: "VALUE" }</style>',
    "css comment": "<style>/* VALUE */</style>",
    "style attribute": '<p style="color: VALUE">x</p>',
    "svg script": "<svg><script>var n = VALUE;</script></svg>",
}
# Where markup is HTML: it stays markup.
TEXT_LIKE = {
    "text": "<p>VALUE</p>",
    "title": "<title>VALUE</title>",
    "textarea": "<textarea>VALUE</textarea>",
}

# Code an attacker would like to run, as markup made of it (HTML escaping leaves it).
HOSTILE = [
    "1;alert(1)",
    "1);alert(1);(1",
    '";alert(1);"',
    "';alert(1);'",
    "${alert(1)}",
    "/;alert(1);/",
    "\nalert(1)\n",
    "*/alert(1)/*",
    "red;background:url(//evil.example/x)",
    'x"}body{background:red}"',
]


def markups(impl: Any, text: str) -> list[Any]:
    """*text* as each kind of markup: the twin's htmltext, Markup, SafeString, __html__."""
    return [impl.htmltext(text), Markup(text), SafeString(text), HtmlObject(text)]


def percent(markup: str) -> str:
    return markup.replace("%", "%%").replace("VALUE", "%s")


def brace(markup: str) -> str:
    return markup.replace("{", "{{").replace("}", "}}").replace("VALUE", "{}")


# -- run-time formatting, both twins -------------------------------------------------------


@pytest.mark.parametrize("context", sorted(SCRIPT_AND_STYLE))
@pytest.mark.parametrize("text", HOSTILE)
def test_markup_in_a_script_or_style_is_formatted_as_its_text(impl, context, text):
    markup = SCRIPT_AND_STYLE[context]
    as_text_percent = impl.htmltext(percent(markup)) % text
    as_text_brace = impl.htmltext(brace(markup)).format(text)
    for value in markups(impl, text):
        assert impl.htmltext(percent(markup)) % (value,) == as_text_percent, type(value)
        assert impl.htmltext(brace(markup)).format(value) == as_text_brace, type(value)
        keyed = brace(markup).replace("{}", "{v}")
        assert impl.htmltext(keyed).format_map({"v": value}) == as_text_brace, type(value)


@pytest.mark.parametrize("context", sorted(TEXT_LIKE))
def test_markup_in_text_stays_markup(impl, context):
    markup = TEXT_LIKE[context]
    for value in markups(impl, "<b>bold</b>"):
        assert impl.htmltext(percent(markup)) % (value,) == markup.replace("VALUE", "<b>bold</b>")
        assert impl.htmltext(brace(markup)).format(value) == markup.replace("VALUE", "<b>bold</b>")


def test_the_review_reproduction(impl):
    # Review finding P1: the same result for htmltext's format as for a str value.
    result = impl.htmltext("<script>var n = {};</script>").format(Markup("1;alert(1)"))
    assert str(result) == '<script>var n =  "1;alert(1)" ;</script>'
    result = impl.htmltext("<script>var n = %s;</script>") % Markup("1;alert(1)")
    assert str(result) == '<script>var n =  "1;alert(1)" ;</script>'


def test_format_html_of_a_user_value_in_a_script(impl):
    # Django's format_html makes its argument a SafeString (conditional_escape) and calls
    # the format's own .format(): in a template the format is htmltext.
    user = "1; alert(document.domain)"
    result = format_html(impl.htmltext("<script>var n = {};</script>"), user)
    assert str(result) == '<script>var n =  "1; alert(document.domain)" ;</script>'
    result = format_html(impl.htmltext('<p style="color: {}">x</p>'), "red;x:url(y)")
    assert str(result) == '<p style="color: ZptlZ">x</p>'
    result = format_html(impl.htmltext("<a onclick=\"f('{}')\">x</a>"), "');alert(1);('")
    # The string holds format_html's HTML-escaped text, as data: no quote can end it.
    assert str(result) == "<a onclick=\"f('\\x26#x27;);alert(1);(\\x26#x27;')\">x</a>"
    # Text keeps format_html's escaping, as before.
    assert str(format_html(impl.htmltext("<p>{}</p>"), "<x>")) == "<p>&lt;x&gt;</p>"


# -- the escapers themselves, both twins ------------------------------------------------------


def _escaper_names_by_base() -> dict[str, list[str]]:
    from ptl_wsgi.escaping.escapers import _escaper_names

    found: dict[str, list[str]] = {}
    for name, base, _layer in _escaper_names():
        found.setdefault(base, []).append(name)
    found.setdefault("json_value", []).append("json_value")
    return found


@pytest.mark.parametrize("base", sorted(MARKUP_AS_VALUE_BASES))
def test_every_script_and_style_escaper_escapes_markup_as_its_text(impl, base):
    escapers = for_class(impl.htmltext, impl.module)
    names = _escaper_names_by_base()[base]
    assert names
    for name in names:
        for text in HOSTILE:
            expected = escapers[name](text)
            for value in markups(impl, text):
                assert str(escapers[name](value)) == str(expected), (name, type(value))


def test_the_rule_names_the_script_and_style_bases():
    assert {"js_value", "js_string", "js_regexp", "json_string", "json_value", "css"} <= (
        MARKUP_AS_VALUE_BASES
    )
    assert "text" not in MARKUP_AS_VALUE_BASES and "comment" not in MARKUP_AS_VALUE_BASES


SCRIPT_CHARS = "<>&\"'`${}/\\;:()\n*"


@settings(max_examples=200)
@given(
    context=st.sampled_from(sorted(SCRIPT_AND_STYLE)),
    text=st.text(st.one_of(st.sampled_from(list(SCRIPT_CHARS)), st.characters()), max_size=20),
    kind=st.integers(0, 3),
)
def test_both_twins_agree_on_markup_in_scripts_and_styles(twins, context, text, kind):
    python, c = twins
    markup = SCRIPT_AND_STYLE[context]

    def run(impl: Any) -> tuple[str, str]:
        try:
            value = markups(impl, text)[kind]
            return ("ok", str(impl.htmltext(brace(markup)).format(value)))
        except Exception as exc:  # the same exception type is the property
            return ("raised", type(exc).__name__)

    assert run(c) == run(python)


# -- compiled templates ------------------------------------------------------------------------


@pytest.mark.parametrize("context", sorted(SCRIPT_AND_STYLE))
def test_markup_in_a_compiled_template_is_a_value_in_scripts_and_styles(context):
    markup = SCRIPT_AND_STYLE[context]
    head, tail = markup.split("VALUE")
    source = textwrap.dedent(
        f"""
        def stmt [html] (v):
            {head!r}
            v
            {tail!r}

        def fstr [html] (v):
            f{brace(markup).replace("{}", "{v}")!r}

        def fmt [html] (v):
            format_html({brace(markup)!r}, v)
        """
    )
    module = compiled(source, "markup_in_script")
    module.format_html = format_html
    from ptl_wsgi.html import htmltext

    for text in HOSTILE:
        for function in (module.stmt, module.fstr):
            expected = str(function(text))
            for value in [htmltext(text), Markup(text), SafeString(text), HtmlObject(text)]:
                assert str(function(value)) == expected, (function.__name__, type(value))
        # format_html's SafeString of the HTML-escaped user value is that text.
        escaped = str(module.fstr(str(SafeString(format_html("{}", text)))))
        assert str(module.fmt(text)) == escaped


# -- t-strings (Python 3.14) -------------------------------------------------------------------


@pytest.mark.skipif(sys.version_info < (3, 14), reason="t-strings are Python 3.14")
@pytest.mark.parametrize("context", sorted(SCRIPT_AND_STYLE))
def test_markup_in_a_tstring_is_a_value_in_scripts_and_styles(impl, context):
    markup = SCRIPT_AND_STYLE[context]
    from ptl_wsgi.escaping.planner import contextual_format
    from ptl_wsgi.html import htmlformat

    escapers = for_class(impl.htmltext, impl.module)

    def twins_format(template: Any) -> str:
        return contextual_format(template, escapers, impl.module.format_field)

    make = eval(f"lambda v: t{brace(markup).replace('{}', '{v}')!r}")
    for text in HOSTILE:
        expected = twins_format(make(text))
        assert str(htmlformat(make(text))) == expected  # the public one, the active twin's
        for value in markups(impl, text):
            assert twins_format(make(value)) == expected, type(value)
            assert str(htmlformat(make(value))) == expected, type(value)


# -- unquoted attribute values: markup's own escaping (for text) leaves spaces and "=" -------


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ("<input value=VALUE>", "<input value=x&#32;onfocus&#61;alert(1)&#32;autofocus>"),
        ("<a href=VALUE>x</a>", "<a href=x&#32;onfocus&#61;alert(1)&#32;autofocus>x</a>"),
        ("<input value=aVALUE>", "<input value=ax&#32;onfocus&#61;alert(1)&#32;autofocus>"),
    ],
)
def test_markup_in_an_unquoted_attribute_cannot_add_attributes(impl, markup, expected):
    user = "x onfocus=alert(1) autofocus"
    for value in [*markups(impl, user), format_html("{}", user)]:
        assert impl.htmltext(brace(markup)).format(value) == expected, type(value)
        assert impl.htmltext(percent(markup)) % (value,) == expected, type(value)


def test_markup_in_an_unquoted_attribute_keeps_its_references(impl):
    # Markup's "&amp;" means "&" in the attribute, as in text; its "<" and quotes are data.
    for value in markups(impl, "a&amp;b <i>'\""):
        result = impl.htmltext("<p title={}>x</p>").format(value)
        assert result == "<p title=a&amp;b&#32;&#60;i&#62;&#39;&#34;>x</p>", type(value)
    assert impl.htmltext("<p title={}>x</p>").format(Markup("")) == '<p title="">x</p>'


# -- the one markup a script takes as it is: JSON a trusted encoder made (tojson) ----------


def test_tojson_output_is_the_javascript_value_it_is(impl):
    from ptl_wsgi.filters.jinja2 import tojson

    data = {"a": "</script><b>'", "n": -1}
    value = tojson(data)
    text = '{"a": "\\u003c/script\\u003e\\u003cb\\u003e\\u0027", "n": -1}'
    assert str(value) == text
    assert impl.htmltext("<script>var d = {};</script>").format(value) == (
        f"<script>var d = {text};</script>"
    )
    assert impl.htmltext('<script type="application/json">{}</script>').format(value) == (
        f'<script type="application/json">{text}</script>'
    )
    # "a-" and "-1" do not make "a--1".
    assert impl.htmltext("<script>a-{};</script>").format(tojson(-1)) == "<script>a- -1;</script>"
    # In a handler the attribute's HTML escaping still applies; in a string it is a value.
    assert impl.htmltext('<a onclick="f({})">x</a>').format(tojson("x")) == (
        '<a onclick="f(&quot;x&quot;)">x</a>'
    )
    assert impl.htmltext('<script>var s = "{}";</script>').format(tojson("x")) == (
        '<script>var s = "\\x22x\\x22";</script>'
    )
    # Any other markup spelling JSON is a value.
    assert impl.htmltext("<script>var d = {};</script>").format(Markup("1")) == (
        '<script>var d =  "1" ;</script>'
    )


# -- in Chromium: nothing runs ------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from browser import XSSBrowser

    with XSSBrowser() as browser:
        yield browser


@pytest.mark.parametrize("context", [pytest.param(c, marks=BROWSER_ONLY) for c in SCRIPT_AND_STYLE])
def test_markup_in_a_script_or_style_runs_nothing_in_chromium(chromium: Any, context: str) -> None:
    from browser import visit_body

    from ptl_wsgi.html import htmltext

    markup = brace(SCRIPT_AND_STYLE[context])
    pages = [
        str(htmltext(markup).format(value))
        for text in HOSTILE
        for value in (Markup(text), SafeString(text), htmltext(text))
    ]
    pages += [str(format_html(htmltext(markup), text)) for text in HOSTILE]
    # The harness sees script that runs: the same markup written by a literal.
    assert visit_body(chromium, "<script>alert(1)</script>", "http://127.0.0.1/") != []
    for page in pages:
        assert visit_body(chromium, page, "http://127.0.0.1/") == [], page
