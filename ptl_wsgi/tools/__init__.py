"""Tools that read ``.ptl`` files as the compiler does, each in its own module.

Conversions (``from_quixote``: Quixote 3 templates; ``to_py``: ``.ptl`` to plain Python;
``from_jinja2``: Jinja2 templates to PTL, on ``converting``, the base template converters
share), checks (``lint``: ruff; ``typecheck``: stubs and mypy/pyright), ``coverage`` (the
coverage.py plugin), ``babel_extract`` (Babel's extractor) and ``pygments_lexer``.  The
command line (``ptl_wsgi.cli``) runs most of them.  Their names before 0.2
(``ptl_wsgi.convert``, ``ptl_wsgi.coverage``, ...) still import, deprecated.
"""
