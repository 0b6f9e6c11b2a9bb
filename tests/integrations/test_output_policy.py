"""The one output policy (ptl_wsgi.output_policy), which every integration uses."""

import pytest

from ptl_wsgi.html import htmltext
from ptl_wsgi.output_policy import chunks, is_html_type, joined, markup, text


@pytest.mark.parametrize(
    "content_type",
    [
        "text/html",
        "text/html; charset=utf-8",
        "TEXT/HTML",
        " Text/Html ;charset=latin-1",
        "application/xhtml+xml",
        "image/svg+xml",
        "application/xml",
        "text/xml",
        "application/atom+xml",
        "",
        None,
    ],
)
def test_html_by_any_spelling(content_type):
    assert is_html_type(content_type)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "text/plain; charset=utf-8", "application/json", "text/css"]
)
def test_not_html(content_type):
    assert not is_html_type(content_type)


@pytest.mark.parametrize("value", ["<script>", b"<script>", bytearray(b"<script>")])
def test_markup_escapes_everything_but_markup(value):
    assert markup(value) == "&lt;script&gt;"
    assert isinstance(markup(value), htmltext)


def test_markup_keeps_markup_and_drops_none():
    assert markup(htmltext("<b>")) == "<b>"
    assert markup(None) == ""


def test_chunks_escape_each_item_lazily():
    seen = []

    def gen():
        seen.append(1)
        yield "<i>"
        yield None
        yield htmltext("<b>")

    out = chunks(gen())
    assert seen == []
    assert list(out) == ["&lt;i&gt;", "<b>"]


class _Markup:
    def __html__(self):
        return "<em>"


@pytest.mark.parametrize(
    "make",
    [
        lambda: "<script>",
        lambda: b"<s>",
        lambda: None,
        lambda: htmltext("<b>"),
        _Markup,
        lambda: ["<l>"],
        lambda: 5,
        lambda: iter(["<i>", None, b"&", htmltext("<b>")]),
    ],
)
def test_joined_is_the_chunks_joined(make):
    assert joined(make()) == htmltext("").join(chunks(make()))
    assert type(joined(make())) is htmltext


def test_joined_markup_is_not_copied():
    page = htmltext("<p>" * 10_000)
    assert joined(page) is page


def test_text_is_plain_str():
    result = text(htmltext("<b>&amp;</b>"))
    assert result == "<b>&amp;</b>" and type(result) is str
    assert text(iter(["a<", None, b"b"])) == "a<b"


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain, text/html",  # browsers take the last type of a list
        "text/plain;charset=utf-8,text/html",
        "application/unknown",  # types browsers sniff
        "unknown/unknown",
        "*/*",
        "text/ html",  # not a MIME type: sniffed too
        "html",
        "text/xsl",  # an XML document type to Chromium
    ],
)
def test_types_a_browser_may_render_as_html(content_type):
    assert is_html_type(content_type)
