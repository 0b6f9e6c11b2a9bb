"""Shared fixtures and the hypothesis profiles.

``impl`` is parametrized over ``"python"`` (the reference) and ``"c"`` (the
accelerator).  The ``"c"`` case is skipped while ``ptl_wsgi._htmltext_c`` is
not built, unless ``PTL_WSGI_REQUIRE_C=1`` is set (as in CI, where a missing
accelerator is a failure); see tests/accelerator.py.

Hypothesis profiles, chosen with ``HYPOTHESIS_PROFILE=<name>`` or pytest's
``--hypothesis-profile=<name>``:

``ci`` (the default)
    deterministic: the same examples on every run, as many as each test asks for.
``fast``
    ``ci`` with every property capped at ``FAST_EXAMPLES`` examples, even the
    ones whose ``@settings`` ask for more (``make test-fast``).
``dev``
    random exploration of new examples, remembered in the example database.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

# The shared helpers (ptl_helpers, accelerator, browser, servers, ...) are imported by name
# from every test folder.
sys.path.insert(0, str(Path(__file__).parent / "support"))

import pytest
from accelerator import load_implementation
from hypothesis import settings

IMPLEMENTATIONS = ("python", "c")

FAST_EXAMPLES = 10
# Profiles whose max_examples also caps the tests that set their own.
CAPPING_PROFILES = ("fast",)

settings.register_profile("ci", derandomize=True, deadline=None, database=None)
settings.register_profile("fast", parent=settings.get_profile("ci"), max_examples=FAST_EXAMPLES)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def profile_name(config: pytest.Config) -> str:
    # The hypothesis plugin loads --hypothesis-profile itself; this only needs the name.
    return config.getoption("hypothesis_profile", None) or os.environ.get(
        "HYPOTHESIS_PROFILE", "ci"
    )


def pytest_report_header(config: pytest.Config) -> str:
    return f"hypothesis profile: {profile_name(config)}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under a capping profile, lower explicit ``@settings(max_examples=...)`` to its cap.

    A profile only supplies defaults, and most properties here set their own
    max_examples, so without this ``fast`` would barely be faster.  The settings
    are replaced on the test function the way hypothesis's own pytest plugin
    does it (``_hypothesis_internal_use_settings``, read at call time).
    """
    name = profile_name(config)
    if name not in CAPPING_PROFILES:
        return
    cap = settings.get_profile(name).max_examples
    for item in items:
        function = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if not getattr(function, "is_hypothesis_test", False):
            continue
        current = function._hypothesis_internal_use_settings
        if current.max_examples > cap:
            function._hypothesis_internal_use_settings = settings(current, max_examples=cap)


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
