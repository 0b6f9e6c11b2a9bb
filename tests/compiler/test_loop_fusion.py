"""Fused output loops: a ``for`` loop that only outputs text and its own variable runs in C.

Each template below is compiled twice, with loops fused (as shipped) and with
``compiler.switches.FUSE_LOOPS = False``; for any items, both give the same output, or
the same error, after the same calls to the items' own methods, in the same
order.  The loops that must not be fused are checked to stay loops, and what a
tracer sees of a fused loop is checked line by line.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ptl_helpers import RecordedMarkup, Recorder, compiled, outcome

from ptl_wsgi import compiler
from ptl_wsgi.html import htmltext

# The first template's lines are counted in the tracing test below.
TRACED = """\
def cells [html] (items):
    "<tr>"
    for item in items:
        "<td>"
        item
        "</td>"
    "</tr>"
"""

SOURCE = (
    TRACED
    + """
def one_line [html] (items):
    for item in items:
        f"<li>{item}</li>"

def percent [html] (items):
    "<ul>"
    for item in items:
        "<li>%s</li>" % item
    "</ul>"

def twice [html] (items):
    for item in items:
        "<a title='%s'>" % item
        f"{item}</a>"

def script [html] (items):
    # (the <script> outside the loop: a literal that takes the CSP nonce is not fused)
    "<script>"
    for item in items:
        "show("
        item
        ");"
    "</script>"

def bare [html] (items):
    for item in items:
        item

def linked [html] (items):
    # (an attribute's escaper outputs an int as it is: called on every item all the same)
    for item in items:
        '<a href="/'
        item
        '">x</a>'

def nested [html] (rows):
    "<table>"
    for row in rows:
        "<tr>"
        for item in row:
            "<td>"
            item
            "</td>"
        "</tr>"
    "</table>"
"""
)

FUSED_NAMES = ["cells", "one_line", "percent", "twice", "script", "bare", "linked", "nested"]


def _module(source: str, fuse: bool, name: str = "fusion") -> types.ModuleType:
    return compiled(source, f"{name}_{fuse}", _FUSE_LOOPS=fuse)


FUSED, LOOPS = _module(SOURCE, True), _module(SOURCE, False)


def failing_after(items: list[Any], count: int) -> Iterator[Any]:
    """The items, then a LookupError after *count* of them."""
    for index, item in enumerate(items):
        if index == count:
            raise LookupError(f"no item {index}")
        yield item


texts = st.text(alphabet="<>&\"'ab%:/ ", max_size=6)
items = st.one_of(
    texts,
    st.integers(),
    st.floats(allow_nan=False),
    st.none(),
    texts.map(htmltext),
    st.tuples(texts),
    st.tuples(texts, texts),
    st.builds(Recorder, texts, st.sampled_from(["", "str", "format"])),
    st.builds(RecordedMarkup, texts, st.sampled_from(["", "html"])),
)


@pytest.mark.parametrize("name", FUSED_NAMES)
@given(values=st.lists(items, max_size=5), stop=st.none() | st.integers(0, 5))
def test_fused_loops_match_loops(name: str, values: list[Any], stop: int | None) -> None:
    argument: Any = values if name != "nested" else [values, values[::-1]]

    def arg() -> Any:
        if stop is None:
            return argument
        if name == "nested":
            return [failing_after(values, stop), values]
        return failing_after(values, stop)

    assert outcome(getattr(FUSED, name), arg()) == outcome(getattr(LOOPS, name), arg())


def test_the_loops_are_fused() -> None:
    # Otherwise the property above would compare loops with loops.
    for name in FUSED_NAMES:
        assert "_ptl_loop_output" in getattr(FUSED, name).__code__.co_names, name
        assert "_ptl_loop_output" not in getattr(LOOPS, name).__code__.co_names, name
    assert (
        FUSED.cells(["<a>", 1, htmltext("<b>")])
        == "<tr><td>&lt;a&gt;</td><td>1</td><td><b></td></tr>"
    )
    assert FUSED.cells([]) == "<tr></tr>"
    assert FUSED.cells(iter(["x"])) == "<tr><td>x</td></tr>"


@pytest.mark.parametrize(
    "body",
    [
        # The variable is read after the loop, before it, or somewhere else.
        "for item in items:\n        item\n    'last: %s' % item",
        "item = 0\n    for item in items:\n        item\n    item",
        "for item in items:\n        item\n    [item for item in items]",
        "for item in items:\n        item\n    def inner():\n        return item",
        # Something that could read or bind the variable by name.
        "for item in items:\n        item\n    locals()",
        "global item\n    for item in items:\n        item",
        # A loop that does more than output the variable and text.
        "for item in items:\n        item\n    else:\n        'none'",
        "for item in items:\n        item.upper()",
        "for item in items:\n        item\n        break",
        "for item, other in items:\n        item",
        "for item in items:\n        items",
        "for item in items:\n        (item, 'x')",  # one value, a tuple: not two pieces
        # Where a handler could see the output list mid-loop.
        "try:\n        for item in items:\n            item\n"
        "    except ValueError:\n        'caught'",
    ],
)
def test_loops_that_are_not_fused(body: str) -> None:
    source = f"def page [html] (items):\n    {body}\n"
    fused, loop = _module(source, True, "kept"), _module(source, False, "kept")
    assert "_ptl_loop_output" not in fused.page.__code__.co_names
    argument = [("a", "b"), ("<c>", "d")]
    assert outcome(fused.page, argument) == outcome(loop.page, argument)


def test_plain_templates_keep_their_loops() -> None:
    source = "def page [plain] (items):\n    for item in items:\n        '<'\n        item\n"
    module = _module(source, True, "plain")
    assert "_ptl_loop_output" not in module.page.__code__.co_names
    assert module.page(["a", "b"]) == "<a<b"


def test_the_variable_is_not_bound_after_a_fused_loop() -> None:
    # What the docs promise: the loop is fused only where nothing reads the variable.
    assert "item" not in FUSED.cells.__code__.co_varnames
    assert "item" in LOOPS.cells.__code__.co_varnames


def _traced_lines(module: types.ModuleType, argument: Any) -> list[int]:
    lines: list[int] = []

    def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == "cells.ptl" and event == "line":
            lines.append(frame.f_lineno)
        return tracer

    sys.settrace(tracer)
    try:
        module.cells(argument)
    finally:
        sys.settrace(None)
    return lines


@pytest.mark.skipif(sys.gettrace() is not None, reason="a tracer is already running")
def test_a_tracer_sees_each_line_of_a_fused_loop_in_order() -> None:
    module = types.ModuleType("cells")
    exec(compiler.compile_ptl(TRACED, "cells.ptl"), module.__dict__)
    assert "_ptl_loop_output" in module.cells.__code__.co_names
    # As a loop that ran once: for, its body, back to the for, on; then the final join.
    expected = [2, 3, 4, 5, 6, 3, 7, 1]
    assert _traced_lines(module, ["a", "b"]) == expected
    assert _traced_lines(module, []) == expected


def test_an_error_formatting_an_item_is_reported_at_the_for_line() -> None:
    module = types.ModuleType("cells_fmt")
    source = "def cells [html] (items):\n    for item in items:\n        f'<td>{item}</td>'\n"
    exec(compiler.compile_ptl(source, "cells_fmt.ptl"), module.__dict__)
    with pytest.raises(ValueError) as info:
        module.cells([1, Recorder("x", "format")])
    tb, lines = info.tb, []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "cells_fmt.ptl":
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    assert lines == [2]


def test_loop_output_in_both_twins(twins: tuple[SimpleNamespace, SimpleNamespace]) -> None:
    for twin in twins:
        cls = twin.htmltext
        a, b, j = cls("<a>"), cls("</a>"), cls("</a><a>")
        out: list[Any] = []
        twin.module.loop_output(out, ["x", 2], (a, None, (twin.field_output,), b), j)
        assert out == [a, "x", "x", j, 2, 2, b]
        out = []
        twin.module.loop_output(out, [], (a, None, b), j)
        assert out == []
        out = []
        twin.module.loop_output(out, iter([1]), (None, (twin.percent_output, cls("%s"))))
        assert out == [1, 1]
        for bad in [((), [], ()), ([], [], "ab"), ([], [1], (a,), j), ([], 5, (a,))]:
            with pytest.raises(TypeError):
                twin.module.loop_output(*bad)
