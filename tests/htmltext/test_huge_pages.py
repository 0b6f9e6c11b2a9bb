"""Huge pages: a 100 MB page takes linear time and memory, with either builder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]


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
    child = TOUCHED_CHILD.format(
        tests=str(Path(__file__).parents[1] / "support"), builder=builder, rows=rows
    )
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
    child = PEAK_CHILD.format(tests=str(Path(__file__).parents[1] / "support"), builder=builder)
    result = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    measured = json.loads(result.stdout)
    # The page itself, its parts, and one join: a small multiple of the output.
    growth = measured["growth"] / measured["size"]
    assert growth < 8, f"peak memory grew by {growth:.1f}x the page"
