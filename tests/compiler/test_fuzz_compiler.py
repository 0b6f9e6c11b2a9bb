"""Fuzzing the PTL compiler with generated sources.

Sources come from a small grammar of PTL (``[html]``/``[plain]`` templates,
the old ``template`` form, literals of every kind with quotes, braces and
backslashes, f-strings, % formatting, comprehensions, nested defs, control
flow, classes), optionally mutated by inserting, deleting and duplicating
text.  The rules:

* a source from the grammar compiles, since CPython compiles its plain-Python twin;
* any source, mutated or not, compiles or raises SyntaxError with a line
  number and the file name -- never another exception;
* running what compiled, and calling its templates, never crashes the
  interpreter: that part runs in a child process, so a crash fails the test
  instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from types import CodeType

import pytest
from hypothesis import HealthCheck, given, settings
from ptl_grammar import FILENAME, module, mutated, python_twin

from ptl_wsgi import compiler

# -- properties --------------------------------------------------------------------------


def compile_or_syntax_error(source: str | bytes) -> CodeType | None:
    """Compile *source*; None for a well-located SyntaxError, which is fine."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # CPython's, about odd literals
            code = compiler.compile_ptl(source, FILENAME)
    except SyntaxError as exc:
        assert exc.filename == FILENAME, exc
        assert isinstance(exc.lineno, int) and exc.lineno >= 1, f"no line number: {exc!r}"
        return None
    assert isinstance(code, CodeType)
    return code


FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("PTL_FUZZ_EXAMPLES", "120")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ_SETTINGS
@given(module())
def test_grammar_sources_compile(source: str) -> None:
    compile(python_twin(source), FILENAME, "exec")  # the generator's own sanity check
    if compile_or_syntax_error(source) is None:
        # Only contextual escaping may refuse valid PTL (a value in a tag name, a template
        # ending inside a tag): with it off, the module compiles.
        lines = source.splitlines(keepends=True)
        after = max(
            (i + 1 for i, line in enumerate(lines) if line.startswith("from __future__")), default=0
        )
        opted_out = "".join([*lines[:after], "__ptl_contextual__ = False\n", *lines[after:]])
        assert compile_or_syntax_error(opted_out) is not None, source


@FUZZ_SETTINGS
@given(mutated())
def test_mutated_sources_compile_or_raise_located_syntax_error(source: str | bytes) -> None:
    compile_or_syntax_error(source)


@pytest.mark.parametrize(
    "source",
    [
        'def f [html] ():\n    "a\x00b"\n',
        b"# -*- coding: no-such-codec -*-\ndef f [html] ():\n    1\n",
        b"\xffdef f [html] ():\n    1\n",
        # Deep enough that CPython's own parser gives up on every supported version
        # (3.13 compiles 5,000 levels).
        "def f [html] (x):\n    " + "-" * 20000 + "x\n",
        "def f [html] (x):\n    " + "+".join(["x"] * 20000) + "\n",
        "def f [html] (x):\n    " + "(" * 300 + "x" + ")" * 300 + "\n",
        "".join(" " * i + f"def f{i} [html] ():\n" for i in range(120)) + " " * 120 + "pass\n",
    ],
    ids=[
        "nul",
        "unknown-codec",
        "undecodable-first-line",
        "deep-unary",
        "long-sum",
        "deep-parens",
        "deep-defs",
    ],
)
def test_hostile_sources_raise_located_syntax_error(source: str | bytes) -> None:
    if isinstance(source, str) and _cpython_compiles(source.replace(" [html] (", "(")):
        # Depth limits move between versions (3.14 compiles a 20,000-term sum):
        # a .ptl file compiles exactly when its Python does.
        assert compile_or_syntax_error(source) is not None
        return
    assert compile_or_syntax_error(source) is None


def _cpython_compiles(source: str) -> bool:
    try:
        compile(source, "<reference>", "exec")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return True


# -- crash safety: run in a child ----------------------------------------------------------


def test_compiled_templates_run_without_crashing_the_interpreter() -> None:
    tests = Path(__file__).parents[1] / "support"
    child = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tests)!r})
        sys.setrecursionlimit(400)
        from ptl_grammar import compile_and_run
        compile_and_run()
        """
    )
    # The child has no conftest: hand it this run's hypothesis budget (the fast profile's cap).
    budget = min(100, settings.default.max_examples)
    env = dict(os.environ, PTL_FUZZ_RUN_EXAMPLES=str(budget))
    result = subprocess.run(
        [sys.executable, "-c", child],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tests.parent,
        env=env,
    )
    assert result.returncode == 0, (
        f"child exited with {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )
