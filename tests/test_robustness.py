"""Robustness: runaway recursion, huge pages, leaks in the C code, editing under load."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from accelerator import without_c
from big_pages import load_ptl

from ptl_wsgi.html import IMPLEMENTATION
from ptl_wsgi.loader import Loader

REPO = Path(__file__).parent.parent


# -- runaway recursion --------------------------------------------------------------------

RECURSION_CASES = {
    "template calls itself": """
        def page [html] (n):
            '<div>'
            page(n + 1)
            '</div>'
        page(0)
    """,
    "plain template calls itself": """
        def page [plain] (n):
            page(n + 1)
        page(0)
    """,
    "__html__ renders the template that escapes it": """
        class Loop:
            def __html__(self):
                return page(self)
        def page [html] (item):
            '<p>%s</p>' % item
        page(Loop())
    """,
    "__str__ feeds an f-string that calls it": """
        class Loop:
            def __str__(self):
                return str(page(self))
        def page [html] (item):
            f'<p>{item!s}</p>'
        page(Loop())
    """,
    "format_map mapping recurses": """
        class Mapping:
            def __getitem__(self, key):
                return page(self)
        def page [html] (m):
            '<p>{x}</p>'.format_map(m)
        page(Mapping())
    """,
    "join of a recursive iterator": """
        def items(n):
            yield page(n + 1)
        def page [html] (n):
            ''.join(items(n))
        page(0)
    """,
}

RECURSION_CHILD = """
import sys, textwrap
from ptl_wsgi.compiler import compile_ptl
source = textwrap.dedent(sys.stdin.read())
try:
    exec(compile_ptl(source, "<recursion>"), {"__name__": "recursion"})
except RecursionError:
    print("RecursionError")
"""


@pytest.mark.parametrize("twin", ["python", "c"])
@pytest.mark.parametrize("case", list(RECURSION_CASES))
def test_runaway_recursion_raises_recursion_error(twin: str, case: str) -> None:
    # In a child: a C twin that overflowed the C stack would kill it, not pytest.
    if twin == "c" and IMPLEMENTATION != "c":
        without_c("the C accelerator is not built")
    env = dict(os.environ, PTL_WSGI_PURE_PYTHON="1" if twin == "python" else "0")
    result = subprocess.run(
        [sys.executable, "-c", RECURSION_CHILD],
        input=RECURSION_CASES[case],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )
    assert (result.returncode, result.stdout.strip()) == (0, "RecursionError"), result.stderr


# -- no leaks -------------------------------------------------------------------------------


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Markup:
    def __html__(self) -> str:
        return "<b>trusted</b>"


LEAK_TEMPLATE = """
from ptl_wsgi.html import htmltext

def row [html] (i, text, markup):
    '<tr id="r%d" class="%s">' % (i, text)
    f'<td title="{text}">{text:>12}</td><td>{markup}</td><td>{i!r:^5}</td>'
    '<td>{0}{k}</td>'.format(text, k=markup)
    '<td>%(a)s %(b)s</td>' % {'a': text, 'b': None}
    [('<i>%s</i>' % c) for c in (text, 'plain', markup)]
    '</tr>'

def page [html] (i, text, markup):
    '<table>'
    row(i, text, markup)
    row(i + 1, 'no specials here', htmltext('<em>ok</em>'))
    '</table>'
"""


def api_workout(impl: SimpleNamespace, i: int) -> None:
    """One round of every htmltext operation of one twin, on inputs that need escaping."""
    h = impl.htmltext
    text = f"<{i}> & 'q' \"d\""
    out = impl.TemplateIO(html=True)
    out += h("<p>%s %r %d</p>") % (text, text, i)
    out += h("<p>%(x)s</p>") % {"x": text}
    out += h("{0}-{x!r:>9}").format(text, x=Markup())
    out += h(", ").join([text, Markup(), h("<br>")])
    out += h("<a>") + text
    out += text + h("</a>")
    out += impl.html_join(["a", None, text, Markup()])
    out += impl.format_field(text, ord("r"), ">20")
    out += impl.htmlescape(text)
    out(impl.plain_join([text, None, i]))
    out += h(text) * 2
    out += h(text).upper().replace("Q", text).split("&")[0]
    str(out)
    out.getvalue()
    impl.stringify(Markup())


@pytest.mark.slow
def test_c_operations_leave_memory_flat(twins: tuple[SimpleNamespace, SimpleNamespace]) -> None:
    c_twin = twins[1]

    def round_(i: int) -> None:
        api_workout(c_twin, i)

    assert_flat(round_)


@pytest.mark.slow
def test_template_renders_leave_memory_flat() -> None:
    if IMPLEMENTATION != "c":
        without_c("the C accelerator is not active")
    page = load_ptl(LEAK_TEMPLATE)["page"]
    markup = Markup()

    def round_(i: int) -> None:
        str(page(i, f"<{i}> & 'q'", markup))

    assert_flat(round_)


def assert_flat(round_: Any, rounds: int = 100_000, warm_up: int = 10_000) -> None:
    """Run *round_* many times; RSS and the count of live memory blocks must stay put."""
    for i in range(warm_up):
        round_(i)
    gc.collect()
    rss, blocks = rss_bytes(), sys.getallocatedblocks()
    for i in range(rounds):
        round_(i)
    gc.collect()
    rss_growth, block_growth = rss_bytes() - rss, sys.getallocatedblocks() - blocks
    # A leak of one small object per round would show 100,000 blocks and megabytes.
    assert block_growth < 2_000, f"{block_growth} memory blocks more after {rounds} rounds"
    assert rss_growth < 4 * 2**20, f"RSS grew by {rss_growth / 2**20:.1f} MiB in {rounds} rounds"


# -- huge pages ---------------------------------------------------------------------------


PEAK_CHILD = """
import json, resource, sys
sys.path.insert(0, {tests!r})
from big_pages import ROW, page_builders
build = page_builders([ROW] * 1_000_000)[{builder!r}]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
size = len(build())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"size": size, "growth": peak - before}}))
"""


# The work of building a page is writing it: a linear builder writes each byte a bounded
# number of times, a quadratic one (re-joining or re-copying the page as it grows) writes
# the page over and over into fresh buffers.  What the child counts is the memory pages
# the build touches for the first time (minor page faults, counted by the kernel): a count
# of bytes written, which no CPU speed, machine load or garbage collection changes (a
# collection reads memory the process already has).  glibc's mmap threshold is fixed low so
# that every freed large buffer goes back to the system and a re-copy cannot hide in
# memory that malloc reuses.
TOUCHED_CHILD = """
import gc, json, resource, sys
sys.path.insert(0, {tests!r})
from big_pages import ROW, page_builders
rows, builder = {rows!r}, {builder!r}
if builder == "prepend":  # quadratic on purpose: each step copies the page so far
    def build():
        page = ""
        for row in [ROW] * rows:
            page = row + page
        return page
else:
    build = page_builders([ROW] * rows)[builder]
gc.collect()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
size = len(build())
touched = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({{"size": size, "touched": touched}}))
"""
MEMORY_PAGE = 4096


def touched_pages(builder: str, rows: int) -> dict[str, int]:
    """Build a page of *rows* rows in a fresh process: its size, and the memory pages touched."""
    child = TOUCHED_CHILD.format(tests=str(Path(__file__).parent), builder=builder, rows=rows)
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    result = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=300, cwd=REPO,
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts minor page faults as Linux reports them"
)


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("builder", ["template", "template_io"])
def test_a_100_mb_page_takes_linear_time(builder: str) -> None:
    # Both pages are far larger than any cache or malloc pool (about 25 and 100 MB).
    small = touched_pages(builder, 250_000)
    big = touched_pages(builder, 1_000_000)
    assert big["size"] > 100 * 10**6
    # Linear work gives a ratio of 4 (measured: 4.0), quadratic 16 or more.
    ratio = big["touched"] / small["touched"]
    assert ratio < 5, f"4x the output touched {ratio:.2f}x the memory"
    # And in absolute terms, a few writes of each byte (measured: 2.6 and 4.2 pages a page).
    per_page = big["touched"] / (big["size"] / MEMORY_PAGE)
    assert per_page < 10, f"the build touched {per_page:.1f} memory pages for each page of output"


@pytest.mark.slow
@linux_only
def test_the_work_measure_catches_a_quadratic_builder() -> None:
    # The same measure on a builder that copies the page so far for every row (small
    # pages: the copying is quadratic in time too).  It must fail the test above.
    small = touched_pages("prepend", 2_500)
    big = touched_pages("prepend", 10_000)
    assert big["touched"] / small["touched"] > 8


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["template", "template_io"])
def test_a_100_mb_page_takes_linear_memory(builder: str) -> None:
    # A fresh process, so that the peak is this page's and no earlier test's.
    child = PEAK_CHILD.format(tests=str(Path(__file__).parent), builder=builder)
    result = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    measured = json.loads(result.stdout)
    # The page itself, its parts, and one join: a small multiple of the output.
    growth = measured["growth"] / measured["size"]
    assert growth < 8, f"peak memory grew by {growth:.1f}x the page"


# -- editing templates under load -----------------------------------------------------------

VERSIONS = 40


def layout_source(version: int) -> str:
    return textwrap.dedent(
        f"""
        def wrap [html] (body):
            '<L{version}>'
            {"'" + "l" * (version % 7) + "'"}
            body
            '</L{version}>'
        """
    )


def page_source(version: int) -> str:
    return textwrap.dedent(
        f"""
        from .layout import wrap

        def body [html] (name):
            '<P{version}>'
            {"'" + "p" * (version % 5) + "'"}
            name
            '</P{version}>'

        def render [html] (name):
            wrap(body(name))
        """
    )


def complete_outputs() -> set[str]:
    """Every page that complete versions of the two files can make together."""
    return {
        f"<L{v}>{'l' * (v % 7)}<P{w}>{'p' * (w % 5)}&lt;x&gt;</P{w}></L{v}>"
        for v in range(VERSIONS)
        for w in range(VERSIONS)
    }


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


@pytest.mark.slow
def test_rendering_while_templates_are_edited(tmp_path: Path) -> None:
    write_atomically(tmp_path / "layout.ptl", layout_source(0))
    write_atomically(tmp_path / "page.ptl", page_source(0))
    loader = Loader([tmp_path], auto_reload=True)
    complete = complete_outputs()
    errors: list[str] = []
    renders = [0]
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                output = str(loader.render("page.ptl", {"name": "<x>"}))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if output not in complete:
                errors.append(f"not a complete version: {output!r}")
            renders[0] += 1

    threads = [threading.Thread(target=reader) for _ in range(16)]
    for thread in threads:
        thread.start()
    try:
        for version in range(1, VERSIONS):
            write_atomically(tmp_path / "layout.ptl", layout_source(version))
            time.sleep(0.01)
            write_atomically(tmp_path / "page.ptl", page_source(version))
            time.sleep(0.03)
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=60)
        loader.close()
    assert not errors, errors[:10]
    assert renders[0] > 100
    fresh = Loader([tmp_path])
    try:
        final = str(fresh.render("page.ptl", {"name": "<x>"}))
    finally:
        fresh.close()
    assert final.startswith(f"<L{VERSIONS - 1}>") and f"<P{VERSIONS - 1}>" in final
