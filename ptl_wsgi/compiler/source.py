"""The source pass: ``.ptl`` text to lines, template headers found and blanked, positions.

Public for the tools that read ``.ptl`` files as the compiler does (``babel_extract``,
``to_py``): :func:`split_lines` decodes and splits source as CPython reads it,
:func:`preprocess` finds the template headers and blanks their annotations (every
column unchanged), :func:`char_col` and :func:`byte_col` convert the AST's UTF-8
columns, :func:`syntax_error` makes an error located in the ``.ptl`` source.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from importlib.util import decode_source
from typing import Protocol, cast

__all__ = [
    "Spot",
    "Templates",
    "byte_col",
    "char_col",
    "fill_text",
    "name_location",
    "preprocess",
    "split_lines",
    "spot_of",
    "syntax_error",
    "tokenizer_error",
]

_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT})
_IGNORED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER})

# (line, UTF-8 column of the ``def`` or ``async``) -> "html" | "plain"
Templates = dict[tuple[int, int], str]


def byte_col(line: str, col: int) -> int:
    """The UTF-8 column (the AST's) of character column *col* of *line*."""
    return len(line[:col].encode("utf-8"))


def char_col(line: str, byte_col: int | None) -> int:
    """The character column of UTF-8 column *byte_col* (the AST's) of *line*."""
    # (byte_col None: the end of the line, as a node without an end position has.)
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _blank(lines: list[str], tok: tokenize.TokenInfo, replacement: str | None = None) -> None:
    (row, start), (_, end) = tok.start, tok.end
    line = lines[row - 1]
    text = replacement or " " * (end - start)
    lines[row - 1] = line[:start] + text.ljust(end - start) + line[end:]


def preprocess(lines: list[str]) -> tuple[Templates, BaseException | None]:
    """Find template headers and blank their annotations in *lines* (in place).

    Returns the templates and the tokenizer's error, if it stopped on one; the
    parser then reports that error with CPython's own message and location.
    """
    templates: Templates = {}
    head: list[tokenize.TokenInfo] = []  # first significant tokens of the statement
    try:
        for tok in tokenize.generate_tokens(iter(list(lines)).__next__):
            if tok.type in _STATEMENT_START:
                head.clear()
            elif tok.type not in _IGNORED and len(head) < 6:
                head.append(tok)
                _match_header(head, lines, templates)
    except (tokenize.TokenError, SyntaxError) as exc:
        return templates, exc
    return templates, None


def _match_header(head: list[tokenize.TokenInfo], lines: list[str], templates: Templates) -> None:
    """Record and blank a template header if *head* (a statement's start) is one.

    Headers always start a statement: ``template NAME (``, ``def NAME [kind]``
    or ``async def NAME [kind]``.
    """
    strings = [t.string for t in head]
    kind = None
    if len(head) == 3 and strings[0] == "template" and strings[2] == "(":
        if head[1].type == tokenize.NAME and not keyword.iskeyword(head[1].string):
            kind = "plain"
            _blank(lines, head[0], "def")
    else:
        offset = 1 if strings[0] == "async" else 0
        if (
            len(head) == 5 + offset
            and strings[offset] == "def"
            and strings[offset + 2 :] in (["[", "html", "]"], ["[", "plain", "]"])
        ):
            kind = strings[offset + 3]
            for tok in head[offset + 2 :]:
                _blank(lines, tok)
    if kind is not None:
        row, col = head[0].start
        templates[(row, byte_col(lines[row - 1], col))] = kind


class Spot(Protocol):
    """A node with a place in the source: stmt, expr, arg, keyword... (not every AST)."""

    @property
    def lineno(self) -> int: ...
    @property
    def col_offset(self) -> int: ...
    @property
    def end_lineno(self) -> int | None: ...
    @property
    def end_col_offset(self) -> int | None: ...


def name_location(name: str, ref: Spot, lines: list[str]) -> Spot:
    """A node spanning *name* where it first appears at or after *ref*'s start."""
    line = lines[ref.lineno - 1]
    start = char_col(line, ref.col_offset)
    found = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)").search(line, start)
    if found is None:
        return ref
    col = byte_col(line, found.start())
    return ast.Name(
        id=name,
        lineno=ref.lineno,
        end_lineno=ref.lineno,
        col_offset=col,
        end_col_offset=col + len(name.encode("utf-8")),
    )


def syntax_error(message: str, filename: str, lines: list[str], node: Spot) -> SyntaxError:
    """A SyntaxError saying *message*, located at *node* in the ``.ptl`` *lines*."""
    lineno, end_lineno = node.lineno, node.end_lineno or node.lineno
    line = lines[lineno - 1]
    offset = char_col(line, node.col_offset) + 1
    end_offset = char_col(lines[end_lineno - 1], node.end_col_offset) + 1
    return SyntaxError(message, (filename, lineno, offset, line, end_lineno, end_offset))


def split_lines(source: str | bytes, filename: str) -> list[str]:
    """*source* decoded (bytes by their coding cookie, as CPython does) and split into lines;
    a located SyntaxError for source that does not decode."""
    if isinstance(source, bytes):
        data = source
        try:
            source = decode_source(data)
        except UnicodeDecodeError as exc:
            raise _decode_error(exc, data, filename) from None
        except SyntaxError as exc:  # a bad coding cookie or undecodable first lines
            raise _cookie_error(exc, data, filename) from None
    # CPython reads source with universal newlines; so do the tokenizer and parser here.
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    return io.StringIO(source).readlines()


def _decode_error(exc: UnicodeDecodeError, source: bytes, filename: str) -> SyntaxError:
    start = source.rfind(b"\n", 0, exc.start) + 1
    end = source.find(b"\n", exc.start)
    line = source[start : len(source) if end < 0 else end + 1].decode("utf-8", "replace")
    lineno = source.count(b"\n", 0, exc.start) + 1
    offset = len(source[start : exc.start].decode("utf-8", "replace")) + 1
    message = f"source is not valid {exc.encoding}: {exc.reason}"
    return SyntaxError(message, (filename, lineno, offset, line, lineno, offset + 1))


def _cookie_error(exc: SyntaxError, source: bytes, filename: str) -> SyntaxError:
    first_lines = source.splitlines(keepends=True)[:2] or [b""]
    lineno = 1
    for number, line in enumerate(first_lines, 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            lineno = number
            break
        if b"coding" in line:
            lineno = number
            break
    text = first_lines[lineno - 1].decode("utf-8", "replace")
    return SyntaxError(exc.msg, (filename, lineno, 1, text, lineno, 2))


def fill_text(exc: SyntaxError, original: list[str]) -> SyntaxError:
    """Show the .ptl line (not the pre-processed one) in *exc*, with a usable end."""
    if exc.lineno is not None and 0 < exc.lineno <= len(original):
        exc.text = original[exc.lineno - 1]
    # CPython marks an unknown end with 0 or -1; say "one character" instead.
    if exc.lineno is not None and exc.offset is not None:
        if (exc.end_lineno or 0, exc.end_offset or 0) <= (exc.lineno, exc.offset):
            exc.end_lineno, exc.end_offset = exc.lineno, exc.offset + 1
    return exc


def tokenizer_error(exc: BaseException, filename: str, original: list[str]) -> SyntaxError:
    """The tokenizer's error *exc* (what :func:`preprocess` returned) as a located SyntaxError."""
    if isinstance(exc, SyntaxError):
        exc.filename = filename
        return fill_text(exc, original)
    message, (row, col) = exc.args
    row = min(row, len(original))
    return SyntaxError(message, (filename, row, col + 1, original[row - 1] if row else None))


def spot_of(node: ast.AST) -> Spot | None:
    """*node* if it has a location (then it has all four attributes), else None."""
    return cast("Spot", node) if hasattr(node, "lineno") else None
