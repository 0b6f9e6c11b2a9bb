"""The ``entries`` blueprint: one signature per page, and the streamed archive.

Its templates live in its own folder (``entries/templates/entries/``) and
import the app's layout and partials with relative imports.
"""

from __future__ import annotations

from collections.abc import Iterator

from flask import Blueprint, abort, render_template, stream_template

from .. import db

bp = Blueprint("entries", __name__, template_folder="templates")


@bp.get("/<int:entry_id>")
def show(entry_id: int) -> str:
    entry = db.get_entry(entry_id)
    if entry is None:
        abort(404)
    return render_template("entries/show.ptl", entry=entry)


@bp.get("/")
def archive() -> Iterator[str]:
    # Streamed: the archive template is a generator, sent one entry at a time.
    return stream_template("entries/archive.ptl", entries=db.all_entries())
