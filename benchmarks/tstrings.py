#!/usr/bin/env python3
"""t-strings through ``H`` (``htmlformat``) against a compiled template, Jinja2 and tdom.

Python 3.14+ (t-strings); on this machine through the sid chroot (see
``/work/shared/tools/sid-pythons.sh``; tdom installed beside ptl_wsgi)::

    python benchmarks/tstrings.py [--rounds N] [--seconds S]

* ``one value``: ``H(t"<p>{v}</p>")`` on a cached plan against the compiled
  one-value template ``f"<p>{v}</p>"`` (issue #27: at most 1.5x);
* ``bigtable``: 1,000 rows x 10 integer cells in one ``H(t"...")``, rows a generator of
  row t-strings, each holding a list of cell t-strings (issue #27: at most 0.5x Jinja2),
  against Jinja2, the compiled ``.ptl`` bigtable, the same with every level a list as
  tdom writes it (``H(t) lists``: the whole page's 33,000 objects are alive before
  ``H`` runs, and the cycle collector's passes over them cost more than the
  formatting), ``H`` called per row and per cell with ``html_join`` (``H(t) joined``)
  and tdom (``html(t"...")``, rendered by ``str()``).

Outputs are checked equal before timing; medians of interleaved rounds (ratios per
round).  Exits 1 when a target is missed.  ``--instructions`` gives callgrind's
instructions per call of each candidate instead (valgrind on PATH; each in a process of
its own, as ``instructions.py`` does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import instructions_per_call, interleaved  # noqa: E402

ONE_VALUE_TARGET = 1.5
BIGTABLE_TARGET = 0.5

# Source with t-strings, compiled at run time: this file stays readable by Python 3.10.
T_SOURCE = """
from ptl_wsgi.html import H, html_join

def one(v):
    return H(t"<p>{v}</p>")

def bigtable(table):
    return H(t"<table>{(
        t'<tr>{[t"<td>{v}</td>" for v in row.values()]}</tr>' for row in table
    )}</table>")

def bigtable_lists(table):
    return H(t"<table>{[
        t'<tr>{[t"<td>{v}</td>" for v in row.values()]}</tr>' for row in table
    ]}</table>")

def bigtable_joined(table):
    return H(t"<table>{html_join(
        H(t'<tr>{html_join(H(t"<td>{v}</td>") for v in row.values())}</tr>') for row in table
    )}</table>")
"""
TDOM_SOURCE = """
from tdom import html

def bigtable(table):
    return str(html(t"<table>{[
        t'<tr>{[t"<td>{v}</td>" for v in row.values()]}</tr>' for row in table
    ]}</table>"))
"""
PTL_SOURCE = """
def one [html] (v):
    f"<p>{v}</p>"

def bigtable [html] (table):
    "<table>"
    for row in table:
        "<tr>"
        for value in row.values():
            "<td>"
            value
            "</td>"
        "</tr>"
    "</table>"
"""
TABLE = [{k: i * 10 + n for n, k in enumerate("abcdefghij")} for i in range(1000)]


def candidates() -> dict[str, dict[str, Callable[[], Any]]]:
    import jinja2

    import ptl_wsgi

    t_ns: dict[str, Any] = {}
    exec(compile(T_SOURCE, "tstrings_bench", "exec"), t_ns)
    ptl_ns: dict[str, Any] = {"__name__": "bench_tstrings"}
    exec(ptl_wsgi.compile_ptl(PTL_SOURCE, "tstrings.ptl"), ptl_ns)
    env = jinja2.Environment(autoescape=True)
    big = env.from_string(
        "<table>{% for row in table %}<tr>{% for value in row.values() %}<td>{{ value }}</td>"
        "{% endfor %}</tr>{% endfor %}</table>"
    )
    found = {
        "one value": {
            "H(t)": lambda: t_ns["one"]("web & html"),
            "compiled": lambda: ptl_ns["one"]("web & html"),
        },
        "bigtable": {
            "H(t)": lambda: t_ns["bigtable"](TABLE),
            "H(t) lists": lambda: t_ns["bigtable_lists"](TABLE),
            "H(t) joined": lambda: t_ns["bigtable_joined"](TABLE),
            "compiled": lambda: ptl_ns["bigtable"](TABLE),
            "Jinja2": lambda: big.render(table=TABLE),
        },
    }
    try:
        tdom_ns: dict[str, Any] = {}
        exec(compile(TDOM_SOURCE, "tstrings_tdom", "exec"), tdom_ns)
        found["bigtable"]["tdom"] = lambda: tdom_ns["bigtable"](TABLE)
    except ImportError as error:
        print(f"- tdom: skipped, not installed ({error})")
    return found


def main(argv: list[str] | None = None) -> int:
    if sys.version_info < (3, 14):
        print("t-strings need Python 3.14+", file=sys.stderr)
        return 1
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=0.1)
    parser.add_argument(
        "--instructions", action="store_true", help="callgrind instructions per call instead"
    )
    args = parser.parse_args(argv)
    if args.instructions:
        return count_instructions()
    import ptl_wsgi

    found = candidates()
    for scenario, calls in found.items():
        outputs = {name: str(call()) for name, call in calls.items()}
        reference = outputs["compiled"]
        for name, output in outputs.items():
            if output != reference:
                raise SystemExit(
                    f"{scenario}: {name} renders {output[:120]!r}, not {reference[:120]!r}"
                )
    print(
        f"ptl_wsgi {ptl_wsgi.__version__}, twin {ptl_wsgi.IMPLEMENTATION}, "
        f"Python {sys.version.split()[0]}"
    )
    print()
    print("| scenario | candidate | µs per call | / H(t) (median of rounds) |")
    print("|---|---|---:|---:|")
    ratios: dict[tuple[str, str], float] = {}
    for scenario, calls in found.items():
        times = interleaved(calls, args.rounds, args.seconds)
        mine = times["H(t)"]
        for name, each in times.items():
            ratio = statistics.median(a / b for a, b in zip(mine, each, strict=True))
            ratios[scenario, name] = ratio
            print(
                f"| {scenario} | {name} | {statistics.median(each) * 1e6:,.2f} | {1 / ratio:.3f} |"
            )
    print()
    one = ratios["one value", "compiled"]
    big = ratios["bigtable", "Jinja2"]
    ok_one, ok_big = one <= ONE_VALUE_TARGET, big <= BIGTABLE_TARGET
    print(
        f"- H(t) one value at most {ONE_VALUE_TARGET}x the compiled template: "
        f"{'**met**' if ok_one else '**NOT met**'} ({one:.2f}x)"
    )
    print(
        f"- H(t) bigtable at most {BIGTABLE_TARGET}x Jinja2: "
        f"{'**met**' if ok_big else '**NOT met**'} "
        f"({big:.3f}x; compiled {ratios['bigtable', 'compiled']:.3f}x of H(t)"
        + (
            f", tdom {1 / ratios['bigtable', 'tdom']:.1f}x H(t)"
            if ("bigtable", "tdom") in ratios
            else ""
        )
        + ")"
    )
    for name in ("H(t) lists", "H(t) joined"):
        print(f"- {name} bigtable / Jinja2: {big / ratios['bigtable', name]:.3f}x")
    return 0 if ok_one and ok_big else 1


CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import tstrings
scenario, name, calls = sys.argv[2], sys.argv[3], int(sys.argv[4])
function = tstrings.candidates()[scenario][name]
function()
for _ in range(calls):
    function()
"""


def count_instructions() -> int:
    """Callgrind's instructions per call of every candidate, and the targets' ratios (the
    cycle collector on, as when timed: it is most of the cost of ``H(t) lists``)."""
    import ptl_wsgi

    print(
        f"ptl_wsgi {ptl_wsgi.__version__}, twin {ptl_wsgi.IMPLEMENTATION}, "
        f"Python {sys.version.split()[0]}"
    )
    print()
    print("| scenario | candidate | instructions per call | / H(t) |")
    print("|---|---|---:|---:|")
    counts: dict[tuple[str, str], float] = {}
    for scenario, calls in candidates().items():
        for name in calls:
            if name == "tdom":
                continue  # about 50 s a call under valgrind
            each = 20 if scenario == "bigtable" else 2000
            counts[scenario, name] = instructions_per_call(
                ["-c", CHILD, str(HERE), scenario, name], each
            )
            ratio = counts[scenario, name] / counts[scenario, "H(t)"]
            print(f"| {scenario} | {name} | {counts[scenario, name]:,.0f} | {ratio:.3f} |")
    one = counts["one value", "H(t)"] / counts["one value", "compiled"]
    big = counts["bigtable", "H(t)"] / counts["bigtable", "Jinja2"]
    print()
    print(f"- H(t) one value / compiled: {one:.2f}x (target {ONE_VALUE_TARGET}x)")
    print(f"- H(t) bigtable / Jinja2: {big:.3f}x (target {BIGTABLE_TARGET}x)")
    for name in ("H(t) lists", "H(t) joined"):
        each = counts["bigtable", name] / counts["bigtable", "Jinja2"]
        print(f"- {name} bigtable / Jinja2: {each:.3f}x")
    return 0 if one <= ONE_VALUE_TARGET and big <= BIGTABLE_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
