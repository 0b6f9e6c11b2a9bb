"""Fused loops that read the loop variable's attributes and items (issue 27).

``'<a href="%s">%s</a>' % (a.url, a.title)``, ``row["name"]``, ``row[0]``,
``post["author"]["name"]``: each read is made by loop_output() where the body
makes it, into a slot its later parts output.  Each template below is compiled
with loops fused and with ``compiler.switches.FUSE_LOOPS = False``; for any
items both give the same output, or the same error, after the same reads and
the same calls to the values' own methods, in the same order.  The hostile
values come first: a fused loop must escape what the loop escapes.
"""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ptl_helpers import LOG, RecordedMarkup, Recorder, compiled, outcome

from ptl_wsgi import compiler, escapers
from ptl_wsgi.html import htmltext

SOURCE = """\
def links [html] (items):
    "<ul>"
    for a in items:
        '<li><a href="%s" title="%s">%s</a></li>' % (a.url, a.title, a.title)
    "</ul>"

def cells [html] (rows):
    for row in rows:
        f'<td class="{row["name"]}">{row[0]}</td><td>{row["n"]["name"]}</td>'

def scripts [html] (items):
    "<script>"
    for a in items:
        f"show({a.title}, {a['name']}, '{a.url}');"
    "</script>"

def handlers [html] (items):
    for a in items:
        f'<button onclick="go(\\'{a.title}\\', {a.url})" style="color: {a.name}">'
        f'<a href="/search?q={a.title}&amp;n={a[0]}#{a.name}">'
        a.url
        "\\n"

def paths [html] (items):
    for a in items:
        '<a href="/p/%s/%s">' % (a.url, a.n.name)
        a[-1]
        "</a>"

def deep [html] (posts):
    for post in posts:
        f"<p>{post['n']['n']['name']}: {post.n.title}</p>"
"""

NAMES = ["links", "cells", "scripts", "handlers", "paths", "deep"]


def _module(source: str, fuse: bool, name: str = "reads") -> types.ModuleType:
    return compiled(source, f"{name}_{fuse}", _FUSE_LOOPS=fuse)


FUSED, LOOPS = _module(SOURCE, True), _module(SOURCE, False)


class Thing:
    """An item whose attributes and items log each read, one of them failing if asked.

    ``title`` is a property (which may raise AttributeError, so that Python falls
    back to ``__getattr__``); the other attributes come through ``__getattr__``.
    """

    def __init__(self, values: dict[Any, Any], fails: Any = None, error: type = ValueError):
        self.values, self.fails, self.error = values, fails, error

    def _read(self, how: str, key: Any) -> Any:
        LOG.append(f"{how}:{key!r}")
        if key == self.fails and type(key) is type(self.fails):
            raise self.error(f"{how} {key!r} failed")
        try:
            return self.values[key]
        except KeyError:
            if how == "item":
                raise
            raise AttributeError(f"no attribute {key!r}") from None

    @property
    def title(self) -> Any:
        return self._read("property", "title")

    def __getattr__(self, name: str) -> Any:
        return self._read("attr", name)

    def __getitem__(self, key: Any) -> Any:
        return self._read("item", key)


texts = st.text(alphabet="<>&\"'ab%:/ ", max_size=6)
hostile = st.sampled_from(
    ["javascript:alert(1)", "</script><b>", "a\"b'c", " JaVaScRiPt:x", "?a=1&b=2", "-1"]
)
values = st.one_of(
    texts,
    hostile,
    st.integers(),
    st.none(),
    st.booleans(),
    texts.map(htmltext),
    st.lists(texts, max_size=2),
    st.builds(Recorder, texts, st.sampled_from(["", "str", "format"])),
    st.builds(RecordedMarkup, texts, st.sampled_from(["", "html"])),
)
KEYS = ["url", "title", "name", "n", 0, -1]
leaf = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), values),
    st.builds(
        Thing,
        st.dictionaries(st.sampled_from(KEYS), values),
        st.sampled_from([None, "url", "title", "name", 0]),
        st.sampled_from([ValueError, AttributeError, KeyError]),
    ),
)
# An item's "n" holds another item, down to two levels.
nested = st.recursive(
    leaf,
    lambda inner: st.builds(
        lambda outer, n: (
            {**outer, "n": n}
            if isinstance(outer, dict)
            else Thing({**outer.values, "n": n}, outer.fails, outer.error)
        ),
        leaf,
        inner,
    ),
    max_leaves=3,
)
items = st.one_of(nested, values)


def test_the_loops_are_fused() -> None:
    # Otherwise the property below would compare loops with loops.
    for name in NAMES:
        assert "_ptl_loop_output" in getattr(FUSED, name).__code__.co_names, name
        assert "_ptl_loop_output" not in getattr(LOOPS, name).__code__.co_names, name


@pytest.mark.parametrize("name", NAMES)
@given(argument=st.lists(items, max_size=4))
def test_fused_reads_match_the_loop(name: str, argument: list[Any]) -> None:
    fused, loop = outcome(getattr(FUSED, name), argument), outcome(getattr(LOOPS, name), argument)
    assert fused == loop


def _row(**values: Any) -> Thing:
    return Thing({**values, 0: values.get("first", "zero"), -1: "last"})


# -- hostile values through a read: the fused loop escapes as the loop does ----------


@pytest.mark.parametrize(
    ("name", "item", "absent"),
    [
        ("links", _row(url="javascript:alert(1)", title="t"), "javascript:"),
        ("links", _row(url=" JaVaScRiPt:alert(1)", title="t"), "alert(1)"),
        ("links", _row(url="/x", title='"><script>x()</script>'), "<script>"),
        ("handlers", _row(url="/x", title="');alert(1);('", name="red"), "');alert"),
        ("handlers", _row(url="1", title="t", name="red;background:url(x)"), "url(x)"),
        ("handlers", _row(url="/u", title='a"b', name="red"), 'a"b'),
        ("scripts", Thing({"title": "</script><b>", "name": "n", "url": "u"}), "</script><b>"),
        ("scripts", Thing({"title": 1, "name": "n", "url": "'-alert(1)-'"}), "'-alert"),
        ("paths", Thing({"url": "../../admin?x", "n": Thing({"name": "a/b"}), -1: "<i>"}), "<i>"),
    ],
)
def test_a_hostile_value_read_in_a_fused_loop_is_escaped(name: str, item: Any, absent: str) -> None:
    assert "_ptl_loop_output" in getattr(FUSED, name).__code__.co_names
    fused = str(getattr(FUSED, name)([item, item]))
    assert fused == str(getattr(LOOPS, name)([item, item]))
    assert absent not in fused


def test_a_url_read_in_a_fused_loop_is_checked() -> None:
    page = str(FUSED.links([_row(url="javascript:alert(1)", title="x"), _row(url="/a b", title=1)]))
    assert page == (
        '<ul><li><a href="about:invalid#ptl-unsafe-url" title="x">x</a></li>'
        '<li><a href="/a%20b" title="1">1</a></li></ul>'
    )


# -- errors, reads counted, order ----------------------------------------------------


def _error_lines(module: types.ModuleType, name: str, filename: str, argument: Any) -> Any:
    with pytest.raises(Exception) as info:
        getattr(module, name)(argument)
    tb, lines = info.tb, []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    return info.type, str(info.value), lines


ERRORS = """\
def page [html] (rows):
    "<table>"
    for row in rows:
        f'<tr><td>{row["name"]}</td>'
        f'<td><a href="{row.url}">x</a></td></tr>'
    "</table>"
"""


@pytest.mark.parametrize(
    "argument",
    [
        [{"name": "a"}],  # AttributeError: 'dict' object has no attribute 'url'
        [SimpleNamespace(url="/")],  # TypeError: not subscriptable
        [{"nom": 1}],  # KeyError
        [{"name": "a", 0: 1}, 5],  # TypeError on the second item
    ],
)
def test_a_failing_read_raises_the_loops_error_at_the_for_line(argument: Any) -> None:
    fused, loop = types.ModuleType("errors_fused"), types.ModuleType("errors_loop")
    exec(compiler.compile_ptl(ERRORS, "errors.ptl"), fused.__dict__)
    loop.page = _module(ERRORS, False, "errors").page
    assert "_ptl_loop_output" in fused.page.__code__.co_names
    kind, message, lines = _error_lines(fused, "page", "errors.ptl", argument)
    loop_kind, loop_message, _ = _error_lines(loop, "page", "<errors_False>", argument)
    assert (kind, message) == (loop_kind, loop_message)
    assert lines == [3]  # the for line, as for an error formatting an item


def test_each_read_is_made_once_in_source_order_interleaved_with_formatting() -> None:
    item = Thing({"title": "t", "url": Recorder("/u"), "name": Recorder("n"), 0: Recorder("z")})
    expected = outcome(LOOPS.handlers, [item])
    assert outcome(FUSED.handlers, [item]) == expected
    assert expected[3] == [
        *("property:'title'", "attr:'url'", "str:/u", "attr:'name'", "str:n"),
        *("property:'title'", "item:0", "str:z", "attr:'name'", "str:n"),
        *("attr:'url'", "str:/u"),  # the bare value: str() by the final join
    ]


# -- what stays a loop -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "for a in items:\n        a.upper()",  # a call: not a read
        "for a in items:\n        a[1:2]",  # a slice
        "for a in items:\n        a[items]",  # a key that is not a constant
        "for a in items:\n        f'{a.d:%Y}'",  # a format spec (format_field's call)
        "for a in items:\n        a.b.c()",
        "for a in items:\n        items.x",  # another name's attribute
        "for a in items:\n        a.x\n    a",  # the variable read after the loop
        "for a in items:\n        a.x\n    locals()",  # a frame reader in the module
        "for a in items:\n        (a.x, a.y)",  # one value, a tuple
    ],
)
def test_loops_that_are_not_fused(body: str) -> None:
    source = f"def page [html] (items):\n    {body}\n"
    fused, loop = _module(source, True, "kept"), _module(source, False, "kept")
    assert "_ptl_loop_output" not in fused.page.__code__.co_names
    argument = [SimpleNamespace(x="<x>", y=1, b=SimpleNamespace(c=lambda: "c"))]
    assert outcome(fused.page, argument) == outcome(loop.page, argument)


def test_a_private_name_read_in_a_class_keeps_the_loop() -> None:
    # Python reads item.__x in a class body as item._Page__x: loop_output() would not.
    source = (
        "class Page:\n"
        "    def render [html] (self, items):\n"
        "        for item in items:\n"
        "            f'<p>{item.__x}</p>'\n"
    )
    fused, loop = _module(source, True, "private"), _module(source, False, "private")
    assert "_ptl_loop_output" not in fused.Page.render.__code__.co_names
    item = SimpleNamespace(_Page__x="mangled")
    assert str(fused.Page().render([item])) == str(loop.Page().render([item])) == "<p>mangled</p>"


def test_more_reads_than_slots_keep_the_loop() -> None:
    fields = "".join(f"{{a.f{i}}}" for i in range(40))
    source = f"def page [html] (items):\n    for a in items:\n        f'<p>{fields}</p>'\n"
    fused = _module(source, True, "many")
    assert "_ptl_loop_output" not in fused.page.__code__.co_names
    item = SimpleNamespace(**{f"f{i}": i for i in range(40)})
    assert str(fused.page([item])) == "<p>" + "".join(str(i) for i in range(40)) + "</p>"


# -- tracing -------------------------------------------------------------------------

TRACED = """\
def rows [html] (rows):
    "<table>"
    for row in rows:
        "<tr><td>%s</td>" % row.name
        f'<td><a href="{row["url"]}">x</a></td></tr>'
    "</table>"
"""


@pytest.mark.skipif(sys.gettrace() is not None, reason="a tracer is already running")
def test_a_tracer_sees_each_line_of_a_fused_loop_with_reads() -> None:
    module = types.ModuleType("rows")
    exec(compiler.compile_ptl(TRACED, "rows.ptl"), module.__dict__)
    assert "_ptl_loop_output" in module.rows.__code__.co_names
    lines: list[int] = []

    def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == "rows.ptl" and event == "line":
            lines.append(frame.f_lineno)
        return tracer

    def traced(argument: list[Any]) -> list[int]:
        lines.clear()
        sys.settrace(tracer)
        try:
            module.rows(argument)
        finally:
            sys.settrace(None)
        return list(lines)

    # As a loop that ran once: for, its body, back to the for, on; then the final join.
    expected = [2, 3, 4, 5, 3, 6, 1]
    assert (
        traced([Thing({"name": "n", "url": "/a"}), Thing({"name": "m", "url": "/b"})]) == expected
    )
    assert traced([]) == expected


# -- the twins' slot parts -------------------------------------------------------------


def _twin_outcome(twin: SimpleNamespace, items: list[Any], make: Any) -> tuple[Any, ...]:
    out: list[Any] = []
    LOG.clear()
    try:
        twin.module.loop_output(out, items, make(twin))
    except Exception as exc:
        return ("raised", type(exc), str(exc), list(LOG))
    # (by name: each twin has its own htmltext class)
    return ("returned", [(type(v).__name__, str(v)) for v in out], list(LOG))


PATTERNS = [
    lambda t: ("<", (1, ("url",)), (2, ("title",)), (1, t.percent_output, None), (2,), ">"),
    lambda t: ((1, ("n", t.htmltext("name"))), (1, t.field_output), (2, (0,)), (2, str)),
    lambda t: ((3, ("n", "n", "url")), (3, escapers.url_q), None, (t.field_output,)),
    lambda t: ((1, ("url",)), (1, ("title",)), (1,)),  # a slot read again: the new value
]


@pytest.mark.parametrize("make", PATTERNS)
@given(argument=st.lists(items, max_size=3))
def test_the_twins_slot_parts_agree(
    twins: tuple[SimpleNamespace, SimpleNamespace], make: Any, argument: list[Any]
) -> None:
    python, c = (_twin_outcome(twin, argument, make) for twin in twins)
    assert python == c


@pytest.mark.parametrize(
    "part",
    [
        (0, ("url",)),  # slot 0 is the item's
        (32, ("url",)),
        (-1,),
        (2**70,),
        (1, ()),  # an empty path
        (1,),  # a slot output before it is read
        (1, str, None, None, None, None),  # too long
    ],
)
def test_the_twins_refuse_bad_slot_parts_alike(
    twins: tuple[SimpleNamespace, SimpleNamespace], part: tuple[Any, ...]
) -> None:
    for twin in twins:
        with pytest.raises(TypeError, match="slot"):
            twin.module.loop_output([], [SimpleNamespace(url="/")], (part,))
