"""Start-up cost: templates in the bytecode cache render without the compiler.

Each check runs in a fresh interpreter (``sys.modules`` of this one is full of
everything), with ``PYTHONDONTWRITEBYTECODE`` removed so the first run writes
the cache the next one reads.  No timings here: ``benchmarks/startup.py``
measures; these tests say what gets imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Modules a render from the cache must not import: the compiler's dependencies
#: (inspect and dis import ast and tokenize), the helpers of ptl_wsgi.html and
#: ptl_wsgi.beyond_escaping (urllib, secrets), and the web frameworks.
HEAVY = (
    "ptl_wsgi.compiler",
    "ptl_wsgi._quixote_helpers",
    "ptl_wsgi.beyond_escaping",
    "secrets",
    "ast",
    "tokenize",
    "inspect",
    "dis",
    "werkzeug",
    "flask",
    "django",
    "jinja2",
)

LAYOUT = """\
def page [html] (title, body):
    "<title>%s</title>" % title
    body
"""

PAGE = """\
from .layout import page

def render [html] (title, items):
    page(title, listing(items))

def listing [html] (items):
    for item in items:
        "<li>%s</li>" % item
"""

MODULE = """\
def greet [plain] (name):
    "Hello, %s" % name
"""

# Imports ptl_wsgi, installs the hook, imports a .ptl module, renders through a
# Loader and prints what it got and which HEAVY modules are loaded.
CHILD = """\
import json, sys
import ptl_wsgi
from ptl_wsgi.loader import Loader

ptl_wsgi.install()
import greeting

html = Loader([sys.argv[1]]).render("page.ptl", {"title": "<T>", "items": ["a&b"]})
heavy = [name for name in json.loads(sys.argv[2]) if name in sys.modules]
print(json.dumps({"html": str(html), "plain": greeting.greet("<Al>"), "heavy": heavy}))
"""


def run_child(code: str, *args: str, cwd: Path) -> str:
    """Run *code* in a fresh interpreter that may write bytecode caches; return stdout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(cwd)])
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A template folder and an importable .ptl module, not compiled yet."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "layout.ptl").write_text(LAYOUT)
    (templates / "page.ptl").write_text(PAGE)
    (tmp_path / "greeting.ptl").write_text(MODULE)
    return tmp_path


def render_in_child(site: Path) -> dict[str, object]:
    out = run_child(CHILD, str(site / "templates"), json.dumps(HEAVY), cwd=site)
    return json.loads(out)


EXPECTED_HTML = "<title>&lt;T&gt;</title><li>a&amp;b</li>"


def test_cached_templates_render_without_the_compiler(site: Path) -> None:
    first = render_in_child(site)  # compiles, and writes the cache
    assert (first["html"], first["plain"]) == (EXPECTED_HTML, "Hello, <Al>")
    assert {"ptl_wsgi.compiler", "ast", "tokenize"} <= set(first["heavy"])
    assert len(list(site.glob("__pycache__/greeting.*-ptl_wsgi-*.pyc"))) == 1
    assert len(list(site.glob("templates/__pycache__/*-ptl_wsgi-*.pyc"))) == 2

    second = render_in_child(site)
    assert (second["html"], second["plain"]) == (EXPECTED_HTML, "Hello, <Al>")
    assert second["heavy"] == []


def test_a_stale_cache_loads_the_compiler(site: Path) -> None:
    render_in_child(site)
    (site / "templates" / "layout.ptl").write_text(LAYOUT.replace("title>", "h1>"))
    result = render_in_child(site)
    assert result["html"] == "<h1>&lt;T&gt;</h1><li>a&amp;b</li>"
    assert {"ptl_wsgi.compiler", "ast", "tokenize"} <= set(result["heavy"])


def test_importing_ptl_wsgi_imports_no_compiler_and_compiles_on_demand(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """\
        import json, sys
        import ptl_wsgi
        before = [name for name in json.loads(sys.argv[1]) if name in sys.modules]
        code = ptl_wsgi.compile_ptl("def f [html] ():\\n    '<b>'\\n")
        namespace = {}
        exec(code, namespace)
        from ptl_wsgi import parse_ptl
        print(json.dumps([before, str(namespace["f"]()), "ast" in sys.modules]))
        """
    )
    before, output, ast_loaded = json.loads(run_child(code, json.dumps(HEAVY), cwd=tmp_path))
    assert before == [] and output == "<b>" and ast_loaded


def test_cgi_script_runs_from_its_precompiled_cache(tmp_path: Path) -> None:
    script = tmp_path / "hello.cgi"
    script.write_bytes((ROOT / "example_sites" / "cgi" / "hello.cgi").read_bytes())
    # The request itself needs werkzeug (and through it ast); the compiler it need not.
    code = textwrap.dedent(
        """\
        import os, sys
        os.environ.update(GATEWAY_INTERFACE="CGI/1.1", REQUEST_METHOD="GET",
                          SERVER_NAME="localhost", SERVER_PORT="80",
                          SERVER_PROTOCOL="HTTP/1.1", SCRIPT_NAME="/hello.cgi",
                          QUERY_STRING="name=%3CBob%3E")
        from ptl_wsgi.cgiapp import main
        status = main([sys.argv[1]])
        print("compiler" if "ptl_wsgi.compiler" in sys.modules else "cached", file=sys.stderr)
        sys.exit(status)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)

    def request() -> str:
        result = subprocess.run(
            [sys.executable, "-c", code, str(script)], env=env, capture_output=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        assert b"Hello, &lt;Bob&gt;!" in result.stdout
        return result.stderr.decode().split()[-1]

    assert request() == "compiler"
    # Running the script writes no cache: it may sit in a folder the server also serves.
    assert not (tmp_path / "__pycache__").exists()
    command = [sys.executable, "-m", "ptl_wsgi", "compile", "-q", str(script)]
    subprocess.run(command, env=env, check=True, timeout=60)
    assert len(list(tmp_path.glob("__pycache__/hello.cgi.*-ptl_wsgi-*.pyc"))) == 1
    assert request() == "cached"


# What a render from the cache may import, in a process started with -S (no site,
# so nothing is imported for ptl_wsgi in advance): ptl_wsgi's own rooms on that
# path, the template's modules, and these stdlib modules, all cheap.  Anything else
# (functools, importlib.util, struct, copyreg, typing, re, ...) costs a one-shot
# process milliseconds; benchmarks/startup.py measures how many.
CORE_ROOMS = {
    "ptl_wsgi",
    "ptl_wsgi.html",
    "ptl_wsgi.importer",
    "ptl_wsgi._runtime",
    "ptl_wsgi.loader",
    "ptl_wsgi._iterate_in_context",
    # The rule tables: data and two small functions, no imports.
    "ptl_wsgi.escaping",
    "ptl_wsgi.escaping.rules",
    # The request's CSP nonce: a context variable and a flag (imports contextvars only).
    "ptl_wsgi.escaping.nonce",
}
CHEAP_STDLIB = {
    "__future__",  # run by `from __future__ import annotations`
    "_collections_abc",
    "_contextvars",
    "_stat",
    "_string",
    "contextvars",
    "genericpath",
    "itertools",
    "os",
    "os.path",
    "posixpath",
    "stat",
    "types",
}

BARE_CHILD = """\
import json, sys
before = set(sys.modules)
from ptl_wsgi.loader import Loader
from ptl_wsgi.html import IMPLEMENTATION

html = Loader([sys.argv[1]]).render("page.ptl", {"title": "<T>", "items": ["a&b"]})
new = sorted(set(sys.modules) - before)
print(json.dumps({"html": str(html), "new": new, "twin": IMPLEMENTATION}))
"""


@pytest.mark.parametrize("pure_python", [False, True], ids=["active twin", "python twin"])
def test_a_cached_render_without_site_imports_only_cheap_modules(
    site: Path, pure_python: bool
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    if pure_python:
        env["PTL_WSGI_PURE_PYTHON"] = "1"
    command = [sys.executable, "-S", "-c", BARE_CHILD, str(site / "templates")]

    def child() -> dict[str, object]:
        result = subprocess.run(
            command, cwd=site, env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    first = child()  # compiles and writes the cache
    assert "ptl_wsgi.compiler" in first["new"]
    second = child()
    assert second["html"] == EXPECTED_HTML
    twin = "ptl_wsgi._htmltext_c" if second["twin"] == "c" else "ptl_wsgi._htmltext_py"
    assert twin == "ptl_wsgi._htmltext_py" or not pure_python
    templates = {name for name in second["new"] if name.startswith("_ptl_templates_")}
    assert len(templates) == 3  # the package, layout and page
    # Modules built into the interpreter (errno, _string, ...; which ones an import
    # pulls in varies between versions: 3.14's os imports errno) cost no file lookup.
    builtin = set(sys.builtin_module_names)
    # The Python twin's formatting room (its % and format() outside text): no imports of its own.
    rooms = CORE_ROOMS | {twin, "ptl_wsgi.escaping.formatting"}
    unexpected = set(second["new"]) - rooms - CHEAP_STDLIB - templates - builtin
    assert unexpected == set()
    assert CORE_ROOMS | {twin} <= set(second["new"])


PY_TEMPLATE = """\
from ptl_wsgi.html import html_join, htmltext
from ptl_wsgi.py_templates import template


@template("html")
def render(title, items):
    out = []
    out.append(htmltext("<title>%s</title>") % title)
    out.extend([htmltext("<li>%s</li>") % item for item in items])
    return html_join(out)
"""

PY_CHILD = """\
import json, sys
from ptl_wsgi.loader import Loader

html = Loader([sys.argv[1]]).render("page.py", {"title": "<T>", "items": ["a&b"]})
heavy = [name for name in json.loads(sys.argv[2]) if name in sys.modules]
print(json.dumps({"html": str(html), "heavy": heavy}))
"""


def test_py_templates_render_without_the_compiler(tmp_path: Path) -> None:
    """A plain .py template module needs no PTL compiler, not even before it is cached."""
    (tmp_path / "page.py").write_text(PY_TEMPLATE)
    for _ in range(2):  # compiled (by Python), then from the cache
        result = json.loads(run_child(PY_CHILD, str(tmp_path), json.dumps(HEAVY), cwd=tmp_path))
        assert result == {"html": EXPECTED_HTML, "heavy": []}
    assert len(list(tmp_path.glob("__pycache__/page.py.*-ptl_wsgi-*.pyc"))) == 1


LINK_CHILD = """\
import json, sys
before = set(sys.modules)
from ptl_wsgi.loader import Loader

html = Loader([sys.argv[1]]).render("link.ptl", {"url": "/a b?x=1&y=2"})
print(json.dumps({"html": str(html), "new": sorted(set(sys.modules) - before)}))
"""
# What a URL, a JS value or a CSS value in a page once pulled in (through safety, now
# beyond_escaping: the CSP
# nonces, OpenSSL), and what only compiling or planning needs.
NOT_FOR_A_LINK = {
    "ptl_wsgi.beyond_escaping", "ptl_wsgi.csp", "secrets", "hmac", "_hashlib", "ssl", "json",
    "typing",
    "ptl_wsgi.escaping.context", "ptl_wsgi.escaping.planner", "ptl_wsgi.compiler",
}  # fmt: skip


def test_a_cached_render_with_a_link_imports_no_policy_it_does_not_use(tmp_path: Path) -> None:
    (tmp_path / "link.ptl").write_text(
        "def render [html] (url):\n"
        '    \'<a href="%s">x</a><p style="color: %s" onclick="go(%s)">\' % (url, \'red\', 1)\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-S", "-c", LINK_CHILD, str(tmp_path)]
    for _ in range(2):  # the first run compiles and writes the cache
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["html"].startswith('<a href="/a%20b?x=1&amp;y=2">x</a>')
    assert "ptl_wsgi.escapers" in found["new"]
    assert set(found["new"]) & NOT_FOR_A_LINK == set()
