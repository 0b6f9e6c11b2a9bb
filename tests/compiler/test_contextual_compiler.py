"""Contextual escaping in the compiler: each value gets the escaper of where it lands.

Hostile values in every context, every style of writing output, control flow,
the compile errors with their messages and locations, the opt-outs, and the
promise that templates whose values all land in text compile as before.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptl_wsgi import compiler
from ptl_wsgi.compiler import compile_ptl, context_report, parse_ptl, switches
from ptl_wsgi.html import htmltext

CASES = Path(__file__).parents[1] / "ptl_cases"
EVIL_URL = "javascript:alert(1)"
EVIL = "</script><img src=x onerror=alert(1)>\"'`${x}\u2028"


def load(source: str, split: bool = True) -> types.ModuleType:
    before, switches.SPLIT_OUTPUT = switches.SPLIT_OUTPUT, split
    try:
        code = compile_ptl(textwrap.dedent(source), "ctx.ptl")
    finally:
        switches.SPLIT_OUTPUT = before
    module = types.ModuleType("ctx_test_module")
    exec(code, module.__dict__)
    return module


def syntax_error(source: str) -> SyntaxError:
    with pytest.raises(SyntaxError) as info:
        compile_ptl(textwrap.dedent(source), "bad.ptl")
    return info.value


def location(exc: SyntaxError) -> tuple[Any, ...]:
    return (exc.filename, exc.lineno, exc.offset, exc.end_lineno, exc.end_offset)


# -- every context, every style ---------------------------------------------------------

STYLES = {
    "fstring": "f'{before}{{v}}{after}'",
    "percent": "'{before}%s{after}' % v",
    "percent_tuple": "'{before}%s{after}' % (v,)",
    "format": "'{before}{{}}{after}'.format(v)",
    "statements": "'{before}'\n    v\n    '{after}'",
    "assigned": "x = f'{before}{{v}}{after}'\n    x",
    "assigned_percent": "x = '{before}%s{after}' % (v,)\n    x",
    "assigned_format": "x = '{before}{{0}}{after}'.format(v)\n    x",
}

# (markup before, after, hostile value, expected output)
CONTEXTS = [
    ("<p>", "</p>", "<b>", "<p>&lt;b&gt;</p>"),
    ("<title>", "</title>", "</title>", "<title>&lt;/title&gt;</title>"),
    ('<a href="', '">x</a>', EVIL_URL, '<a href="about:invalid#ptl-unsafe-url">x</a>'),
    ('<a href="/s?q=', '">x</a>', "a&b c", '<a href="/s?q=a%26b%20c">x</a>'),
    ("<img src=", ">", "x onerror=alert(1)", "<img src=x%20onerror&#61;alert%281%29>"),
    ("<input value=", ">", "x onfocus=alert(1)", "<input value=x&#32;onfocus&#61;alert(1)>"),
    ("<input value=", ">", "", '<input value="">'),
    (
        "<script>var s = '",
        "';</script>",
        "';alert(1)//",
        "<script>var s = '\\x27;alert(1)\\x2f\\x2f';</script>",
    ),
    (
        '<script>var s = "',
        '";</script>',
        '</script>"',
        '<script>var s = "\\x3c\\x2fscript\\x3e\\x22";</script>',
    ),
    (
        "<script>var s = `",
        "`;</script>",
        "${alert(1)}`",
        "<script>var s = `\\x24{alert(1)}\\x60`;</script>",
    ),
    (
        "<script>var d = ",
        ";</script>",
        "</script>",
        '<script>var d =  "\\u003c\\u002fscript\\u003e" ;</script>',
    ),
    ('<button onclick="f(', ')">', "1);alert(2", '<button onclick="f( &quot;1);alert(2&quot; )">'),
    ('<p style="color: ', '">', "red;background:url(x)", '<p style="color: ZptlZ">'),
    ("<style>", "</style>", "red}</style><script>", "<style>ZptlZ</style>"),
    ("<!-- ", " -->", "--><script>", "<!-- &#45;&#45;&#62;&#60;script&#62; -->"),
    (
        '<iframe srcdoc="',
        '"></iframe>',
        "<script>x</script>",
        '<iframe srcdoc="&amp;lt;script&amp;gt;x&amp;lt;/script&amp;gt;"></iframe>',
    ),
    ('<img srcset="', '">', "javascript:x 1x", '<img srcset="about:invalid#ptl-unsafe-url">'),
]


@pytest.mark.parametrize("split", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("style", list(STYLES))
@pytest.mark.parametrize(("before", "after", "value", "expected"), CONTEXTS)
def test_a_hostile_value_in_every_context_and_style(
    style: str, split: bool, before: str, after: str, value: str, expected: str
) -> None:
    body = STYLES[style].format(before=before.replace("'", "\\'"), after=after.replace("'", "\\'"))
    if style == "statements" and before == "<input value=" and value == "":
        pytest.skip("an empty value at the start of an unquoted value")
    module = load(f"def f [html] (v):\n    {body}\n", split)
    assert str(module.f(value)) == expected


def test_markup_is_trusted_as_html_but_a_urls_scheme_is_checked() -> None:
    module = load(
        """
        def f [html] (v):
            f'<a href="{v}" title="{v}" onclick="{v}" style="{v}">{v}</a><script>{v}</script>'
        """
    )
    value = htmltext("javascript:go()")
    # Kept in text and a plain attribute; where a URL starts its scheme is checked, markup
    # or not; in a script or a style markup (HTML) is a value, never code.
    assert module.f(value) == (
        '<a href="about:invalid#ptl-unsafe-url" title="javascript:go()" '
        'onclick=" &quot;javascript:go()&quot; " style="ZptlZ">javascript:go()</a>'
        '<script> "javascript:go()" </script>'
    )


def test_values_are_formatted_before_they_are_escaped() -> None:
    module = load(
        """
        def f [html] (v, n):
            f'<script>var a = "{v!r}", b = {n:>4}, c = "{n:x}";</script>'
            '<a href="/x?p=%s">' % (v,)
            '</a>'
        """
    )
    assert module.f("'", 255) == (
        '<script>var a = "\\x22\\x27\\x22", b =  " 255" , c = "ff";</script><a href="/x?p=%27"></a>'
    )


def test_a_lone_percent_value_may_be_a_tuple_at_run_time() -> None:
    module = load("def f [html] (v):\n    '<script>var s = \"%s\";</script>' % v\n")
    assert module.f(("</script>",)) == '<script>var s = "\\x3c\\x2fscript\\x3e";</script>'
    with pytest.raises(TypeError):
        module.f(("a", "b"))


def test_characters_html_does_not_call_whitespace_are_refused_in_a_tag() -> None:
    # "\v" and U+00A0 are part of the attribute name and value to a browser, spaces to a
    # reader (they crashed the compiler with an AttributeError when taken for whitespace).
    with pytest.raises(SyntaxError, match="not an HTML space") as raised:
        load(
            """
            def page [html] (x):
                "<p \v data-a=1\xa0"
                x
                ">"
            """
        )
    assert raised.value.lineno == 3


def test_numbers_may_complete_a_tag_name() -> None:
    module = load("def f [html] (level, title):\n    '<h%d>%s</h%d>' % (level, title, level)\n")
    assert module.f(2, "<x>") == "<h2>&lt;x&gt;</h2>"


def test_comprehension_output_in_a_script() -> None:
    module = load(
        """
        def f [html] (items):
            '<script>var a = ['
            [item for item in items]
            '];</script>'
        """
    )
    expected = '<script>var a = [ "\\u003c\\u002fscript\\u003e"  1 ];</script>'
    assert module.f(["</script>", 1]) == expected


def test_the_context_is_followed_across_statements_and_blocks() -> None:
    module = load(
        """
        def f [html] (url, items, label):
            '<a href="'
            if url:
                url
            else:
                '/default'
            '" title="'
            label
            '">'
            for item in items:
                '<li><a href="/item?id=%s">%s</a></li>' % (item, item)
            with open(__file__ if False else '/dev/null'):
                # (A with body may only stop where it started: the script in one statement.)
                f'<script>var x = {label};</script>'
        """
    )
    assert module.f(EVIL_URL, ["a b"], "<l>") == (
        '<a href="about:invalid#ptl-unsafe-url" title="&lt;l&gt;">'
        '<li><a href="/item?id=a%20b">a b</a></li>'
        '<script>var x =  "\\u003cl\\u003e" ;</script>'
    )


def test_a_nested_template_starts_in_text_and_a_call_is_balanced() -> None:
    module = load(
        """
        def outer [html] (v):
            '<script>var x = '
            def inner [html] (w):
                '<a href="%s">' % w
                '</a>'
            inner(v)
            ';</script>'
            inner(v)
        """
    )
    # In the script the nested template's markup is a value (a JSON string), never code.
    assert module.outer("javascript:x") == (
        '<script>var x =  "\\u003ca href=\\"about:invalid#ptl-unsafe-url\\"\\u003e'
        '\\u003c\\u002fa\\u003e" ;</script>'
        '<a href="about:invalid#ptl-unsafe-url"></a>'
    )


def test_async_templates_are_followed_too() -> None:
    module = load(
        """
        async def f [html] (items):
            async for item in items:
                '<a href="%s">' % item
                '</a>'
        """
    )

    async def items() -> Any:
        yield "javascript:x"

    import asyncio

    assert asyncio.run(module.f(items())) == '<a href="about:invalid#ptl-unsafe-url"></a>'


def test_try_match_and_loops_that_stay_balanced() -> None:
    module = load(
        """
        def f [html] (v, kind):
            try:
                '<a href="%s">' % v
            except ValueError:
                '<a>'
            match kind:
                case 1:
                    '<b>'
                case _:
                    '<i>'
            while False:
                '<p>'
                break
        """
    )
    assert module.f(EVIL_URL, 1) == '<a href="about:invalid#ptl-unsafe-url"><b>'


# -- compile errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "message", "where"),
    [
        (
            "def f [html] (v):\n    '<%s>' % v\n",
            "no value may go here (text, in '<'): a value here would be part of the tag '<'; "
            "write the name in the literal, or output a whole tag or attribute as markup "
            "(htmltext)",
            ("bad.ptl", 2, 14, 2, 15),
        ),
        (
            "def f [html] (v):\n    f'<a data-{v}=\"1\">'\n",
            "no value may go here (a tag, between attributes, in 'data-'): a value here would be "
            "part of the attribute name 'data-'; write the name in the literal, or output a whole "
            "tag or attribute as markup (htmltext)",
            {False: ("bad.ptl", 2, 5, 2, 24), True: ("bad.ptl", 2, 15, 2, 18)},
        ),
        (
            "def f [html] (v):\n    '<!DOCTYPE '\n    v\n    '>'\n",
            "no value may go here (<!...> (a doctype or bogus comment)): no value may go inside "
            "<!...> or <?...> (a doctype or bogus comment); write the name in the literal, or "
            "output a whole tag or attribute as markup (htmltext)",
            ("bad.ptl", 3, 5, 3, 6),
        ),
        (
            "def f [html] (v):\n    if v:\n        '<a href=\"'\n    else:\n        '<b>'\n",
            "the paths through this 'if' end in different HTML contexts: the branch at line 2 ends "
            "in a URL (start) in a double-quoted URL attribute value, the 'else' branch in text; "
            "make each end in the same context (close in each what it opens)",
            ("bad.ptl", 2, 5, 2, 7),
        ),
        (
            "def f [html] (v):\n    if v:\n        '<script>'\n    '</script>'\n",
            "the paths through this 'if' end in different HTML contexts: the branch at line 2 ends "
            "in a JavaScript expression in <script>, the way around it (no 'else') in text; make "
            "each end in the same context (close in each what it opens)",
            ("bad.ptl", 2, 5, 2, 7),
        ),
        (
            "def f [html] (v):\n    if v:\n        '<b>'\n    elif v == 2:\n"
            "        '<a href=\"'\n    else:\n        '<i>'\n",
            "the paths through this 'elif' end in different HTML contexts: the branch at line 4 "
            "ends in a URL (start) in a double-quoted URL attribute value, the 'else' branch in "
            "text; make each end in the same context (close in each what it opens)",
            ("bad.ptl", 4, 5, 4, 9),
        ),
        (
            "def f [html] (items):\n    while items:\n        '<p title=\"'\n",
            "the body of this 'while' loop starts in text but ends in a double-quoted attribute "
            "value; a loop body must end in the context where it starts (close in each iteration "
            "what it opens)",
            ("bad.ptl", 2, 5, 2, 10),
        ),
        (
            "def f [html] (items):\n    for i in items:\n        '<p title=\"'\n",
            "the body of this 'for' loop starts in text but ends in a double-quoted attribute "
            "value; a loop body must end in the context where it starts (close in each iteration "
            "what it opens)",
            ("bad.ptl", 2, 5, 2, 8),
        ),
        (
            "def f [html] (v):\n    '<script>var x = '\n    v\n",
            "template 'f' ends in a JavaScript expression in <script>, not in text: close what it "
            "opens (tag, attribute, script, style or comment) before it ends, or opt out of "
            "contextual escaping with __ptl_contextual__ = False",
            ("bad.ptl", 1, 1, 1, 18),
        ),
        (
            "def f [html] (v):\n    '<!-- '\n    if v:\n        return\n    ' -->'\n",
            "template 'f' ends in an HTML comment, not in text: close what it opens (tag, "
            "attribute, script, style or comment) before it ends, or opt out of contextual "
            "escaping with __ptl_contextual__ = False",
            ("bad.ptl", 4, 9, 4, 15),
        ),
        (
            "def f [html] (items):\n    for i in items:\n        '<b title=\"'\n        break\n",
            "'break' in a double-quoted attribute value, but the loop's body starts in text; "
            "close what this iteration opened before the 'break'",
            ("bad.ptl", 4, 9, 4, 14),
        ),
        (
            "def f [html] (v):\n    match v:\n        case 1:\n            '<style>'\n"
            "        case _:\n            '<p>'\n",
            "the paths through this 'match' end in different HTML contexts: the 'case' at line 3 "
            "ends in CSS in <style>, the 'case' at line 5 in text; make each end in the same "
            "context (close in each what it opens)",
            ("bad.ptl", 2, 5, 2, 10),
        ),
        (
            "def f [html] (v):\n    try:\n        '<a href=\"'\n"
            "    except KeyError:\n        pass\n",
            "the paths through this 'try' end in different HTML contexts: the 'try' block ends in "
            "a URL (start) in a double-quoted URL attribute value, the 'except' at line 4 in text; "
            "make each end in the same context (close in each what it opens)",
            ("bad.ptl", 2, 5, 2, 8),
        ),
        (
            "def f [html] (v):\n    x = '<a href=\"%(u)s\">' % v\n",
            "cannot tell which value of this '%' format lands where HTML needs more than HTML "
            "escaping; give the values as a tuple of %s fields, or use an f-string",
            ("bad.ptl", 2, 9, 2, 31),
        ),
        (
            "def f [html] (v):\n    x = '<a href=\"{0.u}\">'.format(v)\n",
            "a field of this .format() lands where HTML needs more than HTML escaping, and its "
            "values cannot be told apart (an attribute or index field, or one value in two "
            "contexts); use an f-string",
            ("bad.ptl", 2, 9, 2, 37),
        ),
    ],
    ids=["tag name", "attribute name", "doctype", "if/else", "if without else", "elif",
         "while body", "for body",
         "template end", "return", "break", "match", "try", "percent mapping", "format attribute"],
)  # fmt: skip
def test_compile_errors_are_located_and_say_how_to_fix(
    source: str, message: str, where: Any
) -> None:
    exc = syntax_error(source)
    assert exc.msg == message
    if isinstance(where, dict):  # f-string fields are located exactly from Python 3.12
        where = where[sys.version_info >= (3, 12)]
    assert location(exc) == where


# -- opting out ---------------------------------------------------------------------------


def test_a_module_opts_out_with_a_marker() -> None:
    module = load(
        """
        __ptl_contextual__ = False

        def f [html] (v):
            '<a href="%s">' % v
            '<%s>' % v
        """
    )
    assert module.f("javascript:x") == '<a href="javascript:x"><javascript:x>'


def test_a_template_opts_out_with_a_marker() -> None:
    module = load(
        """
        def plain [html] (v):
            __ptl_contextual__ = False
            '<a href="%s">' % v

        def contextual [html] (v):
            '<a href="%s">' % v
        """
    )
    assert module.plain("javascript:x") == '<a href="javascript:x">'
    assert module.contextual("javascript:x") == '<a href="about:invalid#ptl-unsafe-url">'


def test_plain_templates_are_untouched() -> None:
    module = load("def f [plain] (v):\n    '<a href=\"%s\">' % v\n    '<%s' % v\n")
    assert module.f("javascript:x") == '<a href="javascript:x"><javascript:x'


# -- no cost where values land in text ------------------------------------------------------


def _dump(source: str, contextual: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patch:
        if not contextual:
            patch.setattr(compiler, "_opts_out", lambda body: True)
        return ast.dump(parse_ptl(source, "case.ptl"), include_attributes=True)


# The fixtures with a value outside text: statements.ptl's "<caught %s>" puts an exception's
# name between a tag's attributes (the attribute-name filter keeps it as it is).
NOT_ONLY_TEXT = {"statements"}


@pytest.mark.parametrize("case", sorted(p.stem for p in CASES.glob("*.ptl")))
def test_fixtures_whose_values_land_in_text_compile_to_the_same_code(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case == "py312_generics" and sys.version_info < (3, 12):
        pytest.skip("Python 3.12 syntax")
    source = (CASES / f"{case}.ptl").read_text(encoding="utf-8")
    contextual = _dump(source, True, monkeypatch)
    if case in NOT_ONLY_TEXT:
        assert "_ptl_esc_" in contextual
        return
    assert "_ptl_esc_" not in contextual
    assert contextual == _dump(source, False, monkeypatch)


def test_a_value_outside_text_is_the_only_code_that_changes() -> None:
    source = "def f [html] (a, b):\n    f'<p>{a}</p><a href=\"{b}\">'\n    '</a>'\n"
    code = ast.unparse(parse_ptl(source))
    assert "_ptl_field_output(a)" in code
    # An int is output as it is, without a call; anything else goes through the escaper.
    held = r"(_ptl_v\d+) if _ptl_type\(\(\1 := b\)\) is _ptl_int else _ptl_esc_url_q\(\1\)"
    assert re.search(held, code)
    assert (
        "from ptl_wsgi.escapers import int as _ptl_int, type as _ptl_type, url_q as _ptl_esc_url_q"
        in code
    )


def test_ints_pass_even_where_type_and_int_are_shadowed() -> None:
    module = load(
        """
        def f [html] (type, int, v):
            '<a href="/item/%s" data-t="%s">' % (v, type)
            '</a>'
        """
    )
    assert module.f("t", "i", 12) == '<a href="/item/12" data-t="t"></a>'
    assert module.f("t", "i", -1) == '<a href="/item/-1" data-t="t"></a>'
    assert module.f("t", "i", "a b") == '<a href="/item/a%20b" data-t="t"></a>'


# -- what `check --contexts` reads ----------------------------------------------------------


def test_the_context_report() -> None:
    source = "def f [html] (a, b):\n    '<p>%s</p>' % a\n    f'<a href=\"{b}\">é</a>'\n"
    assert context_report(source) == [
        (2, 19, "text", None),
        # An f-string field's own column from Python 3.12, the f-string's before.
        (
            3,
            16 if sys.version_info >= (3, 12) else 5,
            "a URL (start) in a double-quoted URL attribute value",
            "url_q",
        ),
    ]


# -- a value never changes the structure of the page ------------------------------------------

html5lib = pytest.importorskip("html5lib")
STRUCTURE_MODULE = load(
    "".join(
        f"def c{i} [html] (v):\n    '{before}'\n    v\n    '{after}'\n"
        for i, (before, after, _, _) in enumerate(
            (b.replace("'", "\\'"), a.replace("'", "\\'"), v, e) for b, a, v, e in CONTEXTS
        )
    )
)


def structure(markup: str) -> list[tuple[Any, ...]]:
    tree = html5lib.parse(markup, namespaceHTMLElements=False)
    return [(str(e.tag), tuple(sorted(e.attrib))) for e in tree.iter()]


@given(st.text(alphabet="<>/!-=\"' \n\t`${}()*\\&;:?#aejvscrtpilx", max_size=30))
def test_no_value_changes_the_structure_of_the_page(value: str) -> None:
    for index in range(len(CONTEXTS)):
        template = getattr(STRUCTURE_MODULE, f"c{index}")
        markup = f"<p>{template(value)}</p><b>end</b>"
        assert structure(markup) == structure(f"<p>{template('a')}</p><b>end</b>"), index


def test_a_format_value_used_in_two_contexts_is_an_error() -> None:
    exc = syntax_error("def f [html] (v):\n    x = '{0}<a href=\"{0}\">'.format(v)\n")
    assert "cannot be told apart" in exc.msg and (exc.lineno, exc.offset) == (2, 9)
    module = load("def f [html] (v):\n    x = '<b>{0}</b><i>{0}</i>'.format(v)\n    x\n")
    assert module.f("<") == "<b>&lt;</b><i>&lt;</i>"
