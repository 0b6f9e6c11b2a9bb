"""The context engine of contextual escaping: contexts after literal text, escapers, joins."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ptl_wsgi.beyond_escaping as beyond_escaping
from ptl_wsgi.escaping.context import (
    TEXT,
    Context,
    ContextError,
    advance,
    after_value,
    attribute_kind,
    describe,
    escaper_for,
    join,
    settle,
)
from ptl_wsgi.escaping.planner import plan


def escaper(text: str) -> str | None:
    return escaper_for(advance(TEXT, text))


# (literal text before the value, the escaper the value gets)
CASES = [
    # text-like: plain HTML escaping, as before
    ("", None),
    ("<p>Hello ", None),
    ("<p class=x>a</p><br/>", None),
    ('<a href="/x">link</a> ', None),
    ("<title>", None),
    ("<TITLE>a", None),
    ("<textarea rows=3>", None),
    ('<input value="', None),
    ("<input value='", None),
    ('<div class="a ', None),
    ('<p title="x" class="', None),
    ("<script>x</script>", None),
    ("<style>p{}</style><p>", None),
    ("<!-- c --> ", None),
    ("<!---->", None),
    ("<!-->", None),
    ("a < b ", None),
    ("a <3 ", None),
    ("<p>2 </ 3> ", None),  # "</ " opens a bogus comment, as browsers parse it
    ("<xmp>", None),
    ("<iframe>", None),
    ("<noscript>", None),
    # unquoted attribute values
    ("<input value=", "text_u0"),
    ("<input value=a", "text_u"),
    ("<input value = ", "text_u0"),
    ("<a href=", "url_u0"),
    ("<a href=/x?q=", "url_query_u"),
    ("<a onclick=", "js_value_u0"),
    ("<p style=", "css_u0"),
    # URLs
    ('<a href="', "url_q"),
    ("<a href='", "url_q"),
    ('<A HREF="', "url_q"),
    ('<a href=" ', "url_q"),
    ('<img src="', "url_q"),
    ('<form action="', "url_q"),
    ('<button formaction="', "url_q"),
    ('<video poster="', "url_q"),
    ('<q cite="', "url_q"),
    ('<a ping="', "url_q"),
    ('<a xlink:href="', "url_q"),
    ('<div data-href="', "url_q"),
    ('<div data-src="', "url_q"),
    ('<x myurl="', "url_q"),
    ('<a href="/users/', "url_path_q"),
    ('<a href="https://example.com/', "url_path_q"),
    ('<a href="mailto:', "url_path_q"),
    ('<a href="/search?q=', "url_query_q"),
    ('<a href="/page#', "url_query_q"),
    ('<a href="java', "url_query_q"),  # a value could finish the scheme
    ('<a href="x', "url_query_q"),
    ('<a href="/x?a=1&amp;b=', "url_query_q"),
    ("<style>p { background: url(", "url"),
    ('<style>p { background: url("', "url"),
    ("<style>p { background: url( '", "url"),
    ("<style>p { background: url(/img/", "url_path"),
    ('<p style="background: url(', "url_q"),
    # srcset
    ('<img srcset="', "srcset_q"),
    ('<img srcset="/a.png 1x, ', "srcset_q"),
    ('<link imagesrcset="', "srcset_q"),
    # JavaScript
    ("<script>", "js_value"),
    ("<script>var x = ", "js_value"),
    ("<SCRIPT type=module>var x = ", "js_value"),
    ("<script>f(1, ", "js_value"),
    ('<script>var s = "', "js_string"),
    ("<script>var s = '", "js_string"),
    ("<script>var s = `", "js_string"),
    ("<script>var s = `a ${b} ", "js_string"),
    ("<script>var s = `${", "js_value"),
    ("<script>var s = `${ {a: 1}.a } ", "js_string"),
    ('<script>var s = "a\\"', "js_string"),
    ('<script>var s = "a\\\\"; x = ', "js_value"),
    ("<script>var s = 'it\\'s ", "js_string"),
    ('<script>var s = "</script>', None),
    ("<script>var r = /", "js_regexp"),
    ("<script>var r = /[/]", "js_regexp"),
    ("<script>var r = /a/; x = ", "js_value"),
    ("<script>x = a / ", "js_value"),
    ("<script>x = a /b/ ", "js_value"),
    ("<script>return /", "js_regexp"),
    ("<script>x = (a) / 2; /", "js_regexp"),
    ("<script>/* ", "drop"),
    ("<script>/* */ ", "js_value"),
    ("<script>// ", "drop"),
    ("<script>// a\nx = ", "js_value"),
    ("<script><!-- ", "drop"),
    ('<a onclick="', "js_value_q"),
    ("<a onclick='f(", "js_value_q"),
    ("<a onclick=\"f('", "js_string_q"),
    ('<a onclick="f(&quot;', "js_string_q"),
    ('<a onmouseover="x = `', "js_string_q"),
    ('<body onload="init(); ', "js_value_q"),
    ("<a onclick=f(", "js_value_u"),
    # CSS
    ("<style>", "css"),
    ("<style>p { color: ", "css"),
    ('<style>p { font-family: "', "css_string"),
    ("<style>p { content: '", "css_string"),
    ("<style>/* ", "drop"),
    ("<style>/* */ p { color: ", "css"),
    ('<p style="', "css_q"),
    ('<p style="color: ', "css_q"),
    ("<p style='content: \"", "css_string_q"),
    # comments, srcdoc, tags
    ("<!-- ", "comment"),
    ("<!-- a -", "comment"),
    ('<iframe srcdoc="', "srcdoc_q"),
    ("<iframe srcdoc=", "srcdoc_u0"),
    ("<input ", "attr_name"),
    ("<input type=checkbox ", "attr_name"),
    ('<input type="checkbox"', "attr_name"),
    ('<a href="/x" ', "attr_name"),
    ("</p ", "attr_name"),
    ("<input disabled ", "attr_name"),
    # SVG and MathML: no raw text in them; scripts and styles still followed
    ("<svg><title>", None),
    ('<svg><title><a href="', "url_q"),
    ('<svg><noscript><a href="', "url_q"),
    ('<svg><script>var s = "', "js_string"),
    ("<svg><script>var s = &quot;", "js_string"),
    ("<svg><style>p { color: ", "css"),
    ("<svg></svg><title>", None),
    ('<svg></svg><title><a href="', None),
    ('<svg/><title><a href="', None),
    ('<svg><p><title><a href="', None),  # <p> ends the SVG content
    ('<math><mi><a href="', "url_q"),
    # right after a tag's name: attributes ("<button%s>" % attrs(...))
    ("<button", "tag_attrs"),
    ("<scr", "tag_attrs"),
    ("</p", "tag_attrs"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_the_escaper_for_a_value_after_literal_text(text: str, expected: str | None) -> None:
    assert escaper(text) == expected


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_the_same_text_in_two_pieces_gives_the_same_context(
    text: str, expected: str | None
) -> None:
    # Literal text split across statements (at any point) is parsed as one.
    whole = settle(advance(TEXT, text))
    for cut in range(len(text) + 1):
        assert settle(advance(advance(TEXT, text[:cut]), text[cut:])) == whole, cut


ERRORS = [
    ("<", "part of the tag '<'"),
    ("</", "part of the tag '</'"),
    ("<!-", "part of the tag '<!-'"),
    ("<a hr", "part of the attribute name 'hr'"),
    ("<input data-", "part of the attribute name 'data-'"),
    ("<!DOCTYPE ", "doctype"),
    ("<!", "part of the tag '<!'"),
    ("<?xml ", "doctype"),
    ("<input disabled", "part of the attribute name"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_no_value_may_go_in_names_and_doctypes(text: str, message: str) -> None:
    with pytest.raises(ContextError, match=message):
        escaper(text)


# Only " \t\n\r\f" is whitespace to HTML's tokenizer; other characters Python calls
# whitespace (\v, U+00A0, U+2028...) are part of a tag name, attribute name or value to a
# browser, and spaces to a reader: in a tag they are refused.
NOT_HTML_SPACE = ["\v", "\x1c", "\x85", "\xa0", "\u2028", "\u3000"]


@pytest.mark.parametrize("char", NOT_HTML_SPACE)
def test_characters_python_calls_whitespace_are_refused_in_a_tag(char: str) -> None:
    for text in (f"<a{char}b>", f"<p {char}class=x>", f"<a title=x{char}", f"<p {char}x "):
        with pytest.raises(ContextError, match="not an HTML space"):
            advance(TEXT, text)
    # Not an end tag ("script" + char is another name): the script goes on (where char
    # ends a JS line, "/script" is a regular expression cut by it: refused).
    try:
        assert (escaper(f"<script>x</script{char}>") or "").startswith("js_")
    except ContextError as exc:
        assert char in "\u2028\x85" and "past a line end" in str(exc)


def test_contexts_are_hashable_values() -> None:
    a, b = advance(TEXT, '<a href="'), advance(TEXT, "<a href='")
    assert a == advance(TEXT, '<a href="') and a != b
    assert len({a, b, advance(TEXT, '<a href="')}) == 2
    assert isinstance(a, Context) and a.delim == '"' and b.delim == "'"
    with pytest.raises(AttributeError):
        a.state = "text"  # type: ignore[misc]


def test_the_end_of_an_element_or_attribute_returns_to_text() -> None:
    for text in ['<a href="x">', "<script>var s = '</script>", "<style>p{}</style>",
                 "<svg><title>x</title><a href='/'>y</a></svg>", "<svg/>", "<math></math>",
                 "<title>x</title>", "<textarea></textarea>", "<!-- x -->", "<!DOCTYPE html>",
                 '<a onclick="f(\'x\')">', "<p style='a:b'>", "<input value=x>", "<br/>",
                 "<script>`${a}`</script>", "<a href=\"x\"\n  class=y>"]:  # fmt: skip
        assert settle(advance(TEXT, text)) == TEXT, text


def test_after_a_value() -> None:
    url = advance(TEXT, '<a href="')
    assert escaper_for(after_value(url)) == "url_query_q"  # the first value may end anywhere
    assert escaper_for(advance(after_value(url), "?q=")) == "url_query_q"
    js = advance(TEXT, "<script>x = ")
    assert settle(advance(after_value(js), " / 2; y = ")) == settle(
        js
    )  # a value is an expression: / divides
    tag = advance(TEXT, "<input ")
    assert escaper_for(advance(after_value(tag), '="')) is None  # a plain attribute's value
    # A value that began an unquoted value is all of it (an empty one is written "").
    with pytest.raises(ContextError, match="must be the whole value"):
        escaper_for(after_value(advance(TEXT, "<a href=")))
    assert escaper_for(advance(after_value(advance(TEXT, "<a href=")), " title=")) == "text_u0"


def test_join() -> None:
    a = advance(TEXT, '<a href="/x?')
    b = advance(TEXT, '<a href="/x/')
    assert join(a, a) == a
    assert join(None, a) == a and join(a, None) == a
    assert escaper_for(join(a, b)) == "url_query_q"  # the strictest URL part
    js_div = advance(TEXT, "<script>x = a")
    js_re = advance(TEXT, "<script>x = a +")
    joined = join(js_div, js_re)
    assert escaper_for(joined) == "js_value"
    with pytest.raises(ContextError, match="regular expression or divides"):
        advance(joined, "/ 2")
    with pytest.raises(ContextError) as info:
        join(TEXT, advance(TEXT, "<a href='"))
    assert str(info.value) == "text and a URL (start) in a single-quoted URL attribute value"


def test_plan_names_the_escapers_of_a_t_strings_parts() -> None:
    assert plan(('<a href="', '">', "</a><script>var s = '", "';</script>")).names == (
        "url_q",
        None,
        "js_string",
    )
    assert plan(("<p>",)).names == ()
    assert plan(("<p>", "</p>")) is plan(("<p>", "</p>"))  # cached
    with pytest.raises(ContextError, match="ends in an HTML comment"):
        plan(("<!-- ", ""))


def test_descriptions() -> None:
    assert describe(TEXT) == "text"
    assert describe(advance(TEXT, "<title>")) == "<title> text"
    assert describe(advance(TEXT, "<script>var s = '")) == "a JavaScript string ('...') in <script>"
    assert describe(advance(TEXT, '<p style="')) == "CSS in a double-quoted style attribute value"
    assert describe(advance(TEXT, "<input value=")) == "a tag, before an attribute value"
    assert describe(advance(TEXT, "<")) == "text, in '<'"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("href", "url"), ("HREF", "url"), ("onclick", "js"), ("ONLOAD", "js"), ("style", "css"),
     ("srcdoc", "html"), ("srcset", "srcset"), ("class", "plain"), ("value", "plain"),
     ("data-url", "url"), ("xlink:href", "url"), ("data-x", "plain"), ("title", "plain")],
)  # fmt: skip
def test_attribute_kinds(name: str, kind: str) -> None:
    assert attribute_kind(name) == kind


def test_every_url_attribute_of_the_safety_policy_is_a_url_here() -> None:
    for name in beyond_escaping.URL_ATTRIBUTES:
        assert attribute_kind(name) in ("url", "srcset", "url_list"), name


# -- properties ---------------------------------------------------------------------------

markupish = st.text(alphabet="<>/!-=\"' \n`${}()*\\&;:?#abcdehilnoprstuvxyAS", max_size=60)


@given(markupish, st.integers(min_value=0, max_value=60))
def test_any_text_split_anywhere_gives_one_context_or_one_error(text: str, cut: int) -> None:
    def outcome(parts: list[str]) -> object:
        ctx = TEXT
        try:
            for part in parts:
                ctx = advance(ctx, part)
            ctx = settle(ctx)
        except ContextError:
            return "error"
        try:
            return (ctx, escaper_for(ctx))
        except ContextError:
            return (ctx, "no value")

    cut = min(cut, len(text))
    assert outcome([text[:cut], text[cut:]]) == outcome([text])


@given(markupish)
def test_every_context_has_a_description_and_a_value_rule(text: str) -> None:
    try:
        ctx = advance(TEXT, text)
    except ContextError:
        return
    assert describe(ctx)
    try:
        escaper_for(ctx)
    except ContextError:
        return
    after_value(ctx)


@pytest.mark.parametrize(
    "before",
    ['<a href="&', '<a onclick="f(&#', "<a title=&#x", '<a title="x &am', "<svg><style>p{a:&"],
)
def test_a_value_may_not_complete_a_character_reference(before: str) -> None:
    # The browser decodes the reference the value completes, after the escaper ran.
    with pytest.raises(ContextError, match="character reference"):
        plan((before, '">'))


@pytest.mark.parametrize("before", ['<a href="/?a=1&b=', '<a title="&amp;', "<p>&"])
def test_a_finished_reference_or_text_takes_a_value(before: str) -> None:
    plan((before, '">' if '"' in before else ""))
