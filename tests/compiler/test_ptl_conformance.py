"""The PTL conformance suite: every ``tests/ptl_cases/*.ptl`` renders exactly its ``.expected``.

Each case module defines ``render()`` and ``RESULT_TYPE`` (``"htmltext"`` or
``"str"``).  ``NAME.expected`` holds the exact output followed by one newline
(which is not part of the output).  Cases named ``py312_*`` use Python 3.12
syntax and are skipped on older versions.  Every case is loaded three ways:
``import`` through the finder, ``load_module_from_path`` (bytecode cache),
and ``compile_ptl`` + ``exec`` (no cache).
"""

from __future__ import annotations

import ast
import doctest
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
from ptl_helpers import CASES_DIR, REPO, import_sandbox, subprocess_env

from ptl_wsgi import compile_ptl, parse_ptl
from ptl_wsgi.html import htmltext
from ptl_wsgi.importer import load_module_from_path

CASES = sorted(CASES_DIR.glob("*.ptl"))


def expected_output(path: Path) -> str:
    text = path.with_suffix(".expected").read_text(encoding="utf-8")
    assert text.endswith("\n"), f"{path.with_suffix('.expected')} must end with a newline"
    return text[:-1]


def check_render(module: types.ModuleType, path: Path) -> None:
    result = module.render()
    assert type(result).__name__ == module.RESULT_TYPE
    assert type(result) is (htmltext if module.RESULT_TYPE == "htmltext" else str)
    assert str(result) == expected_output(path)


def skip_unsupported(path: Path) -> None:
    if path.name.startswith("py312_") and sys.version_info < (3, 12):
        pytest.skip("needs Python 3.12 syntax")


def test_every_case_has_an_expected_file() -> None:
    assert len(CASES) >= 12
    for path in CASES:
        assert path.with_suffix(".expected").is_file(), path


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_compiled_in_memory(path: Path) -> None:
    skip_unsupported(path)
    module = types.ModuleType(f"ptl_case_{path.stem}")
    module.__file__ = str(path)
    exec(compile_ptl(path.read_bytes(), str(path)), module.__dict__)
    check_render(module, path)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_loaded_by_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skip_unsupported(path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # the cache is tested here
    name = f"ptl_case_by_path_{path.stem}"
    try:
        module = load_module_from_path(path, name)
        check_render(module, path)
        # Again, now from the bytecode cache.
        module = load_module_from_path(path, name)
        assert module.__spec__.cached and Path(module.__spec__.cached).is_file()
        check_render(module, path)
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_imported(path: Path) -> None:
    skip_unsupported(path)
    with import_sandbox(CASES_DIR):
        module = importlib.import_module(path.stem)
        assert module.__file__ == str(path)
        assert module.__spec__.origin == str(path)
        check_render(module, path)


def test_cases_with_pure_python_twin() -> None:
    """Cached bytecode does not depend on which htmltext twin wrote or reads it."""
    script = (
        "import sys, ptl_wsgi\n"
        "from ptl_wsgi.importer import load_module_from_path\n"
        "assert ptl_wsgi.IMPLEMENTATION == 'python'\n"
        "for path in sys.argv[1:]:\n"
        "    m = load_module_from_path(path, 'case')\n"
        "    sys.stdout.write(str(m.render()) + '\\0')\n"
    )
    paths = [p for p in CASES if not p.name.startswith("py312_") or sys.version_info >= (3, 12)]
    result = subprocess.run(
        [sys.executable, "-c", script, *map(str, paths)],
        capture_output=True,
        text=True,
        env=subprocess_env(PTL_WSGI_PURE_PYTHON="1"),
        check=True,
    )
    assert result.stdout.split("\0")[:-1] == [expected_output(p) for p in paths]


def test_reference_examples() -> None:
    """Each ``ptl`` block in docs/ptl-reference.md compiles; the blocks after it hold.

    ``pycon`` blocks run as doctests in the block's module namespace; a
    ``python`` block is the ``ptl-wsgi show`` output of the block before it
    (compared as ASTs: ``ast.unparse`` quotes f-strings differently on 3.12+).
    """
    doc = (REPO / "docs" / "ptl-reference.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", doc, flags=re.M | re.S)
    assert [kind for kind, _ in blocks].count("ptl") >= 8
    namespace: dict[str, object] = {}
    source = ""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for index, (kind, text) in enumerate(blocks):
        if kind == "ptl":
            source, namespace = text, {"__name__": f"doc_example_{index}"}
            exec(compile_ptl(text, f"<doc block {index}>"), namespace)
        elif kind == "pycon":
            test = doctest.DocTestParser().get_doctest(text, namespace, f"block {index}", None, 0)
            results = runner.run(test)
            assert results.attempted and not results.failed, text
        elif kind == "python":
            shown = ast.unparse(parse_ptl(source))
            assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(shown))
