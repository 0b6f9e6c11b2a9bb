"""Every code example in docs/*.md runs (or, for fragments, compiles).

Which test covers which page:

* docs/ptl-reference.md: tests/compiler/test_ptl_conformance.py::test_reference_examples
* docs/security.md: tests/escaping/test_beyond_escaping.py::test_security_doc_examples
* docs/architecture.md (no examples, an import graph): tests/project/test_rooms.py
* the pages in ``RUN``: run here, by the convention below
* the pages in ``SCENARIOS`` (excerpts of larger applications, using names they do not
  define): run here with what they need (a temp template folder, a Flask app, Django's test
  settings), given by the page's :class:`Scenario`, their output asserted
* the pages in ``FRAGMENTS``: each ``python`` block compiles here, as PTL when it is a
  template module

The convention for the pages in ``RUN``, one fresh project directory per page:

* a block whose first line is ``# file: PATH`` (or ``{# file: PATH #}``) is written to PATH;
* ``pycon`` blocks run as doctests with the directory as the working directory and first on
  ``sys.path``, and ``.ptl`` imports on; they share one namespace per page, in which
  ``python`` blocks without a ``# file:`` line are executed;
* ``console`` blocks: each ``$ ptl-wsgi ...`` line is run there, and its output (stderr, then
  stdout) must be the lines that follow it;
* ``sh`` blocks: each ``ptl-wsgi`` command line must be accepted by the argument parser
  (not run: they serve, or write into real projects);
* other languages (``yaml``, ``text``, ``html``) are only written, when they have a
  ``# file:`` line.
"""

from __future__ import annotations

import ast
import contextvars
import doctest
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from doc_scenarios import SCENARIOS
from ptl_helpers import REPO, import_sandbox, subprocess_env

from ptl_wsgi.cli import build_parser
from ptl_wsgi.compiler import compile_ptl

DOCS = REPO / "docs"
ELSEWHERE = {"ptl-reference.md", "security.md", "architecture.md", "tools.md", "editors.md"}
RUN = [
    "index.md",
    "tutorial.md",
    "deploying.md",
    "migrating.md",
    "cli.md",
    "helpers.md",
    "layouts.md",
    "tstrings.md",
    "contextual-escaping.md",
    "asgi.md",
    "quart.md",
    "integrations.md",
]
# Pages whose examples are t-strings: their syntax is Python 3.14+.
NEEDS_314 = {"tstrings.md"}
FRAGMENTS = ["i18n.md"]

BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
FILE_MARK = re.compile(r"^(?:#|\{#)\s*file:\s*(\S+)")


def blocks(page: str) -> list[tuple[str, str]]:
    return BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))


def test_every_page_is_covered() -> None:
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages == ELSEWHERE | set(RUN) | set(SCENARIOS) | set(FRAGMENTS)


def run_console(text: str, cwd: Path) -> None:
    lines = text.splitlines()
    commands = [i for i, line in enumerate(lines) if line.startswith("$ ")]
    for n, index in enumerate(commands):
        end = commands[n + 1] if n + 1 < len(commands) else len(lines)
        argv = shlex.split(lines[index][2:])
        assert argv[0] == "ptl-wsgi", lines[index]
        result = subprocess.run(
            [sys.executable, "-m", "ptl_wsgi", *argv[1:]],
            cwd=cwd,
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        expected = "\n".join(lines[index + 1 : end]).rstrip("\n")
        assert (result.stderr + result.stdout).rstrip("\n") == expected, lines[index]


def check_sh(text: str) -> None:
    for line in text.splitlines():
        for command in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line.split("  #")[0]):
            if not command.startswith("ptl-wsgi "):
                continue
            try:
                build_parser().parse_args(shlex.split(command)[1:])
            except SystemExit as exc:
                pytest.fail(f"{command!r} is not a valid command line ({exc})")


@pytest.mark.parametrize("page", RUN)
def test_page_examples(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if page in NEEDS_314 and sys.version_info < (3, 14):
        pytest.skip("t-strings are Python 3.14+")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"doc_{page[:-3]}"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    ran = 0
    with import_sandbox(tmp_path):
        for index, (kind, text) in enumerate(blocks(page)):
            mark = FILE_MARK.match(text)
            name = f"{page} block {index}"
            if mark:
                path = tmp_path / mark.group(1)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            elif kind == "pycon":
                test = doctest.DocTestParser().get_doctest(text, namespace, name, page, 0)
                results = contextvars.Context().run(runner.run, test, clear_globs=False)
                assert results.attempted and not results.failed, text
                namespace.update(test.globs)  # DocTest ran on a copy; later blocks build on it
            elif kind == "python":
                exec(compile(text, name, "exec"), namespace)
            elif kind == "console":
                run_console(text, tmp_path)
            elif kind == "sh":
                check_sh(text)
            else:
                continue
            ran += 1
    assert ran, f"{page} has no examples"


# The first line of a block that is a file of the example project: "# templates/page.ptl".
PATH_LINE = re.compile(r"#\s*([\w./-]+\.(?:ptl|py|cgi))\s*$")


def run_block(text: str, name: str, namespace: dict[str, object]) -> None:
    """Run *text*; as at a Python prompt, the value of a last bare expression is ``_``."""
    try:
        tree = ast.parse(text, name)
    except SyntaxError:  # a template module: PTL, not Python
        exec(compile_ptl(text, name), namespace)
        return
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
        exec(compile(tree, name, "exec"), namespace)
        namespace["_"] = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
    else:
        exec(compile(tree, name, "exec"), namespace)


@pytest.mark.parametrize("page", sorted(SCENARIOS))
def test_scenario_examples(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block of *page* runs with what its scenario gives it, and its output is checked."""
    scenario = SCENARIOS[page]
    monkeypatch.chdir(tmp_path)
    page_blocks = blocks(page)
    assert set(scenario.then) <= set(range(len(page_blocks))), "then names a missing block"
    for path, text in scenario.files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    code_blocks: list[tuple[int, str, str]] = []
    # Files first: an example may use a template the page shows further down.
    for index, (kind, text) in enumerate(page_blocks):
        first = text.split("\n", 1)[0]
        runs = kind == "python" and index in scenario.run
        path_line = PATH_LINE.match(first) if kind == "python" and not runs else None
        named = scenario.named_blocks.get(index)
        path, prefix = named if isinstance(named, tuple) else (named, "")
        path = path or (path_line.group(1) if path_line else None)
        if path is not None:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(prefix + text, encoding="utf-8")
        code_blocks.append((index, kind, "" if path is not None else text))
    namespace: dict[str, object] = {"__name__": f"doc_{page[:-3]}"}
    with import_sandbox(tmp_path):
        exec(compile(scenario.given, f"{page} given", "exec"), namespace)
        try:
            for index, kind, text in code_blocks:
                name = f"{page} block {index}"
                if kind == "python" and text:
                    run_block(text, name, namespace)
                elif kind == "sh":
                    check_sh(text)
                if index in scenario.then:
                    namespace["BLOCK_TEXT"] = page_blocks[index][1]
                    exec(compile(scenario.then[index], f"{page} then {index}", "exec"), namespace)
        finally:
            exec(compile(scenario.cleanup, f"{page} cleanup", "exec"), namespace)


@pytest.mark.parametrize("page", FRAGMENTS)
def test_fragment_examples_compile(page: str) -> None:
    for index, (kind, text) in enumerate(blocks(page)):
        if kind != "python":
            continue
        name = f"{page} block {index}"
        first = text.split("\n", 1)[0]
        if (first.startswith("#") and first.rstrip().endswith(".ptl")) or "[html]" in text:
            compile_ptl(text, name)
        else:
            compile(text, name, "exec")


def test_docs_name_real_files() -> None:
    """Relative links in every page point at files that exist."""
    for page in DOCS.glob("*.md"):
        for target in re.findall(
            r"\]\(([^)#:\s]+\.(?:md|py|cgi|yaml))(?:#[^)]*)?\)", page.read_text("utf-8")
        ):
            assert (page.parent / target).exists(), f"{page.name} links to {target}"
    assert os.path.isfile(REPO / ".pre-commit-hooks.yaml")
