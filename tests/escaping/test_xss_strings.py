"""Every vector of tests/support/xss_vectors.txt, through every way of putting text into markup.

A browser-free first line of defence (tests/browser/test_xss_browser.py is the second):
each page is parsed with ``html.parser.HTMLParser`` and must have exactly the
template's own elements and attributes, with the vector coming back, unchanged,
as the text or attribute value it was meant to be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

import pytest
from xss_cases import CONTEXTS, VECTORS, ptl_renderers

from ptl_wsgi.beyond_escaping import UNSAFE_URL, is_safe_url, json_script, safe_url


class Recorder(HTMLParser):
    """Records what a page parses into: tags with attributes, text, and anything else."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.other: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.other.append(f"comment {data!r}")

    def handle_decl(self, decl: str) -> None:
        self.other.append(f"declaration {decl!r}")

    def handle_pi(self, data: str) -> None:
        self.other.append(f"processing instruction {data!r}")

    def unknown_decl(self, data: str) -> None:
        self.other.append(f"declaration {data!r}")


def parse(page: str) -> Recorder:
    recorder = Recorder()
    recorder.feed(page)
    recorder.close()
    return recorder


def template_shape(context: str) -> Recorder:
    before, after = CONTEXTS[context]
    return parse(before + "SAFE" + after)


def assert_inert(page: str, context: str, vector: str) -> None:
    """*page* has the shape of the empty template and holds *vector* as plain data."""
    found, expected = parse(page), template_shape(context)
    assert found.other == [], found.other
    assert [tag for tag, _ in found.tags] == [tag for tag, _ in expected.tags]
    for (_, attrs), (_, expected_attrs) in zip(found.tags, expected.tags, strict=True):
        assert [name for name, _ in attrs] == [name for name, _ in expected_attrs]
        assert not any(name.startswith("on") for name, _ in attrs)
    if context in ("double_quoted", "single_quoted"):
        assert dict(found.tags[0][1])["title"] == vector
        assert "".join(found.text) == "x"
    else:
        assert "".join(found.text) == vector


def renderers(impl: SimpleNamespace) -> dict[str, Callable[[str, str, str], Any]]:
    """Ways to put a value between two pieces of trusted markup with one twin."""
    h = impl.htmltext

    def template_io(before: str, value: str, after: str) -> Any:
        out = impl.TemplateIO(html=True)
        out += h(before)
        out += value
        out(h(after))
        return out.getvalue()

    return {
        "percent": lambda b, v, a: h(b + "%s" + a) % v,
        "percent_tuple": lambda b, v, a: h(b + "%s%s" + a) % (v, ""),
        "mapping": lambda b, v, a: h(b + "%(v)s" + a) % {"v": v},
        "add": lambda b, v, a: h(b) + v + h(a),
        "radd": lambda b, v, a: h(b) + (v + h(a)),
        "escape": lambda b, v, a: "".join([b, impl.htmlescape(v), a]),
        "format": lambda b, v, a: h(b + "{}" + a).format(v),
        "format_field": lambda b, v, a: b + impl.format_field(v, -1, "") + a,
        "join": lambda b, v, a: impl.html_join([h(b), v, h(a)]),
        "htmltext_join": lambda b, v, a: h("").join([h(b), v, h(a)]),
        "template_io": template_io,
    }


def test_corpus_is_large_and_distinct() -> None:
    assert len(VECTORS) >= 150
    assert len(set(VECTORS)) == len(VECTORS), "duplicate vectors in xss_vectors.txt"


@pytest.mark.parametrize("context", list(CONTEXTS))
def test_every_vector_is_inert_in_every_context(impl: SimpleNamespace, context: str) -> None:
    before, after = CONTEXTS[context]
    failures = []
    for method, render in renderers(impl).items():
        for vector in VECTORS:
            page = render(before, vector, after)
            assert type(page) is str or isinstance(page, impl.htmltext)
            try:
                assert_inert(str(page), context, vector)
            except AssertionError as exc:
                failures.append(f"{method}: {vector!r} -> {str(page)!r}: {exc}")
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("context", list(CONTEXTS))
def test_every_vector_is_inert_in_ptl_templates(context: str) -> None:
    template = ptl_renderers()[context]
    failures = []
    for vector in VECTORS:
        page = str(template(vector))
        try:
            assert_inert(page, context, vector)
        except AssertionError as exc:
            failures.append(f"{vector!r} -> {page!r}: {exc}")
    assert not failures, "\n".join(failures[:20])


C0_AND_SPACE = "".join(chr(code) for code in range(0x21))


def browser_sees_script(url: str) -> bool:
    """Whether a browser would take *url* for a script or document URL (WHATWG parsing)."""
    url = re.sub("[\t\n\r]", "", url.strip(C0_AND_SPACE))
    match = re.match(r"([a-zA-Z][a-zA-Z0-9+.\-]*):", url)
    return match is not None and match.group(1).lower() in ("javascript", "vbscript", "data")


def test_every_vector_is_inert_as_a_url() -> None:
    failures = []
    for vector in VECTORS:
        for candidate in (vector, vector.split('"')[1] if vector.count('"') >= 2 else vector):
            page = f'<a id="ctx" href="{safe_url(candidate)}">x</a>'
            found = parse(page)
            href = dict(found.tags[0][1])["href"] if found.tags else None
            ok = (
                [tag for tag, _ in found.tags] == ["a"]
                and found.other == []
                and href == (candidate if is_safe_url(candidate) else UNSAFE_URL)
                and href is not None
                and not browser_sees_script(href)
            )
            if not ok:
                failures.append(f"{candidate!r} -> {page!r}")
    assert not failures, "\n".join(failures[:20])


def test_every_vector_round_trips_through_json_script() -> None:
    failures = []
    for vector in VECTORS:
        value = {"text": vector, "list": [vector, "</script>" + vector]}
        page = f'<div id="ctx">{json_script(value, "data")}</div>'
        found = parse(page)
        ok = (
            [tag for tag, _ in found.tags] == ["div", "script"]
            and found.other == []
            and json.loads("".join(found.text)) == value
        )
        if not ok:
            failures.append(f"{vector!r} -> {page!r}")
    assert not failures, "\n".join(failures[:20])
