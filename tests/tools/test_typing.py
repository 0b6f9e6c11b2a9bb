"""Types: the stubs match the run time, users' checkers see precise types, and
``ptl-wsgi stubs`` / ``ptl-wsgi typecheck`` work as users run them (the real mypy
and pyright, in subprocesses, on a fixture project)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from accelerator import without_c
from ptl_helpers import REPO, subprocess_env, write_files

pytest.importorskip("mypy")

from ptl_wsgi.html import implementation
from ptl_wsgi.tools.typecheck import stub_source


def revealed_by_mypy(output: str) -> list[str]:
    # Older mypys spell builtins "builtins.str".
    return [t.replace("builtins.", "") for t in re.findall(r'Revealed type is "(.*)"', output)]


def run(*args: str, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=subprocess_env(**env),
        timeout=300,
    )


def has_pyright() -> bool:
    """pyright's PyPI package, and node for it to run on (without node it would download one)."""
    return importlib.util.find_spec("pyright") is not None and shutil.which("node") is not None


needs_pyright = pytest.mark.skipif(not has_pyright(), reason="pyright or node is not installed")


# -- the stubs are the run time ---------------------------------------------------------


@pytest.mark.parametrize("twin", ["c", "python"])
def test_stubtest(twin: str) -> None:
    """mypy.stubtest finds no difference between the stubs and either twin."""
    modules = ["ptl_wsgi.html"]
    # Not pyproject's [tool.mypy]: its python_version would judge the stub's version
    # checks for 3.10 against this Python's run time.  typings/ has what typeshed lacks.
    extra = {"PTL_WSGI_PURE_PYTHON": "1" if twin == "python" else "", "MYPYPATH": "typings"}
    if twin == "c":
        try:
            implementation("c")
        except ImportError as exc:
            without_c(f"the C accelerator is not built ({exc})")
        modules.append("ptl_wsgi._htmltext_c")
    result = run("-m", "mypy.stubtest", *modules, **extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Success: no issues found in {len(modules)} module" in result.stdout


def test_wrapped_methods_show_str_signatures() -> None:
    """htmltext's str-derived methods report str's signatures (what stubtest reads)."""
    import inspect

    from ptl_wsgi.html import htmltext

    assert inspect.signature(htmltext.center) == inspect.signature(str.center)
    assert inspect.signature(htmltext.split) == inspect.signature(str.split)


# -- what users' checkers see -------------------------------------------------------------

USER_CODE = """\
    from ptl_wsgi.html import TemplateIO, href, html_join, htmlescape, htmltext
    from ptl_wsgi.loader import Loader

    h = htmltext("<b>")
    reveal_type(h)
    reveal_type(h + "<i>")
    reveal_type("<i>" + h)
    reveal_type(h % ("x",))
    reveal_type(h.format(1))
    reveal_type(h.join(["a", 1]))
    reveal_type(h.split())
    reveal_type(h.upper())
    reveal_type(htmlescape(3))
    reveal_type(html_join(["a"]))
    reveal_type(TemplateIO(html=True).getvalue())
    reveal_type(TemplateIO().getvalue())
    reveal_type(href("/", "home"))
    reveal_type(Loader(["."]).render("page.ptl"))
    h + 1
    """

MYPY_REVEALED = [
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "list[ptl_wsgi.html.htmltext]",
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "ptl_wsgi.html.htmltext",
    "str",
    "ptl_wsgi.html.htmltext",
    "str | typing.Iterator[Any]",
]


def _user_project(tmp_path: Path, files: dict[str, str]) -> Path:
    # The checkers find this checkout (an editable install is an import hook they cannot
    # follow) and report nothing inside it: it has its own checks.
    config = f"""\
        [tool.mypy]
        mypy_path = ["{REPO}", "{REPO / "typings"}"]
        strict = true

        [[tool.mypy.overrides]]
        module = ["ptl_wsgi.*"]
        follow_imports = "silent"

        [tool.pyright]
        extraPaths = ["{REPO}"]
        """
    write_files(tmp_path, {"pyproject.toml": config, **files})
    return tmp_path


def test_mypy_sees_precise_types(tmp_path: Path) -> None:
    root = _user_project(tmp_path, {"user.py": USER_CODE})
    result = run("-m", "mypy", "--cache-dir", str(tmp_path / ".cache"), "user.py", cwd=root)
    assert revealed_by_mypy(result.stdout) == MYPY_REVEALED, result.stdout
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert errors == [
        'user.py:19: error: Unsupported operand types for + ("htmltext" and "int")  [operator]'
    ], result.stdout


@needs_pyright
def test_pyright_sees_precise_types(tmp_path: Path) -> None:
    root = _user_project(tmp_path, {"user.py": USER_CODE})
    result = run("-m", "pyright", "--outputjson", "user.py", cwd=root)
    report = json.loads(result.stdout)
    diagnostics = report["generalDiagnostics"]
    revealed = [
        re.sub(r'^Type of ".*" is ', "", d["message"])
        for d in diagnostics
        if d["severity"] == "information"
    ]
    # "<i>" + h: pyright takes str's __add__ (mypy, rightly, htmltext's __radd__).
    assert revealed == [
        '"htmltext"',
        '"htmltext"',
        '"str"',
        '"htmltext"',
        '"htmltext"',
        '"htmltext"',
        '"list[htmltext]"',
        '"htmltext"',
        '"htmltext"',
        '"htmltext"',
        '"htmltext"',
        '"str"',
        '"htmltext"',
        '"str | Iterator[Any]"',
    ]
    errors = [
        (d["range"]["start"]["line"] + 1, d["rule"])
        for d in diagnostics
        if d["severity"] == "error"
    ]
    assert errors == [(19, "reportOperatorIssue")]


# -- ptl-wsgi stubs and ptl-wsgi typecheck ----------------------------------------------------

PROJECT = {
    "webapp/__init__.py": "",
    "webapp/helpers.py": """\
        def shout(text: str) -> str:
            return text.upper()
        """,
    "webapp/layout.ptl": """\
        def page [html] (title: str, body: object):
            "<title>%s</title>" % title
            body
        """,
    "webapp/pages.ptl": """\
        from .helpers import shout
        from .layout import page

        def item [plain] (n: int):
            str(n)

        def post [html] (name: str, count: int):
            page(name, item(count))
            count.upper()
            if count < 0:
                return
            "é" ; shout(count)
            item(name)
            page(1, "body").upper()

        def one_line [html] (x: int): "<b>"; x + "é"

        class Widgets:
            def render [html] (self, label: str):
                label
                self.missing
        """,
    "app.py": """\
        from webapp import pages
        from webapp.pages import Widgets, item, post

        reveal_type(post("a", 1))
        reveal_type(item(1))
        reveal_type(Widgets().render("x"))
        post(1, "a")
        pages.nothing
        """,
}

# (line, column) and the checker's code: the same places for both checkers where they
# agree on where an expression starts.
MYPY_FINDINGS = [
    'webapp/pages.ptl:9:5: error: "int" has no attribute "upper"  [attr-defined]',
    'webapp/pages.ptl:12:17: error: Argument 1 to "shout" has incompatible type "int"; '
    'expected "str"  [arg-type]',
    'webapp/pages.ptl:13:10: error: Argument 1 to "item" has incompatible type "str"; '
    'expected "int"  [arg-type]',
    'webapp/pages.ptl:14:10: error: Argument 1 to "page" has incompatible type "int"; '
    'expected "str"  [arg-type]',
    'webapp/pages.ptl:16:42: error: Unsupported operand types for + ("int" and "str")  [operator]',
    'webapp/pages.ptl:21:9: error: "Widgets" has no attribute "missing"  [attr-defined]',
]


def typecheck(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run("-m", "ptl_wsgi", "typecheck", *args, cwd=root)


@pytest.mark.slow  # a checker run end to end per test: make test, not test-fast
def test_typecheck_mypy(tmp_path: Path) -> None:
    root = _user_project(tmp_path, PROJECT)
    result = typecheck(root, "--checker", "mypy", "webapp")
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == MYPY_FINDINGS
    assert result.stderr == "Found 6 errors.\n"


@pytest.mark.slow  # a checker run end to end per test: make test, not test-fast
@needs_pyright
def test_typecheck_pyright(tmp_path: Path) -> None:
    root = _user_project(tmp_path, PROJECT)
    result = typecheck(root, "--checker", "pyright", "webapp/pages.ptl")
    assert result.returncode == 1, result.stderr
    found = [
        line.split(": error: ")[0] + " " + line.rsplit("[", 1)[1]
        for line in result.stdout.splitlines()
    ]
    # pyright points at the attribute (9:11, mypy at the expression) and at the binary
    # expression (16:38, mypy at its right operand, 16:42, after the non-ASCII "é").
    assert found == [
        "webapp/pages.ptl:9:11 reportAttributeAccessIssue]",
        "webapp/pages.ptl:12:17 reportArgumentType]",
        "webapp/pages.ptl:13:10 reportArgumentType]",
        "webapp/pages.ptl:14:10 reportArgumentType]",
        "webapp/pages.ptl:16:38 reportOperatorIssue]",
        "webapp/pages.ptl:21:14 reportAttributeAccessIssue]",
    ], result.stdout
    assert result.stderr == "Found 6 errors.\n"


@pytest.mark.slow  # a checker run end to end per test: make test, not test-fast
def test_typecheck_clean_template_and_errors(tmp_path: Path) -> None:
    root = _user_project(
        tmp_path,
        {
            "ok.ptl": """\
                def page [html] (title: str):
                    "<h1>%s</h1>" % title.upper()
                    return
                """,
            "bad.ptl": """\
                def page [html] (title):
                    return "x"
                """,
        },
    )
    result = typecheck(root, "--checker", "mypy", "ok.ptl")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    result = typecheck(root, "--checker", "mypy", "bad.ptl")
    assert result.returncode == 1
    assert result.stderr.startswith("bad.ptl:2:5: 'return' with a value in a template")
    result = typecheck(root, "missing.ptl")
    assert (result.returncode, result.stderr) == (2, "missing.ptl: no such file\n")


def test_stubs_let_checkers_see_templates(tmp_path: Path) -> None:
    root = _user_project(tmp_path, PROJECT)
    result = run("-m", "ptl_wsgi", "stubs", "--check", "webapp", cwd=root)
    assert result.returncode == 1
    assert "webapp/layout.pyi: missing or out of date; run: ptl-wsgi stubs webapp/layout.ptl" in (
        result.stdout
    )
    result = run("-m", "ptl_wsgi", "stubs", "webapp", cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["wrote webapp/layout.pyi", "wrote webapp/pages.pyi"]
    assert run("-m", "ptl_wsgi", "stubs", "--check", "webapp", cwd=root).returncode == 0

    result = run("-m", "mypy", "--cache-dir", str(tmp_path / ".cache"), "app.py", cwd=root)
    assert revealed_by_mypy(result.stdout) == [
        "ptl_wsgi.html.htmltext",
        "str",
        "ptl_wsgi.html.htmltext",
    ], result.stdout
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert errors == [
        'app.py:7: error: Argument 1 to "post" has incompatible type "int"; expected "str"  '
        "[arg-type]",
        'app.py:7: error: Argument 2 to "post" has incompatible type "str"; expected "int"  '
        "[arg-type]",
        'app.py:8: error: Module has no attribute "nothing"  [attr-defined]',
    ], result.stdout
    if has_pyright():
        result = run("-m", "pyright", "--outputjson", "app.py", cwd=root)
        diagnostics = json.loads(result.stdout)["generalDiagnostics"]
        assert [d["message"] for d in diagnostics if d["severity"] == "information"] == [
            'Type of "post("a", 1)" is "htmltext"',
            'Type of "item(1)" is "str"',
            'Type of "Widgets().render("x")" is "htmltext"',
        ]
        errors = [
            (d["range"]["start"]["line"] + 1, d["rule"])
            for d in diagnostics
            if d["severity"] == "error"
        ]
        assert errors == [
            (7, "reportArgumentType"),
            (7, "reportArgumentType"),
            (8, "reportAttributeAccessIssue"),
        ]


def test_stub_source() -> None:
    source = (
        "import os\n"
        "X = 1\n"
        "Y = os.sep\n"
        "__all__ = ['page']\n"
        "def page [html] (a, b: int = 2, *c, d=3, **e):\n"
        "    'x'\n"
        "def helper(x):\n"
        "    return x\n"
        "class K:\n"
        "    def m [plain] (self, y):\n"
        "        y\n"
        "    @staticmethod\n"
        "    def s [html] (z):\n"
        "        z\n"
    )
    stub = stub_source(source, "t.ptl")
    body = stub.split("_ptl_htmltext\n\n", 1)[1]
    assert body == (
        "import os\n"
        "X: int\n"
        "Y: Any\n"
        "__all__ = ['page']\n\n"
        "def page(a: Any, b: int=..., *c: Any, d: Any=..., **e: Any) -> _ptl_htmltext:\n"
        "    ...\n\n"
        "def helper(x):\n"
        "    ...\n\n"
        "class K:\n\n"
        "    def m(self, y: Any) -> str:\n"
        "        ...\n\n"
        "    @staticmethod\n"
        "    def s(z: Any) -> _ptl_htmltext:\n"
        "        ...\n"
    )


def test_stub_source_refuses_invalid_ptl() -> None:
    with pytest.raises(SyntaxError) as info:
        stub_source("def f [html] (:\n", "bad.ptl")
    assert info.value.filename == "bad.ptl"


@pytest.mark.slow
def test_package_is_clean_under_mypy_strict() -> None:
    """What CI's types step runs: mypy --strict (pyproject's [tool.mypy]) finds nothing."""
    result = run("-m", "mypy")
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("Success: no issues found")


@pytest.mark.slow
@needs_pyright
def test_package_is_clean_under_pyright() -> None:
    result = run("-m", "pyright", "--outputjson")
    summary = json.loads(result.stdout)["summary"]
    assert (summary["errorCount"], summary["warningCount"]) == (0, 0), result.stdout


@pytest.mark.slow  # a checker run end to end per test: make test, not test-fast
def test_typecheck_template_directories_as_the_loader_sees_them(tmp_path: Path) -> None:
    """A template directory is a package (relative imports); two may share module names."""
    root = _user_project(
        tmp_path,
        {
            "one/templates/layout.ptl": """\
                def wrap [html] (text: str):
                    text
                """,
            "one/templates/blog/post.ptl": """\
                from ..layout import wrap

                def render [html] (count: int):
                    wrap(count)
                """,
            "two/templates/layout.ptl": """\
                def wrap [plain] (n: int):
                    n + "x"
                """,
        },
    )
    result = typecheck(root, "--checker", "mypy", ".")
    assert result.stdout.splitlines() == [
        'one/templates/blog/post.ptl:4:10: error: Argument 1 to "wrap" has incompatible type '
        '"int"; expected "str"  [arg-type]',
        'two/templates/layout.ptl:2:9: error: Unsupported operand types for + ("int" and "str")'
        "  [operator]",
    ], result.stdout + result.stderr
    assert result.returncode == 1
