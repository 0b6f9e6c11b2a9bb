"""ptl_wsgi.tools.converting: what the Jinja2 and Django converters share."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
from ptl_helpers import write_files

from ptl_wsgi import compile_ptl
from ptl_wsgi.cli import main as cli_main
from ptl_wsgi.idioms import NotConvertedError
from ptl_wsgi.loader import Loader, loader_for
from ptl_wsgi.tools.converting import (
    ENGINES,
    Converted,
    Job,
    Problem,
    PTLWriter,
    TemplateFile,
    collect,
    escapes,
    ptl_name,
    string_literal,
)


@pytest.mark.parametrize(
    ("name", "converted"),
    [
        ("base.html", "base.ptl"),
        ("auth/login.htm", "auth/login.ptl"),
        ("feed.xml", "feed.ptl"),
        ("mail.txt", "mail.ptl"),
        ("page.j2", "page.ptl"),
        ("page.jinja", "page.ptl"),
        ("page.JINJA2", "page.ptl"),
        ("layout", "layout.ptl"),
        ("style.css", "style.css.ptl"),
        ("icon.svg", "icon.svg.ptl"),
    ],
)
def test_names_lose_a_template_extension_or_gain_ptl(name: str, converted: str) -> None:
    assert ptl_name(name) == converted


def test_autoescape_follows_each_engine_and_the_option() -> None:
    assert [escapes(n, "auto", "jinja2") for n in ("a.html", "a.XML", "a.svg", "a.txt", "a")] == [
        True, True, True, False, False,
    ]  # fmt: skip
    assert escapes("a.txt", "auto", "django") and escapes("a", "auto", "django")
    assert escapes("a.txt", "on", "jinja2") and not escapes("a.html", "off", "django")
    with pytest.raises(ValueError, match="autoescape is one of"):
        escapes("a.html", "yes", "jinja2")


def test_collect_maps_a_tree_and_skips_what_a_loader_skips(tmp_path: Path) -> None:
    for name in ["base.html", "auth/login.html", "partials/x.html", ".hidden", "b/.git/x",
                 "__pycache__/y", "layout", "notes.bak"]:  # fmt: skip
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_text("x")
    found = collect(str(tmp_path / "src"), str(tmp_path / "out"), ["partials/*", "*.bak"])
    assert [
        (f.name, Path(f.dest_path).relative_to(tmp_path / "out").as_posix()) for f in found
    ] == [
        ("auth/login.html", "auth/login.ptl"),
        ("base.html", "base.ptl"),
        ("layout", "layout.ptl"),
    ]
    single = collect(str(tmp_path / "src" / "base.html"), str(tmp_path / "one.ptl"))
    assert [(f.name, f.dest_path) for f in single] == [("base.html", str(tmp_path / "one.ptl"))]


def _file(name: str) -> TemplateFile:
    return TemplateFile(name, name, ptl_name(name))


@pytest.mark.parametrize(
    ("importer", "target", "statement"),
    [
        ("page.html", "base.html", "from . import base as m"),
        ("auth/login.html", "base.html", "from .. import base as m"),
        ("auth/login.html", "auth/form.html", "from . import form as m"),
        ("a/b/c.html", "a/x/y.html", "from ..x import y as m"),
        ("page.html", "macros/forms.html", "from .macros import forms as m"),
        ("page.html", "my-base.html", 'm = loader_for(__name__).module("my-base.ptl")'),
        ("a/page.html", "class.html", 'm = loader_for(__name__).module("class.ptl")'),
        ("page.html", "m.html", "from . import m"),
    ],
)
def test_imports_between_converted_templates(importer: str, target: str, statement: str) -> None:
    assert Job("jinja2").import_code(_file(importer), _file(target), "m") == statement


def test_converted_modules_import_each_other_through_a_loader(tmp_path: Path) -> None:
    files = {"my-base.html": "def x [html] ():\n    '<b>base</b>'\n", "sub/page.html": ""}
    with pytest.raises(LookupError, match="not loaded by a ptl_wsgi Loader"):
        loader_for(__name__)
    job = Job("jinja2")
    importer, target = _file("sub/page.html"), _file("my-base.html")
    for name, source in files.items():
        if name == "sub/page.html":
            source = (
                "from ptl_wsgi.loader import loader_for\n"
                + job.import_code(importer, target, "base")
                + "\ndef render [html] ():\n    base.x()\n"
            )
        path = tmp_path / ptl_name(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    assert str(Loader([str(tmp_path)]).render("sub/page.ptl")) == "<b>base</b>"


def test_string_literals_round_trip() -> None:
    for text in ['a"b', "a'b", "back\\slash", "line\nbreak\ttab", "\x00\u2028é", "{x}"]:
        for quote in "\"'":
            assert eval(string_literal(text, quote)) == text


def _module(writer: PTLWriter) -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(compile_ptl(writer.getvalue(), "w.ptl"), namespace)
    return namespace


def test_writer_merges_output_into_one_statement_per_line() -> None:
    w = PTLWriter(reserved={"name", "items"})
    w.header("converted from page.html")
    with w.block("def render [html] (name, items):"):
        w.text("<h1 class='x'>Hi ")
        w.value("name")
        w.text("!</h1>\n<p>{braces}")
        w.value("{1: 2}[1]")
        w.text("</p>\n")
        w.comment("a comment\nof two lines")
        with w.block("for item in items:"):
            w.text('<li title="')
            w.value("item")
            w.text('">\n')
        with w.block("if not items:"):
            pass
    source = w.getvalue()
    assert source == (
        "# converted from page.html\n"
        "\n"
        "def render [html] (name, items):\n"
        "    f\"<h1 class='x'>Hi {name}!</h1>\\n\"\n"
        '    f"<p>{{braces}}{ {1: 2}[1]}</p>\\n"\n'
        "    # a comment\n"
        "    # of two lines\n"
        "    for item in items:\n"
        "        f'<li title=\"{item}\">\\n'\n"
        "    if not items:\n"
        "        pass\n"
    )
    render = _module(w)["render"]
    assert str(render("<A>", ['"q"'])) == (  # type: ignore[operator]
        "<h1 class='x'>Hi &lt;A&gt;!</h1>\n<p>{braces}2</p>\n<li title=\"&quot;q&quot;\">\n"
    )


def test_values_are_shown_as_str_shows_them_in_fields_or_a_percent_format() -> None:
    w = PTLWriter()
    with w.block("def render [html] (d, n):"):
        w.text("<p>")
        w.value("d['<a href=\"x\">']")
        w.text("100%</p>\n")
        w.value("n")
        w.value("'a\\n'")
    source = w.getvalue()
    assert '    "<p>%s100%%</p>\\n" % (d[\'<a href="x">\'],)\n' in source
    assert "    \"%s%s\" % (n, 'a\\n')\n" in source
    page = _module(w)["render"]({'<a href="x">': "<"}, None)  # type: ignore[operator]
    assert str(page) == "<p>&lt;100%</p>\nNonea\n"  # None shows as None, as in Jinja2


def test_run_time_names_never_clash_with_the_templates_own() -> None:
    w = PTLWriter(reserved={"dot", "looped"})
    assert w.use("ptl_wsgi.idioms", "dot") == "dot_"
    assert w.use("ptl_wsgi.idioms", "at") == "at"
    assert w.use("ptl_wsgi.idioms", "dot") == "dot_"
    assert w.fresh("at") == "at_" and w.fresh("class") == "class_"
    w.import_line("from ptl_wsgi.loader import loader_for")
    w.import_line('base = loader_for(__name__).module("my-base.ptl")')
    w.import_line("from . import layout")
    w.import_line("import os")
    with w.block("def render [html] ():"):
        pass
    assert w.getvalue() == (
        "import os\n"
        "from ptl_wsgi.idioms import at, dot as dot_\n"
        "from ptl_wsgi.loader import loader_for\n"
        "from . import layout\n"
        'base = loader_for(__name__).module("my-base.ptl")\n'
        "\n"
        "\n"
        "def render [html] ():\n"
        "    pass\n"
    )


def test_a_todo_is_located_and_fails_at_render() -> None:
    problem = Problem("page.html", 3, "tag 'thing'", "unknown tag")
    assert str(problem) == "page.html:3: tag 'thing': unknown tag"
    w = PTLWriter()
    with w.block("def render [html] (x):"):
        w.text("<p>")
        w.todo(problem)
        w.value(w.todo(Problem("page.html", 4, "filter 'f'", "unknown filter"), statement=False))
    namespace = _module(w)
    with pytest.raises(NotConvertedError, match=r"not converted: page\.html:3: tag 'thing'"):
        namespace["render"](1)  # type: ignore[operator]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", "convert", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_says_what_is_wrong_with_its_use(tmp_path: Path) -> None:
    result = run_cli("--from-jinja2", str(tmp_path))
    assert result.returncode == 2 and "takes --output DEST" in result.stderr
    result = run_cli("--from-jinja2", str(tmp_path), "--to-py")
    assert result.returncode == 2 and "not allowed with" in result.stderr
    result = run_cli()
    assert result.returncode == 2 and "give FILE" in result.stderr


def fake_convert_file(file: TemplateFile, job: Job) -> Converted:
    """An engine that upper-cases its templates and reports lines saying TODO."""
    with open(file.source_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    w = PTLWriter()
    problems = []
    html = "html" if job.escapes(file) else "plain"
    with w.block(f"def render [{html}] ():"):
        for number, line in enumerate(lines, 1):
            if "TODO" in line:
                problems.append(Problem(file.name, number, "line", "says TODO"))
                w.todo(problems[-1])
            else:
                w.text(line.upper() + "\n")
    return Converted(w.getvalue(), problems)


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> str:
    module = types.ModuleType("fake_engine")
    module.convert_file = fake_convert_file  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_engine", module)
    monkeypatch.setitem(ENGINES, "jinja2", "fake_engine")
    monkeypatch.setitem(ENGINES, "django", "ptl_wsgi.tools.no_such_converter")
    return "jinja2"


def test_a_tree_is_converted_and_reported(
    tmp_path: Path, fake_engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = tmp_path / "src", tmp_path / "out"
    write_files(src, {"base.html": "<b>\n", "auth/mail.txt": "hi\nTODO here\n", "skip.j2": "x"})
    status = cli_main(["convert", "--from-jinja2", str(src), "--output", str(dest),
                       "--exclude", "*.j2"])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1
    assert err.splitlines() == [
        "auth/mail.txt:2: line: says TODO",
        f"converted 2 templates into {dest}; 1 not converted (TODO in the output)",
    ]
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.ptl")) == [
        "auth/mail.ptl", "base.ptl",
    ]  # fmt: skip
    loader = Loader([str(dest)])
    assert loader.render("base.ptl") == "<B>\n"  # [html]: .html escapes under auto
    with pytest.raises(NotConvertedError, match=r"auth/mail\.txt:2: line: says TODO"):
        loader.render("auth/mail.ptl")
    # One file, and --autoescape off: the .html original did not escape.
    one = str(tmp_path / "one.ptl")
    args = ["convert", "--from-jinja2", str(src / "base.html"), "-o", one, "--autoescape", "off"]
    assert cli_main(args) == 0
    assert "def render [plain] ():" in (tmp_path / "one.ptl").read_text()


def test_options_naming_nothing_are_errors(
    tmp_path: Path, fake_engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "o")
    assert cli_main(["convert", "--from-jinja2", str(tmp_path / "missing"), "-o", out]) == 2
    assert "missing: no such file or folder" in capsys.readouterr().err
    assert (
        cli_main(["convert", "--from-jinja2", str(tmp_path), "-o", out, "--filters", "no_such_mod"])
        == 2
    )
    assert "--filters no_such_mod: No module named 'no_such_mod'" in capsys.readouterr().err
    assert cli_main(["convert", "--from-django", str(tmp_path), "-o", out]) == 2
    assert "--from-django is not available yet" in capsys.readouterr().err
    assert (
        cli_main(["convert", "--from-jinja2", str(tmp_path), "-o", out, "--engine-option", "x"])
        == 2
    )
    assert "--engine-option 'x': give NAME=VALUE" in capsys.readouterr().err


def test_an_output_ptl_refuses_becomes_a_reported_todo() -> None:
    w = PTLWriter()
    with w.block("def render [html] (tag, x):"):
        w.origin = 3
        w.text("<p>")
        w.value("x")
        w.text("</p>\n")
        w.origin = 4
        w.text("<")
        w.value("tag")
        w.text(">")
    problems = w.compile_checked(_file("page.html"))
    assert [(p.file, p.line, p.construct) for p in problems] == [("page.html", 4, "output")]
    assert "no value may go here" in problems[0].reason
    namespace = _module(w)
    with pytest.raises(NotConvertedError, match=r"page\.html:4: output: PTL refuses it"):
        namespace["render"]("b", "<x>")  # type: ignore[operator]


def test_three_lines_of_text_alone_are_one_triple_quoted_literal() -> None:
    w = PTLWriter()
    with w.block("def render [html] (x):"):
        w.text('<ul>\n  <li class="a">\\</li>\n  <li>b</li>\n')
        w.value("x")
        w.text("\n<p>\n'''\"\"\"\n</p>\n")
    source = w.getvalue()
    assert '    """\\\n<ul>\n  <li class="a">\\\\</li>\n  <li>b</li>\n"""\n' in source
    assert source.count('"""') == 2  # the text holding both kinds of quotes: a line each
    page = _module(w)["render"]("<")  # type: ignore[operator]
    assert str(page) == '<ul>\n  <li class="a">\\</li>\n  <li>b</li>\n&lt;\n<p>\n\'\'\'"""\n</p>\n'
