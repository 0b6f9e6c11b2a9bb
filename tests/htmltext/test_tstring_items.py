"""t-strings: a list, tuple or generator in text renders as its items joined (issue #27).

As JSX and tdom render arrays: ``H(t"<ul>{[H(t'<li>{x}</li>') for x in xs]}</ul>")``
is the items' markup, each item kept as markup or escaped, a nested t-string
formatted by its own contexts.  Outside text (a URL, a script, a style) a list is one
value as before: a JSON array in a script, and no item can complete a sequence that
the context's escaper refuses.  Templates are built with ``string.templatelib``'s
constructors, so that this file parses before 3.14.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from markupsafe import Markup

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 14), reason="string.templatelib is new in Python 3.14"
)


def t(*parts: Any) -> Any:
    """A Template from str parts and values (a value: a 1-tuple, or (value, conversion, spec))."""
    from string.templatelib import Interpolation, Template

    args = []
    for part in parts:
        if isinstance(part, str):
            args.append(part)
        else:
            value, conversion, spec = (*part, None, "")[:3] if len(part) == 1 else part
            args.append(Interpolation(value, "x", conversion, spec))
    return Template(*args)


def H(template: Any) -> str:
    from ptl_wsgi.html import htmlformat, htmltext

    result = htmlformat(template)
    assert type(result) is htmltext
    return str(result)


def test_a_list_in_text_is_its_items_joined() -> None:
    items = [t("<li>", ("a&b",), "</li>"), t("<li>", ("<c>",), "</li>")]
    assert H(t("<ul>", (items,), "</ul>")) == "<ul><li>a&amp;b</li><li>&lt;c&gt;</li></ul>"


def test_a_tuple_and_a_generator_too_each_item_markup_or_escaped() -> None:
    assert H(t("<p>", (("<a>", Markup("<b>x</b>"), 3, None),), "</p>")) == (
        "<p>&lt;a&gt;<b>x</b>3None</p>"
    )
    rows = (t("<td>", (n,), "</td>") for n in range(3))
    assert H(t("<tr>", (rows,), "</tr>")) == "<tr><td>0</td><td>1</td><td>2</td></tr>"


def test_nested_lists_are_flattened_and_empty_ones_are_nothing() -> None:
    assert H(t("<p>", ([["<x>", ["y"]], [], ()],), "</p>")) == "<p>&lt;x&gt;y</p>"
    assert H(t("<p>", ([],), "</p>")) == "<p></p>"


def test_an_item_template_keeps_its_own_contexts() -> None:
    # The nested t-string's URL value gets the URL escaper, not only HTML escaping.
    links = [t('<a href="', (url,), '">x</a>') for url in ("javascript:alert(1)", "/a b")]
    html = H(t("<nav>", (links,), "</nav>"))
    assert html == ('<nav><a href="about:invalid#ptl-unsafe-url">x</a><a href="/a%20b">x</a></nav>')


def test_in_a_quoted_plain_attribute_the_items_are_joined_escaped() -> None:
    assert H(t('<p title="', (["a", '"b"'],), '">x</p>')) == '<p title="a&quot;b&quot;">x</p>'


def test_a_conversion_or_a_spec_formats_the_list_itself() -> None:
    assert H(t("<p>", (["<a>"], "r", ""), "</p>")) == "<p>[&#x27;&lt;a&gt;&#x27;]</p>"
    with pytest.raises(TypeError):
        H(t("<p>", (["a"], None, ">9"), "</p>"))


def test_a_named_tuple_is_one_value() -> None:
    from collections import namedtuple

    point = namedtuple("point", "x y")(1, "<2>")
    assert H(t("<p>", (point,), "</p>")) == "<p>point(x=1, y=&#x27;&lt;2&gt;&#x27;)</p>"


def test_outside_text_a_list_stays_one_value() -> None:
    # A script's list is a JSON array, as before.
    assert H(t("<script>var a = ", ([1, "</script>"],), ";</script>")) == (
        '<script>var a =  [1,"\\u003c\\u002fscript\\u003e"] ;</script>'
    )
    # Items cannot split a sequence the CSS filter refuses, nor a script URL's scheme.
    css = H(t('<p style="width: ', (["expres", "sion(alert(1))"],), '">x</p>'))
    assert "expression" not in css.replace(" ", "").lower()
    url = H(t('<a href="', (["javascript", ":alert(1)"],), '">x</a>'))
    assert "javascript:" not in url


def test_a_generator_is_consumed_once_and_its_errors_propagate() -> None:
    def broken() -> Any:
        yield "a"
        raise LookupError("item")

    with pytest.raises(LookupError, match="item"):
        H(t("<p>", (broken(),), "</p>"))


def test_markup_of_a_template_with_items_in_a_compiled_template() -> None:
    # A t-string made markup elsewhere (joined into a page) follows the same rule.
    from ptl_wsgi.html import htmlescape, htmltext

    page = htmlescape(t("<ul>", ([t("<li>", ("<x>",), "</li>")],), "</ul>"))
    assert type(page) is htmltext
    assert str(page) == "<ul><li>&lt;x&gt;</li></ul>"
