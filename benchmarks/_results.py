"""What the benchmark scripts share: interleaved timing and their sections of RESULTS.md."""

from __future__ import annotations

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
