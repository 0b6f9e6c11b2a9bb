"""Instructions per request of ``PTL(app)``'s glue: its hooks and the header policy.

A view that returns a short str, so that what is counted is the framework, the
request hooks, the header check and the CSP header, not a template: Flask's
WSGI application called directly, Quart's ASGI application on one event loop,
each with ``PTL_CSP`` off and on, and the same app without ``PTL(app)`` as the
floor.  Counted by callgrind (times on a shared machine move by tens of
percent); ``--tree`` measures another checkout (a ``git archive`` of the
commit before a change, its extension copied in) with this venv::

    .venv/bin/python benchmarks/glue_request.py [--tree DIR] [--calls N] [--only quart]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _results import instructions_per_call

HERE = Path(__file__).resolve().parent
ROWS = [(framework, mode) for framework in ("flask", "quart") for mode in ("bare", "ptl", "csp")]

CHILD = """
import asyncio, gc, sys
sys.path.insert(0, sys.argv[1])
framework, mode, calls = sys.argv[2], sys.argv[3], int(sys.argv[4])
if framework == "flask":
    from flask import Flask as App
    from ptl_wsgi.contrib.flask import PTL
    from werkzeug.test import EnvironBuilder
else:
    from quart import Quart as App
    from ptl_wsgi.contrib.quart import PTL
app = App(__name__)
app.config["PTL_CSP"] = mode == "csp"
if mode != "bare":
    PTL(app)

@app.get("/")
def index():
    return "hello"

if framework == "flask":
    environ = EnvironBuilder(path="/").get_environ()

    def request():
        started = []
        body = app(dict(environ), lambda status, headers, exc_info=None: started.append(status))
        sent = b"".join(body)
        body.close()
        return started[0], sent
else:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": "/", "raw_path": b"/",
             "query_string": b"", "root_path": "", "headers": [(b"host", b"localhost")],
             "client": ("127.0.0.1", 1), "server": ("localhost", 80), "extensions": {}}

    async def one():
        sent = []
        received = []
        done = asyncio.Event()

        async def receive():
            if received:  # the body was read: the client leaves once the response is sent
                await done.wait()  # (Quart 0.23 waits for that before it returns)
                return {"type": "http.disconnect"}
            received.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await app(dict(scope), receive, send)
        return f"{sent[0]['status']} OK", b"".join(m.get("body", b"") for m in sent[1:])

    loop = asyncio.new_event_loop()

    def request():
        return loop.run_until_complete(one())

assert request() == ("200 OK", b"hello"), request()  # a whole request, answered
gc.disable()
for _ in range(20):
    request()
for _ in range(calls):
    request()
"""


def count(tree: Path, framework: str, mode: str, calls: int) -> float:
    return instructions_per_call(["-c", CHILD, str(tree), framework, mode], calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="checkout to measure")
    parser.add_argument("--calls", type=int, default=300, help="requests per row")
    parser.add_argument("--only", choices=["flask", "quart"], help="one framework's rows")
    args = parser.parse_args(argv)
    print(f"| framework | app | instructions per request ({args.tree.name}) |")
    print("|---|---|---:|")
    for framework, mode in ROWS:
        if args.only and framework != args.only:
            continue
        label = {"bare": "without PTL(app)", "ptl": "PTL(app)", "csp": "PTL(app), PTL_CSP"}[mode]
        figure = count(args.tree, framework, mode, args.calls)
        print(f"| {framework} | {label} | {figure:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
