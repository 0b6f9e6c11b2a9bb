"""Markup formatted at run time is escaped for the context each value lands in.

``htmltext % args``, ``.format()`` and ``.format_map()`` (and so every translation
``ptl_wsgi.i18n`` returns for a markup msgid) parse their trusted format string
with the context engine, from text, as a compiled ``[html]`` template parses the
same literal: a value in a URL, a script, a style or an unquoted attribute gets
that context's escaper, not HTML escaping alone (issue #26, finding 1).

Both twins (the ``impl`` fixture); the differential property at the end holds
the run time to the compiler's output for the same literal.
"""

from __future__ import annotations

import gettext
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup
from ptl_helpers import compiled

from ptl_wsgi import i18n
from ptl_wsgi.beyond_escaping import UNSAFE_URL

SCRIPT_URL = "javascript:alert(1)"
ATTRIBUTES = "x autofocus onfocus=alert(1)"


class _Tags(HTMLParser):
    """The start tags of some markup, with their attributes as a browser decodes them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def tags(markup: object) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Tags()
    parser.feed(str(markup))
    parser.close()
    return parser.tags


def attribute(markup: object, name: str) -> str | None:
    """The decoded value of the one attribute *name* in *markup*."""
    found = [value for _, attrs in tags(markup) for key, value in attrs if key == name]
    assert len(found) == 1, (markup, found)
    return found[0]


# -- hostile values: what HTML escaping alone let through ------------------------------------


class TestPercent:
    def test_a_script_url_is_not_kept_in_href(self, impl):
        result = impl.htmltext('<a href="%s">x</a>') % SCRIPT_URL
        assert type(result) is impl.htmltext
        assert "javascript" not in str(result)
        assert attribute(result, "href") == UNSAFE_URL

    def test_a_script_url_in_a_tuple_and_in_a_mapping(self, impl):
        result = impl.htmltext('<a href="%s" title="%s">x</a>') % (SCRIPT_URL, "<t>")
        assert "javascript" not in str(result)
        assert attribute(result, "title") == "<t>"
        result = impl.htmltext('<a href="%(u)s">%(t)s</a>') % {"u": SCRIPT_URL, "t": "<b>"}
        assert str(result) == f'<a href="{UNSAFE_URL}">&lt;b&gt;</a>'

    def test_an_unquoted_value_cannot_add_attributes(self, impl):
        result = impl.htmltext("<input name=q value=%s>") % ATTRIBUTES
        assert tags(result) == [("input", [("name", "q"), ("value", ATTRIBUTES)])]

    def test_an_onclick_string_cannot_be_left(self, impl):
        result = impl.htmltext("<button onclick=\"go('%s')\">go</button>") % "');alert(1);('"
        handler = attribute(result, "onclick")
        assert handler is not None and handler.count("'") == 2, handler

    def test_a_script_string_cannot_be_left(self, impl):
        result = impl.htmltext('<script>var s = "%s";</script>') % '</script><script>alert(1)//"'
        assert str(result).count("</script>") == 1
        assert '"' not in str(result)[len('<script>var s = "') : -len('";</script>')]
        # JS escapes, not HTML ones (a script's text is not decoded: "&lt;" would be data).
        assert "&lt;" not in str(result) and "\\x3c" in str(result)

    def test_a_script_value_is_a_json_literal(self, impl):
        result = impl.htmltext("<script>var n = %s;</script>") % "1; alert(1)"
        assert str(result) == '<script>var n =  "1; alert(1)" ;</script>'

    def test_a_style_value_is_filtered(self, impl):
        result = impl.htmltext('<p style="color: %s">x</p>') % "red; background: url(x)"
        assert "url" not in str(result)

    def test_markup_keeps_its_markup_but_not_its_script_url(self, impl):
        fmt = impl.htmltext('<a href="%s">%s</a>')
        assert str(fmt % (impl.htmltext("/a?b=1&amp;c=2"), Markup("<i>x</i>"))) == (
            '<a href="/a?b=1&amp;c=2"><i>x</i></a>'
        )
        assert "javascript" not in str(fmt % (impl.htmltext(SCRIPT_URL), "x"))

    def test_conversions_are_applied_before_the_escaper(self, impl):
        result = impl.htmltext('<a href="/q?x=%r&amp;y=%5s">x</a>') % ("a b", "é")
        assert str(result) == '<a href="/q?x=%27a%20b%27&amp;y=%20%20%20%20%C3%A9">x</a>'

    def test_numbers_are_digits(self, impl):
        assert str(impl.htmltext("<h%d>x</h%d>") % (2, 2)) == "<h2>x</h2>"
        assert str(impl.htmltext('<a href="/item/%d">x</a>') % -5) == '<a href="/item/-5">x</a>'
        assert str(impl.htmltext('<a href="/item/%s">x</a>') % 5) == '<a href="/item/5">x</a>'
        assert str(impl.htmltext("<script>f(%s)</script>") % -5) == "<script>f( -5 )</script>"

    def test_percent_percent_is_literal(self, impl):
        result = impl.htmltext('<p style="width: %d%%; color: %s">') % (50, "red;x:y")
        assert str(result) == '<p style="width: 50%; color: ZptlZ">'


class TestFormat:
    def test_format_positional_and_keyword(self, impl):
        result = impl.htmltext('<a href="{}">{label}</a>').format(SCRIPT_URL, label="<b>")
        assert str(result) == f'<a href="{UNSAFE_URL}">&lt;b&gt;</a>'
        result = impl.htmltext("<input value={0}>{0}").format(ATTRIBUTES)
        assert tags(result) == [("input", [("value", ATTRIBUTES)])]

    def test_format_map(self, impl):
        result = impl.htmltext('<a href="{u}" onclick="f(\'{t}\')">x</a>').format_map(
            {"u": SCRIPT_URL, "t": "');alert(1);('"}
        )
        assert "javascript" not in str(result)
        handler = attribute(result, "onclick")
        assert handler is not None and handler.count("'") == 2, handler

    def test_attribute_index_conversion_and_spec_fields(self, impl):
        class Site:
            url = SCRIPT_URL
            names = ["a b"]

        site = Site()
        fmt = impl.htmltext('<a href="/u?n={0.names[0]}&amp;r={0.url!r:>22}">x</a>')
        assert str(fmt.format(site)) == (
            '<a href="/u?n=a%20b&amp;r=%20%27javascript%3Aalert%281%29%27">x</a>'
        )
        assert str(impl.htmltext('<a href="{u}"></a>').format(u=SCRIPT_URL)) == (
            f'<a href="{UNSAFE_URL}"></a>'
        )

    def test_braces_are_literal(self, impl):
        result = impl.htmltext("<script>var o = {{a: {}}};</script>").format("x")
        assert str(result) == '<script>var o = {a:  "x" };</script>'


class TestRefused:
    @pytest.mark.parametrize(
        "call",
        [
            lambda h: h('<a href="%s') % "x",
            lambda h: h('<a href="{}').format("x"),
            lambda h: h('<a href="{u}').format_map({"u": "x"}),
            lambda h: h("<script>var a = %s;") % 1,
        ],
    )
    def test_a_format_that_does_not_end_in_text(self, impl, call):
        with pytest.raises(ValueError, match="not in text"):
            call(impl.htmltext)

    @pytest.mark.parametrize(
        "call",
        [lambda h: h("<%s>") % "script", lambda h: h("<a on{}=x>").format("click")],
    )
    def test_a_value_where_none_may_go(self, impl, call):
        with pytest.raises(ValueError, match="no value may go"):
            call(impl.htmltext)

    def test_str_errors_come_first(self, impl):
        with pytest.raises(TypeError, match="not enough arguments"):
            impl.htmltext('<a href="%s%s') % "x"
        with pytest.raises(ValueError, match=r"incomplete format|stray %"):  # (3.15 words it so)
            impl.htmltext('<a href="%s">%') % "x"
        with pytest.raises(IndexError):
            impl.htmltext('<a href="{}{}').format("x")
        with pytest.raises(KeyError):
            impl.htmltext('<a href="{u}').format_map({})
        with pytest.raises(ValueError, match="Single '}'"):
            impl.htmltext('<a href="{}}').format("x")

    def test_no_value_is_formatted_before_a_refusal(self, impl):
        # (Markup refuses a spec: its error would come first if it were formatted.)
        with pytest.raises(ValueError, match="not in text"):
            impl.htmltext('<b>{:>5}</b><a href="{}').format(Markup("<i>"), "x")
        with pytest.raises(ValueError, match="not in text"):
            impl.htmltext('<b>%5s</b><a href="%s') % (Markup("<i>"), "x")


# -- i18n: translations of markup msgids are formatted the same way ---------------------------

I18N_TEMPLATES = """\
from ptl_wsgi.html import htmltext
from ptl_wsgi.i18n import _, gettext_lazy, ngettext, npgettext, pgettext

LAZY = gettext_lazy(htmltext('<a href="%s">site</a>'))

def render [html] (url, n):
    _('Visit <a href="%s">their site</a>') % url
    ngettext('<a href="%(u)s">one</a>', '<a href="%(u)s">%(n)d</a>', n) % {"u": url, "n": n}
    pgettext("link", '<a href="{}">x</a>').format(url)
    npgettext("link", '<a href="{u}">1</a>', '<a href="{u}">n</a>', n).format_map({"u": url})
    LAZY % url
"""


def test_i18n_results_are_formatted_contextually() -> None:
    i18n.install(gettext.NullTranslations())
    module = compiled(I18N_TEMPLATES, "runtime_formatting_i18n")
    result = str(module.render(SCRIPT_URL, 2))
    assert "javascript" not in result
    assert result.count(UNSAFE_URL) == 5
    safe = str(module.render("/about", 2))
    assert safe.count('href="/about"') == 5


def test_lazy_text_percent_is_contextual() -> None:
    from ptl_wsgi.html import htmltext

    lazy: Any = i18n.gettext_lazy(htmltext("<input value=%s>"))
    assert tags(lazy % ATTRIBUTES) == [("input", [("value", ATTRIBUTES)])]


# -- compiled templates: the compiler's plan, not the run time's ----------------------------

SPLIT_TAG = """\
def item [html] (n, url):
    '<a href="/item/%d' % n
    '?next=%(u)s">x</a>' % {"u": url}
    '<b title="{}'.format(url)
    '">y</b>'
"""

OPTED_OUT = """\
__ptl_contextual__ = False

def link [html] (url):
    '<a href="%s">x</a>' % url
    '<a href="{}">x</a>'.format(url)
    '<a href="{u}">x</a>'.format_map({"u": url})
"""


def test_a_template_may_format_part_of_a_tag_in_an_output_statement() -> None:
    # Its literal formats are planned where they are output (and their values escaped
    # for it) by the compiler: they do not have to end in text on their own.
    module = compiled(SPLIT_TAG, "runtime_formatting_split")
    assert str(module.item(7, "/a b")) == (
        '<a href="/item/7?next=%2Fa%20b">x</a><b title="/a b">y</b>'
    )


def test_a_template_that_opts_out_keeps_html_escaping() -> None:
    module = compiled(OPTED_OUT, "runtime_formatting_opted_out")
    assert str(module.link(SCRIPT_URL)).count(f'href="{SCRIPT_URL}"') == 3


# -- the differential property: run time == compiled, for the same literal -------------------

# (before, after) a hole, in many contexts; each pair is balanced, so any sequence is too.
CONTEXTS = [
    ("<p>", "</p>"),
    ('<b title="', '">t</b>'),
    ("<b title='", "'>t</b>"),
    ("<input value=", ">"),
    ('<a href="', '">a</a>'),
    ('<a href="/p/', '">a</a>'),
    ('<a href="/s?q=', '&amp;r=1">a</a>'),
    ('<img srcset="', '">'),
    ("<button onclick=\"f('", "')\">b</button>"),
    ('<button onclick="f(', ')">b</button>'),
    ('<script>var s = "', '";</script>'),
    ("<script>var v = ", ";</script>"),
    ("<script>var t = `", "`;</script>"),
    ('<p style="color: ', '">c</p>'),
    ("<style>p { color: ", " }</style>"),
    ("<title>", "</title>"),
    ("<textarea>", "</textarea>"),
    ("<!-- ", " -->"),
    ("<input ", ">"),
    ("<h", ">h</h1>"),  # a name: only a number may go here
    ("50%% <i>", "</i>"),
]
# Where no value may go: both refuse (a compile error, a ValueError at run time).
REFUSING = [("<a on", "=x>a</a>"), ('<a href="javascript:', '">a</a>'), ("<!DOCTYPE ", ">")]
contexts = st.one_of(st.sampled_from(CONTEXTS), st.sampled_from(CONTEXTS),
                     st.sampled_from(CONTEXTS), st.sampled_from(REFUSING))  # fmt: skip
HOSTILE = [
    SCRIPT_URL,
    " JavaScript:alert(1)",
    "/a b?c=d&e='f'",
    'x" onmouseover="alert(1)',
    "x' autofocus onfocus='alert(1)",
    ATTRIBUTES,
    "</script><script>alert(1)</script>",
    "');alert(1);//",
    "red; background: url(javascript:alert(1))",
    "--><b>",
    "${alert(1)}`",
    "",
    "é\u2028ü",
]
hostile_values = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.sampled_from(list("<>&\"'`/\\:;=() -aJ")), max_size=8),
    st.sampled_from(HOSTILE).map(Markup),
    st.integers(-300, 300),
    st.sampled_from([None, True, 0.5, -2.25, float("inf")]),
)
PERCENT_FIELDS = ["s", "s", "r", "d", "5s", ".3s", "05d", "a"]
BRACE_FIELDS = ["", "", "!r", ":>6", "!s:.3", ":^7", "!a"]


@st.composite
def percent_cases(draw: Any) -> tuple[str, str, Any]:
    """A %-format, the template that formats it, and its values (a tuple or a dict)."""
    holes = draw(st.lists(st.tuples(contexts, st.sampled_from(PERCENT_FIELDS)),
                          min_size=1, max_size=3))  # fmt: skip
    keyed = draw(st.booleans())
    fmt = ""
    for index, ((before, after), field) in enumerate(holes):
        fmt += before + ("%" + (f"(k{index})" if keyed else "") + field) + after
    values = [draw(hostile_values) for _ in holes]
    names = [f"a{i}" for i in range(len(holes))]
    if keyed:
        right = "{" + ", ".join(f"'k{i}': {n}" for i, n in enumerate(names)) + "}"
        arg: Any = {f"k{i}": v for i, v in enumerate(values)}
    else:
        right = "(" + "".join(f"{n}, " for n in names) + ")"
        arg = tuple(values)
    source = f"def render [html] ({', '.join(names)}):\n    {fmt!r} % {right}\n"
    return fmt, source, arg


@st.composite
def brace_cases(draw: Any) -> tuple[str, str, str, Any]:
    """A str.format string with positional fields, the same with named fields
    (``a0``...), the f-string template with the same fields, and the values."""
    holes = draw(st.lists(st.tuples(contexts, st.sampled_from(BRACE_FIELDS)),
                          min_size=1, max_size=3))  # fmt: skip
    fmt = named = ""
    for index, ((before, after), field) in enumerate(holes):
        before, after = before.replace("%%", "%"), after.replace("%%", "%")
        literal = (before + "\0" + after).replace("{", "{{").replace("}", "}}")
        fmt += literal.replace("\0", "{" + field + "}")
        named += literal.replace("\0", "{a" + str(index) + field + "}")
    values = tuple(draw(hostile_values) for _ in holes)
    names = ", ".join(f"a{i}" for i in range(len(holes)))
    source = f"def render [html] ({names}):\n    f{named!r}\n"
    return fmt, named, source, values


_compiled: dict[str, Any] = {}


def compiled_outcome(source: str, args: tuple[Any, ...]) -> tuple[str, Any]:
    """What the compiled template gives: ("ok", text), ("refused", None) or ("error", type)."""
    if source not in _compiled:
        try:
            _compiled[source] = compiled(source, "runtime_formatting_case").render
        except SyntaxError:
            _compiled[source] = None
    render = _compiled[source]
    if render is None:
        return "refused", None
    try:
        return "ok", str(render(*args))
    except Exception as exc:
        return "error", type(exc)


def runtime_outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", str(call())
    except (TypeError, ValueError, OverflowError) as exc:
        if type(exc).__name__ == "ContextError":
            return "refused", None
        return "error", type(exc)


@settings(max_examples=300)
@given(percent_cases())
def test_percent_at_run_time_is_the_compiled_output(impl, case):
    fmt, source, arg = case
    args = tuple(arg.values()) if isinstance(arg, dict) else arg
    expected = compiled_outcome(source, args)
    assert runtime_outcome(lambda: impl.htmltext(fmt) % arg) == expected, source


@settings(max_examples=300)
@given(brace_cases())
def test_format_at_run_time_is_the_compiled_output(impl, case):
    fmt, named, source, args = case
    expected = compiled_outcome(source, args)
    assert runtime_outcome(lambda: impl.htmltext(fmt).format(*args)) == expected, source
    mapping = {f"a{i}": value for i, value in enumerate(args)}
    assert runtime_outcome(lambda: impl.htmltext(named).format(**mapping)) == expected, source
    assert runtime_outcome(lambda: impl.htmltext(named).format_map(mapping)) == expected, source
