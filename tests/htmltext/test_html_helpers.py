"""Quixote's HTML helpers in ptl_wsgi.html, and the text filters, against both twins.

Each markup helper is a method of ``Helpers`` bound to one twin (the ``impl``
fixture), and must return that twin's htmltext.  The differential tests hold
them to quixote.html's meaning; where they deliberately differ, the test says so.
"""

from __future__ import annotations

import html
import inspect
from types import SimpleNamespace

import pytest
import quixote.html as quixote
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup

import ptl_wsgi.html
from ptl_wsgi._quixote_helpers import Helpers, ValuelessAttr
from ptl_wsgi.beyond_escaping import UNSAFE_URL
from ptl_wsgi.html import pluralize, truncate

NAMES = ["href", "htmltag", "js_escape", "nl2br", "url_quote", "url_with_query"]
HOSTILE = "<script>alert('x')</script> & \"quoted\""


@pytest.fixture(scope="module")
def h(impl: SimpleNamespace) -> SimpleNamespace:
    helpers = Helpers(impl)
    return SimpleNamespace(htmltext=impl.htmltext, **{n: getattr(helpers, n) for n in NAMES})


def is_markup_of(h: SimpleNamespace, value: object) -> bool:
    return type(value) is h.htmltext


@pytest.mark.parametrize("name", NAMES)
def test_exported_with_quixotes_signature(name: str) -> None:
    ours = getattr(ptl_wsgi.html, name)
    assert name in ptl_wsgi.html.__all__

    def shape(f: object) -> list[tuple[str, object, object]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]

    assert shape(ours) == shape(getattr(quixote, name))


# -- htmltag ------------------------------------------------------------------------


def test_htmltag_renders_escaped_attributes_in_order(h: SimpleNamespace) -> None:
    tag = h.htmltag("input", type="text", value=HOSTILE, size=3, css_class="a b")
    assert is_markup_of(h, tag)
    assert tag == (
        '<input type="text" value="&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; '
        '&quot;quoted&quot;" size="3" class="a b">'
    )
    assert h.htmltag("br", xml_end=True) == "<br />"
    assert h.htmltag("img", True, src="/a.png", alt="") == '<img src="/a.png" alt="" />'


def test_htmltag_valueless_true_false_none(h: SimpleNamespace) -> None:
    tag = h.htmltag("input", checked=ValuelessAttr, disabled=True, readonly=False, title=None)
    assert tag == '<input checked="checked" disabled>'


def test_htmltag_keeps_markup_values(h: SimpleNamespace) -> None:
    assert h.htmltag("p", title=h.htmltext("&amp;")) == '<p title="&amp;">'
    assert h.htmltag("p", title=Markup("<b>")) == '<p title="<b>">'


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", " JaVa\tScRiPt:alert(1)", "&#106;avascript:x", "data:text/html,x"],
)
def test_htmltag_checks_url_attributes(h: SimpleNamespace, url: str) -> None:
    assert h.htmltag("img", src=url) == f'<img src="{UNSAFE_URL}">'
    assert h.htmltag("form", action=url) == f'<form action="{UNSAFE_URL}">'


def test_htmltag_refuses_untrusted_script_attributes(h: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="onclick"):
        h.htmltag("button", onclick="alert(1)")
    with pytest.raises(ValueError, match="srcdoc"):
        h.htmltag("iframe", srcdoc="<script>alert(1)</script>")
    with pytest.raises(ValueError, match="ONLOAD"):
        h.htmltag("img", src="/a", **{"ONLOAD": "alert(1)"})
    # The author's own script, as markup, is allowed; an omitted one is harmless.
    assert h.htmltag("button", onclick=h.htmltext("go()")) == '<button onclick="go()">'
    assert h.htmltag("button", onclick=None, type="button") == '<button type="button">'


def test_htmltag_markup_handler_does_not_open_the_door_for_others(h: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="onerror"):
        h.htmltag("img", onload=h.htmltext("ok()"), onerror="alert(1)")


@pytest.mark.parametrize("name", ['"><script>', "a b", "x=y", "", "a/b", "a'b", "a>b"])
def test_htmltag_refuses_hostile_attribute_names(h: SimpleNamespace, name: str) -> None:
    with pytest.raises(ValueError, match="invalid attribute name"):
        h.htmltag("p", **{name: "1"})


@pytest.mark.parametrize("tag", ["script><img src=x onerror=alert(1)", "a b", "", "1a", "p/", None])
def test_htmltag_refuses_hostile_tag_names(h: SimpleNamespace, tag: object) -> None:
    with pytest.raises(ValueError, match="invalid tag name"):
        h.htmltag(tag)


def test_htmltag_refuses_duplicate_class(h: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="twice"):
        h.htmltag("p", css_class="a", **{"CLASS": "b"})


# -- href -----------------------------------------------------------------------------


def test_href(h: SimpleNamespace) -> None:
    link = h.href("/search?q=1&page=2", HOSTILE, title="it's", rel="nofollow")
    assert is_markup_of(h, link)
    assert link == (
        '<a href="/search?q=1&amp;page=2" title="it&#x27;s" rel="nofollow">'
        "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quoted&quot;</a>"
    )
    assert h.href("/", h.htmltext("<b>home</b>")) == '<a href="/"><b>home</b></a>'


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "\x00javascript:alert(1)", "vbscript:x", "javascript&colon;x"]
)
def test_href_refuses_script_urls(h: SimpleNamespace, url: str) -> None:
    assert h.href(url, "x") == f'<a href="{UNSAFE_URL}">x</a>'
    assert h.href(h.htmltext(url), "x") == f'<a href="{UNSAFE_URL}">x</a>'


def test_href_takes_url_with_query(h: SimpleNamespace) -> None:
    url = h.url_with_query("/search", q="a&b", page=2)
    assert h.href(url, "next") == '<a href="/search?page=2&amp;q=a%26b">next</a>'


def test_href_refuses_event_attributes(h: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="onmouseover"):
        h.href("/", "x", onmouseover="alert(1)")


# -- url_quote and url_with_query ----------------------------------------------------------


def test_url_quote(h: SimpleNamespace) -> None:
    quoted = h.url_quote("a b&c=d/é'\"<>")
    assert type(quoted) is str
    assert quoted == "a%20b%26c%3Dd/%C3%A9%27%22%3C%3E"
    assert h.url_quote(12) == "12"
    assert h.url_quote(b"a b\xff") == quixote.url_quote(b"a b\xff") == "a%20b%FF"
    assert h.url_quote(None, "-") == "-"
    with pytest.raises(ValueError, match="fallback"):
        h.url_quote(None)


def test_url_with_query(h: SimpleNamespace) -> None:
    url = h.url_with_query("/a b", z="&", a="x y", m=1)
    assert is_markup_of(h, url)
    assert url == "/a%20b?a=x%20y&amp;m=1&amp;z=%26"
    assert h.url_with_query("/p") == "/p"
    with pytest.raises(ValueError):
        h.url_with_query("/p", a=None)


@given(st.text(), st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), st.text()))
def test_url_with_query_cannot_leave_the_attribute(path: str, query: dict[str, str]) -> None:
    helpers = Helpers(ptl_wsgi.html.implementation("python"))
    url = str(helpers.url_with_query(path, **query))
    assert not set(url) & set("<>\"' \t\n")
    assert "&" not in url.replace("&amp;", "")


# -- nl2br --------------------------------------------------------------------------


def test_nl2br(h: SimpleNamespace) -> None:
    text = h.nl2br("one\ntwo <b>\r\nthree 'x'")
    assert is_markup_of(h, text)
    assert text == "one<br />\ntwo &lt;b&gt;\r<br />\nthree &#x27;x&#x27;"
    assert h.nl2br(HOSTILE) == html.escape(HOSTILE)
    assert h.nl2br(h.htmltext("<i>a</i>\nb")) == "<i>a</i><br />\nb"
    assert h.nl2br(None) == "None"


# -- js_escape --------------------------------------------------------------------------


def test_js_escape(h: SimpleNamespace) -> None:
    code = h.js_escape('var s = "</script><script>alert(1)</script><!--";')
    assert is_markup_of(h, code)
    assert code == r'var s = "<\/script><script>alert(1)<\/script><\!--";'
    assert "</" not in code and "<!--" not in code
    assert h.js_escape("a < b && c > d") == "a < b && c > d"


# -- the differential test against quixote.html -------------------------------------------

TEXTS = ["", "plain", "a\nb\n", "<b>&amp;</b>", 'say "hi"', "it's", "é ✓ 😀", "</script>", 42]


def quixote_with_our_quotes(value: object) -> str:
    """Quixote's output, with ``'`` escaped as our htmlescape does (deliberate difference)."""
    return str(value).replace("'", "&#x27;")


@pytest.mark.parametrize("text", TEXTS)
def test_same_as_quixote(h: SimpleNamespace, text: object) -> None:
    assert h.nl2br(text) == quixote_with_our_quotes(quixote.nl2br(text))
    assert h.url_quote(text) == quixote.url_quote(text)
    assert h.url_with_query(text, b=text, a="x") == str(quixote.url_with_query(text, b=text, a="x"))
    assert h.href("/p?a=1&b=2", text, title=text) == quixote_with_our_quotes(
        quixote.href("/p?a=1&b=2", text, title=text)
    )
    tag = h.htmltag("input", xml_end=True, css_class=text, value=text, checked=ValuelessAttr)
    theirs = quixote.htmltag(
        "input", xml_end=True, css_class=text, value=text, checked=quixote.ValuelessAttr
    )
    assert tag == quixote_with_our_quotes(theirs)
    # Quixote escapes only "</" in scripts; "<!--" is escaped here too (deliberately).
    assert h.js_escape(text) == str(quixote.js_escape(text))


@pytest.mark.parametrize("text", TEXTS)
def test_same_as_quixote_for_markup_input(h: SimpleNamespace, text: object) -> None:
    ours, theirs = h.htmltext(text), quixote.htmltext(text)
    assert h.nl2br(ours) == str(quixote.nl2br(theirs))
    assert h.href("/", ours) == str(quixote.href("/", theirs))
    # A '"' in a markup attribute value is written as &quot; so it cannot end the value
    # (deliberate: Quixote writes it as it is).
    quoted = quixote.htmltext(str(text).replace('"', "&quot;"))
    assert h.htmltag("p", title=ours) == str(quixote.htmltag("p", title=quoted))


def test_deliberate_differences_from_quixote(h: SimpleNamespace) -> None:
    # A URL with a script scheme is refused; Quixote writes it as given.
    assert 'href="javascript:' in str(quixote.href("javascript:alert(1)", "x"))
    assert UNSAFE_URL in h.href("javascript:alert(1)", "x")
    # Event handlers must be markup; Quixote escapes and writes them.
    assert "onclick" in str(quixote.htmltag("b", onclick="alert(1)"))
    with pytest.raises(ValueError):
        h.htmltag("b", onclick="alert(1)")
    # True and False are HTML boolean attributes; Quixote writes "True" and "False".
    assert str(quixote.htmltag("input", disabled=True, checked=False)) == (
        '<input disabled="True" checked="False">'
    )
    assert h.htmltag("input", disabled=True, checked=False) == "<input disabled>"
    # The tag name is checked; Quixote writes any.
    assert str(quixote.htmltag("p onclick=alert(1)")) == "<p onclick=alert(1)>"
    with pytest.raises(ValueError):
        h.htmltag("p onclick=alert(1)")
    # "<!--" in a script is escaped too.
    assert str(quixote.js_escape("<!--")) == "<!--"
    assert h.js_escape("<!--") == r"<\!--"


# -- the text filters -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "length", "expected"),
    [
        ("short", 10, "short"),
        ("exactly ten", 11, "exactly ten"),
        ("hello world again", 12, "hello world…"),
        ("hello world again", 13, "hello world…"),
        ("hello world again", 8, "hello…"),
        ("unbreakable", 5, "unbr…"),
        ("a b", 1, "…"),
        ("<script>alert(1)</script>", 10, "<script>a…"),
    ],
)
def test_truncate(text: str, length: int, expected: str) -> None:
    result = truncate(text, length)
    assert result == expected and type(result) is str
    assert len(result) <= length


def test_truncate_end_and_errors() -> None:
    assert truncate("one two three", 10, end="...") == "one two..."
    assert truncate(12345, 3, end="") == "123"
    with pytest.raises(TypeError, match="markup"):
        truncate(ptl_wsgi.html.htmltext("<b>bold</b> text"), 5)
    with pytest.raises(ValueError):
        truncate("text", 0)


@given(st.text(), st.integers(1, 40))
def test_truncate_never_longer(text: str, length: int) -> None:
    result = truncate(text, length)
    assert len(result) <= length
    assert result == text or result.endswith("…")


def test_truncated_text_is_escaped_in_a_template() -> None:
    from ptl_wsgi.compiler import compile_ptl

    namespace: dict[str, object] = {}
    source = "from ptl_wsgi.html import truncate\ndef t [html] (s):\n    truncate(s, 9)\n"
    exec(compile_ptl(source, "t.ptl"), namespace)
    assert namespace["t"]("<script>x</script>") == "&lt;script&gt;…"  # type: ignore[operator]


def test_pluralize() -> None:
    assert [pluralize(n) for n in (0, 1, 2)] == ["s", "", "s"]
    assert pluralize(1, "y", "ies") == "y" and pluralize(3, "y", "ies") == "ies"
    assert pluralize([1]) == "" and pluralize([]) == "s"
    assert pluralize(1.0) == ""
