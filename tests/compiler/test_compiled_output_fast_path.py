"""The compiler's fast path for f-strings, ``%`` and ``.format()`` output matches the general path.

Each template below is compiled twice: as shipped, where output statements are
taken apart into pieces and consecutive ones joined, and with the fast path off
(``compiler.switches.SPLIT_OUTPUT = False``), where each statement appends its value as
one expression.  For any values, both give the same output, or the same error,
after the same calls to the values' own methods, in the same order.
"""

from __future__ import annotations

import decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ptl_helpers import RecordedMarkup, Recorder, compiled, outcome

from ptl_wsgi.html import htmltext

SOURCE = """
def fstring [html] (a, b):
    f"<td>{a}</td><td>{b}</td>"

def fstring_specs [html] (a, b):
    f"<td>{a!r}</td><td>{b!s}</td><td>{a:>3}</td>"

def percent_one [html] (a, b):
    "<td>%s</td>" % a
    "<td>%s%%</td>" % (b,)

def percent_tuple [html] (a, b):
    "<td>%s</td><td>%s</td>" % (a, b)

def percent_rest [html] (a, b):
    "<td>%s</td>" % b.attr if hasattr(b, "attr") else "<td>%s</td>" % a

def format_fields [html] (a, b):
    "<td>{}</td><td>{}</td>".format(a, b)
    "<td>{1}{0}{1}</td>".format(a, b)
    "<td>{x}</td>".format(x=a, y=b)

def mixed [html] (a, b):
    "<tr>"
    a
    f"<td>{b}</td>"
    "<td>%s</td>" % a
    b
    "</tr>"

def guarded [html] (a, b):
    try:
        "<p>"
        f"{a}"
        "<i>%s</i>" % (b,)
        "</p>"
    except Exception as exc:
        "<error %s>" % type(exc).__name__

def assigned_first [html] (a, b):
    pair = (a, b)
    "<td>%s</td>" % (pair[0],)
    f"<td>{pair[1]}</td>"

def plain_kind [plain] (a, b):
    "<p>"
    f"{a}|{b}"
    "%s" % (a,)
"""

NAMES = [
    "fstring", "fstring_specs", "percent_one", "percent_tuple", "percent_rest",
    "format_fields", "mixed", "guarded", "assigned_first", "plain_kind",
]  # fmt: skip


FAST = compiled(SOURCE, "fast_path", _SPLIT_OUTPUT=True)
GENERAL = compiled(SOURCE, "general_path", _SPLIT_OUTPUT=False)


texts = st.text(alphabet="<>&\"'ab%{} ", max_size=6)
scalars = st.one_of(
    texts,
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    texts.map(htmltext),
    st.decimals(allow_nan=False).map(decimal.Decimal),
    st.builds(Recorder, texts, st.sampled_from(["", "str", "repr", "format", "format>3"])),
    st.builds(RecordedMarkup, texts, st.sampled_from(["", "html", "str"])),
)
values = st.one_of(
    scalars,
    st.tuples(scalars),
    st.tuples(scalars, scalars),
    st.tuples(),
    st.dictionaries(texts, scalars, max_size=2),
)


@pytest.mark.parametrize("name", NAMES)
@given(a=values, b=values)
def test_fast_path_matches_general_path(name: str, a: Any, b: Any) -> None:
    assert outcome(getattr(FAST, name), a, b) == outcome(getattr(GENERAL, name), a, b)


def test_the_fast_path_is_taken() -> None:
    # Otherwise the property above would compare the general path with itself.
    fast = {name: getattr(FAST, name).__code__.co_names for name in NAMES}
    assert "_ptl_field_output" in fast["fstring"]
    assert "_ptl_field_output" not in GENERAL.fstring.__code__.co_names
    assert "_ptl_percent_output" in fast["percent_one"]
    # One run of output at the end: its pieces are joined without a list.
    assert not {"append", "extend"} & set(fast["mixed"])
    assert "append" in GENERAL.mixed.__code__.co_names


@pytest.mark.parametrize(
    "call",
    [
        "'<b>{\u00b2}'.format(a)",  # a digit that is not decimal: str.format reads a key
        "'<b>{\u0663}'.format(b, b, b, a)",  # an Arabic-Indic 3: str.format reads index 3
        "'<b>{0}{}'.format(a, b)",  # manual then automatic numbering: a ValueError
        "'<b>{x.y}'.format(x=a)",  # an attribute: the general path
        "'<b>%s %d' % (a, b)",  # a conversion other than %s: the general path
    ],
)
def test_unusual_fields_compile_and_match_the_general_path(call: str) -> None:
    source = f"def f [html] (a, b):\n    {call}\n"
    fast = compiled(source, "unusual", _SPLIT_OUTPUT=True)
    general = compiled(source, "unusual", _SPLIT_OUTPUT=False)
    for a, b in [("<x>", 3), (1, 2)]:
        assert outcome(fast.f, a, b) == outcome(general.f, a, b)
