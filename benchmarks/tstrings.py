#!/usr/bin/env python3
"""t-strings through ``H`` (``htmlformat``) against a compiled template, Jinja2 and tdom.

Python 3.14+ (t-strings); on this machine through the sid chroot (see
``/work/shared/tools/sid-pythons.sh``; tdom installed beside ptl_wsgi)::

    python benchmarks/tstrings.py [--rounds N] [--seconds S]

* ``one value``: ``H(t"<p>{v}</p>")`` on a cached plan against the compiled
  one-value template ``f"<p>{v}</p>"`` (issue #27: at most 1.5x);
* ``bigtable``: 1,000 rows x 10 integer cells, ``H(t"...")`` per row and per cell,
  against Jinja2 (issue #27: at most 0.5x), the compiled ``.ptl`` bigtable and tdom
  (``html(t"...")`` per row and cell, rendered by ``str()``).

Outputs are checked equal before timing; medians of interleaved rounds (ratios per
round).  Exits 1 when a target is missed.
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

from _results import interleaved  # noqa: E402

ONE_VALUE_TARGET = 1.5
BIGTABLE_TARGET = 0.5

# Source with t-strings, compiled at run time: this file stays readable by Python 3.10.
T_SOURCE = """
from ptl_wsgi.html import H, html_join

def one(v):
    return H(t"<p>{v}</p>")

def bigtable(table):
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
    args = parser.parse_args(argv)
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
    return 0 if ok_one and ok_big else 1


if __name__ == "__main__":
    sys.exit(main())
