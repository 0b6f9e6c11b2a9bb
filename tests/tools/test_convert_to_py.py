"""``ptl-wsgi convert --to-py``: a .ptl module as plain Python whose templates output the same.

The conformance cases (tests/ptl_cases) are each converted, and the converted
module, imported from a real ``.py`` file, renders exactly what the compiled
``.ptl`` renders: the same text and the same type.  The converted modules use
t-strings, so rendering them needs Python 3.14 (run these tests there with
``bash /work/shared/tools/sid-pythons.sh . 3.14 -- tests/tools/test_convert_to_py.py``);
the conversion itself needs 3.12+.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from ptl_helpers import CASES_DIR, subprocess_env

from ptl_wsgi import compile_ptl
from ptl_wsgi.compiler import python_view
from ptl_wsgi.html import htmltext

TSTRINGS = sys.version_info >= (3, 14)
needs_314 = pytest.mark.skipif(not TSTRINGS, reason="converted modules use t-strings (3.14+)")
needs_312 = pytest.mark.skipif(sys.version_info < (3, 12), reason="the conversion needs 3.12+")

CASES = sorted(CASES_DIR.glob("*.ptl"))

# Cases whose converted module renders differently, and why.  Every other case must match.
DIFFERENT: dict[str, str] = {}


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", *map(str, args)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=60,
    )


def compiled(path: Path) -> types.ModuleType:
    module = types.ModuleType(f"compiled_{path.stem}")
    module.__file__ = str(path)
    exec(compile_ptl(path.read_bytes(), str(path)), module.__dict__)
    return module


def imported(source: str, path: Path) -> types.ModuleType:
    """*source* written to *path* and imported from there, as any .py module is."""
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"converted_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def convert(source: str | bytes, filename: str = "t.ptl") -> str:
    from ptl_wsgi.tools.to_py import to_python

    result = to_python(source, filename)
    assert result.problems == []
    return result.source


def both(source: str, tmp_path: Path, name: str = "mod") -> tuple[types.ModuleType, ...]:
    """The module compiled from PTL *source*, and converted then imported."""
    ptl = tmp_path / f"{name}.ptl"
    ptl.write_text(source, encoding="utf-8")
    return compiled(ptl), imported(convert(source, str(ptl)), tmp_path / f"{name}_py.py")


def same(a: object, b: object) -> None:
    assert type(a) is type(b)
    assert str(a) == str(b)


# -- every conformance case, both ways ---------------------------------------------------------


def _case_params() -> list[object]:
    return [
        pytest.param(
            path,
            id=path.stem,
            marks=[pytest.mark.xfail(reason=DIFFERENT[path.stem], strict=True)]
            if path.stem in DIFFERENT
            else [],
        )
        for path in CASES
    ]


@needs_314
@pytest.mark.parametrize("path", _case_params())
def test_conformance_case_renders_the_same_converted(path: Path, tmp_path: Path) -> None:
    source = convert(path.read_bytes(), str(path))
    # Plain Python: no template header left, none of the compiler's generated names.
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    assert not {n for n in names if n.startswith("_ptl_")}
    assert python_view(source)[1] == {}
    module = imported(source, tmp_path / f"{path.stem}.py")
    ours, theirs = module.render(), compiled(path).render()
    same(ours, theirs)
    expected = path.with_suffix(".expected").read_text(encoding="utf-8")[:-1]
    assert str(ours) == expected


def test_the_known_differences_are_few_and_real_cases() -> None:
    assert set(DIFFERENT) <= {p.stem for p in CASES}
    assert len(DIFFERENT) <= 2


@needs_314
def test_conformance_cases_with_the_pure_python_twin(tmp_path: Path) -> None:
    """The converted modules run on either htmltext twin with the same output."""
    script = (
        "import sys, types, importlib.util, ptl_wsgi\n"
        "from ptl_wsgi import compile_ptl\n"
        "from ptl_wsgi.tools.to_py import to_python\n"
        "assert ptl_wsgi.IMPLEMENTATION == 'python'\n"
        "for path, out in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    open(out, 'w').write(to_python(open(path, 'rb').read(), path).source)\n"
        "    spec = importlib.util.spec_from_file_location('m', out)\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "    c = types.ModuleType('c'); c.__file__ = path\n"
        "    exec(compile_ptl(open(path, 'rb').read(), path), c.__dict__)\n"
        "    a, b = m.render(), c.render()\n"
        "    print(path.rsplit('/', 1)[1], type(a) is type(b) and str(a) == str(b))\n"
    )
    args = [str(a) for p in CASES for a in (p, tmp_path / f"{p.stem}.py")]
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=subprocess_env(PTL_WSGI_PURE_PYTHON="1"),
        check=True,
    )
    verdicts = dict(line.split() for line in result.stdout.splitlines())
    assert verdicts == {p.name: str(p.stem not in DIFFERENT) for p in CASES}


# -- what the converted module looks like --------------------------------------------------

LISTING = '''\
"""A listing page."""
from __future__ import annotations

# The separator between items.
SEP = ", "


def item [html] (name, price=0):
    # One row.
    f"<li>{name}: {price:.2f}</li>"  # the row itself


def listing [html] (title, items):
    "<h1>%s</h1>" % title
    if not items:
        "<p>none</p>"
        return
    "<ul>"
    [item(n, p) for n, p in items]
    "</ul>"


template subject(title):
    title.upper()
'''


@needs_312
def test_converted_module_keeps_comments_and_layout() -> None:
    source = convert(LISTING)
    assert (
        source
        == '''\
"""A listing page."""
from __future__ import annotations
from ptl_wsgi.py_templates import template
from ptl_wsgi.html import html_fstring, html_join, htmltext, plain_join

# The separator between items.
SEP = ", "


@template("html")
def item(name, price=0):
    # One row.
    out = []
    out.append(html_fstring(t"<li>{name}: {price:.2f}</li>"))  # the row itself
    return html_join(out)


@template("html")
def listing(title, items):
    out = []
    out.append(htmltext("<h1>%s</h1>") % title)
    if not items:
        out.append(htmltext("<p>none</p>"))
        return html_join(out)
    out.append(htmltext("<ul>"))
    out.extend([item(n, p) for n, p in items])
    out.append(htmltext("</ul>"))
    return html_join(out)


@template("plain")
def subject(title):
    out = []
    out.append(title.upper())
    return plain_join(out)
'''
    )


@needs_314
def test_converted_listing_renders_the_same(tmp_path: Path) -> None:
    ptl, py = both(LISTING, tmp_path)
    for args in [("<T&C>", [("a<b", 1), ("c", 2.5)]), ("x", [])]:
        same(py.listing(*args), ptl.listing(*args))
    same(py.subject("<t>"), ptl.subject("<t>"))
    assert py.item.__ptl_template__ == "html" and py.subject.__ptl_template__ == "plain"


# -- hostile and unusual modules -----------------------------------------------------------

HOSTILE = '''\
htmltext = "not the class"      # a module's own names are never shadowed
template = "not the marker"
html_join = None
html_fstring = 3


def uses_out [html] (out, _out):
    "<b>"
    out
    _out


def braces [html] (x):
    "{<lit>}" f"[{x}]" "\\N{BULLET}{}"
    r"{raw}" rf"{x}\\n"


def nested [html] (items):
    def row [html] (item):
        f"<li>{item}</li>"
        return
    (lambda: "<lambda>")()
    for i in items:
        row(i)
    "<end>"


def one_liner [html] (x): "<a>"; x


def tstrings [plain] (x):
    t"<{x}>"


def tstrings_html [html] (x):
    t"[{x!r:>6}]"


def shout(f):
    def wrapper(*a):
        return f(*a).upper()
    wrapper.__wrapped__ = f
    return wrapper


@shout
def decorated [plain] (x):
    x


def decorated_first [html] (x):
    @shout
    def inner [plain] (y):
        y
    inner(x)


def helper_uses_out [html] (x):
    def helper():
        return out  # a global of that name: the list must not shadow it
    helper()
    x


out = "<global out>"


def only_docstring [html] ():
    "<doc>"


\x0c
def odd_lines [html] (x):  # a form feed above, line separators in literals
    "<a>\u2028</a>"; f"[{x}]\u2028"
    x


def multi_line [html] (
    x,
    y="<d>",
):
    (
        "<a>"
        f"{x}"
    )
    y
    if x:
        "<last>"'''


@needs_314
def test_hostile_names_and_unusual_templates(tmp_path: Path) -> None:
    ptl, py = both(HOSTILE, tmp_path)
    assert (py.htmltext, py.template, py.html_join, py.html_fstring) == (
        "not the class",
        "not the marker",
        None,
        3,
    )
    same(py.uses_out("<1>", "<2>"), ptl.uses_out("<1>", "<2>"))
    assert str(py.uses_out("<1>", "<2>")) == "<b>&lt;1&gt;&lt;2&gt;"
    same(py.braces("<x>"), ptl.braces("<x>"))
    assert str(py.braces("&")) == "{<lit>}[&amp;]\N{BULLET}{}{raw}&amp;\\n"
    same(py.nested(["<a>", "b"]), ptl.nested(["<a>", "b"]))
    same(py.one_liner("<x>"), ptl.one_liner("<x>"))
    same(py.tstrings("<x>"), ptl.tstrings("<x>"))
    assert py.tstrings("<x>") == "<<x>>"
    same(py.tstrings_html("<x>"), ptl.tstrings_html("<x>"))
    same(py.decorated("<x>"), ptl.decorated("<x>"))
    for name in ("decorated_first", "helper_uses_out", "multi_line", "odd_lines"):
        same(getattr(py, name)("<x>"), getattr(ptl, name)("<x>"))
    assert str(py.helper_uses_out("x")) == "&lt;global out&gt;x"
    same(py.only_docstring(), ptl.only_docstring())
    same(py.multi_line(""), ptl.multi_line(""))
    # The marker is innermost, on the function itself, as the compiler puts its own.
    assert py.decorated.__wrapped__.__ptl_template__ == "plain"
    assert not hasattr(py.decorated, "__ptl_template__")


@needs_314
def test_async_template(tmp_path: Path) -> None:
    import asyncio

    source = "async def page [html] (x):\n    '<p>'\n    x\n"
    ptl, py = both(source, tmp_path)
    same(asyncio.run(py.page("<x>")), asyncio.run(ptl.page("<x>")))


@needs_312
def test_quixote_templates_are_reported_not_left_as_functions(tmp_path: Path) -> None:
    """A decorator-style module compiles as PTL, but its templates would silently be none."""
    from ptl_wsgi.tools.to_py import to_python

    source = (
        "from quixote.ptl import ptl_html\n\n"
        "class C:\n    @ptl_html\n    def f(self):\n        F'<b>'\n"
    )
    result = to_python(source, "q.ptl")
    assert [(p.line, p.col) for p in result.problems] == [(4, 5)]
    assert "run 'ptl-wsgi convert --write' on the file first" in result.problems[0].message
    path = tmp_path / "q.ptl"
    path.write_text(source)
    out = tmp_path / "q.py"
    done = run("convert", "--to-py", path, "-o", out)
    assert done.returncode == 1 and not out.exists()
    assert done.stderr.startswith(f"{path}:4:5: error: cannot convert: @ptl_html is a Quixote 3")
    assert done.stderr.endswith(f"{path}: not converted\n")


@needs_312
def test_convert_command_writes_the_module(tmp_path: Path) -> None:
    path = tmp_path / "listing.ptl"
    path.write_text(LISTING)
    out = tmp_path / "listing.py"
    done = run("convert", "--to-py", path, "-o", out)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == convert(LISTING, str(path))
    printed = run("convert", "--to-py", path)
    assert printed.returncode == 0 and printed.stdout == out.read_text()
    assert run("convert", "--to-py", path, "-o", path).returncode == 2
    assert path.read_text() == LISTING
    bad = tmp_path / "bad.ptl"
    bad.write_text("def f [html] (:\n")
    done = run("convert", "--to-py", bad)
    assert done.returncode == 1 and done.stderr.startswith(f"{bad}:1:")


def test_o_goes_with_to_py(tmp_path: Path) -> None:
    path = tmp_path / "x.ptl"
    path.write_text("def f [html] ():\n    'x'\n")
    done = run("convert", path, "-o", tmp_path / "x.py")
    assert done.returncode == 2 and "--to-py" in done.stderr


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the refusal of older Pythons")
def test_conversion_needs_python_312(tmp_path: Path) -> None:
    from ptl_wsgi.tools.to_py import to_python

    with pytest.raises(RuntimeError, match=r"3\.12"):
        to_python("def f [html] ():\n    'x'\n")
    path = tmp_path / "x.ptl"
    path.write_text("def f [html] ():\n    'x'\n")
    done = run("convert", "--to-py", path)
    assert done.returncode == 2 and "3.12" in done.stderr


def test_template_marker() -> None:
    from ptl_wsgi.py_templates import template

    def f() -> str:
        return "x"

    assert template("html")(f) is f and f.__ptl_template__ == "html"  # type: ignore[attr-defined]
    assert template("plain")(f) is f and f.__ptl_template__ == "plain"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="'html' or 'plain'"):
        template("xml")
    with pytest.raises(ValueError, match="'html' or 'plain'"):
        template(["html"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match='@template\\("html"\\)'):
        template(f)  # type: ignore[arg-type]
    assert type(htmltext("x")) is htmltext


@needs_314
def test_a_site_moves_file_by_file(tmp_path: Path) -> None:
    """layout.ptl becomes layout.py; page.ptl imports it unchanged; every page stays the same."""
    from ptl_wsgi.loader import Loader

    layout = tmp_path / "layout.ptl"
    layout.write_text(
        'def frame [html] (title, body):\n    f"<title>{title}</title><main>"\n    body\n'
        '    "</main>"\n'
    )
    (tmp_path / "page.ptl").write_text(
        "from .layout import frame\n\ndef render [html] (title):\n"
        '    frame(title, "<p>%s</p>" % title)\n'
    )
    context = {"title": "<T&C>"}
    before = Loader([tmp_path])
    try:
        page, frame = (
            before.render("page.ptl", context),
            before.render("layout.ptl:frame", {"title": "<x>", "body": "<y>"}),
        )
    finally:
        before.close()
    assert str(page) == "<title>&lt;T&amp;C&gt;</title><main><p>&lt;T&amp;C&gt;</p></main>"
    (tmp_path / "layout.py").write_text(convert(layout.read_text(), str(layout)))
    layout.unlink()
    after = Loader([tmp_path])
    try:
        same(after.render("page.ptl", context), page)
        same(after.render("layout.py:frame", {"title": "<x>", "body": "<y>"}), frame)
    finally:
        after.close()


LISTS = """\
def fields [html] (value):
    f"<p>{value}</p><p title='{value}'>{value!r}</p>"
    t"<i>{value}</i>"
    f"<a href='/s?q={value}'>x</a><script>var v = {value};</script>"
"""


@needs_314
@pytest.mark.parametrize(
    "value",
    [
        ["<a>", 1],
        ("<t>",),
        [],
        [["<n>"]],
        "<str>",
        None,
    ],
)
def test_a_list_or_tuple_in_a_field_stays_one_value(tmp_path: Path, value: Any) -> None:
    # In an [html] f-string (or t-string) field a list is its format(), escaped; the
    # converted t-string must not join its items, as htmlformat() would (#27).
    ptl, py = both(LISTS, tmp_path)
    ours, theirs = py.fields(value), ptl.fields(value)
    same(ours, theirs)
    if isinstance(value, list) and value:
        assert "[&#x27;&lt;" in str(ours) or "[[" in str(ours)
    assert "html_fstring(t" in convert(LISTS)


@needs_314
def test_a_generator_in_a_field_stays_one_value(tmp_path: Path) -> None:
    ptl, py = both(LISTS.replace("{value};", "0;"), tmp_path)
    ours = str(py.fields(x for x in "ab"))
    assert ours == str(ptl.fields(x for x in "ab"))
    assert "generator object" in ours and "<p>ab</p>" not in ours
