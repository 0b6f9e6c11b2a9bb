"""``ptl-wsgi render``, ``serve`` and ``convert``, run as ``python -m ptl_wsgi``; the hook file."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from ptl_helpers import REPO, subprocess_env, write_files

from ptl_wsgi.cli import build_parser
from ptl_wsgi.compiler import compile_ptl
from ptl_wsgi.tools.from_quixote import _H_OUTSIDE, convert_source


def run(*args: str | Path, cwd: Path | None = None, stdin: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", *map(str, args)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=cwd,
        input=stdin,
        timeout=60,
    )


TEMPLATES = {
    "layout.ptl": """\
        def page [html] (title, body):
            "<title>%s</title>" % title
            body
        """,
    "blog/post.ptl": """\
        from ..layout import page
        from .parts import byline

        def render [html] (title, author="anon"):
            page(title, byline(author))

        def fails [html] ():
            "<p>"
            {}["missing"]
        """,
    "blog/parts.ptl": """\
        def byline [html] (author):
            "<p>by %s</p>" % author
        """,
}


# -- --help ------------------------------------------------------------------------------


def test_every_subcommand_has_help() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"compile", "check", "show", "render", "serve", "convert"} <= set(commands)
    for name in commands:
        result = run(name, "--help")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: ptl-wsgi {name}")


# -- render ----------------------------------------------------------------------------


def test_render_with_json_arguments(tmp_path: Path) -> None:
    write_files(tmp_path, TEMPLATES)
    args = json.dumps({"title": "<T>", "author": "A & B", "unused": 1})
    result = run("render", tmp_path / "blog/post.ptl", "--root", tmp_path, "--json", args)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "<title>&lt;T&gt;</title><p>by A &amp; B</p>\n"


def test_render_function_json_file_and_stdin(tmp_path: Path) -> None:
    write_files(tmp_path, TEMPLATES)
    (tmp_path / "args.json").write_text('{"author": "<i>"}')
    parts = tmp_path / "blog/parts.ptl"
    result = run("render", f"{parts}:byline", "--json-file", tmp_path / "args.json")
    assert result.stdout == "<p>by &lt;i&gt;</p>\n"
    result = run("render", f"{parts}:byline", "--json-file", "-", stdin='{"author": "x"}')
    assert result.stdout == "<p>by x</p>\n"


@pytest.mark.parametrize(
    ("target", "extra", "expected"),
    [
        ("blog/post.ptl", [], "blog/post.ptl:4:1: template 'blog/post.ptl:render' needs 'title'"),
        ("blog/post.ptl:fails", [], "blog/post.ptl:9:5: KeyError: "),
        ("blog/post.ptl:nope", [], "blog/post.ptl:1:1: "),
        ("bad.ptl", [], "bad.ptl:1:16: expected ':'"),
        ("blog/post.ptl", ["--json", "[1]"], "blog/post.ptl:1:1: the JSON arguments must be"),
    ],
)
def test_render_errors_are_located(
    tmp_path: Path, target: str, extra: list[str], expected: str
) -> None:
    if sys.version_info < (3, 11):  # before 3.11, tracebacks carry no column
        expected = expected.replace(":9:5:", ":9:1:")
    write_files(tmp_path, {**TEMPLATES, "bad.ptl": "def f [html] ()\n    x\n"})
    result = run("render", target, "--root", ".", *extra, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    file, rest = result.stderr.splitlines()[0].split(":", 1)
    location = (tmp_path / file).resolve().relative_to(tmp_path.resolve()).as_posix()
    assert f"{location}:{rest}".startswith(expected)


# -- serve -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _serving(*args: str | Path, cwd: Path):
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ptl_wsgi", "serve", *map(str, args), "--port", str(port)],
        cwd=cwd,
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the reloader's child joins this group: stop both
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.1)
    _stop(process)
    raise AssertionError(f"the server did not start: {process.stderr.read().decode()}")


def _stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:  # it has exited already
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    process.stderr.close()


@pytest.mark.slow
def test_serve_a_template_directory_with_reload(tmp_path: Path) -> None:
    write_files(tmp_path, TEMPLATES)
    process, base = _serving(tmp_path, cwd=tmp_path)
    try:
        status, index = _get(base + "/")
        assert status == 200
        assert '<a href="/blog/post">blog/post.ptl</a>' in index
        assert _get(base + "/blog/post?title=%3Cb%3E") == (
            200,
            "<title>&lt;b&gt;</title><p>by anon</p>",
        )
        assert _get(base + "/blog/parts:byline?author=me") == (200, "<p>by me</p>")
        assert _get(base + "/blog/post")[0] == 400  # a required argument is missing
        assert _get(base + "/nowhere")[0] == 404
        assert _get(base + "/../etc/passwd")[0] == 404
        # An edit to an imported module shows at the next request.
        path = tmp_path / "blog/parts.ptl"
        path.write_text(path.read_text().replace("by %s", "written by %s"))
        os.utime(path, ns=(time.time_ns() + 10**9,) * 2)
        assert _get(base + "/blog/post?title=t")[1] == "<title>t</title><p>written by anon</p>"
    finally:
        _stop(process)


@pytest.mark.slow
def test_serve_a_publisher(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "pages.ptl": """\
                from ptl_wsgi.publish import Directory

                class Root(Directory):
                    _q_exports = ["", "hello"]

                    def _q_index [html] (self):
                        "<h1>Home</h1>"

                    def hello [html] (self):
                        "<p>Hello</p>"
                """
        },
    )
    process, base = _serving(tmp_path, "--publisher", "pages:Root", cwd=tmp_path)
    try:
        assert _get(base + "/") == (200, "<h1>Home</h1>")
        assert _get(base + "/hello") == (200, "<p>Hello</p>")
        assert _get(base + "/other")[0] == 404
    finally:
        _stop(process)


def test_serve_refuses_bad_arguments(tmp_path: Path) -> None:
    assert "not a directory" in run("serve", tmp_path / "none").stderr
    result = run("serve", tmp_path, "--publisher", "nomodule:Root")
    assert result.returncode == 1
    assert "nomodule" in result.stderr


# -- convert -----------------------------------------------------------------------------

# A realistic Quixote 3.8 module: h-strings, a plain template, TemplateIO, a docstring.
QUIXOTE = '''\
"""Listing pages."""
from quixote.ptl import ptl_html, ptl_plain
from quixote.html import htmltext, TemplateIO  # the names we use

SEP = ", "


@ptl_html
def item(name, price=0):
    F'<li class="item">{name}: {price:.2f}</li>'


@ptl_html
def listing(title, items):
    # The heading is escaped by Quixote; the h-strings are markup.
    F"<h1>{title}</h1>"
    F"""<ul>"""
    for name, price in items:
        item(name, price)
    F'</ul>'
    if title == "x":
        F"<p>x</p>"
    F'{{literal braces}}'


@ptl_plain
def subject(title, count):
    "%s (%d items)" % (title, count)


def summary(items):
    out = TemplateIO(html=True)
    out += htmltext("<p>")
    out += SEP.join(name for name, _ in items)
    out += htmltext("</p>")
    return out.getvalue()
'''


def _quixote_module(source: str) -> dict:
    from quixote.ptl.ptl_compile import compile_template

    namespace: dict = {"__name__": "quixote_original"}
    exec(compile_template(io.BytesIO(source.encode()), "original.ptl"), namespace)
    return namespace


def _our_module(source: str) -> dict:
    namespace: dict = {"__name__": "converted"}
    exec(compile_ptl(source, "converted.ptl"), namespace)
    return namespace


def test_convert_output() -> None:
    result = convert_source(QUIXOTE, "list.ptl")
    assert result.changed and result.warnings == []
    assert "def item [html] (name, price=0):" in result.source
    assert "def subject [plain] (title, count):" in result.source
    assert "from ptl_wsgi import htmltext, TemplateIO  # the names we use" in result.source
    assert "quixote" not in result.source and "@ptl" not in result.source
    assert "    f'<li class=\"item\">{name}: {price:.2f}</li>'" in result.source
    assert '    f"<h1>{title}</h1>"\n    """<ul>"""\n' in result.source
    assert "    '</ul>'\n" in result.source
    assert "    f'{{literal braces}}'\n" in result.source
    assert "    # The heading is escaped by Quixote; the h-strings are markup.\n" in result.source
    # Layout is kept: the same lines, less the two decorators and the quixote.ptl import.
    assert len(result.source.splitlines()) == len(QUIXOTE.splitlines()) - 4


@pytest.mark.parametrize(
    ("function", "args"),
    [
        ("item", ("<Tea & Co>", 2.5)),
        ("listing", ("Bob's <list>".replace("'", ""), [("a<b", 1), ("c&d", 2.25)])),
        ("listing", ("x", [])),
        ("subject", ("<T>", 3)),
        ("summary", ([("<a>", 1), ("b", 2)],)),
    ],
)
def test_converted_templates_render_as_quixote_does(function: str, args: tuple) -> None:
    theirs = _quixote_module(QUIXOTE)[function](*args)
    ours = _our_module(convert_source(QUIXOTE).source)[function](*args)
    assert str(ours) == str(theirs)
    assert type(ours).__name__ == type(theirs).__name__  # htmltext or str in both


def test_convert_warns_where_meaning_changes() -> None:
    source = (
        "from quixote.ptl import ptl_html\n"
        "from quixote.html import href, htmlescape\n"
        "import quixote.html\n"
        "BOLD = F'<b>bold</b>'\n"
        "\n"
        "@ptl_html\n"
        "def page(x, kind='<p>'):\n"
        "    '<h1>Title & more</h1>'\n"  # escaped by Quixote, trusted here
        "    'plain words'\n"  # a statement without markup: nothing changes
        "    d = {'k': 1}\n"
        "    d['k']\n"  # a subscript: nothing changes
        "    '?q=%s' % x\n"  # an operand: now escaped before use
        "    return x\n"
    )
    result = convert_source(source, "page.ptl")
    found = [(p.line, p.message.split(":")[0]) for p in result.warnings]
    assert found == [
        (2, "not converted"),
        (3, "not converted"),
        (4, "not converted"),
        (7, "changes meaning"),
        (8, "changes meaning"),
        (10, "changes meaning"),
        (12, "changes meaning"),
        (13, "not converted"),
    ]
    assert "from ptl_wsgi import htmlescape\nfrom quixote.html import href\n" in result.source
    assert "def page [html] (x, kind='<p>'):" in result.source


def test_convert_warns_about_h_strings_outside_html_templates() -> None:
    source = "@ptl_plain\ndef f(x):\n    F'<{x}>'\n    (lambda: F'<i>')\n"
    result = convert_source(source)
    assert [p.line for p in result.warnings] == [3, 4]
    assert "F'<{x}>'" in result.source and "def f [plain] (x):" in result.source


def test_convert_command_modes(tmp_path: Path) -> None:
    path = tmp_path / "list.ptl"
    path.write_text(QUIXOTE, newline="")
    result = run("convert", path)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == convert_source(QUIXOTE).source
    assert path.read_text() == QUIXOTE
    assert run("convert", "--check", path).returncode == 1
    result = run("convert", "--write", path)
    assert result.returncode == 0, result.stderr
    assert run("convert", "--check", path).returncode == 0
    assert run("check", path).returncode == 0  # our compiler accepts the result
    bad = tmp_path / "bad.ptl"
    bad.write_text("def f(:\n")
    result = run("convert", bad)
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}:1:")


def test_convert_reports_warnings_with_locations(tmp_path: Path) -> None:
    path = tmp_path / "p.ptl"
    path.write_text("@ptl_html\ndef f():\n    '<br>'\n")
    result = run("convert", path)
    assert result.returncode == 0
    assert result.stderr.startswith(f"{path}:3:5: warning: changes meaning:")


# -- pre-commit ----------------------------------------------------------------------------


def test_pre_commit_hook_definitions() -> None:
    text = (REPO / ".pre-commit-hooks.yaml").read_text()
    hooks = [
        dict(line.strip(" -").split(": ", 1) for line in hook.splitlines() if ": " in line)
        for hook in text.split("\n- ")[1:]
    ]
    assert [hook["id"] for hook in hooks] == ["ptl-wsgi-check", "ptl-wsgi-lint", "ptl-wsgi-stubs"]
    check, lint, stubs = hooks
    assert (check["entry"], lint["entry"]) == ("ptl-wsgi check", "ptl-wsgi lint")
    assert stubs["entry"] == "ptl-wsgi stubs --check"
    assert lint["additional_dependencies"] == "[ruff]"
    for hook in hooks:
        assert hook["language"] == "python"
        assert hook["files"] == r"\.ptl$"


# -- convert: literals judged by value, bare returns reported --------------------------------

ESCAPED_MARKUP = [
    r"'\x3cscript\x3e\x3c/script\x3e'",  # closed: a template must end in text
    r"'\N{LESS-THAN SIGN}i\N{GREATER-THAN SIGN}'",
    r"'\74i\76'",
    r"'\u003cb\u003e'",
    r"'\U0000003cb\U0000003e'",
    r"'\x26amp;'",
    r"'\x22'",
    "'''\\\n<b>'''",  # a line continuation inside a triple-quoted string
]


@pytest.mark.parametrize("literal", ESCAPED_MARKUP)
def test_convert_judges_literals_by_value_not_spelling(literal: str) -> None:
    source = f"@ptl_html\ndef f():\n    {literal}\n"
    result = convert_source(source, "p.ptl")
    assert [(p.line, p.message.split(":")[0]) for p in result.warnings] == [(3, "changes meaning")]
    # And the warning is right: Quixote escapes what ptl_wsgi now trusts.
    theirs = _quixote_module("from quixote.ptl import ptl_html\n" + source)["f"]()
    ours = _our_module(result.source)["f"]()
    assert str(ours) != str(theirs)


@pytest.mark.parametrize(
    "literal", [r"'\x41bc'", r"'\N{LATIN SMALL LETTER E WITH ACUTE}'", "'a\\\nb'"]
)
def test_convert_stays_quiet_about_escapes_of_harmless_text(literal: str) -> None:
    result = convert_source(f"@ptl_html\ndef f():\n    {literal}\n")
    assert result.warnings == []


def test_convert_reports_each_bare_return_in_a_template() -> None:
    source = (
        "@ptl_html\n"
        "def f(x):\n"
        "    F'<a>'\n"
        "    if x:\n"
        "        return\n"
        "    def helper():\n"
        "        return\n"  # not a template: nothing changes
        "    F'<b>'\n"
        "    return\n"
        "@ptl_plain\n"
        "def g():\n"
        "    return  # even last\n"
    )
    result = convert_source(source, "r.ptl")
    returns = [p for p in result.warnings if "return" in p.message]
    assert [(p.line, p.col) for p in returns] == [(5, 9), (9, 5), (12, 5)]
    assert all(p.message.startswith("changes meaning: a bare 'return'") for p in returns)
    assert "None" in returns[0].message
    # Reported, not rewritten: no [html] template can return None.
    assert "        return\n" in result.source
    theirs = _quixote_module("from quixote.ptl import ptl_html, ptl_plain\n" + source)["f"](1)
    ours = _our_module(result.source)["f"](1)
    assert theirs is None and str(ours) == "<a>"


def test_convert_command_reports_bare_returns_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "r.ptl"
    path.write_text("@ptl_html\ndef f(x):\n    if x:\n        return\n    F'<b>'\n")
    result = run("convert", path)
    assert result.returncode == 0
    assert f"{path}:4:9: warning: changes meaning: a bare 'return'" in result.stderr


def test_convert_scopes_class_decorators_as_the_compiler_does() -> None:
    """A class's decorators and bases are ordinary code to the compiler: literals stay str.

    The converter once judged them in the template's scope: it warned about a
    literal whose meaning does not change and turned an h-string into a literal
    that compiles to a str, silently escaping what Quixote trusted.
    """
    source = (
        "from quixote.ptl import ptl_html\n"
        "def tag(text):\n"
        "    def mark(cls):\n"
        "        cls.text = text\n"
        "        return cls\n"
        "    return mark\n"
        "@ptl_html\n"
        "def f():\n"
        "    @tag('<b>')\n"  # a str in Quixote and here alike: no warning
        "    class C(dict, **{'metaclass': type}):\n"
        "        pass\n"
        "    C.text\n"
        "    @tag(F'<i>')\n"  # htmltext in Quixote, a str here: reported, not rewritten
        "    class D:\n"
        "        pass\n"
        "    D.text\n"
    )
    result = convert_source(source, "c.ptl")
    assert [(p.line, p.col, p.message) for p in result.warnings] == [(13, 10, _H_OUTSIDE)]
    assert "@tag(F'<i>')" in result.source
    ours = _our_module(result.source.replace("@tag(F'<i>')", "@tag('<i>')"))
    assert str(ours["f"]()) == "&lt;b&gt;&lt;i&gt;"
    assert str(_quixote_module(source)["f"]()) == "&lt;b&gt;<i>"


def test_convert_counts_lines_as_python_does() -> None:
    """A form feed (a page break in old sources) is no line break: edits stay in place."""
    source = "from quixote.ptl import ptl_html\n\x0c\n@ptl_html\ndef f(x):\n    F'<b>{x}</b>'\n"
    result = convert_source(source, "p.ptl")
    assert result.warnings == []
    assert result.source == "\x0c\ndef f [html] (x):\n    f'<b>{x}</b>'\n"
