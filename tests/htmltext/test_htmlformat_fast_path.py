"""htmlformat()'s fast path: a t-string whose values all land in text, formatted by the twin.

``ptl_wsgi.html.htmlformat`` is the active twin's ``contextual_htmlformat``: a t-string
whose ``strings`` the escaping engine planned as text-only before (a dict the engine
fills) is formatted by the twin itself, its nested t-strings and items included (a
nested t-string whose strings are not marked by the fallback, alone); anything else
goes to the fallback, the engine's contextual formatting (issue #27: ``H(t"...")`` at
most 1.5x a compiled template).  Both twins decide the same
(tests/htmltext/test_tstring_twins_nested.py holds them to the engine's output).
Templates are built with ``string.templatelib``'s constructors, so that this file
parses before 3.14.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

NEEDS_TEMPLATES = pytest.mark.skipif(
    sys.version_info < (3, 14), reason="string.templatelib is new in Python 3.14"
)


def t(*parts: Any) -> Any:
    from string.templatelib import Interpolation, Template

    return Template(
        *(p if isinstance(p, str) else Interpolation(p[0], "x", None, "") for p in parts)
    )


@pytest.fixture
def twins_with_fallback(twins: Any) -> Any:
    """Each twin's contextual_htmlformat with one dict and a fallback that says so;
    the active twin's own setting is restored after."""
    from ptl_wsgi import html

    text_only: dict[Any, bool] = {}
    fell_back: list[Any] = []

    def fallback(template: Any) -> str:
        fell_back.append(template)
        return "FALLBACK"

    for impl in twins:
        impl.module.set_htmlformat(text_only, fallback)
    yield twins, text_only, fell_back
    for impl in twins:
        impl.module.set_htmlformat(
            html._text_only_strings, html._htmlformat_in_context, html._fstring_in_context
        )


def test_set_htmlformat_takes_a_dict_and_a_callable(twins: Any) -> None:
    for impl in twins:
        with pytest.raises(TypeError, match="a dict and a callable"):
            impl.module.set_htmlformat({}, None)
        with pytest.raises(TypeError, match="a dict and a callable"):
            impl.module.set_htmlformat([], print)


@NEEDS_TEMPLATES
def test_only_marked_text_only_strings_are_formatted_by_the_twin(twins_with_fallback: Any) -> None:
    twins, text_only, fell_back = twins_with_fallback
    plain = t("<p>", ("<x>",), "</p>")
    for impl in twins:
        assert impl.module.contextual_htmlformat(plain) == "FALLBACK"
    assert len(fell_back) == len(twins)
    text_only[plain.strings] = True
    for impl in twins:
        result = impl.module.contextual_htmlformat(plain)
        assert type(result) is impl.htmltext and str(result) == "<p>&lt;x&gt;</p>"
    assert len(fell_back) == len(twins)  # no call


@NEEDS_TEMPLATES
@pytest.mark.parametrize("kind", ["nested t-string", "list", "tuple", "generator"])
def test_nested_values_are_the_twins_and_unmarked_t_strings_the_fallbacks(
    twins_with_fallback: Any, kind: str
) -> None:
    # Items are joined by the twin; a nested t-string whose strings are not marked goes
    # to the fallback alone, in the middle of the twin's output.
    twins, text_only, fell_back = twins_with_fallback
    for impl in twins:
        nested = t("<b>", ("x",), "</b>")
        item = {
            "nested t-string": lambda: nested,  # noqa: B023
            "list": lambda: ["<a>", nested],  # noqa: B023
            "tuple": lambda: ("<a>", nested),  # noqa: B023
            "generator": lambda: (c for c in ("<a>", nested)),  # noqa: B023
        }[kind]()
        template = t("<p>", (item,), "</p>")
        text_only[template.strings] = True
        expected = "<p>FALLBACK</p>" if kind == "nested t-string" else "<p>&lt;a&gt;FALLBACK</p>"
        assert str(impl.module.contextual_htmlformat(template)) == expected
        assert fell_back[-1] is nested
    assert len(fell_back) == len(twins)


@NEEDS_TEMPLATES
def test_anything_but_a_template_goes_to_the_fallback(twins_with_fallback: Any) -> None:
    twins, _, fell_back = twins_with_fallback
    for impl in twins:
        assert impl.module.contextual_htmlformat("<p>") == "FALLBACK"
    assert fell_back == ["<p>"] * len(twins)


@NEEDS_TEMPLATES
def test_htmlformat_is_the_fast_path_and_fills_the_dict() -> None:
    from ptl_wsgi import html

    strings_url = t('<a href="', ("javascript:x",), '">x</a>')
    strings_text = t("<i>", ("<y>",), "</i>")
    assert str(html.H(strings_url)) == '<a href="about:invalid#ptl-unsafe-url">x</a>'
    assert str(html.H(strings_text)) == "<i>&lt;y&gt;</i>"
    assert html._text_only_strings.get(strings_text.strings) is True
    assert strings_url.strings not in html._text_only_strings
    # The second time the twin answers; the same markup.
    assert str(html.H(strings_text)) == "<i>&lt;y&gt;</i>"
    assert str(html.H(strings_url)) == '<a href="about:invalid#ptl-unsafe-url">x</a>'


@NEEDS_TEMPLATES
def test_a_plan_with_a_nonce_is_never_the_twins_alone() -> None:
    # A script's nonce depends on the request: formatted outside a nonce scope first, the
    # t-string must not be cached as text-only, or later requests would lose their nonce.
    from ptl_wsgi import html
    from ptl_wsgi.csp import nonce_scope, written

    page = t("<script>go()</script><p>", ("<x>",), "</p>")
    assert str(html.H(page)) == "<script>go()</script><p>&lt;x&gt;</p>"
    assert page.strings not in html._text_only_strings
    with nonce_scope("abc123"):
        for _ in range(2):
            sent = str(written(html.H(page)))
            assert sent == '<script nonce="abc123">go()</script><p>&lt;x&gt;</p>'
