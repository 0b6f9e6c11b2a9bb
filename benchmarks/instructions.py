"""Instructions per call of the C twin on the rows of escape.py and templates.py.

Times on a shared machine move by tens of percent between runs; callgrind's
instruction counts do not, so before/after comparisons of the C accelerator
use them.  Each row runs in a process of its own under valgrind, once with
*N* calls after a warm-up and once with none; the difference divided by *N* is
the figure.  ``--tree`` measures another checkout (e.g. a ``git archive`` of
the commit before a change, with its extension built) with this venv::

    .venv/bin/python benchmarks/instructions.py [--tree DIR] [--calls N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _results import instructions_per_call

HERE = Path(__file__).resolve().parent
ESCAPE_ROWS = [(size, percent) for size in (10, 100, 1_000, 10_000) for percent in (0, 10, 100)]
TEMPLATE_ROWS = ("bigtable", "bigtable-esc", "articles", "hello")

CHILD = """
import gc, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/benchmarks")
row, calls = sys.argv[2], int(sys.argv[3])
from ptl_wsgi import html
assert html.IMPLEMENTATION == "c"
if row.startswith("escape"):
    from escape import make_text
    _, size, percent = row.split(":")
    text = make_text(int(size), int(percent))
    function = lambda: html.htmlescape(text)
else:
    from templates import ptl_engine
    function = ptl_engine()[row]
gc.disable()
function()
for _ in range(calls):
    function()
"""


def count(tree: Path, row: str, calls: int) -> float:
    return instructions_per_call(["-c", CHILD, str(tree), row], calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="checkout to measure")
    parser.add_argument(
        "--calls", type=int, default=200, help="calls per row at least (templates: /20)"
    )
    parser.add_argument("--only", default="", help="rows whose label contains this")
    args = parser.parse_args(argv)
    for size, percent in ESCAPE_ROWS:
        row = f"escape:{size}:{percent}"
        if args.only not in f"htmlescape {size:,} chars, {percent} %":
            continue
        # More calls for short strings: a row's noise (memory layout, caches) is
        # a few hundred instructions per process, whatever the calls.
        figure = count(args.tree, row, max(args.calls, 4_000_000 // (size + 100)))
        print(f"| htmlescape {size:,} chars, {percent} % | {figure:,.0f} |", flush=True)
    for row in TEMPLATE_ROWS:
        if args.only not in f"templates {row}":
            continue
        calls = max(1, args.calls // 20) if row != "hello" else args.calls
        print(f"| templates {row} | {count(args.tree, row, calls):,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
