"""The PTL compiler: ``.ptl`` source to a transformed ``ast.Module`` and a code object.

Compilation has two steps:

1. A tokenizer pre-pass finds template definitions (``def name [html] (...)``,
   ``def name [plain] (...)`` and the old ``template name(...)``), records
   which ``def`` (by line and column) is a template of which kind, and blanks
   the annotation so that the text is ordinary Python with every column
   unchanged.  This works on Python 3.10 and 3.11, where ``def f [html]`` is
   not Python, and on 3.12+, where it would parse as a PEP 695 generic.
2. ``ast.parse`` and one :class:`ast.NodeTransformer` rewrite template bodies:
   expression statements append to an output list, bare ``return`` and the
   end of the body return the joined output, and in ``[html]`` templates
   string literals become ``htmltext`` built once at import.

The generated code uses only the names imported at the top of every compiled
module: four from ``ptl_wsgi.html``, so cached bytecode works with either
htmltext twin, and the two template markers from ``ptl_wsgi._runtime``, so
running cached bytecode never imports this package, ``ast`` or ``tokenize``.
Every template gets ``__ptl_template__`` (``"html"`` or ``"plain"``), set by
an innermost decorator; that is how the loader tells templates from other
callables.

The package, one module per section (this module is the pipeline and the public names):

- :mod:`.source`: the source pass: lines, the tokenizer pre-pass, line and column
  maths, located errors (public, for the tools that read ``.ptl`` files);
- :mod:`.names`: the names the generated code uses, and ``OPT_OUT``;
- :mod:`.nodes`: building located AST nodes;
- :mod:`.scopes`: which scope code runs in (one walker), the checks before rewriting,
  :func:`template_scopes` for tools;
- :mod:`.state`, :mod:`.pieces`, :mod:`.contextual`, :mod:`.fusion`,
  :mod:`.transformer`: the transformer, one section per module, each the base of the next:
  its state, output statements as pieces, the contextual walk, loop fusion, and the
  statements and literals of template bodies;
- :mod:`.limits`: how deep source may nest, on a fresh stack;
- :mod:`.switches`: the two switches tests turn off.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from types import CodeType

# Re-exported: they live in the light runtime module that generated code imports.
from ptl_wsgi._runtime import COMPILER_VERSION, mark_html_template, mark_plain_template
from ptl_wsgi.compiler import csp
from ptl_wsgi.compiler.fusion import _reads_frames
from ptl_wsgi.compiler.limits import (
    _deepest_after_all,
    _nesting_limit,
    _on_fresh_stack,
    _recursion_room,
    _too_deep,
    _user_recursion_limit,
)
from ptl_wsgi.compiler.names import (
    _CONTEXT_HELPERS,
    _ESCAPER,
    _HTML_FORMATTERS,
    _MARKERS,
    _RUNTIME_NAMES,
    OPT_OUT,
    RESERVED_PREFIX,
    _opts_out,
)
from ptl_wsgi.compiler.nodes import _located, _target_name
from ptl_wsgi.compiler.scopes import TemplateScopes, _check, template_scopes
from ptl_wsgi.compiler.source import (
    Spot,
    char_col,
    fill_text,
    preprocess,
    split_lines,
    tokenizer_error,
)
from ptl_wsgi.compiler.transformer import _Transformer

__all__ = [
    "COMPILER_VERSION",
    "RESERVED_PREFIX",
    "TemplateScopes",
    "OPT_OUT",
    "compile_ptl",
    "concatenation_warnings",
    "context_report",
    "csp_report",
    "inline_scripts",
    "mark_html_template",
    "mark_plain_template",
    "parse_ptl",
    "python_view",
    "template_scopes",
]


def parse_ptl(source: str | bytes, filename: str = "<ptl>") -> ast.Module:
    """Parse PTL *source* and return the transformed module AST (plain Python).

    Raises SyntaxError, located in the .ptl source, for invalid PTL.
    """
    original = split_lines(source, filename)
    return _on_fresh_stack(_parse_lines, original, filename)[0]


def python_view(
    source: str | bytes, filename: str = "<ptl>"
) -> tuple[str, dict[tuple[int, int], str]]:
    """*source* as ordinary Python with every line and column unchanged, and its templates.

    Template annotations (``[html]``, ``[plain]``) are blanked and ``template``
    becomes ``def``; the templates map ``(line, UTF-8 column)`` of each
    template's ``def`` (or ``async``) to its kind.  For tools (linters) that
    read Python: nothing else is rewritten, so positions in the view are
    positions in the ``.ptl`` file.
    """
    lines = split_lines(source, filename)
    templates, _ = preprocess(lines)
    return "".join(lines), templates


def context_report(
    source: str | bytes, filename: str = "<ptl>"
) -> list[tuple[int, int, str, str | None]]:
    """Each value of the ``[html]`` templates in *source*: line, column, context, escaper.

    Columns count characters from 1; the escaper is a name in
    :mod:`ptl_wsgi.escapers`, None for plain HTML escaping.  Raises SyntaxError
    as compiling does (a value where none may go, unbalanced branches, ...).
    """
    original = split_lines(source, filename)
    report: list[tuple[int, int, str, str | None]] = []
    _on_fresh_stack(_parse_lines, original, filename, report)
    return [
        (line, char_col(original[line - 1], col) + 1, context, escaper)
        for line, col, context, escaper in report
    ]


def concatenation_warnings(
    source: str | bytes, filename: str = "<ptl>"
) -> list[tuple[int, int, str]]:
    """Where an ``[html]`` template adds a value with ``+`` to markup that ends outside text.

    Line, column (characters from 1) and message of each, for ``ptl-wsgi check``:
    ``'<a href="' + url + '">'`` HTML-escapes *url* (``htmltext``'s ``+`` cannot know
    where it lands), where a format would check and encode it.  Raises SyntaxError
    as compiling does.
    """
    original = split_lines(source, filename)
    warnings: list[tuple[int, int, str]] = []
    _on_fresh_stack(_parse_lines, original, filename, None, warnings)
    return [
        (line, char_col(original[line - 1], col) + 1, message) for line, col, message in warnings
    ]


def csp_report(source: str | bytes, filename: str = "<ptl>") -> list[tuple[int, int, str, str]]:
    """What a strict Content-Security-Policy forbids in the ``[html]`` templates of *source*.

    Line, column (characters from 1), kind and message of each (the kinds of
    :mod:`ptl_wsgi.compiler.csp`: inline event handlers, framework attributes,
    ``javascript:`` URLs, ``attrs()`` with a handler, a script or style that gets no
    automatic nonce, values that set a nonced tag's ``src`` or attributes), for
    ``ptl-wsgi check --csp``.  Raises SyntaxError as compiling does.
    """
    original = split_lines(source, filename)
    findings: list[tuple[int, int, str, str]] = []
    _on_fresh_stack(_parse_lines, original, filename, None, None, findings)
    findings.sort()
    return [
        (line, char_col(original[line - 1], col) + 1, kind, csp.message(kind, name))
        for line, col, kind, name in findings
    ]


def inline_scripts(source: str | bytes, filename: str = "<ptl>") -> list[tuple[int, int, str]]:
    """The inline scripts of the ``[html]`` templates in *source* whose text has no value:
    line and column (characters from 1) of the literal that opens each, and its text,
    for their CSP hashes (``ptl-wsgi csp-hashes``).  Raises SyntaxError as compiling does.
    """
    original = split_lines(source, filename)
    found = csp.InlineScripts()
    _on_fresh_stack(_parse_lines, original, filename, None, None, None, found)
    return [
        (spot.lineno, char_col(original[spot.lineno - 1], spot.col_offset) + 1, text)
        for spot, text in found.found
    ]


def compile_ptl(source: str | bytes, filename: str = "<ptl>") -> CodeType:
    """Compile PTL *source* to a module code object whose filename is *filename*.

    Raises SyntaxError, located in the .ptl source, for invalid PTL.
    """
    original = split_lines(source, filename)
    return _on_fresh_stack(_compile_lines, original, filename)


def _compile_lines(original: list[str], filename: str) -> CodeType:
    tree, depth, deepest = _parse_lines(original, filename)
    with _recursion_room(depth), _nesting_limit(filename, original, deepest):
        try:
            return compile(tree, filename, "exec", dont_inherit=True)
        except SyntaxError as exc:
            # Errors found by the compiler proper (e.g. 'nonlocal' misuse) carry no source line.
            raise fill_text(exc, original) from None


def _parse_lines(
    original: list[str],
    filename: str,
    report: list[tuple[int, int, str, str | None]] | None = None,
    warnings: list[tuple[int, int, str]] | None = None,
    csp_findings: list[tuple[int, int, str, str]] | None = None,
    inline_scripts: csp.InlineScripts | None = None,
) -> tuple[ast.Module, int, Spot | None]:
    """The transformed tree, its depth and its deepest located node."""
    for lineno, line in enumerate(original, 1):
        if "\0" in line:
            # Python versions disagree (ValueError or an unlocated SyntaxError).
            offset = line.index("\0") + 1
            raise SyntaxError(
                "source code cannot contain null bytes",
                (filename, lineno, offset, line, lineno, offset + 1),
            )
    lines = list(original)
    templates, token_error = preprocess(lines)
    text = "".join(lines)
    # CPython's own limits, under the caller's recursion limit, decide what is too deep.
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as exc:
        raise fill_text(exc, original) from None
    except (RecursionError, MemoryError):
        raise _too_deep(filename, original, _deepest_after_all(text, filename)) from None
    if token_error is not None:
        # The parser accepted what the tokenizer rejected; trust the stricter one.
        raise tokenizer_error(token_error, filename, original)
    depth, deepest = _check(tree, templates, filename, original)
    if depth * 4 > _user_recursion_limit():
        # Deep enough that compiling (not just parsing) may exceed CPython's limits.
        try:
            compile(text, filename, "exec", dont_inherit=True)
        except (RecursionError, MemoryError):
            raise _too_deep(filename, original, deepest) from None
        except SyntaxError:
            pass  # reported, better located, when the transformed tree is compiled
    with _recursion_room(depth), _nesting_limit(filename, original, deepest):
        transformer = _Transformer(
            templates,
            filename,
            original,
            contextual=not _opts_out(tree.body),
            report=report,
            warnings=warnings,
            csp=csp_findings,
        )
        transformer.csp_module_strict = csp.asks_strict(tree.body)
        transformer.inline_scripts = inline_scripts
        transformer.reads_frames = _reads_frames(tree)
        tree = transformer.visit(tree)
        # Literals of statements joined with their neighbours may be unused now.
        used = {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name)
            and n.id.startswith(("_ptl_lit_", _ESCAPER, "_ptl_ctx_", "_ptl_int", "_ptl_type"))
        }
        literals = [a for a in transformer.literals.values() if _target_name(a) in used]
        _add_prologue(tree, literals, _escaper_imports(transformer, used))
    return tree, depth, deepest


def _escaper_imports(transformer: _Transformer, used: set[str]) -> list[ast.stmt]:
    """The import of the escapers the generated code uses; none in most modules."""
    names = sorted(
        [(name, _ESCAPER + name) for name in transformer.escapers if _ESCAPER + name in used]
        + [(name, alias) for name, alias in _CONTEXT_HELPERS if alias in transformer.helpers]
    )
    formatters = [
        ast.alias(name=name, asname=alias)
        for name, alias in _HTML_FORMATTERS
        if alias in transformer.formatters
    ]
    imports: list[ast.stmt] = []
    if formatters:
        imports.append(ast.ImportFrom(module="ptl_wsgi.html", names=formatters, level=0))
    if names:
        aliases = [ast.alias(name=name, asname=asname) for name, asname in names]
        imports.append(ast.ImportFrom(module="ptl_wsgi.escapers", names=aliases, level=0))
    return imports


def _is_future_import(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _add_prologue(
    tree: ast.Module, literals: list[ast.Assign], imports: Sequence[ast.stmt] = ()
) -> None:
    """Insert the runtime import and the hoisted literals after docstring and __future__."""
    body = tree.body
    index = 0
    if body and ast.get_docstring(tree, clean=False) is not None:
        index = 1
    while index < len(body) and _is_future_import(body[index]):
        index += 1
    # The prologue runs at the docstring's (or last __future__ import's) line, else line 1:
    # never at a line of the module's own code, so a line breakpoint there stops there.
    ref: ast.AST = ast.Pass(lineno=1, col_offset=0, end_lineno=1, end_col_offset=0)
    if index:
        ref = body[index - 1]
    runtime = ast.ImportFrom(
        module="ptl_wsgi.html",
        names=[ast.alias(name=name, asname=asname) for name, asname in _RUNTIME_NAMES],
        level=0,
    )
    markers = ast.ImportFrom(
        module="ptl_wsgi._runtime",
        names=[ast.alias(name=name, asname=asname) for name, asname in _MARKERS],
        level=0,
    )
    body[index:index] = [_located(node, ref) for node in (runtime, markers, *imports, *literals)]
