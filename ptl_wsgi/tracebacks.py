"""Where in a template an error happened: the innermost ``.ptl`` frame of a traceback.

Compiled templates keep their ``.ptl`` filename and line numbers, so the
template line to report is that of the innermost frame running a ``.ptl``
file; the frames below it are ptl_wsgi's or the user's Python.  Used by the
command line (``file:line:col:`` messages) and Django's debug page.
"""

from __future__ import annotations

import traceback
from types import TracebackType

__all__ = ["template_frame"]

_SUFFIX = ".ptl"


def template_frame(
    tb: TracebackType | None, filename: str | None = None
) -> traceback.FrameSummary | None:
    """The innermost frame of *tb* running a ``.ptl`` file, or the file *filename*
    (a template without one, such as ``"<string>"``); None if there is none."""
    found = None
    for frame in traceback.extract_tb(tb):
        if frame.filename.endswith(_SUFFIX) or frame.filename == filename:
            found = frame
    return found
