"""No leaks: the C twin's operations and template renders leave memory flat."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from accelerator import without_c
from big_pages import load_ptl

from ptl_wsgi.html import IMPLEMENTATION

REPO = Path(__file__).parents[2]


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
