"""What the template converters share: names, the run over a tree, the report, PTL writing.

``ptl-wsgi convert --from-jinja2 SRC --output DEST`` and ``--from-django`` run
:func:`convert_tree` with an engine module (``ptl_wsgi.tools.from_jinja2``,
``ptl_wsgi.tools.from_django``), which defines ``ENGINE`` (its name) and
``convert_file(file: TemplateFile, job: Job) -> Converted``.

* Names: every file under SRC is a template; ``DEST/<the same relative path>`` gets it with
  a template extension (:data:`TEMPLATE_SUFFIXES`) replaced by ``.ptl``, or ``.ptl``
  appended to any other name (:func:`ptl_name`).  The names a template uses for other
  templates (``extends``, ``include``, ``import``) are rewritten the same way, as
  imports between the converted modules (:meth:`Job.import_code`).
* Escaping: ``--autoescape on|off|auto`` says which originals escaped (:func:`escapes`);
  an escaping original becomes ``[html]`` templates, any other ``[plain]`` ones.
* The report: whatever could not be converted is a :class:`Problem`
  (``file:line: construct: reason``), printed, written into the output as a located
  ``TODO(...)`` that raises when a render reaches it, and the exit status is 1.
* Writing: :class:`PTLWriter` writes the PTL source (indentation, template headers,
  output literals merged per line into f-strings, runs of text as triple-quoted literals,
  comments kept, run-time names imported without clashing with the template's own names).
"""

from __future__ import annotations

import fnmatch
import importlib
import keyword
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import TextIO

from ptl_wsgi.idioms import TEMPLATE_SUFFIXES, converted_name

__all__ = [
    "ENGINES",
    "HTML_SUFFIXES",
    "TEMPLATE_SUFFIXES",
    "Converted",
    "Job",
    "PTLWriter",
    "Problem",
    "RefusedStatement",
    "TemplateFile",
    "collect",
    "convert_tree",
    "escapes",
    "main",
    "ptl_name",
    "string_literal",
]

#: What Flask's ``select_jinja_autoescape`` escapes (``--autoescape auto`` for Jinja2).
HTML_SUFFIXES = (".html", ".htm", ".xml", ".xhtml", ".svg")
#: The engines ``convert`` knows: the option's name and the module converting it.
ENGINES = {"jinja2": "ptl_wsgi.tools.from_jinja2", "django": "ptl_wsgi.tools.from_django"}
AUTOESCAPE_MODES = ("on", "off", "auto")


#: The converted template's name: ``base.html`` → ``base.ptl``, ``layout`` → ``layout.ptl``.
ptl_name = converted_name


def escapes(name: str, autoescape: str, engine: str) -> bool:
    """Whether the original template *name* escaped its values.

    ``auto`` is each engine's default: Jinja2 under Flask escapes ``.html``, ``.htm``,
    ``.xml``, ``.xhtml`` and ``.svg`` files and nothing else; Django escapes everything.
    """
    if autoescape not in AUTOESCAPE_MODES:
        raise ValueError(f"autoescape is one of {', '.join(AUTOESCAPE_MODES)}, not {autoescape!r}")
    if autoescape != "auto":
        return autoescape == "on"
    if engine == "django":
        return True
    return os.path.splitext(name)[1].lower() in HTML_SUFFIXES


class RefusedStatement(Exception):
    """PTL's compiler refused a statement the converter wrote for the original's *line*.

    (Branches that leave HTML in different places: ``<input {% if c %}checked{% endif %}>``.)
    """

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class Problem:
    """Something not converted, where it is and why: ``file:line: construct: reason``."""

    file: str
    line: int
    construct: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.construct}: {self.reason}"


@dataclass(frozen=True)
class TemplateFile:
    """One template of the tree: its name under SRC (``/``-separated) and both paths."""

    name: str
    source_path: str
    dest_path: str

    @property
    def ptl_name(self) -> str:
        """The converted template's name under DEST."""
        return ptl_name(self.name)


@dataclass
class Converted:
    """A converter's result for one file: the PTL source and what it could not convert."""

    source: str
    problems: list[Problem] = field(default_factory=list)


@dataclass
class Job:
    """One run: the options and every template of the tree (to resolve names)."""

    engine: str
    autoescape: str = "auto"
    #: Modules named by ``--filters``, by name: their public names extend the engine's.
    filters: dict[str, ModuleType] = field(default_factory=dict)
    files: dict[str, TemplateFile] = field(default_factory=dict)
    #: ``--engine-option NAME=VALUE``: the engine's own settings (Jinja2's syntax options).
    options: dict[str, str] = field(default_factory=dict)

    def escapes(self, file: TemplateFile) -> bool:
        """Whether *file*'s original escaped its values (``--autoescape``)."""
        return escapes(file.name, self.autoescape, self.engine)

    def resolve(self, name: str) -> TemplateFile | None:
        """The template of the tree an ``extends``/``include``/``import`` names, if any."""
        return self.files.get(name.replace("\\", "/").lstrip("/"))

    def custom(self, name: str) -> str | None:
        """``module.name`` if a ``--filters`` module defines the public *name*."""
        if name.startswith("_"):
            return None
        for module_name, module in self.filters.items():
            if hasattr(module, name):
                return module_name
        return None

    def import_code(self, importer: TemplateFile, target: TemplateFile, alias: str) -> str:
        """The statement by which *importer*'s module binds *target*'s module to *alias*.

        A relative import where every part of the path is an identifier
        (``from .. import base as base_ptl``), else the loader's
        (``base_ptl = loader_for(__name__).module("my-base.ptl")``; give
        ``from ptl_wsgi.loader import loader_for`` to :meth:`PTLWriter.import_line` too).
        """
        here = importer.ptl_name.split("/")[:-1]
        there = target.ptl_name[: -len(".ptl")].split("/")
        common = 0
        while common < min(len(here), len(there) - 1) and here[common] == there[common]:
            common += 1
        dots = "." * (len(here) - common + 1)
        parts = there[common:]
        if all(part.isidentifier() and not keyword.iskeyword(part) for part in parts):
            package = dots + ".".join(parts[:-1])
            name = parts[-1]
            return f"from {package} import {name}" + (f" as {alias}" if alias != name else "")
        return f"{alias} = loader_for(__name__).module({string_literal(target.ptl_name)})"


def collect(src: str, dest: str, exclude: Sequence[str] = ()) -> list[TemplateFile]:
    """Every file under *src* (or *src* itself) with its place under *dest*, by name.

    Hidden files and folders and ``__pycache__`` are skipped, as a loader skips them, and
    ``.ptl`` files, which are converted templates (DEST may be SRC);
    *exclude* globs match the name under SRC (``partials/*``) or the file's own name.
    """
    found: list[TemplateFile] = []
    if os.path.isfile(src):
        name = os.path.basename(src)
        dest_path = dest if dest.endswith(".ptl") else os.path.join(dest, ptl_name(name))
        return [TemplateFile(name, src, dest_path)]
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for filename in sorted(files):
            if filename.startswith(".") or filename.endswith(".ptl"):
                continue  # (a .ptl file is a conversion's output: DEST may be SRC)
            path = os.path.join(root, filename)
            name = os.path.relpath(path, src).replace(os.sep, "/")
            if any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(filename, g) for g in exclude):
                continue
            found.append(TemplateFile(name, path, os.path.join(dest, *ptl_name(name).split("/"))))
    return sorted(found, key=lambda file: file.name)


def convert_tree(
    src: str,
    dest: str,
    engine: str,
    *,
    autoescape: str = "auto",
    exclude: Sequence[str] = (),
    filters: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    out: TextIO | None = None,
) -> int:
    """Convert every template under *src* into *dest*; report; the exit status (0 or 1)."""
    out = sys.stderr if out is None else out
    converter = importlib.import_module(ENGINES[engine])
    job = Job(engine, autoescape, options=dict(options or {}))
    for module_name in filters:
        job.filters[module_name] = importlib.import_module(module_name)
    files = collect(src, dest, exclude)
    job.files = {file.name: file for file in files}
    outputs: dict[str, str] = {}
    for file in files:
        if file.dest_path in outputs:
            raise ValueError(f"{file.name} and {outputs[file.dest_path]} are both {file.ptl_name}")
        outputs[file.dest_path] = file.name
    problems = 0
    for file in files:
        result = converter.convert_file(file, job)
        for problem in result.problems:
            print(problem, file=out)
        problems += len(result.problems)
        os.makedirs(os.path.dirname(file.dest_path) or ".", exist_ok=True)
        with open(file.dest_path, "w", encoding="utf-8") as f:
            f.write(result.source)
    print(
        f"converted {len(files)} template{'s' * (len(files) != 1)} into {dest}"
        + (f"; {problems} not converted (TODO in the output)" if problems else ""),
        file=out,
    )
    return 1 if problems else 0


def main(
    engine: str,
    src: str,
    dest: str,
    *,
    autoescape: str = "auto",
    exclude: Sequence[str] = (),
    filters: Sequence[str] = (),
    options: Sequence[str] = (),
) -> int:
    """The CLI's ``convert --from-ENGINE``: errors of use are messages and status 2."""
    settings: dict[str, str] = {}
    for option in options:
        name, equals, value = option.partition("=")
        if not equals or not name:
            print(f"ptl-wsgi convert: --engine-option {option!r}: give NAME=VALUE", file=sys.stderr)
            return 2
        settings[name] = value
    try:
        importlib.import_module(ENGINES[engine])
    except ImportError as exc:
        if exc.name != ENGINES[engine]:
            raise
        print(f"ptl-wsgi convert: --from-{engine} is not available yet", file=sys.stderr)
        return 2
    if not os.path.exists(src):
        print(f"ptl-wsgi convert: {src}: no such file or folder", file=sys.stderr)
        return 2
    for module_name in filters:
        try:
            importlib.import_module(module_name)
        except ImportError as exc:
            print(f"ptl-wsgi convert: --filters {module_name}: {exc}", file=sys.stderr)
            return 2
    try:
        return convert_tree(
            src,
            dest,
            engine,
            autoescape=autoescape,
            exclude=exclude,
            filters=filters,
            options=settings,
        )
    except (OSError, ValueError) as exc:
        print(f"ptl-wsgi convert: {exc}", file=sys.stderr)
        return 2


def string_literal(text: str, quote: str = '"') -> str:
    """*text* as a Python string literal in *quote*, non-printable characters escaped."""
    out = []
    for c in text:
        if c == "\\":
            out.append("\\\\")
        elif c == quote:
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif not c.isprintable():
            out.append(repr(c)[1:-1])
        else:
            out.append(c)
    return quote + "".join(out) + quote


def _triple_quoted(text: str) -> str | None:
    """*text* as a triple-quoted literal laid out as it reads, or None if it cannot be."""
    for quote in ('"""', "'''"):
        if quote in text or text.endswith(quote[0]):
            continue
        body = []
        for c in text:
            if c == "\\":
                body.append("\\\\")
            elif c != "\n" and (not c.isprintable() or c == "\r"):
                body.append(repr(c)[1:-1])
            else:
                body.append(c)
        return quote + "\\\n" + "".join(body) + quote
    return None


def _pick_quote(text: str) -> str:
    return "'" if '"' in text and "'" not in text else '"'


def _field_fits(expression: str, quote: str) -> bool:
    """Whether *expression* can stand in an f-string field on every supported Python."""
    return not (
        set(expression) & {"\\", "\n", "#", quote}
        or "lambda" in expression
        or ":=" in expression
        or "!" in expression.replace("!=", "")
    )


class PTLWriter:
    """Writes a PTL module: a header comment, imports, then the code.

    Output is given as :meth:`text` (the template's literal text, already what the
    ``[html]`` or ``[plain]`` template should emit) and :meth:`value` (an expression
    whose value is output, escaped by the template); runs of them on one line are
    written as one literal or f-string statement.  Code is given by :meth:`line` and
    :meth:`block`; an empty block gets ``pass``.
    """

    def __init__(self, reserved: set[str] | None = None, indent: str = "    ") -> None:
        self._lines: list[str] = []
        self._header: list[str] = []
        self._imports: dict[str, dict[str, str]] = {}  # module -> {name: local name}
        self._import_lines: list[str] = []
        self._level = 0
        self._indent = indent
        self._pending: list[tuple[str, str]] = []  # ("text", s) or ("value", expression)
        self._block_sizes: list[int] = []
        #: Names the converted code uses for its own values (context names, locals).
        self.reserved: set[str] = set(reserved or ())
        self._taken: set[str] = set(self.reserved)
        #: The original's line the output being written comes from (for reports).
        self.origin = 0
        self._origins: dict[int, int] = {}  # index in _lines of an output line -> origin
        self._statement_origins: dict[int, int] = {}  # the same for other lines
        self._body_start = 0  # the first body line's number in getvalue()

    # -- names -------------------------------------------------------------------------

    def use(self, module: str, name: str, alias: str | None = None) -> str:
        """Import *name* from *module*; the local name it gets (*alias* or *name*, or ``..._``)."""
        names = self._imports.setdefault(module, {})
        if name not in names:
            names[name] = self.fresh(alias or name)
        return names[name]

    def fresh(self, name: str) -> str:
        """A local name like *name* that nothing in the module uses yet; taken from now on."""
        candidate = name
        while candidate in self._taken or keyword.iskeyword(candidate):
            candidate += "_"
        self._taken.add(candidate)
        return candidate

    def import_line(self, statement: str) -> None:
        """An import statement of its own (``from . import base``), written once.

        Statements that are not imports (``base = importlib.import_module(...)``) come
        after the imports, in the order given.
        """
        if statement not in self._import_lines:
            self._import_lines.append(statement)

    def header(self, text: str) -> None:
        """A comment line at the top of the module."""
        self._header.append("# " + text if text else "#")

    # -- code --------------------------------------------------------------------------

    def line(self, code: str) -> None:
        """One line of code at the current indentation (after the pending output)."""
        self.flush()
        self._statement_origins[len(self._lines)] = self.origin
        self._lines.append(self._indent * self._level + code if code else "")

    def blank(self, count: int = 1) -> None:
        """Empty lines up to *count* in a row (none at the start of a block)."""
        self.flush()
        if not self._lines or self._lines[-1].endswith(":"):
            return
        present = 0
        while present < len(self._lines) and self._lines[-1 - present] == "":
            present += 1
        self._lines.extend([""] * max(0, count - present))

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        """``head`` (ending in ``:``) and an indented body; ``pass`` if nothing went in."""
        self.line(head)
        self._level += 1
        start = len(self._lines)
        try:
            yield
        finally:
            self.flush()
            while len(self._lines) > start and self._lines[-1] == "":
                self._lines.pop()
            if len(self._lines) == start:
                self._lines.append(self._indent * self._level + "pass")
            self._level -= 1

    def comment(self, text: str) -> None:
        """A comment, one ``#`` line per line of *text*."""
        self.flush()
        for part in text.strip("\n").splitlines() or [""]:
            self.line(("# " + part.rstrip()).rstrip())

    def todo(self, problem: Problem, *, statement: bool = True) -> str:
        """A located ``TODO("file:line: construct: reason")`` that raises when reached.

        As a statement (written here), or, with ``statement=False``, the expression to
        put where a value was expected.
        """
        call = f"{self.use('ptl_wsgi.idioms', 'TODO')}({string_literal(str(problem))})"
        if statement:
            self.line(call)
        return call

    def mark(self) -> tuple[int, int]:
        """Where the next line goes, for :meth:`insert` (a preamble known only later)."""
        self.flush()
        return len(self._lines), self._level

    def insert(self, mark: tuple[int, int], lines: Sequence[str]) -> None:
        """*lines* of code at *mark*, indented as the code there."""
        index, level = mark
        self._lines[index:index] = [self._indent * level + line for line in lines]
        self._origins = {i + len(lines) if i >= index else i: o for i, o in self._origins.items()}
        self._statement_origins = {
            i + len(lines) if i >= index else i: o for i, o in self._statement_origins.items()
        }

    # -- output ------------------------------------------------------------------------

    def text(self, text: str) -> None:
        """Literal output."""
        if text:
            self._pending.append(("text", text))

    def value(self, expression: str, *, result: bool = False) -> None:
        """The value of *expression* as output, as ``str()`` shows it (``None`` is ``"None"``).

        Escaped by an ``[html]`` template unless it is markup.  *result*: the value is a
        template's result (never None), written as a bare statement when alone on a line.
        """
        self._pending.append(("result" if result else "value", expression))

    def flush(self) -> None:
        """Write the pending output as statements: one per line of the original.

        Three or more lines of text alone are one triple-quoted literal, as they stood.
        """
        pending, self._pending = self._pending, []
        statements: list[list[tuple[str, str]]] = []
        statement: list[tuple[str, str]] = []
        for kind, part in pending:
            if kind != "text":
                statement.append((kind, part))
                continue
            while "\n" in part:
                head, part = part.split("\n", 1)
                statement.append(("text", head + "\n"))
                statements.append(statement)
                statement = []
            if part:
                statement.append(("text", part))
        statements.append(statement)
        run: list[str] = []  # consecutive lines of text alone
        for parts in statements:
            if parts and all(kind == "text" for kind, _ in parts):
                run.append("".join(part for _, part in parts))
                continue
            self._write_text_run(run)
            run = []
            self._write_output(parts)
        self._write_text_run(run)

    def _write_text_run(self, lines: list[str]) -> None:
        text = "".join(lines)
        literal = _triple_quoted(text) if len(lines) >= 3 else None
        if literal is None:
            for line in lines:
                self._write_output([("text", line)])
        else:
            self._output_line(self._indent * self._level + literal)

    def _output_line(self, code: str) -> None:
        self._origins[len(self._lines)] = self.origin
        self._lines.append(code)

    def _write_output(self, parts: list[tuple[str, str]]) -> None:
        # Adjacent texts are one text.
        merged: list[tuple[str, str]] = []
        for kind, part in parts:
            if kind == "text" and merged and merged[-1][0] == "text":
                merged[-1] = ("text", merged[-1][1] + part)
            else:
                merged.append((kind, part))
        if not merged:
            return
        pad = self._indent * self._level
        if len(merged) == 1 and merged[0][0] == "result":
            self._output_line(pad + merged[0][1])
            return
        merged = [("value" if k == "result" else k, p) for k, p in merged]
        texts = "".join(p for k, p in merged if k == "text")
        values = [p for k, p in merged if k == "value"]
        quote = _pick_quote(texts)
        if not values:
            self._output_line(pad + string_literal(texts, quote))
            return
        # Values are formatted as str() shows them (None is "None"), as both engines do:
        # an f-string field, or a % format when a value cannot be a field.
        for candidate in (quote, "'" if quote == '"' else '"'):
            if all(_field_fits(v, candidate) for v in values):
                body = []
                for kind, part in merged:
                    if kind == "text":
                        literal = string_literal(part, candidate)[1:-1]
                        body.append(literal.replace("{", "{{").replace("}", "}}"))
                    else:
                        body.append("{" + (" " + part if part.startswith("{") else part) + "}")
                self._output_line(pad + "f" + candidate + "".join(body) + candidate)
                return
        template = "".join(
            string_literal(part, quote)[1:-1].replace("%", "%%") if kind == "text" else "%s"
            for kind, part in merged
        )
        operands = values[0] + "," if len(values) == 1 else ", ".join(values)
        self._output_line(f"{pad}{quote}{template}{quote} % ({operands})")

    # -- the result --------------------------------------------------------------------

    def getvalue(self) -> str:
        """The module's source."""
        self.flush()
        out = list(self._header)
        imports = list(self._import_lines)
        for module in sorted(self._imports):
            names = self._imports[module]
            spelled = [n if local == n else f"{n} as {local}" for n, local in sorted(names.items())]
            imports.append(f"from {module} import {', '.join(spelled)}")
        plain = sorted(i for i in imports if i.startswith("import "))
        absolute = sorted(i for i in imports if i.startswith("from ") and not i[5:].startswith("."))
        relative = [i for i in imports if i.startswith("from .")]
        assigned = [i for i in imports if not i.startswith(("import ", "from "))]
        for group in (plain, absolute, relative, assigned):
            if group:
                out.extend(group)
        if imports:
            out.append("")
        body = self._lines
        skipped = 0
        while skipped < len(body) and body[skipped] == "":
            skipped += 1
        if out and len(body) > skipped:
            out.append("")
        self._body_start = len(out) + 1 - skipped
        return "\n".join(out + body[skipped:]).rstrip("\n") + "\n"

    def compile_checked(self, file: TemplateFile) -> list[Problem]:
        """Compile the module; an output line PTL refuses becomes a reported ``TODO``.

        PTL's contextual escaping refuses a value where no value may go (a tag's name),
        which the original engines allowed: such a line is reported and fails at render.
        """
        from ptl_wsgi.compiler import compile_ptl

        problems: list[Problem] = []
        while True:
            source = self.getvalue()
            try:
                compile_ptl(source, file.dest_path)
            except SyntaxError as exc:
                index = (exc.lineno or 0) - self._body_start
                if index not in self._origins:
                    origin = self._statement_origins.get(index)
                    if origin:  # an if/for PTL refuses: the converter may write it otherwise
                        raise RefusedStatement(origin, exc.msg) from exc
                    raise  # the converter's own bug
                problem = Problem(
                    file.name, self._origins.pop(index) or 1, "output", f"PTL refuses it: {exc.msg}"
                )
                problems.append(problem)
                indent = self._lines[index][
                    : len(self._lines[index]) - len(self._lines[index].lstrip())
                ]
                call = f"{self.use('ptl_wsgi.idioms', 'TODO')}({string_literal(str(problem))})"
                self._lines[index] = indent + call
                continue
            return problems


#: The signature of an engine module's ``convert_file``.
ConvertFile = Callable[[TemplateFile, Job], Converted]
