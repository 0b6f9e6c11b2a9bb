"""The context engine's model of the browser, where it was found to differ (issue #26).

Each group is a finding of the review, by class: a regular expression after ``)``
taken for a division when a comment or an output statement separates them;
SVG and MathML foreign content (CDATA sections, HTML integration points); the
type of a ``<script>`` (JSON, data blocks); tokens cut at a literal's end.
"""

from __future__ import annotations

from typing import Any

import pytest
from ptl_helpers import compiled

from ptl_wsgi.htmlcontext import TEXT, ContextError, advance, escaper_for


def render(body: str, *args: Any) -> str:
    """The output of ``f(*args)``, ``f`` an [html] template of parameters v, w with *body*."""
    module = compiled(f"def f [html] (v, w=None):\n    {body}\n", "engine_model")
    return str(module.f(*args))


def refused(body: str) -> bool:
    try:
        render(body, "x")
    except SyntaxError:
        return True
    return False


def escaper(*literals: str) -> str | None:
    """The escaper of a value after *literals*, each parsed by its own advance."""
    ctx = TEXT
    for literal in literals:
        ctx = advance(ctx, literal)
    return escaper_for(ctx)


# -- 2. "/" after ")": a division or a regular expression ---------------------------------

AMBIGUOUS_SLASH = {
    "line comment between": "'<script>if (ok) // note\\n/\"/.test(s) || go(%s)</script>' % v",
    "block comment between": "'<script>if (ok) /* note */ /\"/.test(s) || go(%s)</script>' % v",
    "HTML-like comment between": (
        "'<script>if (ok) <!-- note\\n/\"/.test(s) || go(%s)</script>' % v"
    ),
    "output statements between": "'<script>if (ok) '\n    '/\"/.test(s) || go(%s)</script>' % v",
    "output statement, line end": (
        "'<script>if (ok)\\n'\n    '/\"/.test(s) || go(%s)</script>' % v"
    ),
    "in an event handler": ("'<a onclick=\"if (ok) // n\\n/&quot;/.test(s) || go(%s)\">x</a>' % v"),
}


@pytest.mark.parametrize("name", sorted(AMBIGUOUS_SLASH))
def test_a_slash_after_a_parenthesis_seen_apart_is_refused(name: str) -> None:
    # The browser reads a regular expression: go(alert(1)) would run with the value
    # escaped for a string the browser never opened.
    assert refused(AMBIGUOUS_SLASH[name])


def test_the_engine_refuses_a_slash_after_a_parenthesis_before_a_comment() -> None:
    with pytest.raises(ContextError, match="'/' could start a division or a regular"):
        escaper("<script>if (ok) // c\n", '/"/.test(s) || go(')
    with pytest.raises(ContextError, match="'/' could start a division or a regular"):
        escaper("<script>if (ok) /* c */", "\n", '/"/.test(s) || go(')
    with pytest.raises(ContextError, match="may divide or start a regular expression"):
        escaper("<script>if (ok) ", '/"/.test(s) || go(')  # seen with its ")"


COMMON_JS = [
    "'<script>var m = (a + b) / 2, v = %s;</script>' % v",
    "'<script>var m = f(x) / 2; var v = %s;</script>' % v",
    "'<script>if (x) { y = /a\"/.test(%s); }</script>' % v",
    "'<script>// a comment\\nvar r = /\"/.test(s); go(%s);</script>' % v",
    "'<script>var r = (/\"/), s = %s;</script>' % v",
    "'<script>function f() { return /\"/.test(%s); }</script>' % v",
    "'<script>var m = (%s) / 2;</script>' % v",
    "'<script>var m = (a + b)'\n    '/ 2, v = %s;</script>' % v",
    "'<script>if (ok) // note\\n{ go(%s); }</script>' % v",
    "'<script>f(a) // note\\nvar v = %s;</script>' % v",
    "'<script>var a = (b) /* c */ + %s;</script>' % v",
]


@pytest.mark.parametrize("body", COMMON_JS)
def test_common_javascript_still_compiles(body: str) -> None:
    assert " 1 " in render(body, 1) or "1" in render(body, 1)
