"""Where in a template an error happened, and tracebacks without ptl_wsgi's own frames.

Compiled templates keep their ``.ptl`` filename and line numbers, so the
template line to report is that of the innermost frame running a ``.ptl``
file; the frames below it are ptl_wsgi's or the user's Python.  Used by the
command line (``file:line:col:`` messages) and Django's debug page.
"""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import ParamSpec, TypeVar

__all__ = ["entry_point", "template_frame", "without_internal_frames"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

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


# -- runtime tracebacks without ptl_wsgi's own frames ----------------------------------
#
# An exception raised in a template passes through the loader (and an integration) on its
# way to the application's code.  Those frames say nothing about the error, so each public
# entry point (Loader.render, Template.render, the Flask and Django renders) re-raises it
# with them cut out, as Jinja2 rewrites its tracebacks; the entry point's own frame, where
# the re-raise happens, stays in the traceback, marked ``__traceback_hide__`` (and pytest's
# ``__tracebackhide__``) so that Werkzeug's debugger, Django's debug page and pytest hide it.

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _internal(tb: TracebackType) -> bool:
    filename = tb.tb_frame.f_code.co_filename
    return filename.startswith(_PACKAGE) and not filename.endswith(_SUFFIX)


def without_internal_frames(exc: BaseException) -> BaseException:
    """*exc*, its traceback rebuilt without ptl_wsgi's frames (a template's stay).

    The innermost frame stays whoever's it is: there the exception was raised.
    Returns *exc* itself, for ``raise without_internal_frames(exc)``.  With
    ``PTL_WSGI_FULL_TRACEBACKS=1`` in the environment (debugging ptl_wsgi itself),
    the traceback is left whole.
    """
    if os.environ.get("PTL_WSGI_FULL_TRACEBACKS", "") not in ("", "0"):
        return exc
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    kept = [tb for tb in entries[:-1] if not _internal(tb)] + entries[-1:]
    if len(kept) == len(entries):
        return exc
    rebuilt = None
    for tb in reversed(kept):
        rebuilt = TracebackType(rebuilt, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    return exc.with_traceback(rebuilt)


def entry_point(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Make *function* a public entry point into templates: an exception leaves it
    without ptl_wsgi's frames (:func:`without_internal_frames`), and debuggers hide the
    one frame of the entry point itself."""

    @functools.wraps(function)
    def entry(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        __traceback_hide__ = __tracebackhide__ = True
        try:
            return function(*args, **kwargs)
        except Exception as exc:
            raise without_internal_frames(exc)  # noqa: B904 (the same exception)

    return entry
