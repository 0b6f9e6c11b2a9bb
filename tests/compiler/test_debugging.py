"""Debugging templates: pdb line breakpoints, and tracebacks as users see them."""

from __future__ import annotations

import ast
import pdb
import subprocess
import sys
from pathlib import Path

import pytest
from ptl_helpers import CASES_DIR, subprocess_env, write_files

from ptl_wsgi.compiler import compile_ptl, python_view

PAGE = '''\
    """A page."""

    def page [html] (name):
        "<h1>%s</h1>" % name
        "<p>done</p>"
    '''


def run_pdb(root: Path, commands: list[str]) -> str:
    """``python -m pdb main.py`` in *root*, fed *commands* on stdin; its output."""
    result = subprocess.run(
        [sys.executable, "-B", "-m", "pdb", "main.py"],
        input="".join(f"{command}\n" for command in commands),
        capture_output=True,
        text=True,
        cwd=root,
        env=subprocess_env(),
        timeout=60,
    )
    return result.stdout


def stops(output: str) -> list[str]:
    """Where pdb stopped, as ``file(line)function()`` with the directory left out."""
    return [
        line.split("/")[-1]
        for line in output.splitlines()
        if line.lstrip("(Pdb) ").startswith("> ")
    ]


@pytest.mark.parametrize("line", [4, 5])
def test_a_line_breakpoint_in_a_template_first_stops_in_the_template(
    tmp_path: Path, line: int
) -> None:
    write_files(
        tmp_path,
        {
            "page.ptl": PAGE,
            "main.py": """\
                import ptl_wsgi
                ptl_wsgi.install()
                import page
                print(page.page("x"))
                """,
        },
    )
    # Stop at the start, break, continue to the breakpoint, run to the end (pdb then
    # restarts the program and stops at its first line), quit.
    if pdb.Pdb().lookupmodule(str(tmp_path / "page.ptl")) is None:
        pytest.skip("this pdb takes a file name not ending in .py for a module name (3.13)")
    output = run_pdb(tmp_path, [f"b {tmp_path / 'page.ptl'}:{line}", "c", "c", "q"])
    # Not page.ptl(4)<module>(): the literals hoisted to the module prologue
    # must not carry the line of the template that uses them.  And once only: the
    # two output lines are one call, which runs at the last of them.
    expected = ["main.py(1)<module>()", f"page.ptl({line})page()", "main.py(1)<module>()"]
    assert stops(output) == expected
    assert "<h1>x</h1><p>done</p>" in output


def module_lines(code) -> set[int]:
    """The lines the module-level code of *code* runs (nested functions left out)."""
    return {line for _, _, line in code.co_lines() if line is not None}


@pytest.mark.parametrize("case", sorted(CASES_DIR.glob("*.ptl")), ids=lambda p: p.stem)
def test_module_code_runs_only_module_level_lines(case: Path) -> None:
    if case.name.startswith("py312_") and sys.version_info < (3, 12):
        pytest.skip("needs Python 3.12 syntax")
    source = case.read_text(encoding="utf-8")
    code = compile_ptl(source, str(case))
    tree = ast.parse(python_view(source)[0])
    allowed = {0, 1}  # 0: the RESUME that starts every code object on 3.11+
    for stmt in tree.body:
        # A def (with its decorators) or class runs at module level on its own lines only.
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            allowed.update(range(first, stmt.lineno + 1))
        else:
            allowed.update(range(first, stmt.end_lineno + 1))
    assert module_lines(code) <= allowed


def test_a_syntax_error_on_import_shows_the_ptl_location_not_the_compiler(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "bad.ptl": """\
                def page [html] (name):
                    "<p>" name
                """,
            "main.py": """\
                import ptl_wsgi
                ptl_wsgi.install()
                import bad
                """,
        },
    )
    result = subprocess.run(
        [sys.executable, "-B", "main.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=60,
    )
    frames = [line.strip() for line in result.stderr.splitlines() if line.startswith("  File ")]
    # The importing line, importlib's own frames, the loader; none of the compiler's,
    # its thread's or ast's.
    assert frames[0].startswith('File "') and frames[0].endswith('main.py", line 3, in <module>')
    compiling = ("/compiler/", "threading.py", "ast.py")
    assert not [f for f in frames if any(part in f for part in compiling)]
    assert len([f for f in frames if "ptl_wsgi" in f]) == 1
    # Then the .ptl location, as Python shows any syntax error.
    assert 'bad.ptl", line 2' in result.stderr
    assert result.stderr.rstrip().endswith("SyntaxError: invalid syntax")
