"""The project's own metadata: the dev extra and the dev dependency group agree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is new in Python 3.11")
def test_dev_extra_is_an_alias_of_the_dev_group() -> None:
    import tomllib

    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    # The extra stays for pips without --group; a dependency added to one list only
    # would give two kinds of dev venv.
    assert data["project"]["optional-dependencies"]["dev"] == data["dependency-groups"]["dev"]
