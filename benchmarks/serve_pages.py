#!/usr/bin/env python3
"""Served requests per second: the same page in PTL, Jinja2 and DTL under gunicorn.

::

    .venv/bin/python benchmarks/serve_pages.py                     # Flask, then Django
    .venv/bin/python benchmarks/serve_pages.py --requests 3000 --write
    .venv/bin/python benchmarks/serve_pages.py --only flask --requests 200 --rounds 1

The apps are those of ``benchmarks/end_to_end.py`` (the ``articles`` page: a
layout and 100 articles, about 60 kB), served by gunicorn (2 workers x 4
threads, gthread) on 127.0.0.1: Flask's ``/ptl`` and ``/jinja``, Django's
``/ptl/``, ``/dtl/`` and ``/jinja2/``.  The load client is
``benchmarks/load_wsgi.py``'s: Python threads over keep-alive ``http.client``
connections, a fixed number of requests and a time limit per run, every
response checked (status 200 and the page's heading).  The URLs take turns,
round after round (``--rounds``), against one server, so the engines see the
same server and the same load from other jobs; the table gives the median
requests/s per URL and its ratio to PTL's.

Server and client share the machine's CPUs (2 here), so these are figures of
the whole machine, not of the server alone.  Exits 1 when a response is wrong
or PTL's page is not served faster than each other engine's.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from _results import write_section  # noqa: E402
from end_to_end import write_templates  # noqa: E402
from load_wsgi import BIN, python_load  # noqa: E402

SECTION = "## Served pages: PTL, Jinja2 and DTL under gunicorn"
MARKER = b"<h1>Articles</h1>"
URLS = {
    "flask": {"PTL": "/ptl", "Jinja2": "/jinja"},
    "django": {"PTL": "/ptl/", "DTL": "/dtl/", "Jinja2 (Django backend)": "/jinja2/"},
}
WORKERS, THREADS = 2, 4


def measure(framework: str, requests: int, rounds: int, concurrency: int) -> dict[str, list[float]]:
    """Requests/s of each URL of *framework* in each round; raises SystemExit on errors."""
    from servers import run_process_server

    rates: dict[str, list[float]] = {name: [] for name in URLS[framework]}
    with tempfile.TemporaryDirectory() as tmp:
        write_templates(Path(tmp))
        env = {"PTL_BENCH_TEMPLATES": tmp, "PYTHONPATH": str(ROOT)}
        command = [
            str(BIN / "gunicorn"), "--chdir", str(HERE), "--bind", "127.0.0.1:{port}",
            "--workers", str(WORKERS), "--threads", str(THREADS), "--log-level", "warning",
            f"end_to_end:served({framework!r})",
        ]  # fmt: skip
        first = next(iter(URLS[framework].values()))
        with run_process_server(command, env=env, ready_path=first, timeout=60) as base:
            port = int(base.rsplit(":", 1)[1])
            for path in URLS[framework].values():  # warm-up: every worker, every page
                python_load(
                    "127.0.0.1", port, 4 * WORKERS * THREADS, concurrency, 60, [(path, MARKER)]
                )
            for _ in range(rounds):
                for name, path in URLS[framework].items():
                    stats = python_load(
                        "127.0.0.1", port, requests, concurrency, 120, [(path, MARKER)]
                    )
                    if stats.errors:
                        raise SystemExit(f"{framework} {path}: {stats.errors} errors, e.g. "
                                         f"{stats.first_errors}")  # fmt: skip
                    rates[name].append(stats.rate)
    return rates


def table(framework: str, rates: dict[str, list[float]]) -> tuple[list[str], dict[str, float]]:
    medians = {name: statistics.median(r) for name, r in rates.items()}
    lines = [
        f"| {framework} page | requests/s (median) | PTL's requests/s / this one's |",
        "|---|---:|---:|",
    ]
    ratios = {name: medians["PTL"] / rate for name, rate in medians.items() if name != "PTL"}
    for name, rate in medians.items():
        ratio = f"{ratios[name]:.2f}x" if name in ratios else ""
        lines.append(f"| {name} | {rate:.0f} | {ratio} |")
    return lines, ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(URLS), help="one framework")
    parser.add_argument("--requests", type=int, default=1500, help="per URL per round (1500)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every URL (3)")
    parser.add_argument("--concurrency", type=int, default=8, help="client connections (8)")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args(argv)

    out: list[str] = []
    ok = True
    for framework in [args.only] if args.only else list(URLS):
        rates = measure(framework, args.requests, args.rounds, args.concurrency)
        lines, ratios = table(framework, rates)
        faster = all(ratio > 1 for ratio in ratios.values())
        ok &= faster
        verdict = "met" if faster else "NOT met"
        least = min(ratios, key=ratios.__getitem__)
        lines += [
            "",
            f"- {framework}: PTL's page served faster than each other's: **{verdict}** "
            f"(at least {ratios[least]:.2f}x the requests/s: {least})",
            "",
        ]
        print("\n".join(lines), flush=True)
        out += lines
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    setup = (
        f"gunicorn {WORKERS} workers x {THREADS} threads (gthread); Python client, "
        f"{args.concurrency} connections, {args.requests} requests per URL per round, "
        f"{args.rounds} rounds; Python {platform.python_version()}, {os.cpu_count()} CPUs "
        f"shared by server and client, load average {load}"
    )
    print(setup)
    if args.write:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        command = "python benchmarks/serve_pages.py --write"
        if (args.requests, args.rounds, args.concurrency) != (1500, 3, 8):
            command += f" --requests {args.requests} --rounds {args.rounds}"
            command += f" --concurrency {args.concurrency}"
        section = [
            SECTION, "",
            "`benchmarks/serve_pages.py`: the `articles` page of `end_to_end.py` served by",
            "gunicorn on 127.0.0.1, one URL per engine taking turns against one server (see",
            "the script's docstring).", "",
            f"Command (from the repository root), run {when}:", "",
            "```", f".venv/bin/{command}", "```", "",
            *out, f"- {setup}.",
        ]  # fmt: skip
        write_section(SECTION, section)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
