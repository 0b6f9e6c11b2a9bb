"""Every rule of escaping is spelled once, in ptl_wsgi/escaping/rules.py.

The escaping rules once lived in three modules whose copies disagreed (which
schemes run script, which attributes hold URLs, which raster ``data:`` types
are images, which escapers an int skips, "is this markup", "is this a
t-string").  This test reads the package's source (ast, nothing run) and fails
where a rule's table or test is written outside the rules module: a set of
two or more script schemes, three or more URL attributes or image types or
int-safe escapers, a regular expression that alternates them, or a test for
``__html__`` or a ``Template`` by hand.  The twins (``_htmltext_py``, and the C
file, which is not Python) implement "is markup" on their hot paths by design;
their differential test holds them to one behaviour.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from markupsafe import Markup
from ptl_helpers import REPO

from ptl_wsgi import beyond_escaping, escapers
from ptl_wsgi.escaping import rules
from ptl_wsgi.escaping.context import TEXT, advance, escaper_for, settle
from ptl_wsgi.html import htmlescape, htmltext

PACKAGE = REPO / "ptl_wsgi"
RULES = PACKAGE / "escaping" / "rules.py"
TWINS = {PACKAGE / "_htmltext_py.py"}

TABLES = {
    "script schemes": (rules.SCRIPT_SCHEMES, 2),
    "URL attributes": (rules.URL_ATTRIBUTES | rules.SRCSET_ATTRIBUTES, 3),
    "raster image types": (frozenset(rules.RASTER_IMAGE_TYPES), 3),
    "int-safe escapers": (rules.INT_SAFE_BASES, 3),
    "CSS words": (frozenset(rules.CSS_UNSAFE_WORDS), 3),
}


# The escapers' plans as the reference makes them from the rules, stored for the C twin
# (written by tools/escaper_plans.py; tests/escaping/test_escaper_plans.py holds them equal).
PLANS = PACKAGE / "escaping" / "_plans.py"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in (RULES, PLANS))


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def _strings(tree: ast.AST) -> list[ast.Constant]:
    docstrings = _docstrings(tree)
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def _collections(tree: ast.AST, sets_only: bool) -> list[tuple[int, set[str]]]:
    """The string items of every set, tuple, list or dict literal (and str.split() lists);
    with *sets_only*, of set literals alone (escaper names are keys of many tables,
    but a set of them is a rule about them)."""
    out = []
    for node in ast.walk(tree):
        items: list[ast.expr] = []
        if sets_only:
            if isinstance(node, ast.Set):
                out.append(
                    (node.lineno, {i.value for i in node.elts if isinstance(i, ast.Constant)})
                )
            continue
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "split"
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
        ):
            out.append((node.lineno, set(node.func.value.value.split())))
            continue
        words = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
        if words:
            out.append((node.lineno, words))
    return out


@pytest.mark.parametrize("table", sorted(TABLES))
def test_no_rule_table_is_spelled_outside_the_rules(table: str) -> None:
    names, most = TABLES[table]
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, words in _collections(tree, sets_only=table == "int-safe escapers"):
            shared = words & names
            if len(shared) >= most:
                found.append(f"{path.relative_to(REPO)}:{line}: {sorted(shared)}")
        for node in _strings(tree):
            # A regular expression alternating the table's names: "javascript|vbscript".
            alternated = set(re.findall(r"[\w\-]+(?=\|)|(?<=\|)[\w\-]+", node.value))
            if len(alternated & names) >= most:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value[:60]!r}")
    assert found == [], f"the {table} belong to ptl_wsgi/escaping/rules.py"


def test_markup_and_templates_are_recognised_by_the_rules_only() -> None:
    found = []
    for path in _modules():
        if path in TWINS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            if node.func.id in ("getattr", "hasattr") and any(
                isinstance(a, ast.Constant) and a.value == "__html__" for a in node.args
            ):
                found.append(
                    f"{path.relative_to(REPO)}:{node.lineno}: {node.func.id}(..., '__html__')"
                )
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value == "Template" for c in node.comparators
            ):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: ... == 'Template'")
    assert found == [], "use ptl_wsgi.escaping.rules.is_markup / is_template"


def test_the_rules_answer_the_same_everywhere() -> None:
    # One list of script schemes: the engine (a literal), the escaper (a value) and
    # safe_url's allow-list all refuse each of them.
    for scheme in rules.SCRIPT_SCHEMES:
        ctx = settle(advance(TEXT, f'<a href="{scheme}:x'))
        assert "script body" in str(ctx.sub), scheme
        value = f"{scheme}:alert(1)"
        assert str(escapers.ESCAPERS["url_q"](value)) == rules.UNSAFE_URL, scheme
        assert str(beyond_escaping.safe_url(value)) == rules.UNSAFE_URL, scheme
        with pytest.raises(ValueError, match="run script"):
            beyond_escaping.safe_url("x", schemes=[scheme])
    # One table of URL attributes: the engine and attrs() agree on every name.
    for name in sorted(beyond_escaping.URL_ATTRIBUTES):
        assert rules.attribute_kind(name) in (rules.K_URL, rules.K_SRCSET, rules.K_URL_LIST)
        assert escaper_for(advance(TEXT, f'<a {name}="')) in ("url_q", "srcset_q", "url_list_q")
        assert beyond_escaping.attrs({name: "javascript:x"}) == f' {name}="{rules.UNSAFE_URL}"'
    # One list of raster images: a literal data: image takes values, safe_url keeps base64.
    for kind in rules.RASTER_IMAGE_TYPES:
        assert escaper_for(advance(TEXT, f'<img src="data:image/{kind};base64,')) is not None
        url = f"data:image/{kind};base64,AAAA"
        assert str(beyond_escaping.safe_url(url, allow_data_images=True)) == url


def test_a_class_with_html_fails_the_same_visible_way_everywhere() -> None:
    # "Is this markup" has one answer: it has __html__.  A class has one, unbound:
    # every path raises rather than guessing (two answers once let it through one path).
    for call in (
        lambda: htmlescape(Markup),
        lambda: htmltext("<a href='%s'>") + Markup,
        lambda: escapers.ESCAPERS["url_q"](Markup),
        lambda: escapers.ESCAPERS["js_value"](Markup),
        lambda: beyond_escaping.attrs({"title": Markup}),
    ):
        with pytest.raises(TypeError):
            call()


def test_the_old_name_of_the_context_engine_is_the_same_module() -> None:
    import ptl_wsgi.escaping.context as context
    import ptl_wsgi.htmlcontext as old

    assert old is context
    from ptl_wsgi.htmlcontext import ContextError

    assert ContextError is context.ContextError
