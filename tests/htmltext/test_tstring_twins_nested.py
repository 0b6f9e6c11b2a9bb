"""Both twins format nested t-strings and items themselves, as the escaping engine does.

``contextual_htmlformat`` (``H``) formats a t-string whose strings the engine marked as
text-only itself, nested t-strings and lists, tuples and generators of them included
(issue #27: bigtable written with ``H(t"...")`` as tdom writes it); a nested t-string
whose strings are not marked (a URL, a script, a nonce) is formatted by the fallback,
alone.  The reference is the engine's own ``contextual_format``: each twin, with the
engine as its fallback, gives the same outcome (markup or exception) as the engine on
random trees of values.  Templates are built with ``string.templatelib``'s constructors,
so that this file parses before 3.14.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup
from ptl_helpers import HtmlObject

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 14), reason="string.templatelib is new in Python 3.14"
)


def field(value: Any, conversion: str | None = None, spec: str = "") -> Any:
    from string.templatelib import Interpolation

    return Interpolation(value, "x", conversion, spec)


def t(*parts: Any) -> Any:
    """A Template from literal parts and values taking turns (a value may be a ``field()``)."""
    from string.templatelib import Interpolation, Template

    return Template(
        *(
            part if index % 2 == 0 or isinstance(part, Interpolation) else field(part)
            for index, part in enumerate(parts)
        )
    )


def engine(impl: Any, join_items: bool = True) -> Any:
    """The escaping engine's formatting of a t-string with *impl*'s escapers, as markup."""
    from ptl_wsgi.escaping.escapers import for_class
    from ptl_wsgi.escaping.planner import contextual_format

    escapers = for_class(impl.htmltext, impl.module)

    def formatted(template: Any) -> Any:
        return impl.htmltext(contextual_format(template, escapers, impl.format_field, join_items))

    return formatted


def marks(text_only: dict[Any, bool], *templates: Any) -> None:
    """Mark the strings of *templates* text-only, as ptl_wsgi.html does once planned."""
    from ptl_wsgi.escaping.planner import plan

    for template in templates:
        planned = plan(template.strings)
        assert planned.text_only and not planned.nonces, template.strings
        text_only[template.strings] = True


@contextmanager
def engine_as_fallback(twins: Any) -> Any:
    """Each twin's contextual_htmlformat with one dict of marks and the engine (with that
    twin's escapers) as its fallback, recording the t-strings it is given; the active
    twin's own setting is restored after."""
    from ptl_wsgi import html

    text_only: dict[Any, bool] = {}
    fell_back: list[Any] = []

    def fallback_of(impl: Any, join_items: bool = True) -> Any:
        formatted = engine(impl, join_items)

        def fallback(template: Any) -> Any:
            fell_back.append(template)
            return formatted(template)

        return fallback

    try:
        for impl in twins:
            impl.module.set_htmlformat(
                text_only, fallback_of(impl), fallback_of(impl, join_items=False)
            )
        yield twins, text_only, fell_back
    finally:
        for impl in twins:
            impl.module.set_htmlformat(
                html._text_only_strings, html._htmlformat_in_context, html._fstring_in_context
            )


@pytest.fixture
def twins_with_engine(twins: Any) -> Any:
    with engine_as_fallback(twins) as found:
        yield found


def render(impl: Any, template: Any) -> str:
    result = impl.module.contextual_htmlformat(template)
    assert type(result) is impl.htmltext
    return str(result)


# -- what the twin does itself -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["nested t-string", "list", "tuple", "generator", "nested lists"])
def test_nested_t_strings_and_items_are_the_twins_own(twins_with_engine: Any, kind: str) -> None:
    twins, text_only, fell_back = twins_with_engine
    cell = t("<td>", "x", "</td>")
    marks(text_only, cell)
    for impl in twins:
        value = {
            "nested t-string": lambda: t("<td>", "<a&b>", "</td>"),
            "list": lambda: [t("<td>", n, "</td>") for n in (1, "<2>")],
            "tuple": lambda: (t("<td>", 1, "</td>"), "<2>", Markup("<b>3</b>")),
            "generator": lambda: (t("<td>", n, "</td>") for n in range(3)),
            "nested lists": lambda: [[t("<td>", 1.5, "</td>")], (), [[None, impl.htmltext("<i>")]]],  # noqa: B023
        }[kind]()
        row = t("<tr>", value, "</tr>")
        marks(text_only, row)
        expected = {
            "nested t-string": "<tr><td>&lt;a&amp;b&gt;</td></tr>",
            "list": "<tr><td>1</td><td>&lt;2&gt;</td></tr>",
            "tuple": "<tr><td>1</td>&lt;2&gt;<b>3</b></tr>",
            "generator": "<tr><td>0</td><td>1</td><td>2</td></tr>",
            "nested lists": "<tr><td>1.5</td>None<i></tr>",
        }[kind]
        assert render(impl, row) == expected
    assert fell_back == []  # no call: every t-string was the twin's


def test_a_nested_t_string_not_marked_goes_to_the_fallback_alone(twins_with_engine: Any) -> None:
    # Hostile: a link inside a row of a text-only table must get the URL escaper; the
    # twin hands that one t-string to the engine, after the generator before it was read.
    twins, text_only, fell_back = twins_with_engine
    for impl in twins:
        fell_back.clear()
        link = t('<a href="', "javascript:alert(1)", '">', "<x>", "</a>")
        cells = (t("<td>", n, "</td>") for n in range(2))
        page = t("<p>", cells, "</p><p>", [link, "<y>"], "</p>")
        marks(text_only, page, t("<td>", 0, "</td>"))
        assert render(impl, page) == (
            "<p><td>0</td><td>1</td></p>"
            '<p><a href="about:invalid#ptl-unsafe-url">&lt;x&gt;</a>&lt;y&gt;</p>'
        )
        assert fell_back == [link]
        assert link.strings not in text_only


def test_outside_text_the_top_t_string_is_the_fallbacks(twins_with_engine: Any) -> None:
    # A list in a script is a JSON array, never its items joined: the engine's, whole.
    twins, _, fell_back = twins_with_engine
    for impl in twins:
        fell_back.clear()
        script = t("<script>var a = ", ["</script>", 1], ";</script>")
        assert render(impl, script) == (
            '<script>var a =  ["\\u003c\\u002fscript\\u003e",1] ;</script>'
        )
        assert fell_back == [script]


def test_a_list_subclass_and_a_conversion_or_spec_are_one_value(twins_with_engine: Any) -> None:
    twins, text_only, _ = twins_with_engine

    class Row(list):
        pass

    for impl in twins:
        page = t(
            "<p>", Row(["<a>"]), "|", field(["<b>"], "r"), "|", field(("<c>",), None, ">12"), "</p>"
        )
        marks(text_only, page)
        with pytest.raises(TypeError):  # a tuple has no format spec but ""
            render(impl, page)
        page = t("<p>", Row(["<a>"]), "|", field(["<b>"], "r"), "</p>")
        marks(text_only, page)
        assert render(impl, page) == "<p>[&#x27;&lt;a&gt;&#x27;]|[&#x27;&lt;b&gt;&#x27;]</p>"


def test_a_nested_t_string_with_a_spec_is_markup_padded(twins_with_engine: Any) -> None:
    # As an f-string field of markup: the markup kept, the padding escaped; with a
    # conversion, the t-string's repr is text, escaped.
    twins, text_only, fell_back = twins_with_engine
    for impl in twins:
        inner = t("<b>", "<x>", "</b>")
        page = t("<p>", field(inner, None, "<>20"), "|", field(inner, "r"), "</p>")
        marks(text_only, page, inner)
        markup = render(impl, page)
        assert markup == str(engine(impl)(page))
        assert markup.startswith("<p>&lt;&lt;") and "&lt;<b>&lt;x&gt;</b>|" in markup
        assert "|Template(strings=(&#x27;&lt;b&gt;&#x27;," in markup
    assert fell_back == []


def test_html_fstring_keeps_its_own_items_one_value(twins_with_engine: Any) -> None:
    # As in an [html] f-string: the list is its format(), escaped; a nested t-string's
    # own list is still joined.
    twins, text_only, fell_back = twins_with_engine
    for impl in twins:
        inner = t("<b>", ["<x>", 1], "</b>")
        page = t("<p>", ["<a>", inner], "|", inner, "</p>")
        marks(text_only, page, inner)
        assert str(impl.module.contextual_fstring(page)) == (
            "<p>[&#x27;&lt;a&gt;&#x27;, Template(strings=(&#x27;&lt;b&gt;&#x27;, "
            "&#x27;&lt;/b&gt;&#x27;), interpolations=(Interpolation([&#x27;&lt;x&gt;&#x27;, 1], "
            "&#x27;x&#x27;, None, &#x27;&#x27;),))]|<b>&lt;x&gt;1</b></p>"
        )
        link = t('<a href="', ["/a", "b"], '">x</a>')
        assert str(impl.module.contextual_fstring(link)) == str(engine(impl, False)(link))
        assert fell_back[-1] is link
    with pytest.raises(RuntimeError, match="third argument"):
        for impl in twins:
            impl.module.set_htmlformat(text_only, print)
            impl.module.contextual_fstring(t("<p>", 1, "</p>"))


def test_a_t_string_made_markup_elsewhere_is_htmlformats(twins_with_engine: Any) -> None:
    # htmlescape, html_join and TemplateIO take a t-string as markup, as htmlformat makes
    # it; the C twin formats a marked one itself there too (out += t"..." in a loop).
    twins, text_only, fell_back = twins_with_engine
    for impl in twins:
        page = t("<p>", [t("<b>", "<x>", "</b>")], "</p>")
        marks(text_only, page, t("<b>", 0, "</b>"))
        fell_back.clear()
        out = impl.TemplateIO(html=True)
        out += page
        for markup in (impl.htmlescape(page), impl.html_join([page, None]), out.getvalue()):
            assert type(markup) is impl.htmltext
            assert str(markup) == "<p><b>&lt;x&gt;</b></p>"
        assert fell_back == []
        link = t('<a href="', "javascript:x", '">', "<y>", "</a>")
        expected = '<a href="about:invalid#ptl-unsafe-url">&lt;y&gt;</a>'
        assert str(impl.htmlescape(link)) == str(impl.html_join([link])) == expected


# -- hostile values -------------------------------------------------------------------


def test_a_list_that_holds_itself_is_a_recursion_error(twins_with_engine: Any) -> None:
    twins, text_only, _ = twins_with_engine
    for impl in twins:
        loop: list[Any] = ["<a>"]
        loop.append(loop)
        page = t("<p>", loop, "</p>")
        marks(text_only, page)
        with pytest.raises(RecursionError):
            render(impl, page)


def test_deeply_nested_t_strings_are_a_recursion_error(twins_with_engine: Any) -> None:
    twins, text_only, _ = twins_with_engine
    for impl in twins:
        page = t("<i>", "x", "</i>")
        marks(text_only, page)
        for _ in range(20_000):
            page = t("<i>", [page], "</i>")
        with pytest.raises(RecursionError):
            render(impl, page)


def test_a_list_changed_while_it_is_joined(twins_with_engine: Any) -> None:
    # An item's __html__ grows and then empties the list being joined: read as a for
    # loop reads it, with no crash and no item read after it is gone.
    twins, text_only, _ = twins_with_engine
    for impl in twins:
        items: list[Any] = []

        class Grower:
            def __html__(self, items: list[Any] = items) -> str:
                if len(items) < 4:
                    items.append(Grower())
                else:
                    items.clear()
                return "<g>"

        items.append(Grower())
        page = t("<p>", items, "</p>")
        marks(text_only, page)
        assert render(impl, page) == "<p>" + "<g>" * 4 + "</p>"


def test_a_literal_part_is_its_characters_and_may_not_pull_the_state_away(
    twins_with_engine: Any,
) -> None:
    # Literal parts are str, a subclass included: its characters are written (not its
    # __str__), and its __hash__, run by the lookup of the marks, may replace the marks
    # and the fallback in use (which the C twin must hold, not read again).
    twins, text_only, fell_back = twins_with_engine

    class Shouting(str):
        def __str__(self) -> str:
            return "<script>"

    for impl in twins:
        page = t(Shouting("<p>"), [t("<b>", 1, "</b>")], Shouting("</p>"))
        marks(text_only, page, t("<b>", 1, "</b>"))
        assert render(impl, page) == "<p><b>1</b></p>"
        plain = str(impl.htmlformat(page))  # the twin's own: a list is one value there
        assert plain.startswith("<p>[Template(strings=") and plain.endswith(")]</p>")

        class Rebinding(str):
            def __hash__(self, impl: Any = impl) -> int:
                impl.module.set_htmlformat({}, lambda template: impl.htmltext("<new>"))
                return str.__hash__(self)

            __eq__ = str.__eq__

        fell_back.clear()
        page = t(Rebinding("<div>"), [t("<b>", 1, "</b>")], Rebinding("</div>"))
        assert render(impl, page) == "<div><b>1</b></div>"  # by the fallback given before
        assert fell_back == [page]


def test_errors_in_items_propagate(twins_with_engine: Any) -> None:
    twins, text_only, _ = twins_with_engine

    class Broken:
        def __html__(self) -> str:
            raise LookupError("from __html__")

    def rows() -> Any:
        yield t("<td>", 1, "</td>")
        raise KeyError("from the generator")

    for impl in twins:
        for value, error in (([1, Broken()], LookupError), (rows(), KeyError)):
            page = t("<p>", value, "</p>")
            marks(text_only, page, t("<td>", 1, "</td>"))
            with pytest.raises(error):
                render(impl, page)


def test_a_fallback_that_returns_no_str_is_a_type_error(twins: Any) -> None:
    from ptl_wsgi import html

    text_only: dict[Any, bool] = {}
    page = t("<p>", [t("<b>", 1, "</b>")], "</p>")
    marks(text_only, page)
    try:
        for impl in twins:
            impl.module.set_htmlformat(text_only, lambda template: 3)
            with pytest.raises(TypeError, match="fallback returned int, not str"):
                impl.module.contextual_htmlformat(page)
    finally:
        for impl in twins:
            impl.module.set_htmlformat(
                html._text_only_strings, html._htmlformat_in_context, html._fstring_in_context
            )


def test_the_public_h_renders_nested_lists_the_same_twice() -> None:
    # The first call plans (the engine), the second is the twin's: the same markup.
    from ptl_wsgi.html import H

    def table() -> Any:
        return t(
            "<table>",
            [t("<tr>", [t("<td>", v, "</td>") for v in ("<a>", 2, Markup("<b>"))], "</tr>")],
            "</table>",
        )

    first, second = str(H(table())), str(H(table()))
    assert first == second == "<table><tr><td>&lt;a&gt;</td><td>2</td><td><b></td></tr></table>"


# -- differential: both twins give the engine's outcome on random trees -------------------

SPECIAL = list("&<>\"'")
texts = st.text(st.one_of(st.sampled_from(SPECIAL), st.characters(min_codepoint=0x20)), max_size=6)
leaves = st.one_of(
    texts.map(lambda s: ("str", s)),
    texts.map(lambda s: ("ht", s)),
    texts.map(lambda s: ("markup", s)),
    texts.map(lambda s: ("obj", s)),
    st.integers(-(2**70), 2**70).map(lambda n: ("int", n)),
    st.floats(allow_nan=True).map(lambda f: ("float", f)),
    st.just(("none",)),
)
# Literal parts: text-only ones (the twin's once marked) and ones that put the next
# value in an href, a script or a style (always the engine's).
TEXT_LITERALS = ["", "<p>", "</p>", "<td>", "a&amp;b", "<b title='x'>", "é€😀"]
LINK = ('<a href="', '">')
conversions = st.sampled_from([None, None, None, "r", "s"])
specs = st.sampled_from(["", "", "", ">5", "^7"])


def trees(inner: st.SearchStrategy) -> st.SearchStrategy:
    fields = st.tuples(inner, conversions, specs)
    items = st.tuples(st.sampled_from(["list", "tuple", "gen"]), st.lists(inner, max_size=4))
    text_template = st.tuples(
        st.just("t"), st.lists(st.tuples(st.sampled_from(TEXT_LITERALS), fields), max_size=3),
        st.booleans(),
    )  # fmt: skip
    link_template = st.tuples(st.just("link"), fields)
    return st.one_of(items, text_template, link_template)


values = st.recursive(leaves, trees, max_leaves=10)


def build(desc: tuple, impl: Any, text_only: dict[Any, bool]) -> Any:
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
    if kind in ("list", "tuple", "gen"):
        made = [build(item, impl, text_only) for item in desc[1]]
        if kind == "gen":
            return (item for item in made)
        return list(made) if kind == "list" else tuple(made)
    if kind == "link":
        value, conversion, spec = desc[1]
        return t(LINK[0], field(build(value, impl, text_only), conversion, spec), LINK[1] + "x</a>")
    parts: list[Any] = []
    for literal, (value, conversion, spec) in desc[1]:
        parts += [literal, field(build(value, impl, text_only), conversion, spec)]
    template = t(*parts, "</i>")
    if desc[2]:
        marks(text_only, template)
    return template


def outcome(operation: Any) -> Any:
    try:
        result = operation()
    except Exception as exc:
        return ("raises", type(exc).__name__)
    # (A generator's repr, one value in html_fstring or a URL, names its address.)
    return ("markup", re.sub(r"(?: |%20)at(?: |%20)0x[0-9a-f]+", "", str(result)))


@settings(max_examples=300)
@given(st.tuples(st.just("t"), st.lists(st.tuples(st.sampled_from(TEXT_LITERALS),
                                                   st.tuples(values, conversions, specs)),
                                         min_size=1, max_size=3), st.just(True)))  # fmt: skip
def test_twins_give_the_engines_markup(twins: Any, desc: tuple) -> None:
    with engine_as_fallback(twins) as (_, text_only, _):
        for impl in twins:
            reference = engine(impl)
            expected = outcome(lambda: reference(build(desc, impl, {})))  # noqa: B023
            got = outcome(
                lambda: impl.module.contextual_htmlformat(build(desc, impl, text_only))  # noqa: B023
            )
            assert got == expected, (impl.name, desc)
            one_value = engine(impl, join_items=False)
            expected = outcome(lambda: one_value(build(desc, impl, {})))  # noqa: B023
            got = outcome(
                lambda: impl.module.contextual_fstring(build(desc, impl, text_only))  # noqa: B023
            )
            assert got == expected, (impl.name, desc, "html_fstring")
