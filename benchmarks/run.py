#!/usr/bin/env python3
"""Run the benchmarks (``make bench`` calls this).

::

    .venv/bin/python benchmarks/run.py            # escaping, then templates (+ startup)
    .venv/bin/python benchmarks/run.py --quick    # the same with short loops, rough

It runs, one after the other and with this interpreter:

* ``benchmarks/escape.py``: ``htmlescape`` against markupsafe, ``html.escape``
  and Quixote;
* ``benchmarks/templates.py --startup``: template rendering against Jinja2,
  Mako, Django, Chameleon, Quixote PTL and hand-written Python, and a fresh
  process's first render;
* ``benchmarks/startup.py``: a fresh process importing ptl_wsgi and rendering
  a cached template, against ``python -c pass``, Jinja2 and Quixote, and the
  one-file CGI example per request (fails above 8 ms over ``python -c pass``).

The WSGI serving figures in ``benchmarks/RESULTS.md`` are not produced here:
they come from ``benchmarks/load_wsgi.py`` (servers and a load client fighting
for the same CPUs, a few minutes), run on its own.  Nothing here writes
RESULTS.md; ``escape.py --write`` and ``load_wsgi.py --write`` do.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(title: str, args: list[str]) -> int:
    print(f"\n== {title}: {' '.join(['python', *args])}\n", flush=True)
    started = time.perf_counter()
    status = subprocess.run([sys.executable, *args], cwd=ROOT).returncode
    print(f"\n({title}: {time.perf_counter() - started:.0f} s, exit status {status})", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short loops, for a rough check")
    args = parser.parse_args(argv)
    quick = ["--quick"] if args.quick else []

    failures = 0
    failures += run("Escaping", ["benchmarks/escape.py", *quick]) != 0
    failures += run("Templates", ["benchmarks/templates.py", "--startup", *quick]) != 0
    runs = ["--runs", "10"] if args.quick else []
    failures += run("Start-up", ["benchmarks/startup.py", *runs]) != 0
    print(
        "\n== WSGI serving\n\n"
        "Not run here. The figures in benchmarks/RESULTS.md (section 'WSGI serving') come from\n"
        "    .venv/bin/python benchmarks/load_wsgi.py --write\n"
        "which serves example_sites/wsgi_app under gunicorn and waitress on 127.0.0.1 and\n"
        "load-tests it (Python client, and wrk when installed); see that script's --help."
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
