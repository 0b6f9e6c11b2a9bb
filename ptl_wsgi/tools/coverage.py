"""A coverage.py plugin for ``.ptl`` files: ``plugins = ["ptl_wsgi.tools.coverage"]``.

Compiled templates keep their ``.ptl`` file name and line numbers, so
coverage's tracer records the right lines already; what it lacks is a reporter,
because a ``.ptl`` file is not Python.  This plugin claims ``.ptl`` files
and reports them through coverage's own Python analysis of the compiler's
column-preserving Python view, so executable lines, multi-line statements and
``# pragma: no cover`` work as they do in ``.py`` files, while the report
shows the ``.ptl`` source itself.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from importlib.util import decode_source
from typing import Any

import coverage
from coverage.misc import join_regex
from coverage.parser import PythonParser
from coverage.plugin import CodeRegion
from coverage.python import PythonFileReporter
from coverage.regions import code_regions

from ptl_wsgi.compiler import python_view

__all__ = ["PtlPlugin", "coverage_init"]

_SUFFIX = ".ptl"


class PtlFileTracer(coverage.FileTracer):
    """Traces a ``.ptl`` file as itself: its code objects carry its lines."""

    def __init__(self, filename: str) -> None:
        self._filename = filename

    def source_filename(self) -> str:
        """The ``.ptl`` file the traced code was compiled from."""
        return self._filename


class _PtlParser(PythonParser):
    """coverage's Python parser, told that a template's first string is output, not a docstring."""

    def __init__(self, text: str, templates: dict[tuple[int, int], str], **kwargs: Any) -> None:
        super().__init__(text=text, **kwargs)
        self._templates = templates

    def _raw_parse(self) -> None:
        super()._raw_parse()
        assert self._ast_root is not None
        for node in ast.walk(self._ast_root):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and (node.lineno, node.col_offset) in self._templates
                and isinstance(node.body[0], ast.Expr)
            ):
                first = node.body[0]
                # Compiled as Python, a docstring has no code, so no statement either.
                end = first.end_lineno or first.lineno  # (always set by ast.parse)
                self.raw_docstrings.difference_update(range(first.lineno, end + 1))
                self.raw_statements.add(first.lineno)


class PtlFileReporter(PythonFileReporter):
    """Reports a ``.ptl`` file: its statements are those of its Python view."""

    def __init__(self, filename: str, exclude: str | None, partial: str | None = None) -> None:
        super().__init__(filename)
        self._exclude = exclude
        self._partial = partial
        self._view: str | None = None

    def no_branch_lines(self) -> set[int]:
        """Lines whose branches are not reported (``partial_branches``), for ``--branch``."""
        # (coverage's own reads its Coverage object, which a plugin's reporter has not.)
        return self.parser.lines_matching(self._partial) if self._partial else set()

    @property
    def parser(self) -> PythonParser:
        """coverage's Python parser, run on the view (same lines and columns)."""
        if self._parser is None:
            view, templates = python_view(self.source(), self.filename)
            self._view = view
            self._parser = _PtlParser(
                view, templates, filename=self.filename, exclude=self._exclude
            )
            self._parser.parse_source()
        return self._parser

    def code_regions(self) -> Iterable[CodeRegion]:
        """Functions and classes, for the HTML report's region pages."""
        self.parser  # noqa: B018 (sets the view)
        assert self._view is not None
        return code_regions(self._view)

    def source(self) -> str:
        """The ``.ptl`` source, as read by the compiler (its coding cookie honoured)."""
        if self._source is None:
            with open(self.filename, "rb") as f:
                self._source = decode_source(f.read())
        return self._source


class PtlPlugin(coverage.CoveragePlugin):
    """Claims ``.ptl`` files for tracing and reporting."""

    _exclude: str | None = None
    _partial: str | None = None

    def file_tracer(self, filename: str) -> PtlFileTracer | None:
        """A tracer for *filename* if it is a ``.ptl`` file."""
        if filename.endswith(_SUFFIX):
            return PtlFileTracer(filename)
        return None

    def file_reporter(self, filename: str) -> PtlFileReporter:
        """The reporter for a ``.ptl`` file this plugin traced (or found unexecuted)."""
        return PtlFileReporter(filename, self._exclude, self._partial)

    def configure(self, config: Any) -> None:
        """Read (not change) the exclusion and partial-branch patterns, for the reporter."""
        patterns = config.get_option("report:exclude_lines")
        self._exclude = join_regex(patterns) if patterns else None
        partial = [
            *config.get_option("report:partial_branches"),
            *config.get_option("report:partial_branches_always"),
        ]
        self._partial = join_regex(partial) if partial else None

    def find_executable_files(self, src_dir: str) -> list[str]:
        """Every ``.ptl`` file under *src_dir*, so never-imported templates show as missed."""
        found: list[str] = []
        for directory, dirs, files in os.walk(src_dir):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            found.extend(os.path.join(directory, f) for f in files if f.endswith(_SUFFIX))
        return found


def coverage_init(reg: Any, options: dict[str, Any]) -> None:
    """coverage.py's entry point: register the plugin."""
    plugin = PtlPlugin()
    reg.add_file_tracer(plugin)
    reg.add_configurer(plugin)
