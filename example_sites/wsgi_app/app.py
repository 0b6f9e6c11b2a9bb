"""A publisher-based WSGI site: notes in SQLite, pages in PTL, and an XML-RPC endpoint.

Run it on its own::

    python example_sites/wsgi_app/app.py --port 8000

or under a WSGI server (``app`` is the application)::

    gunicorn --chdir example_sites/wsgi_app -w 2 --threads 4 app:app
    waitress-serve --listen 127.0.0.1:8000 --call app:make_app   # from this folder

The database lives in ``$PTL_WSGI_NOTES_DB`` (default ``notes.sqlite3`` next to
this file) and is created, with a first note, on first use.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ptl_wsgi.csp import NONCE
from ptl_wsgi.loader import Loader
from ptl_wsgi.publish import Publisher
from ptl_wsgi.wsgi import CSP

HERE = Path(__file__).resolve().parent
DEFAULT_DB = HERE / "notes.sqlite3"
#: The largest rowid SQLite stores (a signed 64-bit INTEGER).
MAX_ROW_ID = 2**63 - 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL DEFAULT (datetime('now'))
);
INSERT INTO notes (title, body)
    SELECT 'Welcome', 'This note was created with the database.

Everything you type is escaped: try <script>alert(1)</script>.'
    WHERE NOT EXISTS (SELECT 1 FROM notes);
"""


class NoteStore:
    """Notes in SQLite: a connection per call, so any thread (or process) may use it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._ready = False
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30)
        connection.row_factory = sqlite3.Row
        if not self._ready:
            with self._lock:
                if not self._ready:
                    # Several server processes may race here; the script is idempotent.
                    with connection:
                        connection.executescript(SCHEMA)
                    self._ready = True
        return connection

    def list(self, limit: int = 1000) -> list[dict[str, Any]]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM notes ORDER BY id DESC LIMIT ?", (limit,))
            return [dict(row) for row in rows]

    def get(self, note_id: int) -> dict[str, Any] | None:
        """The note *note_id*, or None; an id SQLite cannot hold (from a URL, XML-RPC) is none."""
        if type(note_id) is not int or not 0 < note_id <= MAX_ROW_ID:
            return None
        with self._connect() as db:
            row = db.execute("SELECT * FROM notes WHERE id = ?", (note_id,)).fetchone()
            return dict(row) if row else None

    def add(self, title: str, body: str = "") -> int:
        with self._connect() as db:
            cursor = db.execute("INSERT INTO notes (title, body) VALUES (?, ?)", (title, body))
            return int(cursor.lastrowid)


def make_app(db_path: str | os.PathLike[str] | None = None, debug: bool | None = None) -> CSP:
    """The site's WSGI application, under the strict Content-Security-Policy (styles by
    nonce too): every script and style the templates' literals write carries its nonce."""
    path = db_path or os.environ.get("PTL_WSGI_NOTES_DB") or DEFAULT_DB
    loader = Loader([HERE / "templates"], auto_reload=bool(debug))
    pages = loader.module("pages.ptl")
    publisher = Publisher(pages.Root(NoteStore(path)), loader=loader, debug=debug)
    return CSP(publisher, {"style-src": [NONCE]})


app = make_app()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--debug", action="store_true", help="tracebacks in error pages")
    args = parser.parse_args(argv)
    from werkzeug.serving import run_simple

    site = make_app(debug=args.debug) if args.debug else app
    run_simple(args.host, args.port, site, threaded=True)


if __name__ == "__main__":
    main()
