"""The PTL compiler: syntax, generated code, literal handling, errors and locations."""

from __future__ import annotations

import ast
import asyncio
import sys
import textwrap
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ptl_wsgi import compile_ptl, parse_ptl
from ptl_wsgi.html import htmltext
from ptl_wsgi.importer import load_module_from_path

PY312 = sys.version_info >= (3, 12)


def load(source: str, filename: str = "<ptl>") -> types.ModuleType:
    module = types.ModuleType("ptl_test_module")
    exec(compile_ptl(textwrap.dedent(source), filename), module.__dict__)
    return module


def syntax_error(source: str | bytes, filename: str = "bad.ptl") -> SyntaxError:
    if isinstance(source, str):
        source = textwrap.dedent(source)
    with pytest.raises(SyntaxError) as info:
        compile_ptl(source, filename)
    return info.value


def location(exc: SyntaxError) -> tuple[Any, ...]:
    return (exc.filename, exc.lineno, exc.offset, exc.end_lineno, exc.end_offset, exc.text)


# -- template headers ------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        "def f [html] (x):",
        "def f[html](x):",
        "def f [ html ] (x):",
        "def f [html](x):",
        "def f\t[html]\t(x):",
    ],
)
def test_html_header_spellings(header: str) -> None:
    m = load(f"{header}\n    '<b>'\n    x\n")
    assert m.f("<&>") == "<b>&lt;&amp;&gt;"
    assert type(m.f("")) is htmltext


@pytest.mark.parametrize("header", ["def f [plain] (x):", "def f[plain](x):", "template f(x):"])
def test_plain_header_spellings(header: str) -> None:
    m = load(f"{header}\n    '<b>'\n    x\n")
    assert m.f("<&>") == "<b><&>"
    assert type(m.f("")) is str


def test_template_keyword_is_only_special_at_a_definition() -> None:
    m = load(
        """
        template = "<t>"
        def use(template):
            return template
        class Holder:
            template = 1
        def template_user [plain] (obj):
            template
            use(template)
            obj.template
        results = [template, use(2), Holder.template]
        """
    )
    assert m.results == ["<t>", 2, 1]
    assert m.template_user(m.Holder) == "<t><t>1"


def test_html_and_plain_stay_ordinary_names_elsewhere() -> None:
    m = load(
        """
        html = ["<h>"]
        plain = {0: "p"}
        def f(html=html):
            return html[0] + plain[0]
        value = f()
        """
    )
    assert m.value == "<h>p"


def test_decorated_method_and_async_templates() -> None:
    m = load(
        """
        import functools
        def twice(f):
            @functools.wraps(f)
            def wrapper(*a, **k):
                return f(*a, **k) + f(*a, **k)
            return wrapper
        class C:
            @twice
            def m [html] (self, *args, sep="<br>", **kw):
                sep.join(args)
                sorted(kw)
        async def a [html] (x):
            "<a>"
            x
        """
    )
    assert m.C().m("<1>", "2", z=1) == "&lt;1&gt;<br>2[&#x27;z&#x27;]" * 2
    assert m.C.m.__name__ == "m"
    assert asyncio.run(m.a("<")) == "<a>&lt;"


@pytest.mark.skipif(not PY312, reason="PEP 695 syntax")
def test_real_generic_function_stays_ordinary() -> None:
    m = load(
        """
        def ident[T](x: T) -> T:
            "doc"
            return x
        def typed[html](x):
            x
        """
    )
    assert m.ident("<x>") == "<x>"
    assert m.ident.__doc__ == "doc"
    assert [p.__name__ for p in m.ident.__type_params__] == ["T"]
    assert m.typed.__type_params__ == ()
    assert m.typed("<") == "&lt;"


@pytest.mark.skipif(PY312, reason="before 3.12 a type parameter list is a syntax error")
def test_generic_function_is_a_syntax_error_before_312() -> None:
    exc = syntax_error("def ident[T](x):\n    return x\n")
    assert exc.lineno == 1


# -- output rules --------------------------------------------------------------


def test_expression_statements_are_output_and_none_is_skipped() -> None:
    m = load(
        """
        def f [html] (x):
            None
            x
            print("side effect")
            1
            2.5
        """
    )
    assert m.f("<") == "&lt;12.5"
    assert m.f(None) == "12.5"


def test_string_literal_statements_are_all_output_and_templates_have_no_docstring() -> None:
    m = load(
        '''
        """Module docstring."""
        def page [html] ():
            """<!doctype html>"""
            "<html>"
        def plain_page [plain] ():
            "first"
            "second"
        def ordinary():
            "A docstring."
        '''
    )
    assert m.__doc__ == "Module docstring."
    assert m.page() == "<!doctype html><html>"
    assert m.page.__doc__ is None
    assert m.plain_page() == "firstsecond"
    assert m.plain_page.__doc__ is None
    assert m.ordinary.__doc__ == "A docstring."


def test_comprehension_statements_emit_items() -> None:
    m = load(
        """
        def f [html] (rows):
            ["<li>%s</li>" % r for r in rows]
            ("[%s]" % r for r in rows)
            {1 for _ in rows}
            [r for r in rows if r is None]
        """
    )
    assert m.f(["a", "&"]) == "<li>a</li><li>&amp;</li>[a][&amp;]1"


def test_bare_return_returns_output_so_far() -> None:
    m = load(
        """
        def f [plain] (n):
            for i in range(10):
                if i == n:
                    return
                i
            "end"
        """
    )
    assert m.f(3) == "012"
    assert m.f(99) == "0123456789end"


def test_nested_scopes_are_ordinary_python() -> None:
    m = load(
        """
        def f [html] ():
            def g():
                "<g doc>"
                "<unused>"
                return "<g>"
            h = lambda: "<h>"
            class K:
                "<k doc>"
                attr = "<k>"
            g()
            h()
            K.attr
            K.__doc__
            g.__doc__
        """
    )
    assert m.f() == "&lt;g&gt;&lt;h&gt;&lt;k&gt;&lt;k doc&gt;&lt;g doc&gt;"


def test_bare_return_is_fine_when_finally_has_no_output() -> None:
    m = load(
        """
        closed = []
        def f [html] ():
            try:
                "<a>"
                return
            finally:
                closed[:] = [1]
            "<never>"
        """
    )
    assert m.f() == "<a>"
    assert m.closed == [1]


# -- literals --------------------------------------------------------------------


def test_html_literals_are_built_once_at_import() -> None:
    m = load(
        """
        seen = []
        def f [html] ():
            seen.append("<b>")
            seen.append("<b>")
            seen.append(f"<i>")
        """
    )
    m.f()
    m.f()
    assert all(type(s) is htmltext for s in m.seen)
    assert len({id(s) for s in m.seen}) == 2  # one object per distinct literal
    assert m._ptl_lit_0 is m.seen[0]
    consts = m.f.__code__.co_consts
    assert "<b>" not in consts and "<i>" not in consts


def test_plain_template_literals_are_str() -> None:
    m = load(
        """
        seen = []
        def f [plain] ():
            seen.append("<b>")
            seen.append(f"<i>{1}")
        """
    )
    m.f()
    assert [type(s) for s in m.seen] == [str, str]


def test_literal_kinds_by_place() -> None:
    m = load(
        """
        from __future__ import annotations
        got = {}
        def f [html] (default="<d>") -> "ret":
            got["default"] = default
            got["key"] = list({"<k>": 1})[0]
            got["bytes"] = b"<b>"
            got["spec"] = f"{'x':{'>'}3}"
            note: "ann" = "<v>"
            got["value"] = note
            match "<m>":
                case "<m>":
                    got["match"] = "<matched>"
        """
    )
    m.f()
    assert type(m.got["default"]) is htmltext
    assert type(m.got["key"]) is htmltext
    assert m.got["bytes"] == b"<b>"
    assert m.got["spec"] == "  x"
    assert type(m.got["value"]) is htmltext
    assert type(m.got["match"]) is htmltext
    # Under "from __future__ import annotations" the annotation is its source text.
    assert m.f.__annotations__ == {"return": "'ret'"}
    assert type(m.f.__annotations__["return"]) is str
    tree = parse_ptl(
        textwrap.dedent(
            """
            def f [html] (x):
                match x:
                    case "<m>" | {"k": "v"}:
                        pass
            """
        )
    )
    patterns = [n for n in ast.walk(tree) if isinstance(n, ast.MatchValue)]
    assert {p.value.value for p in patterns} == {"<m>", "v"}


def test_fstring_fields_escaped_after_conversion_and_spec() -> None:
    m = load(
        """
        def f [html] (x, w):
            f"<a title='{x!r:>{w}}'>{x:.2}</a>"
        """
    )
    assert m.f("<&>", 8) == "<a title='   &#x27;&lt;&amp;&gt;&#x27;'>&lt;&amp;</a>"


def test_fstring_nested_spec_cannot_inject_markup() -> None:
    """What a spec adds (the fill) is text: escaped, even around trusted markup."""
    m = load(
        """
        def cell [html] (content, fill, align=">"):
            f'<td title="{content:{fill}{align}8}">'
        """
    )
    from ptl_wsgi.html import htmltext

    assert m.cell(htmltext("ok"), '"') == '<td title="' + "&quot;" * 6 + 'ok">'
    padded = "&lt;" * 2 + "<b>" + "&lt;" * 3
    assert m.cell(htmltext("<b>"), "<", "^") == f'<td title="{padded}">'
    assert m.cell("ok", '"') == '<td title="' + "&quot;" * 6 + 'ok">'
    assert m.cell("<", "'") == '<td title="' + "&#x27;" * 7 + '&lt;">'
    assert m.cell(htmltext("ok"), "*") == '<td title="******ok">'


def test_fstring_spec_fstring_literals_stay_plain() -> None:
    # Not an output statement, so the f-string stays one (the fast path is tested apart).
    tree = parse_ptl("def f [html] (x, w):\n    y = f'{x:>{w}}<'\n    y\n")
    source = ast.unparse(tree)
    # The spec is a plain f-string; only the whole f-string becomes htmltext.
    assert "_ptl_format_field(x, -1, f'>{w}')" in source
    assert "_ptl_htmltext(f" in source


# -- generated code --------------------------------------------------------------


def test_generated_code_shape() -> None:
    tree = parse_ptl(
        '"""Doc."""\nfrom __future__ import annotations\n'
        "def f [html] (x):\n    '<p>'\n    x\n    [i for i in x]\n"
    )
    body = tree.body
    assert ast.get_docstring(tree) == "Doc."
    assert isinstance(body[1], ast.ImportFrom) and body[1].module == "__future__"
    assert ast.unparse(body[2]) == (
        "from ptl_wsgi.html import htmltext as _ptl_htmltext, _template_join as _ptl_html_join, "
        "plain_join as _ptl_plain_join, format_field as _ptl_format_field, "
        "field_output as _ptl_field_output, percent_output as _ptl_percent_output, "
        "outside_text as _ptl_outside_text, field_outside_text as _ptl_field_outside, "
        "percent_outside_text as _ptl_percent_outside, "
        "loop_output as _ptl_loop_output, first_of as _ptl_first_of"
    )
    assert ast.unparse(body[3]) == (
        "from ptl_wsgi._runtime import mark_html_template as _ptl_mark_html, "
        "mark_plain_template as _ptl_mark_plain"
    )
    assert ast.unparse(body[4]) == "_ptl_lit_0 = _ptl_htmltext('<p>')"
    # Consecutive output statements are one call.
    assert ast.unparse(body[5]).splitlines() == [
        "@_ptl_mark_html",
        "def f(x):",
        "    _ptl_out = []",
        "    _ptl_extend = _ptl_out.extend",
        "    _ptl_extend((_ptl_lit_0, x))",
        "    _ptl_out.extend([i for i in x])",
        "    return _ptl_html_join(_ptl_out)",
    ]


def test_every_node_has_a_location_inside_the_source() -> None:
    source = (Path(__file__).parents[1] / "ptl_cases" / "signatures.ptl").read_text()
    n_lines = source.count("\n") + 1
    for node in ast.walk(parse_ptl(source)):
        if "lineno" in node._attributes:
            assert 1 <= node.lineno <= node.end_lineno <= n_lines, ast.dump(node)


def test_compile_does_not_inherit_future_flags() -> None:
    m = load("def f(x: int): pass\n")
    assert m.f.__annotations__ == {"x": int}


def test_bytes_source_with_coding_cookie() -> None:
    source = "# -*- coding: latin-1 -*-\ndef f [html] ():\n    '<b>é</b>'\n".encode("latin-1")
    ns: dict[str, Any] = {}
    exec(compile_ptl(source, "latin.ptl"), ns)
    assert ns["f"]() == "<b>é</b>"


def test_crlf_source() -> None:
    m = load("def f [html] (x):\r\n    '<a>'\r\n    x\r\n")
    assert m.f("<") == "<a>&lt;"


# -- errors ----------------------------------------------------------------------


def test_return_with_value_is_an_error_at_the_return() -> None:
    exc = syntax_error(
        """
        def f [html] (x):
            "<p>"
            return x + "é"
        """
    )
    assert location(exc) == ("bad.ptl", 4, 5, 4, 19, '    return x + "é"\n')
    assert "'return' with a value in a template" in exc.msg
    assert "line" not in exc.msg


def test_return_with_value_in_nested_function_is_fine() -> None:
    m = load(
        """
        def f [html] ():
            def g():
                return "<g>"
            h = lambda: "<h>"
            g()
        """
    )
    assert m.f() == "&lt;g&gt;"


def test_yield_in_template_is_an_error() -> None:
    exc = syntax_error("def f [plain] ():\n    x = yield 1\n")
    assert location(exc)[:5] == ("bad.ptl", 2, 9, 2, 16)
    assert "'yield' in a template" in exc.msg


def test_return_before_finally_output_is_an_error() -> None:
    exc = syntax_error(
        """
        def f [html] ():
            try:
                return
            finally:
                "</div>"
        """
    )
    assert location(exc) == ("bad.ptl", 4, 9, 4, 15, "        return\n")
    assert "(line 6)" in exc.msg


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # Header line: the text shows the .ptl line, annotation included.
        ("def f [html] (x:\n    pass\n", (1, 14, "def f [html] (x:\n")),
        ("def f [html] (x):\n    s = 'abc\n", (2, 9, "    s = 'abc\n")),
        ("def f [html] (x):\n    '''abc\n", (2, 5, "    '''abc\n")),
        ("def f [html] (x):\n    if x:\n        1\n      2\n", (4, 8, "      2\n")),
        ("def f [html] (x):\n    (x,\n", (2, 5, "    (x,\n")),
        ("def f [html] (x):\n    x)\n", (2, 6, "    x)\n")),
        ("template f(x):\n    x x\n", (2, 7, "    x x\n")),
        ("def f [html] (x):\n\tif x:\n        1\n", (3, 1, "        1\n")),
    ],
)
def test_syntax_errors_have_ptl_locations(source: str, expected: tuple[Any, ...]) -> None:
    exc = syntax_error(source)
    assert exc.filename == "bad.ptl"
    assert (exc.lineno, exc.offset, exc.text) == expected
    assert (exc.end_lineno, exc.end_offset) > (exc.lineno, exc.offset)
    assert "bad.ptl" not in exc.msg


def test_compiler_stage_errors_show_the_source_line() -> None:
    exc = syntax_error("def f [html] ():\n    nonlocal q\n")
    assert location(exc) == ("bad.ptl", 2, 5, 2, 15, "    nonlocal q\n")


def test_undecodable_source_is_a_syntax_error() -> None:
    exc = syntax_error(b"x = 1\ny = '\xff'\n")
    assert location(exc) == ("bad.ptl", 2, 6, 2, 7, "y = '\ufffd'\n")


# -- tracebacks --------------------------------------------------------------------

TRACEBACK_SOURCE = '''\
def page [html] (x, boom):
    """<!doctype html>
<html>
"""
    f"""<p>
{x}
{boom['missing']}
</p>"""


def after_continuation [html] ():
    "<a>" \\
        "<b>"
    (1 /
     0)


def joined [html] (x):
    "<p>"
    x


class Unprintable:
    def __str__(self):
        raise RuntimeError("no str")
'''


@pytest.fixture
def traceback_module(tmp_path: Path) -> Iterator[types.ModuleType]:
    # Imported as a real module: linecache asks a module's __spec__.loader for its
    # source (3.15 warns about globals without one, as a bare ModuleType's are).
    path = tmp_path / "pages.ptl"
    path.write_text(TRACEBACK_SOURCE)
    name = f"ptl_traceback_pages_{tmp_path.name}"
    try:
        yield load_module_from_path(path, name)
    finally:
        sys.modules.pop(name, None)


def failing_frame(call: Any, filename: str) -> traceback.FrameSummary:
    with pytest.raises(Exception) as info:
        call()
    frames = [f for f in traceback.extract_tb(info.tb) if f.filename == filename]
    assert frames, traceback.format_exception(info.value)
    return frames[0]


def test_traceback_in_multiline_fstring_field(traceback_module: types.ModuleType) -> None:
    m = traceback_module
    frame = failing_frame(lambda: m.page(1, {}), m.__dict__["page"].__code__.co_filename)
    assert (frame.name, frame.lineno, frame.line) == ("page", 7, "{boom['missing']}")


def test_traceback_after_line_continuation(traceback_module: types.ModuleType) -> None:
    m = traceback_module
    frame = failing_frame(m.after_continuation, m.page.__code__.co_filename)
    assert (frame.lineno, frame.line) == (14, "(1 /")


def test_traceback_of_failing_join_points_at_header(traceback_module: types.ModuleType) -> None:
    m = traceback_module
    frame = failing_frame(lambda: m.joined(m.Unprintable()), m.page.__code__.co_filename)
    assert (frame.name, frame.lineno, frame.line) == ("joined", 18, "def joined [html] (x):")


def test_formatted_traceback_shows_ptl_source(traceback_module: types.ModuleType) -> None:
    m = traceback_module
    with pytest.raises(ZeroDivisionError) as info:
        m.after_continuation()
    text = "".join(traceback.format_exception(info.type, info.value, info.tb))
    assert f'File "{m.page.__code__.co_filename}", line 14, in after_continuation' in text
    assert "    (1 /\n" in text


def test_bad_coding_cookie_is_located() -> None:
    exc = syntax_error(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    assert location(exc) == ("bad.ptl", 1, 1, 1, 2, "# -*- coding: no-such-codec -*-\n")
    assert exc.msg == "unknown encoding: no-such-codec"


def test_null_byte_is_located() -> None:
    exc = syntax_error('def f [html] ():\n    "a\x00b"\n')
    assert location(exc) == ("bad.ptl", 2, 7, 2, 8, '    "a\x00b"\n')


@pytest.mark.parametrize(
    "expression", ["-" * 20000 + "x", "+".join(["x"] * 20000)], ids=["unary", "sum"]
)
def test_too_deep_nesting_is_a_syntax_error(expression: str) -> None:
    try:
        compile(expression, "ref.py", "exec")
    except (RecursionError, MemoryError):
        pass
    else:  # this Python compiles it (3.14 does the sum): then so must we
        load(f"def f [html] (x):\n    {expression}\n")
        return
    exc = syntax_error(f"def f [html] (x):\n    {expression}\n")
    assert (exc.filename, exc.lineno) == ("bad.ptl", 2)
    assert "too deeply nested" in exc.msg


# -- nesting depth: the same answer as CPython, from any caller ----------------------------


def _elif_chain(count: int, template: bool = False) -> str:
    header, output = ("def f [html] (x):", "") if template else ("def f(x):", "return ")
    arms = "".join(f"    elif x == {i}:\n        {output}'{i}'\n" for i in range(count))
    return f"{header}\n    if x is None:\n        {output}'none'\n{arms}"


def _at_depth(depth: int, func: Any) -> Any:
    return func() if depth <= 0 else _at_depth(depth - 1, func)


@pytest.mark.parametrize("template", [False, True], ids=["function", "template"])
def test_long_elif_chain_compiles(template: bool) -> None:
    source = _elif_chain(500, template)
    compile(source.replace(" [html] ", ""), "ref.py", "exec")  # CPython accepts it
    m = load(source)
    assert m.f(499) == "499"


def test_elif_chain_compiles_from_deep_in_the_stack() -> None:
    source = _elif_chain(300, template=True)
    # Deep enough that CPython itself, called here, would give up on this source.
    depth = sys.getrecursionlimit() - 120
    code = _at_depth(depth, lambda: compile_ptl(source, "deep.ptl"))
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    assert namespace["f"](299) == "299"


def test_long_operator_chains_compile() -> None:
    terms = 2000
    if sys.version_info[:2] == (3, 12):
        # 3.12's ast module gives up on chains its own compile() accepts (its C recursion
        # guard), and a .ptl file is compiled through ast.
        pytest.skip(f"Python {sys.version.split()[0]}'s ast cannot hold a {terms}-term chain")
    m = load(
        f"""
        def total [plain] (x):
            {"+".join(["x"] * terms)}
        def both [plain] (x):
            {" and ".join(["x"] * terms)}
        """
    )
    assert m.total(1) == str(terms) and m.both(1) == "1"


def test_too_deep_expression_is_located_like_cpython_rejects_it() -> None:
    expression = "-" * 5000 + "x"
    try:
        compile(expression, "ref.py", "exec")
    except (RecursionError, MemoryError):
        pass
    else:  # 3.13 compiles it: then so must we
        load(f"def f [html] (x):\n    {expression}\n")
        return
    exc = syntax_error(f"x = 1\ndef f [html] (x):\n    {expression}\n")
    # At the innermost operand, where the nesting is deepest; where ast itself gives up
    # (CPython 3.12's ast module) there is no tree to point into, so at the line.
    columns = (1, 5005) if sys.version_info[:2] >= (3, 12) else (5005,)
    assert (exc.filename, exc.lineno) == ("bad.ptl", 3)
    assert exc.offset in columns
    assert "too deeply nested" in exc.msg and "recursion" in exc.msg


# -- every nested expression follows the template's rules ---------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "f'{x:{(yield)}}'",
        "f'{x:{y}{(yield)}}'",
        "f'{x:>{(yield)}}'",
        "f'{f\"{(yield)}\"}'",
        "f'{x!r:{(yield from y)}}'",
    ],
)
@pytest.mark.parametrize("kind", ["html", "plain"])
def test_yield_in_nested_f_string_parts_is_rejected(expression: str, kind: str) -> None:
    exc = syntax_error(f"def f [{kind}] (x, y=()):\n    {expression}\n")
    assert exc.lineno == 2 and "'yield' in a template" in exc.msg


@pytest.mark.parametrize(
    "source",
    [
        "def f [html] (x):\n    def g(y=(yield)):\n        pass\n",
        "def f [html] (x):\n    g = lambda y=(yield): y\n",
        "def f [html] (x):\n    class C((yield)):\n        pass\n",
        "def f [html] (x):\n    class C(metaclass=(yield)):\n        pass\n",
        "def f [html] (x):\n    @(yield)\n    def g():\n        pass\n",
        "def f [html] (x):\n    def g(y: (yield)):\n        pass\n",
        "def f [html] (x):\n    def g() -> (yield):\n        pass\n",
        "def f [html] (x):\n    y: (yield) = 1\n",
    ],
    ids=[
        "default",
        "lambda default",
        "base",
        "keyword",
        "decorator",
        "annotation",
        "returns",
        "variable annotation",
    ],
)
def test_yield_evaluated_in_the_template_scope_is_rejected(source: str) -> None:
    exc = syntax_error(source)
    assert exc.lineno in (2, 3) and "'yield' in a template" in exc.msg


def test_yield_in_nested_scopes_is_still_fine() -> None:
    m = load(
        """
        def f [plain] (xs):
            def gen():
                yield from xs
            lam = lambda: (yield)
            ''.join(gen())
        """
    )
    assert m.f("ab") == "ab"


def test_expressions_in_format_specs_follow_html_rules() -> None:
    m = load(
        """
        def f [html] (x, width):
            f'[{x:>{width}}]'
            f'[{x:{"^"}{width}}]'
        """
    )
    assert m.f("<", 3) == "[  &lt;][ &lt; ]"


# -- names the compiler generates cannot be used ------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "def f [html] (_ptl_lit_0):\n    'x'\n",
        "def f [html] (*, _ptl_out):\n    'x'\n",
        "def f [html] (*_ptl_x, **kw):\n    'x'\n",
        "def f [html] (**_ptl_x):\n    'x'\n",
        "def f [html] (a, /, _ptl_x=1):\n    'x'\n",
        "def f [html] ():\n    _ptl_out = []\n",
        "def f [html] ():\n    x = _ptl_out\n",
        "def f [html] ():\n    for _ptl_i in []: pass\n",
        "def f [html] ():\n    with open('x') as _ptl_f: pass\n",
        "def f [html] ():\n    (_ptl_w := 1)\n",
        "def f [html] ():\n    global _ptl_out\n",
        "def f [html] ():\n    def g():\n        nonlocal _ptl_x\n",
        "import os as _ptl_htmltext\n",
        "import _ptl_mod\n",
        "from os import path as _ptl_lit_0\n",
        "from os import _ptl_x\n",
        "def _ptl_html_join(x):\n    pass\n",
        "class _ptl_out:\n    pass\n",
        "async def _ptl_f():\n    pass\n",
        "try:\n    pass\nexcept Exception as _ptl_e:\n    pass\n",
        "match x:\n    case [*_ptl_rest]:\n        pass\n",
        "match x:\n    case {**_ptl_rest}:\n        pass\n",
        "match x:\n    case int() as _ptl_v:\n        pass\n",
        "f = lambda _ptl_a: 1\n",
        "x = [_ptl_i for _ptl_i in y]\n",
        "del _ptl_out\n",
    ],
)
def test_reserved_names_are_a_located_error(source: str) -> None:
    exc = syntax_error(source)
    assert exc.filename == "bad.ptl"
    assert "_ptl_" in exc.msg and "reserved" in exc.msg
    line = source.splitlines()[exc.lineno - 1]
    # At the name itself, not just its statement.
    assert line[exc.offset - 1 :].startswith("_ptl_"), (exc.lineno, exc.offset, line)


def test_names_like_reserved_ones_in_other_places_are_fine() -> None:
    m = load(
        """
        import types
        def make():
            return types.SimpleNamespace(_ptl_attr=1)
        def f [html] (obj, **kw):
            obj._ptl_attr
            dict(_ptl_key=1)['_ptl_key']
            '_ptl_out'
            ptl_out = 2
            ptl_out
        """
    )
    assert m.f(m.make()) == "11_ptl_out2"


def test_the_first_rule_violation_in_the_source_is_reported() -> None:
    exc = syntax_error("def f [html] (_ptl_a):\n    (yield)\n    _ptl_b = 1\n")
    assert (exc.lineno, exc.offset) == (1, 15)


# -- template_scopes: the compiler's scoping, for tools ------------------------------------

SCOPED = """\
SEEN = []
def deco(x):
    SEEN.append((str(x)[:6], type(x).__name__))
    return lambda f: f

@deco("<module>")
def page [html] (sep="<default>", *, end: "<annotation>" = "<kwdefault>"):
    "<doc>"
    @deco("<decorator>")
    @deco(f"<fdecorator{sep}>")
    class C(dict, metaclass=type):
        "<class body>"
    (lambda: "<lambda>")
    def helper():
        "<helper>"
    def inner [plain] ():
        "<inner>"
        return
    match sep:
        case "<pattern>" if sep == "<guard>":
            pass
    note: "<ann>" = "<value>"
    f"<f>{'<field>'}{sep:{'>'}12}"
    return
"""


def test_template_scopes_agree_with_the_compiled_module() -> None:
    from ptl_wsgi.compiler import python_view, template_scopes

    view, templates = python_view(SCOPED)
    found = template_scopes(ast.parse(view), templates)
    assert [(node.name, kind) for node, kind in found.templates] == [
        ("page", "html"),
        ("inner", "plain"),
    ]
    kinds = {
        ast.unparse(node): kind for node, kind in found.literals if isinstance(node, ast.Constant)
    }
    assert kinds == {
        "'<module>'": None,
        "'<default>'": "html",
        "'<kwdefault>'": "html",
        "'<doc>'": "html",
        "'<decorator>'": None,  # a class's decorators are ordinary code, as its body is
        "'<class body>'": None,
        "'<lambda>'": None,
        "'<helper>'": None,
        "'<inner>'": "plain",
        "'<guard>'": "html",
        "'<value>'": "html",
        "'<field>'": "html",
        "'>'": "html",
    }
    # An f-string is one literal (its text parts are not listed apart).
    assert [(n.lineno, k) for n, k in found.literals if isinstance(n, ast.JoinedStr)] == [
        (10, None),
        (23, "html"),
    ]
    assert [(n.lineno, k) for n, k in found.returns] == [(18, "plain"), (24, "html")]
    assert [(n.lineno, k) for n, k in found.outputs] == [
        (8, "html"),
        (13, "html"),
        (17, "plain"),
        (23, "html"),
    ]
    # The compiled module agrees: trusted where the scan says "html", str elsewhere.
    namespace: dict[str, Any] = {}
    exec(compile_ptl(SCOPED), namespace)
    namespace["page"]()
    assert namespace["SEEN"] == [
        ("<modul", "str"),
        ("<decor", "str"),
        ("<fdeco", "str"),
    ]
    assert namespace["page"].__defaults__ == ("<default>",)
    assert type(namespace["page"].__defaults__[0]) is htmltext
    assert str(namespace["page"]()).startswith("<doc>&lt;function page.")
    assert str(namespace["page"]()).endswith("<f><field>   <default>")  # a trusted default
