"""ptl_wsgi: HTML templates that are Python, with escaping you cannot forget.

The core API is re-exported here; integrations live in ``ptl_wsgi.contrib``
and load only when imported, so rendering a template never pulls in Flask,
Django or werkzeug.  The compiler (and with it ``ast`` and ``tokenize``) loads
only when something must be compiled: ``compile_ptl`` and ``parse_ptl`` are
imported on first use, and templates in the bytecode cache never need them.
"""

from __future__ import annotations

import sys

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
    import importlib.abc
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

    from ptl_wsgi.compiler import compile_ptl, parse_ptl

    _Loader = importlib.abc.Loader
else:
    _Loader = object

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


# -- modules that moved: their old names still import, deprecated -------------------------
#
# Users write these names where no code of theirs runs (coverage.py's ``plugins``, Babel's
# mapping files, Pygments' and Babel's entry points of an older install) and in imports.
# The old name gives a module that reads every attribute from the new one, after a
# DeprecationWarning; nothing is left at the old path.

# Old module name -> where it lives now (and, after it, modules whose names the old one
# re-exported).  Removed in 0.3.
_MOVED_MODULES: dict[str, tuple[str, ...]] = {
    "ptl_wsgi.convert": ("ptl_wsgi.tools.from_quixote",),
    "ptl_wsgi.to_py": ("ptl_wsgi.tools.to_py",),
    "ptl_wsgi.lint": ("ptl_wsgi.tools.lint",),
    "ptl_wsgi.typecheck": ("ptl_wsgi.tools.typecheck",),
    "ptl_wsgi.coverage": ("ptl_wsgi.tools.coverage",),
    "ptl_wsgi.babel_extract": ("ptl_wsgi.tools.babel_extract",),
    "ptl_wsgi.pygments_lexer": ("ptl_wsgi.tools.pygments_lexer",),
    "ptl_wsgi.safety": ("ptl_wsgi.beyond_escaping", "ptl_wsgi.csp"),
    "ptl_wsgi.templates": ("ptl_wsgi.py_templates",),
    "ptl_wsgi.output": ("ptl_wsgi.output_policy",),
    "ptl_wsgi._helpers": ("ptl_wsgi._quixote_helpers",),
    "ptl_wsgi._iterate": ("ptl_wsgi._iterate_in_context",),
}


class _MovedModuleFinder(_Loader):
    """Finds a module of ``_MOVED_MODULES`` by its old name (a meta path finder and loader)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname not in _MOVED_MODULES:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib
        import warnings
        from types import ModuleType

        new_name, *also = _MOVED_MODULES[spec.name]
        # Warned here, where the importer's frame is the first outside importlib.
        warnings.warn(
            f"{spec.name} is deprecated and will be removed in 0.3: use {new_name}",
            DeprecationWarning,
            stacklevel=2,
        )
        homes = [importlib.import_module(name) for name in (new_name, *also)]
        module = ModuleType(spec.name, homes[0].__doc__)

        def __getattr__(name: str) -> Any:
            for home in homes:
                if hasattr(home, name):
                    return getattr(home, name)
            raise AttributeError(f"module {spec.name!r} has no attribute {name!r}")

        module.__dict__["__getattr__"] = __getattr__
        module.__dict__["__all__"] = [n for home in homes for n in getattr(home, "__all__", ())]
        return module

    def exec_module(self, module: ModuleType) -> None:
        pass


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
