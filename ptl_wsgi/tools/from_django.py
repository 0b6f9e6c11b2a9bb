"""Django templates to PTL: ``ptl-wsgi convert --from-django SRC --output DEST``.

Each template is parsed by Django's own parser (``Lexer`` and ``Parser`` of a configured
``DjangoTemplates`` engine, with its builtin tag and filter libraries and the libraries
``{% load %}`` names) and its nodelist is written as PTL a person would keep:

* ``{{ value|filter:arg }}`` becomes ``dj.show(dj.filter(dj.var(value), arg))``: the
  variable resolved as Django resolves it (:func:`ptl_wsgi.filters.django.var`), Django's
  own filter, and the value shown as Django shows it, escaped by PTL where it lands;
* ``if``/``for``/``with`` become Python's ``if``/``for``/assignments, ``forloop`` a
  :func:`ptl_wsgi.idioms.looped` loop, ``{% empty %}`` an ``if not`` after it;
* a template with blocks is a :class:`ptl_wsgi.idioms.Layout` class whose ``[html]``
  methods are the blocks, and ``{% extends %}`` a subclass of its parent's class, with
  ``{{ block.super }}`` as ``super().block()``;
* ``include``, ``url``, ``static``, ``csrf_token``, ``cycle``, ``firstof``, ``now``,
  ``spaceless``, ``comment``, ``verbatim``, ``autoescape``, ``filter``, ``ifchanged``,
  ``regroup``, ``widthratio``, ``templatetag``, ``lorem``, ``translate`` and
  ``blocktranslate`` each become the Python that renders the same.

Anything else (a custom tag, an unknown filter, a tag this converter does not know) is a
located ``TODO`` that raises when rendered, and is reported.  The converted ``render``
takes the context as keyword arguments, as the PTL engine for Django calls it.
"""

from __future__ import annotations

import keyword
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from ptl_wsgi.tools.converting import (
    Converted,
    Job,
    Problem,
    PTLWriter,
    RefusedStatement,
    TemplateFile,
    string_literal,
)

ENGINE = "django"

_DJ = "dj"
#: Names the generated code uses itself: a template's variable of such a name is renamed.
_GENERATED = {
    _DJ,
    "context",
    "self",
    "super",
    "dict",
    "str",
    "undefined",
    "looped",
    "Layout",
    "include",
    "TODO",
}
_CONSTANTS = {"True": "True", "False": "False", "None": "None"}
_LOOP = {"counter", "counter0", "revcounter", "revcounter0", "first", "last"}
_BRANCHING = {"IfNode", "ForNode", "WithNode", "IfChangedNode", "AutoEscapeControlNode"}
_TAG_MARKS = re.compile(r"<[A-Za-z/!?]|>")
_TEMPLATE_TAGS = {
    "openblock": "{%",
    "closeblock": "%}",
    "openvariable": "{{",
    "closevariable": "}}",
    "openbrace": "{",
    "closebrace": "}",
    "opencomment": "{#",
    "closecomment": "#}",
}


# -- Django ------------------------------------------------------------------------------


def configure(settings_module: str | None = None) -> Any:
    """A configured Django and its ``DjangoTemplates`` engine.

    With *settings_module* (``--settings``) or ``DJANGO_SETTINGS_MODULE`` set, the
    project's settings, so its template libraries load; otherwise a minimal
    configuration with Django's own libraries.
    """
    import django
    from django.conf import settings

    if settings_module:
        os.environ["DJANGO_SETTINGS_MODULE"] = settings_module
    if os.environ.get("DJANGO_SETTINGS_MODULE") and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the project's modules, as manage.py finds them
    if not settings.configured and not os.environ.get("DJANGO_SETTINGS_MODULE"):
        settings.configure(
            TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates"}],
            USE_TZ=True,
        )
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from django.template import engines
    from django.template.backends.django import DjangoTemplates

    for engine in engines.all():
        if isinstance(engine, DjangoTemplates):
            return engine.engine
    from django.template import Engine

    return Engine()


def _unknown_filter(name: str) -> Any:
    """A filter the parser does not know: kept for the converter to report or map."""

    def unknown(value: Any, arg: Any = None) -> Any:  # (the parser counts its arguments)
        raise NotImplementedError(name)

    unknown.unknown_filter = name  # type: ignore[attr-defined]
    return unknown


def _make_parser(engine: Any, source: str, origin: Any) -> Any:
    """Django's parser over *source*, lenient where the converter reports instead of failing."""
    from django.template import base as tbase
    from django.template.defaulttags import CommentNode, LoadNode, load

    lexer = tbase.DebugLexer(source)
    tokens = []
    for token in lexer.tokenize():
        if token.token_type == tbase.TokenType.COMMENT:
            # {# ... #} is no node: kept as a comment tag of our own.
            token = tbase.Token(
                tbase.TokenType.BLOCK, "ptl_comment " + token.contents, token.position, token.lineno
            )
        tokens.append(token)

    class UnknownTagNode(tbase.Node):  # type: ignore[misc]
        """A tag no loaded library defines (its body, if any, is dropped)."""

        child_nodelists = ()

        def __init__(self, command: str) -> None:
            self.command = command

    class LineCommentNode(tbase.TextNode):  # type: ignore[misc]
        """``{# ... #}``: no output, and no tag (``{% extends %}`` may follow it)."""

        def __init__(self, text: str) -> None:
            super().__init__("")
            self.text = text

    class Tags(dict):  # type: ignore[type-arg]
        def __missing__(self, command: str) -> Any:
            return unknown_tag

    class LenientParser(tbase.Parser):  # type: ignore[misc]
        def find_filter(self, filter_name: str) -> Any:
            if filter_name in self.filters:
                return self.filters[filter_name]
            return _unknown_filter(filter_name)

    def unknown_tag(parser: Any, token: Any) -> Any:
        command = token.split_contents()[0]
        end = "end" + command
        if any(t.token_type == tbase.TokenType.BLOCK and t.contents == end for t in parser.tokens):
            parser.parse((end,))
            parser.delete_first_token()
        return UnknownTagNode(command)

    def comment_tag(parser: Any, token: Any) -> Any:
        inner = []
        while parser.tokens:
            next_token = parser.next_token()
            if (
                next_token.token_type == tbase.TokenType.BLOCK
                and next_token.contents == "endcomment"
            ):
                break
            start, end = next_token.position
            inner.append(source[start:end])
        node = CommentNode()
        node.text = "".join(inner)
        return node

    def line_comment(parser: Any, token: Any) -> Any:
        return LineCommentNode(token.contents[len("ptl_comment ") :])

    def lenient_load(parser: Any, token: Any) -> Any:
        try:
            return load(parser, token)
        except tbase.TemplateSyntaxError:
            bits = token.split_contents()[1:]
            names = bits[bits.index("from") + 1 :] if "from" in bits else bits
            unknown = [name for name in names if name not in parser.libraries]
            node = LoadNode()
            node.failure = (
                f"unknown tag library {', '.join(map(repr, unknown or names))} "
                "(give the project's settings: --settings)"
            )
            return node

    parser = LenientParser(tokens, engine.template_libraries, engine.template_builtins, origin)
    parser.tags = Tags(parser.tags)
    parser.tags["comment"] = comment_tag
    parser.tags["ptl_comment"] = line_comment
    parser.tags["load"] = lenient_load
    return parser


def parse(source: str, name: str, engine: Any) -> Any:
    """The nodelist of *source* by Django's parser (raises ``TemplateSyntaxError``)."""
    from django.template.base import Origin, Template

    origin = Origin(name=name, template_name=name)
    template = Template.__new__(Template)
    template.engine = engine
    template.origin = origin
    template.name = name
    template.source = source
    parser = _make_parser(engine, source, origin)
    parser.template = template  # (Django sets it; the if-parser and extends read it)
    return parser.parse()


# -- names -------------------------------------------------------------------------------


def class_name(template_name: str) -> str:
    """The class a template with blocks defines: ``polls/base.html`` → ``Base``."""
    stem = os.path.basename(template_name).split(".")[0]
    words = re.findall(r"[A-Za-z0-9]+", stem) or ["Template"]
    name = "".join(w[:1].upper() + w[1:] for w in words)
    if not name[0].isalpha():
        name = "T" + name
    return name + "Page" if name in {"Layout", "Page"} or keyword.iskeyword(name) else name


def method_name(block_name: str) -> str:
    """The method a ``{% block NAME %}`` becomes (the same in every template)."""
    name = re.sub(r"\W", "_", block_name, flags=re.ASCII)
    if not name or name[0].isdigit():
        name = "block_" + name
    if keyword.iskeyword(name) or name in {"page", "context"} or name.startswith("__"):
        name += "_block"
    return name


def _identifier(name: str) -> str:
    ident = re.sub(r"\W", "_", name, flags=re.ASCII)
    if not ident or ident[0].isdigit():
        ident = "v_" + ident
    return ident


class _Function:
    """The names of one generated function: the context's (free) and its locals."""

    def __init__(self, taken: set[str], context: str, free: Mapping[str, str] | None = None):
        self.taken = set(taken)
        self.context = context  # the expression of the context mapping
        self.free: dict[str, str] = {}
        self.scopes: list[dict[str, str]] = [{}]
        # Where each scope's statement starts (the writer's mark), for names bound later.
        self.marks: list[tuple[int, int] | None] = [None]
        # Context names the template sets (`as name`): passed on to included templates.
        self.assigned: set[str] = set()
        # The names set inside each for/with (by its node), found by the dry run: bound from
        # the start of the block, so every iteration after the one that set it sees it.
        self.keys: list[int] = [0]
        self.set_inside: dict[int, list[str]] = {}
        self.cycles: dict[int, str] = {}
        for name, ident in (free or {}).items():
            self.taken.add(ident)
            self.free[name] = ident

    def fresh(self, name: str) -> str:
        candidate = _identifier(name)
        while candidate in self.taken or keyword.iskeyword(candidate):
            candidate += "_"
        self.taken.add(candidate)
        return candidate

    def lookup(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name not in self.free:
            self.free[name] = self.fresh(name)
        return self.free[name]

    def bind(self, name: str) -> str:
        ident = self.fresh(name)
        self.scopes[-1][name] = ident
        return ident

    def bound(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def push(self, mark: tuple[int, int] | None = None, key: int = 0) -> None:
        self.scopes.append({})
        self.marks.append(mark)
        self.keys.append(key)

    def pop(self) -> None:
        self.scopes.pop()
        self.marks.pop()
        self.keys.pop()

    def locals(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for scope in self.scopes:
            found.update(scope)
        return found


# -- the converter -----------------------------------------------------------------------


class _Converter:
    def __init__(self, file: TemplateFile, job: Job, engine: Any) -> None:
        self.file = file
        self.job = job
        self.engine = engine
        self.html = job.escapes(file)
        self.kind = "[html]" if self.html else "[plain]"
        self.problems: list[Problem] = []
        self.w = PTLWriter(reserved={_DJ})
        self.module_names: set[str] = set()
        self.fn = _Function(set(_GENERATED), "context")
        self.cycle_lines: list[str] = []
        # None: as the caller's ({% include %} and blocks inherit it, as in Django).
        self.autoescape: bool | None = None
        self.block_method: str | None = None
        self.library_filters: dict[tuple[str, str], str] = {}
        self.nested = 0  # depth of template functions nested in the one being written
        self.in_tag = False  # the text so far ends inside an HTML tag
        self.class_name = ""

    # -- reporting -----------------------------------------------------------------------

    def line_of(self, node: Any) -> int:
        token = getattr(node, "token", None)
        return getattr(token, "lineno", 0) or 0

    def problem(self, node: Any, construct: str, reason: str) -> Problem:
        found = Problem(self.file.name, self.line_of(node), construct, reason)
        self.problems.append(found)
        return found

    def todo(self, node: Any, construct: str, reason: str) -> None:
        self.w.todo(self.problem(node, construct, reason))

    def todo_value(self, node: Any, construct: str, reason: str) -> str:
        return self.w.todo(self.problem(node, construct, reason), statement=False)

    # -- expressions ---------------------------------------------------------------------

    def literal(self, value: Any) -> str:
        if isinstance(value, str):
            return string_literal(str(value))
        return repr(value)

    def variable(self, variable: Any, missing: str | None = None, node: Any = None) -> str:
        """A ``Variable``'s value; *missing* is what a failed lookup gives (default ``""``)."""
        if variable.lookups is None:
            value = self.literal(variable.literal)
            if variable.translate:
                context = variable.message_context
                extra = f", context={self.literal(context)}" if context else ""
                return f"{_DJ}.translate({value}{extra})"
            return value
        first, *rest = variable.lookups
        if first in _CONSTANTS and self.fn.bound(first) is None and not rest:
            return _CONSTANTS[first]
        if first == "block" and rest[:1] == ["super"] and self.block_method:
            if self.fn.bound("block") is None:
                base = f"{self._super()}.{self.block_method}()"
                rest = rest[1:]
                if not rest:
                    return base
                bits = ", ".join(map(self.literal, rest))
                return f"{_DJ}.var({base}, {bits}{self._missing(missing)})"
        ident = self.fn.lookup(first)
        if first == "forloop" and self.fn.bound(first) and len(rest) == 1 and rest[0] in _LOOP:
            return f"{ident}.{rest[0]}"  # our own loop's: plain attributes
        args = "".join(", " + self.literal(bit) for bit in rest)
        return f"{_DJ}.var({ident}{args}{self._missing(missing)})"

    def argument(self, variable: Any, node: Any) -> str:
        """A filter's variable argument: resolved strictly, as Django does."""
        code = self.variable(variable, None, node)
        prefix = f"{_DJ}.var("
        if code.startswith(prefix):
            return f"{_DJ}.argument(" + code[len(prefix) :]
        return code

    def _super(self) -> str:
        # super() names its class and instance in a function nested in a block's method.
        return f"super({self.class_name}, self)" if self.nested else "super()"

    def _missing(self, missing: str | None) -> str:
        return "" if missing is None else f", missing={missing}"

    def filtered(self, fe: Any, missing: str | None = None, node: Any = None) -> str:
        """A ``FilterExpression``: the variable or constant, through its filters."""
        from django.template.base import Variable

        if isinstance(fe.var, Variable):
            code = self.variable(fe.var, missing, node)
        else:
            code = self.constant(fe)
        for func, args in fe.filters:
            arguments = []
            for lookup, arg in args:
                if lookup:
                    arguments.append(self.argument(arg, node))
                else:
                    arguments.append(self.constant_value(arg))
            code = self.call_filter(func, code, arguments, node)
        return code

    def constant(self, fe: Any) -> str:
        from django.template.base import Variable, filter_re

        match = filter_re.match(fe.token)
        text = match.group("constant") if match else None
        if text:
            return self.variable(Variable(text))
        return self.literal(fe.var)

    def constant_value(self, value: Any) -> str:
        # A constant argument: strings are safe in Django, as literals are markup here;
        # a translated one (_("...")) is a lazy translation.
        from django.utils.functional import Promise

        if isinstance(value, Promise):
            args = getattr(value, "_args", None) or getattr(value, "_proxy____args", None)
            if args:
                return f"{_DJ}.translate({self.literal(str(args[-1]).replace('%%', '%'))})"
            return f"{_DJ}.translate({self.literal(str(value))})"
        return self.literal(value)

    def call_filter(self, func: Any, value: str, arguments: list[str], node: Any) -> str:
        name = str(getattr(func, "_filter_name", None) or getattr(func, "__name__", "?"))
        args = "".join(", " + a for a in arguments)
        escape = self._escape_argument()
        needs = getattr(func, "needs_autoescape", False)
        unknown = getattr(func, "unknown_filter", None)
        if unknown is not None:
            custom = self._custom_filter(unknown)
            if custom is None:
                return self.todo_value(
                    node, f"|{unknown}", "unknown filter (name its module with --filters)"
                )
            return f"{custom}({value}{args}{escape})"
        from django.template.defaultfilters import register

        if register.filters.get(name) is func:
            return f"{_DJ}.{name}({value}{args}{escape if needs else ''})"
        module = getattr(func, "__module__", None)
        if not module:
            return self.todo_value(node, f"|{name}", "a filter without a module")
        return f"{self._library_filter(module, name)}({value}{args}{escape if needs else ''})"

    def _custom_filter(self, name: str) -> str | None:
        for module_name, module in self.job.filters.items():
            register = getattr(module, "register", None)
            filters = getattr(register, "filters", None)
            if (isinstance(filters, Mapping) and name in filters) or (
                not name.startswith("_") and callable(getattr(module, name, None))
            ):
                return self._library_filter(module_name, name)
        return None

    def _library_filter(self, module: str, name: str) -> str:
        key = (module, name)
        if key not in self.library_filters:
            ident = _identifier(name) + "_filter"
            self.library_filters[key] = ident
            self.module_names.add(ident)
            self.w.import_line(
                f"{ident} = {_DJ}.library_filter({string_literal(module)}, {string_literal(name)})"
            )
        return self.library_filters[key]

    def condition(self, cond: Any) -> str:
        from django.template.defaulttags import TemplateLiteral

        if isinstance(cond, TemplateLiteral):
            return self.filtered(cond.value, missing="None")
        op = cond.id
        operands = [cond.first] if op == "not" else [cond.first, cond.second]
        if op == "not":
            code = f"not {self._operand(cond.first)}"
        else:
            left, right = self._operand(cond.first), self._operand(cond.second)
            if op in ("or", "and", "is", "is not", "==", "!="):
                code = f"{left} {op} {right}"
            else:
                code = f"{_DJ}.compare({left}, {op!r}, {right})"
        if any(isinstance(o, TemplateLiteral) and o.value.filters for o in operands):
            # Django's operators are false where working them out raises (a filter's error).
            code = f"{_DJ}.false_on_error(lambda: {code})"
        return code

    def _operand(self, cond: Any) -> str:
        from django.template.defaulttags import TemplateLiteral

        code = self.condition(cond)
        return code if isinstance(cond, TemplateLiteral) else f"({code})"

    def _escape_argument(self) -> str:
        return "" if self.autoescape is None else f", autoescape={self.autoescape}"

    def show(self, code: str) -> str:
        if self.autoescape and not self.html:  # {% autoescape on %} in a text template
            return f"{_DJ}.escape({_DJ}.show({code}, autoescape=True))"
        return f"{_DJ}.show({code}{self._escape_argument()})"

    def call_template(self, code: str, node: Any) -> None:
        """Output another template's render: it escapes as this place does, as in Django."""
        if self.autoescape is None:
            self.value(code, node, result=True)
        else:
            with self.w.block(f"with {_DJ}.autoescaping({self.autoescape}):"):
                self.value(code, node, result=True)

    def context_dict(self, extra: Mapping[str, str] | None = None) -> str:
        """The current context as a dict: the render's context and the locals bound so far."""
        items = [f"**{self.fn.context}"]
        names = {name: self.fn.free[name] for name in sorted(self.fn.assigned)}
        names.update(self.fn.locals())
        for name, ident in names.items():
            items.append(f"{string_literal(name)}: {ident}")
        for name, code in (extra or {}).items():
            items.append(f"{string_literal(name)}: {code}")
        return "{" + ", ".join(items) + "}"

    # -- nodes ---------------------------------------------------------------------------

    def nodelist(self, nodes: Any) -> None:
        nodes = list(nodes)
        i = 0
        while i < len(nodes):
            node = nodes[i]
            if self.in_tag and type(node).__name__ in _BRANCHING:
                i = self.tag_part(nodes, i)
            else:
                self.node(node)
                i += 1

    def tag_part(self, nodes: list[Any], start: int) -> int:
        """`<form{% if a %} x="1"{% endif %}{% if b %} y{% endif %}>`: the rest of the tag.

        PTL follows the HTML through each branch, and a tag's attributes cannot end two
        ways; so the nodes up to the tag's end make its middle as markup of their own,
        written as text (where Django's escaping is PTL's too).  Returns the index of the
        first node after them; the text from the tag's ``>`` on is output as text.
        """
        from django.template.base import TextNode

        ident = self.fn.fresh("tag_part")
        end, rest = start, ""
        self.nested += 1
        try:
            with self.w.block(f"def {ident} {self.kind} ():"):
                self.in_tag = False  # (the part is markup of its own, from text)
                while end < len(nodes):
                    node = nodes[end]
                    if isinstance(node, TextNode) and ">" in node.s and end > start:
                        head, _, tail = node.s.partition(">")
                        self.w.text(head)
                        rest = ">" + tail
                        end += 1
                        break
                    self.node(node)
                    end += 1
        finally:
            self.nested -= 1
        self.value(f"{ident}()", nodes[start], result=True)
        self.in_tag = not rest
        if rest:
            self.node_TextNode(TextNode(rest))
        return end

    def node(self, node: Any) -> None:
        self.w.origin = self.line_of(node) or self.w.origin  # where output lines come from
        method = getattr(self, "node_" + type(node).__name__, None)
        if method is None:
            func = getattr(node, "func", None)  # a simple_tag's or inclusion_tag's function
            where = getattr(func, "__module__", None) or type(node).__module__
            self.todo(node, self._tag_name(node), f"a custom tag ({where}): write it in PTL")
            return
        method(node)

    def _tag_name(self, node: Any) -> str:
        token = getattr(node, "token", None)
        contents = getattr(token, "contents", "") or ""
        return "{% " + (contents.split() or ["?"])[0] + " %}"

    def node_TextNode(self, node: Any) -> None:
        self.w.text(node.s)
        for mark in _TAG_MARKS.finditer(node.s):  # inside a tag, between `<name` and `>`
            self.in_tag = mark.group() != ">"

    def value(self, code: str, node: Any, result: bool = False) -> None:
        """Output *code*'s value, remembering the template line it came from.

        *result*: the value is a template's (markup, never None), written bare.
        """
        self.w.value(code, result=result)

    def node_VariableNode(self, node: Any) -> None:
        code = self.filtered(node.filter_expression, node=node)
        if code == f"{self._super()}.{self.block_method}()":  # {{ block.super }}: markup
            self.value(code, node, result=True)
        else:
            self.value(self.show(code), node)

    def node_LineCommentNode(self, node: Any) -> None:
        self.node_CommentNode(node)

    def node_CommentNode(self, node: Any) -> None:
        text = getattr(node, "text", "")
        if text.strip():
            self.w.comment(text)

    def node_LoadNode(self, node: Any) -> None:
        failure = getattr(node, "failure", None)
        if failure:
            self.problem(node, "{% " + node.token.contents + " %}", failure)

    def node_UnknownTagNode(self, node: Any) -> None:
        self.todo(node, "{% " + node.command + " %}", "unknown tag (a custom tag library?)")

    def node_VerbatimNode(self, node: Any) -> None:
        self.w.text(node.content)

    def node_TemplateTagNode(self, node: Any) -> None:
        self.w.text(_TEMPLATE_TAGS[node.tagtype])

    def node_AutoEscapeControlNode(self, node: Any) -> None:
        before, self.autoescape = self.autoescape, node.setting
        try:
            self.nodelist(node.nodelist)
        finally:
            self.autoescape = before

    def node_IfNode(self, node: Any) -> None:
        for i, (cond, nodes) in enumerate(node.conditions_nodelists):
            if cond is None:
                head = "else:"
            else:
                test = self.condition(cond)
                if f"{_DJ}.argument(" in test:  # Django takes a missing one as false here
                    test = f"{_DJ}.condition(lambda: {test})"
                head = ("if " if i == 0 else "elif ") + test + ":"
            with self.w.block(head):
                self.nodelist(nodes)

    def _uses_loop(self, nodelist: Any) -> bool:
        from django.template.base import Node
        from django.template.defaulttags import IfChangedNode
        from django.template.loader_tags import BlockNode, IncludeNode

        for sub in nodelist.get_nodes_by_type(Node):
            if isinstance(sub, (IncludeNode, BlockNode, IfChangedNode)):
                return True
            token = getattr(sub, "token", None)
            if token is not None and token.token_type.value != 0:
                if re.search(r"\bforloop\b", token.contents):
                    return True
        return False

    def node_ForNode(self, node: Any) -> None:
        sequence = self.filtered(node.sequence, missing="None", node=node)
        extra = ", reverse=True" if node.is_reversed else ""
        if len(node.loopvars) > 1:
            extra += f", unpack={len(node.loopvars)}"
        values = f"{_DJ}.for_values({sequence}{extra})"
        mark = self.w.mark()
        empty = len(node.nodelist_empty) > 0
        if empty:
            name = self.fn.fresh(_identifier(node.loopvars[0]) + "_values")
            self.w.line(f"{name} = {values}")
            values = name
        use_loop = self._uses_loop(node.nodelist_loop)
        self.fn.push(mark, id(node))
        try:
            self._prebind(node)
            targets = [self.fn.bind(v) for v in node.loopvars]
            target = targets[0] if len(targets) == 1 else "(" + ", ".join(targets) + ")"
            if use_loop:
                parent = self.fn.bound("forloop")
                loop = self.fn.bind("forloop")
                looped = self.w.use("ptl_wsgi.idioms", "looped")
                extra = f", parent={parent}" if parent else ""
                head = f"for {loop}, {target} in {looped}({values}{extra}):"
            else:
                head = f"for {target} in {values}:"
            with self.w.block(head):
                self.nodelist(node.nodelist_loop)
        finally:
            self.fn.pop()
        if empty:
            with self.w.block(f"if not {values}:"):
                self.nodelist(node.nodelist_empty)

    def node_WithNode(self, node: Any) -> None:
        values = {name: self.filtered(fe, node=node) for name, fe in node.extra_context.items()}
        self.fn.push(self.w.mark(), id(node))
        try:
            self._prebind(node)
            for name, code in values.items():
                self.w.line(f"{self.fn.bind(name)} = {code}")
            self.nodelist(node.nodelist)
        finally:
            self.fn.pop()

    def _prebind(self, node: Any) -> None:
        """Bind, as the block starts, the names the block sets later (`as name`)."""
        for name in self.fn.set_inside.get(id(node), []):
            outer = self.fn.lookup(name)
            ident = self.fn.scopes[-1][name] = self.fn.fresh(name)
            self.w.line(f"{ident} = {outer}")

    def _assign(self, name: str, code: str, upward: bool = False) -> str:
        """``as name``: *name* is *code*'s value from here on, where Django's context has it.

        Django sets it in the innermost ``for`` or ``with``, until that ends (``{% cycle %}``
        where the name already is, *upward*); at the template's own level it replaces the
        context's value.  A name first bound inside a block is its outer value before.
        """
        if upward or len(self.fn.scopes) == 1:
            ident = (self.fn.bound(name) if upward else self.fn.scopes[0].get(name)) or ""
            if not ident:
                ident = self.fn.lookup(name)
                self.fn.assigned.add(name)
        else:
            scope, mark = self.fn.scopes[-1], self.fn.marks[-1]
            ident = scope.get(name, "")
            if not ident:
                self.fn.set_inside.setdefault(self.fn.keys[-1], []).append(name)
                outer = self.fn.lookup(name)
                ident = scope[name] = self.fn.fresh(name)
                if mark is not None:
                    self.w.insert(mark, [f"{ident} = {outer}"])
        self.w.line(f"{ident} = {code}")
        return ident

    def node_CsrfTokenNode(self, node: Any) -> None:
        token = self.fn.bound("csrf_token") or self.fn.lookup("csrf_token")
        self.value(f"{_DJ}.csrf_token({token})", node)

    def node_URLNode(self, node: Any) -> None:
        args = [self.filtered(node.view_name, node=node)]
        args += [self.filtered(a, node=node) for a in node.args]
        for key, fe in node.kwargs.items():
            value = self.filtered(fe, node=node)
            if key.isidentifier() and not keyword.iskeyword(key) and key != "silent":
                args.append(f"{key}={value}")
            else:
                args.append(f"**{{{string_literal(key)}: {value}}}")
        if node.asvar:
            self._assign(node.asvar, f"{_DJ}.url({', '.join(args)}, silent=True)")
        else:
            self.value(self.show(f"{_DJ}.url({', '.join(args)})"), node)

    def _output_or_assign(self, name: str | None, code: str, node: Any) -> None:
        if name:
            self._assign(name, code)
        else:
            self.value(self.show(code), node)

    def node_StaticNode(self, node: Any) -> None:
        path = self.filtered(node.path, node=node)
        self._output_or_assign(node.varname, f"{_DJ}.static({path})", node)

    def _output_raw_or_assign(self, name: str | None, code: str, node: Any) -> None:
        # The tags whose output Django does not escape: made of the template's own text.
        if name:
            self._assign(name, code)
        else:
            self.value(f"{_DJ}.show({code}, autoescape=False)", node)

    def node_PrefixNode(self, node: Any) -> None:
        code = f"{_DJ}.static_prefix({string_literal(node.name)})"
        self._output_raw_or_assign(node.varname, code, node)

    def node_NowNode(self, node: Any) -> None:
        code = f"{_DJ}.now({self.literal(str(node.format_string))})"
        self._output_raw_or_assign(node.asvar, code, node)

    def node_FirstOfNode(self, node: Any) -> None:
        # The first true value, the later ones not worked out: Python's `or`, as Django's loop.
        values = [self.filtered(v, missing="None", node=node) for v in node.vars]
        code = " or ".join([*values, '""'])
        self._output_or_assign(node.asvar, f"({code})" if len(values) else code, node)

    def node_CycleNode(self, node: Any) -> None:
        state = self._state(node, "cycle", "Cycle")
        values = ", ".join(self.filtered(v, node=node) for v in node.cyclevars)
        code = f"{state}({values})"
        if node.variable_name:
            ident = self._assign(node.variable_name, code, upward=True)
            if not node.silent:
                self.value(self.show(ident), node)
        else:
            self.value(self.show(code), node)

    def _state(self, node: Any, name: str, kind: str, *args: str) -> str:
        """A tag's state for the whole render, made at the start of the function."""
        key = id(node)
        if key not in self.fn.cycles:
            ident = self.fn.fresh(name)
            self.fn.cycles[key] = ident
            self.cycle_lines.append(f"{ident} = {_DJ}.{kind}({', '.join(args)})")
        return self.fn.cycles[key]

    def node_ResetCycleNode(self, node: Any) -> None:
        self.w.line(f"{self._state(node.node, 'cycle', 'Cycle')}.reset()")

    def node_SpacelessNode(self, node: Any) -> None:
        body = self.inner_template(node.nodelist, "spaceless")
        self.value(f"{_DJ}.spaceless({body})", node)

    def node_FilterNode(self, node: Any) -> None:
        code = self.inner_template(node.nodelist, "filtered")
        for func, args in node.filter_expr.filters:
            arguments = [
                self.argument(arg, node) if lookup else self.constant_value(arg)
                for lookup, arg in args
            ]
            code = self.call_filter(func, code, arguments, node)
        # Django outputs what the filters make of the (escaped) body as it is.
        self.value(f"{_DJ}.show({code}, autoescape=False)", node)

    def inner_template(self, nodelist: Any, name: str) -> str:
        """A nested template rendering *nodelist*; the expression calling it."""
        ident = self.fn.fresh(name)
        self.nested += 1
        try:
            with self.w.block(f"def {ident} {self.kind} ():"):
                self.nodelist(nodelist)
        finally:
            self.nested -= 1
        return f"{ident}()"

    def node_IfChangedNode(self, node: Any) -> None:
        tag = string_literal(f"{self.file.name}:{self.line_of(node)}:{len(self.fn.cycles)}")
        state = self._state(node, "changed", "Changed", tag)
        loop = self.fn.lookup("forloop")  # the state is the loop's, as in Django
        if node._varlist:
            values = "".join(
                ", " + self.filtered(v, missing="None", node=node) for v in node._varlist
            )
            with self.w.block(f"if {state}({loop}{values}):"):
                self.nodelist(node.nodelist_true)
        else:
            body = self.inner_template(node.nodelist_true, "content")
            shown = self.fn.fresh("shown")
            self.w.line(f"{shown} = {body}")
            with self.w.block(f"if {state}({loop}, str({shown})):"):
                self.w.value(shown)
        if len(node.nodelist_false):
            with self.w.block("else:"):
                self.nodelist(node.nodelist_false)

    def node_RegroupNode(self, node: Any) -> None:
        target = self.filtered(node.target, missing="None", node=node)
        self.fn.push()
        item = self.fn.bind(node.var_name)
        key = self.filtered(node.expression, missing="None", node=node)
        self.fn.pop()
        self._assign(node.var_name, f"{_DJ}.regroup({target}, lambda {item}: {key})")

    def node_WidthRatioNode(self, node: Any) -> None:
        args = ", ".join(
            self.filtered(fe, node=node) for fe in (node.val_expr, node.max_expr, node.max_width)
        )
        self._output_or_assign(node.asvar, f"{_DJ}.widthratio({args})", node)

    def node_LoremNode(self, node: Any) -> None:
        count = self.filtered(node.count, node=node)
        self.value(f"{_DJ}.lorem({count}, {node.method!r}, {node.common!r})", node)

    def node_SimpleNode(self, node: Any) -> None:
        """A library's ``simple_tag``: its function called with the values, as Django does."""
        func = node.func
        module, name = getattr(func, "__module__", None), getattr(func, "__name__", "")
        if not module or getattr(sys.modules.get(module), name, None) is not func:
            self.todo(node, self._tag_name(node), "a tag whose function its module does not name")
            return
        args = [string_literal(module), string_literal(name)]
        args.append(self.context_dict() if node.takes_context else "None")
        args += [self.filtered(fe, node=node) for fe in node.args]
        for key, fe in node.kwargs.items():
            value = self.filtered(fe, node=node)
            if key.isidentifier() and not keyword.iskeyword(key) and key not in ("module", "name"):
                args.append(f"{key}={value}")
            else:
                args.append(f"**{{{string_literal(key)}: {value}}}")
        code = f"{_DJ}.simple_tag({', '.join(args)})"
        if node.target_var is not None:
            self._assign(node.target_var, code)
        else:
            self.value(self.show(code), node)

    def node_DebugNode(self, node: Any) -> None:
        self.todo(node, "{% debug %}", "the context dump has no PTL equivalent")

    def node_TranslateNode(self, node: Any) -> None:
        message = self.filtered(node.filter_expression, node=node)
        prefix = f"{_DJ}.translate("
        if message.startswith(prefix) and message.endswith(")"):
            message = message[len(prefix) : -1]
        extra = ""
        if node.message_context:
            extra += f", context={self.filtered(node.message_context, node=node)}"
        if node.noop:
            extra += ", noop=True"
        self._output_or_assign(node.asvar, f"{_DJ}.translate({message}{extra})", node)

    def node_BlockTranslateNode(self, node: Any) -> None:
        from django.template.base import TokenType
        from django.utils.translation import trim_whitespace

        def message(tokens: Any) -> tuple[str, list[str]]:
            parts, names = [], []
            for token in tokens:
                if token.token_type == TokenType.TEXT:
                    parts.append(token.contents.replace("%", "%%"))
                elif token.token_type == TokenType.VAR:
                    parts.append(f"%({token.contents})s")
                    names.append(token.contents)
            text = "".join(parts)
            return (trim_whitespace(text) if node.trimmed else text), names

        values = {name: self.filtered(fe, node=node) for name, fe in node.extra_context.items()}
        self.fn.push()
        try:
            for name, code in values.items():
                self.w.line(f"{self.fn.bind(name)} = {code}")
            singular, names = message(node.singular)
            args = [string_literal(singular)]
            if node.plural and node.countervar and node.counter:
                count = self.filtered(node.counter, node=node)
                counter = self.fn.bind(node.countervar)
                self.w.line(f"{counter} = {count}")
                plural, more = message(node.plural)
                names += more
                args.append(f"plural={string_literal(plural)}")
                args.append(f"count={counter}")
            if node.message_context:
                args.append(f"context={self.filtered(node.message_context, node=node)}")
            items = []
            for name in dict.fromkeys(names):
                ident = self.fn.bound(name) or self.fn.lookup(name)
                items.append(f"{string_literal(name)}: {ident}")
            args.insert(1, "{" + ", ".join(items) + "}")
            if self.autoescape is not None:
                args.append(f"autoescape={self.autoescape}")
            code = f"{_DJ}.blocktranslate({', '.join(args)})"
        finally:
            self.fn.pop()
        if node.asvar:
            self._assign(node.asvar, code)
        else:
            self.value(code, node)

    def node_GetCurrentLanguageNode(self, node: Any) -> None:
        self._assign(node.variable, f"{_DJ}.current_language()")

    def node_IncludeNode(self, node: Any) -> None:
        values = {name: self.filtered(fe, node=node) for name, fe in node.extra_context.items()}
        if node.isolated_context:
            context = "{" + ", ".join(f"{string_literal(k)}: {v}" for k, v in values.items()) + "}"
        else:
            context = self.context_dict(values)
        if self._computed_name(node.template) or self.job.resolve(str(node.template.var)) is None:
            # Named at render, or held by another template folder: found by the loader then.
            name = self.filtered(node.template, node=node)
            self.call_template(f"{_DJ}.include(__name__, {name}, {context})", node)
            return
        module = self.template_module(node.template, node, "{% include %}")
        if module is not None:
            self.call_template(f"{module}.render(**{context})", node)

    def _computed_name(self, fe: Any) -> bool:
        from django.template.base import Variable

        return isinstance(fe.var, Variable) or bool(fe.filters) or not isinstance(fe.var, str)

    def _target(self, name: str) -> TemplateFile:
        """The template *name* of the tree; outside SRC, the one its converted name will be.

        Django's template folders are one namespace, and so are the PTL engine's: a
        template another folder holds (the project's ``base.html``) is imported under
        its converted name, from wherever the engine finds it once that folder is
        converted too.
        """
        return self.job.resolve(name) or TemplateFile(name.lstrip("/"), "", "")

    def template_module(self, fe: Any, node: Any, construct: str) -> str | None:
        """The name of the converted module of the template *fe* names."""
        if self._computed_name(fe):
            self.todo(node, construct, "a template name computed at run time")
            return None
        target = self._target(str(fe.var))
        stem = target.ptl_name.rsplit("/", 1)[-1][: -len(".ptl")]
        alias = _identifier(stem) + "_ptl"  # apart from the template's values: row_ptl.render()
        statement = self.job.import_code(self.file, target, alias)
        if not statement.startswith("from "):
            self.w.import_line("from ptl_wsgi.loader import loader_for")
        self.w.import_line(statement)
        self.module_names.add(alias)
        return alias

    def node_BlockNode(self, node: Any) -> None:
        method = method_name(node.name)
        local = self.fn.locals()
        if local:
            items = ", ".join(f"{string_literal(k)}: {v}" for k, v in local.items())
            self.call_template(f"{_DJ}.scoped(self, {{{items}}}).{method}()", node)
        else:
            self.call_template(f"self.{method}()", node)

    def node_ExtendsNode(self, node: Any) -> None:  # only reached when misplaced
        self.todo(node, "{% extends %}", "not the first tag of the template")

    # -- functions -----------------------------------------------------------------------

    def taken(self) -> set[str]:
        """The names a function may not give the template's values: the module's own."""
        return set(_GENERATED) | self.module_names

    def function(
        self, head: str, context: str, nodes: Any, method: str | None = None, render: bool = False
    ) -> None:
        """A template function: its prologue binds the context names its body uses."""
        # A dry run finds the names the body takes from the context, and its states.
        dry = _Converter(self.file, self.job, self.engine)
        dry.module_names = set(self.module_names)
        dry.fn = _Function(self.taken(), context)
        dry.block_method = method
        dry.class_name = self.class_name
        dry.nodelist(nodes)
        self.fn = _Function(self.taken(), context, dict(dry.fn.free))
        self.fn.cycles = dict(dry.fn.cycles)
        self.fn.assigned = set(dry.fn.assigned)
        self.fn.set_inside = dry.fn.set_inside
        self.fn.taken.update(dry.fn.cycles.values())
        self.block_method = method
        undefined = self.w.use("ptl_wsgi.idioms", "undefined") if dry.fn.free else ""
        with self.w.block(head):
            for name, ident in self.fn.free.items():
                self.w.line(f"{ident} = {context}.get({string_literal(name)}, {undefined})")
            for line in dry.cycle_lines:
                self.w.line(line)
            if render and not self.html:
                with self._unescaped():
                    self.nodelist(nodes)
            else:
                self.nodelist(nodes)

    def _unescaped(self) -> Any:
        """The render of a text template: Django's engine did not escape (``autoescape off``)."""
        return self.w.block(f"with {_DJ}.autoescaping(False):")

    def convert(self, source: str) -> str:
        from django.template import TemplateSyntaxError
        from django.template.loader_tags import BlockNode, ExtendsNode

        self.w.header(f"Converted from the Django template {self.file.name} by ptl-wsgi convert.")
        self.w.import_line(f"from ptl_wsgi.filters import django as {_DJ}")
        try:
            nodes = parse(source, self.file.name, self.engine)
        except TemplateSyntaxError as exc:
            line = getattr(getattr(exc, "token", None), "lineno", 0)
            problem = Problem(self.file.name, line, "template", f"Django: {exc}")
            self.problems.append(problem)
            with self.w.block(f"def render {self.kind} (**context):"):
                self.w.todo(problem)
            return self.w.getvalue()
        extends = next((n for n in nodes if isinstance(n, ExtendsNode)), None)
        blocks = nodes.get_nodes_by_type(BlockNode)
        if extends is None and not blocks:
            self.function(f"def render {self.kind} (**context):", "context", nodes, render=True)
            return self._checked()
        name = self.class_name = class_name(self.file.name)
        self.module_names.add(name)
        base = None
        plain_parent = None  # the parent's module, when the parent has no blocks
        if extends is not None:
            module = self.template_module(extends.parent_name, extends, "{% extends %}")
            target = self._target(str(extends.parent_name.var)) if module else None
            if target is not None and _has_blocks(target, self.engine):
                base = f"{module}.{class_name(target.name)}"
            else:
                plain_parent = module
            blocks = extends.nodelist.get_nodes_by_type(BlockNode)
        if base is None:
            base = self.w.use("ptl_wsgi.idioms", "Layout")
        self.w.blank()
        with self.w.block(f"class {name}({base}):"):
            for block in blocks:
                method = method_name(block.name)
                self.w.blank()
                self.function(
                    f"def {method} {self.kind} (self):", "self.context", block.nodelist, method
                )
            if extends is None:
                self.w.blank()
                self.function(f"def page {self.kind} (self):", "self.context", nodes)
            elif plain_parent is not None:  # a parent without blocks is the whole page
                self.w.blank()
                with self.w.block(f"def page {self.kind} (self):"):
                    self.w.value(f"{plain_parent}.render(**self.context)", result=True)
        self.w.blank()
        with self.w.block(f"def render {self.kind} (**context):"):
            if extends is not None:  # Django outputs the text before {% extends %} too
                self.nodelist(nodes[: nodes.index(extends)])
            if self.html:
                self.w.value(f"{name}(**context).page()", result=True)
            else:
                with self._unescaped():
                    self.w.value(f"{name}(**context).page()", result=True)
        return self._checked()

    def _checked(self) -> str:
        """The module's source, with every output PTL refuses a reported ``TODO``.

        Where PTL refuses the module still (a branch that leaves the HTML elsewhere than
        its other branches), the whole template is reported and its render a ``TODO``.
        """
        try:
            self.problems += self.w.compile_checked(self.file)
        except (SyntaxError, RefusedStatement) as exc:
            line, reason = (
                (exc.line, exc.reason)
                if isinstance(exc, RefusedStatement)
                else (self.w.origin or 1, str(exc.msg))
            )
            problem = Problem(self.file.name, line or 1, "template", f"PTL refuses it: {reason}")
            self.problems.append(problem)
            w = PTLWriter(reserved={_DJ})
            w.header(f"Converted from the Django template {self.file.name} by ptl-wsgi convert.")
            with w.block(f"def render {self.kind} (**context):"):
                w.todo(problem)
            return w.getvalue()
        return self.w.getvalue()


def _has_blocks(file: TemplateFile, engine: Any) -> bool:
    """Whether the converted *file* is a layout class (it has blocks, or extends another)."""
    from django.template import TemplateSyntaxError
    from django.template.loader_tags import BlockNode, ExtendsNode

    try:
        with open(file.source_path, encoding="utf-8") as f:
            nodes = parse(f.read(), file.name, engine)
    except (OSError, UnicodeDecodeError, TemplateSyntaxError):
        return True  # its conversion reports it; the subclass is the likelier intent
    return bool(nodes.get_nodes_by_type(BlockNode) or nodes.get_nodes_by_type(ExtendsNode))


def convert_file(file: TemplateFile, job: Job) -> Converted:
    """Convert one Django template of *job* into PTL source and its problems."""
    engine = configure(getattr(job, "settings", None))
    with open(file.source_path, encoding="utf-8") as f:
        source = f.read()
    converter = _Converter(file, job, engine)
    return Converted(converter.convert(source), converter.problems)


def convert_source(source: str, name: str = "template.html", job: Job | None = None) -> Converted:
    """Convert Django template *source*, as the file *name* of *job*'s tree, into PTL."""
    job = job or Job(ENGINE)
    file = job.files.setdefault(name, TemplateFile(name, name, name))
    engine = configure(getattr(job, "settings", None))
    converter = _Converter(file, job, engine)
    return Converted(converter.convert(source), converter.problems)
