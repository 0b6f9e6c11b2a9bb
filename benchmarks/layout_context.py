"""A layout that reads render_context() against one that is passed the values down.

Run from the repository root::

    .venv/bin/python benchmarks/layout_context.py [--rounds 41] [--limit 3]

The page is the ``articles`` case of ``benchmarks/templates.py`` (100 articles
inside a layout), rendered through ``Loader.render`` as an integration renders
it.  In ``passed``, the page declares ``user`` and ``csp_nonce`` and hands them
to the layout; in ``context``, the page declares only its own values and the
layout reads the others from ``render_context()``.  Outputs are checked to be
identical; the two are timed in alternating rounds (the order flipped every
round), and the median of the rounds' ratios is printed: each ratio compares
two timings taken back to back, so load from other processes on a shared
machine, which drifts over seconds, cancels out.  Exit status 1 when
``context`` costs more than *limit* %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from templates import ITEMS  # noqa: E402  (the data of the articles case)

ARTICLE = """
def article [html] (item):
    '<article><h2><a href="/a/%s">%s</a></h2>' % (item["id"], item["title"])
    '<p class="by">by %s</p>' % item["author"]
    "<p>"
    item["body"]
    "</p><ul>"
    for tag in item["tags"]:
        "<li>%s</li>" % tag
    "</ul></article>"


def body [html] (items):
    for item in items:
        article(item)
"""

PASSED = (
    ARTICLE
    + """

def layout [html] (title, body, user, csp_nonce):
    "<!doctype html><html><head><title>"
    title
    '</title><script nonce="%s"></script></head><body><p>%s</p><h1>' % (csp_nonce, user)
    title
    "</h1>"
    body
    "</body></html>"


def render [html] (items, title, user, csp_nonce):
    layout(title, body(items), user, csp_nonce)
"""
)

CONTEXT = (
    """
from ptl_wsgi import render_context
"""
    + ARTICLE
    + """


def layout [html] (title, body):
    context = render_context()
    "<!doctype html><html><head><title>"
    title
    '</title><script nonce="%s"></script></head><body><p>%s</p><h1>' % (
        context["csp_nonce"], context["user"]
    )
    title
    "</h1>"
    body
    "</body></html>"


def render [html] (items, title):
    layout(title, body(items))
"""
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=301)
    parser.add_argument("--number", type=int, default=20, help="renders per timing")
    parser.add_argument("--limit", type=float, default=3.0, help="allowed extra cost, in %%")
    args = parser.parse_args()

    from ptl_wsgi.loader import Loader

    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "passed.ptl").write_text(PASSED)
        (Path(directory) / "context.ptl").write_text(CONTEXT)
        loader = Loader([directory])
        context = {"items": ITEMS, "title": "Articles", "user": "Ada <a>", "csp_nonce": "n0nce"}
        cases = {
            name: (lambda name=name: loader.render(f"{name}.ptl", context))
            for name in ("passed", "context")
        }
        if cases["passed"]() != cases["context"]():
            raise SystemExit("the two pages differ")
        times: dict[str, list[float]] = {name: [] for name in cases}
        for round_ in range(args.rounds):
            order = list(cases) if round_ % 2 == 0 else list(reversed(cases))
            for name in order:
                times[name].append(timeit.timeit(cases[name], number=args.number) / args.number)
        loader.close()
    passed = statistics.median(times["passed"])
    via_context = statistics.median(times["context"])
    ratio = statistics.median(c / p for c, p in zip(times["context"], times["passed"], strict=True))
    print(f"passed down:      {passed * 1e6:8.1f} us per page (median of {args.rounds})")
    print(f"render_context(): {via_context * 1e6:8.1f} us per page")
    extra = (ratio - 1) * 100
    print(f"median ratio context/passed: {ratio:.4f} ({extra:+.2f} %, limit +{args.limit} %)")
    return 0 if ratio <= 1 + args.limit / 100 else 1


if __name__ == "__main__":
    sys.exit(main())
