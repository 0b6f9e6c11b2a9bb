"""Templates for the robustness tests: a loader of PTL source and builders of huge pages.

A helper module, not a test module, so that the memory-peak child process can
import the page builders without importing tests/htmltext/test_huge_pages.py again.
"""

from __future__ import annotations

import textwrap
from typing import Any

from ptl_wsgi.compiler import compile_ptl
from ptl_wsgi.html import htmltext


def load_ptl(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "robustness"}
    exec(compile_ptl(textwrap.dedent(source), "<robustness>"), namespace)
    return namespace


BIG_TEMPLATE = """
def listing [html] (rows):
    '<ul>'
    for row in rows:
        '<li class="r">%s</li>' % row
    '</ul>'
"""


def page_builders(rows: list[str]) -> dict[str, Any]:
    listing = load_ptl(BIG_TEMPLATE)["listing"]

    def template_io() -> Any:
        from ptl_wsgi.html import TemplateIO

        out = TemplateIO(html=True)
        for row in rows:
            out += htmltext("<li>")
            out += row
        return out.getvalue()

    return {"template": lambda: listing(rows), "template_io": template_io}


ROW = "<row> & 'text' " + "x" * 69  # about 100 characters once escaped
