"""The contextual escapers of both twins give the same output for every value.

The Python twin's escapers are the reference (``ptl_wsgi.escaping.escapers.build``);
the C twin answers common values from each escaper's plan (tables the reference
makes of its own functions) and calls the reference for the rest.  These tests
hold the C escapers to the reference: arbitrary text with every ASCII character,
controls, surrogates, astral characters and the pieces of URLs, scripts and
styles; ints, floats, bools, None, markup and other objects; and, exhaustively,
the claim of a plan that its escaper keeps every character outside ASCII that the
C twin does not leave to the reference.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup

from ptl_wsgi.escaping.escapers import build, for_class

DIFF = settings(max_examples=300)

# Pieces that steer values into every branch: schemes allowed and not, references
# that decode to ":" or "/", what ends an attribute, a script or a style, what the
# CSS filter refuses (with Unicode case folding: U+017F is an "s", U+0131 an "i").
PIECES = [
    "javascript", "JaVaScRiPt", "vbscript", "data", "blob", "http", "HTTPS", "mailto",
    "tel", "ftp", "a+b.c-d", ":", "//", "/", "?", "#", "&", "&#", "&#58;", "&#x3a;",
    "&colon;", "&amp;", "& ", "&;", "&<", "&&", "&\t", " ", "\t", "\n", "\r", "\x00",
    "\x7f", "--", "-", "url", "expression", "ImPoRt", "behav\u0131or", "expre\u017f\u017fion", "x",
    "é", "\u2028", "\u2029", "\ud800", "\udfff", "\xad", "\u200b", "\ufeff", "\x85",
    "\xa0", "\U0001f600", "\uffff", "%", "%41", "(", ")", "'", '"', "`", "$", "{",
    "}", "<", ">", "=", "+", ";", ",", "!", "*", "@", "[", "]", "\\", "1", "0",
    # srcset candidates and SVG values: descriptors, separators, white space str.split() takes.
    " 1x", "2x", "100w", "1.5x", ".5x", "1.x", "1X", ", ", " ,", "\x0b", "\x1c", "\x1f",
    "/img/a.png 2x", "0 0;1 1", "\u0661x",
]  # fmt: skip
every_char = st.characters(codec=None, exclude_categories=())
ascii_char = st.characters(max_codepoint=0x7F)
pieces = st.one_of(st.sampled_from(PIECES), ascii_char, every_char)
texts = st.one_of(
    st.lists(pieces, max_size=12).map("".join),
    st.text(ascii_char, max_size=24),
    st.text(every_char, max_size=12),
)
others = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Any], dict[str, Any], SimpleNamespace]:
    """The escapers of the Python twin and of the C twin (skipped while it is not built)."""
    from ptl_wsgi.html import implementation

    python = implementation("python")
    try:
        c = implementation("c")
    except ImportError:
        pytest.skip("the C accelerator is not built")
    return for_class(python.htmltext, python.module), for_class(c.htmltext, c.module), c


def _planned(escapers: dict[str, Any]) -> list[str]:
    return sorted(n for n, e in escapers.items() if hasattr(e, "__wrapped__"))


def outcome(escaper: Any, value: Any) -> tuple[str, Any]:
    try:
        result = escaper(value)
    except Exception as exc:  # the same exception type is the property
        return ("raised", type(exc).__name__)
    return (type(result).__name__, str(result) if not isinstance(result, int) else result)


def rendered(escaper: Any, value: Any) -> tuple[str, str]:
    """What *escaper* of *value* puts in a page (an int is formatted by the join)."""
    try:
        return ("ok", str(escaper(value)))
    except Exception as exc:  # the same exception type is the property
        return ("raised", type(exc).__name__)


def test_the_c_twin_plans_every_escaper_but_dropped_values(both: Any) -> None:
    python, c, _ = both
    assert set(python) == set(c)
    planned = _planned(c)
    assert not _planned(python)  # the Python twin's are the reference itself
    left = sorted(set(c) - set(planned))
    unplanned = ("drop", "attr_name", "tag_attrs", "json_value")
    assert all(n.startswith(unplanned) for n in left), left
    # 14 bases of compose() (json_string and the lists srcset and url_list among them)
    # and js_value, each with 4 layers.
    assert len(planned) == 4 * 15
    for name in planned:
        assert c[name].__name__ == name


@DIFF
@given(text=texts)
def test_every_escaper_of_both_twins_agrees_on_text(both: Any, text: str) -> None:
    python, c, _ = both
    for name in _planned(c):
        expected = outcome(python[name], text)
        assert outcome(c[name], text) == expected, name
        assert outcome(c[name].__wrapped__, text) == expected, name


@DIFF
@given(value=others)
def test_every_escaper_of_both_twins_agrees_on_other_values(both: Any, value: Any) -> None:
    python, c, _ = both
    for name in _planned(c):
        assert outcome(c[name], value) == outcome(python[name], value), (name, value)


@DIFF
@given(text=texts)
def test_markup_gets_the_same_treatment_in_both_twins(both: Any, text: str) -> None:
    python, c, twin = both
    from ptl_wsgi.html import implementation

    py_class = implementation("python").htmltext
    for name in _planned(c):
        for py_value, c_value in (
            (py_class(text), twin.htmltext(text)),
            (Markup(text), Markup(text)),
        ):
            assert outcome(c[name], c_value) == outcome(python[name], py_value), name


def test_each_ascii_character_and_pair(both: Any) -> None:
    python, c, _ = both
    singles = [chr(i) for i in range(128)]
    values = singles + [a + b for a in singles for b in "/:&-;a "] + ["", "/", "//x", "-1"]
    for name in _planned(c):
        for value in values:
            assert outcome(c[name], value) == outcome(python[name], value), (name, value)


def _reserved(code: int) -> bool:
    """The characters outside ASCII that the C twin always leaves to the reference
    (``reserved_non_ascii`` in ptl_wsgi/_htmltext_c.c)."""
    return (
        code < 0xA0
        or code == 0xAD
        or 0x2000 <= code < 0x2070
        or 0xD800 <= code < 0xE000
        or code == 0xFEFF
        or 0xFFF0 <= code <= 0xFFFF
    )


def test_a_plan_that_keeps_non_ascii_keeps_every_code_point() -> None:
    # The C twin keeps a character outside ASCII, unescaped, where the escaper's plan
    # says so (from three probe characters) and the character is not reserved: the
    # reference must keep every such code point, in every escaper whose plan says so.
    from ptl_wsgi import _htmltext_py

    plans: dict[str, Any] = {}

    class Twin:
        escape_str = staticmethod(_htmltext_py.escape_str)

        @staticmethod
        def contextual_escaper(cls: type, reference: Any, plan: Any) -> Any:
            plans[reference.__name__] = (reference, plan)
            return reference

    class Marked(str):
        pass

    build(Marked, Twin)
    kept = "".join(chr(i) for i in range(0x80, 0x110000) if not _reserved(i))
    keeping = []
    for name, (reference, plan) in sorted(plans.items()):
        if plan is None or not plan()["non_ascii"]:
            continue
        keeping.append(name)
        found = plan()
        assert str(reference(kept)) == found["prefix"] + kept + found["suffix"], name
    assert {"js_string", "js_value_q", "text_u0", "comment", "css_string_u"} <= set(keeping)


@DIFF
@given(value=st.one_of(texts, others))
def test_what_compiled_templates_call_joins_to_the_same_markup(both: Any, value: Any) -> None:
    # Compiled templates call the escapers "for output": one for a quoted attribute may
    # return its base's str, which the template's join escapes for HTML (the q layer).
    python, c, twin = both
    from ptl_wsgi.html import implementation

    py = implementation("python")
    py_outputs = for_class(py.htmltext, py.module, outputs=True)
    c_outputs = for_class(twin.htmltext, twin.module, outputs=True)
    assert set(c_outputs) == set(c)
    for name in _planned(c):
        expected = rendered(lambda v, name=name: py.html_join([py_outputs[name](v)]), value)
        assert expected == rendered(python[name], value), name
        joined = rendered(lambda v, name=name: twin.html_join([c_outputs[name](v)]), value)
        assert joined == expected, name
        if not name.endswith("_q"):
            assert outcome(c_outputs[name], value) == outcome(c[name], value), name


# Pieces of image candidates and SVG values lists, with what makes the C twin hand a
# value to the reference: a URL it cannot pass at once, a descriptor that is not a
# number, a character outside ASCII, white space str.split() takes that is not a space.
LIST_PIECES = [
    "/img/a.png", "b.png", "https://x.org/c.png", "javascript:x", "data:,x", "javascript",
    "&#58;", "&amp;", "a b", " ", "  ", "\t", "\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85",
    "\xa0", ",", ";", "1x", "2x", "100w", "1.5x", ".5x", "1.", "1x2", "1X", "w", "x", "0 0",
    "\u0661x", "é", "%20", "?q=1", "#f", "'", '"', "<", ">", "=", "`", "(", ")", "\x00",
]  # fmt: skip
list_values = st.lists(st.sampled_from(LIST_PIECES), max_size=10).map("".join)


@settings(max_examples=1000)
@given(value=list_values)
def test_lists_of_urls_agree_in_both_twins(both: Any, value: str) -> None:
    python, c, twin = both
    from ptl_wsgi.html import implementation

    py = implementation("python")
    py_outputs = for_class(py.htmltext, py.module, outputs=True)
    c_outputs = for_class(twin.htmltext, twin.module, outputs=True)
    for name in [n for n in _planned(c) if n.startswith(("srcset", "url_list"))]:
        assert outcome(c[name], value) == outcome(python[name], value), (name, value)
        expected = rendered(lambda v, name=name: py.html_join([py_outputs[name](v)]), value)
        joined = rendered(lambda v, name=name: twin.html_join([c_outputs[name](v)]), value)
        assert joined == expected, (name, value)


def test_a_usual_srcset_is_answered_by_the_c_twin(both: Any) -> None:
    _, c, twin = both
    value = "/img/a.png 1x, /img/a@2x.png 2x,/img/b%20c.png 100w"
    assert str(c["srcset_q"](value)) == "/img/a.png 1x,/img/a@2x.png 2x,/img/b%20c.png 100w"
    assert str(c["srcset_q"].__wrapped__(value)) == str(c["srcset_q"](value))
    # The C twin's own answer: a value it keeps comes back as the same object (the
    # reference joins a new str).
    outputs = for_class(twin.htmltext, twin.module, outputs=True)
    kept = "/img/a.png 1x,/img/a@2x.png 2x"
    assert outputs["srcset_q"](kept) is kept
    assert outputs["srcset_q"].__wrapped__(kept) is not kept
    kept = "/a.svg#x; /b.svg#y"
    assert outputs["url_list_q"](kept) is kept
