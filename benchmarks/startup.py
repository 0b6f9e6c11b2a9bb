#!/usr/bin/env python3
"""Start-up cost: a fresh process that imports a template engine and renders one cached template.

::

    .venv/bin/python benchmarks/startup.py               # 40 interleaved rounds
    .venv/bin/python benchmarks/startup.py --runs 100    # steadier medians
    .venv/bin/python benchmarks/startup.py --write       # ... and update RESULTS.md

Every candidate is a whole process (``python -c CODE``), timed from the
parent, so interpreter start-up, ``site`` and the engine's imports all count;
the figure that matters is the time over ``python -c pass``.  Templates live
in files and are loaded the way an application loads them, each engine from
its own cache, filled by an untimed warm-up run:

* ptl_wsgi: ``Loader([folder]).render("hello.ptl", ...)`` (what the Flask,
  Django and CGI integrations use) and, separately, ``install()`` + ``import``;
  both read ptl_wsgi's bytecode cache;
* Jinja2: ``FileSystemLoader`` with a ``FileSystemBytecodeCache``;
* Quixote 3.8 PTL: its import hook (``quixote.ptl.install``), which caches
  compiled templates as ordinary ``.pyc`` files.

The one-file CGI example (``example_sites/cgi/hello.cgi``) is run as a web
server would run it: executed through its ``#!`` line, with a CGI/1.1
environment, once precompiled (``ptl-wsgi compile``) and once as deployed
without that step, compiled on every request.

The same ptl_wsgi render also runs in a bare virtual environment (made here,
no packages, no ``.pth`` files; ptl_wsgi on ``PYTHONPATH``), against that
environment's ``python -c pass``: this checkout's venv runs an editable
install's finder at every start-up, which imports ``re``, ``enum``, ``pathlib``
and more before any candidate starts, so a regular install pays for those
modules where ptl_wsgi imports them.

Rounds are interleaved (every candidate once per round, in turn), so load from
other jobs on a shared machine hits all of them alike; the table shows medians.
Exits with status 1 when a ptl_wsgi figure is more than ``--target`` ms (8)
over its ``python -c pass``.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _results import write_section  # the script's own folder is sys.path[0]

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Start-up"
CGI_SCRIPT = ROOT / "example_sites" / "cgi" / "hello.cgi"
#: Where the timed processes import ptl_wsgi from (``--ptl-wsgi``: another checkout).
PTL_WSGI_ROOT = ROOT
BIN = str(Path(sys.executable).parent)

#: Modules whose presence after the render is reported (imported, so paid for).
HEAVY = ("ptl_wsgi.compiler", "ast", "tokenize", "inspect", "typing", "werkzeug", "flask", "django")

PTL_TEMPLATE = 'def render [html] (name):\n    "<p>Hello %s!</p>" % name\n'
JINJA_TEMPLATE = "<p>Hello {{ name }}!</p>"
QUIXOTE_TEMPLATE = (
    "from quixote.ptl import ptl_html\n\n\n"
    '@ptl_html\ndef hello(name):\n    F"<p>Hello {name}!</p>"\n'
)
EXPECTED = "<p>Hello &lt;x&gt;!</p>"
# Issue #27: values in a URL, a query, an onclick argument and a script (str and int).
LINKS_TEMPLATE = (
    "def render [html] (name, n):\n"
    '    f\'<a href="{name}">x</a><a href="/tags?t={name}&amp;n={n}">t</a>\'\n'
    '    f"<button onclick=\\"go(\'{name}\', {n})\\">b</button>"\n'
    '    f"<script>var s = {name};</script>"\n'
)
LINKS_EXPECTED = '<a href="/a%20b">x</a><a href="/tags?t=%2Fa%20b&amp;n=3">t</a>'

PASS = "python -c pass"
LINKS = "ptl_wsgi (Loader), URL/JS values"
BARE_LINKS = "ptl_wsgi (Loader), URL/JS values, bare venv"
# Issue #27: a template with URL and JS values at most this over `python -c pass` (ms).
LINKS_TARGET = 3.0
CODE = {
    PASS: "pass",
    "ptl_wsgi (Loader)": (
        "from ptl_wsgi.loader import Loader\n"
        "print(Loader([{folder!r}]).render('hello.ptl', {{'name': '<x>'}}))"
    ),
    LINKS: (
        "from ptl_wsgi.loader import Loader\n"
        "print(Loader([{folder!r}]).render('links.ptl', {{'name': '/a b', 'n': 3}}))"
    ),
    "ptl_wsgi (import hook)": (
        "import ptl_wsgi\nptl_wsgi.install()\nimport sys\nsys.path.insert(0, {folder!r})\n"
        "import hello\nprint(hello.render('<x>'))"
    ),
    "Jinja2": (
        "import jinja2\nenv = jinja2.Environment(loader=jinja2.FileSystemLoader({folder!r}),\n"
        "    autoescape=True, bytecode_cache=jinja2.FileSystemBytecodeCache({jinja_cache!r}))\n"
        "print(env.get_template('hello.html').render(name='<x>'))"
    ),
    "Quixote 3.8 PTL": (
        "import quixote.ptl.install\nimport sys\nsys.path.insert(0, {folder!r})\n"
        "import qx_hello\nprint(qx_hello.hello('<x>'))"
    ),
}
BARE_PASS = "python -c pass, bare venv"
BARE_LOADER = "ptl_wsgi (Loader), bare venv"
# The candidates held to the target.
TARGETED = ("ptl_wsgi (Loader)", "ptl_wsgi (import hook)", BARE_LOADER)
LINKS_TARGETED = (LINKS, BARE_LINKS)
CGI_CACHED = "hello.cgi, precompiled (per request)"
CGI_COMPILED = "hello.cgi, compiled every request"


@dataclass
class Candidate:
    """One process to time: its command, environment and what it must print."""

    name: str
    command: list[str]
    env: dict[str, str]
    expect: str
    # The same work in a ``python -c``, printing the HEAVY modules loaded to stderr.
    modules_command: list[str]
    # A scratch directory, not the caller's: ``python -c`` puts the working
    # directory first on sys.path, and a checkout there would shadow PYTHONPATH.
    cwd: Path
    baseline: str = PASS  # the candidate whose time this one's is compared with


def base_env() -> dict[str, str]:
    """This environment, writing bytecode caches, with the ptl_wsgi under test first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(PTL_WSGI_ROOT)
    return env


def cgi_env() -> dict[str, str]:
    """A CGI/1.1 environment as a web server builds it (see tests/integrations/test_cgiapp.py)."""
    return {
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(PTL_WSGI_ROOT),
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_SOFTWARE": "benchmarks/startup.py",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8080",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "/cgi-bin/hello.cgi",
        "PATH_INFO": "",
        "QUERY_STRING": "name=%3Cx%3E",
    }


def modules_epilogue() -> str:
    return (
        "\nimport sys as _sys\n"
        f"print(','.join(m for m in {HEAVY!r} if m in _sys.modules) or '-', file=_sys.stderr)"
    )


def candidates(tmp: Path) -> list[Candidate]:
    folder = tmp / "templates"
    folder.mkdir()
    (folder / "hello.ptl").write_text(PTL_TEMPLATE)
    (folder / "links.ptl").write_text(LINKS_TEMPLATE)
    (folder / "hello.html").write_text(JINJA_TEMPLATE)
    (folder / "qx_hello.ptl").write_text(QUIXOTE_TEMPLATE)
    jinja_cache = tmp / "jinja-cache"
    jinja_cache.mkdir()
    result = []
    for name, template in CODE.items():
        code = template.format(folder=str(folder), jinja_cache=str(jinja_cache))
        expect = {PASS: "", LINKS: LINKS_EXPECTED}.get(name, EXPECTED)
        command = [sys.executable, "-c", code]
        modules = [sys.executable, "-c", code + modules_epilogue()]
        result.append(Candidate(name, command, base_env(), expect, modules, tmp))

    bare = tmp / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    bare_python = str(bare / "bin" / "python")
    bare_codes = (
        (BARE_PASS, "pass"),
        (BARE_LOADER, CODE["ptl_wsgi (Loader)"]),
        (BARE_LINKS, CODE[LINKS]),
    )
    for name, code in bare_codes:
        code = code.format(folder=str(folder))
        expect = {BARE_PASS: "", BARE_LINKS: LINKS_EXPECTED}.get(name, EXPECTED)
        command = [bare_python, "-c", code]
        modules = [bare_python, "-c", code + modules_epilogue()]
        result.append(Candidate(name, command, base_env(), expect, modules, tmp, BARE_PASS))

    # Two copies of the script: one precompiled, one not (python -m ptl_wsgi.cgiapp
    # reads a script's cache but never writes it).
    for name, precompiled in ((CGI_CACHED, True), (CGI_COMPILED, False)):
        cgi_bin = tmp / ("cgi-cached" if precompiled else "cgi-compiled")
        cgi_bin.mkdir()
        script = cgi_bin / "hello.cgi"
        shutil.copy(CGI_SCRIPT, script)
        script.chmod(0o755)
        if precompiled:
            compile_command = [sys.executable, "-m", "ptl_wsgi", "compile", "-q", str(script)]
            subprocess.run(compile_command, env=base_env(), cwd=tmp, check=True)
        env = cgi_env()
        # What the #! line runs (python -m ptl_wsgi.cgiapp SCRIPT), then the module check.
        check = (
            "import sys\nfrom ptl_wsgi.cgiapp import main\nmain([sys.argv[1]])" + modules_epilogue()
        )
        modules = [sys.executable, "-c", check, str(script)]
        result.append(Candidate(name, [str(script)], env, "Hello, &lt;x&gt;!", modules, tmp))
    return result


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(candidate: Candidate) -> tuple[float, float, str]:
    """Wall and CPU seconds the process took, and its output (checked against what it must print).

    CPU is user + system time of the child (getrusage of waited-for children, whose
    sum grows by exactly this child's, as processes run one at a time): unlike wall
    time it leaves out waiting for a CPU that another job on the machine holds.
    """
    cpu_before = _children_cpu()
    started = time.perf_counter()
    result = subprocess.run(
        candidate.command,
        env=candidate.env,
        cwd=candidate.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    if result.returncode != 0 or candidate.expect not in result.stdout:
        raise SystemExit(f"{candidate.name} failed:\n{result.stdout}\n{result.stderr}")
    return elapsed, cpu, result.stdout


def heavy_modules(candidate: Candidate) -> str:
    """The HEAVY modules loaded once the work is done (one extra, untimed run)."""
    result = subprocess.run(
        candidate.modules_command,
        env=candidate.env,
        cwd=candidate.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = result.stderr.strip().splitlines()
    return lines[-1] if result.returncode == 0 and lines else "?"


Medians = dict[str, float]


def measure(runs: int) -> tuple[Medians, Medians, dict[str, str], dict[str, str]]:
    """Median wall and CPU seconds per candidate over *runs* interleaved rounds,
    heavy modules, baselines."""
    with tempfile.TemporaryDirectory() as tmp:
        cands = candidates(Path(tmp))
        for candidate in cands:  # warm-up: fills every cache, checks every output
            run_once(candidate)
            run_once(candidate)
        if not any(Path(tmp, "cgi-cached", "__pycache__").glob("hello.cgi.*ptl_wsgi*.pyc")):
            raise SystemExit("ptl-wsgi compile wrote no bytecode cache for the CGI script")
        times: dict[str, list[float]] = {c.name: [] for c in cands}
        cpus: dict[str, list[float]] = {c.name: [] for c in cands}
        for _ in range(runs):
            for candidate in cands:
                wall, cpu, _ = run_once(candidate)
                times[candidate.name].append(wall)
                cpus[candidate.name].append(cpu)
        heavy = {c.name: heavy_modules(c) for c in cands}
    baselines = {c.name: c.baseline for c in cands}
    wall_medians = {name: statistics.median(t) for name, t in times.items()}
    cpu_medians = {name: statistics.median(t) for name, t in cpus.items()}
    return wall_medians, cpu_medians, heavy, baselines


def versions() -> str:
    from importlib.metadata import version

    sys.path.insert(0, str(PTL_WSGI_ROOT))  # the ptl_wsgi that the timed processes use
    import ptl_wsgi

    parts = [
        f"ptl_wsgi {ptl_wsgi.__version__} (htmltext twin: {ptl_wsgi.IMPLEMENTATION})",
        f"Jinja2 {version('jinja2')}",
        f"Quixote {version('quixote')}",
        f"werkzeug {version('werkzeug')}",
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}",
        f"{os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}",
    ]
    return "; ".join(parts)


def table(
    medians: Medians,
    cpu: Medians,
    heavy: dict[str, str],
    over: dict[str, float],
    cpu_over: dict[str, float],
) -> list[str]:
    lines = [
        "| process | wall ms | wall ms over its `python -c pass` | CPU ms | CPU ms over "
        "its `python -c pass` | heavy modules loaded |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, seconds in medians.items():
        extra = f"{over[name]:.1f}" if name in over else ""
        cpu_extra = f"{cpu_over[name]:.1f}" if name in cpu_over else ""
        lines.append(
            f"| {name} | {seconds * 1e3:.1f} | {extra} | {cpu[name] * 1e3:.1f} | {cpu_extra} "
            f"| {heavy[name]} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="interleaved rounds (default 40)")
    parser.add_argument(
        "--target", type=float, default=8.0, help="ms over `python -c pass` allowed (default 8)"
    )
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    parser.add_argument(
        "--ptl-wsgi",
        type=Path,
        metavar="DIR",
        help="time the ptl_wsgi of another checkout (C extension built there) instead of this one",
    )
    args = parser.parse_args()
    if args.ptl_wsgi is not None:
        if args.write:
            parser.error("--write records this checkout only")
        global PTL_WSGI_ROOT
        PTL_WSGI_ROOT = args.ptl_wsgi.resolve()

    medians, cpu, heavy, baselines = measure(args.runs)
    over = {
        name: (seconds - medians[baselines[name]]) * 1e3
        for name, seconds in medians.items()
        if baselines[name] != name
    }
    cpu_over = {
        name: (seconds - cpu[baselines[name]]) * 1e3
        for name, seconds in cpu.items()
        if baselines[name] != name
    }
    worst_name = max(TARGETED, key=over.__getitem__)
    worst = over[worst_name]
    met = worst <= args.target
    lines = table(medians, cpu, heavy, over, cpu_over)
    print("\n".join(lines))
    verdict = "met" if met else "NOT met"
    summary = (
        f"Target: ptl_wsgi at most {args.target:g} ms (wall) over `python -c pass`: "
        f"**{verdict}** (at worst {worst:.1f} ms: {worst_name}; "
        f"CPU at worst {max(cpu_over[n] for n in TARGETED):.1f} ms)."
    )
    links_name = max(LINKS_TARGETED, key=over.__getitem__)
    links_met = over[links_name] <= LINKS_TARGET
    links_summary = (
        f"Target: a template with URL and JS values at most {LINKS_TARGET:g} ms (wall) over "
        f"`python -c pass`: **{'met' if links_met else 'NOT met'}** (at worst "
        f"{over[links_name]:.1f} ms: {links_name}; CPU at worst "
        f"{max(cpu_over[n] for n in LINKS_TARGETED):.1f} ms)."
    )
    print(f"\n{summary}\n{links_summary}\n{versions()}")
    if args.write:
        command = "python benchmarks/startup.py --write"
        if args.runs != 40:
            command += f" --runs {args.runs}"
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        section = [
            SECTION,
            "",
            "`benchmarks/startup.py`: fresh processes, each importing an engine and rendering one",
            "template from that engine's cache (see the script's docstring); median of",
            f"{args.runs} interleaved rounds, timed from the parent process.",
            "",
            f"Command (from the repository root), run {when}:",
            "",
            "```",
            f".venv/bin/{command}",
            "```",
            "",
            *lines,
            "",
            f"- {versions()}.",
            f"- {summary}",
            f"- {links_summary}",
            f"- Heavy modules loaded: which of {', '.join(HEAVY)}",
            "  are in `sys.modules` after the render (one more run of the same code).",
        ]
        write_section(SECTION, section)
    return 0 if met and links_met else 1


if __name__ == "__main__":
    sys.exit(main())
