"""The C accelerator itself: a warning-free build, its use when built, no leaks.

Behaviour is compared with the Python twin in ``test_htmltext.py`` and
``test_htmltext_differential.py``; this file checks what only the C twin has.
"""

from __future__ import annotations

import gc
import importlib.machinery
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tracemalloc
from pathlib import Path

import pytest
from accelerator import without_c

import ptl_wsgi
from ptl_wsgi import _htmltext_py

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = Path(ptl_wsgi.__file__).resolve().parent
# tools/memcheck.sh preloads a sanitizer runtime: keep it away from the
# compiler and from child interpreters whose exit status is checked.
SANITIZER_ENV = ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SANITIZER_ENV}
    env.update(extra)
    return env


def built_extension() -> Path | None:
    """The accelerator built for this interpreter next to the imported package, if any."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = PACKAGE_DIR / f"_htmltext_c{suffix}"
        if path.exists():
            return path
    return None


def c_twin():
    try:
        from ptl_wsgi import _htmltext_c
    except ImportError as exc:
        without_c(f"the C accelerator is not built ({exc})")
    return _htmltext_c


def test_strict_build_has_no_warnings(tmp_path: Path) -> None:
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")[0]
    if shutil.which(compiler) is None:
        without_c(f"no C compiler: {compiler!r} (sysconfig CC) is not on PATH")
    build_lib, build_temp = tmp_path / "lib", tmp_path / "temp"
    command = [sys.executable, "setup.py", "build_ext"]
    command += ["--build-lib", str(build_lib), "--build-temp", str(build_temp)]
    proc = subprocess.run(
        command,
        cwd=ROOT,
        env=clean_env(PTL_WSGI_STRICT_BUILD="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    # setup.py turns a failed build into a warning and goes on without it.
    assert "accelerator was not built" not in output, output
    assert "-Werror" in output, output
    assert not re.search(r": (warning|error):", output), output
    built = list((build_lib / "ptl_wsgi").glob("_htmltext_c*"))
    assert built, output


def test_strict_build_fails_on_a_warning(tmp_path: Path) -> None:
    """The gate can fail: a planted warning makes the strict build exit non-zero."""
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")[0]
    if shutil.which(compiler) is None:
        without_c(f"no C compiler: {compiler!r} (sysconfig CC) is not on PATH")
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(PACKAGE_DIR, tmp_path / "ptl_wsgi", ignore=shutil.ignore_patterns("*.so"))
    source = tmp_path / "ptl_wsgi" / "_htmltext_c.c"
    source.write_text(source.read_text() + "\nstatic int planted(void) { int unused; return 0; }\n")
    proc = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "--force"],
        cwd=tmp_path,
        env=clean_env(PTL_WSGI_STRICT_BUILD="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "unused" in output, output
    assert not list((tmp_path / "ptl_wsgi").glob("_htmltext_c*.so")), output


def test_exports_match_the_python_twin() -> None:
    c = c_twin()

    def public(module) -> set[str]:
        return {
            name
            for name, value in vars(module).items()
            if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
        }

    # htmlformat is C's on Python 3.14+ only (no Template before); ptl_wsgi.html
    # gives a twin without one the Python twin's.  The HTML-only formatters of compiled
    # literals are the Python twin's for both (the C twin's % and format() call it too).
    python_only = {"htmlformat", "format_mod_html", "format_html", "format_map_html"}
    assert public(c) - python_only == public(_htmltext_py) - python_only


@pytest.mark.skipif(
    os.environ.get("PTL_WSGI_PURE_PYTHON", "") not in ("", "0"),
    reason="PTL_WSGI_PURE_PYTHON forces the pure-Python twin",
)
def test_accelerator_is_used_when_built() -> None:
    if built_extension() is None:
        without_c(f"the C accelerator is not built in {PACKAGE_DIR}")
    assert ptl_wsgi.IMPLEMENTATION == "c", ptl_wsgi.ACCELERATOR_STATUS
    proc = subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", "--version"],
        env=clean_env(PTL_WSGI_PURE_PYTHON="0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "C accelerator active" in proc.stdout


def test_version_reports_forced_pure_python() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", "--version"],
        env=clean_env(PTL_WSGI_PURE_PYTHON="1"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "C accelerator inactive: forced off by PTL_WSGI_PURE_PYTHON" in proc.stdout


# One round of every C entry point, including the error paths; shared by the
# quick leak test below and the slow RSS stress test (which runs it as a script).
WORKLOAD = textwrap.dedent(
    """
    from ptl_wsgi.html import implementation

    api = implementation("c")
    c = api.module
    ht = api.htmltext
    from ptl_wsgi import escapers as esc


    class Markup:
        def __html__(self):
            return "<i>markup</i>"


    class Attrs:
        a = "<attr>"


    class Broken:
        def __html__(self):
            raise RuntimeError("broken __html__")


    def failing_parts():
        yield "<a>"
        raise KeyError("stop")


    def expect(exc, func, *args):
        try:
            func(*args)
        except exc:
            return
        raise AssertionError(f"{func} did not raise {exc}")


    import sys
    TSTRINGS = sys.version_info >= (3, 14)
    if TSTRINGS:
        from string.templatelib import Interpolation, Template
        from ptl_wsgi import html

        c.set_htmlformat(html._text_only_strings, html._htmlformat_in_context,
                         html._fstring_in_context)

        def t(*parts):
            return Template(*(p if n % 2 == 0 else Interpolation(p, "x", None, "")
                              for n, p in enumerate(parts)))


    def tstrings(s, i):
        # Marked text-only on the first round (the engine), the twin's after.
        cell = lambda v: t("<td>", v, "</td>")
        link = t('<a href="', s, '">', i, "</a>")
        page = t("<tr>", [cell(s), cell(i), (cell(2**70), Markup(), ht("<b>"), None)], "|",
                 (cell(v) for v in (s, i)), "|", link, "|", [[s], [link]], "</tr>")
        c.contextual_htmlformat(page)
        c.contextual_fstring(page)
        padded = Template("<p>", Interpolation(cell(s), "x", None, "^40"), "</p>",
                          Interpolation([s], "x", "r", ""), "")
        c.contextual_htmlformat(padded)
        c.contextual_htmlformat(t("<p>", i, "</p>"))
        expect(RuntimeError, c.contextual_htmlformat, t("<p>", [s, Broken()], "</p>"))
        expect(KeyError, c.contextual_htmlformat, t("<p>", failing_parts(), "</p>"))
        expect(TypeError, c.contextual_htmlformat,
               Template("<p>", Interpolation((s,), "x", None, ">3"), "</p>"))


    def one_round(i):
        s = f"<{i}> & 'q' \\"Ā\\" 😀"
        c.escape_str(s)
        c.escape_str("nothing to escape")
        c.markup_of(s)
        c.markup_of(ht(s))
        c.markup_of(Markup())
        c.stringify(i)
        api.htmlescape(s)
        api.htmlescape(i)
        api.html_join([s, None, ht("<b>"), Markup(), i])
        api.html_join(x for x in (s, None))
        api.plain_join([s, None, i])
        api.format_field(s, -1, ">40")
        api.format_field(s, ord("r"), "")
        api.format_field(Markup(), -1, "^30")
        h = ht("<p>%s|%(k)s</p>") if i % 2 else ht("<p>%s %5.2f %r %*d</p>")
        h % {"k": s} if i % 2 else h % (s, i / 3, s, 4, i)
        ht("<b>") + s
        s + ht("<b>")
        ht("<b>") * 3
        ht(", ").join([s, ht("<br>"), i])
        # Attribute names of one character: CPython's type attribute cache keeps
        # the name strings str.format creates, unless they are its singletons.
        ht("{0} {k.a} {0!r:>30}").format(s, k=Attrs())
        ht("{a[x]}").format_map({"a": {"x": s}})
        ht("{0!r:.3}|{1:{2}}|{0!a:{3!s}}").format(s, ht("<b>"), '"^9', ">4")
        ht("{a!s:.2}").format_map({"a": s})
        api.format_field(ht("<b>"), -1, "<^9")
        api.format_field(Markup(), -1, ht('"^9'))
        ht(Markup())
        io = api.TemplateIO(html=True)
        io += s
        io(ht("<b>"))
        io += None
        io.getvalue()
        str(io)
        repr(io)
        plain = api.TemplateIO()
        plain += i
        plain.getvalue()
        # Errors raised part-way through each kind of operation.
        expect(RuntimeError, api.html_join, [s, Broken()])
        expect(KeyError, api.html_join, failing_parts())
        expect(RuntimeError, api.htmlescape, Broken())
        expect(TypeError, lambda: ht("%s %s") % (s,))
        expect(TypeError, lambda: ht("%s") % (s, s))
        expect(ValueError, lambda: ht("%s %y") % (s, s))
        expect(KeyError, lambda: ht("%(k)s") % {})
        expect(RuntimeError, lambda: ht("%s %s") % (s, Broken()))
        expect(RuntimeError, lambda: ht("<") + Broken())
        expect(KeyError, lambda: ht("{missing}").format(s))
        expect(ValueError, lambda: ht("{0!r}{").format(s))
        expect(ValueError, lambda: ht("{0!z}").format(s))
        expect(AttributeError, lambda: ht("{0.z}").format(s))
        expect(RuntimeError, io, Broken())
        expect(TypeError, lambda: ht("a") * "b")
        expect(ValueError, api.format_field, s, 1, "")
        expect(TypeError, api.format_field, s, 1.0, "")
        io._parts = __import__("collections").deque()  # not a list: its append is called
        io += s
        str(io)
        out = []
        c.loop_output(out, [s, i, Markup()], (ht("<td>"), None, (c.field_output,), ht("</td>")))
        c.loop_output(out, iter([s, (s,)]), (ht("<a>"), (c.percent_output, ht("%s")), ht("</a>")),
                      ht("</a><a>"))
        api.html_join(out + [2**70, -(2**63), 10**18 + i])
        expect(RuntimeError, c.loop_output, out, [s, Broken()], (None, (c.field_output,)))
        expect(KeyError, c.loop_output, out, failing_parts(), (ht("<a>"), None), ht("x"))
        expect(TypeError, c.loop_output, out, 5, (None,))
        # Slot parts: reads of attributes and items, outputs of the values read.
        rows = [{"k": [s, i]}, {"k": [Markup(), s]}]
        c.loop_output(out, rows, (ht("<a>"), (1, (ht("k"), 0)), (2, (ht("k"), -1)),
                                  (1, c.field_output), (2,), (1, esc.output_url_q)), ht("x"))
        c.loop_output(out, [Attrs(), Attrs()], ((1, ("a",)), (1, ("a",)), (1, str)))
        expect(KeyError, c.loop_output, out, [rows[0], {}], ((1, (ht("k"), 0)), (1,)))
        expect(AttributeError, c.loop_output, out, [Attrs(), s], ((1, ("a",)), (2, ("a",))))
        expect(RuntimeError, c.loop_output, out, [{"k": [Broken()]}],
               ((1, (ht("k"), 0)), (1, c.field_output)))
        expect(TypeError, c.loop_output, out, [s], ((1,),))
        expect(TypeError, c.loop_output, out, [s], ((2**70, ("a",)),))
        expect(TypeError, c.loop_output, out, [s], ((1, ()),))
        c.first_of(s, i, out)
        expect(TypeError, c.first_of)
        # Contextual escapers: fast paths, the reference, ints, constants, errors.
        for escape in (esc.url_q, esc.output_url_q, esc.url_slash_u, esc.url_query, esc.css_q,
                       esc.js_string, esc.js_value_u0, esc.output_js_value_q, esc.text_u0,
                       esc.comment, esc.srcdoc_q):
            escape(s)
            escape(f"/a/{i}?x=1")
            escape("")
            escape(i)
            escape(-i)
            escape(2**70 + i)
            escape(True)
            escape(None)
            escape(i / 3)
            escape(ht(s))
            escape(Markup())
            escape("javascript:x")
            expect(RuntimeError, escape, Broken())
            expect(TypeError, escape, s, s)
        if TSTRINGS:
            tstrings(s, i)
    """
)


def test_no_leaks_per_operation() -> None:
    """Every C entry point, error paths included, frees what it allocates.

    tracemalloc sees each object allocation, so a reference leaked per call
    shows up as memory that grows with the number of calls.
    """
    c_twin()
    namespace: dict = {}
    exec(compile(WORKLOAD, "<workload>", "exec"), namespace)
    one_round = namespace["one_round"]
    for i in range(200):  # caches, interned strings, free lists
        one_round(i)
    gc.collect()
    # A single leaked object per round would be 2000 objects (> 64 kB) in every
    # window of 2000 rounds.  A cache still filling (CPython's type attribute
    # cache keeps names that str.format creates for the Python twin's proxies,
    # which format() uses) grows less in each window, so one quiet window is enough.
    windows = []
    tracemalloc.start()
    try:
        for _ in range(3):
            before = tracemalloc.get_traced_memory()[0]
            for i in range(2000):
                one_round(i)
            gc.collect()
            windows.append(tracemalloc.get_traced_memory()[0] - before)
            if windows[-1] < 32 * 1024:
                break
    finally:
        tracemalloc.stop()
    assert windows[-1] < 32 * 1024, f"memory grew by {windows} bytes in windows of 2000 rounds"


STRESS = WORKLOAD + textwrap.dedent(
    """
    import gc
    import os

    PAGE = os.sysconf("SC_PAGE_SIZE")


    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE


    for i in range(3000):
        one_round(i)
    gc.collect()
    before = rss()
    for i in range(3000, 13000):
        one_round(i)
    gc.collect()
    print(before, rss())
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_rss_stays_flat_under_stress(tmp_path: Path) -> None:
    """About 500,000 C operations in a fresh process; its RSS must not grow."""
    c_twin()
    script = tmp_path / "stress.py"
    script.write_text(STRESS)
    proc = subprocess.run(
        [sys.executable, str(script)],
        env=clean_env(PTL_WSGI_PURE_PYTHON="0"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    before, after = map(int, proc.stdout.split())
    # A leak of one small object per round would add well over 1 MB.
    assert after - before < 1024 * 1024, f"RSS grew from {before} to {after} bytes"


@pytest.mark.skipif(
    sys.version_info < (3, 14), reason="concurrent.interpreters is new in Python 3.14"
)
def test_loads_in_isolated_subinterpreters() -> None:
    """Multi-phase init and per-module state: each interpreter (with its own GIL)
    gets its own module, types and registered class; single-phase init would
    make the import fail there."""
    from concurrent import interpreters

    c_twin()
    script = textwrap.dedent(
        """
        from ptl_wsgi import _htmltext_c, html
        assert html.IMPLEMENTATION == "c", html.ACCELERATOR_STATUS
        assert str(html.htmlescape("<a&b>")) == "&lt;a&amp;b&gt;"
        assert type(html.html_join(["<", html.htmltext("<b>")])) is html.htmltext
        assert str(html.htmltext("<p>%s</p>") % "<") == "<p>&lt;</p>"
        """
    )
    subs = [interpreters.create() for _ in range(2)]
    try:
        for sub in subs:
            sub.exec(script)
            sub.exec(script)  # a second run in the same interpreter reuses its module
    finally:
        for sub in subs:
            sub.close()
    # The main interpreter's module is untouched by the others' registrations.
    assert type(ptl_wsgi.html.htmlescape("<")) is ptl_wsgi.html.htmltext
