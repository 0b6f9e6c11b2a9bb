"""What automatic CSP nonces cost against a checkout from before them (issue #31):
instructions per render, by callgrind (the page against Jinja2 is ``csp.py``).

Each row renders a page in a process of its own under valgrind (``_results``), in
this checkout and in ``--base`` (a checkout from before nonces, e.g. ``git archive
main`` with this build's C extension copied in), outside a nonce scope (CSP off)
and, in this checkout, inside one (CSP on).  The pages:

* ``head``: a layout's head and foot, with a stylesheet link, a ``<style>``, a
  ``<script src>`` and an inline script (4 tags that take the nonce), 3 values;
* ``text``: the same without those tags (no literal takes a nonce: the code is
  the same as before);
* ``format``: ``htmltext(fmt) % args`` at run time, the format with a script;
* ``indirect``: ``head``'s tags in literals assigned, chosen or added with ``+``.

Run from the repository root::

    .venv/bin/python benchmarks/csp_before_after.py --base /tmp/csp-base [--calls N] [--write]
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

from _results import instructions_per_call, write_section

HERE = Path(__file__).resolve().parent

HEAD = """
def page [html] (title, user, items):
    "<!doctype html><html><head><meta charset=utf-8>"
    "<title>%s</title>" % title
    '<link rel="stylesheet" href="/static/site.css">'
    "<style>h1 { color: teal }</style>"
    '<script src="/static/app.js"></script>'
    "</head><body><header>Signed in as %s</header><main><ul>" % user
    for item in items:
        "<li>%s</li>" % item
    "</ul></main><script>document.body.dataset.js = 'ran';</script></body></html>"
"""
TEXT = """
def page [html] (title, user, items):
    "<!doctype html><html><head><meta charset=utf-8>"
    "<title>%s</title>" % title
    '<meta name="description" content="static/site.css">'
    "<meta name=color content=teal>"
    '<meta name="x" content="/static/app.js">'
    "</head><body><header>Signed in as %s</header><main><ul>" % user
    for item in items:
        "<li>%s</li>" % item
    "</ul></main><p>document.body.dataset.js = 'ran';</p></body></html>"
"""
# The head page's tags from literals that are not output where they stand (assigned,
# chosen, added with "+"): they take the nonce where they are evaluated.
INDIRECT = """
def page [html] (title, user, items, dark=True):
    sheet = '<link rel="stylesheet" href="/static/site.css">'
    theme = "<style>h1 { color: teal }</style>" if dark else ""
    app = '<script src="/static/app.js"></script>'
    "<!doctype html><html><head><meta charset=utf-8>"
    "<title>%s</title>" % title
    sheet
    theme
    app
    "</head><body><header>Signed in as %s</header><main><ul>" % user
    for item in items:
        "<li>%s</li>" % item
    "</ul></main>" + "<script>document.body.dataset.js = 'ran';</script>" + "</body></html>"
"""

CHILD = """
import gc, sys
sys.path.insert(0, sys.argv[1])
row, scope, calls = sys.argv[2], sys.argv[3], int(sys.argv[4])
import types
from ptl_wsgi import html
from ptl_wsgi.compiler import compile_ptl
assert html.IMPLEMENTATION == "c"
sources = {"head": HEAD_SOURCE, "text": TEXT_SOURCE, "indirect": INDIRECT_SOURCE}
# What a response gets: the page written out (the nonce goes in there since the
# carrier; a checkout from before has no csp.written, nor needs one).
from ptl_wsgi import csp
written = getattr(csp, "written", lambda page: page)
if row == "format":
    fmt = html.htmltext('<script src="%s"></script><p>%s</p><style>a{}</style>')
    function = lambda: written(fmt % ("/app.js", "<b>"))
else:
    module = types.ModuleType("page")
    exec(compile_ptl(sources[row], "<page>"), module.__dict__)
    items = ["item %d <b>" % n for n in range(10)]
    function = lambda: written(module.page("Home <1>", "ann", items))
if scope == "on":
    from ptl_wsgi.csp import nonce_scope
    nonce_scope("n0nceN0nceN0nceN0nce").__enter__()
gc.disable()
function()
for _ in range(calls):
    function()
""".replace("HEAD_SOURCE", repr(HEAD)).replace("TEXT_SOURCE", repr(TEXT))
CHILD = CHILD.replace("INDIRECT_SOURCE", repr(INDIRECT))

ROWS = ("head", "text", "format", "indirect")


def count(tree: Path, row: str, scope: str, calls: int) -> float:
    return instructions_per_call(["-c", CHILD, str(tree), row, scope], calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="checkout before nonces")
    parser.add_argument("--calls", type=int, default=2000, help="renders per row")
    parser.add_argument("--write", action="store_true", help="update RESULTS.md")
    args = parser.parse_args(argv)
    lines = [
        "| page | before | CSP off | off / before | CSP on | on / before |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in ROWS:
        before = count(args.base, row, "off", args.calls)
        off = count(HERE.parent, row, "off", args.calls)
        on = count(HERE.parent, row, "on", args.calls)
        line = (
            f"| {row} | {before:,.0f} | {off:,.0f} | {off / before:.3f} | {on:,.0f} "
            f"| {on / before:.3f} |"
        )
        print(line, flush=True)
        lines.append(line)
    if args.write:
        title = "## CSP nonces against a checkout from before them (issue #31)"
        intro = [
            title,
            "",
            "`python benchmarks/csp_before_after.py --base BASE "
            f"--calls {args.calls} --write` (Python {platform.python_version()}, c twin; "
            "instructions per render by callgrind, "
            f"{args.calls:,} renders less none, hash seed 0). BASE is `git archive` of the "
            "commit before nonces with this build's C extension. `head`: a page with a "
            "stylesheet link, a `<style>`, a `<script src>` and an inline script (4 literals "
            "that take the nonce); `text`: the same page with none; `format`: `htmltext % "
            "args` at run time, with a script and a style in the format; `indirect`: `head`'s "
            "page with its four tags in literals assigned, chosen by a conditional or added "
            "with `+` (before: no nonce; since: each takes it where it is evaluated). CSP "
            "off: no nonce scope; on: inside one.",
            "",
        ]
        notes = [
            "",
            "CSP off, each literal that could take the nonce costs a list lookup, "
            "`_ptl_nonce_used[0]` (true once the process entered a nonce scope): about 40 "
            "instructions, 160 for `head`'s four; a page without such tags compiles to the "
            "code it had. CSP on, each such literal costs a call that inserts the attribute "
            "(`escapers.nonced`); a format plans its slots once, with its escapers. "
            "`indirect`, CSP off: the same list lookup per literal, where it is evaluated "
            "(about 90 instructions each here); CSP on: a call per literal (`head` joins its "
            "adjacent output literals into one text, one call for three tags). Deciding "
            "which out-of-place literals take the nonce (their values reach nothing but "
            "output) is done at compile time: the code of every page here is byte for byte "
            "what it was when each such literal took it. Rows move by up to 2 % between "
            "runs and checkouts (the `before` column too; the same commit in two "
            "directories measured `head` 1.018 apart).",
        ]
        write_section(title, intro + lines + notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
