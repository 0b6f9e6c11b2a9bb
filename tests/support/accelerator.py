"""Whether a missing C accelerator skips a test or fails it.

A helper module (not a test module, not conftest) so that conftest.py and the
tests that need the C twin directly share one rule: without the accelerator a
test skips with a hint, unless ``PTL_WSGI_REQUIRE_C=1`` is set (as in CI),
where the same test fails instead -- a skip there would hide a broken build.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import NoReturn

import pytest

from ptl_wsgi.html import implementation

BUILD_HINT = "build it with `.venv/bin/python setup.py build_ext --inplace`"


def c_required() -> bool:
    """True when a missing C accelerator must fail the run instead of skipping."""
    return os.environ.get("PTL_WSGI_REQUIRE_C", "") == "1"


def without_c(reason: str) -> NoReturn:
    """Skip the current test because the C twin cannot be had, or fail if it is required."""
    if c_required():
        pytest.fail(f"PTL_WSGI_REQUIRE_C=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def load_implementation(name: str) -> SimpleNamespace:
    """The API of one twin; skips (or fails, see :func:`c_required`) if C is not built."""
    try:
        return implementation(name)
    except ImportError as exc:
        if name != "c":
            raise
        without_c(f"the C accelerator ptl_wsgi._htmltext_c is not built ({exc}); {BUILD_HINT}")
