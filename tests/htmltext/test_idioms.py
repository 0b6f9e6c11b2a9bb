"""ptl_wsgi.idioms: looped() against Jinja2's loop and Django's forloop, undefined, layouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import pytest
from django.template import Context, Engine
from hypothesis import given
from hypothesis import strategies as st

from ptl_wsgi.idioms import (
    Layout,
    Undefined,
    UndefinedError,
    at,
    dot,
    is_undefined,
    looped,
    undefined,
)
from ptl_wsgi.loader import Loader

JINJA_LOOP = (
    "{% for x in xs %}{{ loop.index }},{{ loop.index0 }},{{ loop.revindex }},"
    "{{ loop.revindex0 }},{{ loop.first }},{{ loop.last }},{{ loop.length }},"
    "{{ loop.previtem }},{{ loop.nextitem }},{{ loop.cycle('a', 'b', 'c') }},"
    "{{ loop.changed(x) }},{{ loop.depth }},{{ loop.depth0 }};{% endfor %}"
)


def ours_jinja_loop(xs: Any) -> str:
    out = []
    for loop, x in looped(xs):
        fields = [
            loop.index, loop.index0, loop.revindex, loop.revindex0, loop.first, loop.last,
            loop.length, loop.previtem, loop.nextitem, loop.cycle("a", "b", "c"),
            loop.changed(x), loop.depth, loop.depth0,
        ]  # fmt: skip
        out.append(",".join(map(str, fields)) + ";")
    return "".join(out)


@given(st.lists(st.integers(0, 3), max_size=8))
def test_looped_gives_what_jinja2s_loop_gives(xs: list[int]) -> None:
    theirs = jinja2.Environment().from_string(JINJA_LOOP).render(xs=xs)
    assert ours_jinja_loop(xs) == theirs
    # A generator: the same answers, its length read only when asked.
    assert ours_jinja_loop(x for x in xs) == theirs


DJANGO_LOOP = (
    "{% for x in xs %}{% for y in x %}{{ forloop.counter }},{{ forloop.counter0 }},"
    "{{ forloop.revcounter }},{{ forloop.revcounter0 }},{{ forloop.first }},"
    "{{ forloop.last }},{{ forloop.parentloop.counter }};{% endfor %}|{% endfor %}"
)


@given(st.lists(st.lists(st.integers(), max_size=3), max_size=4))
def test_looped_gives_what_djangos_forloop_gives(xs: list[list[int]]) -> None:
    theirs = Engine().from_string(DJANGO_LOOP).render(Context({"xs": xs}))
    out = []
    for outer, x in looped(xs):
        for loop, _ in looped(x, parent=outer):
            fields = [
                loop.counter, loop.counter0, loop.revcounter, loop.revcounter0,
                loop.first, loop.last, loop.parentloop.counter,
            ]  # fmt: skip
            out.append(",".join(map(str, fields)) + ";")
        out.append("|")
    assert "".join(out) == theirs


def test_a_generator_is_read_only_as_far_as_asked() -> None:
    read = []

    def numbers() -> Any:
        for n in range(5):
            read.append(n)
            yield n

    for loop, n in looped(numbers()):
        assert read == list(range(n + 1))
        assert loop.last is (n == 4)
        assert read == list(range(min(n + 2, 5)))  # last looked one item ahead
        if n == 1:
            break
    assert read == [0, 1, 2]
    read.clear()
    items = looped(numbers())
    loop, _ = next(items)
    assert loop.length == 5 and read == [0, 1, 2, 3, 4]
    assert [n for _, n in items] == [1, 2, 3, 4]


def test_nested_loops_know_their_depth_and_parent() -> None:
    for outer, _ in looped("ab"):
        for inner, _ in looped("xy", parent=outer):
            assert (inner.depth, inner.depth0, inner.parentloop is outer) == (2, 1, True)
    assert is_undefined(next(looped("a"))[0].parentloop)


def test_undefined_renders_empty_and_chains() -> None:
    missing = Undefined("user")
    assert (str(missing), format(missing, ""), missing.__html__()) == ("", "", "")
    assert not missing and len(missing) == 0 and list(missing) == []
    assert is_undefined(missing.name) and is_undefined(missing["id"]["x"])
    assert missing == undefined and missing != 0 and missing != ""
    assert f"<{missing:>3}>" == "<   >"
    with pytest.raises(UndefinedError, match=r"'user\.name' is undefined"):
        missing.name()
    with pytest.raises(UndefinedError, match="'user' is undefined"):
        missing + 1


class Obj:
    name = "attr"

    def __getitem__(self, key: str) -> str:
        if key == "only_item":
            return "item"
        raise KeyError(key)


CONTEXT = {"g": {"user": None}, "post": {"author_id": 1}, "obj": Obj(), "d": {"x": 1}, "n": None}
LOOKUPS: list[tuple[str, Any]] = [
    ("g.user['id'] == post['author_id']",
     lambda g, post, **_: at(dot(g, "user"), "id") == at(post, "author_id")),
    ("obj.name", lambda obj, **_: dot(obj, "name")),
    ("obj['name']", lambda obj, **_: at(obj, "name")),
    ("obj.only_item", lambda obj, **_: dot(obj, "only_item")),
    ("obj['only_item']", lambda obj, **_: at(obj, "only_item")),
    ("obj.nothing", lambda obj, **_: dot(obj, "nothing")),
    ("obj['nothing']", lambda obj, **_: at(obj, "nothing")),
    ("d['x'] ~ d.x", lambda d, **_: f"{at(d, 'x')}{dot(d, 'x')}"),
    ("n[0] ~ n.x", lambda n, **_: f"{at(n, 0)}{dot(n, 'x')}"),
    ("obj.nothing is undefined", lambda obj, **_: is_undefined(dot(obj, "nothing"))),
    ("d[1] is undefined", lambda d, **_: is_undefined(at(d, 1))),
]  # fmt: skip


@pytest.mark.parametrize(("expression", "ours"), LOOKUPS, ids=[e for e, _ in LOOKUPS])
def test_dot_and_at_read_as_jinja2_reads(expression: str, ours: Any) -> None:
    theirs = jinja2.Environment().from_string("{{ " + expression + " }}").render(CONTEXT)
    assert str(ours(**CONTEXT)) == theirs


def test_dot_and_at_let_other_errors_through() -> None:
    class Broken:
        @property
        def boom(self) -> None:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        dot(Broken(), "boom")


BASE = """\
from ptl_wsgi.idioms import Layout


class Base(Layout):
    def title [html] (self):
        "My <site>"

    def header [html] (self):
        "<h1>"
        self.title()
        "</h1>"

    def content [html] (self):
        pass

    def page [html] (self):
        "<title>"
        self.title()
        "</title>"
        self.header()
        "<main>"
        self.content()
        "</main>"


def render [html] (**context):
    Base(**context).page()
"""

POSTS = """\
from ptl_wsgi.idioms import looped
from .base import Base


class Posts(Base):
    def title [html] (self):
        "Posts of %s" % self.user

    def header [html] (self):
        super().header()
        '<a href="/new">New</a>'

    def content [html] (self):
        for loop, post in looped(self.posts):
            '<p class="%s">%s</p>' % (loop.cycle("odd", "even"), post)


def render [html] (**context):
    Posts(**context).page()
"""


def test_layouts_are_classes_blocks_are_methods(tmp_path: Path) -> None:
    (tmp_path / "base.ptl").write_text(BASE)
    (tmp_path / "posts.ptl").write_text(POSTS)
    loader = Loader([str(tmp_path)])
    assert str(loader.render("base.ptl", {})) == (
        "<title>My <site></title><h1>My <site></h1><main></main>"
    )
    page = loader.render("posts.ptl", {"user": "<ann>", "posts": ["a", "<b>"], "extra": 1})
    # The nested block (title inside header) is overridden everywhere it is called,
    # super().header() renders the layout's header with the page's title.
    assert str(page) == (
        "<title>Posts of &lt;ann&gt;</title><h1>Posts of &lt;ann&gt;</h1>"
        '<a href="/new">New</a><main><p class="odd">a</p><p class="even">&lt;b&gt;</p></main>'
    )


def test_a_layout_says_what_it_lacks() -> None:
    class Page(Layout):
        def page(self) -> str:
            return str(self.missing)

    with pytest.raises(AttributeError, match="no block 'missing' and the context no value"):
        Page(other=1).page()
    with pytest.raises(NotImplementedError, match="defines no page"):
        Layout().page()


def test_converted_names_and_a_layouts_lenient_get() -> None:
    from ptl_wsgi.idioms import TODO, NotConvertedError, converted_name

    assert [converted_name(n) for n in ("a.html", "d.v2/layout", "x.J2", "mail.txt.tmpl")] == [
        "a.ptl", "d.v2/layout.ptl", "x.ptl", "mail.txt.tmpl.ptl",
    ]  # fmt: skip
    page = Layout(user="ann", **{"self": "a context value"})
    assert page.get("self") == "a context value"
    assert page.get("user") == "ann" and is_undefined(page.get("nobody"))
    assert page.get("nobody", 3) == 3 and page.get("user", 3) == "ann"
    with pytest.raises(NotConvertedError, match=r"not converted: a\.html:1: tag 'x': why"):
        TODO("a.html:1: tag 'x': why")
