#!/usr/bin/env python3
"""Load-test the example sites under gunicorn and waitress on 127.0.0.1.

::

    .venv/bin/python benchmarks/load_wsgi.py                  # every site, both servers
    .venv/bin/python benchmarks/load_wsgi.py --write          # ... and update RESULTS.md
    .venv/bin/python benchmarks/load_wsgi.py --site flask --server gunicorn --requests 2000

The sites (``--site``): ``wsgi`` is ``example_sites/wsgi_app`` (publisher + PTL
pages), ``flask`` the guestbook of ``example_sites/flask_app`` (served as
``flask_app:create_app()``) and ``django`` the notes site of
``example_sites/django_site`` (``ptlsite.wsgi:application``, ``DEBUG`` off).
Each gets a fresh SQLite database in a temporary folder, seeded with one
record whose text needs escaping, before the server starts. A bounded Python
client (threads, keep-alive connections, a fixed number of requests and a time
limit) checks every response; ``wrk``, when installed, adds a fixed-duration
throughput run. Every run counts errors: a failed connection, a status other
than 200 or a page without its marker.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "example_sites"
SITE = EXAMPLES / "wsgi_app"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "## Serving the example sites"
OLD_SECTIONS = ["## WSGI serving"]  # earlier headings of the same section
BIN = Path(sys.executable).parent

# Each page of the WSGI example and a piece of text it must contain.
PAGES = [
    ("/", b"Recent notes"),
    ("/notes/1/", b"&lt;script&gt;"),
    ("/notes/", b"All notes"),
    ("/about", b"About this request"),
]

FLASK_SEED = """\
from flask_app import create_app, db
app = create_app()
with app.app_context():
    db.add_entry("Ada <b>", "Hello <script>alert(1)</script> & goodbye")
"""

DJANGO_SEED = """\
import ptlsite
ptlsite.setup_db()
from notes.models import Note
Note.objects.create(title="First <script>", text="Shown back & escaped.")
"""


@dataclass(frozen=True)
class Site:
    """An example site: where it lives, how servers load it, what to check, how to seed it."""

    name: str
    title: str
    folder: Path  # the servers' working directory (on sys.path)
    app: str  # module:attribute for the servers
    factory: bool  # *app* names a factory to call (gunicorn ``m:f()``, waitress ``--call``)
    pages: list[tuple[str, bytes]]
    db_variable: str
    extra_env: dict[str, str] = field(default_factory=dict)
    seed: str | None = None  # Python run in *folder* with the environment, before serving

    def env(self, db_dir: str, tag: str = "") -> dict[str, str]:
        path = os.path.join(db_dir, f"{self.name}{tag}.sqlite3")
        return {self.db_variable: path, **self.extra_env}

    def prepare(self, env: dict[str, str]) -> None:
        """Create and seed the database (Django: run the migrations first)."""
        if self.seed is None:
            return
        subprocess.run(
            [sys.executable, "-c", self.seed], cwd=self.folder, env={**os.environ, **env},
            check=True, timeout=120,
        )  # fmt: skip


SITES = {
    "wsgi": Site(
        "wsgi", "WSGI example (`example_sites/wsgi_app`, publisher + PTL pages + SQLite)",
        SITE, "app:app", False, PAGES, "PTL_WSGI_NOTES_DB",
    ),
    "flask": Site(
        "flask", "Flask guestbook (`example_sites/flask_app`, `flask_app:create_app()`, SQLite)",
        EXAMPLES, "flask_app:create_app", True,
        [
            ("/", b"Latest signatures"),
            ("/entries/1", b"Hello &lt;script&gt;alert(1)&lt;/script&gt; &amp; goodbye"),
            ("/entries/", b"1 signature, oldest first"),
            ("/about", b"It holds 1 signature."),
        ],
        "FLASK_DATABASE", {"FLASK_SECRET_KEY": "load-test"}, FLASK_SEED,
    ),
    "django": Site(
        "django", "Django notes (`example_sites/django_site`, `ptlsite.wsgi:application`, "
        "SQLite, `DEBUG` off)",
        EXAMPLES / "django_site", "ptlsite.wsgi:application", False,
        [
            ("/", b"First &lt;script&gt;</a>"),
            ("/1/", b"<h1>First &lt;script&gt;</h1>"),
            ("/admin/login/", b"Django administration"),
        ],
        "PTLSITE_DB",
        # The site's own settings, even when the caller has others (pytest-django does).
        {"DJANGO_SETTINGS_MODULE": "ptlsite.settings", "PTLSITE_DEBUG": "0",
         "PTLSITE_HOSTS": "127.0.0.1"},
        DJANGO_SEED,
    ),
}  # fmt: skip

GUNICORN_WORKERS, GUNICORN_THREADS, WAITRESS_THREADS = 2, 4, 8


def server_command(
    name: str, site: str = "wsgi", workers: int = GUNICORN_WORKERS, threads: int | None = None
) -> list[str]:
    """The command serving *site* on port ``{port}`` (run from the site's folder)."""
    spec = SITES[site]
    if name == "gunicorn":
        app = spec.app + "()" if spec.factory else spec.app
        return [
            str(BIN / "gunicorn"), "--chdir", str(spec.folder), "--bind", "127.0.0.1:{port}",
            "--workers", str(workers), "--threads", str(threads or GUNICORN_THREADS),
            "--log-level", "warning", app,
        ]  # fmt: skip
    if name == "waitress":
        return [
            str(BIN / "waitress-serve"), "--listen=127.0.0.1:{port}",
            f"--threads={threads or WAITRESS_THREADS}", *(["--call"] if spec.factory else []),
            spec.app,
        ]  # fmt: skip
    raise ValueError(f"unknown server {name!r}")


def server_description(name: str) -> str:
    if name == "gunicorn":
        return f"gunicorn, {GUNICORN_WORKERS} workers x {GUNICORN_THREADS} threads (gthread)"
    return f"waitress, {WAITRESS_THREADS} threads"


@dataclass
class Stats:
    """What one load run saw."""

    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    first_errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def python_load(
    host: str,
    port: int,
    total: int,
    concurrency: int,
    time_limit: float = 120.0,
    pages: list[tuple[str, bytes]] = PAGES,
) -> Stats:
    """Send *total* GETs over *concurrency* keep-alive connections; check every response."""
    stats = Stats()
    lock = threading.Lock()
    counter = iter(range(total))
    deadline = time.monotonic() + time_limit

    def worker() -> None:
        connection = http.client.HTTPConnection(host, port, timeout=30)
        latencies: list[float] = []
        try:
            while time.monotonic() < deadline:
                with lock:
                    index = next(counter, None)
                if index is None:
                    break
                path, marker = pages[index % len(pages)]
                start = time.perf_counter()
                problem = None
                try:
                    connection.request("GET", path)
                    response = connection.getresponse()
                    body = response.read()
                    if response.status != 200 or marker not in body:
                        problem = f"{path}: {response.status} {body[:80]!r}"
                    if response.will_close:
                        connection.close()
                except (OSError, http.client.HTTPException) as error:
                    problem = f"{path}: {type(error).__name__}: {error}"
                    connection.close()
                latencies.append(time.perf_counter() - start)
                if problem:
                    with lock:
                        stats.errors += 1
                        if len(stats.first_errors) < 5:
                            stats.first_errors.append(problem)
        finally:
            connection.close()
            with lock:
                stats.latencies.extend(latencies)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(1.0, deadline - time.monotonic() + 35))
    stats.seconds = time.perf_counter() - began
    stats.requests = len(stats.latencies)
    if stats.requests < total:
        stats.errors += total - stats.requests
        stats.first_errors.append(f"only {stats.requests} of {total} requests within the limit")
    return stats


WRK_SCRIPT = """
local paths = {%s}
local i = 0
request = function()
  i = i %% #paths + 1
  return wrk.format("GET", paths[i])
end
"""


def wrk_load(
    base: str, seconds: int, connections: int, pages: list[tuple[str, bytes]] = PAGES
) -> dict[str, str] | None:
    """A wrk run over the same pages; None when wrk is not installed."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT % ", ".join(f'"{p}"' for p, _ in pages))
    try:
        result = subprocess.run(
            [wrk, "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script.name, base],
            capture_output=True, text=True, timeout=seconds + 60,
        )  # fmt: skip
    finally:
        os.unlink(script.name)
    out = result.stdout

    def grab(pattern: str, default: str = "0") -> str:
        found = re.search(pattern, out)
        return found.group(1) if found else default

    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    return {
        "requests": grab(r"(\d+) requests in"),
        "rate": grab(r"Requests/sec:\s+([\d.]+)"),
        "p50": grab(r"(?m)^\s+50%\s+(\S+)", "?"),
        "p99": grab(r"(?m)^\s+99%\s+(\S+)", "?"),
        "non2xx": grab(r"Non-2xx or 3xx responses: (\d+)"),
        "socket_errors": str(sum(map(int, socket_errors.groups()))) if socket_errors else "0",
        "raw": out,
    }


def serve(
    name: str,
    db_dir: str,
    site: str = "wsgi",
    workers: int = GUNICORN_WORKERS,
    threads: int | None = None,
):
    """Context manager: *site*, freshly seeded, under server *name*; yields its base URL."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from servers import run_process_server

    spec = SITES[site]
    env = spec.env(db_dir, f"-{name}")
    spec.prepare(env)
    command = server_command(name, site, workers, threads)
    return run_process_server(command, env=env, cwd=spec.folder, ready_path="/", timeout=60)


def run(args: argparse.Namespace) -> dict[str, list[str]]:
    """Load every site in ``args.sites`` under every server; its table rows, by site."""
    tables: dict[str, list[str]] = {}
    failed = False
    for site in args.sites:
        rows, site_failed = run_site(site, args)
        tables[site] = rows
        failed |= site_failed
    if failed:
        print("load_wsgi: there were errors", file=sys.stderr)
    return tables if not failed else {}


def run_site(site: str, args: argparse.Namespace) -> tuple[list[str], bool]:
    rows = []
    failed = False
    pages = SITES[site].pages
    for name in args.servers:
        with tempfile.TemporaryDirectory() as db_dir, serve(name, db_dir, site) as base:
            port = int(base.rsplit(":", 1)[1])
            warm = min(200, args.requests)
            python_load("127.0.0.1", port, warm, args.concurrency, pages=pages)
            stats = python_load("127.0.0.1", port, args.requests, args.concurrency, pages=pages)
            print(
                f"{site} / {name}: python client: {stats.requests} requests, "
                f"{stats.errors} errors, "
                f"{stats.rate:.0f} req/s, p50 {stats.percentile(50) * 1000:.1f} ms, "
                f"p99 {stats.percentile(99) * 1000:.1f} ms",
                flush=True,
            )
            for problem in stats.first_errors:
                print("   ", problem)
            failed |= stats.errors > 0
            rows.append(
                f"| {server_description(name)} | Python client, {args.concurrency} connections "
                f"| {stats.requests} | {stats.errors} | {stats.rate:.0f} "
                f"| {stats.percentile(50) * 1000:.1f} ms | {stats.percentile(99) * 1000:.1f} ms |"
            )
            wrk = (
                None
                if args.no_wrk
                else wrk_load(base, args.wrk_seconds, args.wrk_connections, pages)
            )
            if wrk is not None:
                errors = int(wrk["non2xx"]) + int(wrk["socket_errors"])
                print(
                    f"{site} / {name}: wrk: {wrk['requests']} requests, {errors} errors, "
                    f"{float(wrk['rate']):.0f} req/s, p50 {wrk['p50']}, p99 {wrk['p99']}",
                    flush=True,
                )
                failed |= errors > 0
                rows.append(
                    f"| {server_description(name)} | wrk, {args.wrk_connections} connections, "
                    f"{args.wrk_seconds}s | {wrk['requests']} | {errors} "
                    f"| {float(wrk['rate']):.0f} | {wrk['p50']} | {wrk['p99']} |"
                )
    return rows, failed


def write_section(tables: dict[str, list[str]], args: argparse.Namespace) -> None:
    """Replace the serving section of RESULTS.md, leaving the others alone."""
    command = "python benchmarks/load_wsgi.py --write"
    for option in ("site", "server"):
        if getattr(args, option) != "all":
            command += f" --{option} {getattr(args, option)}"
    if args.requests != DEFAULTS["requests"]:
        command += f" --requests {args.requests}"
    lines = [
        SECTION,
        "",
        f"`{command}`: each example site on 127.0.0.1 with a fresh SQLite database seeded "
        "with one record whose text needs escaping. "
        "Every response is checked (status 200 and a marker in the page); errors must be 0.",
        "",
        f"Machine: {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs "
        f"shared by server and client, Python {platform.python_version()}. "
        "Throughput here is bounded by those CPUs; compare servers within one run only.",
        "",
    ]
    for site, rows in tables.items():
        spec = SITES[site]
        lines += [
            f"### {spec.title}",
            "",
            f"GETs cycling over {', '.join(p for p, _ in spec.pages)}.",
            "",
            "| server | client | requests | errors | req/s | p50 | p99 |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
        ]
    section = "\n".join(lines)
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    headings = "|".join(re.escape(h) for h in [SECTION, *OLD_SECTIONS])
    pattern = re.compile(rf"^(?:{headings})\n.*?(?=^## |\Z)", re.M | re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text.rstrip("\n") + "\n")
    print(f"updated {SECTION!r} in {RESULTS}")


DEFAULTS = {"requests": 5000, "concurrency": 16}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", choices=[*SITES, "all"], default="all")
    parser.add_argument("--server", choices=["gunicorn", "waitress", "all"], default="all")
    parser.add_argument("--requests", type=int, default=DEFAULTS["requests"])
    parser.add_argument("--concurrency", type=int, default=DEFAULTS["concurrency"])
    parser.add_argument("--wrk-seconds", type=int, default=10)
    parser.add_argument("--wrk-connections", type=int, default=32)
    parser.add_argument("--no-wrk", action="store_true", help="only the Python client")
    parser.add_argument("--write", action="store_true", help=f"update {SECTION!r} in RESULTS.md")
    args = parser.parse_args(argv)
    args.servers = ["gunicorn", "waitress"] if args.server == "all" else [args.server]
    args.sites = list(SITES) if args.site == "all" else [args.site]
    tables = run(args)
    if not tables:
        return 1
    if args.write:
        write_section(tables, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
