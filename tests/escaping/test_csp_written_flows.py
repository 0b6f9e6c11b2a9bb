"""Hostile tests from the attacker's review of out-of-place nonces (issue #31).

A literal evaluated out of place takes the nonce only if its value provably reaches
nothing but the template's output (names, conditionals, ``and``/``or``, ``+`` and a
literal's ``join``).  Whatever else reads it (a method's receiver, a call's argument, a
comparison, a key, ``len``, a hash) sees exactly the literal's text and it takes no nonce
(finding 1, 2, 5); a literal left open, or markup made out of place and output elsewhere
than in text, switches off every out-of-place nonce of its template (finding 3).

The second review's findings (A-D), closed by the nonce carrier: a template's result
carries nonce slots, not the nonce, which goes in only when the page is written out
(``csp.written``, used by ``render`` here as by every response); whatever substitutes a
value into it (A), outputs it outside text (B), receives it as an operand (C) or
formats a text no literal wrote at run time (D) sees no nonce.  Both twins.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ptl_helpers import compiled, json_of_both_twins
from test_csp_nonces import nonces

from ptl_wsgi.compiler import compile_ptl, csp_report
from ptl_wsgi.csp import nonce_scope, written

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

# Review 2, finding A: a value substituted into another template's result (markup that
# carries nonce slots: every operation but the engine's own sees its text without them).
RESULTS = """\
from markupsafe import Markup
from ptl_wsgi.html import htmltext

def script [html] ():
    '<script>var n = __Q__;</script>'

def braced [html] ():
    '<script>var n = {};</script>'

def fill(t, v):
    return htmltext(t.replace("__Q__", v))

def result_replaced [html] (v):
    script().replace("__Q__", v)

def result_markup_format [html] (v):
    Markup(braced()).format(v)

def result_rewrapped [html] (v):
    htmltext(str(script()).replace("__Q__", v))

def result_helper [html] (v):
    fill(script(), v)

def result_sliced [html] (v):
    s = script()
    s[:15] + htmltext(v) + s[22:]

def result_in_url [html] (v):
    f"<img src='{v}{script()}'>"

def result_in_comment [html] (v):
    "<!-- %s -->" % script()
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
    **{
        name: (RESULTS, name, (VALUE,))
        for name in (
            "result_replaced",
            "result_markup_format",
            "result_rewrapped",
            "result_helper",
            "result_sliced",
            "result_in_url",
            "result_in_comment",
        )
    },
}

MODULES = {
    "substituted": SUBSTITUTED,
    "computed": COMPUTED,
    "as_value": AS_VALUE,
    "open": OPEN,
    "results": RESULTS,
}


def render(source: str, name: str, args: tuple[Any, ...], scope: bool) -> str:
    """What a response gets of *name*'s output (``csp.written``), in a scope or not."""
    module = compiled(source, "csp_review_" + str(abs(hash(source))))
    if scope:
        with nonce_scope(NONCE):
            return str(written(getattr(module, name)(*args)))
    return str(written(getattr(module, name)(*args)))


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
        def seen(self, text: Any) -> str:
            seen.extend([str(text), text.encode().decode()])
            return ""

    render(COMPUTED, "radd", (Spy(),), scope=True)
    assert seen == ['<script src="/a.js"></script>'] * 2


def test_a_substituted_template_result_never_runs_with_the_nonce() -> None:
    """Review 2, finding A: each script holds the value and runs without the nonce."""
    for name in ("result_replaced", "result_markup_format", "result_rewrapped", "result_helper"):
        out = render(RESULTS, name, (VALUE,), scope=True)
        assert out == "<script>var n = 1; window.ran = true;</script>", name
        assert nonces(out) == [("script", None)], name
    # (the same template's result, output as it is, does take it)
    with nonce_scope(NONCE):
        module = compiled(RESULTS, "csp_review_results")
        assert nonces(module.script()) == [("script", NONCE)]


# -- review 2: another template's result as a value of this one ------------------------

EXTERNAL = '<script src="/app.js"></script>'

LANDS = """\
def ext [html] ():
    '<script src="/app.js"></script>'

def text [html] ():
    "<div>"
    ext()
    f"<p>{ext()}</p>"
    "<p>%s</p>" % ext()
    "<b>" + ext() + "</b>"
    "".join(["<i>", ext(), "</i>"])
    "</div>"

def url [html] (v):
    f"<img src='{v}{ext()}'>"

def url_statement [html] (v):
    "<img src='"
    v
    ext()
    "'>"

def href [html] (v):
    '<a href="%s">x</a>' % ext()

def comment [html] (v):
    "<!-- %s -->" % ext()

def attribute [html] (v):
    f"<input name=x value='{ext()}'>"

def attribute_format [html] (v):
    '<p title="%s">x</p>' % ext()

def attribute_statement [html] (v):
    "<input name=x value='"
    ext()
    "'>"

def attribute_method_format [html] (v):
    '<p title="{}">x</p>'.format(ext())

def unquoted [html] (v):
    "<p title=" + ext() + ">"

def added_attribute [html] (v):
    '<p title="' + ext() + '">x</p>'

def added_url [html] (v):
    "<img src='" + v + ext() + "'>"

def added_in_place_url [html] (v):
    x = "<a href='"
    x += v
    x += ext()
    x += "'>x</a>"
    x

def added_textarea [html] (v):
    "<textarea>" + ext() + "</textarea>"

def joined_textarea [html] (v):
    "".join(["<textarea>", ext(), "</textarea>"])

def textarea [html] (v):
    "<textarea>"
    ext()
    "</textarea>"

def textarea_fstring [html] (v):
    f"<textarea>{ext()}</textarea>"

def title [html] (v):
    "<title>%s</title>" % ext()

def xmp [html] (v):
    "<xmp>%s</xmp>" % ext()

def noscript [html] (v):
    "<noscript>%s</noscript>" % ext()
"""


def test_another_templates_result_in_text_takes_the_nonce() -> None:
    with nonce_scope(NONCE):
        out = str(written(compiled(LANDS, "csp_review_lands").text()))
    assert [tag for tag, nonce in nonces(out) if nonce == NONCE] == ["script"] * 5
    assert out.replace(f' nonce="{NONCE}"', "") == str(compiled(LANDS, "lands_off").text())


@pytest.mark.parametrize(
    "name",
    [
        "url",
        "url_statement",
        "href",
        "comment",
        "attribute",
        "attribute_format",
        "attribute_statement",
        "attribute_method_format",
        "textarea",
        "textarea_fstring",
        "title",
        "xmp",
        "noscript",
        # added (+, +=, join) after markup that leaves text: the carrier keeps its slots
        # only where what comes before it ends in text
        "unquoted",
        "added_attribute",
        "added_url",
        "added_in_place_url",
        "added_textarea",
        "joined_textarea",
    ],
)
def test_another_templates_result_outside_text_takes_no_nonce(name: str) -> None:
    """Review 2, finding B: where the result is not markup in text (a URL, an attribute,
    RCDATA, raw text, a comment) the nonce would go to a host a value picks or be
    submitted with a form: it takes none there."""
    module = compiled(LANDS, "csp_review_lands")
    with nonce_scope(NONCE):
        out = str(written(getattr(module, name)("https://evil.example/?")))
    assert NONCE not in out
    assert out == str(written(getattr(module, name)("https://evil.example/?")))


# -- review 2: a value's own operators ----------------------------------------------------

OPERATORS = """\
def ext [html] ():
    '<script src="/app.js"></script>'

def left [html] (v):
    v + '<script src="/app.js"></script>'

def right [html] (v):
    '<script src="/app.js"></script>' + v

def in_place [html] (v):
    a = v
    a += '<script src="/app.js"></script>'
    a

def left_result [html] (v):
    v + ext()

def right_result [html] (v):
    ext() + v

def called_with_result [html] (v):
    v.seen(ext())
"""


@pytest.mark.parametrize("read", ["str", "format"])
@pytest.mark.parametrize(
    "name", ["left", "right", "in_place", "left_result", "right_result", "called_with_result"]
)
def test_a_values_operator_never_receives_the_nonce(name: str, read: str) -> None:
    """Review 2, finding C: a value of the app's type whose ``+`` (or a method) receives
    a literal or another template's result sees its text without the nonce, however it
    reads it."""
    from ptl_wsgi.html import htmltext

    got: list[str] = []

    def reads(other: Any) -> str:
        # (encode() is the page as sent: the one read that writes the nonce in)
        return str(other) if read == "str" else f"{other}"

    class Value:
        def __add__(self, other: Any) -> Any:
            got.append(reads(other))
            return htmltext("")

        __radd__ = __iadd__ = seen = __add__

    module = compiled(OPERATORS, "csp_review_operators")
    with nonce_scope(NONCE):
        getattr(module, name)(Value())
    assert got == [EXTERNAL]


# -- review 2: a translation or a value as the format -------------------------------------

FORMATS = """\
from ptl_wsgi.html import htmltext
from ptl_wsgi.i18n import gettext as _

def percent [html] (name):
    _("Hello <b>%s</b>") % name

def braces [html] (name):
    _("Bye <b>{}</b>").format(name)

def plain [html] (name):
    _("Hi")

def value_as_format [html] (v):
    htmltext(v) % ()
    htmltext(v).format()
"""


@pytest.mark.parametrize("name", ["percent", "braces", "plain", "value_as_format"])
def test_a_format_no_literal_wrote_never_runs_with_the_nonce(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 2, finding D: a translation (here one that adds a script) or a value made
    the format of ``%`` or ``.format`` at run time: the script takes no nonce."""
    import gettext

    from ptl_wsgi import i18n

    added = "<script>window.translatorRan = true</script>"

    class Catalog(gettext.NullTranslations):
        def gettext(self, message: str) -> str:
            return {
                "Hello <b>%s</b>": "Bonjour <b>%s</b>" + added,
                "Bye <b>{}</b>": "Salut <b>{}</b>" + added,
                "Hi": "Salut" + added,
            }[message]

    monkeypatch.setattr(i18n, "backend", Catalog)
    module = compiled(FORMATS, "csp_review_formats")
    arg = added if name == "value_as_format" else "bob"
    with nonce_scope(NONCE):
        out = str(written(getattr(module, name)(arg)))
    assert NONCE not in out
    scripts = [nonce for tag, nonce in nonces(out) if tag == "script"]
    assert scripts == [None] * (2 if name == "value_as_format" else 1)


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
        out = str(written(module.page(True, "<v>")))
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
        assert NONCE not in str(written(module.nested())) + str(written(module.frame()))
    frames = """\
import sys

def f [html] ():
    s = '<script>var a = 1;</script>'
    sys._getframe().f_locals["s"]
    s
"""
    with nonce_scope(NONCE):
        assert NONCE not in str(written(compiled(frames, "csp_review_frames").f()))


def test_a_nonced_format_is_not_formatted_again() -> None:
    """A literal's % result taken as a format (`.format()` of it) takes no nonce where it
    is evaluated (it is a receiver), and the run-time ``.format`` gives none either
    (review 2, finding D): the script fails closed, and the report says why."""
    source = """\
def f [html] (v):
    ('<script>var a = %s;</script>' % ("{}",)).format(v)
"""
    module = compiled(source, "csp_review_reformat")
    with nonce_scope(NONCE):
        out = str(written(module.f("1; x")))
    assert out == '<script>var a =  "1; x" ;</script>'
    assert nonces(out) == [("script", None)]
    found = [(line, kind) for line, _, kind, _ in csp_report(source, "reformat.ptl")]
    assert found == [(2, "used-no-nonce")]


RENDER_ALL = """
import json, sys
sys.path.insert(0, sys.argv[3])
from ptl_helpers import compiled
from ptl_wsgi import html
from ptl_wsgi.csp import nonce_scope, written
modules = json.loads(sys.argv[1])
cases = json.loads(sys.argv[2])
out = {"twin": html.IMPLEMENTATION}
for case, (key, name, args) in cases.items():
    module = compiled(modules[key], "twin_" + key)
    out[case] = str(written(getattr(module, name)(*args)))
    with nonce_scope("Tw1nNonce"):
        out[case + ":on"] = str(written(getattr(module, name)(*args)))
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
