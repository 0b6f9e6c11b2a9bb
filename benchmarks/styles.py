"""Each way of writing an [html] template, timed against the others and Jinja2.

Run from the repository root::

    .venv/bin/python benchmarks/styles.py [--rounds N] [--quick] [--write]

bigtable (1,000 x 10 integers) and page (100 articles in a layout, values
escaped where they need it) are written four ways (benchmarks/tpl/ptl_styles.ptl):
statements, f-strings, ``%`` and ``.format()``, and rendered by Jinja2 for
scale.  Every output is checked against Jinja2's before anything is timed.
Rounds are interleaved (every function once per round) and each figure is
the median of its rounds, as a ratio; absolute times are for orientation.

Targets (the performance issue): every style within 1.15x of the fastest
style, and the statement style at most 0.10x Jinja2's time.  The script exits
with status 1 when one is missed.  ``--instructions`` adds valgrind's
instruction counts, repeatable where times on a shared machine are not (the
targets are still judged by time).  ``--write`` puts the table in RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import instructions_per_call, interleaved, write_section  # noqa: E402
from templates import ITEMS, JINJA_TEMPLATES, TABLE, normalise  # noqa: E402

STYLES = ("stmt", "f", "pct", "format")
SCENARIOS = ("bigtable", "page")
STYLE_TARGET = 1.15
JINJA_TARGET = 0.10
SECTION = "## Template styles"
# Written under the table by --write: how to read it.
NOTES = [
    "Times on this shared two-core virtual machine move by 10-40 % from one run to the next;",
    "instruction counts do not. They are counted per render in a process of their own",
    "(`PYTHONHASHSEED=0`, collector off, the run without renders subtracted). Before the",
    "compiler split f-strings, `%` and `.format()` into pieces, the f-string style took",
    "1.2-1.3x the statement style's time, and `%` as much.",
    "",
    "The inner loop of bigtable (`for value in row.values()` outputting `<td>`, the value",
    "and `</td>`) is fused: one C call per row (`loop_output`) appends the pieces, with",
    "`</td><td>` one piece between cells. Of about 7.2 M instructions per statement-style",
    "render (callgrind's per-function counts over a loop of renders),",
    "3.8 M are the final join (2.6 M writing 21,001 pieces and 10,000 numbers' digits, 1.0 M",
    "gathering them), 2.2 M the fused loops (the dicts' value iteration and list appends),",
    "the rest the outer loop. Before the fusion the interpreter's inner loop, its tuples",
    "and `extend` calls were about 5 M, and the join went through 32,001 pieces.",
]


def ptl_functions() -> dict[str, Callable[[], Any]]:
    import ptl_wsgi

    namespace: dict[str, Any] = {"__name__": "bench_styles"}
    path = HERE / "tpl" / "ptl_styles.ptl"
    exec(ptl_wsgi.compile_ptl(path.read_text(), str(path)), namespace)
    functions: dict[str, Callable[[], Any]] = {}
    for style in STYLES:
        bigtable, page = namespace[f"bigtable_{style}"], namespace[f"page_{style}"]
        functions[f"bigtable {style}"] = lambda f=bigtable: f(TABLE)
        functions[f"page {style}"] = lambda f=page: f(ITEMS)
    return functions


def jinja_functions() -> dict[str, Callable[[], Any]]:
    import jinja2

    env = jinja2.Environment(loader=jinja2.DictLoader(JINJA_TEMPLATES), autoescape=True)
    big, page = env.get_template("bigtable.html"), env.get_template("articles.html")
    return {
        "bigtable jinja2": lambda: big.render(table=TABLE),
        "page jinja2": lambda: page.render(items=ITEMS, title="Articles"),
    }


def check(functions: dict[str, Callable[[], Any]]) -> None:
    for scenario in SCENARIOS:
        reference = normalise(functions[f"{scenario} jinja2"]())
        for style in STYLES:
            got = normalise(functions[f"{scenario} {style}"]())
            if got != reference:
                raise SystemExit(f"{scenario} {style} renders differently from Jinja2")


def instructions(names: list[str], renders: int = 8) -> dict[str, float]:
    """Instructions per render of each function, counted by valgrind's callgrind.

    Each function runs in its own process, once as a warm-up and then *renders*
    times, with the garbage collector off; the same process with no renders
    after the warm-up is subtracted.
    """
    return {name: instructions_per_call([__file__, "--run", name], renders) for name in names}


def report(
    times: dict[str, float], counts: dict[str, float] | None = None
) -> tuple[list[str], list[str]]:
    """The table, and the targets missed (judged by time, as the targets are stated)."""
    measure = times
    lines = [
        "| scenario | style | time | / fastest style | / Jinja2 |"
        + (" instructions | / fastest style | / Jinja2 |" if counts else ""),
        "| --- | --- | ---: | ---: | ---: |" + (" ---: | ---: | ---: |" if counts else ""),
    ]
    missed = []
    for scenario in SCENARIOS:
        jinja = times[f"{scenario} jinja2"]
        fastest = min(times[f"{scenario} {style}"] for style in STYLES)
        for style in STYLES:
            t = times[f"{scenario} {style}"]
            ratios = f"{t / fastest:.2f}x | {t / jinja:.3f}x"
            row = f"| {scenario} | {style} | {t * 1e3:.3f} ms | {ratios} |"
            if counts:
                c = counts[f"{scenario} {style}"]
                best = min(counts[f"{scenario} {other}"] for other in STYLES)
                jc = counts[f"{scenario} jinja2"]
                row += f" {c / 1e6:.2f} M | {c / best:.2f}x | {c / jc:.3f}x |"
            lines.append(row)
            m = measure[f"{scenario} {style}"]
            m_best = min(measure[f"{scenario} {other}"] for other in STYLES)
            m_jinja = measure[f"{scenario} jinja2"]
            if m / m_best > STYLE_TARGET:
                missed.append(f"{scenario} {style}: {m / m_best:.2f}x the fastest style")
            if style == "stmt" and m / m_jinja > JINJA_TARGET:
                missed.append(f"{scenario} stmt: {m / m_jinja:.3f}x Jinja2")
        row = f"| {scenario} | Jinja2 | {jinja * 1e3:.3f} ms | | 1.000x |"
        if counts:
            row += f" {counts[f'{scenario} jinja2'] / 1e6:.2f} M | | 1.000x |"
        lines.append(row)
    return lines, missed


def write(lines: list[str], missed: list[str], command: str) -> None:
    import ptl_wsgi

    write_section(
        SECTION,
        [
            SECTION,
            "",
            f"`{command}` (Python {sys.version.split()[0]}, ptl_wsgi {ptl_wsgi.__version__}, "
            f"{ptl_wsgi.IMPLEMENTATION} twin; medians of interleaved rounds; instructions "
            "per render by callgrind where shown). Targets: every "
            f"style within {STYLE_TARGET}x of the fastest; statements at most "
            f"{JINJA_TARGET}x Jinja2.",
            "",
            *lines,
            "",
            ("Missed: " + "; ".join(missed) + ".") if missed else "Every target met.",
            "",
            *NOTES,
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41, help="interleaved rounds (41)")
    parser.add_argument("--quick", action="store_true", help="short rounds, for a smoke test")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per render with valgrind (repeatable; slower)",
    )
    parser.add_argument("--run", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    functions = {**ptl_functions(), **jinja_functions()}
    if args.run:  # one function for instructions(): a warm-up, then N renders
        function = functions[args.run[0]]
        # A collection of the whole heap would land in some runs and not others.
        gc.disable()
        for _ in range(1 + int(args.run[1])):
            function()
        return 0
    check(functions)
    counts = None
    if args.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("--instructions needs valgrind")
        counts = instructions(list(functions))
    times = interleaved(functions, args.rounds, 0.02 if args.quick else 0.1)
    medians = {name: statistics.median(samples) for name, samples in times.items()}
    lines, missed = report(medians, counts)
    print("\n".join(lines))
    # The lines benchmarks/run.py collects into its table of targets.
    for scenario in SCENARIOS:
        worst = [m for m in missed if m.startswith(scenario) and "fastest" in m]
        verdict = "NOT met" if worst else "met"
        print(
            f"- {scenario}, every style within {STYLE_TARGET}x of the fastest: **{verdict}**"
            f" {'; '.join(worst)}"
        )
        slow = [m for m in missed if m.startswith(f"{scenario} stmt") and "Jinja2" in m]
        verdict = "NOT met" if slow else "met"
        print(
            f"- {scenario}, statements at most {JINJA_TARGET}x Jinja2: **{verdict}**"
            f" {'; '.join(slow)}"
        )
    if args.write:
        write(lines, missed, "python benchmarks/styles.py " + " ".join(argv or sys.argv[1:]))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
