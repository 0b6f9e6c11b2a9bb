"""Serve the guestbook on its own: ``python example_sites/flask_app/app.py --port 5000``.

Also ``flask --app example_sites/flask_app/app.py run``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Run as a script, this folder is on sys.path but the package it belongs to is not.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask_app import create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The PTL guestbook on Flask.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--database", help="the SQLite file (default: guestbook.sqlite3 here)")
    parser.add_argument("--debug", action="store_true", help="debugger and template reload")
    args = parser.parse_args(argv)
    app = create_app({"DATABASE": args.database} if args.database else None)
    app.run(host=args.host, port=args.port, debug=args.debug, use_reloader=False)


if __name__ == "__main__":
    main()
