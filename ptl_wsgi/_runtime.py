"""What compiled templates need at run time, kept apart from the compiler.

Every compiled ``.ptl`` module imports its template markers from here, so a
module loaded from the bytecode cache never imports :mod:`ptl_wsgi.compiler`
(and with it ``ast`` and ``tokenize``).  This module must stay cheap to import:
the standard library's already-loaded core only.
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: importing typing would cost more than this whole module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["COMPILER_VERSION", "mark_html_template", "mark_plain_template"]

#: Part of every bytecode cache file name: bump it whenever generated code changes.
COMPILER_VERSION = "20"


def mark_html_template(function: _F) -> _F:
    """Mark *function* as an ``[html]`` template (the compiler applies this to every one)."""
    function.__ptl_template__ = "html"  # type: ignore[attr-defined]
    return function


def mark_plain_template(function: _F) -> _F:
    """Mark *function* as a ``[plain]`` template (the compiler applies this to every one)."""
    function.__ptl_template__ = "plain"  # type: ignore[attr-defined]
    return function
