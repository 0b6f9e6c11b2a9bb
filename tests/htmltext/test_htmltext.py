"""Behaviour of htmltext and the escaping functions, run against both twins.

Every test takes the ``impl`` fixture (see conftest.py), so the pure-Python
reference and the C accelerator are held to the same rules:

* ``htmltext`` is trusted markup; anything combined with it that has no
  ``__html__`` is escaped like ``html.escape(s, quote=True)``;
* values with ``__html__`` (htmltext, markupsafe.Markup, Django's SafeString)
  are never escaped twice;
* otherwise htmltext behaves as the str it is.
"""

from __future__ import annotations

import copy
import html
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.utils.safestring import SafeString, mark_safe
from markupsafe import Markup
from ptl_helpers import HtmlObject


class NamedTuple(tuple):
    """A tuple subclass: str's % messages name its type."""


class Opaque:
    """Neither a tuple nor a mapping nor a number."""


# The three str storage kinds (1, 2 and 4 bytes per character), each with all
# five characters that must be escaped.
KINDS = {
    "ascii": "a<b> & \"c\" 'd'",
    "latin1": "café <é> & \"ñ\" 'ü'",
    "bmp": "Ωμέγα <€> & \"中\" '文'",
    "astral": "😀 <🎉> & \"𝄞\" '🐍'",
}
KIND_IDS = list(KINDS)
KIND_TEXTS = [KINDS[k] for k in KIND_IDS]

ESCAPES = [("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;")]


def esc(text: str) -> str:
    """The escaping every path must agree with."""
    return html.escape(text, quote=True)


class Plain:
    """An untrusted non-str value: its str() and repr() contain markup characters."""

    def __str__(self) -> str:
        return "<plain & 'simple'>"

    def __repr__(self) -> str:
        return 'Plain("<>")'


class Record:
    """For attribute access in format strings."""

    name = "<Ann>"
    safe = Markup("<em>Ann</em>")


def assert_html(result: object, impl, expected: str) -> None:
    """*result* is exactly the twin's htmltext with text *expected*."""
    assert type(result) is impl.htmltext, type(result)
    assert str(result) == expected


# -- construction --------------------------------------------------------------


class TestConstruction:
    def test_str_is_trusted_as_is(self, impl):
        ht = impl.htmltext("<b>x & y</b>")
        assert_html(ht, impl, "<b>x & y</b>")
        assert isinstance(ht, str)

    def test_default_is_empty(self, impl):
        assert_html(impl.htmltext(), impl, "")

    @pytest.mark.parametrize(
        "value",
        [Markup("<i>x</i>"), SafeString("<i>x</i>"), HtmlObject("<i>x</i>")],
        ids=["Markup", "SafeString", "__html__"],
    )
    def test_value_with_dunder_html_keeps_its_markup(self, impl, value):
        assert_html(impl.htmltext(value), impl, "<i>x</i>")

    def test_htmltext_of_htmltext(self, impl):
        assert_html(impl.htmltext(impl.htmltext("<p>")), impl, "<p>")

    @pytest.mark.parametrize(
        ("value", "text"), [(5, "5"), (None, "None"), (Plain(), "<plain & 'simple'>")]
    )
    def test_non_str_takes_str_as_trusted(self, impl, value, text):
        assert_html(impl.htmltext(value), impl, text)

    def test_dunder_html_returns_itself(self, impl):
        ht = impl.htmltext("<b>")
        assert ht.__html__() is ht

    def test_repr_names_the_class(self, impl):
        assert repr(impl.htmltext("<b>'")) == 'htmltext("<b>\'")'

    def test_str_of_htmltext_is_a_plain_str(self, impl):
        text = str(impl.htmltext("<b>"))
        assert type(text) is str
        assert text == "<b>"


# -- htmlescape, escape_str, stringify -----------------------------------------


class TestHtmlescape:
    @pytest.mark.parametrize(("char", "entity"), ESCAPES)
    def test_each_markup_character(self, impl, char, entity):
        assert_html(impl.htmlescape(f"a{char}b"), impl, f"a{entity}b")

    def test_all_five_characters_like_html_escape(self, impl):
        text = "&<>\"'" * 3
        assert_html(impl.htmlescape(text), impl, html.escape(text, quote=True))

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind(self, impl, text):
        assert_html(impl.htmlescape(text), impl, esc(text))
        assert_html(impl.htmlescape(text * 50), impl, esc(text * 50))

    @pytest.mark.parametrize("text", ["", "plain", "ünïcödé", "日本語", "🐍🐍"])
    def test_nothing_to_escape(self, impl, text):
        assert_html(impl.htmlescape(text), impl, text)

    def test_ampersand_of_existing_entity_is_escaped_in_str(self, impl):
        assert_html(impl.htmlescape("&amp;"), impl, "&amp;amp;")

    @pytest.mark.parametrize(
        "value",
        [Markup("<b>&amp;</b>"), SafeString("<b>&amp;</b>"), mark_safe("<b>&amp;</b>"),
         HtmlObject("<b>&amp;</b>")],
        ids=["Markup", "SafeString", "mark_safe", "__html__"],
    )  # fmt: skip
    def test_values_with_dunder_html_pass_through(self, impl, value):
        assert_html(impl.htmlescape(value), impl, "<b>&amp;</b>")

    def test_htmltext_passes_through(self, impl):
        ht = impl.htmltext("<b>&amp;</b>")
        assert_html(impl.htmlescape(ht), impl, "<b>&amp;</b>")

    def test_no_double_escaping(self, impl):
        once = impl.htmlescape("<&>")
        assert_html(impl.htmlescape(once), impl, "&lt;&amp;&gt;")
        assert_html(impl.htmlescape(impl.htmlescape(once)), impl, "&lt;&amp;&gt;")

    @pytest.mark.parametrize("value", [5, 2.5, None, ["<a>"], b"<b>", Plain()], ids=repr)
    def test_non_str_is_str_ed_and_escaped(self, impl, value):
        assert_html(impl.htmlescape(value), impl, esc(str(value)))

    def test_str_subclass_without_dunder_html_is_escaped(self, impl):
        class Text(str):
            pass

        assert_html(impl.htmlescape(Text("<x>")), impl, "&lt;x&gt;")

    def test_subclass_of_htmltext_keeps_its_markup(self, impl):
        class Fragment(impl.htmltext):
            pass

        result = impl.htmlescape(Fragment("<x>"))
        assert isinstance(result, impl.htmltext)
        assert str(result) == "<x>"


class TestEscapeStr:
    @pytest.mark.parametrize("text", [*KIND_TEXTS, "", "nothing", "&&&", "'\"'"])
    def test_matches_html_escape_and_returns_str(self, impl, text):
        result = impl.escape_str(text)
        assert type(result) is str
        assert result == esc(text)


class TestStringify:
    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_str_is_unchanged(self, impl, text):
        result = impl.stringify(text)
        assert type(result) is str
        assert result == text

    @pytest.mark.parametrize(
        ("value", "text"), [(5, "5"), (None, "None"), (Plain(), "<plain & 'simple'>")]
    )
    def test_non_str_is_str_ed_without_escaping(self, impl, value, text):
        result = impl.stringify(value)
        assert type(result) is str
        assert result == text

    def test_htmltext_becomes_plain_str(self, impl):
        result = impl.stringify(impl.htmltext("<b>"))
        assert type(result) is str
        assert result == "<b>"


# -- + and * --------------------------------------------------------------------

# (operand, text it contributes): str is escaped, markup is kept.
OPERANDS = [
    ("<i>", "&lt;i&gt;"),
    (Markup("<i>"), "<i>"),
    (SafeString("<i>"), "<i>"),
    (HtmlObject("<i>"), "<i>"),
]
OPERAND_IDS = ["str", "Markup", "SafeString", "__html__"]


class TestAdd:
    @pytest.mark.parametrize(("other", "text"), OPERANDS, ids=OPERAND_IDS)
    def test_htmltext_plus_other(self, impl, other, text):
        assert_html(impl.htmltext("<b>") + other, impl, "<b>" + text)

    @pytest.mark.parametrize(
        ("other", "text"),
        [OPERANDS[0], OPERANDS[3]],
        ids=["str", "__html__"],
    )
    def test_other_plus_htmltext(self, impl, other, text):
        assert_html(other + impl.htmltext("<b>"), impl, text + "<b>")

    def test_markup_plus_htmltext_is_markup_keeping_both(self, impl):
        result = Markup("<i>") + impl.htmltext("<b>")
        assert type(result) is Markup
        assert str(result) == "<i><b>"

    def test_htmltext_plus_htmltext(self, impl):
        assert_html(impl.htmltext("<a>") + impl.htmltext("<b>"), impl, "<a><b>")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind_both_orders(self, impl, text):
        ht = impl.htmltext("<hr>")
        assert_html(ht + text, impl, "<hr>" + esc(text))
        assert_html(text + ht, impl, esc(text) + "<hr>")

    def test_augmented_assignment_escapes(self, impl):
        page = impl.htmltext("<p>")
        page += "<script>"
        assert_html(page, impl, "<p>&lt;script&gt;")

    @pytest.mark.parametrize("other", [1, None, 2.5, b"x", ["x"]], ids=repr)
    def test_non_str_operands_raise_type_error_like_str(self, impl, other):
        ht = impl.htmltext("x")
        with pytest.raises(TypeError):
            ht + other
        with pytest.raises(TypeError):
            other + ht


class TestMultiply:
    def test_both_orders(self, impl):
        ht = impl.htmltext("<br>")
        assert_html(ht * 3, impl, "<br><br><br>")
        assert_html(3 * ht, impl, "<br><br><br>")

    @pytest.mark.parametrize("count", [0, -2])
    def test_zero_or_negative_gives_empty_htmltext(self, impl, count):
        assert_html(impl.htmltext("<br>") * count, impl, "")
        assert_html(count * impl.htmltext("<br>"), impl, "")

    def test_bool_and_index_counts(self, impl):
        class Two:
            def __index__(self) -> int:
                return 2

        assert_html(impl.htmltext("<a>") * True, impl, "<a>")
        assert_html(impl.htmltext("<a>") * Two(), impl, "<a><a>")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind(self, impl, text):
        assert_html(impl.htmltext(text) * 2, impl, text * 2)

    def test_augmented_assignment(self, impl):
        ht = impl.htmltext("<i>")
        ht *= 2
        assert_html(ht, impl, "<i><i>")

    @pytest.mark.parametrize("count", ["2", 2.0, None], ids=repr)
    def test_non_integer_count_raises_type_error(self, impl, count):
        with pytest.raises(TypeError):
            impl.htmltext("x") * count
        with pytest.raises(TypeError):
            count * impl.htmltext("x")


# -- % formatting ---------------------------------------------------------------


class TestPercentFormat:
    def test_single_value_is_escaped(self, impl):
        assert_html(impl.htmltext("<p>%s</p>") % "<i>", impl, "<p>&lt;i&gt;</p>")

    def test_tuple(self, impl):
        result = impl.htmltext("<a title='%s'>%s</a>") % ("x'y", "a&b")
        assert_html(result, impl, "<a title='x&#x27;y'>a&amp;b</a>")

    def test_mapping(self, impl):
        result = impl.htmltext("<b>%(name)s</b> %(name)s %(n)d") % {"name": "<N>", "n": 7}
        assert_html(result, impl, "<b>&lt;N&gt;</b> &lt;N&gt; 7")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind(self, impl, text):
        assert_html(impl.htmltext("<p>%s</p>") % text, impl, f"<p>{esc(text)}</p>")
        assert_html(impl.htmltext("%(k)s|%(k)r") % {"k": text}, impl,
                    f"{esc(text)}|{esc(repr(text))}")  # fmt: skip

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_kind_of_format_string(self, impl, text):
        fmt = impl.htmltext(text + "%s")
        assert_html(fmt % "<", impl, text + "&lt;")

    def test_double_percent_is_a_literal_percent(self, impl):
        assert_html(impl.htmltext("%d%% <b>%%</b>") % 50, impl, "50% <b>%</b>")
        assert_html(impl.htmltext("100%%") % (), impl, "100%")

    @pytest.mark.parametrize(
        "value", [Markup("<i>"), SafeString("<i>"), HtmlObject("<i>")],
        ids=["Markup", "SafeString", "__html__"],
    )  # fmt: skip
    def test_values_with_dunder_html_keep_markup(self, impl, value):
        assert_html(impl.htmltext("<p>%s</p>") % value, impl, "<p><i></p>")
        assert_html(impl.htmltext("<p>%s</p>") % (value,), impl, "<p><i></p>")
        assert_html(impl.htmltext("<p>%(v)s</p>") % {"v": value}, impl, "<p><i></p>")

    def test_htmltext_value_keeps_markup(self, impl):
        assert_html(impl.htmltext("%s") % impl.htmltext("<i>"), impl, "<i>")

    def test_width_counts_raw_characters_before_escaping(self, impl):
        assert_html(impl.htmltext("[%5s]") % "<", impl, "[    &lt;]")
        assert_html(impl.htmltext("[%-5s]") % "<", impl, "[&lt;    ]")

    def test_width_on_markup_value_keeps_markup(self, impl):
        assert_html(impl.htmltext("[%5s]") % Markup("<i>"), impl, "[  <i>]")

    def test_precision_truncates_before_escaping(self, impl):
        assert_html(impl.htmltext("%.2s") % "<b>", impl, "&lt;b")

    def test_star_width_and_precision(self, impl):
        assert_html(impl.htmltext("[%*s]") % (5, "<"), impl, "[    &lt;]")
        assert_html(impl.htmltext("[%-*.*s]") % (4, 2, "<b>"), impl, "[&lt;b  ]")
        assert_html(impl.htmltext("[%*d]") % (4, 7), impl, "[   7]")

    @pytest.mark.parametrize(
        ("fmt", "value", "text"),
        [
            ("%.2f", 3.14159, "3.14"),
            ("%x", 255, "ff"),
            ("%#X", 255, "0XFF"),
            ("%o", 8, "10"),
            ("%05d", -42, "-0042"),
            ("%+d", 5, "+5"),
            ("% d", 5, " 5"),
            ("%i|%u", (1, 2), "1|2"),
            ("%e", 12345.678, "1.234568e+04"),
            ("%g|%G", (1e-10, 1e20), "1e-10|1E+20"),
            ("%d", True, "1"),
            ("%f", float("inf"), "inf"),
            ("%ld|%hd|%Lf", (1, 2, 3.0), "1|2|3.000000"),
        ],
    )
    def test_numeric_conversions_format_like_str(self, impl, fmt, value, text):
        assert fmt % value == text  # the reference itself
        assert_html(impl.htmltext(fmt) % value, impl, text)

    @pytest.mark.parametrize(
        ("value", "text"),
        [(60, "&lt;"), ("<", "&lt;"), (38, "&amp;"), ("'", "&#x27;"), (65, "A"),
         (0x1F600, "😀"), ("é", "é"), (Markup("<"), "&lt;")],
        ids=repr,
    )  # fmt: skip
    def test_percent_c_never_yields_a_bare_markup_character(self, impl, value, text):
        assert_html(impl.htmltext("%c") % value, impl, text)
        assert_html(impl.htmltext("%3c") % (value,), impl, "  " + text)

    @pytest.mark.parametrize("conversion", ["r", "a"])
    @pytest.mark.parametrize("value", ["<é'>", Plain(), Markup("<i>")], ids=repr)
    def test_repr_and_ascii_conversions_are_escaped(self, impl, conversion, value):
        expected = esc(repr(value) if conversion == "r" else ascii(value))
        assert_html(impl.htmltext("%" + conversion) % (value,), impl, expected)

    def test_repr_of_htmltext_is_escaped(self, impl):
        assert_html(impl.htmltext("%r") % (impl.htmltext("<b>"),), impl,
                    esc(repr(impl.htmltext("<b>"))))  # fmt: skip

    def test_non_str_values(self, impl):
        assert_html(impl.htmltext("%s|%s|%s") % (None, 3, Plain()), impl,
                    "None|3|&lt;plain &amp; &#x27;simple&#x27;&gt;")  # fmt: skip

    def test_a_single_non_tuple_value_is_one_argument(self, impl):
        assert_html(impl.htmltext("%s") % ["<a>"], impl, esc(str(["<a>"])))
        assert_html(impl.htmltext("%s") % {"k": "<"}, impl, esc(str({"k": "<"})))

    def test_tuple_as_the_only_value_needs_wrapping(self, impl):
        assert_html(impl.htmltext("%s") % (("<", 1),), impl, esc(str(("<", 1))))

    def test_mapping_without_specs_is_accepted_like_str(self, impl):
        assert "abc %%" % {"a": 1} == "abc %"  # noqa: F504, F507, UP031
        assert_html(impl.htmltext("abc %%") % {"a": 1}, impl, "abc %")
        assert_html(impl.htmltext("abc") % [1], impl, "abc")

    def test_positional_spec_with_mapping_uses_the_mapping_itself(self, impl):
        value = {"a": "<"}
        assert_html(impl.htmltext("%s %(a)s") % value, impl, f"{esc(str(value))} &lt;")

    @pytest.mark.parametrize(
        ("fmt", "args"),
        [
            ("%s %s", ("a",)),  # too few
            ("%s", ()),
            ("%s", ("a", "b")),  # too many
            ("abc", 5),
            ("abc", "x"),
            ("%y", 1),  # bad conversion character
            ("%y", ()),  # ... but str reports the missing argument first
            ("%s %y", (1,)),
            ("%5%", (1,)),  # only an immediate %% is a literal
            ("%5%", ()),
            ("%", ()),  # incomplete
            ("%s %", ("a",)),
            ("%s %", ()),
            ("%(a", {"a": 1}),
            ("%(a", ()),
            ("%(a)s", ("a",)),  # needs a mapping
            ("%(missing)s", {}),
            ("%(a)s %s", {"a": 1}),  # a keyed spec uses up the positional arguments
            ("%(a)*s", {"a": 3}),
            ("%s %s", {"a": 1}),
            ("%d", "x"),
            ("%x", 2.5),
            ("%c", "ab"),
            ("%c", -1),
            ("%c", 0x110000),
            ("%*s", ("x", "y")),
            ("%*", ("x",)),
            ("%.*s", (1,)),
            # Python 3.15 (gh-142037) refuses these with new ValueErrors and
            # words most messages anew; each version's str is the reference.
            ("%(a)s %y", {"a": 1}),
            ("%(a)s %", {"a": 1}),
            ("%(a).*s", {"a": 1}),
            ("%(a)s %*s", {"a": 1}),
            ("%(a)s %(", {"a": 1}),
            ("%", {"a": 1}),
            ("abc % %s", 1),
            ("%s %d", (1, "x")),  # the message numbers the value...
            ("%(a)d", {"a": "x"}),  # ... or names it
            ("%s %s %*s", ("a", "b", 1.5, "c")),
            ("%(a)s", NamedTuple(("a",))),  # the message names the type
            ("%(a)s", Opaque()),
            ("%s %s", {"a": 1}),
            ("%s", (1, 2, 3)),
            ("%-*", ("<",)),
        ],
    )
    def test_errors_are_those_of_str(self, impl, fmt, args):
        with pytest.raises(Exception) as expected:
            fmt % args
        with pytest.raises(type(expected.value)) as raised:
            impl.htmltext(fmt) % args
        assert str(raised.value) == str(expected.value)

    def test_values_before_an_error_are_converted_as_str_converts_them(self, impl):
        seen = []

        class Loud:
            def __str__(self) -> str:
                seen.append("str")
                return "<"

        for fmt in ("%s %y", "%s %s %", "%s %(a)s"):
            seen.clear()
            with pytest.raises(Exception) as expected:
                fmt % (Loud(), 1)
            wanted = list(seen)
            seen.clear()
            with pytest.raises(type(expected.value), match="^" + re.escape(str(expected.value))):
                impl.htmltext(fmt) % (Loud(), 1)
            assert seen == wanted

    @pytest.mark.parametrize(
        ("fmt", "args"),
        [
            ("%s-%s", ("a", 1)),
            ("%(a)s-%(b)05.1f-%(a)s", {"a": "x", "b": 2.25}),
            ("%%|%s|%%", ("y",)),
            ("%-6s|%6s|%.1s", ("ab", "cd", "ef")),
            ("%s", ()),
            ("plain", ()),
            ("%()s", {"": "empty key"}),
            ("%((a))s", {"(a)": "nested parens"}),
        ],
    )
    def test_results_match_str_when_nothing_needs_escaping(self, impl, fmt, args):
        try:
            expected = fmt % args
        except TypeError:
            with pytest.raises(TypeError):
                impl.htmltext(fmt) % args
        else:
            assert_html(impl.htmltext(fmt) % args, impl, expected)

    def test_str_format_on_the_left_stays_plain_str(self, impl):
        result = "%s" % impl.htmltext("<b>")  # noqa: UP031
        assert type(result) is str
        assert result == "<b>"
        result = "<p>%s</p>" % (impl.htmltext("&amp;"),)  # noqa: UP031
        assert type(result) is str


# -- str.format -----------------------------------------------------------------


class TestFormat:
    def test_positional_and_keyword_arguments_are_escaped(self, impl):
        result = impl.htmltext("<p>{} {name}</p>").format("<a>", name="b&c")
        assert_html(result, impl, "<p>&lt;a&gt; b&amp;c</p>")

    def test_explicit_indexes(self, impl):
        assert_html(impl.htmltext("{1}{0}{1}").format("<", ">"), impl, "&gt;&lt;&gt;")

    @pytest.mark.parametrize(
        "value", [Markup("<i>"), SafeString("<i>"), HtmlObject("<i>")],
        ids=["Markup", "SafeString", "__html__"],
    )  # fmt: skip
    def test_values_with_dunder_html_keep_markup(self, impl, value):
        assert_html(impl.htmltext("<p>{}</p>").format(value), impl, "<p><i></p>")
        assert_html(impl.htmltext("<p>{v}</p>").format(v=value), impl, "<p><i></p>")

    def test_htmltext_argument_keeps_markup(self, impl):
        assert_html(impl.htmltext("{}").format(impl.htmltext("<b>")), impl, "<b>")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind(self, impl, text):
        assert_html(impl.htmltext("<p>{}</p>").format(text), impl, f"<p>{esc(text)}</p>")
        assert_html(impl.htmltext(text + "{}").format(text), impl, text + esc(text))

    def test_attribute_access_is_escaped(self, impl):
        assert_html(impl.htmltext("{0.name}").format(Record()), impl, "&lt;Ann&gt;")
        assert_html(impl.htmltext("{r.safe}").format(r=Record()), impl, "<em>Ann</em>")

    def test_index_access_is_escaped(self, impl):
        assert_html(impl.htmltext("{0[1]}").format(["a", "<b>"]), impl, "&lt;b&gt;")
        assert_html(impl.htmltext("{d[k]}").format(d={"k": "<"}), impl, "&lt;")
        assert_html(impl.htmltext("{0[k][0]}").format({"k": ["'"]}), impl, "&#x27;")

    def test_dunder_attributes_cannot_leak_markup(self, impl):
        result = impl.htmltext("{0.__class__}").format("x")
        assert_html(result, impl, esc(str(str)))

    @pytest.mark.parametrize(
        ("fmt", "value", "text"),
        [
            ("{:>5}", "<", "    &lt;"),  # width counts raw characters
            ("{:*^5}", "<", "**&lt;**"),
            ("{:.2}", "<b>", "&lt;b"),
            ("{:.2f}", 3.14159, "3.14"),
            ("{:x}", 255, "ff"),
            ("{:,}", 1234567, "1,234,567"),
            ("{:08.3f}", -3.5, "-003.500"),
            ("{:%}", 0.5, "50.000000%"),
            ("{:<3}", HtmlObject("<i>"), "<i>"),
            ("{:>4}", HtmlObject("<i>"), " <i>"),
            ("{}", Markup("<i>"), "<i>"),
        ],
    )
    def test_format_specs(self, impl, fmt, value, text):
        assert_html(impl.htmltext(fmt).format(value), impl, text)

    @pytest.mark.parametrize(
        ("fmt", "value"),
        [("{!r}", "<é'>"), ("{!a}", "<é'>"), ("{!s}", Plain()), ("{!r}", Plain()),
         ("{!s}", Markup("<i>")), ("{!r}", Markup("<i>"))],
    )  # fmt: skip
    def test_conversions_are_escaped(self, impl, fmt, value):
        assert_html(impl.htmltext(fmt).format(value), impl, esc(fmt.format(value)))

    def test_doubled_braces_are_literal(self, impl):
        assert_html(impl.htmltext("{{<b>{}</b>}}").format("&"), impl, "{<b>&amp;</b>}")

    def test_format_map(self, impl):
        result = impl.htmltext("<p>{a} {b} {c.name} {d[0]}</p>").format_map(
            {"a": "<", "b": Markup("<i>"), "c": Record(), "d": ["'"]}
        )
        assert_html(result, impl, "<p>&lt; <i> &lt;Ann&gt; &#x27;</p>")

    def test_format_map_with_missing_hook(self, impl):
        class Defaults(dict):
            def __missing__(self, key: str) -> str:
                return f"<{key}>"

        assert_html(impl.htmltext("{x}").format_map(Defaults()), impl, "&lt;x&gt;")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_format_map_every_str_kind(self, impl, text):
        assert_html(impl.htmltext("{t:>3}").format_map({"t": text}), impl,
                    esc(format(text, ">3")))  # fmt: skip

    @pytest.mark.parametrize(
        ("fmt", "args", "kwargs"),
        [("{}", (), {}), ("{a}", (), {}), ("{", (), {}), ("}", (), {}),
         ("{0[1]}", (["x"],), {}), ("{0.nope}", ("x",), {}), ("{:d}", ("x",), {}),
         ("{!z}", ("x",), {})],
    )  # fmt: skip
    def test_errors_have_the_same_type_as_with_str(self, impl, fmt, args, kwargs):
        with pytest.raises(Exception) as expected:
            fmt.format(*args, **kwargs)
        with pytest.raises(type(expected.value)):
            impl.htmltext(fmt).format(*args, **kwargs)

    def test_format_map_positional_field_error_like_str(self, impl):
        with pytest.raises(ValueError):
            impl.htmltext("{}").format_map({})


# -- join -----------------------------------------------------------------------


class TestJoin:
    def test_str_items_escaped_markup_items_kept(self, impl):
        sep = impl.htmltext("<br>")
        result = sep.join(["<a>", impl.htmltext("<b>"), Markup("<c>"), HtmlObject("<d>")])
        assert_html(result, impl, "&lt;a&gt;<br><b><br><c><br><d>")

    def test_non_str_items_are_str_ed_and_escaped(self, impl):
        result = impl.htmltext(", ").join([1, None, 2.5, Plain()])
        assert_html(result, impl, "1, None, 2.5, &lt;plain &amp; &#x27;simple&#x27;&gt;")

    def test_any_iterable(self, impl):
        assert_html(impl.htmltext("|").join(c for c in "<>"), impl, "&lt;|&gt;")
        assert_html(impl.htmltext("|").join(()), impl, "")
        assert_html(impl.htmltext("|").join(["<"]), impl, "&lt;")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind(self, impl, text):
        assert_html(impl.htmltext(text).join([text, text]), impl, esc(text) + text + esc(text))

    def test_str_separator_joining_htmltext_stays_plain(self, impl):
        result = "<".join([impl.htmltext("a"), impl.htmltext("b")])
        assert type(result) is str

    def test_non_iterable_raises_type_error(self, impl):
        with pytest.raises(TypeError):
            impl.htmltext(",").join(5)


# -- wrapped str methods --------------------------------------------------------


class TestStrMethods:
    @pytest.mark.parametrize(
        "name", ["upper", "lower", "title", "capitalize", "swapcase", "casefold"]
    )
    @pytest.mark.parametrize("text", ["<b>Hello World</b>", *KIND_TEXTS])
    def test_case_methods_return_htmltext(self, impl, name, text):
        result = getattr(impl.htmltext(text), name)()
        assert_html(result, impl, getattr(text, name)())

    def test_strip_family(self, impl):
        ht = impl.htmltext("  <b>x</b>\n")
        assert_html(ht.strip(), impl, "<b>x</b>")
        assert_html(ht.lstrip(), impl, "<b>x</b>\n")
        assert_html(ht.rstrip(), impl, "  <b>x</b>")

    def test_strip_with_characters(self, impl):
        ht = impl.htmltext("xx<b>yx")
        assert_html(ht.strip("xy"), impl, "<b>")
        assert_html(ht.lstrip("x"), impl, "<b>yx")
        assert_html(ht.rstrip("xy"), impl, "xx<b>")

    def test_strip_characters_never_break_an_entity(self, impl):
        """Strip characters are a set, matched against the markup as it is."""
        ht = impl.htmltext("&lt;tall&gt;")
        assert_html(ht.strip("<>"), impl, "&lt;tall&gt;")
        assert_html(impl.htmltext("<b>").strip("<>"), impl, "b")

    def test_replace_escapes_its_arguments(self, impl):
        ht = impl.htmltext("a b c")
        assert_html(ht.replace(" ", "<br>"), impl, "a&lt;br&gt;b&lt;br&gt;c")
        assert_html(ht.replace(" ", impl.htmltext("<br>")), impl, "a<br>b<br>c")
        assert_html(ht.replace(" ", Markup("<hr>"), 1), impl, "a<hr>b c")

    def test_replace_matches_the_escaped_text(self, impl):
        ht = impl.htmltext("1 &lt; 2 <b>")
        assert_html(ht.replace("<", "less than"), impl, "1 less than 2 <b>")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_replace_every_str_kind(self, impl, text):
        assert_html(impl.htmltext("[X]").replace("X", text), impl, f"[{esc(text)}]")

    def test_padding_with_fillchar(self, impl):
        ht = impl.htmltext("<b>")
        assert_html(ht.center(7, "*"), impl, "**<b>**")
        assert_html(ht.ljust(5, "é"), impl, "<b>éé")
        assert_html(ht.rjust(5, "🐍"), impl, "🐍🐍<b>")
        assert_html(ht.center(5), impl, " <b> ")

    @pytest.mark.parametrize("name", ["center", "ljust", "rjust"])
    @pytest.mark.parametrize("fill", ["<", "&", "'"])
    def test_markup_fillchar_is_rejected_not_inserted(self, impl, name, fill):
        """An escaped fill character is no longer one character: str's TypeError."""
        with pytest.raises(TypeError):
            getattr(impl.htmltext("x"), name)(5, fill)

    def test_zfill_and_expandtabs(self, impl):
        assert_html(impl.htmltext("-7").zfill(4), impl, "-007")
        assert_html(impl.htmltext("<td>\tx").expandtabs(8), impl, "<td>    x")

    def test_removeprefix_and_removesuffix_escape_their_argument(self, impl):
        ht = impl.htmltext("&lt;x&gt;")
        assert_html(ht.removeprefix("<"), impl, "x&gt;")
        assert_html(ht.removesuffix(">"), impl, "&lt;x")
        assert_html(impl.htmltext("<b>x").removeprefix(impl.htmltext("<b>")), impl, "x")

    def test_split_parts_are_htmltext(self, impl):
        parts = impl.htmltext("<a> <b>").split()
        assert type(parts) is list
        assert [type(p) for p in parts] == [impl.htmltext] * 2
        assert parts == ["<a>", "<b>"]

    def test_split_escapes_its_separator(self, impl):
        ht = impl.htmltext("a&lt;b<c")
        assert ht.split("<") == ["a", "b<c"]
        assert ht.split(sep="<") == ["a", "b<c"]
        assert ht.rsplit("<", 1) == ["a", "b<c"]
        assert all(type(p) is impl.htmltext for p in ht.rsplit("<"))

    def test_splitlines(self, impl):
        parts = impl.htmltext("<a>\n<b>\r\n").splitlines(True)
        assert parts == ["<a>\n", "<b>\r\n"]
        assert all(type(p) is impl.htmltext for p in parts)

    @pytest.mark.parametrize("name", ["partition", "rpartition"])
    def test_partition_parts_are_htmltext(self, impl, name):
        parts = getattr(impl.htmltext("<a>=<b>"), name)("=")
        assert type(parts) is tuple
        assert parts == ("<a>", "=", "<b>")
        assert all(type(p) is impl.htmltext for p in parts)

    def test_partition_escapes_its_separator(self, impl):
        assert impl.htmltext("a&amp;b").partition("&") == ("a", "&amp;", "b")

    def test_queries_return_plain_values(self, impl):
        ht = impl.htmltext("<b>x</b>")
        assert ht.find("x") == 3
        assert ht.count("b") == 2
        assert ht.startswith("<b>")
        assert ht.endswith("</b>")
        assert ht.index("/") == 5


# -- behaves as a str -----------------------------------------------------------


class TestBehavesAsStr:
    def test_hash_and_equality(self, impl):
        ht = impl.htmltext("<b>")
        assert ht == "<b>"
        assert "<b>" == ht
        assert hash(ht) == hash("<b>")
        assert {"<b>": 1}[ht] == 1
        assert {ht: 1}["<b>"] == 1
        assert ht != "&lt;b&gt;"

    def test_equal_across_markup_types(self, impl):
        assert impl.htmltext("<b>") == Markup("<b>")

    def test_ordering(self, impl):
        a, b = impl.htmltext("a"), impl.htmltext("b")
        assert a < b <= "b" < "c"
        assert "b" > a
        assert sorted([b, "c", a]) == ["a", "b", "c"]
        assert max(a, b) is b

    def test_containment(self, impl):
        ht = impl.htmltext("<b>x</b>")
        assert "<b>" in ht
        assert "&lt;" not in ht
        assert impl.htmltext("x") in "<b>x</b>"
        assert ht in ["<b>x</b>"]

    def test_slicing_and_indexing_return_plain_str(self, impl):
        ht = impl.htmltext("<b>x</b>")
        assert ht[0:3] == "<b>"
        assert type(ht[0:3]) is str
        assert type(ht[:]) is str
        assert type(ht[0]) is str
        assert ht[-1] == ">"
        assert [type(c) for c in ht] == [str] * len("<b>x</b>")

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_length_counts_characters(self, impl, text):
        assert len(impl.htmltext(text)) == len(text)

    def test_truthiness(self, impl):
        assert not impl.htmltext("")
        assert impl.htmltext("<")

    def test_fstring_of_htmltext_is_plain_str(self, impl):
        result = f"{impl.htmltext('<b>')}"
        assert type(result) is str
        assert result == "<b>"

    @pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
    @pytest.mark.parametrize("text", ["", "<b>x</b>", *KIND_TEXTS])
    def test_pickle_round_trip_keeps_the_type(self, impl, protocol, text):
        ht = impl.htmltext(text)
        loaded = pickle.loads(pickle.dumps(ht, protocol))
        assert_html(loaded, impl, text)

    @pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
    def test_copy_keeps_the_type(self, impl, copier):
        assert_html(copier(impl.htmltext("<b>")), impl, "<b>")

    def test_pickle_inside_containers(self, impl):
        data = {"k": [impl.htmltext("<a>"), "<b>"]}
        loaded = pickle.loads(pickle.dumps(data))
        assert_html(loaded["k"][0], impl, "<a>")
        assert type(loaded["k"][1]) is str


# -- subclasses -----------------------------------------------------------------

_SUBCLASSES: dict[str, type] = {}


def fragment_class(impl) -> type:
    """A module-level subclass of this twin's htmltext (picklable by reference)."""
    if impl.name not in _SUBCLASSES:
        name = f"Fragment_{impl.name}"
        cls = type(name, (impl.htmltext,), {"__module__": __name__, "__qualname__": name})
        globals()[name] = _SUBCLASSES[impl.name] = cls
    return _SUBCLASSES[impl.name]


class TestSubclass:
    OPERATIONS = {
        "add": lambda f: f + "<",
        "radd": lambda f: "<" + f,
        "mul": lambda f: f * 2,
        "rmul": lambda f: 2 * f,
        "mod": lambda f: f % (),
        "mod-arg": lambda f: (f + "%s") % "<",
        "format": lambda f: f.format(),
        "format_map": lambda f: f.format_map({}),
        "join": lambda f: f.join(["<", "<"]),
        "upper": lambda f: f.upper(),
        "replace": lambda f: f.replace("i", "<"),
        "strip": lambda f: f.strip("<"),
        "center": lambda f: f.center(9),
    }

    @pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
    def test_operations_keep_the_subclass(self, impl, operation):
        cls = fragment_class(impl)
        assert type(operation(cls("<i>"))) is cls

    def test_split_and_partition_parts_keep_the_subclass(self, impl):
        cls = fragment_class(impl)
        assert {type(p) for p in cls("<a> <b>").split()} == {cls}
        assert {type(p) for p in cls("<a> <b>").partition(" ")} == {cls}

    @pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
    def test_pickle_keeps_the_subclass(self, impl, protocol):
        cls = fragment_class(impl)
        loaded = pickle.loads(pickle.dumps(cls("<i>"), protocol))
        assert type(loaded) is cls
        assert loaded == "<i>"

    @pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
    def test_copy_keeps_the_subclass(self, impl, copier):
        cls = fragment_class(impl)
        result = copier(cls("<i>"))
        assert type(result) is cls
        assert result == "<i>"


# -- TemplateIO -----------------------------------------------------------------


class TestTemplateIO:
    def test_html_mode_escapes_str_and_keeps_markup(self, impl):
        out = impl.TemplateIO(html=True)
        out += "<p>"
        out += impl.htmltext("<b>")
        out += Markup("<i>")
        out += HtmlObject("<u>")
        out += 5
        assert_html(out.getvalue(), impl, "&lt;p&gt;<b><i><u>5")

    def test_html_mode_positional_flag(self, impl):
        out = impl.TemplateIO(True)
        out += "<"
        assert_html(out.getvalue(), impl, "&lt;")

    @pytest.mark.parametrize("html_mode", [True, False])
    def test_none_is_skipped(self, impl, html_mode):
        out = impl.TemplateIO(html=html_mode)
        out += None
        out(None)
        out += "a"
        out += None
        assert str(out.getvalue()) == "a"

    def test_call_adds_like_iadd(self, impl):
        out = impl.TemplateIO(html=True)
        assert out("<") is None
        out(impl.htmltext("<br>"))
        assert_html(out.getvalue(), impl, "&lt;<br>")

    def test_iadd_returns_the_same_accumulator(self, impl):
        out = impl.TemplateIO(html=True)
        same = out
        out += "x"
        assert out is same

    def test_getvalue_is_cumulative(self, impl):
        out = impl.TemplateIO(html=True)
        out += "<a>"
        first = out.getvalue()
        out += "<b>"
        assert_html(first, impl, "&lt;a&gt;")
        assert_html(out.getvalue(), impl, "&lt;a&gt;&lt;b&gt;")

    def test_empty(self, impl):
        assert_html(impl.TemplateIO(html=True).getvalue(), impl, "")
        assert impl.TemplateIO(html=False).getvalue() == ""

    def test_plain_mode_does_not_escape(self, impl):
        out = impl.TemplateIO(html=False)
        out += "<p>"
        out += impl.htmltext("<b>")
        out += 5
        out(Plain())
        value = out.getvalue()
        assert type(value) is str
        assert value == "<p><b>5<plain & 'simple'>"

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind(self, impl, text):
        html_out, plain_out = impl.TemplateIO(html=True), impl.TemplateIO(html=False)
        for piece in ("<hr>", text, "é", text):
            html_out += piece
            plain_out += piece
        assert_html(html_out.getvalue(), impl, esc("<hr>" + text + "é" + text))
        assert plain_out.getvalue() == "<hr>" + text + "é" + text

    def test_str_is_the_accumulated_text(self, impl):
        out = impl.TemplateIO(html=True)
        out += "<"
        assert str(out) == "&lt;"
        assert type(str(out)) is str


# -- html_join, plain_join, format_field ---------------------------------------


class TestJoins:
    def test_html_join_escapes_and_skips_none(self, impl):
        parts = ["<p>", None, impl.htmltext("<b>"), Markup("<i>"), 3, None]
        assert_html(impl.html_join(parts), impl, "&lt;p&gt;<b><i>3")

    def test_plain_join_skips_none_without_escaping(self, impl):
        result = impl.plain_join(["<p>", None, impl.htmltext("<b>"), 3, None])
        assert type(result) is str
        assert result == "<p><b>3"

    @pytest.mark.parametrize("join", ["html_join", "plain_join"])
    def test_any_iterable_and_empty(self, impl, join):
        function = getattr(impl, join)
        assert str(function(x for x in ["a", None, "b"])) == "ab"
        assert str(function([])) == ""
        assert str(function([None, None])) == ""
        assert str(function(("a",))) == "a"

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    def test_every_str_kind(self, impl, text):
        assert_html(impl.html_join([text, None, text]), impl, esc(text) * 2)
        assert impl.plain_join([text, None, text]) == text * 2

    def test_zero_and_empty_string_are_not_skipped(self, impl):
        assert str(impl.html_join([0, "", False])) == "0False"
        assert impl.plain_join([0, "", False]) == "0False"


NO_CONVERSION, CONV_S, CONV_R, CONV_A = -1, ord("s"), ord("r"), ord("a")


class TestFormatField:
    @pytest.mark.parametrize(
        ("value", "conversion", "spec", "text"),
        [
            ("<", NO_CONVERSION, "", "&lt;"),
            ("<", NO_CONVERSION, ">3", "  &lt;"),  # spec first, then escaping
            ("<b>", NO_CONVERSION, ".2", "&lt;b"),
            (3.14159, NO_CONVERSION, ".2f", "3.14"),
            (255, NO_CONVERSION, "#x", "0xff"),
            (1234567, NO_CONVERSION, ",", "1,234,567"),
            (None, NO_CONVERSION, "", "None"),
            (Plain(), NO_CONVERSION, "", "&lt;plain &amp; &#x27;simple&#x27;&gt;"),
            ("<", CONV_S, "", "&lt;"),
            ("<", CONV_S, ">4", "   &lt;"),
            ("<é'", CONV_R, "", "&quot;&lt;é&#x27;&quot;"),
            ("<é", CONV_A, "", "&#x27;&lt;\\xe9&#x27;"),
            (Plain(), CONV_R, "", "Plain(&quot;&lt;&gt;&quot;)"),
            (Markup("<i>"), NO_CONVERSION, "", "<i>"),
            (HtmlObject("<i>"), NO_CONVERSION, ">5", "  <i>"),
            (HtmlObject("<u>"), NO_CONVERSION, "", "<u>"),
            (SafeString("<s>"), NO_CONVERSION, "", "<s>"),
            (Markup("<i>"), CONV_S, "", "&lt;i&gt;"),  # a conversion drops the trust
            (HtmlObject("<u>"), CONV_S, "", esc(str(HtmlObject("")))),
        ],
    )
    def test_cases(self, impl, value, conversion, spec, text):
        result = impl.format_field(value, conversion, spec)
        assert isinstance(result, str)
        assert str(result) == text

    def test_htmltext_keeps_markup_without_conversion(self, impl):
        ht = impl.htmltext("<b>")
        assert str(impl.format_field(ht, NO_CONVERSION, "")) == "<b>"
        assert str(impl.format_field(ht, NO_CONVERSION, "<5")) == "<b>  "
        assert str(impl.format_field(ht, CONV_S, "")) == "&lt;b&gt;"
        assert str(impl.format_field(ht, CONV_R, "")) == esc(repr(ht))

    @pytest.mark.parametrize("text", KIND_TEXTS, ids=KIND_IDS)
    @pytest.mark.parametrize("conversion", [NO_CONVERSION, CONV_S, CONV_R, CONV_A])
    def test_every_str_kind(self, impl, text, conversion):
        convert = {NO_CONVERSION: str, CONV_S: str, CONV_R: repr, CONV_A: ascii}[conversion]
        result = impl.format_field(text, conversion, "^40")
        assert str(result) == esc(format(convert(text), "^40"))

    def test_html_format_hook(self, impl):
        class Money:
            def __html_format__(self, spec: str) -> str:
                return f"<span>{spec or 'plain'}</span>"

            def __html__(self) -> str:
                return "<never used>"

        assert str(impl.format_field(Money(), NO_CONVERSION, ".2f")) == "<span>.2f</span>"
        assert str(impl.format_field(Money(), NO_CONVERSION, "")) == "<span>plain</span>"

    def test_bad_spec_raises_like_format(self, impl):
        with pytest.raises(ValueError):
            impl.format_field("x", NO_CONVERSION, "d")


def test_python_twin_is_the_reference_and_always_available():
    from ptl_wsgi.html import implementation

    assert implementation("python").name == "python"
    assert sys.modules["ptl_wsgi._htmltext_py"] is implementation("python").module


# -- issue 12: the twins follow str with containers, constructors and codes ----


class LyingTuple(tuple):
    """A tuple whose Python-level sequence protocol disagrees with its items.

    str's ``%`` reads a tuple's real items with the tuple C API, so these
    overrides must not be seen.
    """

    def __len__(self) -> int:
        return 1

    def __iter__(self):
        return iter(("lie",))

    def __getitem__(self, index):
        return "lie"


class LyingDict(dict):
    """A dict subclass: str's ``%`` looks keys up with ``__getitem__`` (and never ``keys``)."""

    def __getitem__(self, key):
        return f"<{key}>"

    def keys(self):
        return ["never"]


class TestStrIsTheReference:
    @pytest.mark.parametrize("fmt", ["%s", "%5s|%s", "%s|%s", "%s %d", "%r"])
    def test_tuple_subclass_uses_its_real_items(self, impl, fmt):
        arg = LyingTuple(("a<", 2))
        try:
            expected = fmt % arg
        except TypeError:
            with pytest.raises(TypeError):
                impl.htmltext(fmt) % arg
            return
        assert str(impl.htmltext(fmt) % arg) == esc(expected)

    def test_dict_subclass_mapping_uses_getitem(self, impl):
        arg = LyingDict(a=1)
        assert "%(a)s|%(b)r" % arg == "<a>|'<b>'"  # noqa: UP031
        assert str(impl.htmltext("%(a)s|%(b)r") % arg) == esc("<a>|'<b>'")

    def test_mapping_is_what_str_takes_as_one(self, impl):
        # deque has __getitem__ but no mapping slot: str does not take it as a
        # mapping, so unused arguments are an error.
        from collections import deque

        with pytest.raises(TypeError):
            "" % deque([1])  # noqa: F507, UP031
        with pytest.raises(TypeError):
            impl.htmltext("") % deque([1])
        with pytest.raises(TypeError):
            impl.htmltext("%(a)s") % deque([1])
        assert str(impl.htmltext("") % [1]) == "" % [1]  # noqa: F507

    def test_the_base_new_makes_any_str_class(self, impl):
        # As str.__new__ does: the class need not be one of the twin's.
        made = impl.module.HtmlTextBase.__new__(str, HtmlObject("<b>x</b>"))
        assert type(made) is str and made == "<b>x</b>"
        assert impl.module.HtmlTextBase.__new__(str) == ""

    @pytest.mark.parametrize("cls_name", ["base", "public", "subclass"])
    def test_every_constructor_takes_html_markup(self, impl, cls_name):
        base = impl.module.HtmlTextBase
        cls = {
            "base": base,
            "public": impl.htmltext,
            "subclass": type("Sub", (impl.htmltext,), {}),
        }[cls_name]
        obj = HtmlObject("<b>x</b>")
        assert str(cls(obj)) == "<b>x</b>"
        assert type(cls(obj)) is cls
        assert str(cls.__new__(cls, obj)) == "<b>x</b>"
        assert str(cls(value=obj)) == "<b>x</b>"
        assert str(cls()) == ""
        assert str(cls(Plain())) == str(Plain())  # trusted as given: htmltext(x) trusts x

    def test_str_new_still_builds_from_str(self, impl):
        # str.__new__ is str's constructor: it takes str(x) in both twins.
        assert str(str.__new__(impl.htmltext, "<i>")) == "<i>"
        assert type(str.__new__(impl.htmltext, "<i>")) is impl.htmltext

    @pytest.mark.parametrize("conversion", [115.0, -1.0, "s", None, True])
    def test_format_field_conversion_must_be_an_int(self, impl, conversion):
        with pytest.raises(TypeError, match="conversion"):
            impl.format_field("<", conversion, "")

    @pytest.mark.parametrize("conversion", [0, 1, 120, ord("S"), -2, 1 << 40, 1 << 70])
    def test_format_field_unknown_conversion_code(self, impl, conversion):
        with pytest.raises(ValueError, match="conversion"):
            impl.format_field("<", conversion, "")

    def test_template_io_state_is_the_same_in_both_twins(self, impl):
        out = impl.TemplateIO(html=True)
        out += "<"
        assert out._parts == ["&lt;"]
        names = {n for n in dir(out) if not n.startswith("__")}
        assert names == {"html", "_parts", "getvalue"}

    def test_template_io_parts_replaced_by_any_list_like(self, impl):
        class Recorder(list):
            def append(self, item):
                super().append(item.upper())

        out = impl.TemplateIO()
        out._parts = Recorder()
        out += "a"
        out("b")
        assert out.getvalue() == "AB"
        del out._parts
        with pytest.raises(AttributeError):
            out += "c"


class TestSpecsAddOnlyText:
    """A format spec can add characters (its fill): they are text, so escaped,
    unless the spec itself is markup; the markup being formatted stays as is."""

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ('"^9', "&quot;" * 3 + "<b>" + "&quot;" * 3),
            ("<<5", "<b>&lt;&lt;"),
            ("&>4", "&amp;<b>"),
            ("'>3", "<b>"),
            ("*^7", "**<b>**"),
            ('">2', "<b>"),
            (">5", "  <b>"),
            ('"<.0', ""),
            # (a precision that cuts the markup leaves text: "<b" would open a tag)
            ('"<6.2', "&lt;b" + "&quot;" * 4),
            ('">6.0', "&quot;" * 6),
            ("\x00>5", "\x00\x00<b>"),
        ],
    )
    @pytest.mark.parametrize("kind", ["htmltext", "html_object", "htmltext_subclass"])
    def test_markup_value_with_untrusted_spec(self, impl, kind, spec, expected):
        value = {
            "htmltext": impl.htmltext,
            "html_object": HtmlObject,
            "htmltext_subclass": type("Sub", (impl.htmltext,), {}),
        }[kind]("<b>")
        result = impl.format_field(value, NO_CONVERSION, spec)
        assert str(result) == expected
        assert str(impl.htmltext("{0:" + spec + "}").format(value)) == expected

    @pytest.mark.parametrize("spec_kind", ["htmltext", "markup"])
    def test_trusted_spec_adds_markup(self, impl, spec_kind):
        spec = {"htmltext": impl.htmltext, "markup": Markup}[spec_kind]('"^7')
        assert str(impl.format_field(impl.htmltext("<b>"), NO_CONVERSION, spec)) == '""<b>""'
        # An untrusted value is escaped whole, whatever the spec.
        escaped = "&quot;" * 3 + "&lt;" + "&quot;" * 3
        assert str(impl.format_field("<", NO_CONVERSION, spec)) == escaped

    def test_htmltext_format_method_gives_untrusted_str(self, impl):
        # format() and f-strings of htmltext are str's: a plain str, which is
        # text, so what the spec added (and the markup) is escaped on meeting
        # markup; the markup-aware formatting is format_field and .format.
        ht = impl.htmltext("<b>")
        result = format(ht, '"^7')
        assert type(result) is str
        assert result == '""<b>""'
        assert str(impl.htmltext("") + result) == esc(result)

    def test_bad_specs_raise_like_str(self, impl):
        for spec in ("d", "=5", "+", ",", "#"):
            with pytest.raises(ValueError):
                impl.format_field(impl.htmltext("x"), NO_CONVERSION, spec)
            with pytest.raises(ValueError):
                impl.format_field(HtmlObject("x"), NO_CONVERSION, spec)


class TestFormatConvertsBeforeEscaping:
    """.format/.format_map apply a field's conversion and spec to the raw
    value, then escape, as % and f-strings do: a spec never cuts an entity."""

    @pytest.mark.parametrize(
        ("fmt", "args", "expected"),
        [
            ("{0!s:.2}", ("<<<",), "&lt;&lt;"),
            ("{0!r:.2}", ("<<<",), "&#x27;&lt;"),
            ("{0!a:.3}", ("<é",), "&#x27;&lt;\\"),
            ("{!s:>4}", ("&",), "   &amp;"),
            ("{0!s:{1}}", ("<<<", ".1"), "&lt;"),
            ("{0!r}", ("<",), "&#x27;&lt;&#x27;"),
            ("{0[a]!s:.1}", ({"a": "<>"},), "&lt;"),
            ("{0.real!r:.1}", (5,), "5"),
        ],
    )
    def test_conversion_then_spec_then_escaping(self, impl, fmt, args, expected):
        assert str(impl.htmltext(fmt).format(*args)) == expected
        kwfmt = fmt.replace("{0", "{v").replace("{1", "{w").replace("{!", "{v!")
        mapping = dict(zip("vw", args, strict=False))
        assert str(impl.htmltext(kwfmt).format(**mapping)) == expected
        assert str(impl.htmltext(kwfmt).format_map(mapping)) == expected

    @pytest.mark.parametrize(
        ("fmt", "args"),
        [
            ("{0:{1}}", ("ab", '">5')),
            ("{:{}}", ("ab", ">4")),
            ("{!r:{}}", ("ab", ">6")),
            ("{0:{1}{2}}", ("<", "<", ">4")),
            ("{0:{1!s}}", ("ab", ">3")),
        ],
    )
    def test_nested_spec_fields_are_the_raw_values_as_with_str(self, impl, fmt, args):
        # The spec a nested field builds is formatted like str.format's; what
        # that spec then adds to the output is escaped like the value.
        assert str(impl.htmltext(fmt).format(*args)) == esc(fmt.format(*args))

    def test_nested_spec_around_markup(self, impl):
        result = impl.htmltext("{0:{1}>5}").format(impl.htmltext("<b>"), '"')
        assert str(result) == "&quot;&quot;<b>"

    @pytest.mark.parametrize(
        "fmt", ["{0!z}", "{0!}", "{", "}", "{0:{1:{2}}}", "{0!r:{5}}", "{}{0}", "{0:{"]
    )
    def test_errors_are_str_errors(self, impl, fmt):
        with pytest.raises(Exception) as expected:
            fmt.format("a", "b", "c")
        with pytest.raises(expected.type):
            impl.htmltext(fmt).format("a", "b", "c")


# -- field_output, percent_output: compiled templates' fast path --------------------


class Formats:
    def __format__(self, spec):
        return f"<format {spec}>"

    def __str__(self):
        return "<str>"


class TestOutputFields:
    @pytest.mark.parametrize("value", ["<a>", 5, 2.5, -0.0, 10**30])
    def test_simple_values_are_returned_as_they_are(self, impl, value):
        assert impl.field_output(value) is value
        assert impl.percent_output(value, impl.htmltext("<td>%s</td>")) is value
        assert impl.percent_output(value, None) is value

    def test_htmltext_is_returned_as_it_is(self, impl):
        ht = impl.htmltext("<b>")
        assert impl.field_output(ht) is ht
        assert impl.percent_output(ht, None) is ht

    def test_other_values_are_formatted_now(self, impl):
        for result in (impl.field_output(Formats()), impl.field_output(None)):
            assert type(result) is impl.htmltext
        assert impl.field_output(Formats()) == "&lt;format &gt;"  # format(), as f-strings
        assert impl.percent_output(Formats(), None) == "&lt;str&gt;"  # str(), as %s
        assert impl.field_output(None) == "None" == impl.percent_output(None, None)
        assert impl.field_output(True) == "True"  # bool is not exactly int
        assert impl.percent_output(Markup("<i>"), None) == "<i>"

    def test_a_tuple_is_the_formats_values(self, impl):
        fmt = impl.htmltext("<td>%s</td>")
        assert impl.percent_output(("<x>",), fmt) == "<x>"  # its one item, raw for the join
        assert impl.percent_output((Formats(),), fmt) == "&lt;str&gt;"
        assert impl.percent_output(("<x>", 1), None) == "(&#x27;&lt;x&gt;&#x27;, 1)"
        for values in ((), (1, 2)):
            with pytest.raises(TypeError) as raised:
                impl.percent_output(values, fmt)
            with pytest.raises(TypeError) as expected:
                "<td>%s</td>" % values  # noqa: UP031
            assert str(raised.value) == str(expected.value)


def test_a_twin_built_from_two_threads_at_once_is_built_once() -> None:
    # A fresh process (this one has built both twins already); the build is slowed
    # so that both threads are inside it together.
    code = """
import threading, time
from ptl_wsgi import html
build = html._build
def slow_build(twin):
    built = build(twin)
    time.sleep(0.05)
    return built
html._build = slow_build
results = []
threads = [threading.Thread(target=lambda: results.append(html.implementation("python")))
           for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
first = results[0]
assert all(r is first for r in results), "two classes built"
assert type(first.htmlescape("<")) is first.htmltext, "the twin returns another class"
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "PTL_WSGI_PURE_PYTHON"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "ok", result.stderr
