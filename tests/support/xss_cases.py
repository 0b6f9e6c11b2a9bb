"""The XSS corpus and the markup contexts it is tried in, for the string and browser tests.

A helper module, not a test module: tests/escaping/test_xss_strings.py and
tests/browser/test_xss_browser.py both import it, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

VECTORS_FILE = Path(__file__).with_name("xss_vectors.txt")


def load_vectors() -> list[str]:
    """The corpus: one vector a line; blank lines and ``# `` comments skipped."""
    lines = VECTORS_FILE.read_text(encoding="utf-8").split("\n")
    return [line for line in lines if line and not line.startswith("# ") and line != "#"]


VECTORS = load_vectors()

# name -> (markup before the value, markup after it); the element or attribute
# that holds the value has id="ctx".
CONTEXTS: dict[str, tuple[str, str]] = {
    "element": ('<div id="ctx">', "</div>"),
    "double_quoted": ('<div id="ctx" title="', '">x</div>'),
    "single_quoted": ("<div id='ctx' title='", "'>x</div>"),
    "title": ("<title id=ctx>", "</title>"),
    "textarea": ('<textarea id="ctx">', "</textarea>"),
}


def ptl_renderers() -> dict[str, Callable[[str], Any]]:
    """One PTL [html] template per context, each in a different style of output."""
    from ptl_wsgi.compiler import compile_ptl

    styles = [
        "    '''{before}'''\n    v\n    '''{after}'''\n",
        "    '''{before}%s{after}''' % v\n",
        "    f'''{before}{{v}}{after}'''\n",
        "    '''{before}{{}}{after}'''.format(v)\n",
        "    '''{before}%(v)s{after}''' % {{'v': v}}\n",
    ]
    source = []
    for index, (name, (before, after)) in enumerate(CONTEXTS.items()):
        body = styles[index % len(styles)].format(before=before, after=after)
        source.append(f"def {name} [html] (v):\n{body}\n")
    namespace: dict[str, Any] = {}
    exec(compile_ptl("".join(source), "<xss-contexts>"), namespace)
    return {name: namespace[name] for name in CONTEXTS}


# Contextual escaping (docs/contextual-escaping.md): the places HTML escaping alone does
# not protect, each with plain template code and no helper.  name -> (before, after);
# the element that holds the value has class="ctx".
CONTEXTUAL: dict[str, tuple[str, str]] = {
    "href": ('<a class="ctx" href="', '">x</a>'),
    "src": ('<img class="ctx" loading="lazy" hidden src="', '">'),
    "srcset": ("<img class='ctx' loading='lazy' hidden srcset='", "'>"),
    "unquoted": ("<div class=ctx title=", ">x</div>"),
    "js_double": ('<script>window.__v.push("', '")</script>'),
    "js_single": ("<script>window.__v.push('", "')</script>"),
    "js_template": ("<script>window.__v.push(`", "`)</script>"),
    "js_expression": ("<script>window.__v.push(", ")</script>"),
    "onclick": ('<button class="ctx" onclick="return \'', "'\">b</button>"),
    "style_attribute": ('<div class="ctx" style="color: ', '">x</div>'),
    "style_element": ('<style class="ctx">#none { color: ', " }</style>"),
    "comment": ('<div class="ctx"><!-- ', " --></div>"),
    "srcdoc": ('<iframe class="ctx" srcdoc="<p>', '</p>"></iframe>'),
    "svg_title_href": ('<svg class="ctx"><title><a href="', '">x</a></title></svg>'),
}


def contextual_renderers() -> dict[str, Callable[[str], Any]]:
    """One [html] template per contextual place, in plain code, styles in turn."""
    from ptl_wsgi.compiler import compile_ptl

    def braces(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}")

    styles = [
        lambda b, a: f"    {b!r}\n    v\n    {a!r}\n",
        lambda b, a: f"    {b.replace('%', '%%') + '%s' + a.replace('%', '%%')!r} % (v,)\n",
        lambda b, a: f"    f{braces(b) + '{v}' + braces(a)!r}\n",
        lambda b, a: f"    {braces(b) + '{}' + braces(a)!r}.format(v)\n",
    ]
    source = [
        f"def {name} [html] (v):\n{styles[index % len(styles)](before, after)}\n"
        for index, (name, (before, after)) in enumerate(CONTEXTUAL.items())
    ]
    namespace: dict[str, Any] = {}
    exec(compile_ptl("".join(source), "<xss-contextual>"), namespace)
    return {name: namespace[name] for name in CONTEXTUAL}
