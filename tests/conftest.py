"""Shared fixtures: run the htmltext tests against both twins.

``impl`` is parametrized over ``"python"`` (the reference) and ``"c"`` (the
accelerator).  The ``"c"`` case is skipped while ``ptl_wsgi._htmltext_c`` is
not built, unless ``PTL_WSGI_REQUIRE_C=1`` is set (as in CI, where a missing
accelerator is a failure).
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from hypothesis import settings

from ptl_wsgi.html import implementation

IMPLEMENTATIONS = ("python", "c")

BUILD_HINT = "build it with `.venv/bin/python setup.py build_ext --inplace`"

# Deterministic property tests by default; HYPOTHESIS_PROFILE=dev explores new examples.
settings.register_profile("ci", derandomize=True, deadline=None, database=None)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def c_required() -> bool:
    """True when a missing C accelerator must fail the run instead of skipping."""
    return os.environ.get("PTL_WSGI_REQUIRE_C", "") == "1"


def load_implementation(name: str) -> SimpleNamespace:
    """The API of one twin; skips (or fails, see :func:`c_required`) if C is not built."""
    try:
        return implementation(name)
    except ImportError as exc:
        if name != "c":
            raise
        message = f"C accelerator ptl_wsgi._htmltext_c is not built ({exc}); {BUILD_HINT}"
        if c_required():
            pytest.fail(f"PTL_WSGI_REQUIRE_C=1 but the {message}", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def impl(request: pytest.FixtureRequest) -> SimpleNamespace:
    """One twin's API: htmltext, htmlescape, stringify, TemplateIO, html_join, ...

    Module-scoped (it is immutable) so that hypothesis tests can use it too.
    """
    return load_implementation(request.param)


@pytest.fixture(scope="session")
def twins() -> tuple[SimpleNamespace, SimpleNamespace]:
    """Both twins, ``(python, c)``, for differential tests; skips when C is not built."""
    return load_implementation("python"), load_implementation("c")
