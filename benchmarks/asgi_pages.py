#!/usr/bin/env python3
"""ASGI: the page benchmark through Starlette, PTLTemplates against Jinja2Templates.

::

    .venv/bin/python benchmarks/asgi_pages.py
    .venv/bin/python benchmarks/asgi_pages.py --rounds 41 --write
    .venv/bin/python benchmarks/asgi_pages.py --quick

The page is ``articles`` of ``benchmarks/templates.py`` (a layout, a header and
100 articles through a sub-template), the files ``end_to_end.py`` writes, checked
identical before timing.  Timed, interleaved rounds, medians:

* the *template part*: ``templates.TemplateResponse(request, name, context)``,
  the render and the response object, ``PTLTemplates`` against Starlette's
  ``Jinja2Templates``;
* the *whole request*: the Starlette application called as a server calls it
  (one event loop, a fresh scope per request, the body collected), with async
  endpoints;
* the *middleware*: the PTL request again under ``CSP(Middleware(app))`` of
  ``ptl_wsgi.asgi``, a nonce per request and every header checked.

Targets (the script exits 1 on a miss): the template part at most ``0.2x``
Jinja2's, the whole request faster than Jinja2's (the 75th percentile of the
per-round ratios below 1), and the middleware's whole request still faster than
Jinja2's without it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTION = "## ASGI: Starlette, PTLTemplates and Jinja2Templates"
TEMPLATE_TARGET = 0.2
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _results import interleaved, write_section  # noqa: E402
from end_to_end import PTL_NAME, TITLE, normalise, write_templates  # noqa: E402
from templates import ITEMS  # noqa: E402

CONTEXT = {"items": ITEMS, "title": TITLE}
GUARDED = "PTL, CSP(Middleware(app))"
MARKER = b"<h1>Articles</h1>"


def scope_for(path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


def asgi_caller(app: Any, path: str, loop: asyncio.AbstractEventLoop) -> Callable[[], bytes]:
    """A call of the ASGI *app* for GET *path*, as a server makes it; checks the response."""

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    def call() -> bytes:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        loop.run_until_complete(app(scope_for(path), receive, send))
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        if sent[0]["status"] != 200 or MARKER not in body:
            raise SystemExit(f"GET {path}: unexpected response {body[:200]!r}")
        return body

    return call


def candidates(folder: Path) -> dict[str, dict[str, Callable[[], Any]]]:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.routing import Route
    from starlette.templating import Jinja2Templates

    from ptl_wsgi.asgi import CSP, Middleware
    from ptl_wsgi.contrib.starlette import PTLTemplates

    ptl = PTLTemplates(directory=folder / "ptl")
    jinja = Jinja2Templates(directory=folder / "jinja")

    async def ptl_page(request: Request) -> Any:
        return ptl.TemplateResponse(request, PTL_NAME, dict(CONTEXT))

    async def jinja_page(request: Request) -> Any:
        return jinja.TemplateResponse(request, "articles.html", dict(CONTEXT))

    app = Starlette(routes=[Route("/ptl", ptl_page), Route("/jinja", jinja_page)])
    guarded = CSP(Middleware(app))
    loop = asyncio.new_event_loop()
    request = Request(scope_for("/"))
    return {
        "template part": {
            "PTL": lambda: ptl.TemplateResponse(request, PTL_NAME, dict(CONTEXT)).body,
            "Jinja2": lambda: jinja.TemplateResponse(request, "articles.html", dict(CONTEXT)).body,
        },
        "whole request": {
            "PTL": asgi_caller(app, "/ptl", loop),
            "Jinja2": asgi_caller(app, "/jinja", loop),
            GUARDED: asgi_caller(guarded, "/ptl", loop),
        },
    }


def check_same_page(parts: dict[str, dict[str, Callable[[], Any]]]) -> None:
    for part, calls in parts.items():
        outputs = {name: normalise(call().decode()) for name, call in calls.items()}
        for name, output in outputs.items():
            if output != outputs["PTL"]:
                raise SystemExit(f"{part}: {name} renders another page than PTL")


def run(rounds: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_templates(folder)
        parts = candidates(folder)
        check_same_page(parts)
        result: dict[str, Any] = {}
        for part, calls in parts.items():
            times = interleaved(calls, rounds, seconds)
            against = {
                name: sorted(t / j for t, j in zip(times[name], times["Jinja2"], strict=True))
                for name in calls
                if name != "Jinja2"
            }
            result[part] = {
                "medians": {name: statistics.median(t) for name, t in times.items()},
                "ratio": {name: statistics.median(r) for name, r in against.items()},
                "p75": {name: r[(len(r) * 3) // 4] for name, r in against.items()},
            }
            if GUARDED in times:
                pairs = zip(times[GUARDED], times["PTL"], strict=True)
                result["middleware"] = statistics.median(g / p for g, p in pairs)
        return result


def verdicts(result: dict[str, Any]) -> list[tuple[str, bool, str]]:
    template = result["template part"]["ratio"]["PTL"]
    whole = result["whole request"]
    rows = [
        (
            f"starlette: template part <= {TEMPLATE_TARGET}x Jinja2Templates",
            template <= TEMPLATE_TARGET,
            f"{template:.3f}x",
        )
    ]
    for name in ("PTL", GUARDED):
        ratio, p75 = whole["ratio"][name], whole["p75"][name]
        rows.append(
            (
                f"starlette: whole request ({name}) faster than with Jinja2Templates",
                p75 < 1,
                f"{ratio:.3f}x (p75 {p75:.3f}x)",
            )
        )
    return rows


def table(result: dict[str, Any]) -> list[str]:
    lines = [
        "| starlette | candidate | us per call | / Jinja2 (median of rounds) | p75 |",
        "|---|---|---:|---:|---:|",
    ]
    for part in ("template part", "whole request"):
        data = result[part]
        for name, seconds in data["medians"].items():
            ratio = f"{data['ratio'][name]:.3f}" if name in data["ratio"] else ""
            p75 = f"{data['p75'][name]:.3f}" if name in data["p75"] else ""
            lines.append(f"| {part} | {name} | {seconds * 1e6:.1f} | {ratio} | {p75} |")
    return lines


def versions() -> str:
    from importlib.metadata import version

    parts = [f"{p} {version(p)}" for p in ("starlette", "jinja2")]
    parts.append(f"Python {platform.python_version()} on {platform.system()} {platform.machine()}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    parts.append(f"{os.cpu_count()} CPUs, load average {load}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds (default 21)")
    parser.add_argument(
        "--seconds", type=float, default=0.1, help="time per candidate per round (default 0.1)"
    )
    parser.add_argument("--quick", action="store_true", help="5 rounds of 0.02 s: a rough check")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 5, 0.02
    result = run(args.rounds, args.seconds)
    rows = verdicts(result)
    lines = [*table(result), ""]
    for what, met, figure in rows:
        lines.append(f"- {what}: **{'met' if met else 'NOT met'}** ({figure})")
    overhead = result["middleware"]
    lines.append(f"- the middleware's whole PTL request / the bare one's: {overhead:.2f}x")
    lines.append(f"- {versions()}; {args.rounds} rounds of {args.seconds:g} s per candidate.")
    print("\n".join(lines))
    if args.write:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        command = "python benchmarks/asgi_pages.py --write"
        if (args.rounds, args.seconds) != (21, 0.1):
            command += f" --rounds {args.rounds} --seconds {args.seconds}"
        write_section(
            SECTION,
            [
                SECTION,
                "",
                "`benchmarks/asgi_pages.py`: the `articles` page (layout + 100 articles)",
                "through Starlette: `TemplateResponse` alone, and the whole request (the",
                "ASGI app called directly, async endpoints), PTL's under `CSP(Middleware(app))`",
                "too; interleaved rounds, medians (see the script's docstring).",
                "",
                f"Command (from the repository root), run {when}:",
                "",
                "```",
                f".venv/bin/{command}",
                "```",
                "",
                *lines,
            ],
        )
    return 0 if all(met for _, met, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
