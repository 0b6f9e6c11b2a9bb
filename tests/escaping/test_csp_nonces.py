"""Strict CSP by construction (issue #31): the request's nonce on every script and style.

Inside a nonce scope every ``<script>``, ``<style>`` and ``<link rel=stylesheet |
preload | modulepreload>`` start tag that a template's literal writes gets
``nonce="..."`` (unless the literal gave it one) when the page is written out
(``csp.written``, what every response goes through): in compiled templates, the
formats the compiler planned and t-strings.  Run-time ``%``, ``format`` and
``format_map`` of any htmltext give no nonce (a format no template literal wrote,
a translation or ``htmltext(value)``, must not decide what runs: review 2, finding
D).  Outside a scope the output is exactly what it was.  A value never obtains the
nonce.  Both twins (the ``impl`` fixture) for the run-time paths.
"""

from __future__ import annotations

import sys
import textwrap
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

import pytest

from ptl_wsgi.csp import (
    content_security_policy,
    csp_nonce,
    in_nonce_scope,
    nonce_scope,
    written,
)
from ptl_wsgi.escaping import planner
from ptl_wsgi.escaping.context import TEXT, advance, after_value

NONCE = "N0nce-Fixed_value"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        first: dict[str, str | None] = {}
        for name, value in attrs:
            first.setdefault(name, value)  # browsers keep an attribute's first value
        self.tags.append((tag, first))

    handle_startendtag = handle_starttag


def tags(markup: object) -> list[tuple[str, dict[str, str | None]]]:
    """Each start tag of *markup* as it is sent (``csp.written``: the nonce goes in
    only as a page is written out), as a browser reads it."""
    parser = _Tags()
    parser.feed(str(written(markup)))
    parser.close()
    return parser.tags


def render_sent(source: str, *args: Any) -> str:
    """``ptl_helpers.render_f`` as a response gets it: *source* (a .ptl module defining
    ``f``, dedented) compiled, ``f(*args)`` written out (``csp.written``), as str."""
    from ptl_helpers import compiled

    return str(written(compiled(textwrap.dedent(source), "attack").f(*args)))


def nonces(markup: object) -> list[tuple[str, str | None]]:
    """Each start tag's name and its nonce, as a browser reads them."""
    return [(name, attrs.get("nonce")) for name, attrs in tags(markup)]


def slotted(*texts: str) -> str:
    """*texts* (literal parts with a value between each two) with ``|`` at each nonce slot."""
    ctx = TEXT
    out = []
    for index, text in enumerate(texts):
        slots: list[int] = []
        ctx = advance(ctx, text, slots=slots)
        marked = text
        for slot in reversed(slots):
            marked = marked[:slot] + "|" + marked[slot:]
        out.append(marked)
        if index < len(texts) - 1:
            ctx = after_value(ctx)
    return "{}".join(out)


# -- where the engine puts the nonce ----------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("<script>go()</script>",), "<script|>go()</script>"),
        (('<script src="/a.js"></script>',), '<script src="/a.js"|></script>'),
        (("<script type=module src=/m.js></script>",), "<script type=module src=/m.js|></script>"),
        (("<style>p{}</style>",), "<style|>p{}</style>"),
        (('<link rel="stylesheet" href="/a.css">',), '<link rel="stylesheet" href="/a.css"|>'),
        (('<link href="/a.css" rel=stylesheet />',), '<link href="/a.css" rel=stylesheet| />'),
        (("<link rel=modulepreload href=/m.js>",), "<link rel=modulepreload href=/m.js|>"),
        (
            ("<LINK REL='Preload' as=style href=/a.css>",),
            "<LINK REL='Preload' as=style href=/a.css|>",
        ),
        (("<SCRIPT>1</SCRIPT>",), "<SCRIPT|>1</SCRIPT>"),
        (("<script src=/x.js/>",), "<script src=/x.js/|>"),  # the "/" is the value's
        (
            ("<svg><script>1</script><style>a{}</style></svg>",),
            "<svg><script|>1</script><style|>a{}</style></svg>",
        ),
        # a nonce written in the literal is kept, and none added
        (('<script nonce="abc">1</script>',), '<script nonce="abc">1</script>'),
        (("<style NONCE=x>p{}</style>",), "<style NONCE=x>p{}</style>"),
        # tags that take none
        (("<link rel=icon href=/i.png>",), "<link rel=icon href=/i.png>"),
        (("<link rel=stylesheets href=/a.css>",), "<link rel=stylesheets href=/a.css>"),
        (("<link href=/a.css>",), "<link href=/a.css>"),
        (("<scripts></scripts><p>x</p>",), "<scripts></scripts><p>x</p>"),
        (("<p>&lt;script&gt;</p><!-- <script> --><textarea><script></textarea>",), None),
        # split literals, values between them
        (('<script src="', '"></script>'), '<script src="{}"|></script>'),
        (("<script", ">1</script>"), "<script{}|>1</script>"),  # attributes given by a value
        (("<p title='", "'><style>a{}</style>"), "<p title='{}'><style|>a{}</style>"),
        (('<link rel="stylesheet" href="', '">'), '<link rel="stylesheet" href="{}"|>'),
    ],
)
def test_the_engine_finds_each_tag_that_takes_the_nonce(
    parts: tuple[str, ...], expected: str | None
) -> None:
    assert slotted(*parts) == ("{}".join(parts) if expected is None else expected)


def test_a_link_whose_rel_a_value_gives_takes_no_nonce() -> None:
    # A value may not decide that a tag gets the nonce.
    assert slotted('<link rel="', '" href="/a.css">') == '<link rel="{}" href="/a.css">'
    assert slotted('<link rel="style', '" href="/a.css">') == '<link rel="style{}" href="/a.css">'
    assert (
        slotted("<link", ' rel="stylesheet" href="/a.css">')
        == '<link{} rel="stylesheet" href="/a.css">'
    )


# -- run-time formatting, both twins -----------------------------------------------------

PAGE = (
    '<script src="%s"></script><p title="%s">%s</p>'
    '<style>p { color: %s }</style><link rel=stylesheet href="%s">'
)
ARGS = ("/app.js", "t", "x", "red", "/a.css")


def test_formatting_outside_a_scope_is_unchanged(impl: SimpleNamespace) -> None:
    assert str(impl.htmltext(PAGE) % ARGS) == (
        '<script src="/app.js"></script><p title="t">x</p>'
        '<style>p { color: red }</style><link rel=stylesheet href="/a.css">'
    )


def test_percent_at_run_time_nonces_no_tag(impl: SimpleNamespace) -> None:
    """Finding D: a format formatted at run time was not planned by the compiler (it
    may be a translation, a value, text from a database): its tags take no nonce,
    in the scope or when the result is written out."""
    with nonce_scope(NONCE):
        out = impl.htmltext(PAGE) % ARGS
        sent = written(out)
    assert nonces(out) == [("script", None), ("p", None), ("style", None), ("link", None)]
    assert str(sent) == str(impl.htmltext(PAGE) % ARGS)
    assert NONCE not in str(sent) and "nonce" not in str(sent)


@pytest.mark.parametrize("method", ["format", "format_map"])
def test_format_at_run_time_nonces_no_tag(impl: SimpleNamespace, method: str) -> None:
    fmt = impl.htmltext('<script src="{src}"></script>{{<p>{text}</p>}}<style>a{{}}</style>')
    values = {"src": "/a.js", "text": "<b>"}
    with nonce_scope(NONCE):
        out = fmt.format(**values) if method == "format" else fmt.format_map(values)
        sent = str(written(out))
    assert sent == '<script src="/a.js"></script>{<p>&lt;b&gt;</p>}<style>a{}</style>'
    plain = fmt.format(**values) if method == "format" else fmt.format_map(values)
    assert str(plain) == sent


def test_htmltext_of_a_value_used_as_a_format_takes_no_nonce(impl: SimpleNamespace) -> None:
    """Finding D's ``htmltext(value) % ()``: without the ``%`` the script is refused,
    and with it too."""
    value = "<script>alert(1)</script>"
    with nonce_scope(NONCE):
        outs = [
            impl.htmltext(value),
            impl.htmltext(value) % (),
            impl.htmltext(value).format(),
            impl.htmltext(value + "%s") % "x",
            impl.htmltext(value + "{}").format("x"),
            impl.htmltext(value + "{x}").format_map({"x": "x"}),
        ]
        sent = [str(written(out)) for out in outs]
    assert sent == [value, value, value, value + "x", value + "x", value + "x"]
    assert all(nonces(out) == [("script", None)] for out in outs)


def test_formats_with_a_tag_at_a_field_boundary(impl: SimpleNamespace) -> None:
    # At run time: the text, no nonce.
    with nonce_scope(NONCE):
        fmt = impl.htmltext("<script{}>1</script>")
        assert str(written(fmt.format(impl.htmltext(" async")))) == "<script async>1</script>"
        assert str(written(impl.htmltext("{}<style>a{{}}</style>{}").format(1, 2))) == (
            "1<style>a{}</style>2"
        )
        assert str(written(impl.htmltext("%(a)s<style>%%</style>") % {"a": 1})) == (
            "1<style>%</style>"
        )


BOUNDARY_PTL = """\
def attrs [html] (v):
    "<script%s>1</script>" % v

def fields [html] ():
    "{}<style>a{{}}</style>{}".format(1, 2)

def named [html] ():
    "%(a)s<style>%%</style>" % {"a": 1}
"""


def test_compiled_formats_with_a_tag_at_a_field_boundary() -> None:
    """The same formats, planned by the compiler: the literal tags take the nonce."""
    from ptl_helpers import compiled

    from ptl_wsgi.html import htmltext

    module = compiled(BOUNDARY_PTL, "csp_boundary")
    with nonce_scope(NONCE):
        assert str(written(module.attrs(htmltext(" async")))) == (
            f'<script async nonce="{NONCE}">1</script>'
        )
        assert str(written(module.fields())) == f'1<style nonce="{NONCE}">a{{}}</style>2'
        assert str(written(module.named())) == f'1<style nonce="{NONCE}">%</style>'


def test_run_time_formats_take_no_requests_nonce(impl: SimpleNamespace) -> None:
    fmt = impl.htmltext("<script>%s</script>")
    with nonce_scope("first"):
        first = written(fmt % 1)
    with nonce_scope("second"):
        second = written(fmt % 1)
    assert str(first) == str(second) == str(fmt % 1) == "<script> 1 </script>"


def test_no_cache_keeps_a_nonce(impl: SimpleNamespace) -> None:
    """Plans and cuts hold slots (offsets), never the nonce: it is per request."""
    from ptl_helpers import compiled

    from ptl_wsgi import _htmltext_py
    from ptl_wsgi.html import htmlformat

    marker = "CacheProbe123"
    module = compiled(
        'def f [html] (v):\n    "<script>var v = %s;</script><style>a{}</style>" % v\n',
        "csp_cache_probe",
    )
    template = Template("<script>var v = ", _Interpolation(1), ";</script>")
    with nonce_scope(marker):
        impl.htmltext("<script>var v = %s;</script><style>a{}</style>") % 1
        impl.htmltext("<script>var v = {0};</script>").format(1)
        assert marker in str(written(module.f(1)))  # (the planned paths ran)
        assert marker in str(written(htmlformat(template)))
    assert not any(marker in repr(found) for found in planner._PLANS.values())
    cells = [cell.cell_contents for cell in _htmltext_py._split_format.__closure__ or ()]
    assert cells and marker not in repr(cells)


# -- hostile: a value never obtains the nonce ------------------------------------------


HOSTILE = [
    "<script>alert(1)</script>",
    "<script src=//evil.example/x.js></script>",
    '"><script>alert(1)</script>',
    "'><style>*{}</style>",
    "x><link rel=stylesheet href=//evil.example/a.css>",
    '" nonce="',
    " nonce=",
    "<script",
    "<sCrIpT/x>",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize(
    "fmt",
    [
        "<p>%s</p>",
        '<p title="%s">x</p>',
        "<p title='%s'>x</p>",
        "<input value=%s>",
        '<a href="%s">x</a>',
        "<textarea>%s</textarea>",
        "<!-- %s -->",
        '<script src="%s"></script>',  # the literal's tag gets it, the value does not
        "<script>var v = %s;</script>",
        "<style>p { color: %s }</style>",
    ],
)
def test_a_value_never_obtains_the_nonce(impl: SimpleNamespace, fmt: str, value: str) -> None:
    # At run time no tag takes the nonce (finding D), the value's least of all.
    with nonce_scope(NONCE):
        out = str(written(impl.htmltext(fmt) % value))
    assert out.count(NONCE) == 0
    assert [name for name, nonce in nonces(out) if nonce is not None] == []
    # what the value spelled is text: no element of its own
    assert [name for name, _ in tags(out)] == [name for name, _ in tags(fmt % "v")]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize(
    "fmt",
    [
        '<p title="%s">x</p>',
        '<script src="%s"></script>',  # the literal's tag gets it, the value does not
        "<script>var v = %s;</script>",
        "<style>p { color: %s }</style>",
    ],
)
def test_a_value_in_a_compiled_format_never_obtains_the_nonce(fmt: str, value: str) -> None:
    from ptl_helpers import compiled

    literal_tags = sum(fmt.count(f"<{name}") for name in ("script", "style"))
    module = compiled(f"def f [html] (v):\n    {fmt!r} % v\n", "csp_value_in_format")
    with nonce_scope(NONCE):
        out = str(written(module.f(value)))
    assert out.count(NONCE) == literal_tags
    assert len([name for name, nonce in nonces(out) if nonce == NONCE]) == literal_tags
    assert [name for name, _ in tags(out)] == [name for name, _ in tags(fmt % "v")]


def test_markup_from_elsewhere_is_not_given_the_nonce(impl: SimpleNamespace) -> None:
    # Markup a value brings was not written by these literals: it keeps what it has.
    foreign = impl.htmltext("<script>alert(1)</script>")
    with nonce_scope(NONCE):
        out = impl.htmltext("<div>%s</div>") % foreign
        joined = impl.htmltext("").join([foreign])
    assert NONCE not in str(written(out)) and NONCE not in str(written(joined))


def test_a_value_cannot_spell_a_tag_the_engine_nonces(impl: SimpleNamespace) -> None:
    # "<script" by a value is refused where it would be markup (a tag name)
    with pytest.raises(ValueError), nonce_scope(NONCE):
        impl.htmltext("<%s src=/x.js></script>") % "script"
    with nonce_scope(NONCE):
        out = impl.htmltext("<scr%s>1</script>") % "ipt"  # the value is an attribute
    assert [name for name, _ in tags(out)] == ["scr"] and NONCE not in str(out)


@pytest.mark.parametrize(
    "bad", ['"><script>alert(1)</script>', "a b", "x'", "", "abc=def", "a;b", "\u00e9"]
)
def test_a_nonce_that_could_leave_its_attribute_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid CSP nonce"), nonce_scope(bad):
        pass
    with pytest.raises(ValueError, match="invalid CSP nonce"):
        content_security_policy(bad)
    with pytest.raises(ValueError, match="invalid CSP nonce"):
        in_nonce_scope([b""], bad)


def test_base64_nonces_are_accepted() -> None:
    for good in ("abc", "AbC+/09==", "a-b_c", "x="):
        with nonce_scope(good):
            assert csp_nonce() == good


@pytest.mark.skipif(sys.version_info < (3, 14), reason="t-strings are new in Python 3.14")
def test_tstrings_in_a_scope_nonce_their_literal_tags() -> None:
    from ptl_wsgi.html import htmlformat

    src, text = "/a.js", "<script>"
    template: Any = eval("t'<script src=\"{src}\"></script><p>{text}</p><style>a{{}}</style>'")
    assert (
        str(htmlformat(template))
        == '<script src="/a.js"></script><p>&lt;script&gt;</p><style>a{}</style>'
    )
    with nonce_scope(NONCE):
        out = str(written(htmlformat(template)))
    assert out == (
        f'<script src="/a.js" nonce="{NONCE}"></script><p>&lt;script&gt;</p>'
        f'<style nonce="{NONCE}">a{{}}</style>'
    )
    assert src and text  # (the names the t-string reads)


# -- compiled templates ------------------------------------------------------------------

PAGE_PTL = """\
def page [html] (src, title, text, color):
    "<!doctype html><html><head>"
    '<link rel="stylesheet" href="/site.css">'
    '<link rel="icon" href="/favicon.svg">'
    "<style>body { color: %s }</style>" % color
    '<script src="%s"></script>' % src
    f"<title>{title}</title></head><body>"
    "<script>"
    "window.ran = true;"
    "</script>"
    '<p title="%s">%s</p>' % (title, text)
    '<script nonce="own">1</script>'
    "</body></html>"

def loop [html] (items):
    for item in items:
        '<script src="%s"></script>' % item

def branches [html] (flag):
    if flag:
        '<script data-x="1"'
    else:
        '<script nonce="own"'
    ">1</script>"

def svg [html] ():
    "<svg><script>1</script><style>a{}</style></svg>"
"""

SPLIT_OFF = {"_SPLIT_OUTPUT": False}


@pytest.fixture(scope="module", params=[{}, SPLIT_OFF], ids=["split", "whole"])
def pages(request: pytest.FixtureRequest) -> Any:
    from ptl_helpers import compiled

    return compiled(PAGE_PTL, "csp_pages", **request.param)


PAGE_ARGS = ("/app.js", "T", "x", "red")


def test_compiled_output_outside_a_scope_is_unchanged(pages: Any) -> None:
    assert str(pages.page(*PAGE_ARGS)) == (
        '<!doctype html><html><head><link rel="stylesheet" href="/site.css">'
        '<link rel="icon" href="/favicon.svg"><style>body { color: red }</style>'
        '<script src="/app.js"></script><title>T</title></head><body>'
        '<script>window.ran = true;</script><p title="T">x</p>'
        '<script nonce="own">1</script></body></html>'
    )
    assert str(pages.loop(["/a.js"])) == '<script src="/a.js"></script>'
    assert str(pages.branches(True)) == '<script data-x="1">1</script>'


def test_compiled_templates_nonce_every_literal_script_and_style(pages: Any) -> None:
    with nonce_scope(NONCE):
        out = str(written(pages.page(*PAGE_ARGS)))
    assert nonces(out) == [
        ("html", None), ("head", None), ("link", NONCE), ("link", None), ("style", NONCE),
        ("script", NONCE), ("title", None), ("body", None), ("script", NONCE), ("p", None),
        ("script", "own"),
    ]  # fmt: skip
    assert out.count(NONCE) == 4


def test_loops_branches_and_svg(pages: Any) -> None:
    with nonce_scope(NONCE):
        assert str(written(pages.loop(["/a.js", "/b.js"]))) == (
            f'<script src="/a.js" nonce="{NONCE}"></script>'
            f'<script src="/b.js" nonce="{NONCE}"></script>'
        )
        assert str(written(pages.branches(True))) == (
            f'<script data-x="1" nonce="{NONCE}">1</script>'
        )
        # (the literal's own nonce comes first: browsers keep the first)
        assert nonces(pages.branches(False)) == [("script", "own")]
        assert (
            str(written(pages.svg()))
            == f'<svg><script nonce="{NONCE}">1</script><style nonce="{NONCE}">a{{}}</style></svg>'
        )


def test_the_nonce_is_not_in_the_compiled_code() -> None:
    """Compiled code (and so the bytecode cache) holds slots, never a nonce."""
    import marshal

    from ptl_wsgi.compiler import compile_ptl

    with nonce_scope("NonceInCode1"):
        code = compile_ptl(PAGE_PTL, "<page>")
    assert b"NonceInCode1" not in marshal.dumps(code)


def test_streamed_and_later_renders_take_their_own_requests_nonce(pages: Any) -> None:
    with nonce_scope("first"):
        first = pages.svg()
        assert str(written(first)).count('nonce="first"') == 2
    with nonce_scope("second"):
        second = pages.svg()
        # Written out in another request's scope: that request's nonce (a page made
        # in one and sent in another is the one sent).
        assert str(written(first)).count('nonce="second"') == 2
    assert str(written(second)).count('nonce="second"') == 2
    # Written out after its scope (a streamed body): the nonce of the scope it was made in.
    assert str(written(first)).count('nonce="first"') == 2
    assert "first" not in str(written(second))
    # The markup's own text holds no nonce, in a scope or out of one.
    assert str(first) == str(second) == str(pages.svg())
    assert "nonce" not in str(first)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_value_in_a_compiled_template_never_obtains_the_nonce(value: str) -> None:
    source = """
        def f [html] (v):
            "<p>%s</p>" % v
            '<p title="%s">x</p>' % v
            f"<input value={v}>"
            '<script src="/a.js?q=%s"></script>' % v
            "<textarea>%s</textarea>" % v
            "<style>p { content: '%s' }</style>" % v
            v
    """
    with nonce_scope(NONCE):
        out = render_sent(source, value)
    assert out.count(NONCE) == 2  # the literal <script> and <style>
    assert [name for name, nonce in nonces(out) if nonce == NONCE] == ["script", "style"]


@pytest.mark.parametrize(
    "source",
    [
        'def f [html] (v):\n    "<%s>1</script>" % v\n',
        'def f [html] (v):\n    f"<{v} src=/x.js></script>"\n',
        'def f [html] (v):\n    "<scr" + v\n',
    ],
)
def test_a_tag_spelled_by_a_value_is_refused_or_text(source: str) -> None:
    try:
        with nonce_scope(NONCE):
            out = render_sent(source, "script")
    except SyntaxError:
        return  # refused at compile time
    assert NONCE not in out and "<script" not in out


def test_strict_mode_makes_what_a_strict_policy_blocks_a_compile_error() -> None:
    from ptl_helpers import compiled

    with pytest.raises(SyntaxError, match="inline event handler onclick") as info:
        compiled(
            "__ptl_csp_strict__ = True\n\ndef f [html] ():\n    '<b onclick=\"go()\">x</b>'\n",
            "strict_module",
        )
    assert (info.value.lineno, info.value.offset) == (4, 9)
    with pytest.raises(SyntaxError, match="javascript: URL"):
        compiled(
            "def f [html] ():\n    __ptl_csp_strict__ = True\n"
            "    '<a href=\"javascript:go()\">x</a>'\n",
            "strict_template",
        )
    # elsewhere, the same markup compiles as before
    lax = compiled("def f [html] ():\n    '<b onclick=\"go()\">x</b>'\n", "lax")
    assert str(lax.f()) == '<b onclick="go()">x</b>'
    # a warning (a value for a script's src) is not an error in the strict mode
    ok = compiled(
        "__ptl_csp_strict__ = True\n\ndef f [html] (u):\n    '<script src=\"%s\"></script>' % u\n",
        "strict_ok",
    )
    assert str(ok.f("/a.js")) == '<script src="/a.js"></script>'


class _Interpolation:
    """Stands in for string.templatelib.Interpolation (before Python 3.14)."""

    def __init__(self, value: Any) -> None:
        self.value, self.expression, self.conversion, self.format_spec = value, "", None, ""


class Template:
    """Stands in for string.templatelib.Template: what the planner reads of one."""

    def __init__(self, *parts: Any) -> None:
        self.strings = tuple(part for part in parts if isinstance(part, str))
        self.interpolations = tuple(part for part in parts if not isinstance(part, str))


Template.__module__ = "string.templatelib"


def test_template_planning_nonces_the_literal_parts_on_any_python() -> None:
    from ptl_wsgi.html import htmlformat

    template = Template(
        '<script src="', _Interpolation("/a.js"), '"></script><p>', _Interpolation("<script>"),
        "</p><style>a{}</style>",
    )  # fmt: skip
    assert str(htmlformat(template)) == (
        '<script src="/a.js"></script><p>&lt;script&gt;</p><style>a{}</style>'
    )
    with nonce_scope(NONCE):
        out = str(written(htmlformat(template)))
    assert out == (
        f'<script src="/a.js" nonce="{NONCE}"></script><p>&lt;script&gt;</p>'
        f'<style nonce="{NONCE}">a{{}}</style>'
    )


PARTIAL_PTL = "def partial [html] ():\n    '<script src=\"/a.js\"></script>'\n"


@pytest.mark.parametrize(
    "parts",
    [('<p title="', '">x</p>'), ("<textarea>", "</textarea>"), ("<a href='", "'>x</a>")],
)
def test_a_templates_result_outside_a_tstrings_text_takes_no_nonce(
    parts: tuple[str, str],
) -> None:
    from ptl_helpers import compiled

    from ptl_wsgi.html import htmlformat

    module = compiled(PARTIAL_PTL, "csp_partial")
    with nonce_scope(NONCE):
        template = Template(
            parts[0], _Interpolation(module.partial()), parts[1] + "<style></style>"
        )
        out = str(written(htmlformat(template)))
    # (the t-string's own style takes it: the plan was the contextual one)
    assert out.count(NONCE) == 1 and f'<style nonce="{NONCE}">' in out


def test_a_templates_result_in_a_tstrings_text_keeps_its_nonce() -> None:
    from ptl_helpers import compiled

    from ptl_wsgi.html import htmlformat

    module = compiled(PARTIAL_PTL, "csp_partial")
    with nonce_scope(NONCE):
        template = Template("<div>", _Interpolation(module.partial()), "</div><style></style>")
        out = str(written(htmlformat(template)))
    assert nonces(out) == [("div", None), ("script", NONCE), ("style", NONCE)]
