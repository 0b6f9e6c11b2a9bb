"""What a strict Content-Security-Policy forbids in a template, found while compiling.

The contextual walk (:mod:`.contextual`) asks the escaping engine where each
literal's ``<script>``, ``<style>`` and stylesheet ``<link>`` takes the request's
nonce (slots, see ``escaping.context.advance``) and what in it a strict policy
blocks.  Here are the kinds of finding, what each means and how to rewrite it,
for ``ptl-wsgi check --csp`` (:func:`ptl_wsgi.compiler.csp_report`) and for the
templates that ask for the strict mode (:data:`STRICT`), where they are compile
errors; and the hashes of static inline scripts, for ``ptl-wsgi csp-hashes``.
"""

from __future__ import annotations

import ast
import html
import re

from ptl_wsgi.compiler.source import Spot
from ptl_wsgi.escaping.context import Context, advance
from ptl_wsgi.escaping.rules import K_JS, attribute_kind

#: A module (at its top level) or a template (among its first statements) that sets
#: this name to True makes every finding below but the warnings a compile error.
STRICT = "__ptl_csp_strict__"

#: Each kind of finding: (blocked by a strict policy, message with the rewrite).
KINDS: dict[str, tuple[bool, str]] = {
    "handler": (
        True,
        "inline event handler {name}=: a strict CSP does not run it; give the element an "
        "id or class and attach the code with addEventListener in a <script> (which gets "
        "the nonce)",
    ),
    "framework": (
        True,
        "{name} is code a JavaScript framework evaluates (eval or new Function): a strict "
        "CSP without 'unsafe-eval' blocks it; use the framework's CSP build (Alpine's "
        "@alpinejs/csp, htmx with allowEval off) and register the code in a <script>",
    ),
    "script-url": (
        True,
        "javascript: URL: a strict CSP does not run it; use a <button> and "
        "addEventListener in a <script>",
    ),
    "attrs-event": (
        True,
        "attrs() with the event handler {name!r}: a strict CSP does not run it; attach the "
        "code with addEventListener in a <script>",
    ),
    "no-nonce": (
        True,
        "this <{name}> gets no automatic nonce: the compiler does not split this format "
        "into literal text and values; write its fields as %s (with a tuple), an "
        "f-string or plain .format() fields",
    ),
    "literal-no-nonce": (
        True,
        "this literal leaves a <{name}> open (its tag or its text) for what is added to it, "
        "so it gets no automatic nonce: only an element a literal (or a '+' chain of "
        "literals) writes whole takes it where it is not output; write the element whole, "
        "as one literal, f-string or '%' format",
    ),
    "added-no-nonce": (
        True,
        "a value added with + lands in a tag that takes the nonce or in the text of a "
        "script or style, where it is only HTML-escaped, so this <{name}> gets no automatic "
        "nonce (a value must not decide what a nonced script or style runs); write the "
        "element as one f-string or '%' format, which escapes the value for where it lands",
    ),
    "used-no-nonce": (
        True,
        "this <{name}> gets no automatic nonce: the literal's value is used otherwise than "
        "written out (the receiver of a method, an argument of a call other than the "
        "literal's own join, compared, a key, an operand of anything but +), where a value "
        "could be put into it or the nonce change what the code computes; write it where it "
        "is output, or keep it to names, conditionals, + and join",
    ),
    "open-no-nonce": (
        True,
        "this literal, evaluated out of place, ends inside a tag, an attribute or raw text "
        "({name}): whatever follows it there could carry a nonce to where a value points, "
        "so no literal evaluated out of place in this template gets an automatic nonce; "
        "write the tag or attribute whole",
    ),
    "sink-no-nonce": (
        True,
        "markup made out of place is output here where it is not in text ({name}): the "
        "nonce would land in a value, so no literal evaluated out of place in this "
        "template gets an automatic nonce; output it in text",
    ),
    "msgid-no-nonce": (
        True,
        "this msgid writes a <{name}>: its translation is looked up by its text, so it gets "
        "no automatic nonce; keep the tag out of the message (translate the text inside it)",
    ),
    "script-src-value": (
        False,
        "<script src> from a value: with 'strict-dynamic' the nonce trusts whatever it "
        "loads; write the URL in the literal, or check the value against your own list",
    ),
    "url-value": (
        False,
        "the URL of a <{name}> (rel stylesheet, preload or modulepreload) from a value: "
        "the nonce trusts whatever it loads; write the URL in the literal, or check the "
        "value against your own list",
    ),
    "tag-value": (
        False,
        "attributes of a <{name}> given by a value: it gets the nonce whatever they say "
        "(a src, a type, an href); write them in the literal",
    ),
    "link-value": (
        False,
        "attributes of a <link> given by a value: it gets the nonce if its literal rel is "
        "stylesheet, preload or modulepreload, whatever the value adds, and none otherwise "
        "(a rel from a value); write them in the literal",
    ),
}


def message(kind: str, name: str = "") -> str:
    """The message of a finding of *kind* about *name* (an attribute or element)."""
    return KINDS[kind][1].format(name=name)


def blocks(kind: str) -> bool:
    """Whether a strict policy blocks what a finding of *kind* reports (else: a warning)."""
    return KINDS[kind][0]


def asks_strict(body: list[ast.stmt]) -> bool:
    """Whether *body* (a module's or template's) sets :data:`STRICT` to True first thing."""
    for statement in body[:8]:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == STRICT
            and isinstance(statement.value, ast.Constant)
            and statement.value.value is True
        ):
            return True
    return False


def attrs_events(node: ast.Call) -> list[tuple[ast.expr, str]]:
    """The event-handler keys of ``attrs({...})`` (a dict display), with their nodes."""
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if name != "attrs" or not node.args or not isinstance(node.args[0], ast.Dict):
        return []
    found: list[tuple[ast.expr, str]] = []
    for key in node.args[0].keys:
        if isinstance(key, ast.Constant) and type(key.value) is str:
            if attribute_kind(key.value) == K_JS:
                found.append((key, key.value))
    return found


# -- literals that are not written out -------------------------------------------------------
#
# A literal of an [html] template takes the nonce where it is evaluated (it is markup that
# is written out later or elsewhere), except where it is evaluated to be looked for, not
# written: compared with, a key, the argument of a str method that searches, a msgid.

#: Methods whose first argument is looked for, not written out: str's searches, the
#: lookups of dicts, lists and sets, and the re module's functions (a pattern).
LOOKUP_METHODS = frozenset(
    {
        "count", "endswith", "find", "index", "partition", "removeprefix", "removesuffix",
        "replace", "rfind", "rindex", "rpartition", "rsplit", "split", "startswith",
        "strip", "lstrip", "rstrip", "__contains__", "__eq__", "__ne__",
        "get", "pop", "setdefault", "remove", "discard",
        "compile", "findall", "finditer", "fullmatch", "match", "search", "sub", "subn",
    }
)  # fmt: skip


def is_gettext(func: ast.expr) -> bool:
    """Whether a call of *func* looks a msgid up (``_``, ``N_``, ``gettext``, ``ngettext``,
    ``pgettext``, ``lazy_gettext``, ``gettext_lazy``, ...), as message extractors read it."""
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name in ("_", "N_") or "gettext" in name


def mark_unwritten(node: ast.expr) -> None:
    """Mark the literals of *node* (through tuples, lists, sets, dicts, conditional
    expressions and ``and``/``or``) as looked for, not written out: they take no nonce."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for item in node.elts:
            mark_unwritten(item)
    elif isinstance(node, ast.Dict):
        for part in (*node.keys, *node.values):
            if part is not None:
                mark_unwritten(part)
    elif isinstance(node, ast.IfExp):
        mark_unwritten(node.body)
        mark_unwritten(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            mark_unwritten(value)
    elif isinstance(node, ast.Starred):
        mark_unwritten(node.value)
    elif isinstance(node, (ast.Constant, ast.JoinedStr)):
        setattr(node, "_ptl_unwritten", True)  # noqa: B010  (an AST node's own mark)


def mark_call_arguments(node: ast.Call) -> None:
    """Mark the literal arguments of call *node* that are looked for (the first of a
    :data:`LOOKUP_METHODS` method's) or looked up (a msgid: ``_ptl_msgid``, reported,
    as it takes no nonce)."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in LOOKUP_METHODS:
        if node.args:
            mark_unwritten(node.args[0])
    elif is_gettext(func):
        for arg in node.args:
            if isinstance(arg, (ast.Constant, ast.JoinedStr)):
                setattr(arg, "_ptl_msgid", True)  # noqa: B010  (an AST node's own mark)


# -- hashes of static inline scripts --------------------------------------------------------

_TAG_STATES = ("tag", "after_name", "before_value")
_SRC = re.compile(r"[\t\n\f\r /]src[\t\n\f\r ]*=", re.IGNORECASE)


class InlineScripts:
    """The inline scripts of an ``[html]`` template whose text is all literal, found by
    following the escaping engine's context one character at a time (for a report:
    ``ptl-wsgi csp-hashes``).  A value in a script's tag or body, or control flow
    inside it, makes the script not static: it is dropped."""

    def __init__(self) -> None:
        self.found: list[tuple[Spot, str]] = []
        self._tag: str | None = None  # a <script> start tag's text so far
        self._body: list[str] | None = None  # a static script's text so far
        self._spot: Spot | None = None
        self._static = False
        self._foreign = False  # an SVG or MathML script: its text is parsed as markup

    def text(self, ctx: Context, text: str, node: Spot) -> None:
        """Follow literal *text* from *ctx* (where output was before it)."""
        for char in text:
            before = ctx
            ctx = advance(ctx, char)
            if self._body is not None:
                if ctx.element != "script" or ctx.state in _TAG_STATES:
                    self._close()
                else:
                    self._body.append(char)
                continue
            if ctx.element == "script" and before.element != "script":
                self._tag, self._spot, self._static = "", node, True
            if self._tag is None:
                continue
            if ctx.element == "script" and (ctx.state in _TAG_STATES or ctx.delim):
                self._tag += char
                continue
            if ctx.element == "script" and ctx.kind in ("", "urls"):
                # (after the ">" of its start tag: a script the browser runs)
                if self._static and _SRC.search(self._tag) is None:
                    self._body = []
                    self._foreign = bool(ctx.foreign)
            self._tag = None

    def value(self) -> None:
        """A value is output here: the script it is in, if any, is not static."""
        self._static = False
        self._body = None

    def interrupt(self) -> None:
        """Control flow: whatever script is open is not known whole."""
        self.value()
        self._tag = None

    def _close(self) -> None:
        assert self._body is not None and self._spot is not None
        body = "".join(self._body)
        end = body.lower().rfind("</script")
        text = browser_text(body[:end] if end >= 0 else body, self._foreign)
        if text is not None:
            self.found.append((self._spot, text))
        self._body = None


_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)


def browser_text(source: str, foreign: bool) -> str | None:
    """The text a browser hashes for a script whose *source* the literals write: line
    ends normalised to LF (as HTML's input stream is); in an SVG or MathML script
    (*foreign*), character references decoded outside CDATA sections, as there the
    script is markup.  None where that markup holds more than text (a tag, a comment)."""
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    if not foreign:
        return source
    parts = _CDATA.split(source)  # (text, CDATA content, text, ...)
    for index in range(0, len(parts), 2):
        if "<" in parts[index]:
            return None
        parts[index] = html.unescape(parts[index])
    return "".join(parts)


# -- where an out-of-place literal's value goes ----------------------------------------------
#
# A literal that takes the nonce where it is evaluated (not where it is output) holds the
# nonce in its text from then on.  Anything that then reads that text as code, data or a
# format would let a value decide what a nonced script runs (``lit.replace(q, v)``,
# ``Markup(lit).format(v)``), change what the program computes (a key, ``==``, ``len``) or
# hand the nonce to a value's methods.  So a literal takes the nonce only where its value
# provably reaches the template's output and nothing else: through names, conditional
# expressions, ``and``/``or``, the engine's own ``+`` and ``"".join`` of a list, tuple or
# comprehension.  Every other use (the receiver of a method, the argument of any other call,
# an operand of anything but ``+``, compared, a key, returned, iterated) fails closed: the
# literal takes no nonce (a strict policy refuses its script, as with no nonce at all).

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "globals"})


def _is_literal(node: ast.AST) -> bool:
    """Whether *node* evaluates a template literal (a str constant, an f-string or t-string,
    or a literal's ``%`` or ``.format()``)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is str
    if isinstance(node, ast.JoinedStr) or type(node).__name__ == "TemplateStr":
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _is_literal(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("format", "format_map") and _is_literal(node.func.value)
    return False


def _is_join(node: ast.Call) -> bool:
    """Whether call *node* is a literal's ``join`` of one positional argument."""
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "join"
        and isinstance(func.value, ast.Constant)
        and type(func.value.value) is str
        and len(node.args) == 1
        and not node.keywords
        and not isinstance(node.args[0], ast.Starred)
    )


def _part_of_literal(node: ast.AST, parent: ast.AST) -> bool:
    """Whether literal *node* is part of the bigger literal *parent* (an f-string's text,
    a format's, a "+" chain's operand)."""
    if isinstance(parent, (ast.JoinedStr, ast.FormattedValue)):
        return True
    if isinstance(parent, ast.BinOp):  # (a "+" chain is followed whole: follow_chain)
        return isinstance(parent.op, ast.Add) or (node is parent.left and _is_literal(parent))
    return isinstance(parent, ast.Attribute) and parent.attr in ("format", "format_map")


class WrittenFlows:
    """Which out-of-place literals of one template reach only its output (:meth:`written`),
    and the places where their values join output that the contextual walk must see
    land in text (*sinks*: ids of an output statement's value or a "+" operand)."""

    def __init__(self, body: list[ast.stmt], reads_frames: bool = False) -> None:
        self.parents: dict[int, ast.AST] = {}
        self.loads: dict[str, list[ast.Name]] = {}
        self.escaped: set[str] = set()  # names read elsewhere than this scope's own code
        self.sinks: dict[int, ast.expr] = {}
        self.literals: list[ast.expr] = []
        self.units: set[int] = set()  # literals not part of a bigger literal (ids)
        self.all_escaped = reads_frames  # (a frame's locals can be read by any name)
        for statement in body:
            self._walk(statement)

    def _walk(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _SCOPES):
                for inner in ast.walk(child):  # (another scope: its reads are not followed)
                    if isinstance(inner, ast.Name):
                        self.escaped.add(inner.id)
                    elif isinstance(inner, (ast.Global, ast.Nonlocal)):
                        self.escaped.update(inner.names)
                continue
            self.parents[id(child)] = node
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                self.loads.setdefault(child.id, []).append(child)
                if child.id in _FRAME_READERS:
                    self.all_escaped = True
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                self.escaped.update(child.names)
            if isinstance(child, ast.expr) and _is_literal(child):
                self.literals.append(child)
                if not _part_of_literal(child, node):
                    self.units.add(id(child))
            self._walk(child)

    def unwritten(self) -> list[ast.expr]:
        """The literals whose value may go elsewhere than the output."""
        return [node for node in self.literals if not self.written(node, set())]

    def _name(self, name: str, seen: set[str]) -> bool:
        if self.all_escaped or name in self.escaped:
            return False
        if name in seen:
            return True
        seen.add(name)
        return all(self.written(load, seen) for load in self.loads.get(name, ()))

    def _targets(self, targets: list[ast.expr], seen: set[str]) -> bool:
        return all(isinstance(t, ast.Name) and self._name(t.id, seen) for t in targets)

    def written(self, node: ast.expr, seen: set[str]) -> bool:
        """Whether the value of *node* reaches nothing but the output."""
        parent = self.parents.get(id(node))
        if not isinstance(parent, ast.expr) and not isinstance(
            parent, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)
        ):
            return False
        if isinstance(parent, ast.Expr):
            if not _is_literal(node) and not (
                isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
            ):
                self.sinks[id(node)] = node  # (markup made elsewhere lands here)
            return True
        if isinstance(parent, ast.IfExp):
            return node is not parent.test and self.written(parent, seen)
        if isinstance(parent, ast.BoolOp):
            return self.written(parent, seen)
        if isinstance(parent, ast.BinOp):
            if isinstance(parent.op, ast.Add):
                if not isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp)) or (
                    isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Add)
                ):
                    self.sinks[id(node)] = node
                return self.written(parent, seen)
            if isinstance(parent.op, ast.Mod) and node is parent.left and _is_literal(parent):
                # (the literal is the format; one that carries a nonce is not: the
                # run-time formatting of nonced text would key its plans by the nonce)
                return isinstance(node, ast.Constant) and self.written(parent, seen)
            return False
        if isinstance(parent, ast.Attribute):
            call = self.parents.get(id(parent))  # (the literal is a method's receiver)
            if isinstance(call, ast.Call) and call.func is parent and _is_literal(call):
                return isinstance(node, ast.Constant) and self.written(call, seen)  # (as for %)
            return False
        if isinstance(parent, (ast.List, ast.Tuple)):
            return node in parent.elts and self.written(parent, seen)
        if isinstance(parent, (ast.ListComp, ast.GeneratorExp)):
            return node is parent.elt and self.written(parent, seen)
        if isinstance(parent, ast.Call):
            if _is_join(parent) and node is parent.args[0]:
                return self.written(parent, seen)
            return False
        if isinstance(parent, ast.Assign) and node is parent.value:
            return self._targets(parent.targets, seen)
        if isinstance(parent, ast.AnnAssign) and node is parent.value:
            return self._targets([parent.target], seen)
        if isinstance(parent, ast.AugAssign) and node is parent.value:
            return isinstance(parent.op, ast.Add) and self._targets([parent.target], seen)
        return False
