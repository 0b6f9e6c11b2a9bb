"""The project's own metadata: the dev extra and the dev dependency group agree."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is new in Python 3.11")
def test_dev_extra_is_an_alias_of_the_dev_group() -> None:
    import tomllib

    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    # The extra stays for pips without --group; a dependency added to one list only
    # would give two kinds of dev venv.
    assert data["project"]["optional-dependencies"]["dev"] == data["dependency-groups"]["dev"]


ROOT = PYPROJECT.parent


def test_the_readme_development_table_is_the_makefile() -> None:
    # Every target has a row, every row is a target: the table cannot drift from the Makefile.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = next(line for line in makefile.splitlines() if line.startswith(".PHONY:"))
    targets = set(phony.split(":", 1)[1].split())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    development = readme.split("## Development", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `make ([\w-]+)` \|", development, re.M))
    assert rows == targets


def test_license_and_changelog_ship() -> None:
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License")
    assert 'license-files = ["LICENSE"]' in PYPROJECT.read_text(encoding="utf-8")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.index("## Unreleased") < changelog.index("## 0.1.0")


def test_test_modules_never_import_each_other() -> None:
    # One module imported under two names runs its module code twice (and its fixtures
    # clash); shared helpers live in conftest.py and helper modules not named test_*.
    import ast

    found = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found += [f"{path.name}: {n}" for n in names if n.split(".")[-1].startswith("test_")]
    assert found == []
