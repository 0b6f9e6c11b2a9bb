"""What recording templates costs a Django request: the test client against the WSGI handler.

tests/django_project's "/" (index.ptl: a page, a list, two rows and the layout, six
template calls) requested through Django's test client, where ``template_rendered`` has
listeners and the engine records every template call (``response.templates``), and
through Django's WSGI handler, where nothing listens.  The figures are callgrind's
instructions per request (see ``_results.instructions_per_call``); ``--tree`` measures
another checkout with this venv, e.g. the commit before a change::

    .venv/bin/python benchmarks/django_recording.py [--tree DIR] [--requests N] [--write]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from _results import instructions_per_call, write_section

HERE = Path(__file__).resolve().parent

CHILD = """
import os, sys
sys.path.insert(0, sys.argv[1])
os.chdir(sys.argv[1])
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.django_project.settings"
import django
django.setup()
from django.core.handlers.wsgi import WSGIHandler
from django.test import Client, RequestFactory
from django.test.utils import setup_test_environment

setup_test_environment()
mode, requests = sys.argv[2], int(sys.argv[3])
client, handler = Client(), WSGIHandler()
environ = RequestFactory()._base_environ(PATH_INFO="/", REQUEST_METHOD="GET")

def via_client():
    response = client.get("/")
    assert response.status_code == 200 and len(response.templates) == 10

def via_handler():
    body = b"".join(handler(dict(environ), lambda status, headers, exc_info=None: None))
    assert b"<li>a&amp;b</li>" in body

run = via_client if mode == "client" else via_handler
for _ in range(20):
    run()
for _ in range(requests):
    run()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--tree", default=str(HERE.parent), help="the checkout to measure")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--write", action="store_true", help="write benchmarks/RESULTS.md")
    args = parser.parse_args()
    tree = os.path.abspath(args.tree)
    figures = {
        mode: instructions_per_call(["-c", CHILD, tree, mode], args.requests)
        for mode in ("handler", "client")
    }
    lines = [
        "## Recording templates in a Django request",
        "",
        f"`{Path(sys.executable).name} benchmarks/django_recording.py --tree {tree}`: "
        "tests/django_project's `/`, instructions per request (callgrind).",
        "",
        "| path | instructions | x the handler |",
        "| --- | ---: | ---: |",
    ]
    for mode, label in (("handler", "WSGI handler"), ("client", "test client (recording)")):
        ratio = figures[mode] / figures["handler"]
        lines.append(f"| {label} | {figures[mode] / 1e6:.2f} M | {ratio:.2f} |")
    print("\n".join(lines))
    if args.write:
        write_section(lines[0], lines)


if __name__ == "__main__":
    main()
