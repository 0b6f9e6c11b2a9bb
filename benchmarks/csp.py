"""What CSP costs on a real page (issue #31): PTL's automatic nonces against Jinja2's
hand-written ones, CSP off and on, in time and in instructions (callgrind).

The pages (20 articles in a layout; the values are what real pages hold, issue #27's
rule: string URLs with spaces and ``&`` in hrefs and query strings, a ``srcset``,
an ``onclick`` argument, a JSON block, titles with markup and quotes):

* ``page``: a stylesheet ``<link>``, a ``<style>``, a ``<script src>``, a JSON
  ``<script type=application/json>`` and an inline script: 5 tags that take the
  nonce.  PTL writes them plain and the compiler adds the nonce inside a nonce
  scope; the Jinja2 page writes ``nonce="{{ csp_nonce }}"`` on each, as Jinja2
  users do (and, CSP off, is the same page without them).
* ``text``: the same page with those 5 tags made ``<meta>`` tags: no literal takes
  a nonce, so CSP on costs PTL nothing there (only the scope).
* ``format``: ``htmltext(fmt) % args`` at run time, a script and a style in the
  format (PTL only); run-time formatting gives no tag the nonce (the format may come
  from a catalog or a database), so CSP on costs it only the scope.

CSP on is a render inside ``nonce_scope()`` (PTL; entering and leaving it is
timed too) or with ``csp_nonce`` given (Jinja2).  Every output is checked first:
the nonce on each of the 5 tags, none without CSP, no value's markup unescaped.
Times: interleaved rounds, medians (a shared machine: read the instruction
counts, which are repeatable, beside them).  Instructions: per render, each
row in a process of its own under valgrind, CSP off in a process that never
entered a nonce scope.  ``--base DIR`` adds PTL's counts in another checkout
(e.g. ``git archive`` of the commit before nonces, with this build's C
extension copied in).

Run from the repository root::

    .venv/bin/python benchmarks/csp.py [--rounds N] [--calls N] [--base DIR] [--write]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":  # (not in the instruction counts' child, which picks a tree)
    sys.path.insert(0, str(HERE.parent))

from _results import instructions_per_call, interleaved, write_section  # noqa: E402

NONCE = "n0nceN0nceN0nceN0nce"
SECTION = "## CSP nonces: what they cost (issue #31)"

# The PTL page; TAG_SWAPS (below) are its five tags that take the nonce, and the <meta>
# tags, which take none, that the text row has in their place.
PTL_PAGE = """
def page [html] (title, user, articles, data):
    "<!doctype html><html><head><meta charset=utf-8>"
    "<title>%s</title>" % title
    '<link rel="stylesheet" href="/static/site.css">'
    "<style>h1 { color: teal }</style>"
    '<script src="/static/app.js"></script>'
    '<script type="application/json" id="data">%s</script>' % data
    "</head><body><header>Signed in as %s</header><main>" % user
    for a in articles:
        '<article><h2><a href="%s">%s</a></h2>' % (a["url"], a["title"])
        img, img2 = a["img"], a["img2"]
        '<img src="%s" srcset="%s 1x, %s 2x" alt="%s">' % (img, img, img2, a["title"])
        '<p><a href="/search?q=%s&amp;page=%s">%s</a>' % (a["tag"], a["n"], a["tag"])
        '<button onclick="share(%s)">share</button></p></article>' % a["title"]
    "</main><script>document.body.dataset.js = 'ran';</script></body></html>"
"""
TAG_SWAPS = [
    ('<link rel="stylesheet" href="/static/site.css">', '<meta name="css" content="/site.css">'),
    ("<style>h1 { color: teal }</style>", "<meta name=color content=teal>"),
    ('<script src="/static/app.js"></script>', '<meta name="js" content="/app.js">'),
    ('<script type="application/json" id="data">%s</script>', '<meta name="data" content="%s">'),
    (
        "<script>document.body.dataset.js = 'ran';</script>",
        "<p>document.body.dataset.js = 'ran';</p>",
    ),
]

# The same page as a Jinja2 user writes it: autoescape, |tojson for the JSON block and
# the onclick argument (in a single-quoted attribute, as Jinja2's docs say),
# |urlencode for the query's value, the nonce by hand on each tag (@nonce@: the
# attribute, or nothing when CSP is off).
JINJA_PAGE = """<!doctype html><html><head><meta charset=utf-8>\
<title>{{ title }}</title>\
<link rel="stylesheet" href="/static/site.css"@nonce@>\
<style@nonce@>h1 { color: teal }</style>\
<script src="/static/app.js"@nonce@></script>\
<script type="application/json" id="data"@nonce@>{{ data|tojson }}</script>\
</head><body><header>Signed in as {{ user }}</header><main>\
{% for a in articles %}\
<article><h2><a href="{{ a.url }}">{{ a.title }}</a></h2>\
<img src="{{ a.img }}" srcset="{{ a.img }} 1x, {{ a.img2 }} 2x" alt="{{ a.title }}">\
<p><a href="/search?q={{ a.tag|urlencode }}&amp;page={{ a.n }}">{{ a.tag }}</a>\
<button onclick='share({{ a.title|tojson }})'>share</button></p></article>\
{% endfor %}\
</main><script@nonce@>document.body.dataset.js = 'ran';</script></body></html>"""
JINJA_NONCE = ' nonce="{{ csp_nonce }}"'
# The text row in Jinja2: the same five tags made <meta> tags, as in TAG_SWAPS.
JINJA_SWAPS = [
    (
        old.replace(">", "@nonce@>", 1).replace("%s", "{{ data|tojson }}"),
        new.replace("%s", "{{ data }}"),
    )
    for old, new in TAG_SWAPS
]


def values() -> dict[str, Any]:
    """The page's context: strings where real pages have them."""
    articles = [
        {
            "url": f"/articles/web & html/{n} notes",
            "title": f'Tom\'s "best" <b>tips</b> #{n}',
            "img": f"/img/photo-{n}.jpg?w=400&fit=crop",
            "img2": f"/img/photo-{n}.jpg?w=800&fit=crop",
            "tag": "web & html" if n % 2 else "c++ / rust",
            "n": n,
        }
        for n in range(20)
    ]
    data = {"user": "ann </script>", "ids": list(range(5)), "next": "/page?n=2&sort=new"}
    return {"title": "Home <1>", "user": "ann", "articles": articles, "data": data}


def ptl_page(row: str) -> Callable[..., Any]:
    import types

    from ptl_wsgi.compiler import compile_ptl

    source = PTL_PAGE
    if row == "text":
        for old, new in TAG_SWAPS:
            source = source.replace(old, new)
    module = types.ModuleType("page")
    exec(compile_ptl(source, "<page>"), module.__dict__)
    return module.page  # type: ignore[no-any-return]


def jinja_page(row: str, on: bool) -> Any:
    import jinja2

    source = JINJA_PAGE
    if row == "text":
        for old, new in JINJA_SWAPS:
            if old not in source:
                raise SystemExit(f"JINJA_SWAPS: {old!r} is not in the page")
            source = source.replace(old, new)
    source = source.replace("@nonce@", JINJA_NONCE if on else "")
    return jinja2.Environment(autoescape=True).from_string(source)


def candidates() -> dict[str, Callable[[], Any]]:
    """Each row's renders, CSP off and on, PTL and Jinja2."""
    from ptl_wsgi.csp import nonce_scope, written
    from ptl_wsgi.html import htmltext

    context = values()
    calls: dict[str, Callable[[], Any]] = {}
    for row in ("page", "text"):
        page = ptl_page(row)
        args = (context["title"], context["user"], context["articles"], context["data"])

        # What a response gets: the page written out (csp.written, where the nonce goes
        # into the tags the literals wrote; the output policy calls it on every page).
        def off(page: Any = page, args: Any = args) -> Any:
            return written(page(*args))

        def on(page: Any = page, args: Any = args) -> Any:
            with nonce_scope(NONCE):
                return written(page(*args))

        calls[f"{row} PTL off"], calls[f"{row} PTL on"] = off, on
        plain, nonced = jinja_page(row, False), jinja_page(row, True)
        calls[f"{row} Jinja2 off"] = lambda t=plain: t.render(context)
        calls[f"{row} Jinja2 on"] = lambda t=nonced: t.render(context, csp_nonce=NONCE)
    fmt = htmltext('<script src="%s"></script><p>%s</p><style>a{}</style>')

    def format_on() -> Any:
        with nonce_scope(NONCE):
            return written(fmt % ("/app.js", "<b>"))

    calls["format PTL off"] = lambda: written(fmt % ("/app.js", "<b>"))
    calls["format PTL on"] = format_on
    return calls


def check(calls: dict[str, Callable[[], Any]]) -> None:
    """Every output as it should be before anything is timed (SystemExit if not)."""
    attribute = f' nonce="{NONCE}"'
    for name, call in calls.items():
        out = str(call())
        row, _engine, scope = name.split()
        # (a format made at run time gives no tag the nonce: second CSP review, D)
        expected = {"page": 5, "text": 0, "format": 0}[row] if scope == "on" else 0
        if out.count(attribute) != expected or out.count("nonce=") != expected:
            raise SystemExit(f"{name}: {out.count(attribute)} nonces, not {expected}:\n{out}")
        if row != "format" and "<b>" in out.replace("&lt;b&gt;", ""):
            raise SystemExit(f"{name}: a value's markup is not escaped:\n{out}")


CHILD = """
import gc, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
name, calls = sys.argv[3], int(sys.argv[4])
import csp as bench
from ptl_wsgi import html
assert html.IMPLEMENTATION == "c"
function = bench.candidates()[name]
gc.disable()
function()
# CSP off: a process that never entered a nonce scope, as one with CSP off is.
used = getattr(sys.modules.get("ptl_wsgi.escaping.nonce"), "USED", None)  # (not before)
assert used is None or used[0] == (name.endswith(" on") and "PTL" in name), name
for _ in range(calls):
    function()
"""


def count(tree: Path, name: str, calls: int) -> float:
    """Instructions per render of candidate *name* in *tree*: the median of three counts.

    A process's start-up now and then costs some million instructions more than the
    next one's (seen on this machine, same hash seed, no cache written), which one
    count would divide into the renders; the median drops such a run.
    """
    argv = ["-c", CHILD, str(tree), str(HERE), name]
    subprocess.run([sys.executable, *argv, "0"], check=True)  # caches written, not counted
    return statistics.median(instructions_per_call(argv, calls) for _ in range(3))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41, help="timed rounds")
    parser.add_argument("--seconds", type=float, default=0.1, help="seconds per round")
    parser.add_argument("--calls", type=int, default=500, help="renders per instruction count")
    parser.add_argument("--base", type=Path, help="another checkout (PTL's counts there)")
    parser.add_argument("--write", action="store_true", help="update RESULTS.md")
    args = parser.parse_args(argv)
    calls = candidates()
    check(calls)
    times = interleaved(calls, args.rounds, args.seconds)
    median = {name: statistics.median(t) * 1e6 for name, t in times.items()}

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    lines = [
        "| page | PTL off | PTL on | Jinja2 off | Jinja2 on | PTL / Jinja2 off | on "
        "| PTL on / off | Jinja2 on / off |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in ("page", "text"):
        m = {k.split(" ", 1)[1]: v for k, v in median.items() if k.startswith(row + " ")}
        lines.append(
            f"| {row} | {m['PTL off']:.1f} | {m['PTL on']:.1f} | {m['Jinja2 off']:.1f} "
            f"| {m['Jinja2 on']:.1f} | {ratio(f'{row} PTL off', f'{row} Jinja2 off'):.3f} "
            f"| {ratio(f'{row} PTL on', f'{row} Jinja2 on'):.3f} "
            f"| {ratio(f'{row} PTL on', f'{row} PTL off'):.3f} "
            f"| {ratio(f'{row} Jinja2 on', f'{row} Jinja2 off'):.3f} |"
        )
    lines.append(
        f"| format | {median['format PTL off']:.2f} | {median['format PTL on']:.2f} | — | — "
        f"| — | — | {ratio('format PTL on', 'format PTL off'):.3f} | — |"
    )
    print("\n".join(lines), flush=True)
    based = " before |" if args.base else ""
    counted = [
        "",
        f"| page |{based} PTL off | PTL on | Jinja2 off | Jinja2 on | PTL / Jinja2 off | on "
        "| PTL on / off |",
        "| --- |" + (" ---: |" if args.base else "") + " ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: |",
    ]
    print("\n".join(counted), flush=True)
    for row in ("page", "text", "format"):
        n = {
            f"{engine} {scope}": count(HERE.parent, f"{row} {engine} {scope}", args.calls)
            for engine in (("PTL", "Jinja2") if row != "format" else ("PTL",))
            for scope in ("off", "on")
        }
        before = f" {count(args.base, f'{row} PTL off', args.calls):,.0f} |" if args.base else ""
        if row == "format":
            jinja = " — | — | — | — |"
        else:
            jinja = (
                f" {n['Jinja2 off']:,.0f} | {n['Jinja2 on']:,.0f} "
                f"| {n['PTL off'] / n['Jinja2 off']:.3f} | {n['PTL on'] / n['Jinja2 on']:.3f} |"
            )
        line = (
            f"| {row} |{before} {n['PTL off']:,.0f} | {n['PTL on']:,.0f} |{jinja}"
            f" {n['PTL on'] / n['PTL off']:.3f} |"
        )
        print(line, flush=True)
        counted.append(line)
    if args.write:
        import jinja2

        intro = [
            SECTION,
            "",
            f"`python benchmarks/csp.py --rounds {args.rounds} --calls {args.calls}"
            + (" --base BASE" if args.base else "")
            + " --write` (Python "
            f"{platform.python_version()}, c twin, Jinja2 {jinja2.__version__}). A page of 20 "
            "articles whose values are what real pages hold (string URLs with spaces and `&` "
            "in hrefs and a query, a `srcset`, an `onclick` argument, a JSON block, titles "
            "with markup and quotes) and 5 tags that take the nonce (a stylesheet link, a "
            "`<style>`, a `<script src>`, the JSON `<script>`, an inline script): PTL writes "
            "them plain and adds the nonce inside a nonce scope; Jinja2 writes "
            '`nonce="{{ csp_nonce }}"` on each, by hand (CSP off: the page without them). '
            "`text`: the same page with those tags made `<meta>` tags; `format`: "
            "`htmltext % args` at run time, with a script and a style in the format "
            "(which take no nonce: a format made at run time may come from a catalog). "
            "CSP on: PTL inside `nonce_scope()` (entered and left per render, timed too), "
            "Jinja2 given `csp_nonce`. Every PTL page is written out as a response gets it "
            "(`csp.written`, where the nonce goes in, timed too). Every output is checked "
            "before timing.",
            "",
            "Times, µs per render (medians of interleaved rounds; ratios: medians of "
            "per-round ratios):",
            "",
        ]
        notes = [
            "",
            "Instructions per render (callgrind, hash seed 0, each row in a process of its "
            "own, the median of three counts; CSP off in one that never entered a nonce "
            "scope)"
            + (
                "; `before`: PTL in BASE, `git archive` of the commit before nonces with "
                "this build's C extension"
                if args.base
                else ""
            )
            + ":",
        ]
        tail = [
            "",
            "CSP off, a literal that could take the nonce costs a list lookup "
            "(`_ptl_nonce_used[0]`, true once the process entered a nonce scope), about 40 "
            "instructions (when nonces came in, 0898a62: a page with four such tags took "
            "1.011x the instructions of the commit before, 1.169x CSP on); a page "
            "without such tags compiles to the code it had. CSP on, the render pays for "
            "the scope's enter and exit (`nonce_scope`, once per request: the `text` row's "
            "difference), each such literal for a Python call that makes it markup "
            "carrying its slots (`escapers.nonced`), the template's join for keeping the "
            "slots (the carrier's join, in Python), and `written` for inserting the "
            "attribute once, into the whole page (`page` less `text`); Jinja2 "
            "pays for its five `{{ csp_nonce }}` lookups and escapes instead. Times on this "
            "shared two-core machine move by 10-40 % between runs; instruction counts by "
            "about 1 %.",
        ]
        write_section(SECTION, intro + lines + notes + counted + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
