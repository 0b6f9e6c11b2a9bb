"""Hostile tests from the attacker's review of out-of-place nonces (issue #31).

A literal evaluated out of place takes the nonce only if its value provably reaches
nothing but the template's output (names, conditionals, ``and``/``or``, ``+`` and a
literal's ``join``).  Whatever else reads it (a method's receiver, a call's argument, a
comparison, a key, ``len``, a hash) sees exactly the literal's text and it takes no nonce
(finding 1, 2, 5); a literal left open, or markup made out of place and output elsewhere
than in text, switches off every out-of-place nonce of its template (finding 3).  Both
twins.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ptl_helpers import compiled, json_of_both_twins
from test_csp_nonces import nonces

from ptl_wsgi.compiler import compile_ptl, csp_report
from ptl_wsgi.csp import nonce_scope

NONCE = "RevNonce_42"
VALUE = "1; window.ran = true"

# Finding 1: a value substituted into a literal after it is evaluated.
SUBSTITUTED = """\
import re
from string import Template
from markupsafe import Markup
from ptl_wsgi.html import htmltext

def fill(t, v):
    return t.replace("N", v)

def replaced [html] (v):
    '<script>var n = __Q__;</script>'.replace("__Q__", v)

def replaced_name [html] (v):
    s = '<script>var n = __Q__;</script>'
    s.replace("__Q__", v)

def markup_format [html] (v):
    Markup("<script>var n = {};</script>").format(v)

def markup_mod [html] (v):
    Markup("<script>var n = %s;</script>") % v

def templated [html] (v):
    htmltext(Template("<script>var n = $n;</script>").substitute(n=v))

def helper [html] (v):
    fill("<script>var n = N;</script>", v)

def helper_name [html] (v):
    s = "<script>var n = N;</script>"
    t = s
    fill(t, v)

def substituted [html] (v):
    re.sub("N", v, "<script>var n = N;</script>")

def stringified [html] (v):
    htmltext(str("<script>var n = X;</script>").replace("X", v))
"""

# Finding 2: what the program computes is the same in a scope and out of one.
COMPUTED = """\
import hashlib

def keyed [html] ():
    d = {'<style>a{}</style>': 'ok'}
    k = '<style>a{}</style>'
    d[k]

def compared [html] ():
    a = '<style>a{}</style>'
    str(a == '<style>a{}</style>')

def length [html] ():
    s = '<script src="/a.js"></script>'
    str(len(s))

def hashed [html] ():
    s = '<script>var a=1;</script>'
    hashlib.sha256(s.encode()).hexdigest()

def radd [html] (v):
    s = '<script src="/a.js"></script>'
    v.seen(s)
"""

# Finding 5: markup made out of place lands as a value (RCDATA, comment, attribute, URL).
AS_VALUE = """\
from urllib.parse import quote

def textarea [html] ():
    s = '<style>a{}</style>'
    '<textarea>%s</textarea>' % s

def comment [html] ():
    s = '<script src="/a.js"></script>'
    '<!-- %s -->' % s

def attribute [html] ():
    s = '<script src="/a.js"></script>'
    '<div title="%s">x</div>' % s

def attribute_chain [html] ():
    s = '<script src="/a.js"></script>'
    '<div title="' + s + '">x</div>'

def attribute_statement [html] ():
    s = '<script src="/a.js"></script>'
    '<div title="'
    s
    '">x</div>'

def url [html] ():
    s = '<script src="/a.js"></script>'
    '<a href="/x?h=%s">x</a>' % quote(s)

def textarea_statement [html] ():
    s = '<style>a{}</style>'
    '<textarea>'
    (s if s else '')
    '</textarea>'

def url_conditional [html] ():
    '<a href="/x?h='
    ('<script src="/a.js"></script>' if True else '')
    '">x</a>'

def fstring_field [html] ():
    s = '<script src="/a.js"></script>'
    f"<p>{s}</p>"
"""

# Finding 3: a literal left open in a tag or attribute before a nonced literal.
OPEN = """\
def chained [html] (v):
    opening = "<img src='"
    app = '<script src="/app.js"></script>'
    opening + v + app + "<p title='x'>"

def joined [html] (v):
    parts = ["<img src='", v, '<script src="/app.js"></script>', "<i class='x'>"]
    "".join(parts)

def through_a_call [html] (v):
    opening = "<img src='".upper().lower()
    app = '<script src="/app.js"></script>'
    opening + v + app + "<p title='x'>"
"""

CASES: dict[str, tuple[str, str, tuple[Any, ...]]] = {
    **{
        name: (SUBSTITUTED, name, (VALUE,))
        for name in (
            "replaced",
            "replaced_name",
            "markup_format",
            "markup_mod",
            "templated",
            "helper",
            "helper_name",
            "substituted",
            "stringified",
        )
    },
    **{name: (COMPUTED, name, ()) for name in ("keyed", "compared", "length", "hashed")},
    **{
        name: (AS_VALUE, name, ())
        for name in (
            "textarea",
            "comment",
            "attribute",
            "attribute_chain",
            "attribute_statement",
            "url",
            "textarea_statement",
            "url_conditional",
            "fstring_field",
        )
    },
    **{
        name: (OPEN, name, ("https://evil.example/?",))
        for name in ("chained", "joined", "through_a_call")
    },
}

MODULES = {"substituted": SUBSTITUTED, "computed": COMPUTED, "as_value": AS_VALUE, "open": OPEN}


def render(source: str, name: str, args: tuple[Any, ...], scope: bool) -> str:
    module = compiled(source, "csp_review_" + str(abs(hash(source))))
    if scope:
        with nonce_scope(NONCE):
            return str(getattr(module, name)(*args))
    return str(getattr(module, name)(*args))


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_review_case_takes_the_nonce_or_changes_in_a_scope(case: str) -> None:
    """Each renders in a nonce scope exactly as outside one: no nonce anywhere."""
    source, name, args = CASES[case]
    inside = render(source, name, args, scope=True)
    assert NONCE not in inside
    assert inside == render(source, name, args, scope=False)


def test_a_value_substituted_into_a_literal_is_never_in_a_nonced_script() -> None:
    out = render(SUBSTITUTED, "replaced", (VALUE,), scope=True)
    assert out == "<script>var n = 1; window.ran = true;</script>"
    assert nonces(out) == [("script", None)]


def test_the_nonce_never_reaches_a_values_methods() -> None:
    seen: list[str] = []

    class Spy:
        def seen(self, text: str) -> str:
            seen.append(str(text))
            return ""

    render(COMPUTED, "radd", (Spy(),), scope=True)
    assert seen == ['<script src="/a.js"></script>']


def test_each_review_case_is_reported() -> None:
    kinds = {
        kind
        for source in (SUBSTITUTED, COMPUTED, AS_VALUE, OPEN)
        for _, _, kind, _ in csp_report(source, "review.ptl")
    }
    assert {"used-no-nonce", "open-no-nonce", "sink-no-nonce"} <= kinds
    found = [(line, kind) for line, _, kind, _ in csp_report(OPEN, "open.ptl")]
    assert (2, "open-no-nonce") in found and (7, "open-no-nonce") in found
    found = [(line, kind) for line, _, kind, _ in csp_report(AS_VALUE, "value.ptl")]
    assert (17, "sink-no-nonce") in found and (22, "sink-no-nonce") in found


def test_written_literals_still_take_the_nonce() -> None:
    source = """\
def page [html] (flag, v):
    external = '<script src="/app.js"></script>'
    inline = "<script>window.a = 1;</script>" if flag else ""
    parts = ['<link rel="stylesheet" href="/a.css">', inline]
    "<p>" + v + "</p>"
    "".join(parts)
    external
    x = "<b>"
    x += "<style>p{}</style>"
    x
    ("<style>q{}</style>" if flag else "") + "<i>" + v + "</i>"
    [external for _ in range(1) if flag]
"""
    module = compiled(source, "csp_review_written")
    with nonce_scope(NONCE):
        out = str(module.page(True, "<v>"))
    assert [tag for tag, nonce in nonces(out) if nonce == NONCE] == [
        "link",
        "script",
        "script",
        "style",
        "style",
        "script",
    ]
    assert out.replace(f' nonce="{NONCE}"', "") == str(module.page(True, "<v>"))


@pytest.mark.parametrize(
    "body",
    [
        "    a = \"<img src='\"\n    b = '<script></script>'\n    a\n    b\n",
        "    b = '<script></script>'\n    b.strip()\n    b\n",
        "    b = '<script></script>'\n    '<p title=\"'\n    b\n    '\">'\n",
    ],
    ids=["open", "used", "sink"],
)
def test_strict_mode_refuses_what_could_carry_the_nonce_elsewhere(body: str) -> None:
    source = "__ptl_csp_strict__ = True\ndef page [html] ():\n" + body
    with pytest.raises(SyntaxError, match="automatic nonce"):
        compile_ptl(source, "strict_review.ptl")


def test_a_name_read_by_a_nested_function_or_locals_takes_no_nonce() -> None:
    source = """\
def nested [html] ():
    s = '<script>var a = 1;</script>'
    def show():
        return s.replace("1", "2")
    s

def frame [html] ():
    s = '<script>var a = 1;</script>'
    locals()["s"]
    s
"""
    module = compiled(source, "csp_review_scopes")
    with nonce_scope(NONCE):
        assert NONCE not in str(module.nested()) + str(module.frame())
    frames = """\
import sys

def f [html] ():
    s = '<script>var a = 1;</script>'
    sys._getframe().f_locals["s"]
    s
"""
    with nonce_scope(NONCE):
        assert NONCE not in str(compiled(frames, "csp_review_frames").f())


def test_a_nonced_format_is_not_formatted_again() -> None:
    """A literal's % result taken as a format (`.format()` of it) takes no nonce where it
    is evaluated: the run-time formatting finds the places itself, and no plan is keyed
    by a nonce."""
    source = """\
def f [html] (v):
    ('<script>var a = %s;</script>' % ("{}",)).format(v)
"""
    module = compiled(source, "csp_review_reformat")
    with nonce_scope(NONCE):
        out = str(module.f("1; x"))
    assert out.count(NONCE) == 1
    assert nonces(out) == [("script", NONCE)]
    found = [(line, kind) for line, _, kind, _ in csp_report(source, "reformat.ptl")]
    assert found == [(2, "used-no-nonce")]


RENDER_ALL = """
import json, sys
sys.path.insert(0, sys.argv[3])
from ptl_helpers import compiled
from ptl_wsgi import html
from ptl_wsgi.csp import nonce_scope
modules = json.loads(sys.argv[1])
cases = json.loads(sys.argv[2])
out = {"twin": html.IMPLEMENTATION}
for case, (key, name, args) in cases.items():
    module = compiled(modules[key], "twin_" + key)
    out[case] = str(getattr(module, name)(*args))
    with nonce_scope("Tw1nNonce"):
        out[case + ":on"] = str(getattr(module, name)(*args))
print(json.dumps(out))
"""


def test_both_twins_render_the_review_cases_alike() -> None:
    keys = {source: key for key, source in MODULES.items()}
    cases = {case: (keys[src], name, list(args)) for case, (src, name, args) in CASES.items()}
    support = str(__import__("pathlib").Path(__file__).parents[1] / "support")
    modules = json.dumps(MODULES)
    python, c = json_of_both_twins("-c", RENDER_ALL, modules, json.dumps(cases), support)
    assert python == c
    assert not any("Tw1nNonce" in text for text in python.values())
