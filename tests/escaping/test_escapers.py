"""The escapers of contextual escaping, one per context, and the t-string planner.

Unit tests per escaper, then properties: an arbitrary value in each context is
parsed (by html5lib, an HTML5 parser) as data in that context and nothing else,
and where the context can carry it, the value arrives intact.
"""

from __future__ import annotations

import html
import json
import re
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptl_wsgi.beyond_escaping import UNSAFE_URL
from ptl_wsgi.escapers import (
    ESCAPERS,
    UNSAFE_CSS,
    contextual_format,
    format_value,
    percent_value,
)
from ptl_wsgi.escaping.context import ContextError
from ptl_wsgi.escaping.planner import plan
from ptl_wsgi.escaping.rules import MARKUP_AS_VALUE_BASES
from ptl_wsgi.html import htmltext

html5lib = pytest.importorskip("html5lib")


def esc(name: str, value: Any) -> str:
    result = ESCAPERS[name](value)
    assert type(result) is htmltext
    return str(result)


EXAMPLES = [
    ("text_u", "a b", "a&#32;b"),
    ("text_u", "x onclick=alert(1)", "x&#32;onclick&#61;alert(1)"),
    ("text_u", "`'\"<>&+", "&#96;&#39;&#34;&#60;&#62;&#38;&#43;"),
    ("text_u0", "", '""'),
    ("text_u", "", ""),
    ("url_q", "javascript:alert(1)", UNSAFE_URL),
    ("url_q", " JaVaScRiPt:alert(1)", UNSAFE_URL),
    ("url_q", "java\nscript:alert(1)", UNSAFE_URL),
    ("url_q", "data:text/html,<script>", UNSAFE_URL),
    ("url_q", "https://example.com/a b?x=1&y=2", "https://example.com/a%20b?x=1&amp;y=2"),
    ("url_q", "/path/é", "/path/%C3%A9"),
    ("url_q", 'x" onmouseover="y', "x%22%20onmouseover=%22y"),
    ("url_path_q", "a/b c", "a/b%20c"),
    ("url_query_q", "a&b=c/d?e#f", "a%26b%3Dc%2Fd%3Fe%23f"),
    ("url_query_q", "javascript:x", "javascript%3Ax"),
    ("url", "x)", "x%29"),
    ("srcset_q", "/a.png 1x, /b.png 2x", "/a.png 1x,/b.png 2x"),
    ("srcset_q", "/a.png 1x, javascript:x 2x", UNSAFE_URL),
    ("srcset_q", "/a.png onerror", UNSAFE_URL),
    ("js_string", "a'b\"c`d${e}\\f", "a\\x27b\\x22c\\x60d\\x24{e}\\\\f"),
    ("js_string", "</script><!--", "\\x3c\\x2fscript\\x3e\\x3c!--"),
    ("js_string", "\u2028\u2029\n\r\t\x00", "\\u2028\\u2029\\n\\r\\t\\x00"),
    ("js_string_q", "'&'", "\\x27\\x26\\x27"),
    ("js_regexp", "a.b*", "a\\x2eb\\x2a"),
    ("js_regexp", "", "(?:)"),
    ("js_value", "a", ' "a" '),
    ("js_value", 1.5, " 1.5 "),
    ("js_value", -1, " -1 "),
    ("js_value", None, " null "),
    ("js_value", True, " true "),
    ("js_value", {"a": [1, "<"]}, ' {"a":[1,"\\u003c"]} '),
    ("js_value", "\u2028&", ' "\\u2028\\u0026" '),
    ("js_value", "/a/", ' "\\u002fa\\u002f" '),
    ("js_value_q", '"', " &quot;\\&quot;&quot; "),
    ("css", "red", "red"),
    ("css", "#fff", "#fff"),
    ("css", "12px", "12px"),
    ("css", "red; background: url(x)", UNSAFE_CSS),
    ("css", "expression(alert(1))", UNSAFE_CSS),
    ("css", "</style>", UNSAFE_CSS),
    ("css", "a\\62 c", UNSAFE_CSS),
    ("css", "-->", UNSAFE_CSS),
    ("css_string", "a'b", "a\\27 b"),
    ("css_string", "</style>", "\\3c \\2f style\\3e "),
    ("comment", "-->", "&#45;&#45;&#62;"),
    ("comment", "--!><!--", "&#45;&#45;&#33;&#62;&#60;&#33;&#45;&#45;"),
    ("drop", "*/ alert(1) /*", ""),
    ("srcdoc_q", "<b>&", "&amp;lt;b&amp;gt;&amp;amp;"),
    ("attr_name", "checked", "checked"),
    ("attr_name", "checked disabled", "checked disabled"),
    ("attr_name", "onclick", UNSAFE_CSS),
    ("attr_name", "style", UNSAFE_CSS),
    ("attr_name", "href", UNSAFE_CSS),
    ("attr_name", "a=b", UNSAFE_CSS),
    ("tag_attrs", "disabled", " disabled"),
    ("tag_attrs", "", " "),  # the space even so: "<scr" "" "ipt>" is no <script>
]


@pytest.mark.parametrize(("name", "value", "expected"), EXAMPLES)
def test_escaper_examples(name: str, value: Any, expected: str) -> None:
    assert esc(name, value) == expected


def _base(name: str) -> str:
    return name if name in ESCAPER_BASES else name.rpartition("_")[0]


ESCAPER_BASES = {"json_value", "attr_name", "tag_attrs"} | {
    n for n in ESCAPERS if "_" not in n or n.rpartition("_")[2] not in ("q", "u", "u0")
}
IN_SCRIPT_OR_STYLE = sorted(n for n in ESCAPERS if _base(n) in MARKUP_AS_VALUE_BASES)


UNQUOTED = sorted(n for n in ESCAPERS if n.endswith(("_u", "_u0")) and n not in IN_SCRIPT_OR_STYLE)


@pytest.mark.parametrize("name", sorted(set(ESCAPERS) - set(IN_SCRIPT_OR_STYLE) - set(UNQUOTED)))
def test_markup_passes_every_html_escaper_unchanged(name: str) -> None:
    class Markup:
        def __html__(self) -> str:
            return "<b onclick=x>"

    assert esc(name, htmltext("/i?a=1&amp;b=2")) == "/i?a=1&amp;b=2"
    if name in URL_STARTS:
        return  # markup at a URL's start is a URL too: see the test below
    assert esc(name, htmltext("<i>")) == "<i>"
    assert esc(name, Markup()) == "<b onclick=x>"


@pytest.mark.parametrize("name", IN_SCRIPT_OR_STYLE)
def test_markup_in_a_script_or_style_is_escaped_as_its_text(name: str) -> None:
    # Markup is trusted as HTML; JavaScript and CSS are other languages.
    class Markup:
        def __html__(self) -> str:
            return "1;alert(1)"

    assert esc(name, htmltext("1;alert(1)")) == esc(name, "1;alert(1)")
    assert esc(name, Markup()) == esc(name, "1;alert(1)")


@pytest.mark.parametrize("name", UNQUOTED)
def test_markup_in_an_unquoted_value_keeps_only_its_references(name: str) -> None:
    # A space, "=" or ">" of markup (made for text) would end the value: as references.
    for text in ("/i?a=1&amp;b=2", "<i> x=1 onclick=f()>"):
        out = esc(name, htmltext(text))
        assert not re.search("[\x00-\x20\"'`<=>]", out), out
        assert html.unescape(out) in (html.unescape(text), UNSAFE_URL), out


URL_STARTS = {
    n
    for n in ESCAPERS
    if n in ("url", "url_q", "url_u", "url_u0") or n.startswith(("url_list", "srcset"))
}


@pytest.mark.parametrize("name", sorted(URL_STARTS))
def test_markup_at_the_start_of_a_url_has_its_scheme_checked(name: str) -> None:
    # Markup made for text (a fragment, a helper template's result) escaped its values
    # for text only: where a URL starts, a script URL in it is refused all the same.
    for unsafe in ("javascript:alert(1)", "JaVaScRiPt&#58;alert(1)", " javascript:x"):
        assert "about:invalid" in esc(name, htmltext(unsafe)), unsafe


def test_formatting_helpers() -> None:
    assert format_value(255, -1, "x") == "ff"
    assert format_value("'", 114, "") == '"\'"'
    assert format_value("é", 97, "") == "'\\xe9'"
    assert type(format_value(htmltext("<b>"), -1, "")) is htmltext
    assert percent_value(("a",), "%s") == "a"
    assert percent_value("a", "%s") == "a"
    with pytest.raises(TypeError):
        percent_value(("a", "b"), "%s")


# -- properties: parsed as data, arriving intact --------------------------------------------

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
# Characters HTML parsers normalise or drop whatever the escaping (NUL, CR, noncharacters).
TEXT_NORMALISED = re.compile("[\x00\r\x0c\ufdd0-\ufdef\ufffe\uffff]|[\x01-\x08\x0b\x0e-\x1f\x7f]")
clean_texts = texts.filter(lambda t: not TEXT_NORMALISED.search(t))


def parse(markup: str) -> Any:
    return html5lib.parse(markup, namespaceHTMLElements=False)


def js_string_value(literal: str) -> str:
    """The string a JS string literal body (as escaped here) holds."""
    out, i = [], 0
    while i < len(literal):
        char = literal[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        kind = literal[i + 1]
        if kind == "x":
            out.append(chr(int(literal[i + 2 : i + 4], 16)))
            i += 4
        elif kind == "u":
            out.append(chr(int(literal[i + 2 : i + 6], 16)))
            i += 6
        else:
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(kind, kind))
            i += 2
    return "".join(out)


@given(clean_texts)
def test_a_value_in_an_unquoted_attribute_is_its_value(value: str) -> None:
    markup = f"<p><input value={esc('text_u0', value)} class=x></p>"
    (element,) = parse(markup).iter("input")
    assert element.attrib == {"value": value, "class": "x"}


@given(clean_texts)
def test_a_value_in_a_url_stays_in_its_attribute(value: str) -> None:
    for quote, layer in (('"', "q"), ("", "u0")):
        markup = f"<a href={quote}{esc('url_' + layer, value)}{quote} class=x>t</a>"
        (element,) = parse(markup).iter("a")
        assert set(element.attrib) == {"href", "class"} and element.text == "t"
        href = element.attrib["href"]
        assert (
            href == UNSAFE_URL
            or not re.match(r"\s*[a-z]+:", href, re.I)
            or href.startswith(("http:", "https:", "mailto:", "tel:"))
        )


@given(clean_texts)
def test_a_value_in_a_js_string_is_exactly_the_value(value: str) -> None:
    for quote in "\"'`":
        body = esc("js_string", value)
        markup = f"<script>var s = {quote}{body}{quote};</script><p>after</p>"
        tree = parse(markup)
        (script,) = tree.iter("script")
        assert script.text == f"var s = {quote}{body}{quote};"
        assert quote not in body and "\n" not in body and "</" not in body.lower()
        assert js_string_value(body) == value
        assert [p.text for p in tree.iter("p")] == ["after"]


@given(clean_texts)
def test_a_value_in_an_event_handler_string_is_exactly_the_value(value: str) -> None:
    markup = f"<a onclick=\"f('{esc('js_string_q', value)}')\">t</a>"
    (element,) = parse(markup).iter("a")
    handler = element.attrib["onclick"]
    assert handler.startswith("f('") and handler.endswith("')")
    body = handler[3:-2]
    assert "'" not in body and js_string_value(body) == value


def _containers(inner: Any) -> Any:
    return st.lists(inner, max_size=3) | st.dictionaries(clean_texts, inner, max_size=3)


@given(
    st.recursive(st.none() | st.booleans() | st.integers() | clean_texts, _containers, max_leaves=8)
)
def test_a_value_in_a_js_expression_is_a_json_literal(value: Any) -> None:
    literal = esc("js_value", value)
    (script,) = parse(f"<script>var d = {literal};</script>").iter("script")
    assert script.text == f"var d = {literal};"
    assert not re.search("[<>&\u2028\u2029]", literal)
    assert json.loads(literal) == value


@given(clean_texts)
def test_a_value_in_css_is_one_safe_token_or_the_marker(value: str) -> None:
    out = esc("css", value)
    assert out in (value, UNSAFE_CSS)
    assert not re.search(r"[;:(){}<>\\\"'/@]", out)
    (style,) = parse(f"<style>p {{ color: {out} }}</style>").iter("style")
    assert style.text == f"p {{ color: {out} }}"


@given(clean_texts)
def test_a_value_in_a_comment_stays_in_the_comment(value: str) -> None:
    tree = parse(f"<p>a<!-- {esc('comment', value)} -->b</p>")
    (p,) = tree.iter("p")
    assert p.text == "a" and len(list(p)) == 1 and p[0].tail == "b"


@given(clean_texts)
def test_a_value_in_srcdoc_is_text_of_the_inner_document(value: str) -> None:
    (frame,) = parse(f'<iframe srcdoc="<p>{esc("srcdoc_q", value)}</p>"></iframe>').iter("iframe")
    inner = parse(frame.attrib["srcdoc"])
    (p,) = inner.iter("p")
    assert (p.text or "") == value.replace("\n", "\n") and len(list(p)) == 0


# -- the t-string planner ---------------------------------------------------------------------


def test_plan_names_an_escaper_per_interpolation() -> None:
    names = plan(('<a href="', '" title="', '">', "</a><script>var x = ", ";</script>")).names
    assert names == ("url_q", None, None, "js_value")
    assert plan(("<p>", "</p>")) == ((None,), True, (), (True,))
    assert plan(("<script>", "</script>")).nonces == ((7,), ())  # the CSP nonce's slots
    # which values land in text itself (where nested markup keeps its nonce slots)
    assert plan(('<p title="', '">', "</p><textarea>", "</textarea>")).in_text == (
        False,
        True,
        False,
    )
    assert plan(("<p>", "</p>")) is plan(("<p>", "</p>"))  # cached


def test_plan_refuses_names_and_unbalanced_templates() -> None:
    with pytest.raises(ContextError, match="part of the tag"):
        plan(("<", ">"))
    with pytest.raises(ContextError, match="ends in a JavaScript expression in <script>"):
        plan(("<script>", ""))


@pytest.mark.skipif(sys.version_info < (3, 14), reason="t-strings need Python 3.14")
def test_contextual_format_of_a_t_string() -> None:
    names: dict[str, Any] = {"url": "javascript:x", "name": "<b>'", "n": 255}
    names["inner"] = eval('t"<i>{name}</i>"', {}, names)
    template = eval(
        't\'<a href="{url}" title="{name!r}">{name}</a>'
        '<script>var s = "{name}", n = {n:x};</script>{inner}\'',
        {},
        names,
    )
    assert contextual_format(template) == (
        f'<a href="{UNSAFE_URL}" title="&quot;&lt;b&gt;&#x27;&quot;">&lt;b&gt;&#x27;</a>'
        '<script>var s = "\\x3cb\\x3e\\x27", n =  "ff" ;</script><i>&lt;b&gt;&#x27;</i>'
    )
