"""t-strings (PEP 750) in Python code: ``htmlformat`` and the functions that take markup sources.

Every twin test takes the ``impl`` fixture (both twins, as in
tests/htmltext/test_htmltext.py); the differential test holds them to one outcome.
Templates are built with ``string.templatelib``'s constructors (or ``eval``
of a t-string), so that this module still imports on Python 3.10-3.13,
where the tests that need a Template are skipped.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from django.utils.safestring import SafeString
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup
from ptl_helpers import HtmlObject

import ptl_wsgi
from ptl_wsgi import html as ptl_html

TSTRINGS = sys.version_info >= (3, 14)
needs_tstrings = pytest.mark.skipif(not TSTRINGS, reason="t-strings are Python 3.14+")

if TSTRINGS:
    from string.templatelib import Interpolation, Template
else:  # pragma: no cover - the tests that use them are skipped
    Interpolation = Template = None


def field(value: Any, conversion: str | None = None, spec: str = "") -> Any:
    """One interpolation, as ``{value!conversion:spec}`` makes it."""
    return Interpolation(value, "value", conversion, spec)


def tstring(source: str, **names: Any) -> Any:
    """Evaluate the t-string literal *source* with *names* in scope."""
    return eval(source, {}, names)


class Plain:
    """Untrusted: its str(), repr() and format() all contain markup characters."""

    def __str__(self) -> str:
        return "<plain & 'simple'>"

    def __repr__(self) -> str:
        return 'Plain("<>")'


class Sneaky(str):
    """A str subclass that hides its markup characters from ``in`` and ``replace``."""

    def __contains__(self, item: object) -> bool:
        return False

    def replace(self, *args: Any, **kwargs: Any) -> Sneaky:
        return self


class SneakyValue:
    """Untrusted; its str() and format() are a :class:`Sneaky` str of markup."""

    def __str__(self) -> str:
        return Sneaky("<script>x</script>")

    def __format__(self, spec: str) -> str:
        return Sneaky("<script>x</script>")


def assert_html(result: object, impl: Any, expected: str) -> None:
    assert type(result) is impl.htmltext, type(result)
    assert str(result) == expected


# -- the public names -------------------------------------------------------------


def test_public_names() -> None:
    assert ptl_html.H is ptl_html.htmlformat
    assert ptl_wsgi.htmlformat is ptl_html.htmlformat
    assert ptl_wsgi.H is ptl_html.htmlformat
    assert {"htmlformat", "H"} <= set(ptl_html.__all__) & set(ptl_wsgi.__all__)


def test_htmlformat_is_the_twins_own_when_it_has_one(impl) -> None:
    own = getattr(impl.module, "htmlformat", None)
    if own is not None:
        assert impl.htmlformat is own
    if impl.name == ptl_html.IMPLEMENTATION:
        # The public htmlformat plans contexts and hands text-only templates to the twin's.
        assert ptl_html._twin_htmlformat is impl.htmlformat


@pytest.mark.parametrize(
    "value", ["<b>", b"<b>", None, 5, ["<b>"], ("<b>",), ptl_html.htmltext("<b>"), Markup("<b>")]
)
def test_not_a_template_is_a_type_error(impl, value: object) -> None:
    with pytest.raises(TypeError, match="Template"):
        impl.htmlformat(value)


def test_a_lookalike_is_not_a_template(impl) -> None:
    class Template:  # the name and the attributes of the real one, none of its trust
        strings = ("<script>", "</script>")
        interpolations = ()

        def __iter__(self):
            return iter(self.strings)

    with pytest.raises(TypeError, match="Template"):
        impl.htmlformat(Template())


@needs_tstrings
def test_interpolation_alone_is_not_a_template(impl) -> None:
    with pytest.raises(TypeError, match="Template"):
        impl.htmlformat(field("<b>"))


def test_importing_ptl_wsgi_does_not_import_templatelib() -> None:
    code = (
        "import sys, ptl_wsgi, ptl_wsgi.html as h\n"
        "h.htmlescape('<'); h.htmlescape(3); h.TemplateIO(html=True).__iadd__(3)\n"
        "assert 'string.templatelib' not in sys.modules, 'imported'\n"
        "assert 'string' not in sys.modules, 'string imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(TSTRINGS, reason="before Python 3.14 there is no Template")
def test_before_314_everything_is_a_type_error(impl) -> None:
    with pytest.raises(TypeError):
        impl.htmlformat("x")
    with pytest.raises(TypeError):
        ptl_html.H(object())


# -- htmlformat ---------------------------------------------------------------------


@needs_tstrings
def test_literals_trusted_values_escaped(impl) -> None:
    template = Template("<a title='", field("x' onclick='y"), "'>", field('<&>"'), "</a>")
    assert_html(
        impl.htmlformat(template),
        impl,
        "<a title='x&#x27; onclick=&#x27;y'>&lt;&amp;&gt;&quot;</a>",
    )


@needs_tstrings
def test_a_real_tstring(impl) -> None:
    url, name = "/?a=1&b=<2>", "Ann & <Bob>"
    result = impl.htmlformat(tstring("t\"<a href='{url}'>{name!r:>20}</a>\"", url=url, name=name))
    assert_html(
        result,
        impl,
        "<a href='/?a=1&amp;b=&lt;2&gt;'>" + "       &#x27;Ann &amp; &lt;Bob&gt;&#x27;" + "</a>",
    )


@needs_tstrings
@pytest.mark.parametrize(
    "text",
    ["a<b> & \"c\" 'd'", "café <é> & \"ñ\" 'ü'", "Ωμέγα <€> & \"中\" '文'", "😀 <🎉> & \"𝄞\" '🐍'"],
)
def test_every_str_kind(impl, text: str) -> None:
    expected = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    expected = expected.replace('"', "&quot;").replace("'", "&#x27;")
    assert_html(impl.htmlformat(Template(text, field(text), text)), impl, text + expected + text)


@needs_tstrings
def test_empty_and_edges(impl) -> None:
    assert_html(impl.htmlformat(Template()), impl, "")
    assert_html(impl.htmlformat(Template("{<}")), impl, "{<}")
    assert_html(impl.htmlformat(Template(field("<"))), impl, "&lt;")
    assert_html(impl.htmlformat(Template(field("<"), field(">"))), impl, "&lt;&gt;")
    assert_html(impl.htmlformat(Template(field(None), field(3), field(2.5))), impl, "None32.5")


@needs_tstrings
@pytest.mark.parametrize(
    ("conversion", "expected"),
    [
        (None, "&lt;plain &amp; &#x27;simple&#x27;&gt;"),
        ("s", "&lt;plain &amp; &#x27;simple&#x27;&gt;"),
        ("r", "Plain(&quot;&lt;&gt;&quot;)"),
        ("a", "Plain(&quot;&lt;&gt;&quot;)"),
    ],
)
def test_conversions_then_escape(impl, conversion: str | None, expected: str) -> None:
    assert_html(impl.htmlformat(Template(field(Plain(), conversion))), impl, expected)


@needs_tstrings
def test_ascii_conversion_escapes_non_ascii(impl) -> None:
    assert_html(impl.htmlformat(Template(field("é<", "a"))), impl, "&#x27;\\xe9&lt;&#x27;")


@needs_tstrings
@pytest.mark.parametrize(
    ("value", "spec", "expected"),
    [
        ("<", ">4", "   &lt;"),
        ("&lt;", ".2", "&amp;l"),  # the spec cuts the text, escaping comes after
        (3.14159, ".2f", "3.14"),
        (255, "#x", "0xff"),
        ("x", '"^5', "&quot;&quot;x&quot;&quot;"),  # a fill that would close an attribute
        ("x", "<<3", "x&lt;&lt;"),
    ],
)
def test_format_spec_then_escape(impl, value: object, spec: str, expected: str) -> None:
    assert_html(impl.htmlformat(Template(field(value, None, spec))), impl, expected)


@needs_tstrings
def test_conversion_and_spec(impl) -> None:
    assert_html(impl.htmlformat(Template(field("<", "r", "^7"))), impl, "  &#x27;&lt;&#x27;  ")


@needs_tstrings
@pytest.mark.parametrize(
    "markup",
    [
        pytest.param(lambda impl: impl.htmltext("<b>&amp;</b>"), id="htmltext"),
        pytest.param(lambda impl: Markup("<b>&amp;</b>"), id="markupsafe"),
        pytest.param(lambda impl: SafeString("<b>&amp;</b>"), id="django"),
        pytest.param(lambda impl: HtmlObject("<b>&amp;</b>"), id="__html__"),
    ],
)
def test_markup_values_are_kept(impl, markup: Any) -> None:
    assert_html(impl.htmlformat(Template("<p>", field(markup(impl)), "</p>")), impl,
                "<p><b>&amp;</b></p>")  # fmt: skip


@needs_tstrings
def test_the_other_twins_htmltext_is_markup(impl) -> None:
    other = ptl_html.implementation("python").htmltext("<i>")
    assert_html(impl.htmlformat(Template(field(other))), impl, "<i>")


@needs_tstrings
def test_markup_with_a_conversion_is_text_with_a_spec_formatted_markup(impl) -> None:
    h = impl.htmltext("<b>")
    assert_html(impl.htmlformat(Template(field(h, "s"))), impl, "&lt;b&gt;")
    assert_html(impl.htmlformat(Template(field(h, "r"))), impl, "htmltext(&#x27;&lt;b&gt;&#x27;)")
    # A spec is applied as to the same field of an [html] f-string: the markup is kept,
    # only the padding is new text.
    assert_html(impl.htmlformat(Template(field(h, None, ">5"))), impl, "  <b>")
    for value in (h, HtmlObject("<b>")):
        for spec in ("^7", ">5", '"^9', "<<3"):
            formatted = impl.htmlformat(Template(field(value, None, spec)))
            assert str(formatted) == impl.format_field(value, -1, spec)
    assert_html(impl.htmlformat(Template(field(HtmlObject("<b>"), "s"))), impl,
                "str() of HtmlObject &lt;must not be used&gt;")  # fmt: skip


@needs_tstrings
def test_nested_templates_are_kept(impl) -> None:
    inner = Template("<b>", field("<x>"), "</b>")
    outer = Template("<p>", field(inner), "|", field(Template("<i>", field(inner), "</i>")), "</p>")
    assert_html(impl.htmlformat(outer), impl, "<p><b>&lt;x&gt;</b>|<i><b>&lt;x&gt;</b></i></p>")
    name = "<Ann>"
    row = tstring('t"<td>{name}</td>"', name=name)
    assert_html(impl.htmlformat(tstring('t"<tr>{row}</tr>"', row=row)), impl,
                "<tr><td>&lt;Ann&gt;</td></tr>")  # fmt: skip


@needs_tstrings
def test_nested_template_with_a_conversion_is_text(impl) -> None:
    inner = Template("<b>")
    assert_html(impl.htmlformat(Template(field(inner, "r"))), impl,
                "Template(strings=(&#x27;&lt;b&gt;&#x27;,), interpolations=())")  # fmt: skip
    with pytest.raises(TypeError):
        impl.htmlformat(Template(field(inner, None, ">9")))


@needs_tstrings
def test_deep_nesting(impl) -> None:
    template = Template("<x>")
    for _ in range(50):
        template = Template("<i>", field(template), "</i>")
    assert str(impl.htmlformat(template)) == "<i>" * 50 + "<x>" + "</i>" * 50
    for _ in range(100_000):
        template = Template(field(template))
    with pytest.raises(RecursionError):
        impl.htmlformat(template)


@needs_tstrings
def test_a_str_subclass_cannot_hide_its_markup(impl) -> None:
    value = SneakyValue()
    for template in (Template(field(value)), Template(field(value, "s")),
                     Template(field(value, None, ">3"))):  # fmt: skip
        assert_html(impl.htmlformat(template), impl, "&lt;script&gt;x&lt;/script&gt;")
    assert_html(impl.htmlformat(Template(field(Sneaky("<s>")))), impl, "&lt;s&gt;")


@needs_tstrings
def test_errors_propagate(impl) -> None:
    class Broken:
        def __html__(self) -> str:
            raise LookupError("from __html__")

        def __format__(self, spec: str) -> str:
            raise KeyError("from __format__")

    with pytest.raises(LookupError):
        impl.htmlformat(Template(field(Broken())))
    with pytest.raises(LookupError, match="from __html__"):  # markup first, as in templates
        impl.htmlformat(Template(field(Broken(), None, "x")))

    class BadFormat:
        def __format__(self, spec: str) -> str:
            raise KeyError("from __format__")

    with pytest.raises(KeyError):
        impl.htmlformat(Template(field(BadFormat(), None, "x")))
    with pytest.raises(ValueError):
        impl.htmlformat(Template(field(3, None, "q")))


@needs_tstrings
def test_interpolation_checks_its_fields() -> None:
    # What the twins may rely on: Python itself refuses other conversions and specs.
    with pytest.raises((TypeError, ValueError)):
        Interpolation(1, "x", "z", "")
    with pytest.raises(TypeError):
        Interpolation(1, "x", None, 5)
    with pytest.raises(TypeError):
        Template("a", 3)


# -- differential: the twins agree on random templates ------------------------------------

SPECIAL = list("&<>\"'{}")
texts = st.text(st.one_of(st.sampled_from(SPECIAL), st.characters(min_codepoint=0x20)), max_size=8)
leaf_values = st.one_of(
    texts.map(lambda s: ("str", s)),
    texts.map(lambda s: ("ht", s)),
    texts.map(lambda s: ("markup", s)),
    texts.map(lambda s: ("obj", s)),
    st.integers(-300, 300).map(lambda n: ("int", n)),
    st.floats(allow_nan=True).map(lambda f: ("float", f)),
    st.just(("none",)),
)
conversions = st.sampled_from([None, None, "s", "r", "a"])
format_specs = st.sampled_from(["", "", ">5", "^7", '"^9', "<<3", ".2", "x", "d", ".2f", "q"])


def templates(inner: st.SearchStrategy) -> st.SearchStrategy:
    fields = st.tuples(inner, conversions, format_specs).map(lambda f: ("field", *f))
    part = st.one_of(texts.map(lambda s: ("text", s)), fields)
    return st.lists(part, max_size=5).map(lambda parts: ("template", parts))


template_values = st.recursive(leaf_values, templates, max_leaves=8)


def build(desc: tuple, impl: Any) -> Any:
    kind = desc[0]
    if kind == "str":
        return desc[1]
    if kind == "ht":
        return impl.htmltext(desc[1])
    if kind == "markup":
        return Markup(desc[1])
    if kind == "obj":
        return HtmlObject(desc[1])
    if kind in ("int", "float"):
        return desc[1]
    if kind == "none":
        return None
    assert kind == "template", desc
    parts = []
    for part in desc[1]:
        if part[0] == "text":
            parts.append(part[1])
        else:
            parts.append(field(build(part[1], impl), part[2], part[3]))
    return Template(*parts)


def outcome(operation: Any, impl: Any) -> Any:
    try:
        result = operation(impl)
    except Exception as exc:
        return ("raises", type(exc).__name__)
    return (type(result).__name__, str(result))


@needs_tstrings
@settings(max_examples=200)
@given(templates(template_values))
def test_twins_agree(twins, desc) -> None:
    python, c = twins
    expected = outcome(lambda impl: impl.htmlformat(build(desc, impl)), python)
    assert outcome(lambda impl: impl.htmlformat(build(desc, impl)), c) == expected


def test_str_subclass_cannot_hide_its_markup_anywhere(impl) -> None:
    # Not t-string specific: the Python twin's escaping once asked the str
    # subclass itself ("in", replace()) and let its markup through.
    value = SneakyValue()
    assert_html(impl.htmlescape(value), impl, "&lt;script&gt;x&lt;/script&gt;")
    assert_html(impl.html_join([value, Sneaky("<")]), impl, "&lt;script&gt;x&lt;/script&gt;&lt;")
    io = impl.TemplateIO(html=True)
    io += value
    assert_html(io.getvalue(), impl, "&lt;script&gt;x&lt;/script&gt;")
    assert impl.format_field(value, -1, "") == "&lt;script&gt;x&lt;/script&gt;"
    assert impl.format_field(value, ord("s"), "") == "&lt;script&gt;x&lt;/script&gt;"
    assert_html(impl.htmltext("<p>%s</p>") % value, impl, "<p>&lt;script&gt;x&lt;/script&gt;</p>")
    assert_html(impl.htmltext("<p>{}</p>").format(value), impl,
                "<p>&lt;script&gt;x&lt;/script&gt;</p>")  # fmt: skip


# -- markup sources: htmlescape, html_join, TemplateIO ---------------------------------

ATTACK = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@needs_tstrings
def test_htmlescape_takes_a_template_as_markup(impl) -> None:
    page = Template("<p>", field(ATTACK), "</p>")
    assert_html(impl.htmlescape(page), impl, f"<p>{ESCAPED}</p>")
    assert_html(ptl_html.htmlescape(page), ptl_html, f"<p>{ESCAPED}</p>")


@needs_tstrings
def test_html_join_takes_templates_as_markup(impl) -> None:
    page = Template("<p>", field(ATTACK), "</p>")
    for parts in ([page, ATTACK, impl.htmltext("<hr>"), None, page],
                  (page, ATTACK, impl.htmltext("<hr>"), None, page),
                  iter([page, ATTACK, impl.htmltext("<hr>"), None, page])):  # fmt: skip
        assert_html(impl.html_join(parts), impl,
                    f"<p>{ESCAPED}</p>{ESCAPED}<hr><p>{ESCAPED}</p>")  # fmt: skip
    assert_html(impl.html_join([page]), impl, f"<p>{ESCAPED}</p>")


@needs_tstrings
def test_html_join_is_not_fooled_by_a_templates_repr(impl) -> None:
    # The text of a Template's repr, and a Template inside another value, are text.
    text = "Template(strings=('<b>',), interpolations=())"
    assert_html(impl.html_join([text]), impl, text.replace("'", "&#x27;").replace("<", "&lt;")
                .replace(">", "&gt;"))  # fmt: skip
    inner = [Template("<b>")]
    assert_html(impl.html_join([inner, Template("<i>")]), impl,
                "[Template(strings=(&#x27;&lt;b&gt;&#x27;,), interpolations=())]<i>")  # fmt: skip


class LyingList(list):
    def __iter__(self):
        return iter(["<lie>"])


@needs_tstrings
def test_html_join_of_a_list_subclass(impl) -> None:
    parts = LyingList([Template("<b>"), "<x>"])
    # Whatever a twin reads of it, a Template's literal text is kept and str is escaped.
    assert str(impl.html_join(parts)) in ("<b>&lt;x&gt;", "&lt;lie&gt;")


@needs_tstrings
def test_templateio_takes_templates_as_markup(impl) -> None:
    io = impl.TemplateIO(html=True)
    io += Template("<p>", field(ATTACK), "</p>")
    io(Template("<br>"))
    io += ATTACK
    assert_html(io.getvalue(), impl, f"<p>{ESCAPED}</p><br>{ESCAPED}")
    assert isinstance(io, impl.TemplateIO)


@needs_tstrings
def test_a_template_inside_a_list_is_not_trusted(impl) -> None:
    # Only a Template itself is markup; a container of one is str()-ed and escaped.
    assert str(impl.htmlescape([Template("<b>")])).startswith("[Template(strings=(&#x27;&lt;b&gt;")


def test_a_lookalike_template_is_escaped_everywhere(impl) -> None:
    class Template:
        strings = ("<script>",)
        interpolations = ()

        def __str__(self) -> str:
            return "<script>"

    fake = Template()
    assert_html(impl.htmlescape(fake), impl, "&lt;script&gt;")
    assert_html(impl.html_join([fake]), impl, "&lt;script&gt;")
    io = impl.TemplateIO(html=True)
    io += fake
    assert_html(io.getvalue(), impl, "&lt;script&gt;")


# -- the output policy and the integrations ---------------------------------------------


@needs_tstrings
def test_output_policy_takes_a_template() -> None:
    from ptl_wsgi import output_policy

    page = Template("<p>", field(ATTACK), "|", field(3.5, None, ".2f"), "</p>")
    assert output_policy.is_markup(page) and output_policy.is_markup(htmltext_of("<b>"))
    assert not output_policy.is_markup(ATTACK) and not output_policy.is_markup([page])
    assert str(output_policy.markup(page)) == f"<p>{ESCAPED}|3.50</p>"
    assert [str(c) for c in output_policy.chunks(page)] == [f"<p>{ESCAPED}|3.50</p>"]
    assert [str(c) for c in output_policy.chunks(iter([page, ATTACK]))] == [
        f"<p>{ESCAPED}|3.50</p>",
        ESCAPED,
    ]
    # As raw text, a t-string means what the plain f-string means; nested ones too.
    nested = Template("<div>", field(page), field("<i>", "r", ">6"), "</div>")
    assert output_policy.text(nested) == f"<div><p>{ATTACK}|3.50</p> '<i>'</div>"
    assert type(output_policy.text(nested)) is str


def htmltext_of(text: str) -> Any:
    return ptl_html.htmltext(text)


@needs_tstrings
def test_a_wsgi_view_returning_a_template_is_html() -> None:
    from werkzeug.test import Client

    from ptl_wsgi.wsgi import View, view

    page = Template("<p>", field(ATTACK), "</p>")
    response = Client(view(lambda request: page)).get("/")
    assert response.mimetype == "text/html"
    assert response.data == f"<p>{ESCAPED}</p>".encode()
    plain = Client(View(lambda request: page, content_type="text/plain")).get("/")
    assert plain.mimetype == "text/plain"
    assert plain.data == f"<p>{ATTACK}</p>".encode()
    status = Client(view(lambda request: (page, 404))).get("/")
    assert status.status_code == 404 and status.data == f"<p>{ESCAPED}</p>".encode()


STREAMED = """
def render(name):
    yield t"<h1>{name}</h1>"
    yield name
    yield t"<p>{t'<b>{name}</b>'}</p>"
"""
STREAMED_HTML = f"<h1>{ESCAPED}</h1>{ESCAPED}<p><b>{ESCAPED}</b></p>"


@needs_tstrings
def test_flask_renders_a_template_that_yields_tstrings(tmp_path) -> None:
    from flask import Flask

    from ptl_wsgi.contrib.flask import PTL, render_template, stream_template

    (tmp_path / "streamed.ptl").write_text(STREAMED)
    app = Flask(__name__, template_folder=str(tmp_path))
    app.config["TESTING"] = True
    PTL(app)
    app.add_url_rule("/", "page", lambda: render_template("streamed.ptl", name=ATTACK))
    app.add_url_rule("/s", "stream", lambda: stream_template("streamed.ptl", name=ATTACK))
    client = app.test_client()
    for path in ("/", "/s"):
        response = client.get(path)
        assert response.mimetype == "text/html"
        assert response.get_data(as_text=True) == STREAMED_HTML


@needs_tstrings
def test_django_renders_a_template_that_yields_tstrings(tmp_path) -> None:
    from ptl_wsgi.contrib.django import PTLTemplates, html_response

    (tmp_path / "streamed.ptl").write_text(STREAMED)
    engine = PTLTemplates({"NAME": "t", "DIRS": [tmp_path], "APP_DIRS": False, "OPTIONS": {}})
    try:
        assert engine.get_template("streamed.ptl").render({"name": ATTACK}) == STREAMED_HTML
    finally:
        engine.loader.close()
    page = Template("<p>", field(ATTACK), "</p>")
    assert html_response(page).content == f"<p>{ESCAPED}</p>".encode()
    assert html_response(iter([page])).getvalue() == f"<p>{ESCAPED}</p>".encode()
    text = html_response(page, content_type="text/plain")
    assert text.content == f"<p>{ATTACK}</p>".encode()


@needs_tstrings
def test_a_published_directory_may_return_a_template() -> None:
    from werkzeug.test import Client

    from ptl_wsgi.publish import Directory, Publisher

    class Root(Directory):
        _q_exports = ["", "plain"]

        def _q_index(self):
            return Template("<p>", field(ATTACK), "</p>")

        def plain(self):
            return Template("<p>", field(ATTACK), "</p>"), 200, {"Content-Type": "text/plain"}

    client = Client(Publisher(Root()))
    page = client.get("/")
    assert page.mimetype == "text/html" and page.data == f"<p>{ESCAPED}</p>".encode()
    text = client.get("/plain")
    assert text.mimetype == "text/plain" and text.data == f"<p>{ATTACK}</p>".encode()


@needs_tstrings
@settings(max_examples=100)
@given(st.lists(st.one_of(templates(template_values), leaf_values), max_size=4))
def test_twins_agree_on_markup_sources(twins, descs) -> None:
    python, c = twins

    def sources(impl: Any) -> Any:
        values = [build(d, impl) for d in descs]
        io = impl.TemplateIO(html=True)
        for value in values:
            io += value
        return impl.html_join([*values, io.getvalue(), *map(impl.htmlescape, values)])

    assert outcome(sources, c) == outcome(sources, python)
