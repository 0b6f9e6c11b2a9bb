#!/usr/bin/env python3
"""Escaping speed: ``ptl_wsgi.htmlescape`` against the usual alternatives.

One process times, on the same strings:

* ``ptl_wsgi`` C twin (the reference of every ratio) and its Python twin;
* ``markupsafe.escape`` with its C speedups (the baseline, shown in ns/call);
* ``html.escape`` from the standard library;
* Quixote 3.8's ``quixote.html.htmlescape`` with its C ``_c_htmltext``.

Strings of 10, 100, 1,000 and 10,000 characters have 0 %, 10 % or 100 % of
characters to escape.  Each time is the minimum over repeats of a calibrated
loop, with candidates interleaved so that load on a shared machine hits them
alike.  Ratios are ``candidate time / ptl_wsgi C time``: above 1 means
ptl_wsgi is faster.

Usage::

    .venv/bin/python benchmarks/escape.py            # about 1-2 minutes
    .venv/bin/python benchmarks/escape.py --quick    # a few seconds, rough
    .venv/bin/python benchmarks/escape.py --write    # also update benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import html
import importlib.metadata
import os
import platform
import sys
import time
import timeit
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from ptl_wsgi.html import implementation  # noqa: E402

SIZES = (10, 100, 1_000, 10_000)
PERCENTS = (0, 10, 100)
SECTION = "## Escaping"
RESULTS = HERE / "RESULTS.md"

WORDS = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
SPECIAL = "&<>\"'"


def make_text(size: int, percent: int) -> str:
    """*size* characters of prose, *percent* % of them evenly spread markup characters."""
    specials = size * percent // 100
    every = {k * size // specials for k in range(specials)} if specials else set()
    chars = []
    for i in range(size):
        chars.append(SPECIAL[i % len(SPECIAL)] if i in every else WORDS[i % len(WORDS)])
    return "".join(chars)


class Candidate:
    def __init__(self, label: str, function: Callable[[str], object], note: str = "") -> None:
        self.label = label
        self.function = function
        self.note = note


def load_candidates() -> tuple[list[Candidate], list[str]]:
    """Every escaping function available, and notes on how each one was loaded."""
    notes: list[str] = []
    candidates: list[Candidate] = []

    try:
        c_twin = implementation("c")
    except ImportError as exc:
        notes.append(f"ptl_wsgi C twin: **not built** ({exc}); ratios use the Python twin.")
    else:
        candidates.append(Candidate("ptl_wsgi C", c_twin.htmlescape))
        notes.append("ptl_wsgi C twin: active (`ptl_wsgi._htmltext_c`).")
    candidates.append(Candidate("ptl_wsgi Python", implementation("python").htmlescape))

    import markupsafe

    try:
        import markupsafe._speedups as speedups
    except ImportError:
        speedups = None
    # markupsafe >= 3 keeps escape() in Python around the C _escape_inner;
    # older versions export escape() itself from _speedups.
    inner = getattr(markupsafe, "_escape_inner", None)
    in_c = speedups is not None and (
        markupsafe.escape is getattr(speedups, "escape", None)
        or (inner is not None and inner is getattr(speedups, "_escape_inner", None))
    )
    if not in_c:
        raise SystemExit("markupsafe's C speedups are not active: the baseline would be unfair")
    notes.append(
        f"markupsafe {importlib.metadata.version('markupsafe')}: C speedups active "
        "(`markupsafe._speedups`; `escape()` is a thin Python wrapper around its C core)."
    )
    candidates.append(Candidate("markupsafe", markupsafe.escape))
    candidates.append(Candidate("html.escape", html.escape))

    try:
        import quixote
        import quixote.html as quixote_html
    except ImportError as exc:
        notes.append(f"Quixote: not installed ({exc}); left out.")
    else:
        c_module = sys.modules.get("quixote.html._c_htmltext")
        quixote_c = c_module is not None and quixote_html.htmlescape is getattr(
            c_module, "htmlescape", None
        )
        label = "Quixote C" if quixote_c else "Quixote (Python!)"
        if quixote_c:
            notes.append(f"Quixote {quixote.__version__}: C `_c_htmltext.htmlescape` in use.")
        else:
            notes.append(
                f"Quixote {quixote.__version__}: **C `_c_htmltext` NOT in use**; "
                "timing its pure-Python htmlescape."
            )
        candidates.append(Candidate(label, quixote_html.htmlescape))
    return candidates, notes


def check_outputs(candidates: list[Candidate]) -> None:
    """Every candidate escapes the same characters (entity spellings differ)."""
    text = make_text(200, 10) + " é 😀"
    for candidate in candidates:
        out = str(candidate.function(text))
        if html.unescape(out) != text or set(out) & set("<>\"'"):
            raise SystemExit(f"{candidate.label} does not escape like the others: {out[:60]!r}")


def calibrate(timer: timeit.Timer, target: float) -> int:
    """A loop count whose run takes at least *target* seconds."""
    number = 1
    while True:
        for factor in (1, 2, 5):
            count = number * factor
            if timer.timeit(count) >= target:
                return count
        number *= 10


def measure(candidates: list[Candidate], text: str, target: float, repeat: int) -> dict[str, float]:
    """Best time per call, in ns, for each candidate on *text*."""
    timers = {
        c.label: timeit.Timer("f(s)", globals={"f": c.function, "s": text}) for c in candidates
    }
    numbers = {label: calibrate(timer, target) for label, timer in timers.items()}
    best = dict.fromkeys(timers, float("inf"))
    for _ in range(repeat):
        for label, timer in timers.items():  # interleaved
            best[label] = min(best[label], timer.timeit(numbers[label]) / numbers[label] * 1e9)
    return best


def ratio(value: float) -> str:
    return f"{value:.2f}"


def run(quick: bool) -> tuple[str, bool]:
    candidates, notes = load_candidates()
    check_outputs(candidates)
    reference = candidates[0].label  # "ptl_wsgi C", or the Python twin when C is missing
    baseline = "markupsafe"
    others = [c.label for c in candidates if c.label != reference]
    target, repeat = (0.01, 3) if quick else (0.05, 7)

    header = ["chars", "% escaped", f"{baseline} ns/call", f"{reference} ns/call"]
    header += [f"{label} / {reference}" for label in others]
    header.append("note")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    all_fastest = True
    not_fastest: list[str] = []
    short_vs_baseline: list[float] = []
    for size in SIZES:
        for percent in PERCENTS:
            times = measure(candidates, make_text(size, percent), target, repeat)
            ref = times[reference]
            row = [f"{size:,}", f"{percent} %", f"{times[baseline]:,.0f}", f"{ref:,.0f}"]
            row += [ratio(times[label] / ref) for label in others]
            faster = [label for label in others if times[label] < ref]
            if size <= 100:
                short_vs_baseline.append(times[baseline] / ref)
            if faster:
                all_fastest = False
                not_fastest.append(f"{size:,} chars / {percent} %")
                row.append("**not fastest**: " + ", ".join(faster) + " faster")
            else:
                row.append("")
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    notes.append(
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs (shared with other jobs: load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end)."
    )
    mode = "quick" if quick else "full"
    notes.append(
        f"Mode: {mode}; min of {repeat} interleaved repeats, each loop >= {target * 1000:.0f} ms."
    )
    table = "\n".join(lines)
    body = "\n".join(f"- {note}" for note in notes)
    fastest = (
        "**met**"
        if all_fastest
        else f"**not met** in {len(not_fastest)} of {len(lines) - 2} rows"
        f" ({', '.join(not_fastest)})"
    )
    short = min(short_vs_baseline) if short_vs_baseline else float("nan")
    targets = (
        "Targets:\n\n"
        f"- {reference} at least as fast as every other candidate in every row: {fastest}.\n"
        f"- At least 2x markupsafe on short strings (10 and 100 characters): "
        f"{'**met**' if short >= 2 else '**not met**'} (at least {short:.1f}x).\n"
    )
    if not all_fastest:
        targets += (
            "- Where Quixote's C `htmlescape` wins (short strings), it returns its own small\n"
            "  wrapper object, whereas every ptl_wsgi result is a str subclass instance made by\n"
            "  `str.__new__`: a second allocation plus a copy of the characters (and, when\n"
            "  something was escaped, a temporary str before that).  Avoiding them would mean\n"
            "  building the str object by hand from CPython's internal string layout, which\n"
            "  this project does not do.\n"
        )
    return f"{table}\n\n{body}\n\n{targets}", all_fastest


def write_section(command: str, report: str) -> None:
    """Replace (or add) the ``## Escaping`` section of RESULTS.md, leaving others alone."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (
        f"{SECTION}\n\n"
        f"`ptl_wsgi.htmlescape` against markupsafe, `html.escape` and Quixote. "
        f"Columns after the two absolute times are *candidate time / ptl_wsgi time*: "
        f"above 1 means ptl_wsgi is faster.\n\n"
        f"Command (from the repository root), run {stamp}:\n\n"
        f"```\n{command}\n```\n\n{report}"
    )
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    start = text.find(SECTION + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + ("\n" + text[end + 1 :] if end >= 0 else "")
    RESULTS.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short loops, for a rough check")
    parser.add_argument(
        "--write", action="store_true", help=f"update the '{SECTION}' section of RESULTS.md"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    report, all_fastest = run(args.quick)
    print()
    print(report)
    print(f"({time.perf_counter() - started:.0f} s)")
    if not all_fastest:
        print("NOTE: ptl_wsgi C is not the fastest on every row (see the note column).")
    if args.write:
        command = " ".join([".venv/bin/python", "benchmarks/escape.py", *sys.argv[1:]])
        write_section(command, report)
        print(f"wrote the '{SECTION}' section of {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
