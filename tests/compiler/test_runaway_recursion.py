"""Runaway recursion in templates raises RecursionError, in both twins, as in Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from accelerator import without_c

from ptl_wsgi.html import IMPLEMENTATION

REPO = Path(__file__).parents[2]


# -- runaway recursion --------------------------------------------------------------------

RECURSION_CASES = {
    "template calls itself": """
        def page [html] (n):
            '<div>'
            page(n + 1)
            '</div>'
        page(0)
    """,
    "plain template calls itself": """
        def page [plain] (n):
            page(n + 1)
        page(0)
    """,
    "__html__ renders the template that escapes it": """
        class Loop:
            def __html__(self):
                return page(self)
        def page [html] (item):
            '<p>%s</p>' % item
        page(Loop())
    """,
    "__str__ feeds an f-string that calls it": """
        class Loop:
            def __str__(self):
                return str(page(self))
        def page [html] (item):
            f'<p>{item!s}</p>'
        page(Loop())
    """,
    "format_map mapping recurses": """
        class Mapping:
            def __getitem__(self, key):
                return page(self)
        def page [html] (m):
            '<p>{x}</p>'.format_map(m)
        page(Mapping())
    """,
    "join of a recursive iterator": """
        def items(n):
            yield page(n + 1)
        def page [html] (n):
            ''.join(items(n))
        page(0)
    """,
}

RECURSION_CHILD = """
import sys, textwrap
from ptl_wsgi.compiler import compile_ptl
source = textwrap.dedent(sys.stdin.read())
try:
    exec(compile_ptl(source, "<recursion>"), {"__name__": "recursion"})
except RecursionError:
    print("RecursionError")
"""


@pytest.mark.parametrize("twin", ["python", "c"])
@pytest.mark.parametrize("case", list(RECURSION_CASES))
def test_runaway_recursion_raises_recursion_error(twin: str, case: str) -> None:
    # In a child: a C twin that overflowed the C stack would kill it, not pytest.
    if twin == "c" and IMPLEMENTATION != "c":
        without_c("the C accelerator is not built")
    env = dict(os.environ, PTL_WSGI_PURE_PYTHON="1" if twin == "python" else "0")
    result = subprocess.run(
        [sys.executable, "-c", RECURSION_CHILD],
        input=RECURSION_CASES[case],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )
    assert (result.returncode, result.stdout.strip()) == (0, "RecursionError"), result.stderr
