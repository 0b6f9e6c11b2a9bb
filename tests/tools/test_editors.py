"""The TextMate grammar (editors/ptl.tmLanguage.json), run by the real vscode-textmate.

The npm packages (vscode-textmate, vscode-oniguruma, and Shiki's grammar collection for
source.python, which the PTL grammar embeds) are installed into a cache directory on first
use; without node and npm, or without the registry, the test skips and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ptl_helpers import CASES_DIR, REPO

from ptl_wsgi.compiler import python_view

GRAMMAR = REPO / "editors" / "ptl.tmLanguage.json"
SCRIPT = Path(__file__).parents[1] / "support" / "textmate_tokenize.mjs"
PACKAGES = {"vscode-textmate": "9.3.2", "vscode-oniguruma": "2.0.1", "@shikijs/langs": "4.6.0"}

pytestmark = pytest.mark.slow


def node_modules() -> Path:
    cache = Path(
        os.environ.get("PTL_WSGI_NPM_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ptl_wsgi-npm"
    )
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed (apt-get install nodejs npm)")
    manifest = {"private": True, "dependencies": PACKAGES}
    wanted = json.dumps(manifest, sort_keys=True)
    stamp = cache / "installed.json"
    if not stamp.exists() or stamp.read_text() != wanted:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "package.json").write_text(json.dumps(manifest))
        result = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent"],
            cwd=cache,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode:
            pytest.skip(f"npm install failed (no registry?): {result.stderr.strip()[-300:]}")
        stamp.write_text(wanted)
    return cache


@pytest.fixture(scope="module")
def tokens() -> dict[str, list[list[list]]]:
    cases = sorted(str(p) for p in CASES_DIR.glob("*.ptl"))
    result = subprocess.run(
        ["node", str(SCRIPT), str(node_modules()), str(GRAMMAR), *cases],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)


def templates_on(templates: dict[tuple[int, int], str], number: int) -> bool:
    return any(row == number for row, _ in templates)


def text_of(line: str, token: list) -> str:
    return line[token[0] : token[1]]


@pytest.mark.parametrize("case", sorted(CASES_DIR.glob("*.ptl")), ids=lambda p: p.stem)
def test_every_template_header_is_highlighted(case: Path, tokens) -> None:
    source = case.read_text(encoding="utf-8")
    lines = source.split("\n")
    _, templates = python_view(source)
    file_tokens = tokens[str(case)]
    kinds, olds = [], []
    for number, line_tokens in enumerate(file_tokens, 1):
        line = lines[number - 1]
        for index, token in enumerate(line_tokens):
            scopes = token[2:]
            # Shiki's Python grammar does not know PEP 695 generics (def f[T](...)) yet.
            generic = "[" in line and not templates_on(templates, number)
            if not generic:
                assert not [s for s in scopes if s.startswith("invalid")], (number, line)
            if "storage.modifier.template-kind.ptl" in scopes:
                kinds.append((number, text_of(line, token)))
                name = [t for t in line_tokens[:index] if "entity.name.function.python" in t]
                assert name, (number, line)
            if "storage.type.function.template.ptl" in scopes:
                olds.append(number)
    expected_kinds = sorted(
        (row, kind) for (row, _), kind in templates.items() if "[" in lines[row - 1]
    )
    assert sorted(kinds) == expected_kinds
    assert sorted(olds) == sorted(
        row for (row, _) in templates if lines[row - 1].lstrip().startswith("template")
    )


def test_bodies_are_python(tokens) -> None:
    case = CASES_DIR / "html_literals.ptl"
    scopes = {s for line in tokens[str(case)] for token in line for s in token[2:]}
    assert {"string.quoted.single.python", "keyword.control.import.python"} <= scopes
    # Parameters after a [html] header are Python's parameters.
    assert "variable.parameter.function.language.python" in scopes
