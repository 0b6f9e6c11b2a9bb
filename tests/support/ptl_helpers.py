"""Helpers shared by the tests: files and imports, compiling with the compiler's switches,
and the values tests give templates and both htmltext twins."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CASES_DIR = Path(__file__).parents[1] / "ptl_cases"
REPO = Path(__file__).parents[2]


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


def json_of_both_twins(*argv: str) -> tuple[Any, Any]:
    """The JSON a child Python prints for ``python *argv``, under the pure twin and the
    C twin (skipped where the C twin is not built); each names its ``twin``, removed."""
    results = []
    for pure in ("1", "0"):
        done = subprocess.run(
            [sys.executable, *argv],
            capture_output=True,
            text=True,
            env=subprocess_env(PTL_WSGI_PURE_PYTHON=pure),
            check=True,
        )
        results.append(json.loads(done.stdout))
    python, c = results
    assert python.pop("twin") == "python"
    if c.pop("twin") != "c":
        pytest.skip("the C twin is not built")
    return python, c


def render_f(source: str, *args: Any) -> str:
    """Compile *source* (a .ptl module defining ``f``, dedented) and return ``f(*args)`` as str."""
    return str(compiled(textwrap.dedent(source), "attack").f(*args))


def compiled(source: str, name: str, **switches: bool) -> types.ModuleType:
    """*source* compiled and run as module *name*, with the compiler's test switches
    (``_SPLIT_OUTPUT``, ``_FUSE_LOOPS``: ``compiler.switches``) set as given for the
    compile only."""
    from ptl_wsgi import compiler
    from ptl_wsgi.compiler import switches as compiler_switches

    names = {switch: switch.lstrip("_") for switch in switches}
    before = {switch: getattr(compiler_switches, names[switch]) for switch in switches}
    try:
        for switch, value in switches.items():
            setattr(compiler_switches, names[switch], value)
        code = compiler.compile_ptl(source, f"<{name}>")
    finally:
        for switch, value in before.items():
            setattr(compiler_switches, names[switch], value)
    module = types.ModuleType(name)
    exec(code, module.__dict__)
    return module


class HtmlObject:
    """Third-party trusted markup: anything with ``__html__``."""

    def __init__(self, markup: str) -> None:
        self.markup = markup

    def __html__(self) -> str:
        return self.markup

    def __str__(self) -> str:
        return "str() of HtmlObject <must not be used>"

    def __format__(self, spec: str) -> str:
        return format("<fmt>", spec)

    def __repr__(self) -> str:  # no address: the twins' outcomes are compared as text
        return f"HtmlObject({self.markup!r})"


#: What Recorder values were asked for, in order (outcome() clears it).
LOG: list[str] = []


class Recorder:
    """A value that logs every method of its own that output calls, failing one if asked."""

    def __init__(self, text: str, fails: str = "") -> None:
        self.text, self.fails = text, fails

    def _call(self, what: str) -> str:
        LOG.append(f"{what}:{self.text}")
        if what == self.fails:
            raise ValueError(f"{what} of {self.text!r} failed")
        return self.text

    def __str__(self) -> str:
        return self._call("str")

    def __repr__(self) -> str:
        return self._call("repr")

    def __format__(self, spec: str) -> str:
        return self._call(f"format{spec}")


class RecordedMarkup(Recorder):
    """A Recorder with ``__html__``."""

    def __html__(self) -> str:
        return self._call("html")


def outcome(function: Any, *args: Any) -> tuple[Any, ...]:
    """What calling *function* gives: its result or error, and the Recorder calls made."""
    LOG.clear()
    try:
        result = function(*args)
    except Exception as exc:  # the same error is part of the contract
        return ("raised", type(exc), str(exc), list(LOG))
    return ("returned", type(result), str(result), list(LOG))
