"""The escapers' stored plans: equal to what the reference makes, and all a render needs.

The C twin answers common values from each escaper's plan; the plans are stored in
``ptl_wsgi/escaping/_plans.py`` (written by ``tools/escaper_plans.py``), so that a
render of a template with URL, JS or CSS values imports none of the reference's
modules (``re``, ``html``, ``json``, the escaping engine's languages) where a
text-only render imports none either (issue #27).  A value the plan leaves to the
reference gets the reference's answer, its modules imported then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptl_wsgi import _htmltext_py
from ptl_wsgi.escaping import _plans
from ptl_wsgi.escaping.escapers import plans, plans_source

ROOT = Path(__file__).resolve().parents[2]


def test_the_stored_plans_are_the_references() -> None:
    assert _plans.PLANS == plans(_htmltext_py.escape_str), "run tools/escaper_plans.py"
    source = (ROOT / "ptl_wsgi" / "escaping" / "_plans.py").read_text()
    assert source == plans_source(_htmltext_py.escape_str), "run tools/escaper_plans.py"


def test_the_c_twins_html_escaping_makes_the_same_plans() -> None:
    from ptl_wsgi.html import implementation

    try:
        c = implementation("c").module
    except ImportError:
        pytest.skip("the C accelerator is not built")
    assert plans(c.escape_str) == _plans.PLANS


def test_the_tool_checks_and_rewrites_the_plans(tmp_path: Path) -> None:
    tool = [sys.executable, str(ROOT / "tools" / "escaper_plans.py")]
    assert subprocess.run([*tool, "--check"], capture_output=True, timeout=120).returncode == 0
    # A stale file is found, as a changed escaper would leave it.
    copy = tmp_path / "ptl_wsgi"
    subprocess.run(["cp", "-r", str(ROOT / "ptl_wsgi"), str(copy)], check=True)
    (tmp_path / "tools").mkdir()
    subprocess.run(["cp", str(ROOT / "tools" / "escaper_plans.py"), str(tmp_path / "tools")])
    stored = copy / "escaping" / "_plans.py"
    stored.write_text(stored.read_text().replace("'%20'", "' '", 1))
    stale = subprocess.run(
        [sys.executable, str(tmp_path / "tools" / "escaper_plans.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stale.returncode == 1 and "out of date" in stale.stderr
    subprocess.run(
        [sys.executable, str(tmp_path / "tools" / "escaper_plans.py")], check=True, timeout=120
    )
    assert stored.read_text() == plans_source(_htmltext_py.escape_str)


TEXT_ONLY = "def render [html] (name, n):\n    f'<p>{name} {n}</p>'\n"
# A value in a URL, a URL part, a query, an onclick argument, a script, a style, a
# comment and an unquoted attribute.
CONTEXTS = (
    "def render [html] (name, n):\n"
    '    f\'<a href="{name}">x</a><a href="/u/{name}">u</a>'
    '<a href="/tags?t={name}&amp;n={n}">t</a>\'\n'
    '    f"<button onclick=\\"go(\'{name}\', {n})\\">b</button>"\n'
    "    f'<script>var s = {name}, n = {n};</script>'\n"
    "    f'<p style=\"color: {name}\">x</p><!-- {name} --><input value={name}>'\n"
)
CHILD = """\
import json, sys
before = set(sys.modules)
from ptl_wsgi.loader import Loader

html = Loader([sys.argv[1]]).render(sys.argv[2], {"name": sys.argv[3], "n": 3})
print(json.dumps({"html": str(html), "new": sorted(set(sys.modules) - before)}))
"""


def render_twice(folder: Path, name: str, value: str, pure_python: bool = False) -> dict:
    """The second of two fresh ``-S`` processes rendering *name* (the first fills the cache)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    if pure_python:
        env["PTL_WSGI_PURE_PYTHON"] = "1"
    command = [sys.executable, "-S", "-c", CHILD, str(folder), name, value]
    for _ in range(2):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
    found: dict = json.loads(result.stdout)
    return found


# The escapers' own rooms: what compiled templates import their escapers from.
ESCAPER_ROOMS = {"ptl_wsgi.escapers", "ptl_wsgi.escaping.escapers", "ptl_wsgi.escaping._plans"}


def test_values_in_every_planned_context_import_nothing_a_text_render_does_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "text.ptl").write_text(TEXT_ONLY)
    (tmp_path / "contexts.ptl").write_text(CONTEXTS)
    text = render_twice(tmp_path, "text.ptl", "web & html")
    found = render_twice(tmp_path, "contexts.ptl", "/articles/web pages & more")
    assert found["html"].startswith(
        '<a href="/articles/web%20pages%20&amp;%20more">x</a>'
        '<a href="/u//articles/web%20pages%20&amp;%20more">u</a>'
    )
    assert "<!-- /articles/web pages &#38; more -->" in found["html"]
    extra = set(found["new"]) - set(text["new"]) - {"_ptl_templates_0.contexts"}
    assert extra == ESCAPER_ROOMS
    for heavy in ("re", "html", "json", "typing", "ptl_wsgi.escaping.url", "ptl_wsgi.escaping.js"):
        assert heavy not in found["new"]


@pytest.mark.parametrize("pure_python", [False, True], ids=["active twin", "python twin"])
def test_values_the_plans_leave_to_the_reference_get_its_answer(
    tmp_path: Path, pure_python: bool
) -> None:
    from ptl_wsgi.loader import Loader

    (tmp_path / "contexts.ptl").write_text(CONTEXTS)
    for value in ("javascript:alert(1)", " JaVa\tscript:x", "x\u2028y</script>", "-->\ufeff"):
        expected = str(Loader([str(tmp_path)]).render("contexts.ptl", {"name": value, "n": 3}))
        found = render_twice(tmp_path, "contexts.ptl", value, pure_python)
        assert found["html"] == expected, value
    assert 'href="about:invalid#ptl-unsafe-url"' in found["html"] or value == "-->\ufeff"
    # The reference's modules came when a value needed them.
    assert "ptl_wsgi.escaping.url" in found["new"] or "ptl_wsgi.escaping.markup" in found["new"]
