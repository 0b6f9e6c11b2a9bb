"""The guestbook's SQLite storage: one connection per app context."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from flask import Flask, current_app, g

#: The largest rowid SQLite stores (a signed 64-bit INTEGER).
MAX_ROW_ID = 2**63 - 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS entry (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    message TEXT NOT NULL,
    created TEXT NOT NULL
);
"""


def init_app(app: Flask) -> None:
    """Create the database file and table if need be; close connections after requests."""
    path = Path(app.config["DATABASE"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA)
    app.teardown_appcontext(_close)


def connection() -> sqlite3.Connection:
    """This app context's connection."""
    if "db" not in g:
        g.db = sqlite3.connect(current_app.config["DATABASE"])
        g.db.row_factory = sqlite3.Row
    return g.db


def _close(_exc: BaseException | None = None) -> None:
    db = g.pop("db", None)
    if db is not None:
        db.close()


def add_entry(name: str, message: str) -> int:
    """Save a signature; returns its id."""
    created = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with connection() as db:
        cursor = db.execute(
            "INSERT INTO entry (name, message, created) VALUES (?, ?, ?)",
            (name, message, created),
        )
    return int(cursor.lastrowid or 0)


def recent_entries(limit: int = 20) -> list[sqlite3.Row]:
    """The newest signatures first."""
    return connection().execute("SELECT * FROM entry ORDER BY id DESC LIMIT ?", (limit,)).fetchall()


def all_entries() -> list[sqlite3.Row]:
    """Every signature, oldest first."""
    return connection().execute("SELECT * FROM entry ORDER BY id").fetchall()


def get_entry(entry_id: int) -> Any:
    """One signature, or None; an id SQLite cannot hold (a URL's 20 digits) is none."""
    if not 0 < entry_id <= MAX_ROW_ID:
        return None
    return connection().execute("SELECT * FROM entry WHERE id = ?", (entry_id,)).fetchone()


def count_entries() -> int:
    """How many signatures there are."""
    return int(connection().execute("SELECT count(*) FROM entry").fetchone()[0])
