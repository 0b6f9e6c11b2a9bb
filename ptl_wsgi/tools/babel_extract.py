"""Message extraction from ``.ptl`` files, for Babel and for Django's ``makemessages``.

A ``.ptl`` file is Python except for the ``[html]``/``[plain]`` annotations (and the old
``template`` keyword).  :func:`python_view` blanks those exactly as the compiler does,
column for column, so Python extractors (Babel's, xgettext's) report the ``.ptl`` file's
own line numbers.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Collection, Iterator, Mapping
from typing import IO, TYPE_CHECKING

from ptl_wsgi.compiler.source import preprocess, split_lines

if TYPE_CHECKING:
    from babel.messages.extract import _ExtractionResult, _Keyword, _PyOptions

__all__ = ["extract_ptl", "python_view", "python_view_text"]


def python_view_text(source: str | bytes, filename: str = "<ptl>") -> str:
    """*source* as plain Python text: template annotations blanked, every line and column kept.

    Raises SyntaxError when bytes *source* cannot be decoded.
    """
    lines = split_lines(source, filename)
    preprocess(lines)  # a tokenizer error stops the blanking there; extractors cope
    return "".join(lines)


def python_view(source: bytes, filename: str = "<ptl>") -> bytes:
    """:func:`python_view_text` encoded as *source* was (its coding cookie stays true)."""
    encoding, _lines = tokenize.detect_encoding(io.BytesIO(source).readline)
    return python_view_text(source, filename).encode(encoding)


def extract_ptl(
    fileobj: IO[bytes],
    keywords: Mapping[str, _Keyword],
    comment_tags: Collection[str],
    options: _PyOptions,
) -> Iterator[_ExtractionResult]:
    """A Babel extraction method for ``.ptl`` files (Babel's Python extractor on the view).

    Use it as ``ptl`` (the entry point) or ``ptl_wsgi.tools.babel_extract.extract_ptl`` in a
    Babel mapping file (a dotted path: a colon would end the section name there).
    """
    from babel.messages.extract import extract_python

    name = getattr(fileobj, "name", "<ptl>")
    view = io.BytesIO(python_view(fileobj.read(), str(name)))
    yield from extract_python(view, keywords, comment_tags, options)
