"""t-strings (PEP 750, Python 3.14+) in templates mean what the same f-strings mean."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from ptl_wsgi import compile_ptl
from ptl_wsgi.html import htmltext

pytestmark = pytest.mark.skipif(sys.version_info < (3, 14), reason="t-strings are Python 3.14+")

SOURCE = """
def cell [html] (value, width):
    t"<td>{value}</td>"
    t"<td>{value!r:>{width}}</td>"
    t"<td>{ {'k': value}['k'] }</td>"

def argument [html] (value):
    wrap(t"<b>{value}</b>")

def wrap [html] (inner):
    "<p>"
    inner
    "</p>"

def text [plain] (value):
    t"<i>{value}</i>"

def fstring [html] (value, width):
    f"<td>{value}</td>"
    f"<td>{value!r:>{width}}</td>"
    f"<td>{ {'k': value}['k'] }</td>"
"""


def load() -> types.ModuleType:
    module = types.ModuleType("tstrings_case")
    exec(compile_ptl(SOURCE, "tstrings_case.ptl"), module.__dict__)
    return module


@pytest.mark.parametrize("value", ["<x>", 5, None, htmltext("<hr>")])
def test_tstring_is_the_fstring(value: object) -> None:
    module = load()
    assert module.cell(value, 8) == module.fstring(value, 8)
    assert type(module.cell(value, 8)) is htmltext


def test_values_are_escaped_literals_trusted() -> None:
    module = load()
    assert module.cell("<x>", 3) == (
        "<td>&lt;x&gt;</td><td>&#x27;&lt;x&gt;&#x27;</td><td>&lt;x&gt;</td>"
    )
    assert module.argument("<s>") == "<p><b>&lt;s&gt;</b></p>"
    assert module.text("<s>") == "<i><s></i>"
    assert type(module.text("<s>")) is str


def test_show_prints_them(tmp_path: Path) -> None:
    path = tmp_path / "page.ptl"
    path.write_text(SOURCE)
    result = subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", "show", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "_ptl_field_output(value)" in result.stdout
    compile(result.stdout, "shown.py", "exec")
