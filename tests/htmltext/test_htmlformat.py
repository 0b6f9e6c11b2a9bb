"""htmlformat(): PEP 750 t-strings as htmltext, in both twins (the C one on 3.14+).

Templates are built with ``string.templatelib``'s constructors rather than
t-string literals, so that this file also parses on the versions before 3.14
(where only the TypeError for a non-Template is tested).
"""

from __future__ import annotations

import html
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup
from ptl_helpers import HtmlObject

NEEDS_TEMPLATES = pytest.mark.skipif(
    sys.version_info < (3, 14), reason="string.templatelib is new in Python 3.14"
)


class Loud:
    """str(), repr() and format() of it all differ, and all need escaping."""

    def __str__(self) -> str:
        return "<str>"

    def __repr__(self) -> str:
        return "<repr é>"

    def __format__(self, spec: str) -> str:
        return f"<format {spec}>"


def template(*parts: Any) -> Any:
    """A Template from str parts and (value, conversion, spec) tuples."""
    from string.templatelib import Interpolation, Template

    args = [
        p if isinstance(p, str) else Interpolation(p[0], "x", p[1], p[2] if len(p) > 2 else "")
        for p in parts
    ]
    return Template(*args)


def outcome(impl: Any, make: Any) -> Any:
    try:
        result = impl.module.htmlformat(make(impl))
    except Exception as exc:
        return ("raises", type(exc).__name__, str(exc))
    assert type(result) is impl.htmltext
    return ("ok", str(result))


@pytest.mark.parametrize("value", ["<b>", 1, None, b"x", ["x"]], ids=repr)
def test_anything_but_a_template_is_a_type_error(impl, value):
    with pytest.raises(TypeError, match=r"must be a string\.templatelib\.Template, not "):
        impl.module.htmlformat(value)


def test_an_htmltext_is_not_a_template(twins):
    for impl in twins:
        with pytest.raises(TypeError, match=r"not htmltext$"):
            impl.module.htmlformat(impl.htmltext("<b>"))


@NEEDS_TEMPLATES
class TestHtmlFormat:
    def test_literal_parts_are_trusted_and_values_escaped(self, impl):
        result = impl.module.htmlformat(template('<a title="', ("\"'<&>", None), '">x</a>'))
        assert type(result) is impl.htmltext
        assert str(result) == '<a title="&quot;&#x27;&lt;&amp;&gt;">x</a>'

    @pytest.mark.parametrize(
        ("conversion", "spec", "expected"),
        [
            (None, "", "&lt;format &gt;"),
            ("s", "", "&lt;str&gt;"),
            ("r", "", "&lt;repr é&gt;"),
            ("a", "", "&lt;repr \\xe9&gt;"),
            (None, ">3", "&lt;format &gt;3&gt;"),
            ("s", "*^9", "**&lt;str&gt;**"),
            ("r", ".3", "&lt;re"),
        ],
    )
    def test_conversion_then_spec_then_escaping(self, impl, conversion, spec, expected):
        result = impl.module.htmlformat(template(("", None), (Loud(), conversion, spec)))
        assert str(result) == "" + expected

    def test_a_fill_character_from_a_spec_is_escaped(self, impl):
        result = impl.module.htmlformat(template(("ab", None, "<^6")))
        assert str(result) == "&lt;&lt;ab&lt;&lt;"

    def test_markup_values_are_kept(self, impl):
        values = [impl.htmltext("<i>1</i>"), HtmlObject("<i>2</i>"), Markup("<i>3</i>")]
        result = impl.module.htmlformat(template(*[(v, None) for v in values]))
        assert str(result) == "<i>1</i><i>2</i><i>3</i>"

    def test_markup_with_a_conversion_is_escaped_with_a_spec_kept(self, impl):
        # As the same fields of an [html] f-string: !s makes text; a spec pads the markup.
        value = impl.htmltext("<i>")
        result = impl.module.htmlformat(template((value, "s"), "|", (value, None, "4")))
        assert str(result) == "&lt;i&gt;|<i> "

    def test_nested_templates_are_markup(self, impl):
        inner = template("<li>", ("<x>", None), "</li>")
        outer = template("<ul>", (inner, None), (inner, None), "</ul>")
        result = impl.module.htmlformat(outer)
        assert str(result) == "<ul><li>&lt;x&gt;</li><li>&lt;x&gt;</li></ul>"

    def test_a_nested_template_with_a_conversion_is_text(self, impl):
        inner = template("<li>")
        result = str(impl.module.htmlformat(template((inner, "r"))))
        assert result == html.escape(repr(inner), quote=True)

    def test_every_output_path_takes_a_template_as_markup(self, impl):
        t = template("<b>", ("<x>", None), "</b>")
        expected = "<b>&lt;x&gt;</b>"
        assert str(impl.htmlescape(t)) == expected
        assert str(impl.html_join(["<", t])) == "&lt;" + expected
        out = impl.TemplateIO(html=True)
        out += t
        assert str(out.getvalue()) == expected

    def test_errors_of_a_value_propagate(self, impl):
        class Bad:
            def __format__(self, spec: str) -> str:
                raise ZeroDivisionError(spec)

        with pytest.raises(ZeroDivisionError, match=r"^x$"):
            impl.module.htmlformat(template(("ok", None), (Bad(), None, "x")))

    def test_format_must_return_a_str(self, impl):
        class Odd:
            def __format__(self, spec: str) -> Any:
                return 5

        with pytest.raises(TypeError):
            impl.module.htmlformat(template((Odd(), None)))


texts = st.text(st.one_of(st.sampled_from(list("&<>\"'{}%")), st.characters()), max_size=8)


def build_value(desc: tuple, impl: Any) -> Any:
    kind, payload = desc
    if kind == "ht":
        return impl.htmltext(payload)
    if kind == "obj":
        return HtmlObject(payload)
    if kind == "tpl":
        return template(*[build_part(p, impl) for p in payload])
    return payload


def build_part(desc: Any, impl: Any) -> Any:
    if isinstance(desc, str):
        return desc
    value, conversion, spec = desc
    return (build_value(value, impl), conversion, spec)


values = st.recursive(
    st.one_of(
        texts.map(lambda s: ("str", s)),
        texts.map(lambda s: ("ht", s)),
        texts.map(lambda s: ("obj", s)),
        st.integers(-1000, 1000).map(lambda n: ("int", n)),
        st.floats(allow_nan=True).map(lambda f: ("float", f)),
        st.just(("none", None)),
    ),
    lambda inner: st.lists(
        st.one_of(texts, st.tuples(inner, st.sampled_from([None, "r", "s", "a"]), st.just(""))),
        max_size=3,
    ).map(lambda parts: ("tpl", parts)),
    max_leaves=5,
)
specs = st.one_of(st.sampled_from(["", ">5", "<^7", "&>4", '"^3', ".2", "x", "d", "!"]), texts)
parts = st.lists(
    st.one_of(texts, st.tuples(values, st.sampled_from([None, "r", "s", "a"]), specs)),
    max_size=5,
)


@NEEDS_TEMPLATES
@settings(max_examples=200)
@given(parts)
def test_the_twins_agree(twins, parts):
    python, c = twins

    def make(impl: Any) -> Any:
        return template(*[build_part(p, impl) for p in parts])

    assert outcome(c, make) == outcome(python, make)
