"""Contextual escaping: what it costs at compile time and in the benchmark pages.

Compile time: every conformance fixture (tests/ptl_cases) and example-site template
compiled in memory with contextual escaping on and off (the ``__ptl_contextual__``
opt-out, read by the compiler for every module), interleaved, best of N.
Render time: the page and bigtable templates of benchmarks/tpl/ptl_pages.ptl compiled
both ways, interleaved, best of N.  Prints a Markdown table.  With --callgrind, the
render cost is also counted in instructions (valgrind's callgrind, repeatable where
times are not): per render, the difference between a child that renders 40 times and one
that renders none.

    .venv/bin/python benchmarks/contextual.py [--rounds N] [--callgrind]
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import instructions_per_call  # noqa: E402

from ptl_wsgi import compiler  # noqa: E402


def sources() -> list[tuple[str, str]]:
    paths = sorted((ROOT / "tests" / "ptl_cases").glob("*.ptl"))
    paths += sorted((ROOT / "example_sites").rglob("*.ptl"))
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            compiler.compile_ptl(text, str(path))
        except SyntaxError:  # newer-Python syntax (py312_generics on 3.10/3.11)
            continue
        found.append((str(path.relative_to(ROOT)), text))
    return found


def compile_all(texts: list[tuple[str, str]], contextual: bool) -> None:
    saved = compiler._opts_out
    if not contextual:
        compiler._opts_out = lambda body: True
    try:
        for name, text in texts:
            compiler.compile_ptl(text, name)
    finally:
        compiler._opts_out = saved


def best(funcs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    timers = {name: timeit.Timer(func) for name, func in funcs.items()}
    numbers = {name: max(1, timer.autorange()[0] // 2) for name, timer in timers.items()}
    result = dict.fromkeys(funcs, float("inf"))
    for _ in range(rounds):
        for name, timer in timers.items():
            result[name] = min(result[name], timer.timeit(numbers[name]) / numbers[name])
    return result


def page_renders(contextual: bool) -> dict[str, Callable[[], Any]]:
    import templates  # benchmarks/templates.py: the data of the benchmark

    text = (ROOT / "benchmarks" / "tpl" / "ptl_pages.ptl").read_text(encoding="utf-8")
    if not contextual:
        text = "__ptl_contextual__ = False\n" + text
    namespace: dict[str, Any] = {"__name__": f"bench_contextual_{contextual}"}
    exec(compiler.compile_ptl(text, "ptl_pages.ptl"), namespace)
    bigtable, articles = namespace["bigtable"], namespace["articles"]
    table, items = templates.TABLE, templates.ITEMS
    return {"bigtable": lambda: bigtable(table), "page (articles)": lambda: articles(items)}


CALLGRIND_RENDERS = 40


def child(contextual: bool, scenario: str, count: int) -> None:
    render = page_renders(contextual)[scenario]
    for _ in range(count):
        render()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0] == "1", args.child[1], int(args.child[2]))
        return
    texts = sources()
    start = time.perf_counter()
    times = best(
        {"on": lambda: compile_all(texts, True), "off": lambda: compile_all(texts, False)},
        args.rounds,
    )
    print(f"Compile time, {len(texts)} files (fixtures and example sites), best of {args.rounds}:")
    print()
    print("| contextual escaping | ms | ratio |")
    print("|---|---|---|")
    for name in ("off", "on"):
        print(f"| {name} | {times[name] * 1e3:.1f} | {times[name] / times['off']:.2f} |")
    on, off = page_renders(True), page_renders(False)
    print()
    print(f"Render time, benchmarks/tpl/ptl_pages.ptl, best of {args.rounds}:")
    print()
    print("| scenario | off µs | on µs | on / off |")
    print("|---|---|---|---|")
    for scenario in on:
        assert str(on[scenario]()) == str(off[scenario]()), scenario
        result = best({"off": off[scenario], "on": on[scenario]}, args.rounds)
        print(
            f"| {scenario} | {result['off'] * 1e6:.1f} | {result['on'] * 1e6:.1f} "
            f"| {result['on'] / result['off']:.3f} |"
        )
    if args.callgrind:
        print()
        print(f"Instructions per render (callgrind, {CALLGRIND_RENDERS} renders less none):")
        print()
        print("| scenario | off | on | on / off |")
        print("|---|---|---|---|")
        for scenario in on:
            per = {}
            for contextual in (False, True):
                child_argv = [__file__, "--child", str(int(contextual)), scenario]
                per[contextual] = instructions_per_call(child_argv, CALLGRIND_RENDERS)
            print(
                f"| {scenario} | {per[False]:,.0f} | {per[True]:,.0f} "
                f"| {per[True] / per[False]:.4f} |"
            )
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
