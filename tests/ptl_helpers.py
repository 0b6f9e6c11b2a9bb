"""Helpers shared by the PTL compiler, importer, CLI and conformance tests."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CASES_DIR = Path(__file__).parent / "ptl_cases"
REPO = Path(__file__).parent.parent


def write_files(root: Path, files: dict[str, str]) -> None:
    """Create *files* (relative path -> dedented text) under *root*."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


@contextmanager
def import_sandbox(root: Path) -> Iterator[Path]:
    """*root* first on sys.path with PTL imports on; import state restored afterwards."""
    from ptl_wsgi.importer import install

    saved_path = list(sys.path)
    saved_meta_path = list(sys.meta_path)
    saved_modules = set(sys.modules)
    sys.path.insert(0, str(root))
    install()
    importlib.invalidate_caches()
    try:
        yield root
    finally:
        sys.path[:] = saved_path
        sys.meta_path[:] = saved_meta_path
        for name in set(sys.modules) - saved_modules:
            del sys.modules[name]


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that imports this checkout of ptl_wsgi."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env
