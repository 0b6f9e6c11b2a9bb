"""Nonces for literals that reach output indirectly (issue #31, part 2).

A literal of an ``[html]`` template that writes a ``<script>``, ``<style>`` or
stylesheet ``<link>`` start tag but is not output where it stands (assigned, chosen
by a conditional, added with ``+``, put in a list that is joined, formatted with
``%`` or as an f-string where it stands) carries the request's nonce slots, inside a
nonce scope, for each element it writes whole, if its value reaches nothing but
output (one passed to a call takes none: test_csp_written_flows); the nonce goes in
when the page is written out (``csp.written``).  Outside a scope the output is
exactly what it was.  A format held in a name and formatted later is formatted at
run time, which gives no nonce (review 2, finding D).  A value never obtains the
nonce: one added with ``+`` into a script, a style or a nonced tag (only
HTML-escaped there) leaves the element without it.  Both twins."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from ptl_helpers import compiled, json_of_both_twins
from test_csp_nonces import HOSTILE, Template, _Interpolation, nonces, render_sent, tags

from ptl_wsgi.csp import nonce_scope, written

NONCE = "N0nce-Indirect_1"

PATHS = """\
import re
from ptl_wsgi.i18n import gettext as _

def assigned [html] ():
    s = '<script src="/a.js"></script>'
    "<p>x</p>"
    s

def conditional [html] (dark):
    "<p>"
    ("<style>p{}</style>" if dark else "")
    "</p>"

def added [html] (n):
    "<p>" + "<script>var a = 1;</script>"
    f"<style>p {{ order: {n} }}" + "</style>"
    "<script src=/a.js" + ' type="module"' + "></script>"

def wrap [html] (head):
    "<head>"
    head
    "</head>"

def passed [html] ():
    wrap('<link rel="stylesheet" href="/a.css">')

def keyword [html] ():
    wrap(head="<style>a{}</style>")

def joined [html] ():
    parts = ['<script src="/a.js"></script>', "<style>a{}</style>", "<p>x</p>"]
    "".join(parts)

def helper [html] ():
    s = "<script>window.h = 1;</script>"
    s

def returned [html] ():
    helper()

def formatted [html] (u):
    s = '<script src="%s"></script>' % u
    s

def fstring [html] (n):
    s = f"<script>var n = {n};</script>"
    s

def own_fstring [html] (n):
    f"<script>var n = {n};</script>"

def tstring_like [html] (n):
    parts = [f"<style>p {{ order: {n} }}</style>"]
    "".join(parts)

def later_format [html] (v):
    fmt = "<script>var v = %s;</script>"
    fmt % v

def compared [html] (v):
    if v == "<style>a{}</style>" or v in ("<script></script>", "<p>"):
        "same"
    else:
        "other"

def keyed [html] (v):
    table = {"<script></script>": "s"}
    table.get(v, "") + str(v.startswith("<style></style>"))
    str(table.get("<script></script>", 0))
    str(re.sub("<style>", "", v) == v)

def translated [html] ():
    _("<style>p{}</style>")
"""

EXPECTED_OFF = {
    "assigned": '<p>x</p><script src="/a.js"></script>',
    "conditional": "<p><style>p{}</style></p>",
    "added": (
        "<p><script>var a = 1;</script><style>p { order: 3 }</style>"
        '<script src=/a.js type="module"></script>'
    ),
    "passed": '<head><link rel="stylesheet" href="/a.css"></head>',
    "keyword": "<head><style>a{}</style></head>",
    "joined": '<script src="/a.js"></script><style>a{}</style><p>x</p>',
    "returned": "<script>window.h = 1;</script>",
    "formatted": '<script src="/b.js"></script>',
    "fstring": "<script>var n =  3 ;</script>",
    "own_fstring": "<script>var n =  3 ;</script>",
    "tstring_like": "<style>p { order: 3 }</style>",
    "later_format": '<script>var v =  "a" ;</script>',
}
ARGS: dict[str, tuple[Any, ...]] = {
    "conditional": (True,),
    "added": (3,),
    "formatted": ("/b.js",),
    "fstring": (3,),
    "own_fstring": (3,),
    "tstring_like": (3,),
    "later_format": ("a",),
}
# The tags that take the nonce in each, in order.
NONCED = {
    "assigned": ["script"],
    "conditional": ["style"],
    "added": ["script", "style", "script"],
    "passed": [],  # (an argument of a call: its value could go anywhere)
    "keyword": [],
    "joined": ["script", "style"],
    "returned": ["script"],
    "formatted": ["script"],
    "fstring": ["script"],
    "own_fstring": ["script"],
    "tstring_like": ["style"],
    # (a format held in a name is formatted at run time: no nonce, finding D)
    "later_format": [],
}


@pytest.fixture(scope="module", params=[{}, {"_SPLIT_OUTPUT": False}], ids=["split", "whole"])
def paths(request: pytest.FixtureRequest) -> Any:
    return compiled(PATHS, "csp_indirect", **request.param)


def render(module: Any, name: str) -> str:
    """What a response gets of *name*'s output (``csp.written``)."""
    return str(written(getattr(module, name)(*ARGS.get(name, ()))))


@pytest.mark.parametrize("name", sorted(EXPECTED_OFF))
def test_outside_a_scope_the_output_is_what_the_literals_say(paths: Any, name: str) -> None:
    assert render(paths, name) == EXPECTED_OFF[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_OFF))
def test_every_indirect_literal_tag_takes_the_nonce(paths: Any, name: str) -> None:
    with nonce_scope(NONCE):
        out = render(paths, name)
    assert [tag for tag, nonce in nonces(out) if nonce == NONCE] == NONCED[name]
    assert out.count(NONCE) == len(NONCED[name])
    # the nonce attribute is all that is added
    assert out.replace(f' nonce="{NONCE}"', "") == EXPECTED_OFF[name]


def test_literals_compared_or_used_as_keys_are_left_as_they_are(paths: Any) -> None:
    with nonce_scope(NONCE):
        assert str(paths.compared("<style>a{}</style>")) == "same"
        assert str(paths.compared("<script></script>")) == "same"
        assert str(paths.keyed("<script></script>")) == "sFalsesTrue"
        assert str(paths.keyed("<style></style>x")) == "TruesFalse"


def test_a_msgid_is_looked_up_by_its_text(paths: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A msgid takes no nonce (its translation is found by its text; reported)."""
    import gettext

    from ptl_wsgi import i18n

    class Catalog(gettext.NullTranslations):
        def gettext(self, message: str) -> str:
            return {"<style>p{}</style>": "<style>p{color:red}</style>"}.get(message, message)

    monkeypatch.setattr(i18n, "backend", Catalog)
    with nonce_scope(NONCE):
        assert str(written(paths.translated())) == "<style>p{color:red}</style>"


def test_each_request_gets_its_own_nonce_and_none_is_kept(paths: Any) -> None:
    with nonce_scope("first"):
        first = render(paths, "formatted")
    with nonce_scope("second"):
        second = render(paths, "formatted")
    assert 'nonce="first"' in first and 'nonce="second"' in second
    assert "first" not in second
    assert render(paths, "formatted") == EXPECTED_OFF["formatted"]


# -- text that spells the nonce, as a format (both twins) --------------------------------


def test_a_format_keeps_its_text_whatever_nonce_it_holds(impl: SimpleNamespace) -> None:
    """A format's text that spells the current nonce is its text: run-time formatting
    adds no nonce (finding D) and takes none out."""
    with nonce_scope("N"):
        styled = written(impl.htmltext('<style> nonce="N"</style>%s') % "x")
        area = written(impl.htmltext('<textarea> nonce="N"</textarea>%s') % "x")
        data = written(impl.htmltext('<p data-x=" nonce="N"">%s</p>') % "x")
        braces = written(impl.htmltext('<b> nonce="N"</b>{}').format("<i>"))
    assert str(styled) == '<style> nonce="N"</style>x'
    assert str(area) == '<textarea> nonce="N"</textarea>x'
    assert str(data) == '<p data-x=" nonce="N"">x</p>'
    assert str(braces) == '<b> nonce="N"</b>&lt;i&gt;'


def test_a_compiled_format_keeps_its_text_whatever_nonce_it_holds() -> None:
    """The compiler plans a format by its text as written, the nonce in it included
    (review 1, finding 6), and the nonce goes in only at the tags that take it."""
    source = """
        def f [html] (v):
            '<style> nonce="N"</style>%s' % v
            '<textarea> nonce="N"</textarea>%s' % v
            '<p data-x=" nonce="N"">%s</p>' % v
            '<b> nonce="N"</b>{}'.format(v)
    """
    with nonce_scope("N"):
        out = render_sent(source, "<i>")
    assert out == (
        '<style nonce="N"> nonce="N"</style>&lt;i&gt;'
        '<textarea> nonce="N"</textarea>&lt;i&gt;'
        '<p data-x=" nonce="N"">&lt;i&gt;</p>'
        '<b> nonce="N"</b>&lt;i&gt;'
    )


def test_another_requests_nonce_in_a_format_is_left_alone(impl: SimpleNamespace) -> None:
    # Markup kept from another request (an app's cache) keeps its stale nonce: it
    # fails the visible way (the browser refuses the script), as cached output does.
    fmt = impl.htmltext('<script nonce="old">var v = %s;</script>')
    with nonce_scope("new"):
        out = str(written(fmt % 1))
    assert nonces(out) == [("script", "old")]
    assert "new" not in out


# -- hostile: a value never obtains the nonce --------------------------------------------

HOSTILE_PTL = """\
def f [html] (v):
    a = v
    a
    b = "<p>" + v + "</p>"
    b
    c = ('<p title="%s">x</p>' % v) if v else ""
    c
    d = f"<input value={v}>"
    d
    e = [v, "<i>", v]
    "".join(e)
    g = "<p>%s</p>" % v
    g % ()
    h = "<b>" + v
    (h + "</b>") % ()
    t = '<script src="/a.js?q=%s"></script>' % v
    t
"""


@pytest.mark.parametrize("value", HOSTILE)
def test_a_value_never_obtains_the_nonce_by_an_indirect_path(value: str) -> None:
    with nonce_scope(NONCE):
        out = render_sent(HOSTILE_PTL, value)
    assert out.count(NONCE) == 1  # the literal <script> of t
    assert [name for name, nonce in nonces(out) if nonce == NONCE] == ["script"]
    assert [name for name, _ in tags(out)].count("script") == 1


ADDED_PTL = """\
def added [html] (body):
    "<script>" + body + "</script>"

def added_in_tag [html] (body):
    "<script src=" + body + "></script>"

def added_later [html] (body):
    s = "<script>"
    s + body + "</script>"

def joined [html] (body):
    "".join(["<script>", body, "</script>"])

def styled [html] (body):
    x = "<style>p{}</style><style>"
    x + body + "</style>"
"""


@pytest.mark.parametrize("value", [*HOSTILE, "alert(1)", "x onload=alert(1)"])
@pytest.mark.parametrize("name", ["added", "added_in_tag", "added_later", "joined", "styled"])
def test_a_value_added_into_a_script_or_style_never_runs_with_the_nonce(
    name: str, value: str
) -> None:
    """``+`` and ``join`` only HTML-escape a value: inside a script's text or a nonced
    tag it would decide what runs, so the element it lands in takes no nonce."""
    module = compiled(ADDED_PTL, "csp_added")
    with nonce_scope(NONCE):
        out = str(written(getattr(module, name)(value)))
    # (styled: its first style is written whole, but the literal leaves a style open, so
    # no literal evaluated out of place in the template takes the nonce)
    assert out.count(NONCE) == 0
    assert out.replace(f' nonce="{NONCE}"', "") == str(getattr(module, name)(value))


@pytest.mark.parametrize("value", HOSTILE)
def test_a_markup_value_is_not_given_the_nonce(value: str) -> None:
    from ptl_wsgi.html import htmltext

    # (Not as the format of run-time formatting: a format is trusted markup whole, and
    # markup a value brings into one is the format's; see docs/security.md.)
    source = HOSTILE_PTL.split("    g = ")[0]
    with nonce_scope(NONCE):
        out = render_sent(source, htmltext(value))
    assert NONCE not in out


@pytest.mark.parametrize("value", HOSTILE)
def test_a_value_that_becomes_the_format_never_obtains_the_nonce(
    impl: SimpleNamespace, value: str
) -> None:
    # The format is markup built with a value: the value's text is escaped in it, so
    # no tag of the value's is ever planned, with or without the current nonce.
    spelled = value + f' nonce="{NONCE}"'
    with nonce_scope(NONCE):
        fmt = impl.htmltext("<p>") + spelled + impl.htmltext("%s</p>")
        out = str(written(fmt % "x"))
    assert "<script" not in out.lower().replace("&lt;script", "")
    assert [name for name, _ in tags(out)] == ["p"]
    assert f'nonce="{NONCE}"' not in out


def test_a_tstring_interpolation_never_obtains_the_nonce() -> None:
    from ptl_wsgi.html import htmlformat, htmltext

    for value in (*HOSTILE, htmltext("<script>1</script>")):
        template = Template("<p>", _Interpolation(value), "</p><style>a{}</style>")
        with nonce_scope(NONCE):
            out = str(written(htmlformat(template)))
        assert out.count(NONCE) == 1
        assert [name for name, nonce in nonces(out) if nonce == NONCE] == ["style"]


# -- both twins render compiled templates alike ------------------------------------------

RENDER_ALL = """
import json, sys, types
from ptl_wsgi import html
from ptl_wsgi.compiler import compile_ptl
from ptl_wsgi.csp import nonce_scope, written
module = types.ModuleType("paths")
exec(compile_ptl(sys.argv[1], "<paths>"), module.__dict__)
args = json.loads(sys.argv[2])
out = {"twin": html.IMPLEMENTATION}
for name, values in args.items():
    out[name] = str(written(getattr(module, name)(*values)))
    with nonce_scope("Tw1nNonce"):
        out[name + ":on"] = str(written(getattr(module, name)(*values)))
print(json.dumps(out))
"""


def test_both_twins_render_the_indirect_paths_alike() -> None:
    args = {name: list(ARGS.get(name, ())) for name in EXPECTED_OFF}
    python, c = json_of_both_twins("-c", RENDER_ALL, PATHS, json.dumps(args))
    assert python == c
    assert python["formatted:on"].count('nonce="Tw1nNonce"') == 1
    assert python["later_format:on"] == python["later_format"]  # (finding D)


def test_a_chain_inside_a_call_in_a_chain_is_followed_on_its_own() -> None:
    source = """
        def wrap [html] (markup):
            markup

        def f [html] (u):
            "<p>" + wrap("<script src=" + "/a.js" + "></script>")
            x = "<b>" + ("<script src=/b.js" + "></script>")
            x
    """
    with nonce_scope(NONCE):
        out = render_sent(source, "/u")
    # (the first is an argument of a call: it takes none)
    assert [name for name, nonce in nonces(out) if nonce == NONCE] == ["script"]
    assert 'src=/b.js nonce="' in out


def test_the_compiled_code_holds_no_nonce() -> None:
    """Compiled code (and so the bytecode cache) holds the places, never a nonce."""
    import marshal

    from ptl_wsgi.compiler import compile_ptl

    with nonce_scope("NonceInCode2"):
        code = compile_ptl(PATHS + ADDED_PTL, "<paths>")
    assert b"NonceInCode2" not in marshal.dumps(code)
