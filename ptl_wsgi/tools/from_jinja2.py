"""Jinja2 templates to PTL: ``ptl-wsgi convert --from-jinja2 SRC --output DEST``.

Each template is parsed by Jinja2 itself (``Environment.parse()``, with the ``i18n``,
``do`` and ``loopcontrols`` extensions) and its node tree written as a PTL module:

* a class ``Template`` (an :class:`ptl_wsgi.idioms.Layout`) whose ``[html]`` (or
  ``[plain]``) methods are the template's body (``page``), its blocks and its macros;
  ``{% extends "base.html" %}`` is ``class Template(base.Template)``, ``{{ super() }}`` is
  ``super().name()``, a nested block is a method calling a method;
* a ``render`` template taking the context as keyword arguments;
* the context read leniently, as Jinja2 reads it: a missing name is undefined (renders
  empty), ``a.b`` is ``dot(a, "b")`` and ``a['b']`` is ``at(a, "b")``;
* filters and tests from :mod:`ptl_wsgi.filters.jinja2` (imported as ``jinja``), the app's
  own from the ``--filters`` modules;
* anything else reported and written as a located ``TODO(...)``.

docs/migrating.md has the table of what each construct becomes.
"""

from __future__ import annotations

import ast
import keyword
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension

from ptl_wsgi.tools.converting import (
    Converted,
    Job,
    Problem,
    PTLWriter,
    RefusedStatement,
    TemplateFile,
    string_literal,
)

__all__ = ["ENGINE", "convert_file", "convert_source"]

ENGINE = "jinja2"

RUNTIME = "ptl_wsgi.filters"
IDIOMS = "ptl_wsgi.idioms"
I18N = "ptl_wsgi.i18n"
I18N_NAMES = ("_", "gettext", "ngettext", "pgettext", "npgettext")
# Layout's own attributes: a block or macro of one of these names gets another.
LAYOUT_NAMES = {"page", "get", "context", "extends_name"}
# Filters whose result depends on whether their value is markup: a string constant piped
# into them is plain text (str(...)), as it was in Jinja2.
MARKUP_SENSITIVE_FILTERS = {"replace", "format", "join", "string", "length", "count", "wordcount"}
# Filters whose result depends on whether the template escapes.
AUTOESCAPE_FILTERS = {"join", "replace"}
BINARY_OPERATORS = {
    nodes.Add: "+", nodes.Sub: "-", nodes.Mul: "*", nodes.Div: "/", nodes.FloorDiv: "//",
    nodes.Mod: "%", nodes.Pow: "**", nodes.And: "and", nodes.Or: "or",
}  # fmt: skip
COMPARISONS = {
    "eq": "==", "ne": "!=", "lt": "<", "lteq": "<=", "gt": ">", "gteq": ">=",
    "in": "in", "notin": "not in",
}  # fmt: skip
# Tests written as Python: {0} is the value, {1}... the arguments.
INLINE_TESTS = {
    "defined": "not {is_undefined}({0})", "undefined": "{is_undefined}({0})",
    "none": "{0} is None", "true": "{0} is True", "false": "{0} is False",
    "odd": "{0} % 2 == 1", "even": "{0} % 2 == 0",
    "divisibleby": "{0} % {1} == 0", "eq": "{0} == {1}", "equalto": "{0} == {1}",
    "==": "{0} == {1}", "ne": "{0} != {1}", "!=": "{0} != {1}", "lt": "{0} < {1}",
    "lessthan": "{0} < {1}", "<": "{0} < {1}", "le": "{0} <= {1}", "<=": "{0} <= {1}",
    "gt": "{0} > {1}", "greaterthan": "{0} > {1}", ">": "{0} > {1}", "ge": "{0} >= {1}",
    ">=": "{0} >= {1}", "in": "{0} in {1}", "string": "isinstance({0}, str)",
    "float": "isinstance({0}, float)", "callable": "callable({0})",
}  # fmt: skip
RUNTIME_TESTS = {
    "boolean": "is_boolean", "integer": "is_integer", "iterable": "is_iterable",
    "lower": "is_lower", "upper": "is_upper", "mapping": "is_mapping",
    "number": "is_number", "sequence": "is_sequence", "filter": "is_filter", "test": "is_test",
    "sameas": "is_sameas", "escaped": "is_escaped",
}  # fmt: skip
# Python's names the converted code calls: a template's own name is renamed (str_).
GENERATED_NAMES = {
    "str", "isinstance", "callable", "hasattr", "range", "dict", "slice", "abs", "super",
    "Template", "render", "context", "scope", "__name__",
}  # fmt: skip
# Jinja2's default globals: Python's own, or the run-time module's.
GLOBALS = {"range": "range", "dict": "dict"}
RUNTIME_GLOBALS = {"namespace", "cycler", "joiner"}


def q(value: str) -> str:
    """*value* as a Python string literal, in double quotes unless it holds only those."""
    return string_literal(value, "'" if '"' in value and "'" not in value else '"')


# The settings of an Environment that change how a template reads (--engine-option).
FLAG_OPTIONS = ("trim_blocks", "lstrip_blocks", "keep_trailing_newline")
TEXT_OPTIONS = (
    "block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
    "comment_start_string", "comment_end_string", "line_statement_prefix",
    "line_comment_prefix", "newline_sequence",
)  # fmt: skip


def environment_options(options: dict[str, str]) -> dict[str, Any]:
    """*options* (``--engine-option`` values) as ``jinja2.Environment`` arguments."""
    settings: dict[str, Any] = {}
    for name, value in options.items():
        if name in FLAG_OPTIONS:
            if value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(f"--engine-option {name}: give true or false, not {value!r}")
            settings[name] = value.lower() in ("true", "1", "yes", "on")
        elif name in TEXT_OPTIONS:
            settings[name] = value.encode().decode("unicode_escape")  # (\r\n as written)
        else:
            known = ", ".join(FLAG_OPTIONS + TEXT_OPTIONS)
            raise ValueError(f"--engine-option {name}: Jinja2's options are {known}")
    return settings


def environment(
    unknown: set[str] | None = None, source: str = "", options: dict[str, str] | None = None
) -> jinja2.Environment:
    """The environment templates are parsed with (Flask's settings, plus three extensions).

    *unknown*: tags of extensions we do not have, parsed as markers to report; *options*:
    the app's syntax settings (``--engine-option``).
    """
    extensions: list[Any] = ["jinja2.ext.i18n", "jinja2.ext.do", "jinja2.ext.loopcontrols"]
    if unknown:
        extensions.append(_unknown_tags(unknown, source))
    env = jinja2.Environment(extensions=extensions, **environment_options(options or {}))
    env.install_null_translations(newstyle=True)  # type: ignore[attr-defined]
    return env


def convert_file(file: TemplateFile, job: Job) -> Converted:
    """Convert the template *file* of *job*'s tree."""
    try:
        with open(file.source_path, encoding="utf-8") as f:
            source = f.read()
    except UnicodeDecodeError as exc:
        problem = Problem(file.name, 1, "template", f"not UTF-8 text, as Jinja2 reads it: {exc}")
        return _not_converted(file, job, problem)
    return convert_source(source, file, job)


def convert_source(source: str, file: TemplateFile, job: Job) -> Converted:
    """Convert the Jinja2 template *source* (of *file*, in *job*'s tree) to a PTL module."""
    unknown: set[str] = set()
    while True:
        env = environment(unknown, source, job.options)
        try:
            tree = env.parse(source, file.name, file.name)
            break
        except jinja2.TemplateSyntaxError as exc:
            # An extension's tag: parsed as a marker (with its body, if it has an end
            # tag), reported where it stands; the rest of the template is converted.
            match = re.match(r"Encountered unknown tag '(\w+)'", exc.message or "")
            if match is None or match.group(1) in unknown or len(unknown) > 50:
                return _unparsable(file, job, exc)
            unknown.add(match.group(1))
    # A statement PTL refuses as written (branches ending in different HTML contexts) is
    # written again as a fragment (a nested template whose markup is inserted), then, if
    # still refused, reported.
    fragments: set[int] = set()
    refused: dict[int, str] = {}
    while True:
        converter = _Converter(file, job, source, tree, env, fragments, refused)
        try:
            return converter.run()
        except RefusedStatement as exc:
            if exc.line in refused:  # not an if or a for: the template as a whole
                problem = Problem(file.name, exc.line, "template", f"PTL refuses it: {exc.reason}")
                return _not_converted(file, job, problem)
            if exc.line in fragments:
                refused[exc.line] = exc.reason
            else:
                fragments.add(exc.line)


UNKNOWN_TAG = "__ptl_unknown_tag__"


def _unknown_tags(names: set[str], source: str) -> type[Extension]:
    """A Jinja2 extension parsing each of the tags *names* as a marker node."""

    class UnknownTags(Extension):
        tags = set(names)

        def parse(self, parser: Any) -> nodes.Node:
            token = next(parser.stream)
            while parser.stream.current.type != "block_end":
                next(parser.stream)
            end = f"name:end{token.value}"
            if re.search(r"\{%[-+]?\s*end" + re.escape(token.value) + r"\b", source):
                parser.parse_statements((end,), drop_needle=True)
            marker = nodes.Call(
                nodes.Name(UNKNOWN_TAG, "load"), [nodes.Const(token.value)], [], None, None
            )
            return nodes.ExprStmt(marker, lineno=token.lineno)

    return UnknownTags


def _unparsable(file: TemplateFile, job: Job, exc: jinja2.TemplateSyntaxError) -> Converted:
    problem = Problem(
        file.name, exc.lineno or 1, "template", f"Jinja2 cannot parse it: {exc.message}"
    )
    return _not_converted(file, job, problem)


def _not_converted(file: TemplateFile, job: Job, problem: Problem) -> Converted:
    """A module whose ``render`` is the located TODO of *problem*."""
    w = PTLWriter()
    w.header(f"Converted from {file.name} by ptl-wsgi convert --from-jinja2: not converted.")
    html = "html" if job.escapes(file) else "plain"
    with w.block(f"def render [{html}] (**context):"):
        w.todo(problem)
    return Converted(w.getvalue(), [problem])


@dataclass
class _Scope:
    """Jinja2 names bound in one scope to the Python expressions standing for them."""

    names: dict[str, str] = field(default_factory=dict)
    #: Names bound in only some branches of an ``if`` (read later: looked up first).
    maybe: set[str] = field(default_factory=set)
    #: Whether bindings here are local to it (``for``, ``with``, ``call``, a macro's body).
    isolated: bool = False


@dataclass
class _Method:
    """The method being written: its scopes and the preamble its free names need."""

    name: str
    scopes: list[_Scope]
    preamble: dict[str, str] = field(default_factory=dict)  # python name -> code
    block: str | None = None  # the Jinja2 block it is, for super()
    owner: tuple[str, str] | None = None  # ("block" or "macro", its name), for comments
    scoped: bool = False  # a scoped block: names come from the caller's scope first


class _Converter:
    def __init__(
        self,
        file: TemplateFile,
        job: Job,
        source: str,
        tree: nodes.Template,
        env: jinja2.Environment,
        fragments: set[int] | None = None,
        refused: dict[int, str] | None = None,
    ) -> None:
        #: Lines whose if/for statements are written as fragments; those PTL refuses.
        self.fragments = fragments or set()
        self.refused = refused or {}
        self.file = file
        self.job = job
        self.tree = tree
        self.env = env
        self.problems: list[Problem] = []
        names = {n.name for n in tree.find_all(nodes.Name)}
        names |= {n.name for n in tree.find_all(nodes.NSRef)}
        names |= {a.name for m in tree.find_all(nodes.Macro) for a in m.args}
        self.w = PTLWriter(reserved=names | {"self", "Template", "render", "context", "super"})
        self.html = job.escapes(file)
        self.kind = "html" if self.html else "plain"
        self.autoescape = [self.html]  # the {% autoescape %} blocks in force
        self.comments = self._comments(source)
        self.macros: dict[str, str] = {}  # Jinja2 macro name -> method name
        self.blocks: dict[str, str] = {}  # Jinja2 block name -> method name
        self.imports: dict[str, str] = {}  # Jinja2 name -> code binding it in a method
        self.method: _Method | None = None
        self._jinja: str | None = None
        self._modules: dict[str, str] = {}  # template name -> module alias
        self._recursive: dict[str, str] = {}  # a recursive loop's name -> its function

    # -- the report --------------------------------------------------------------------

    def report(self, node: nodes.Node | None, construct: str, reason: str) -> Problem:
        line = getattr(node, "lineno", None) or 1
        problem = Problem(self.file.name, line, construct, reason)
        self.problems.append(problem)
        return problem

    def todo(self, node: nodes.Node | None, construct: str, reason: str) -> None:
        self.w.todo(self.report(node, construct, reason))

    def todo_value(self, node: nodes.Node | None, construct: str, reason: str) -> str:
        return self.w.todo(self.report(node, construct, reason), statement=False)

    # -- comments ----------------------------------------------------------------------

    def _comments(self, source: str) -> list[tuple[int, str, tuple[str, str] | None]]:
        """The comments, each with its line and the block or macro it stands in (if any)."""
        found: list[tuple[int, str, tuple[str, str] | None]] = []
        open_: list[tuple[str, str] | None] = []  # the block-like tags around, innermost last
        tokens = [t for t in self._tokens(source) if t[1] != "whitespace"]
        for i, (line, kind, value) in enumerate(tokens):
            if kind == "comment":
                owner = next((o for o in reversed(open_) if o is not None), None)
                found.append((line, value.strip(), owner))
            elif kind == "name" and i and tokens[i - 1][1] == "block_begin":
                if value in ("block", "macro"):
                    name = tokens[i + 1][2] if i + 1 < len(tokens) else ""
                    # Only top-level macros are methods; a macro in a block is in its method.
                    nested = value == "macro" and any(o is not None for o in open_)
                    open_.append(None if nested else (value, name))
                elif value in ("endblock", "endmacro") and open_:
                    open_.pop()
        return found

    def _tokens(self, source: str) -> Iterator[tuple[int, str, str]]:
        try:
            yield from self.env.lex(source)
        except jinja2.TemplateSyntaxError:
            return

    def comments_before(self, line: int) -> None:
        """Write the comments of the method being written that stand before *line*."""
        owner = self.method.owner if self.method is not None else None
        kept = []
        for comment in self.comments:
            if comment[2] == owner and comment[0] <= line:
                self.w.comment(comment[1])
            else:
                kept.append(comment)
        self.comments = kept

    # -- names -------------------------------------------------------------------------

    @property
    def jinja(self) -> str:
        if self._jinja is None:
            self._jinja = self.w.use(RUNTIME, "jinja2", alias="jinja")
        return self._jinja

    def idiom(self, name: str) -> str:
        return self.w.use(IDIOMS, name)

    def python_name(self, name: str) -> str:
        """The Python name of the Jinja2 name *name*: not a keyword, nor a name we call."""
        if keyword.iskeyword(name) or name in GENERATED_NAMES:
            return name + "_"
        return name

    def module(self, node: nodes.Node, name: Any, construct: str) -> str | None:
        """The alias of the converted module of template *name*; None (reported) if unknown."""
        if not isinstance(name, str):
            self.report(node, construct, "a template name computed at render time")
            return None
        target = self.job.resolve(name)
        if target is None:
            self.report(node, construct, f"no template {name!r} under SRC")
            return None
        if name not in self._modules:
            stem = target.ptl_name.rsplit("/", 1)[-1][: -len(".ptl")]
            alias = self.w.fresh((stem if stem.isidentifier() else "template") + "_ptl")
            statement = self.job.import_code(self.file, target, alias)
            if "loader_for" in statement:
                self.w.import_line("from ptl_wsgi.loader import loader_for")
            self.w.import_line(statement)
            self._modules[name] = alias
        return self._modules[name]

    def lookup(self, name: str) -> str:
        """The Python expression for the Jinja2 name *name* read here."""
        method = self.method
        assert method is not None
        for scope in reversed(method.scopes):
            if name in scope.names:
                if name in scope.maybe:
                    # Bound in some branches only: otherwise it comes from the context.
                    scope.maybe.discard(name)
                    method.preamble.setdefault(scope.names[name], f"self.get({q(name)})")
                return scope.names[name]
        if name in self.macros:
            return f"self.{self.macros[name]}"
        if name in self.imports:
            python = self.python_name(name)
            method.preamble.setdefault(python, self.imports[name])
            method.scopes[0].names[name] = python
            return python
        if name in I18N_NAMES:
            return self.w.use(I18N, name)
        if name in GLOBALS:
            return GLOBALS[name]
        if name in RUNTIME_GLOBALS:
            return f"{self.jinja}.{name}"
        if name == "self":
            return "self"
        python = self.python_name(name)
        code = f"self.get({q(name)})"
        module = self.job.custom(name)
        if module is not None:  # a global of a --filters module, unless the context has it
            self.w.import_line(f"import {module}")
            code = f"self.get({q(name)}, {module}.{name})"
        if method.scoped:
            code = f"scope.get({q(name)}, {code})"
        method.preamble.setdefault(python, code)
        method.scopes[0].names[name] = python
        return python

    def bind(self, name: str, node: nodes.Node | None = None) -> str:
        """The Python name a new binding of Jinja2's *name* gets in the current scope."""
        method = self.method
        assert method is not None
        scope = method.scopes[-1]
        python = self.python_name(name)
        if scope.isolated:
            outer = any(name in s.names for s in method.scopes[:-1]) or python in method.preamble
            if outer or self._read_outside(name, node):
                python = self.w.fresh(name)
        scope.names[name] = python
        scope.maybe.discard(name)
        return python

    def _read_outside(self, name: str, owner: nodes.Node | None) -> bool:
        """Whether *name* is read in this method outside *owner* (a loop, a with)."""
        if owner is None:
            return False
        inside = sum(1 for n in owner.find_all(nodes.Name) if n.name == name)
        return self._reads.get(name, 0) > inside

    @contextmanager
    def scope(self, isolated: bool) -> Iterator[_Scope]:
        method = self.method
        assert method is not None
        new = _Scope(isolated=isolated)
        method.scopes.append(new)
        try:
            yield new
        finally:
            method.scopes.pop()

    # -- the module --------------------------------------------------------------------

    def run(self) -> Converted:
        w = self.w
        w.header(
            f"Converted from {self.file.name} by ptl-wsgi convert --from-jinja2"
            f" ({'escaping: [html]' if self.html else 'not escaping: [plain]'})."
        )
        body = self.tree.body
        extends = [n for n in body if isinstance(n, nodes.Extends)]
        for nested in self.tree.find_all(nodes.Extends):
            if nested not in extends:
                self.report(nested, "extends", "only a template's top level can extend another")
        parent = None
        dynamic = None  # {% extends name %}: the class is made at render time
        if extends:
            if len(extends) > 1:
                self.report(extends[1], "extends", "a template extends one template")
            name = (
                extends[0].template.value if isinstance(extends[0].template, nodes.Const) else None
            )
            if name is None:
                dynamic = extends[0].template
            else:
                parent = self.module(extends[0], name, "extends")
        inherited: dict[str, bool] = {}
        ancestor_macros: set[str] = set()
        if extends:
            inherited, ancestor_macros = self._ancestors(extends[0])
        all_blocks = list(self.tree.find_all(nodes.Block))
        self.scoped = {name for name, scoped in inherited.items() if scoped}
        self.scoped |= {b.name for b in all_blocks if b.scoped}
        top_macros = [n for n in body if isinstance(n, nodes.Macro)]
        # Macros keep their names (other templates import them by name); a block that has
        # a macro's name in the hierarchy becomes name_block, in every template of it.
        macro_names = {m.name for m in top_macros} | ancestor_macros
        for name in [*(b.name for b in all_blocks), *inherited]:
            taken = LAYOUT_NAMES | macro_names
            self.blocks.setdefault(name, self._method_name(name, taken, "_block"))
        for macro in top_macros:
            taken = LAYOUT_NAMES | (set(inherited) - ancestor_macros)
            self.macros[macro.name] = self._method_name(macro.name, taken, "_macro")
        for node in body:
            self._collect_imports(node)
        base = f"{parent}.Template" if parent else self.idiom("Layout")
        if extends and parent:
            # A child's text outside its blocks is not shown: its comments head the module.
            for _, text, owner in list(self.comments):
                if owner is None:
                    w.header(text)
            self.comments = [c for c in self.comments if c[2] is not None]
        self._reads: dict[str, int] = {}
        self._top = False
        with w.block(f"class Template({base}):"):
            if extends and (parent or dynamic is not None):
                # A child's top level: what stands before {% extends %} is output, as in
                # Jinja2; after it, only assignments count (its blocks are methods).
                first = body.index(extends[0])
                before = [n for n in body[:first] if not isinstance(n, nodes.Macro)]
                sets: list[nodes.Node] = [
                    n for n in body[first:] if isinstance(n, (nodes.Assign, nodes.AssignBlock))
                ]
                if before or sets:
                    self._write_method("page", [], before + sets, top=True, child=True)
            elif extends:
                with w.block(f"def page [{self.kind}] (self):"):
                    w.todo(self.problems[0])
            else:
                page = [n for n in body if not isinstance(n, nodes.Macro)]
                self._write_method("page", [], page, top=True)
            if dynamic is not None:
                w.blank()
                self._write_extends_name(dynamic)
            for block in all_blocks:
                w.blank()
                self._write_block(block)
            for macro in top_macros:
                w.blank()
                self._write_macro(macro, self.macros[macro.name], method=True)
        w.blank(2)
        with w.block(f"def render [{self.kind}] (**context):"):
            if dynamic is None:
                w.value("Template(**context).page()", result=True)
            else:
                # The blocks over the template named at render time, as Jinja2 does.
                w.line("page = Template(**context)")
                extended = f"{self.jinja}.extended(page, __name__, page.extends_name())"
                w.value(f"{extended}.page()", result=True)
        for _, text, _owner in self.comments:  # after the last statement
            w.comment(text)
        self.problems += w.compile_checked(self.file)
        return Converted(w.getvalue(), self.problems)

    def _write_extends_name(self, template: nodes.Expr) -> None:
        """The method giving the name a ``{% extends name %}`` computes (in the context)."""
        outer, self.method = self.method, _Method("extends_name", [_Scope()])
        with self.w.block("def extends_name(self):"):
            mark = self.w.mark()
            self.w.line(f"return {self.expr(template, text=False)}")
            preamble = [f"{python} = {code}" for python, code in self.method.preamble.items()]
            self.w.insert(mark, preamble)
        self.method = outer

    def _method_name(self, name: str, taken: set[str], suffix: str) -> str:
        python = self.python_name(name)
        if python in taken or python.startswith("_ptl_"):
            python += suffix
        return python

    def _ancestors(
        self, extends: nodes.Extends, seen: set[str] | None = None
    ) -> tuple[dict[str, bool], set[str]]:
        """The blocks (each with whether it is scoped) and the top-level macros of the
        templates this one extends: the methods of the classes it derives from."""
        seen = seen or set()
        name = extends.template.value if isinstance(extends.template, nodes.Const) else None
        target = self.job.resolve(name) if isinstance(name, str) else None
        if target is None or target.name in seen:
            return {}, set()
        seen.add(target.name)
        try:
            with open(target.source_path, encoding="utf-8") as f:
                tree = self.env.parse(f.read())
        except (OSError, UnicodeDecodeError, jinja2.TemplateSyntaxError):
            return {}, set()
        blocks: dict[str, bool] = {}
        macros = {n.name for n in tree.body if isinstance(n, nodes.Macro)}
        for parent in tree.find_all(nodes.Extends):
            more_blocks, more_macros = self._ancestors(parent, seen)
            blocks.update(more_blocks)
            macros |= more_macros
        for block in tree.find_all(nodes.Block):
            blocks[block.name] = blocks.get(block.name, False) or block.scoped
        return blocks, macros

    def _collect_imports(self, node: nodes.Node) -> None:
        if not isinstance(node, (nodes.Import, nodes.FromImport)):
            return
        name = node.template.value if isinstance(node.template, nodes.Const) else None
        construct = "import" if isinstance(node, nodes.Import) else "from import"
        alias = self.module(node, name, construct)
        if alias is None:
            return
        # Without context (the default), an imported template sees the globals only.
        context = (
            "self.context" if node.with_context else f"{self.jinja}.globals_only(self.context)"
        )
        module = f"{self.jinja}.imported({alias}.Template(**{context}))"
        if isinstance(node, nodes.Import):
            self.imports[node.target] = module
            return
        for item in node.names:
            imported, bound = item if isinstance(item, tuple) else (item, item)
            self.imports[bound] = f"{module}.{imported}"

    # -- methods -----------------------------------------------------------------------

    def _write_method(
        self,
        name: str,
        params: list[str],
        body: Sequence[nodes.Node],
        *,
        top: bool = False,
        child: bool = False,
        block: str | None = None,
        macro: nodes.Macro | None = None,
        scoped: bool = False,
    ) -> None:
        w = self.w
        head = ", ".join(["self", *params])
        outer, outer_top, outer_reads = self.method, self._top, self._reads
        owner = ("macro", macro.name) if macro is not None else None
        if block is not None:
            owner = ("block", next(b for b, m in self.blocks.items() if m == block))
        self.method = _Method(name, [_Scope()], block=block, scoped=scoped, owner=owner)
        self._top = top
        self._count_reads(body)
        if macro is not None:
            for arg in macro.args:
                self.method.scopes[0].names[arg.name] = self.python_name(arg.name)
            for special in _specials(macro):
                self.method.scopes[0].names[special] = special
        with w.block(f"def {name} [{self.kind}] ({head}):"):
            mark = w.mark()
            if macro is not None:
                self._macro_defaults(macro)
            self.statements(body)
            self.comments_before(sys.maxsize)  # the rest of its comments, at its end
            if child:
                w.value("super().page()", result=True)
            preamble = [f"{python} = {code}" for python, code in self.method.preamble.items()]
            w.insert(mark, preamble)
        self.method, self._top, self._reads = outer, outer_top, outer_reads

    def _count_reads(self, body: Sequence[nodes.Node]) -> None:
        self._reads = {}
        for node in body:
            for name in node.find_all(nodes.Name):
                self._reads[name.name] = self._reads.get(name.name, 0) + 1

    def _write_block(self, block: nodes.Block) -> None:
        name = self.blocks[block.name]
        if block.required:
            with self.w.block(f"def {name} [{self.kind}] (self):"):
                self.w.line(f"{self.jinja}.required_block({q(block.name)})")
            return
        scoped = block.name in self.scoped
        self._write_method(
            name, ["**scope"] if scoped else [], block.body, block=name, scoped=scoped
        )

    def _write_macro(self, macro: nodes.Macro, name: str, *, method: bool) -> None:
        params = self._macro_params(macro)
        if method:
            self._write_method(name, params, macro.body, macro=macro)
            return
        # A macro inside a method: a nested template, a closure over the method's names.
        python = self.bind(macro.name, macro)
        with self.scope(isolated=True) as scope:
            for arg in macro.args:
                scope.names[arg.name] = self.python_name(arg.name)
            for special in _specials(macro):
                scope.names[special] = special
            with self.w.block(f"def {python} [{self.kind}] ({', '.join(params)}):"):
                self._macro_defaults(macro)
                self.statements(macro.body)

    def _macro_params(self, macro: nodes.Macro) -> list[str]:
        undefined = self.idiom("undefined")
        params = []
        first_default = len(macro.args) - len(macro.defaults)
        for i, arg in enumerate(macro.args):
            default = macro.defaults[i - first_default] if i >= first_default else None
            if isinstance(default, nodes.Const) and not isinstance(default.value, str):
                params.append(f"{self.python_name(arg.name)}={default.value!r}")
            else:
                params.append(f"{self.python_name(arg.name)}={undefined}")
        names = {n.name for n in macro.find_all(nodes.Name)}
        if "caller" in names:
            params.append(f"caller={undefined}")
        if "varargs" in names:
            params.insert(len(macro.args), "*varargs")
        if "kwargs" in names:
            params.append("**kwargs")
        return params

    def _macro_defaults(self, macro: nodes.Macro) -> None:
        """Defaults that are not plain constants are computed at call time, as Jinja2 does."""
        first_default = len(macro.args) - len(macro.defaults)
        for i, arg in enumerate(macro.args):
            if i < first_default:
                continue
            default = macro.defaults[i - first_default]
            if isinstance(default, nodes.Const) and not isinstance(default.value, str):
                continue
            python = self.python_name(arg.name)
            with self.w.block(f"if {self.idiom('is_undefined')}({python}):"):
                self.w.line(f"{python} = {self.expr(default)}")

    # -- statements --------------------------------------------------------------------

    def statements(self, body: Sequence[nodes.Node]) -> None:
        for node in body:
            self.comments_before(node.lineno)
            self.w.origin = node.lineno
            self.statement(node)

    def statement(self, node: nodes.Node) -> None:
        if node.lineno in self.refused and isinstance(node, (nodes.If, nodes.For)):
            reason = f"PTL refuses it: {self.refused[node.lineno]}"
            self.todo(node, type(node).__name__.lower(), reason)
            return
        if node.lineno in self.fragments and isinstance(node, (nodes.If, nodes.For)):
            self._fragment(node)
            return
        handler = getattr(self, "stmt_" + type(node).__name__, None)
        if handler is None:
            self.todo(node, type(node).__name__, "this Jinja2 statement is not converted")
            return
        handler(node)

    def _fragment(self, node: nodes.Node) -> None:
        """*node* as a nested template whose markup is inserted where it stands.

        For an ``{% if %}`` inside a tag (``<input {% if c %}checked{% endif %}>``): PTL
        follows the HTML through each branch and refuses branches that leave it in
        different places; a fragment's markup is one value there, as Jinja2's output is.
        """
        function = self.w.fresh("fragment")
        with self.scope(isolated=True), self.w.block(f"def {function} [{self.kind}] ():"):
            handler = getattr(self, "stmt_" + type(node).__name__)
            handler(node)
        self.w.value(f"{function}()", result=True)

    def stmt_Output(self, node: nodes.Output) -> None:
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                self.w.text(child.data)
            elif isinstance(child, nodes.Const):
                self.w.text(self._escape_constant(child.value))
            else:
                self.w.value(self.output(child), result=self._is_result(child))

    def _escape_constant(self, value: Any) -> str:
        text = str(value)
        if not self.autoescape[-1]:
            return text
        import markupsafe

        return str(markupsafe.escape(text))

    def _is_result(self, node: nodes.Node) -> bool:
        """Whether *node* is a call of a block or macro here (markup, never None)."""
        if not isinstance(node, nodes.Call) or self.autoescape[-1] != self.html:
            return False
        callee = node.node
        if isinstance(callee, nodes.Name):
            return callee.name in ("super", "caller") or (
                callee.name in self.macros and not self._bound(callee.name)
            )
        return (
            isinstance(callee, nodes.Getattr)
            and isinstance(callee.node, nodes.Name)
            and (callee.node.name == "self" or callee.node.name in self.imports)
        )

    def output(self, node: nodes.Expr) -> str:
        """A value output here, escaped as the original's ``{{ }}`` escaped it."""
        code = _bare(self.expr(node))
        if self.autoescape[-1] == self.html:
            return code
        if self.html:  # {% autoescape false %} in an escaping template: as it is
            return f"{self.jinja}.safe({code})"
        return f"{self.jinja}.escape({code})"  # {% autoescape true %} in a [plain] one

    def stmt_Extends(self, node: nodes.Extends) -> None:
        pass  # the class's base

    def stmt_Block(self, node: nodes.Block) -> None:
        arguments = ""
        if node.name in self.scoped:
            # A scoped block sees the names bound where it stands (a loop's).
            arguments = ", ".join(f"{name}={python}" for name, python in self._locals().items())
        self.w.value(f"self.{self.blocks[node.name]}({arguments})", result=True)

    def stmt_Macro(self, node: nodes.Macro) -> None:
        if node.name in self.macros and self._top:
            return  # a method of the class
        self._write_macro(node, node.name, method=False)

    def stmt_Import(self, node: nodes.Import) -> None:
        pass  # bound where used (see lookup)

    stmt_FromImport = stmt_Import

    def stmt_Include(self, node: nodes.Include) -> None:
        template = node.template
        names: list[Any] = []
        if isinstance(template, nodes.Const):
            names = (
                list(template.value)
                if isinstance(template.value, (list, tuple))
                else [template.value]
            )
        elif isinstance(template, (nodes.List, nodes.Tuple)) and all(
            isinstance(i, nodes.Const) for i in template.items
        ):
            names = [cast(nodes.Const, i).value for i in template.items]
        else:
            # A name computed at render time: looked up then, among the converted names.
            context = self._include_context(node)
            call = f"{self.jinja}.include(__name__, {self.expr(template, text=False)}, {context}"
            call += ", ignore_missing=True)" if node.ignore_missing else ")"
            if self.html:
                call = f"{self.jinja}.safe({call})"  # (an escaping original's text is markup)
            self.w.value(call)
            return
        found = next((n for n in names if isinstance(n, str) and self.job.resolve(n)), None)
        if found is None:
            if node.ignore_missing:
                self.w.comment(f"include {', '.join(map(str, names))}: missing, ignored")
            else:
                self.todo(node, "include", f"no template {names[0]!r} under SRC")
            return
        alias = self.module(node, found, "include")
        target = self.job.resolve(found)
        assert alias is not None and target is not None
        context = self._include_context(node)
        call = f"{alias}.render()" if context == "{}" else f"{alias}.render(**{context})"
        if self.html and not self.job.escapes(target):
            call = f"{self.jinja}.safe({call})"  # its text goes in as it is, as in Jinja2
        self.w.value(call)

    def _include_context(self, node: nodes.Include) -> str:
        """The context an include passes: this one and the names bound here, or none."""
        if not node.with_context:
            return "{}"
        local = self._locals()
        if not local:
            return "self.context"
        pairs = ", ".join(f"{q(name)}: {python}" for name, python in local.items())
        return f"{{**self.context, {pairs}}}"

    def _locals(self) -> dict[str, str]:
        method = self.method
        assert method is not None
        found: dict[str, str] = {}
        for scope in method.scopes:
            for name, python in scope.names.items():
                # Names read from the context are in it already.
                if python not in method.preamble and not (self._top and scope is method.scopes[0]):
                    found[name] = python
        return found

    def stmt_If(self, node: nodes.If) -> None:
        branches: list[tuple[str, Any, list[nodes.Node]]] = [("if", node.test, node.body)]
        branches += [("elif", n.test, n.body) for n in node.elif_]
        if node.else_:
            branches.append(("else", None, node.else_))
        bound: list[set[str]] = []
        method = self.method
        assert method is not None
        current = method.scopes[-1]
        for word, test, body in branches:
            head = f"{word} {_bare(self.expr(test, text=False))}:" if test is not None else "else:"
            before = dict(current.names)
            with self.w.block(head):
                self.statements(body)
            bound.append({n for n in current.names if current.names[n] != before.get(n)})
        everywhere = set.intersection(*bound) if node.else_ else set()
        for name in set().union(*bound) - everywhere:
            if name not in before:
                current.maybe.add(name)

    def stmt_For(self, node: nodes.For) -> None:
        w = self.w
        iterable = self.expr(node.iter, text=False)
        if not node.recursive:
            self._loop(node, iterable)
            return
        # {% for ... recursive %}: a nested template that loop(children) calls again.
        function = w.fresh("loop_over")
        items, parent = w.fresh("items"), w.fresh("parent")
        with self.scope(isolated=True):
            with w.block(f"def {function} [{self.kind}] ({items}, {parent}=None):"):
                self._loop(node, items, parent=parent, recursive=function)
        w.value(f"{function}({iterable})", result=True)

    def _loop(
        self,
        node: nodes.For,
        iterable: str,
        parent: str | None = None,
        recursive: str | None = None,
    ) -> None:
        w = self.w
        uses_loop = recursive is not None or any(
            n.name == "loop" for n in _names_in_loop(node.body + ([node.test] if node.test else []))
        )
        empty = None
        if node.else_:
            empty = w.fresh("empty")
            w.line(f"{empty} = True")
        with self.scope(isolated=True):
            target = self.target(node.target, node)
            if node.test is not None:
                test = self.expr(node.test, text=False)
                iterable = f"({target} for {target} in {iterable} if {test})"
            if uses_loop:
                loop = self.bind("loop", node)
                if recursive is not None:
                    self._recursive[loop] = recursive
                pair = f"{loop}, {self._parenthesized_target(target)}"
                arguments = iterable + (f", parent={parent}" if parent else "")
                head = f"for {pair} in {self.idiom('looped')}({arguments}):"
            else:
                head = f"for {target} in {iterable}:"
            with w.block(head):
                if empty:
                    w.line(f"{empty} = False")
                self.statements(node.body)
        if node.else_:
            with w.block(f"if {empty}:"):
                self.statements(node.else_)

    def _parenthesized_target(self, target: str) -> str:
        return f"({target})" if "," in target else target

    def target(self, node: nodes.Node, owner: nodes.Node) -> str:
        if isinstance(node, nodes.Name):
            return self.bind(node.name, owner)
        if isinstance(node, nodes.Tuple):
            return ", ".join(self.target(item, owner) for item in node.items)
        if isinstance(node, nodes.NSRef):
            return f"{self.lookup(node.name)}.{node.attr}"
        return self.todo_value(node, "assignment", "this target is not converted")

    def stmt_Assign(self, node: nodes.Assign) -> None:
        value = self.expr(node.node)
        target = self.target(node.target, node)
        if (
            self._top
            and self.method is not None
            and self.method.name == "page"
            and isinstance(node.target, nodes.Name)
        ):
            # Top level: the blocks and macros see it too, as in Jinja2.
            target = f"{target} = self.context[{q(node.target.name)}]"
        self.w.line(f"{target} = {value}")

    def stmt_AssignBlock(self, node: nodes.AssignBlock) -> None:
        function = self.w.fresh("captured")
        with self.scope(isolated=True):
            with self.w.block(f"def {function} [{self.kind}] ():"):
                self.statements(node.body)
        value = f"{function}()"
        if node.filter is not None:
            value = self.filter(node.filter, value)
        target = self.target(node.target, node)
        name = node.target
        if self._top and self.method is not None and self.method.name == "page":
            if isinstance(name, nodes.Name):
                target = f"{target} = self.context[{q(name.name)}]"
        self.w.line(f"{target} = {value}")

    def stmt_With(self, node: nodes.With) -> None:
        values = [self.expr(v) for v in node.values]
        with self.scope(isolated=True):
            for target, value in zip(node.targets, values, strict=True):
                self.w.line(f"{self.target(target, node)} = {value}")
            self.statements(node.body)

    def stmt_Scope(self, node: nodes.Scope) -> None:
        self.statements(node.body)

    def stmt_ScopedEvalContextModifier(self, node: nodes.ScopedEvalContextModifier) -> None:
        escaping = None
        for option in node.options:
            if option.key == "autoescape" and isinstance(option.value, nodes.Const):
                escaping = bool(option.value.value)
            else:
                self.todo(node, "autoescape", "only a constant autoescape option is converted")
        self.autoescape.append(self.autoescape[-1] if escaping is None else escaping)
        try:
            self.statements(node.body)
        finally:
            self.autoescape.pop()

    def stmt_EvalContextModifier(self, node: nodes.EvalContextModifier) -> None:
        self.todo(node, "autoescape", "an eval context change outside a block is not converted")

    def stmt_FilterBlock(self, node: nodes.FilterBlock) -> None:
        function = self.w.fresh("filtered")
        with self.scope(isolated=True):
            with self.w.block(f"def {function} [{self.kind}] ():"):
                self.statements(node.body)
        self.w.value(self.filter(node.filter, f"{function}()"))

    def stmt_CallBlock(self, node: nodes.CallBlock) -> None:
        caller = self.w.fresh("caller")
        undefined = self.idiom("undefined")
        with self.scope(isolated=True):
            defaults = [self.expr(d) for d in node.defaults]  # (in the caller's scope)
            first_default = len(node.args) - len(defaults)
            params = []
            for i, arg in enumerate(node.args):
                python = self.bind(arg.name, node)
                default = defaults[i - first_default] if i >= first_default else undefined
                params.append(f"{python}={default}")
            with self.w.block(f"def {caller} [{self.kind}] ({', '.join(params)}):"):
                self.statements(node.body)
        self.w.value(
            self.call(node.call, extra=f"caller={caller}"), result=self._is_result(node.call)
        )

    def stmt_ExprStmt(self, node: nodes.ExprStmt) -> None:
        call = node.node
        if isinstance(call, nodes.Call) and getattr(call.node, "name", None) == UNKNOWN_TAG:
            tag = cast(nodes.Const, call.args[0]).value
            self.todo(node, f"tag {tag!r}", "unknown tag (a Jinja2 extension's)")
            return
        self.w.line(f"{self.w.fresh('unused')} = {self.expr(node.node)}")

    def stmt_Break(self, node: nodes.Break) -> None:
        self.w.line("break")

    def stmt_Continue(self, node: nodes.Continue) -> None:
        self.w.line("continue")

    # -- expressions -------------------------------------------------------------------

    def expr(self, node: nodes.Node | None, text: bool = True) -> str:
        """Python for the Jinja2 expression *node*.

        *text*: a string constant here is a value (plain ``str`` in an ``[html]``
        template, where a literal would be markup); not for keys and comparisons.
        """
        if node is None:
            return "None"
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is None:
            return self.todo_value(
                node, type(node).__name__, "this Jinja2 expression is not converted"
            )
        return handler(node, text)  # type: ignore[no-any-return]

    def expr_Const(self, node: nodes.Const, text: bool) -> str:
        value = node.value
        if not isinstance(value, str):
            return repr(value)
        if text and self.html and (self._plain or set(value) & set("<>&\"'")):
            # Text, not markup (in an [html] template a literal is markup); a constant
            # without these characters shows the same either way, unless its repr shows.
            return f"str({q(value)})"
        return q(value)

    # Whether string constants are values whose markup-ness shows (in a container, as a
    # filter's value or argument, an operand, a macro's argument): plain str() then.
    _plain = False

    def _items(self, items: Sequence[nodes.Node | None]) -> list[str]:
        outer, self._plain = self._plain, True
        try:
            return [self.expr(item) for item in items]
        finally:
            self._plain = outer

    def expr_TemplateData(self, node: nodes.TemplateData, text: bool) -> str:
        return q(node.data)

    def expr_Name(self, node: nodes.Name, text: bool) -> str:
        return self.lookup(node.name)

    def expr_NSRef(self, node: nodes.NSRef, text: bool) -> str:
        return f"{self.lookup(node.name)}.{node.attr}"

    def expr_Tuple(self, node: nodes.Tuple, text: bool) -> str:
        items = [self.expr(i) for i in node.items]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def expr_List(self, node: nodes.List, text: bool) -> str:
        return "[" + ", ".join(self._items(node.items)) + "]"

    def expr_Dict(self, node: nodes.Dict, text: bool) -> str:
        keys = self._items([p.key for p in node.items])
        values = self._items([p.value for p in node.items])
        pairs = [f"{k}: {v}" for k, v in zip(keys, values, strict=True)]
        return "{" + ", ".join(pairs) + "}"

    def expr_CondExpr(self, node: nodes.CondExpr, text: bool) -> str:
        otherwise = self.expr(node.expr2) if node.expr2 is not None else self.idiom("undefined")
        return f"({self.expr(node.expr1)} if {self.expr(node.test, text=False)} else {otherwise})"

    def expr_Not(self, node: nodes.Not, text: bool) -> str:
        return f"(not {self.expr(node.node, text=False)})"

    def expr_Neg(self, node: nodes.Neg, text: bool) -> str:
        return f"(-{self.expr(node.node)})"

    def expr_Pos(self, node: nodes.Pos, text: bool) -> str:
        return f"(+{self.expr(node.node)})"

    def _binary(self, node: nodes.BinExpr, text: bool) -> str:
        operator = BINARY_OPERATORS[type(node)]
        if operator in ("and", "or"):
            left, right = self.expr(node.left, text), self.expr(node.right, text)
        else:
            left, right = self._items([node.left, node.right])
        return f"({left} {operator} {right})"

    expr_Add = expr_Sub = expr_Mul = expr_Div = expr_FloorDiv = _binary
    expr_Mod = expr_Pow = expr_And = expr_Or = _binary

    def expr_Concat(self, node: nodes.Concat, text: bool) -> str:
        parts = ", ".join(self._items(node.nodes))
        escaping = ", autoescape=True" if self.autoescape[-1] else ""
        return f"{self.jinja}.concat({parts}{escaping})"

    def expr_Compare(self, node: nodes.Compare, text: bool) -> str:
        parts = [self.expr(node.expr, text=False)]
        for operand in node.ops:
            parts.append(f"{COMPARISONS[operand.op]} {self.expr(operand.expr, text=False)}")
        return "(" + " ".join(parts) + ")"

    def expr_Getattr(self, node: nodes.Getattr, text: bool) -> str:
        obj = node.node
        if isinstance(obj, nodes.Name) and self._direct(obj.name):
            return f"{self.lookup(obj.name)}.{node.attr}"
        return f"{self.idiom('dot')}({self.expr(obj, text=False)}, {q(node.attr)})"

    def _direct(self, name: str) -> bool:
        """Whether attributes of *name* are plain Python ones (a loop, self, an import)."""
        if name == "self" or name in self.imports:
            return True
        method = self.method
        assert method is not None
        python = None
        for scope in reversed(method.scopes):
            if name in scope.names:
                python = scope.names[name]
                break
        return name == "loop" and python is not None and python.startswith("loop")

    def expr_Getitem(self, node: nodes.Getitem, text: bool) -> str:
        arg = node.arg
        if isinstance(arg, nodes.Slice):
            key = f"slice({self.expr(arg.start)}, {self.expr(arg.stop)}, {self.expr(arg.step)})"
        else:
            key = self.expr(arg, text=False)
        return f"{self.idiom('at')}({self.expr(node.node, text=False)}, {key})"

    def expr_MarkSafe(self, node: nodes.MarkSafe, text: bool) -> str:
        return f"{self.jinja}.safe({self.expr(node.expr)})"

    def expr_MarkSafeIfAutoescape(self, node: nodes.MarkSafeIfAutoescape, text: bool) -> str:
        inner = self.expr(node.expr)
        return f"{self.jinja}.safe({inner})" if self.autoescape[-1] else inner

    def expr_Filter(self, node: nodes.Filter, text: bool) -> str:
        if node.node is None:
            return self.filter(node, "None")
        if node.name in MARKUP_SENSITIVE_FILTERS:
            return self.filter(node, self._items([node.node])[0])
        return self.filter(node, self.expr(node.node))

    def expr_Test(self, node: nodes.Test, text: bool) -> str:
        value = self.expr(node.node, text=False)
        args = [self.expr(a, text=False) for a in node.args]
        if node.kwargs or node.dyn_args or node.dyn_kwargs:
            return self.todo_value(node, f"test {node.name!r}", "keyword or * arguments of a test")
        if node.name in INLINE_TESTS:
            template = INLINE_TESTS[node.name]
            needed = template.count("{") - template.count("{is_undefined}") - 1
            if len(args) != needed:
                return self.todo_value(node, f"test {node.name!r}", f"takes {needed} argument(s)")
            is_undefined = self.idiom("is_undefined") if "{is_undefined}" in template else ""
            return "(" + template.format(value, *args, is_undefined=is_undefined) + ")"
        if node.name in RUNTIME_TESTS:
            return f"{self.jinja}.{RUNTIME_TESTS[node.name]}({', '.join([value, *args])})"
        module = self.job.custom(node.name)
        if module is not None:
            self.w.import_line(f"import {module}")
            return f"{module}.{node.name}({', '.join([value, *args])})"
        return self.todo_value(
            node, f"test {node.name!r}", "unknown test (give its module with --filters)"
        )

    def filter(self, node: nodes.Filter, value: str) -> str:
        """*value* through the filter *node*, and first through the filters it chains to."""
        if isinstance(node.node, nodes.Filter) and _block_filter(node.node):
            value = self.filter(node.node, value)  # {% filter a|b %}: a, then b
        name = node.name
        args = [value, *self._arguments(node)]
        from ptl_wsgi.filters.jinja2 import FILTERS

        if name in FILTERS:
            function = FILTERS[name]
            if name in AUTOESCAPE_FILTERS and self.autoescape[-1]:
                args.append("autoescape=True")
            if name in ("xmlattr", "urlize") and self.autoescape[-1]:
                args.append("escaping=True")
            callee = "abs" if function == "abs" else f"{self.jinja}.{function}"
            return f"{callee}({', '.join(args)})"
        module = self.job.custom(name)
        if module is not None:
            self.w.import_line(f"import {module}")
            return f"{module}.{name}({', '.join(args)})"
        return self.todo_value(
            node, f"filter {name!r}", "unknown filter (give its module with --filters)"
        )

    def _arguments(self, node: nodes.Filter | nodes.Call | nodes.Test) -> list[str]:
        # A filter's arguments are plain text: they may end up in its result (a fill value
        # in a list, a default) or decide how it treats markup (replace).
        outer, self._plain = self._plain, True
        try:
            return self._arguments_of(node)
        finally:
            self._plain = outer

    def _arguments_of(self, node: nodes.Filter | nodes.Call | nodes.Test) -> list[str]:
        args = [self.expr(a) for a in node.args]
        keywords: list[Any] = node.kwargs
        for kw in keywords:
            if kw.key.isidentifier() and not keyword.iskeyword(kw.key):
                args.append(f"{kw.key}={self.expr(kw.value)}")
            else:
                args.append(f"**{{{q(kw.key)}: {self.expr(kw.value)}}}")
        if node.dyn_args is not None:
            args.append(f"*{self.expr(node.dyn_args)}")
        if node.dyn_kwargs is not None:
            args.append(f"**{self.expr(node.dyn_kwargs)}")
        return args

    def expr_Call(self, node: nodes.Call, text: bool) -> str:
        return self.call(node)

    def call(self, node: nodes.Call, extra: str | None = None) -> str:
        callee = node.node
        if isinstance(callee, nodes.Name) and callee.name == "super" and not node.args:
            method = self.method
            if method is None or method.block is None:
                return self.todo_value(node, "super()", "super() outside a block")
            return f"super().{method.block}({'**scope' if method.scoped else ''})"
        if (
            isinstance(callee, nodes.Name)
            and callee.name in I18N_NAMES
            and not self._bound(callee.name)
        ):
            return self._gettext(node, callee.name)
        if isinstance(callee, nodes.Name) and callee.name == "loop" and self._bound("loop"):
            loop = self.lookup("loop")
            if loop not in self._recursive or len(node.args) != 1 or node.kwargs:
                return self.todo_value(node, "loop()", "loop() outside a recursive loop")
            return f"{self._recursive[loop]}({self.expr(node.args[0], text=False)}, {loop})"
        if isinstance(callee, nodes.Name) and callee.name == "lipsum" and not self._bound("lipsum"):
            return self.todo_value(node, "lipsum()", "random text is not converted")
        function = self.expr(callee, text=False)
        # Arguments are values: a string constant holding <>&"' is plain text (str(...)),
        # any other shows the same as markup, and reads as written.
        outer, self._plain = self._plain, False
        try:
            args = [self.expr(a) for a in node.args]
            for kw in node.kwargs:
                value = self.expr(kw.value)
                if kw.key.isidentifier() and not keyword.iskeyword(kw.key):
                    args.append(f"{kw.key}={value}")
                else:
                    args.append(f"**{{{q(kw.key)}: {value}}}")
            if node.dyn_args is not None:
                args.append(f"*{self.expr(node.dyn_args, text=False)}")
            if node.dyn_kwargs is not None:
                args.append(f"**{self.expr(node.dyn_kwargs, text=False)}")
        finally:
            self._plain = outer
        if extra:
            args.append(extra)
        return f"{function}({', '.join(args)})"

    def _bound(self, name: str) -> bool:
        method = self.method
        return method is not None and any(name in s.names for s in method.scopes)

    def _gettext(self, node: nodes.Call, name: str) -> str:
        function = self.w.use(I18N, name)
        args = [self.expr(a, text=False) for a in node.args]
        call = f"{function}({', '.join(args)})"
        pairs = [f"{q(kw.key)}: {self.expr(kw.value)}" for kw in node.kwargs]
        count = {"ngettext": 2, "npgettext": 3}.get(name)
        if count is not None and len(args) > count and "num" not in {kw.key for kw in node.kwargs}:
            pairs.append(f'"num": {args[count]}')  # as Jinja2's new-style ngettext
        if pairs or node.dyn_kwargs is not None:
            if node.dyn_kwargs is not None:
                pairs.append(f"**{self.expr(node.dyn_kwargs)}")
            return f"({call} % {{{', '.join(pairs)}}})"
        if any(isinstance(a, nodes.Const) and "%" in str(a.value) for a in node.args):
            return f"({call} % {{}})"  # Jinja2's new-style gettext formats always
        return call

    def expr_Slice(self, node: nodes.Slice, text: bool) -> str:
        return f"slice({self.expr(node.start)}, {self.expr(node.stop)}, {self.expr(node.step)})"


def _names_in_loop(body: Sequence[nodes.Node]) -> Iterator[nodes.Name]:
    """The names read in a loop's body, not inside the loops nested in it."""
    for node in body:
        if isinstance(node, nodes.Name):
            yield node
            continue
        if isinstance(node, nodes.For):
            yield from _names_in_loop([node.iter])
            continue
        yield from _names_in_loop(list(node.iter_child_nodes()))


def _bare(expression: str) -> str:
    """*expression* without the parentheses around it, when they only group it."""
    if not (expression.startswith("(") and expression.endswith(")")):
        return expression
    inner = expression[1:-1]
    try:
        same = ast.dump(ast.parse(inner, mode="eval")) == ast.dump(
            ast.parse(expression, mode="eval")
        )
    except SyntaxError:
        return expression
    return inner if same else expression


def _block_filter(node: nodes.Filter) -> bool:
    """Whether *node* is a filter block's chain (its innermost filter has no value)."""
    inner: nodes.Node | None = node
    while isinstance(inner, nodes.Filter):
        inner = inner.node
    return inner is None


def _specials(macro: nodes.Macro) -> list[str]:
    """The names Jinja2 gives a macro that its body uses: ``caller``, ``varargs``, ``kwargs``."""
    used = {n.name for n in macro.find_all(nodes.Name)}
    return [name for name in ("caller", "varargs", "kwargs") if name in used]
