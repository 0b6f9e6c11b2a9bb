"""ptl_wsgi: HTML templates that are Python, with escaping you cannot forget.

The core API is re-exported here; integrations live in ``ptl_wsgi.contrib``
and load only when imported, so rendering a template never pulls in Flask,
Django or werkzeug.
"""

from __future__ import annotations

from ptl_wsgi.compiler import compile_ptl, parse_ptl
from ptl_wsgi.html import (
    ACCELERATOR_STATUS,
    IMPLEMENTATION,
    TemplateIO,
    htmlescape,
    htmltext,
    stringify,
)
from ptl_wsgi.importer import install
from ptl_wsgi.loader import render_context

__version__ = "0.1.0"

__all__ = [
    "ACCELERATOR_STATUS",
    "IMPLEMENTATION",
    "TemplateIO",
    "__version__",
    "compile_ptl",
    "htmlescape",
    "htmltext",
    "install",
    "parse_ptl",
    "render_context",
    "stringify",
]
