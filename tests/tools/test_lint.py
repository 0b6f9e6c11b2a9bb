"""``ptl-wsgi lint``: the real ruff on .ptl files, in a subprocess, as users run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ptl_helpers import REPO, subprocess_env, write_files

pytest.importorskip("ruff")

PROJECT = {
    "pyproject.toml": """\
        [tool.ruff]
        line-length = 60

        [tool.ruff.lint]
        select = ["E", "F", "B", "PLW", "UP"]
        per-file-ignores = { "quiet/*" = ["F821"] }
        """,
    "pages.ptl": """\
        import os

        def page [html] (name):
            "<h1>%s</h1>" % name
            name == "x"
            text = "%s" % name
            ValueError("shown: output, not a forgotten raise")
            ("parenthesized")
            def helper():
                name
            helper()
            unknown_name

        template old(x):
            "é" ; x
            "%s" % x

        label = "café"; label
        "a line long enough to go past the sixty columns of the project's own limit"
        """,
    "quiet/other.ptl": """\
        def other [plain] ():
            missing
        """,
}


def lint(root: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", "lint", *paths],
        capture_output=True,
        text=True,
        cwd=root,
        env=subprocess_env(),
        timeout=120,
    )


def test_findings_have_ptl_positions_and_output_statements_are_not_useless(
    tmp_path: Path,
) -> None:
    write_files(tmp_path, PROJECT)
    result = lint(tmp_path)
    assert result.returncode == 1
    useless = "Found useless expression. Either assign it to a variable or remove it."
    # Not reported: the output statements of lines 4, 5, 7, 8, 11, 15 and 16, nor
    # UP031 on the [html] template's "literal" % values (lines 4 and 6).
    assert result.stdout.splitlines() == [
        "./pages.ptl:1:8: F401 `os` imported but unused",
        "./pages.ptl:6:5: F841 Local variable `text` is assigned to but never used",
        # In an ordinary function nested in a template, a bare name is useless again.
        f"./pages.ptl:10:9: B018 {useless}",
        "./pages.ptl:12:5: F821 Undefined name `unknown_name`",
        # Columns count characters: "é" is one.
        "./pages.ptl:15:9: E702 Multiple statements on one line (semicolon)",
        # A [plain] template's % is ordinary Python formatting.
        "./pages.ptl:16:5: UP031 Use format specifiers instead of percent format",
        "./pages.ptl:18:15: E702 Multiple statements on one line (semicolon)",
        # Module level is ordinary code.
        f"./pages.ptl:18:17: B018 {useless}",
        # The project's line-length; quiet/other.ptl's F821 is ignored per file.
        "./pages.ptl:19:61: E501 Line too long (76 > 60)",
    ]
    assert result.stderr.strip() == "Found 9 errors."


def test_invalid_ptl_is_the_compilers_error(tmp_path: Path) -> None:
    write_files(tmp_path, {"bad.ptl": "def page [html] (:\n    'x'\n"})
    result = lint(tmp_path, "bad.ptl")
    assert result.returncode == 1
    assert result.stderr.startswith("bad.ptl:1:")


def test_the_projects_own_templates_are_clean() -> None:
    result = lint(REPO, "example_sites")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr
