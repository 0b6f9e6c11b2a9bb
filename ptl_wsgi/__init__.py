"""ptl_wsgi: HTML templates that are Python, with escaping you cannot forget.

The core API is re-exported here; integrations live in ``ptl_wsgi.contrib``
and load only when imported, so rendering a template never pulls in Flask,
Django or werkzeug.  The compiler (and with it ``ast`` and ``tokenize``) loads
only when something must be compiled: ``compile_ptl`` and ``parse_ptl`` are
imported on first use, and templates in the bytecode cache never need them.
"""

from __future__ import annotations

from ptl_wsgi.html import (
    ACCELERATOR_STATUS,
    IMPLEMENTATION,
    H,
    TemplateIO,
    htmlescape,
    htmlformat,
    htmltext,
    stringify,
)
from ptl_wsgi.importer import install
from ptl_wsgi.loader import render_context

# Not ``typing.TYPE_CHECKING``: this module avoids importing what it does not need.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ptl_wsgi.compiler import compile_ptl, parse_ptl

__version__ = "0.1.0"

__all__ = [
    "ACCELERATOR_STATUS",
    "H",
    "IMPLEMENTATION",
    "TemplateIO",
    "__version__",
    "compile_ptl",
    "htmlescape",
    "htmlformat",
    "htmltext",
    "install",
    "parse_ptl",
    "render_context",
    "stringify",
]


def __getattr__(name: str) -> Any:
    """``compile_ptl`` and ``parse_ptl``, importing the compiler on first use (PEP 562)."""
    if name in ("compile_ptl", "parse_ptl"):
        from ptl_wsgi import compiler

        value = globals()[name] = getattr(compiler, name)  # later lookups skip this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
