"""``ptl-wsgi compile``, ``check`` and ``show``, run as ``python -m ptl_wsgi``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ptl_helpers import subprocess_env, write_files

from ptl_wsgi.importer import cache_path

GOOD = "def page [html] (x):\n    '<p>'\n    x\n"


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", *map(str, args)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=cwd,
    )


def test_compile_writes_every_cache(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {"a.ptl": GOOD, "pkg/b.ptl": GOOD, "pkg/c.py": "", ".hidden/d.ptl": GOOD},
    )
    result = run("compile", tmp_path)
    assert result.returncode == 0, result.stderr
    for name in ("a.ptl", "pkg/b.ptl"):
        cache = cache_path(str(tmp_path / name))
        assert cache is not None and Path(cache).is_file()
        assert f"{tmp_path / name} -> {cache}" in result.stdout
    assert not (tmp_path / ".hidden" / "__pycache__").exists()
    assert len(list((tmp_path / "pkg" / "__pycache__").iterdir())) == 1


def test_compile_quiet_and_errors(tmp_path: Path) -> None:
    write_files(tmp_path, {"ok.ptl": GOOD, "bad.ptl": "def f [html] ():\n    return 1\n"})
    result = run("compile", "-q", tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"{tmp_path / 'bad.ptl'}:2:5: 'return' with a value in a template; a template "
        "returns its output (use a bare 'return' to stop early)"
    ]
    assert Path(cache_path(str(tmp_path / "ok.ptl")) or "").is_file()


def test_compile_reports_unwritable_cache(tmp_path: Path) -> None:
    write_files(tmp_path, {"__pycache__": "a file, not a directory", "ok.ptl": GOOD})
    result = run("compile", tmp_path / "ok.ptl")
    assert result.returncode == 1
    assert result.stderr.startswith(f"{tmp_path / 'ok.ptl'}: cannot compile: ")


def test_check_reports_every_file_with_an_error(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "good.ptl": GOOD,
            "one.ptl": "def f [html] (x:\n    pass\n",
            "sub/two.ptl": "def f [html] ():\n    s = 'abc\n",
            "sub/three.ptl": "template f():\n    yield 1\n",
        },
    )
    result = run("check", "one.ptl", "sub", "good.ptl", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "one.ptl:1:14: '(' was never closed",
        "sub/three.ptl:2:5: 'yield' in a template; templates cannot be generators",
        "sub/two.ptl:2:9: unterminated string literal (detected at line 2)",
    ]
    assert not (tmp_path / "__pycache__").exists()


def test_check_success(tmp_path: Path) -> None:
    write_files(tmp_path, {"good.ptl": GOOD})
    result = run("check", tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_check_contexts_prints_each_value_and_reports_unbalanced_templates(
    tmp_path: Path,
) -> None:
    write_files(
        tmp_path,
        {
            "page.ptl": (
                "def f [html] (a, b, c):\n"
                "    '<p>%s</p>' % a\n"
                "    '<a href=\"%s\">' % b\n"
                "    '<script>var c = '\n"
                "    c\n"
                "    ';</script></a>'\n"
            ),
            "open.ptl": "def g [html] ():\n    '<style>'\n",
        },
    )
    result = run("check", "--contexts", "page.ptl", "open.ptl", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "page.ptl:2:19: text: HTML escaping",
        "page.ptl:3:23: a URL (start) in a double-quoted URL attribute value: escaper url_q",
        "page.ptl:5:5: a JavaScript expression in <script>: escaper js_value",
    ]
    assert result.stderr.splitlines() == [
        "open.ptl:1:1: template 'g' ends in CSS in <style>, not in text: close what it opens "
        "(tag, attribute, script, style or comment) before it ends, or opt out of contextual "
        "escaping with __ptl_contextual__ = False"
    ]


CONCATENATED = """\
def page [html] (url, name, code):
    link = '<a href="' + url + '">' + name + '</a>'
    link
    '<p title="' + name + '">'
    '<script>var s = ' + code + ';</script>'
    '<p>' + name + '</p>'
    '<a href="%s">%s</a>' % (url, name)
"""


def test_check_warns_where_a_template_concatenates_a_value_outside_text(tmp_path: Path) -> None:
    # '+' cannot know where its pieces land: the value gets HTML escaping, which is right
    # in text and a quoted title, wrong in an href and a script.  The template compiles.
    write_files(tmp_path, {"page.ptl": CONCATENATED})
    result = run("check", tmp_path / "page.ptl")
    assert result.returncode == 0
    warnings = result.stderr.splitlines()
    assert [w.split(": warning: ")[0] for w in warnings] == [
        f"{tmp_path / 'page.ptl'}:2:26",
        f"{tmp_path / 'page.ptl'}:5:26",
    ]
    assert "in a URL (start) in a double-quoted URL attribute value" in warnings[0]
    assert "in a JavaScript expression in <script>" in warnings[1]


def test_check_missing_file(tmp_path: Path) -> None:
    result = run("check", tmp_path / "missing.ptl")
    assert result.returncode == 1
    assert "missing.ptl: cannot read:" in result.stderr


def test_show_prints_generated_python(tmp_path: Path) -> None:
    write_files(tmp_path, {"page.ptl": GOOD})
    result = run("show", tmp_path / "page.ptl")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == [
        "def page(x):",
        "    return _ptl_html_join((_ptl_lit_0, x))",
    ]
    compile(result.stdout, "shown.py", "exec")  # it is real Python


def test_show_syntax_error(tmp_path: Path) -> None:
    write_files(tmp_path, {"bad.ptl": "def f [html] ():\n    return 1\n"})
    result = run("show", "bad.ptl", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("bad.ptl:2:5: 'return' with a value in a template")


def test_no_command_prints_help() -> None:
    result = run()
    assert result.returncode == 2
    assert "compile" in result.stdout and "check" in result.stdout and "show" in result.stdout


# -- the dev server and `render` resolve names by the loader's rule -----------------------


def _non_templates(root: Path) -> None:
    (root / "other.ptl").write_text('def shared [html] ():\n    "<shared>"\n')
    (root / "page.ptl").write_text(
        "from .other import shared\n"
        'def render [html] ():\n    "<page>"\n'
        'def _helper [html] ():\n    "<private>"\n'
        'def ordinary():\n    return "<ordinary>"\n'
    )
    (root / "jquery.min.ptl").write_text('def render [plain] ():\n    "js"\n')


def test_dev_server_serves_only_templates(tmp_path: Path) -> None:
    from werkzeug.test import Client

    from ptl_wsgi.devserver import template_app

    _non_templates(tmp_path)
    app = template_app(str(tmp_path))
    try:
        client = Client(app)
        assert client.get("/page").text == "<page>"
        assert client.get("/jquery.min").text == "js"
        for path, reason in [
            ("/page:_helper", "names starting with &#39;_&#39; are private"),
            ("/page:__class__", "names starting with &#39;_&#39; are private"),
            ("/page:ordinary", "is an ordinary function"),
            ("/page:shared", "is imported from other.ptl"),
        ]:
            response = client.get(path)
            assert response.status_code == 404, path
            assert reason in response.text, (path, response.text)
    finally:
        app.loader.close()


def test_dev_server_keeps_the_last_good_page_of_a_half_written_template(tmp_path: Path) -> None:
    import os

    from werkzeug.test import Client

    from ptl_wsgi.devserver import template_app

    page = tmp_path / "page.ptl"
    page.write_text('def render [html] ():\n    "<p>one</p>"\n')
    app = template_app(str(tmp_path))
    try:
        client = Client(app)
        assert client.get("/page").text == "<p>one</p>"
        for source, expected in [
            ('def render [html] ():\n    "<p>tw', "<p>one</p>"),  # caught half-way
            ('def render [html] ():\n    "<p>two</p>"\n', "<p>two</p>"),
        ]:
            stamp = page.stat().st_mtime_ns + 2_000_000_000
            page.write_text(source)
            os.utime(page, ns=(stamp, stamp))
            response = client.get("/page")
            assert (response.status_code, response.text) == (200, expected)
    finally:
        app.loader.close()


def test_render_command_resolves_only_templates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ptl_wsgi.cli import main

    _non_templates(tmp_path)
    page = str(tmp_path / "page.ptl")
    assert main(["render", page]) == 0
    assert capsys.readouterr().out == "<page>\n"
    assert main(["render", str(tmp_path / "jquery.min.ptl")]) == 0
    assert capsys.readouterr().out == "js\n"
    assert main(["render", f"{page}:ordinary"]) == 1
    assert "'ordinary' in page.ptl is an ordinary function" in capsys.readouterr().err
    assert main(["render", f"{page}:_helper"]) == 1
    assert "(names starting with '_' are private)" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["check", "compile"])
def test_check_and_compile_apply_the_compiler_rules(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ptl_wsgi.cli import main

    bad = tmp_path / "bad.ptl"
    bad.write_text("def f [html] (_ptl_out):\n    f'{x:{(yield)}}'\n")
    assert main([command, str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}:1:15: '_ptl_out': names starting with")
    bad.write_text("def f [html] (x):\n    f'{x:{(yield)}}'\n")
    assert main([command, str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}:2:12: 'yield' in a template")


def test_check_warns_where_a_value_is_added_to_markup_outside_text(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "page.ptl": (
                "def f [html] (url, name):\n"
                "    '<a href=\"' + url + '\">' + name + '</a>'\n"
                "    '<b title=\"' + name + '\">x</b>'\n"
                "    link = '<script>var u = ' + url + ';</script>'\n"
                "    link\n"
                "    '<a href=\"'\n"
                "    '/u/' + name\n"
                "    '\">x</a>'\n"
                "    n = len(name) + 1\n"
            ),
        },
    )
    result = run("check", "page.ptl", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    hint = "write the markup and the value as one f-string or '%' format"
    assert result.stderr.splitlines() == [
        "page.ptl:2:19: warning: a value added with '+' to markup lands in a URL (start) in a "
        "double-quoted URL attribute value, where it is only HTML-escaped (its escaper would "
        f"be url_q); {hint}",
        "page.ptl:4:33: warning: a value added with '+' to markup lands in a JavaScript "
        "expression in <script>, where it is only HTML-escaped (its escaper would be "
        f"js_value); {hint}",
        "page.ptl:7:13: warning: a value added with '+' to markup lands in a URL (path) in a "
        "double-quoted URL attribute value, where it is only HTML-escaped (its escaper would "
        f"be url_path_q); {hint}",
    ]


def test_check_follows_markup_accumulated_with_plus_equals(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "page.ptl": (
                "from ptl_wsgi.html import TemplateIO\n"
                "def f [html] (url, name):\n"
                "    s = '<a href=\"'\n"
                "    s += url\n"
                "    s += '\">x</a>'\n"
                "    s\n"
                "    r = TemplateIO(html=True)\n"
                "    r += '<b title=\"'\n"
                "    r += name\n"
                "    r += '\" onclick=\"go(' + name\n"
                "    r += ')\">x</b>'\n"
                "    r.getvalue()\n"
            ),
        },
    )
    result = run("check", "page.ptl", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert [line.split(" where it is")[0] for line in result.stderr.splitlines()] == [
        "page.ptl:4:10: warning: a value added with '+=' to markup lands in a URL (start) in "
        "a double-quoted URL attribute value,",
        "page.ptl:10:29: warning: a value added with '+=' to markup lands in a JavaScript "
        "expression in a double-quoted event handler attribute value,",
    ]
