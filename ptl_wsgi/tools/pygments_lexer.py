"""A Pygments lexer for PTL (``.ptl`` files), registered as ``ptl``.

It is Python's lexer plus PTL's two additions: the ``[html]``/``[plain]``
annotation after a function's name, and the old ``template name(...):`` form.
Needs Pygments (not a dependency of ptl_wsgi itself).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pygments.lexers.python import PythonLexer
from pygments.token import Keyword, Name, Punctuation, Text, _TokenType

__all__ = ["PTLLexer"]

_KINDS = ("html", "plain")
_BLANK = (Text, Text.Whitespace)


class PTLLexer(PythonLexer):
    """Python Template Language: Python with ``def name [html] (...)`` templates."""

    name = "PTL"
    aliases = ["ptl"]
    filenames = ["*.ptl"]
    mimetypes = ["text/x-ptl"]
    url = "https://docs.python.org/3/"

    def get_tokens_unprocessed(
        self, text: str, stack: Iterable[str] = ("root",)
    ) -> Iterator[tuple[int, _TokenType, str]]:
        tokens = list(super().get_tokens_unprocessed(text, stack))
        i = 0
        while i < len(tokens):
            index, kind, value = tokens[i]
            if kind is Name.Function:
                annotation = self._annotation_after(tokens, i + 1)
                if annotation:
                    yield tokens[i]
                    yield from tokens[i + 1 : annotation[0]]
                    for pos in annotation:
                        at, _kind, text_ = tokens[pos]
                        yield at, Keyword.Pseudo if text_ in _KINDS else Punctuation, text_
                    i = annotation[-1] + 1
                    continue
            elif kind is Name and value == "template" and self._starts_template(tokens, i):
                yield index, Keyword, value
                yield from tokens[i + 1 : i + 2]
                at, _kind, name = tokens[i + 2]
                yield at, Name.Function, name
                i += 3
                continue
            yield tokens[i]
            i += 1

    @staticmethod
    def _annotation_after(tokens: list[tuple[int, _TokenType, str]], start: int) -> list[int]:
        """Positions of ``[``, ``html``/``plain``, ``]`` after a function name, or []."""
        positions = []
        i = start
        for expected in ("[", _KINDS, "]"):
            while i < len(tokens) and tokens[i][1] in _BLANK:
                i += 1
            if i >= len(tokens):
                return []
            value = tokens[i][2]
            if value != expected and not (isinstance(expected, tuple) and value in expected):
                return []
            positions.append(i)
            i += 1
        return positions

    @staticmethod
    def _starts_template(tokens: list[tuple[int, _TokenType, str]], i: int) -> bool:
        """``template`` at the start of a line, then a name and ``(``."""
        at_line_start = (
            i == 0
            or tokens[i - 1][2].endswith("\n")
            or (tokens[i - 1][1] in _BLANK and (i < 2 or tokens[i - 2][2].endswith("\n")))
        )
        return (
            at_line_start
            and i + 3 < len(tokens)
            and tokens[i + 1][1] in _BLANK
            and tokens[i + 2][1] is Name
            and tokens[i + 3][2] == "("
        )
