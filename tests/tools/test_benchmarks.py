"""The benchmark scripts run, with tiny counts: they must work, not be fast.

No timing is asserted: a target may be missed on a loaded machine, and the
scripts then exit 1, which is their job.  What must hold is that each one runs
to its verdict, states it, and that its exit status agrees with it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_run_script() -> ModuleType:
    # By path, not through sys.path: benchmarks/ holds modules named like common ones.
    spec = importlib.util.spec_from_file_location("_bench_run", ROOT / "benchmarks" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_run = _load_run_script()

VERDICT = re.compile(r"\*\*(met|NOT met)\*\*")


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def assert_verdicts_agree(result: subprocess.CompletedProcess[str], count: int) -> None:
    assert result.returncode in (0, 1), result.stderr
    verdicts = VERDICT.findall(result.stdout)
    assert len(verdicts) == count, result.stdout
    assert result.returncode == (1 if "NOT met" in verdicts else 0), result.stdout


@pytest.mark.slow
def test_startup_script_runs() -> None:
    result = run_script("benchmarks/startup.py", "--runs", "1")
    assert_verdicts_agree(result, 2)
    for row in ("ptl_wsgi (Loader), bare venv", "Jinja2", "Quixote 3.8 PTL", "hello.cgi"):
        assert f"| {row}" in result.stdout
    # The cached render imports none of the heavy modules, in either venv.
    assert re.search(r"\| ptl_wsgi \(Loader\) \|[^\n]*\| - \|", result.stdout), result.stdout


@pytest.mark.slow
def test_styles_script_runs() -> None:
    result = run_script("benchmarks/styles.py", "--quick", "--rounds", "1")
    assert_verdicts_agree(result, 4)  # two targets for each of bigtable and page
    for style in ("stmt", "f", "pct", "format", "Jinja2"):
        assert f"| bigtable | {style} |" in result.stdout and f"| page | {style} |" in result.stdout


@pytest.mark.slow
def test_end_to_end_script_runs() -> None:
    result = run_script("benchmarks/end_to_end.py", "--rounds", "1", "--seconds", "0.005")
    # Flask and Quart against Jinja2; Django against DTL and its Jinja2 backend: two
    # targets each (Quart's candidates need Python 3.11+).
    assert_verdicts_agree(result, 8 if sys.version_info >= (3, 11) else 6)
    for line in (
        "| template part | PTL |",
        "| whole request | DTL |",
        "| whole request | Jinja2 |",
    ):
        assert line in result.stdout


@pytest.mark.slow
def test_asgi_pages_script_runs() -> None:
    result = run_script("benchmarks/asgi_pages.py", "--rounds", "1", "--seconds", "0.005")
    assert_verdicts_agree(result, 3)  # template part, whole request, under the middleware
    for line in ("| template part | Jinja2 |", "| whole request | PTL, CSP(Middleware(app)) |"):
        assert line in result.stdout


@pytest.mark.slow
def test_serve_pages_script_runs_and_stops_its_servers() -> None:
    result = run_script("benchmarks/serve_pages.py", "--requests", "20", "--rounds", "1")
    assert_verdicts_agree(result, 2)
    assert "| DTL |" in result.stdout and "| Jinja2 |" in result.stdout
    # Stopped: no gunicorn of this script is left serving its app.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "end_to_end:served(" not in ps


def test_run_collects_every_stated_target() -> None:
    output = (
        "| table |\n"
        "- flask: template part <= 0.2x Jinja2: **met** (0.113x)\n"
        "Target: ptl_wsgi at most 8 ms (wall) over `python -c pass`: **NOT met** (at worst 9 ms).\n"
        "- At least 2x markupsafe on short strings: **not met** (at least 1.5x).\n"
    )
    rows = bench_run.targets_in("X", output, 1)
    assert rows == [
        ("X", "flask: template part <= 0.2x Jinja2", True, "(0.113x)"),
        ("X", "ptl_wsgi at most 8 ms (wall) over `python -c pass`", False, "(at worst 9 ms)."),
        ("X", "At least 2x markupsafe on short strings", False, "(at least 1.5x)."),
    ]
    # A script that fails without naming a target is a missed target of its own.
    crashed = bench_run.targets_in("Y", "- a: **met** (1)\nTraceback ...\n", 2)
    assert crashed[-1] == ("Y", "runs to the end (exit status 0)", False, "exit status 2")
    assert bench_run.targets_in("Z", "- a: **met** (1)\n", 0) == [("Z", "a", True, "(1)")]
    table = bench_run.summary(rows)
    assert table[3] == (
        "| X | ptl_wsgi at most 8 ms (wall) over `python -c pass` | **MISSED** | (at worst 9 ms). |"
    )


@pytest.mark.slow
def test_converted_script_runs() -> None:
    result = run_script("benchmarks/converted.py", "--rounds", "1", "--seconds", "0.005")
    if sys.version_info < (3, 14):
        assert result.returncode == 1 and "Python 3.14+" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    for style in ("stmt", "f", "pct", "format"):
        assert f"| bigtable | {style} |" in result.stdout and f"| page | {style} |" in result.stdout


def _load_benchmark(name: str) -> ModuleType:
    """A script of benchmarks/ as a module (its folder first on sys.path, as when run)."""
    folder = str(ROOT / "benchmarks")
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", f"{folder}/{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def test_pages_peers_render_the_same_page_and_ptl_escapes_for_each_context() -> None:
    pages = _load_benchmark("pages")
    engines = {name: factory() for name, factory in pages.ENGINES.items()}
    pages.check(engines)  # raises SystemExit on a difference
    links, page = (str(engines["ptl_wsgi"][s]()) for s in pages.SCENARIOS)
    # The values are str URLs that need encoding: none takes the int shortcut.
    assert links.count('href="/tags?t=') == 300 and links.count("<a href=") == 500
    assert 'href="/articles/1/web%20pages%20&amp;%20more"' in links
    assert 'href="/tags?t=web%20%26%20html&amp;ref=post"' in links
    assert "onclick=\"edit('post-1\\x27s',  1 )\"" in page
    assert "\\u003c/script\\u003e" in page and "srcset=" in page


def test_pages_check_refuses_a_peer_whose_page_differs() -> None:
    pages = _load_benchmark("pages")
    engines = {"ptl_wsgi": pages.ptl_engine(), "Jinja2": pages.jinja_engine()}
    engines["Jinja2"] = {
        scenario: (lambda render=render: str(render()).replace("ref=post", "ref=pots"))
        for scenario, render in engines["Jinja2"].items()
    }
    with pytest.raises(SystemExit, match="Jinja2 renders links differently"):
        pages.check(engines)


def test_blog_pages_are_equal_and_logged_in_has_an_edit_link_per_post(tmp_path: Path) -> None:
    blog = _load_benchmark("blog")
    blog.make_database(tmp_path / "blog.sqlite")
    calls = blog.requests(blog.create_app(tmp_path / "blog.sqlite"))
    blog.check(calls)  # PTL and Jinja2 serve the same page, logged in and out
    logged_in = calls["PTL, logged in"]().decode()
    assert logged_in.count('<a class="action" href="/') == blog.POSTS + 1  # Edit links and New
    assert "Post 0: &lt;templates&gt; &amp; speed" in logged_in
    assert "/update" not in calls["PTL, logged out"]().decode()


@pytest.mark.slow
def test_pages_and_blog_scripts_state_their_target() -> None:
    for script in ("benchmarks/pages.py", "benchmarks/blog.py"):
        result = run_script(script, "--rounds", "1", "--seconds", "0.005")
        assert_verdicts_agree(result, 1)
    result = run_script("benchmarks/contexts.py", "--rounds", "1", "--seconds", "0.001")
    assert_verdicts_agree(result, 1)
    assert "| srcset |" in result.stdout


@pytest.mark.slow
def test_from_django_script_runs() -> None:
    result = run_script("benchmarks/from_django.py", "--rounds", "1", "--seconds", "0.005")
    assert result.returncode == 0, result.stderr
    assert "| 10 |" in result.stdout and "| 100 |" in result.stdout


@pytest.mark.slow
def test_from_jinja2_script_runs() -> None:
    result = run_script("benchmarks/from_jinja2.py", "--rounds", "1", "--seconds", "0.005")
    assert result.returncode == 0, result.stderr
    assert "| 10 |" in result.stdout and "| 100 |" in result.stdout


@pytest.mark.parametrize("framework", ["flask", "quart"])
@pytest.mark.parametrize("mode", ["bare", "ptl", "csp"])
def test_glue_request_rows_answer_a_whole_request(framework: str, mode: str) -> None:
    # What callgrind counts in benchmarks/glue_request.py, run without it: the child asserts
    # that each app answers 200 "hello" before it counts.
    spec = importlib.util.spec_from_file_location("_glue", ROOT / "benchmarks" / "glue_request.py")
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    result = run_script("-c", module.CHILD, str(ROOT), framework, mode, "3")
    assert result.returncode == 0, result.stderr
