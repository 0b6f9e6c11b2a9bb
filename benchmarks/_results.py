"""What the benchmark scripts share: interleaved timing, instruction counts and their
sections of RESULTS.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def calls_per_round(call: Callable[[], Any], seconds: float) -> int:
    """How many calls of *call* take about *seconds*."""
    started = time.perf_counter()
    count = 0
    while time.perf_counter() - started < seconds / 4:
        call()
        count += 1
    return max(1, count * 4)


def interleaved(
    calls: dict[str, Callable[[], Any]], rounds: int, seconds: float
) -> dict[str, list[float]]:
    """Per-call seconds of each candidate in each of *rounds* interleaved rounds.

    Every candidate runs once per round, so load from other jobs on a shared
    machine falls on all of them alike and the ratios stay meaningful.
    """
    numbers = {name: calls_per_round(call, seconds) for name, call in calls.items()}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            number = numbers[name]
            started = time.perf_counter()
            for _ in range(number):
                call()
            times[name].append((time.perf_counter() - started) / number)
    return times


def write_section(title: str, lines: list[str], results: Path = RESULTS) -> None:
    """Put *lines* (starting with the ``## title`` heading) in place of that section."""
    text = results.read_text() if results.exists() else "# Benchmark results\n"
    body = "\n".join(lines).rstrip("\n") + "\n"
    start = text.find(title + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + body
    else:
        end = text.find("\n## ", start + len(title))
        text = text[:start] + body + ("" if end < 0 else text[end:])
    results.write_text(text)


def instructions_per_call(argv: list[str], calls: int) -> float:
    """Instructions per call, by valgrind's callgrind, of ``python *argv N``.

    The child runs its calls N times after any warm-up; the run with N = 0 is
    subtracted from the run with N = *calls*.  One hash seed: dict and set
    layouts, and so their probes, are the same in every run.
    """
    totals = []
    for n in (0, calls):
        command = [
            "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            sys.executable, *argv, str(n),
        ]  # fmt: skip
        env = dict(os.environ, PYTHONHASHSEED="0")
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        found = re.search(r"Collected : (\d+)", done.stderr)
        if found is None:
            raise SystemExit(f"no instruction count from valgrind for {argv[-1]}")
        totals.append(int(found[1]))
    return (totals[1] - totals[0]) / calls
