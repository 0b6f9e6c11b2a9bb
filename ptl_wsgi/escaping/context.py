"""The HTML context engine: where in a page a value lands, and which escaper fits there.

Contextual autoescaping (docs/contextual-escaping.md) follows Go's html/template:
the trusted literal text of a template is parsed as a browser would parse it,
far enough to know, at each place a value is inserted, what that place is (text,
a quoted ``href``, a JavaScript string, a CSS value, ...).  This module is that
parser, kept small and free of everything but the standard library and the rule
tables (:mod:`ptl_wsgi.escaping.rules`), so that the compiler can use it at compile
time and the planner (:mod:`ptl_wsgi.escaping.planner`) at run time:

* :class:`Context` -- an immutable, hashable value: the parser's state;
* :func:`advance` -- the context after some trusted literal text;
* :func:`escaper_for` -- the name of the escaper for a value in a context
  (``None``: plain HTML escaping, as everywhere before), or :class:`ContextError`
  where no value may go (a tag or attribute name, a ``<!DOCTYPE``);
* :func:`after_value` -- the context after a value;
* :func:`after_number` -- the context after a ``%d`` number (or ContextError);
* :func:`join` -- the context where two branches of control flow meet, or None.

The escapers themselves are :mod:`ptl_wsgi.escaping.escapers`; their names are
``base`` or ``base_layer``: the base encodes for the inner language (URL, JS,
CSS), the layer for the HTML around it (``q`` a quoted attribute value, ``u`` an
unquoted one, ``u0`` the start of an unquoted one).
"""

from __future__ import annotations

import re
from collections import namedtuple
from html import unescape

from ptl_wsgi.escaping.rules import (
    K_CSS,
    K_HTML,
    K_JS,
    K_PLAIN,
    K_SRCSET,
    K_URL,
    K_URL_LIST,
    NONCE_ATTRIBUTE,
    NONCE_ELEMENTS,
    RASTER_IMAGE_TYPES,
    SCRIPT_SCHEMES,
    attribute_kind,
    takes_nonce,
)

# Not typing.NamedTuple at run time: typing costs a one-shot process its time (and on
# 3.14 imports ast); the same class syntax, made a collections.namedtuple here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:

    class _RecordMeta(type):
        def __new__(mcls, name, bases, namespace):
            if not bases:
                return super().__new__(mcls, name, bases, namespace)
            fields = list(namespace.get("__annotations__", ()))
            defaults = [namespace[field] for field in fields if field in namespace]
            record = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            body = {k: v for k, v in namespace.items() if k not in fields}
            body.pop("__annotations__", None)
            body["__slots__"] = ()
            return type(name, (record,), body)

    class NamedTuple(metaclass=_RecordMeta):
        """A class whose annotated fields (with their defaults) make a namedtuple."""


__all__ = [
    "TEXT",
    "Context",
    "ContextError",
    "advance",
    "after_number",
    "after_value",
    "attribute_kind",
    "describe",
    "ends_in_text",
    "escaper_for",
    "join",
    "settle",
]

# -- states --------------------------------------------------------------------
# HTML level
S_TEXT = "text"
S_RCDATA = "rcdata"  # <title>, <textarea> and the raw-text elements shown as text
S_TAG = "tag"  # inside a start or end tag, between attributes
S_AFTER_NAME = "after_name"  # right after an attribute name (attr = its kind)
S_BEFORE_VALUE = "before_value"  # after "=", before the value
S_COMMENT = "comment"  # <!-- ... -->
S_BOGUS = "bogus"  # <!DOCTYPE ...>, <!...>, <?...>: no value may go here
# Attribute values (delim says how they end); content states below also apply there.
S_ATTR = "attr"  # a plain attribute value (or srcdoc: attr == "html")
S_URL = "url"
S_SRCSET = "srcset"
# JavaScript (<script> bodies, on* attributes)
S_JS = "js"
S_JS_DQ = "js_dq"
S_JS_SQ = "js_sq"
S_JS_TMPL = "js_tmpl"
S_JS_REGEXP = "js_regexp"
S_JS_BLOCK_CMT = "js_block_comment"
S_JS_LINE_CMT = "js_line_comment"
# CSS (<style> bodies, style attributes)
S_CSS = "css"
S_CSS_DQ = "css_dq"
S_CSS_SQ = "css_sq"
S_CSS_URL = "css_url"  # url( unquoted
S_CSS_DQ_URL = "css_dq_url"
S_CSS_SQ_URL = "css_sq_url"
S_CSS_BLOCK_CMT = "css_block_comment"
S_CSS_LINE_CMT = "css_line_comment"

# A <script>'s type: its literal value is kept (in Context.kind) to tell what the body is.
K_NOTE = "note"

# URL parts (sub of S_URL and the CSS url states)
U_START = "start"  # nothing of the URL yet: a value here is checked for its scheme
U_SCHEME = "scheme"  # only scheme characters so far: a value could complete a scheme
U_PATH = "path"  # past the scheme, before ? or #
U_SLASH = "path start"  # just "/" or "scheme:" (or "scheme:/"): a "/" next would start a host
U_QUERY = "query"  # in the query or fragment
U_UNKNOWN = "unknown"  # where branches met in different parts
U_VALUE = "after a value"  # one value alone at the start: it may be the whole scheme
U_VALUES = "after values"  # values in the scheme's place: a ":" next could end any scheme
U_SCRIPT = "script body"  # after javascript:, vbscript: or an active data: type: no value
# JS: what a "/" means next
J_REGEXP, J_DIVOP, J_UNKNOWN = "regexp", "divop", "unknown"
J_PAREN = "paren"  # after ")": a division, or a regular expression after "if (...)"


class Context(NamedTuple):
    """Where the parser is: immutable and hashable (plans and joins are cached by it).

    *state* is one of the ``S_*`` names; *delim* ends an attribute value (``"``,
    ``'``, ``" "`` for an unquoted one, ``""`` outside); *attr* is the kind of
    the attribute being parsed; *element* the special element (``script``,
    ``style``, ``title``, ...) whose content follows or is being parsed; *sub* the
    URL part or what ``/`` means in JS; *pending* literal text of an unfinished
    token (``<scr``), parsed again with the text that follows; *stack* the brace
    depths of the ``${`` of JS template literals being parsed; *foreign* the
    SVG or MathML element whose content this is (none of its elements is raw
    text, and references are decoded in its scripts); *escaped* that a script's
    raw text has an open ``<!--``, after which ``<script`` is refused; *kind*, in a
    ``<script>`` start tag, the literal value of its ``type`` after ``=`` (``?``
    when a value is in it; in an ``<annotation-xml>`` tag, of its ``encoding``),
    and in a script's body ``json`` where values get escapes valid in JSON (a
    JSON type, or a type the engine cannot know).  *nest* is the stack of
    elements open inside the outermost ``<svg>`` or ``<math>`` (each
    ``namespace:name``; ``html:`` ones inside an HTML integration point such as
    ``<foreignObject>``), from which *foreign* follows; *cdata* that the text is
    in a ``<![CDATA[`` section, where nothing is decoded and ``]]>`` ends it;
    *alone* that a value began this unquoted attribute value, which must then be
    the whole of it (its escaper writes an empty value as ``""``); *nonce*, in a
    ``<script>``, ``<style>`` or ``<link>`` start tag, that no ``nonce`` attribute was
    written in it yet: at its ``>`` a nonce scope's nonce goes in
    (:func:`advance`'s *slots*; a link's literal ``rel``, kept in *kind*, decides).
    """

    state: str = S_TEXT
    delim: str = ""
    attr: str = ""
    element: str = ""
    sub: str = ""
    pending: str = ""
    stack: tuple[int, ...] = ()
    foreign: str = ""  # "svg" or "math" inside that foreign content, else ""
    escaped: bool = False  # in a <script> after "<!--" (the tokenizer's escaped state)
    kind: str = ""  # a script tag's type ("=value", "?"); "json" in a JSON script's body
    nest: tuple[str, ...] = ()  # open elements of <svg>/<math> ("svg:g", "html:p"), outermost first
    cdata: bool = False  # in a CDATA section (of SVG or MathML content)
    alone: bool = False  # a value began this unquoted attribute value: nothing may follow it
    nonce: bool = False  # a start tag that takes the CSP nonce, with no nonce attribute yet


TEXT = Context()


class ContextError(ValueError):
    """A value where none may go, or text the engine refuses to follow."""


# -- elements --------------------------------------------------------------------

_CONTENT = {
    "script": S_JS,
    "style": S_CSS,
    "title": S_RCDATA,
    "textarea": S_RCDATA,
    # Raw text: nothing in them is markup; an escaped value shows its entities, but
    # cannot end the element.
    "xmp": S_RCDATA,
    "iframe": S_RCDATA,
    "noembed": S_RCDATA,
    "noframes": S_RCDATA,
    "noscript": S_RCDATA,
    "plaintext": S_RCDATA,
}

_FOREIGN = frozenset({"svg", "math"})
# Start tags that end foreign content: the parser goes back to HTML.
_BREAKOUT = frozenset(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i "
    "img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt "
    "u ul var".split()
)
_SPACE = " \t\n\r\f"
_TAG_STATES = (S_TAG, S_AFTER_NAME, S_BEFORE_VALUE)
# Start tags that may take a CSP nonce: followed as elements for it (a link by its rel).
_NONCED = NONCE_ELEMENTS | {"link"}
# The attribute whose literal value the engine keeps (in Context.kind), by element.
_NOTED = {"script": "type", "annotation-xml": "encoding", "link": "rel"}
# HTML's spaces are these five alone (not Python's \s: no \v, no-break or Unicode spaces).
_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")
_TAG_START = re.compile(r"</?[A-Za-z][^\t\n\f\r />]*")
_ATTR_NAME = re.compile(r"[^\t\n\f\r />][^\t\n\f\r />=]*")
_UNQUOTED_END = re.compile(r"[\t\n\f\r >]")
# Browsers lowercase ASCII letters only in names: "\u017f" (long s) is not an "s" there.
_END_TAGS = {
    name: re.compile(rf"</{name}(?=[\t\n\f\r />]|\Z)", re.IGNORECASE | re.ASCII)
    for name in _CONTENT
}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower(name: str) -> str:
    """*name* as the HTML tokenizer lowercases it: ASCII letters only (not U+212A, ...)."""
    return name.translate(_ASCII_LOWER)


# Characters a reader takes for a space and a browser for part of a name or value.
_ODD_SPACE = re.compile(r"[^\S\t\n\f\r ]")


def _refuse_odd_space(text: str) -> None:
    match = _ODD_SPACE.search(text)
    if match is not None:
        raise ContextError(
            f"{match.group()!r} in a tag is not an HTML space (a browser takes it for part "
            "of a name or value); use a plain space"
        )


def advance(
    ctx: Context,
    text: str,
    final: bool = False,
    slots: list[int] | None = None,
    findings: list[tuple[int, str, str]] | None = None,
) -> Context:
    """The context after trusted literal *text* in *ctx*.

    Text that may be the start of a token continued by the next literal (``<scr``,
    a JS or CSS word, ``\\``, ``&quo``) is kept in ``pending`` and parsed again
    with it, so literal text split anywhere gives the context of the whole;
    :func:`settle` (*final*) parses it as it is, for a value or a join.

    *slots*, if given, gets the offsets in *text* where a CSP nonce attribute goes:
    before the spaces and ``/`` that precede the ``>`` of each start tag that takes
    one (:func:`~ptl_wsgi.escaping.rules.takes_nonce`) and has no ``nonce`` of its
    own.  Appended there, after every attribute of the tag, a value before it
    cannot change what it belongs to, and a ``nonce`` the tag has comes first,
    which is the one browsers keep.

    *findings*, if given, gets what a strict Content-Security-Policy forbids in
    *text*, as ``(offset, kind, name)``: ``"handler"`` (an ``on*`` attribute),
    ``"framework"`` (an attribute a JavaScript framework evaluates, which needs
    ``'unsafe-eval'``), ``"script-url"`` (a ``javascript:`` URL).
    """
    held = 0
    if ctx.pending:
        held = len(ctx.pending)
        text = ctx.pending + text
        ctx = ctx._replace(pending="")
    total = len(text)
    while text:
        if findings is not None:
            before = ctx
            rest = text
        if ctx.delim:
            ctx, text = _in_attribute(ctx, text, final)
        elif ctx.element and ctx.state not in _TAG_STATES:
            ctx, text = _in_element(ctx, text, final)
        elif slots is not None and ctx.nonce and ctx.state == S_TAG:
            start = total - len(text)
            tag = ctx
            ctx, text = _tag(ctx, text)
            if ctx.state not in _TAG_STATES and _wants_nonce(tag):
                # (a ">" held back from the literal before is impossible; a "/" may be)
                slots.append(max(start - held, 0))
        else:
            ctx, text = _HTML[ctx.state](ctx, text)
        if findings is not None:
            _find(before, ctx, rest, max(total - len(rest) - held, 0), findings)
    return ctx


def _find(
    before: Context, after: Context, text: str, at: int, findings: list[tuple[int, str, str]]
) -> None:
    """What a strict CSP forbids in the step from *before* to *after* over *text* (at *at*)."""
    if before.state == S_TAG and after.state == S_AFTER_NAME and after.attr == K_JS:
        stripped = text.lstrip(_SPACE + "/")
        name = _ATTR_NAME.match(stripped)
        if name is not None:
            local = _lower(name.group()).rpartition(":")[2]
            kind = "handler" if local.startswith("on") and "-" not in local else "framework"
            findings.append((at + len(text) - len(stripped), kind, name.group()))
    elif before.delim and before.attr == K_URL and before.sub != U_SCRIPT:
        end = len(text) if after.delim else text.find(before.delim if before.delim != " " else ">")
        inner = _url_part(before.sub, unescape(text[: max(end, 0)]))
        if inner == U_SCRIPT:
            findings.append((at, "script-url", ""))


def _wants_nonce(tag: Context) -> bool:
    """Whether the start tag *tag* closes with the nonce (a link by its literal rel)."""
    if not tag.nonce:
        return False
    rel = tag.kind[1:] if tag.element == "link" and tag.kind.startswith("=") else None
    return takes_nonce(tag.element, rel)


def settle(ctx: Context) -> Context:
    """*ctx* with the text it holds back parsed: where a value or a join sees it."""
    if not ctx.pending or ctx.state in (S_TEXT, S_TAG, S_COMMENT):
        return ctx  # an unfinished tag or attribute name stays one
    return advance(ctx, "", final=True)


_LAST_WORD = re.compile(r"[^ \t\n\r\f]*[ \t\n\r\f]*\Z")


def _last_word(text: str) -> int:
    """Where the last run of non-space characters of *text*, with the spaces after it, starts.

    Text held back from there is parsed again with the next literal: a token it
    may continue (``</scrip``, ``&quo``) and the spaces after it; after ``)`` the
    word before too (a "/" next divides or starts a regular expression: it is
    seen with its ``)``).
    """
    match = _LAST_WORD.search(text)
    assert match is not None  # (the pattern matches at the end of any text)
    if text[: match.start()].rstrip(_SPACE).endswith(")"):
        match = _LAST_WORD.search(text, 0, match.start())
        assert match is not None
    return match.start()


def _text(ctx: Context, text: str) -> tuple[Context, str]:
    i = text.find("<")
    while i >= 0:
        rest = text[i + 1 :]
        if rest == "" or rest in ("/", "!", "!-"):
            return ctx._replace(pending=text[i:]), ""
        if _cdata_allowed(ctx.nest) and rest.startswith("!["):
            # In SVG or MathML (not in an HTML element there) "<![CDATA[" opens a section.
            if rest.startswith("![CDATA["):
                return Context(S_BOGUS, foreign=ctx.foreign, nest=ctx.nest, cdata=True), rest[8:]
            if "![CDATA[".startswith(rest):
                return ctx._replace(pending=text[i:]), ""
        first = rest[0]
        if first.isascii() and first.isalpha():
            match = _TAG_NAME.match(rest)
            assert match is not None  # (the pattern matches any text)
            name = match.group()
            if len(name) == len(rest):
                return ctx._replace(pending=text[i:]), ""  # the name may go on
            _refuse_odd_space(name)
            name = _lower(name)
            # Which element it opens (and its namespace) is decided at its ">".
            element = (
                name if ctx.nest or name in _CONTENT or name in _FOREIGN or name in _NONCED else ""
            )
            nonce = name in _NONCED
            return Context(
                S_TAG, element=element, foreign=ctx.foreign, nest=ctx.nest, nonce=nonce
            ), rest[len(name) :]
        if first == "/":
            if len(rest) > 1 and rest[1].isascii() and rest[1].isalpha():
                match = _TAG_NAME.match(rest, 1)
                assert match is not None  # (the pattern matches any text)
                name = match.group()
                if 1 + len(name) == len(rest):
                    return ctx._replace(pending=text[i:]), ""
                nest = _close(ctx.nest, _lower(name))
                return Context(S_TAG, foreign=_foreign_of(nest), nest=nest), rest[1 + len(name) :]
            if rest.startswith("/>"):
                i = text.find("<", i + 3)
                continue
            # </ followed by junk: a bogus comment
            return Context(S_BOGUS, foreign=ctx.foreign, nest=ctx.nest), rest[1:]
        if rest.startswith("!--"):
            return Context(S_COMMENT, sub="open", foreign=ctx.foreign, nest=ctx.nest), rest[3:]
        if first in "!?":
            return Context(S_BOGUS, foreign=ctx.foreign, nest=ctx.nest), rest[1:]
        i = text.find("<", i + 1)
    return ctx, ""


# -- foreign content (SVG, MathML) -------------------------------------------------------
#
# As the HTML tree builder does: inside <svg> or <math> every element is an element of
# that namespace (none is raw text; references are decoded in a <script>), except in an
# HTML integration point, whose start tags and text follow HTML's rules again (a
# <script> there is HTML's, raw text); the breakout start tags (<p>, <div>, ...) close
# the foreign elements.  The engine follows every element opened there (Context.nest),
# and refuses what it cannot follow: an end tag that closes none of them (the browser
# may close the <svg> with it), an HTML element left open at an integration point's end.

_INTEGRATION_POINTS = frozenset(
    {"svg:foreignobject", "svg:desc", "svg:title", "math:annotation-xml/html"}
    | {f"math:{name}" for name in ("mi", "mo", "mn", "ms", "mtext")}
)
_VOID = frozenset(
    "area base basefont bgsound br col embed frame hr image img input keygen link meta "
    "param source track wbr".split()
)


def _foreign_of(nest: tuple[str, ...]) -> str:
    """The namespace whose rules the next start tag follows ("svg", "math"), or "" (HTML)."""
    if not nest:
        return ""
    top = nest[-1]
    namespace = top.partition(":")[0]
    return "" if namespace == "html" or top in _INTEGRATION_POINTS else namespace


def _cdata_allowed(nest: tuple[str, ...]) -> bool:
    """Whether "<![CDATA[" opens a section: the current element is SVG's or MathML's."""
    return bool(nest) and not nest[-1].startswith("html:")


def _open(nest: tuple[str, ...], name: str, note: str, closed: bool) -> tuple[tuple[str, ...], str]:
    """The open elements after the start tag *name* and the new element's namespace."""
    top = nest[-1] if nest else ""
    if _foreign_of(nest):
        if name in _BREAKOUT:
            while _foreign_of(nest):
                nest = nest[:-1]
            return _open(nest, name, note, closed)
        if name == "font":
            raise ContextError(
                "<font> inside <svg> or <math> ends the foreign content or not by its "
                "attributes (color, face, size), which the engine does not follow; use "
                "<text> or CSS"
            )
        if name == "svg" and top == "math:annotation-xml":
            namespace = "svg"
        else:
            namespace = top.partition(":")[0]
    elif (
        top in _INTEGRATION_POINTS
        and top.startswith("math:m")
        and name
        in (
            "mglyph",
            "malignmark",
        )
    ):
        namespace = "math"
    elif name in _FOREIGN:
        namespace = name
    else:
        if nest and name not in _VOID:
            nest = (*nest, f"html:{name}")  # (followed inside an integration point only)
        return nest, "html"
    if closed:
        return nest, namespace  # "<circle/>": self-closing, as foreign elements may be
    entry = f"{namespace}:{name}"
    if entry == "math:annotation-xml":
        if note == "?":
            raise ContextError(
                "a value in the encoding of <annotation-xml> decides whether its content "
                "is HTML or MathML, which the engine cannot know; write the encoding"
            )
        if _lower(note[1:]) in ("text/html", "application/xhtml+xml"):
            entry += "/html"
    return (*nest, entry), namespace


def _close(nest: tuple[str, ...], name: str) -> tuple[str, ...]:
    """The open elements after the end tag *name*; refused where the engine cannot follow it."""
    if not nest:
        return nest  # HTML, outside SVG and MathML
    for i in range(len(nest) - 1, -1, -1):
        namespace, _, tag = nest[i].partition(":")
        if namespace == "html":
            if i == len(nest) - 1 and tag == name:
                return nest[:i]
            break  # (HTML's rules, which may close elements the engine does not see)
        if tag.partition("/")[0] == name and name not in ("br", "p"):
            return nest[:i]
    raise ContextError(
        f"the end tag </{name}> inside <svg> or <math> does not close the element opened "
        "last there (the browser may close more with it, or ignore it); close each element "
        "there, and each HTML element in a <foreignObject>, in the order it was opened"
    )


def _comment(ctx: Context, text: str) -> tuple[Context, str]:
    if ctx.sub == "open":
        # "<!-->" and "<!--->" close at once (abruptly), as browsers parse them.
        if text.startswith(">"):
            return _text_of(ctx), text[1:]
        if text.startswith("->"):
            return _text_of(ctx), text[2:]
        ctx = ctx._replace(sub="")
    match = re.search(r"--!?>", text)
    if match is None:
        tail = len(text) - len(text.rstrip("-!"))
        return ctx._replace(pending=text[-tail:] if tail else ""), ""
    return _text_of(ctx), text[match.end() :]


def _text_of(ctx: Context) -> Context:
    """Text, in the foreign content *ctx* is in, if any."""
    return Context(foreign=_foreign_of(ctx.nest), nest=ctx.nest) if ctx.nest else TEXT


def _bogus(ctx: Context, text: str) -> tuple[Context, str]:
    if ctx.cdata:
        i = text.find("]]>")
        if i < 0:
            tail = min(2, len(text) - len(text.rstrip("]")))  # "]]" may end it next
            return ctx._replace(pending=text[len(text) - tail :] if tail else ""), ""
        return _text_of(ctx), text[i + 3 :]
    i = text.find(">")
    return (ctx, "") if i < 0 else (_text_of(ctx), text[i + 1 :])


def _tag(ctx: Context, text: str) -> tuple[Context, str]:
    stripped = text.lstrip(_SPACE + "/")
    if not stripped:
        if ctx.element and text.endswith("/"):
            return ctx._replace(pending="/"), ""  # "<svg/" then ">": self-closing
        return ctx, ""
    if stripped[0] == ">":
        closed = text[: len(text) - len(stripped)].endswith("/")  # <svg/> opens nothing
        return _content_start(ctx, closed), stripped[1:]
    match = _ATTR_NAME.match(stripped)
    assert match is not None  # (stripped is not empty and does not start with ">")
    name = match.group()
    _refuse_odd_space(name)
    if len(name) == len(stripped):
        return ctx._replace(pending=stripped), ""  # the name may go on
    kind = attribute_kind(name)
    lowered = _lower(name)
    noted = _NOTED.get(ctx.element)
    if noted is not None and not ctx.kind and lowered == noted:
        kind = K_NOTE  # (only the first such attribute counts)
    nonce = ctx.nonce and lowered != NONCE_ATTRIBUTE
    return ctx._replace(state=S_AFTER_NAME, attr=kind, sub="", nonce=nonce), stripped[len(name) :]


def _after_name(ctx: Context, text: str) -> tuple[Context, str]:
    stripped = text.lstrip(_SPACE)
    if not stripped:
        # Spaces seen: a value now would be a new attribute name, not this one's.
        return ctx._replace(sub="space" if stripped != text else ctx.sub), ""
    if stripped[0] == "=":
        return ctx._replace(state=S_BEFORE_VALUE, sub=""), stripped[1:]
    kind = "=" if ctx.attr == K_NOTE else ctx.kind  # a type attribute with no value
    return ctx._replace(state=S_TAG, attr="", sub="", kind=kind), stripped


def _before_value(ctx: Context, text: str) -> tuple[Context, str]:
    stripped = text.lstrip(_SPACE)
    if not stripped:
        return ctx, ""
    first = stripped[0]
    if first == ">":
        return _content_start(ctx, False), stripped[1:]
    if first in "\"'":
        return _value_start(ctx, first), stripped[1:]
    return _value_start(ctx, " "), stripped


def _value_start(ctx: Context, delim: str) -> Context:
    kind = ctx.attr
    base = Context(
        delim=delim,
        attr=kind,
        element=ctx.element,
        foreign=ctx.foreign,
        kind=ctx.kind,
        nest=ctx.nest,
        nonce=ctx.nonce,
    )
    if kind == K_URL:
        return base._replace(state=S_URL, sub=U_START)
    if kind == K_URL_LIST:
        return base._replace(state=S_SRCSET, sub=U_START)
    if kind == K_SRCSET:
        return base._replace(state=S_SRCSET)
    if kind == K_JS:
        return base._replace(state=S_JS, sub=J_REGEXP)
    if kind == K_CSS:
        return base._replace(state=S_CSS)
    return base._replace(state=S_ATTR)


def _content_start(tag: Context, closed: bool) -> Context:
    """The context after the ``>`` of a start tag whose context was *tag*."""
    element = tag.element
    if not element:
        return _text_of(tag)  # (an end tag, or an element of no interest)
    nest, namespace = _open(tag.nest, element, tag.kind, closed)
    text = Context(foreign=_foreign_of(nest), nest=nest)
    state = _CONTENT.get(element)
    if state is None or (namespace != "html" and (closed or element not in ("script", "style"))):
        return text  # (in SVG and MathML no element is raw text)
    kind = ""
    if element == "script":
        kind = _script_kind(tag.kind)
        if kind == "data" and namespace != "html":
            return text  # an SVG data block: elements and text, not run
        if kind == "data":
            # A data block, not run (text/template, text/html, ...): its text is data
            # (HTML-escaped), and it still ends only where a script ends; the HTML it may
            # be rendered as (since the last point back in text) is kept in sub.
            return Context(S_RCDATA, element=element, nest=nest, kind=kind)
    sub = J_REGEXP if state == S_JS else ""
    foreign = "" if namespace == "html" else namespace
    return Context(state, element=element, sub=sub, foreign=foreign, kind=kind, nest=nest)


# A script's type (its type attribute, ASCII spaces stripped, lowercased, parameters
# dropped): JavaScript as the HTML standard lists its MIME types (and "module"), JSON
# (values get escapes valid in JSON and JavaScript); any other type is a data block
# the browser does not run.
_JS_TYPES = frozenset(
    {
        "", "module", "application/ecmascript", "application/javascript",
        "application/x-ecmascript", "application/x-javascript", "text/ecmascript",
        "text/javascript", "text/javascript1.0", "text/javascript1.1", "text/javascript1.2",
        "text/javascript1.3", "text/javascript1.4", "text/javascript1.5", "text/jscript",
        "text/livescript", "text/x-ecmascript", "text/x-javascript",
    }
)  # fmt: skip
_JSON_TYPES = frozenset({"application/json", "application/ld+json", "text/json"})
# JSON whose strings the browser loads: an import map maps modules to URLs it runs, speculation
# rules prefetch and prerender URLs.  No value may go in them (build them in the literal).
_URL_JSON_TYPES = frozenset({"importmap", "speculationrules"})


# Types a library runs as code (Babel, TypeScript, CoffeeScript, PyScript, ...): as
# Go takes an attribute whose name speaks of a URL for one, a type that speaks of code
# is followed as JavaScript, the strictest there is for code.
_CODE_TYPE = re.compile(r"script|babel|jsx|coffee|python|\A(?:py|mpy|text/ts)\Z")


def _script_kind(note: str) -> str:
    """The body of a script whose type attribute was *note*: "", "json", "urls" or "data"."""
    if note == "?":
        return "json"  # a value in the type: JSON's escapes are valid in both
    mime = _lower(note[1:].partition(";")[0].strip(_SPACE))
    if mime in _JS_TYPES or _CODE_TYPE.search(mime):
        return ""
    if mime in _URL_JSON_TYPES:
        return "urls"
    if mime in _JSON_TYPES or mime.endswith("+json"):
        return "json"
    return "data"


_HTML = {
    S_TEXT: _text,
    S_COMMENT: _comment,
    S_BOGUS: _bogus,
    S_TAG: _tag,
    S_AFTER_NAME: _after_name,
    S_BEFORE_VALUE: _before_value,
}


_ALONE = (
    "a value at the start of an unquoted attribute value must be the whole value (an empty "
    'one is written "", which the text after it would not continue); quote the attribute'
)


def _in_attribute(ctx: Context, text: str, final: bool) -> tuple[Context, str]:
    """Parse *text* inside an attribute value: up to its end, decoded, in its content state."""
    if ctx.alone and text:
        if _UNQUOTED_END.match(text) is None:
            raise ContextError(_ALONE)
        ctx = ctx._replace(alone=False)
    if ctx.delim == " ":
        match = _UNQUOTED_END.search(text)
        end = len(text) if match is None else match.start()
        after = end  # the space or ">" is the tag's
    else:
        end = text.find(ctx.delim)
        if end < 0:
            end = len(text)
        after = end + 1
    if ctx.delim == " ":
        _refuse_odd_space(text[:end])
    held = ""
    if end == len(text) and not final:
        cut = _last_word(text)
        text, held = text[:cut], text[cut:]
        end = after = cut
    inner = ctx._replace(delim="")
    value = unescape(text[:end]) if "&" in text[:end] else text[:end]
    if ctx.attr in (K_HTML, K_NOTE):
        # srcdoc: its decoded text so far (a document of its own, checked at each value);
        # a script's type: its text so far ("\0" for a value).
        inner = inner._replace(sub=inner.sub + value)
    inner = _content(inner, value)
    if end == len(text):
        return inner._replace(delim=ctx.delim, pending=held), ""
    kind = ctx.kind
    if ctx.attr == K_NOTE:
        kind = "?" if "\0" in inner.sub else "=" + inner.sub
    return Context(
        S_TAG, element=ctx.element, foreign=ctx.foreign, kind=kind, nest=ctx.nest, nonce=ctx.nonce
    ), text[after:]


def _in_element(ctx: Context, text: str, final: bool) -> tuple[Context, str]:
    """Parse *text* in the content of a special element, up to its end tag."""
    if ctx.foreign:
        return _in_foreign_element(ctx, text, final)
    match = _END_TAGS[ctx.element].search(text)
    if match is not None and match.end() == len(text) and not final:
        match = None  # "</script" at a literal's end: the next one says if it is an end tag
    if match is None:
        held = ""
        if not final:
            cut = _last_word(text)
            text, held = text[:cut], text[cut:]
        ctx = _script_escapes(ctx, text, at_end=final)
        if ctx.kind == "data":
            ctx = ctx._replace(sub=_data_block(ctx.sub + text))
        return _content(ctx, _foreign_decoded(ctx, text))._replace(pending=held), ""
    ctx = _script_escapes(ctx, text[: match.start()])
    _content(ctx, _foreign_decoded(ctx, text[: match.start()]))  # raises if it cannot be followed
    return _text_of(ctx), text[match.start() :]  # the end tag itself is parsed as text


def _in_foreign_element(ctx: Context, text: str, final: bool) -> tuple[Context, str]:
    """Parse *text* in an SVG or MathML ``<script>`` or ``<style>``: markup, not raw text.

    References are decoded (not in a CDATA section, whose text is the script's as
    it is, up to ``]]>``), and the end tag ends it; any other markup there (an
    element, a comment) would be a node of its own: refused.
    """
    if ctx.cdata:
        end = text.find("]]>")
        if end >= 0:
            return _content(ctx, text[:end])._replace(cdata=False), text[end + 3 :]
        held = ""
        if not final:
            cut = _last_word(text)  # (holds a "]]" the next literal may end with ">")
            text, held = text[:cut], text[cut:]
        return _content(ctx, text)._replace(pending=held), ""
    i = text.find("<")
    while i >= 0:
        rest = text[i + 1 :]
        end_tag = _END_TAGS[ctx.element].match(text, i)
        if end_tag is not None and (end_tag.end() < len(text) or final):
            ctx = _content(ctx, _foreign_decoded(ctx, text[:i]))
            return _text_of(ctx), text[i:]  # the end tag itself is parsed as text
        if rest.startswith("![CDATA["):
            ctx = _content(ctx, _foreign_decoded(ctx, text[:i]))
            return ctx._replace(cdata=True), rest[8:]
        if not final and (
            "![CDATA[".startswith(rest) or f"/{ctx.element}".startswith(_lower(rest))
        ):
            ctx = _content(ctx, _foreign_decoded(ctx, text[:i]))
            return ctx._replace(pending=text[i:]), ""  # the next literal decides
        if rest[:1].isascii() and (rest[:1].isalpha() or rest[:1] in "/!?"):
            raise ContextError(
                f"markup inside an SVG or MathML <{ctx.element}> (elements and comments "
                "there are nodes of their own, not its text); write '<' as '&lt;', or put "
                "the code in a <![CDATA[ ... ]]> section"
            )
        i = text.find("<", i + 1)
    held = ""
    if not final:
        cut = _last_word(text)
        text, held = text[:cut], text[cut:]
    return _content(ctx, _foreign_decoded(ctx, text))._replace(pending=held), ""


def _data_block(document: str) -> str:
    """The HTML of a data block to keep: none once it is back in text."""
    try:
        if advance(TEXT, document) == TEXT:
            return ""
    except ContextError:
        pass  # (a value there is refused)
    return document


_SCRIPT_ESCAPES = re.compile(r"<!--|-->|<script(?=[\t\n\f\r />]|\Z)", re.IGNORECASE | re.ASCII)


def _script_escapes(ctx: Context, text: str, at_end: bool = False) -> Context:
    """Follow ``<!--`` and ``-->`` in a script's raw text; refuse the double escaped state.

    After ``<!--`` a ``<script`` puts the tokenizer where ``</script>`` no longer
    ends the script (until ``-->``): the engine would end it too early.  *at_end*:
    a value follows *text*, and may continue a ``<script`` at its end.
    """
    if ctx.element != "script" or ctx.foreign:
        return ctx
    escaped = ctx.escaped
    for match in _SCRIPT_ESCAPES.finditer(text):
        token = match.group()
        if token == "<!--":
            escaped = True
        elif token == "-->":
            escaped = False
        elif escaped and (match.end() < len(text) or at_end):
            raise ContextError(
                "'<script' after '<!--' inside a <script>: the browser would not end the "
                "script at its '</script>'; write '<\\/script' or '\\x3cscript' in the "
                "JavaScript"
            )
    return ctx._replace(escaped=escaped) if escaped != ctx.escaped else ctx


def _foreign_decoded(ctx: Context, text: str) -> str:
    # An SVG or MathML <script> or <style> is not raw text: references are decoded.
    return unescape(text) if ctx.foreign and "&" in text else text


def _content(ctx: Context, text: str) -> Context:
    while text:
        ctx, text = _CONTENT_STATES[ctx.state](ctx, text)
    return ctx


def _plain(ctx: Context, text: str) -> tuple[Context, str]:
    return ctx, ""


def _url(ctx: Context, text: str) -> tuple[Context, str]:
    return ctx._replace(sub=_url_part(ctx.sub, text)), ""


def _url_list(ctx: Context, text: str) -> tuple[Context, str]:
    """A srcset (not followed: its escaper checks every URL) or an SVG animation
    ``values`` list, whose current ";" item is followed as a URL: values there may not
    spell a scheme with the literal after them (``java{a}:{b}``), as in an ``href``."""
    if ctx.attr != K_URL_LIST:
        return ctx, ""
    start, _, item = text.rpartition(";")
    return ctx._replace(
        sub=_url_part(U_START if start or text.startswith(";") else ctx.sub, item)
    ), ""


_URL_STATES = frozenset({S_URL, S_CSS_URL, S_CSS_DQ_URL, S_CSS_SQ_URL})


def _url_like(ctx: Context) -> bool:
    """Whether a value in *ctx* is (part of) a URL whose parts the engine follows."""
    return ctx.state in _URL_STATES or (ctx.state == S_SRCSET and ctx.attr == K_URL_LIST)


_SCHEME_CHARS = re.compile(r"[A-Za-z0-9+.\-]*")
# Browsers strip leading C0 controls and spaces from a URL; "\\" is "/" in http(s) URLs.
_URL_LEADING = "".join(map(chr, range(0x21)))
# Where a value starting with "/" would start a host: after "/", "scheme:/", or the
# "scheme:" of a special scheme (whose authority may follow any slashes).
_BEFORE_HOST = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?[/\\]|(?:https?|ftp|wss?|file):", re.IGNORECASE
)


# Schemes whose body the browser runs (or renders as a document), as a URL parser sees
# them; data: is safe only with a literal raster image type.
_SCRIPT_SCHEME = re.compile(rf"(?:{'|'.join(sorted(SCRIPT_SCHEMES))}):", re.IGNORECASE)
_SCHEME_END = re.compile(r"[A-Za-z0-9+.\-]*:")
_IMAGE_DATA = re.compile(
    rf"data:image/(?:{'|'.join(RASTER_IMAGE_TYPES)})(?:;base64)?,", re.IGNORECASE
)
_TAB_OR_NEWLINE = re.compile("[\t\n\r]")


def _script_scheme(part: str, text: str) -> bool:
    """Whether URL *text* (no tabs or newlines) in *part* makes, or may make, a script URL.

    After literal scheme
    characters (or a value) the start of the scheme is not known: a scheme that
    ends in *text* is taken for a script one (``{proto}://``, with no scheme
    character before the ``:``, stays allowed: the value is checked).
    """
    if part == U_START:
        text = text.lstrip(_URL_LEADING)
        if _SCRIPT_SCHEME.match(text):
            return not _IMAGE_DATA.match(text)
        return False
    match = _SCHEME_END.match(text)
    if match is None:
        return False
    return part == U_SCHEME or (part == U_UNKNOWN and len(match.group()) > 1)


def _url_part(part: str, text: str) -> str:
    if part == U_SCRIPT:
        return U_SCRIPT
    text = _TAB_OR_NEWLINE.sub("", text)  # (the URL parser drops them)
    if part in (U_VALUE, U_VALUES):
        scheme = _SCHEME_END.match(text)
        # One value followed by ":" is a scheme the value's own check judged
        # ("{proto}://"); values and scheme characters ending in ":" are not.
        if scheme is not None and (part == U_VALUES or len(scheme.group()) > 1):
            raise ContextError(
                "a value at the start of a URL and the literal's ':' after it would make "
                "a scheme no check sees whole (values could spell 'javascript:'); write "
                "the scheme in the literal, or give the whole URL as one value"
            )
        part = U_UNKNOWN
    if part in (U_START, U_SCHEME, U_UNKNOWN) and _script_scheme(part, text):
        return U_SCRIPT
    if part == U_QUERY or "?" in text or "#" in text:
        return U_QUERY
    if part == U_UNKNOWN:
        return U_UNKNOWN
    if part in (U_START, U_SCHEME):
        text = text.lstrip(_URL_LEADING) if part == U_START else text
        if not text:
            return part
        # Only scheme characters so far: a value could still complete "javascript:".
        if _SCHEME_CHARS.fullmatch(text):
            return U_SCHEME
        if part == U_START and _BEFORE_HOST.fullmatch(text):
            return U_SLASH  # a value starting with "/" would make "//host"
    return U_PATH


# -- JavaScript --------------------------------------------------------------

_JS_SPECIAL = re.compile(r"[\"'`/{}]|<!--|-->")
_JS_KEYWORDS_BEFORE_EXPRESSION = frozenset(
    {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
     "case", "do", "else", "yield", "await"}
)  # fmt: skip
_IDENT_TAIL = re.compile(r"[\w$]+\Z")


def _js_slash_context(before: str, ctx_sub: str) -> str:
    """What a "/" after JS source *before* means: a regexp or a division."""
    code = before.rstrip()
    if not code:
        return ctx_sub
    last = code[-1]
    if last == ")":
        return J_PAREN
    if last == "]" or last.isalnum() or last in "_$":
        if last.isalnum() or last in "_$":
            word = _IDENT_TAIL.search(code)
            if (
                word is not None
                and word.group() in _JS_KEYWORDS_BEFORE_EXPRESSION
                # After "." (or "?.") a keyword is a property's name: "stats.new / 2".
                and not code[: word.start()].rstrip().endswith(".")
            ):
                return J_REGEXP
        return J_DIVOP
    if last in "+-" and code.endswith(("++", "--")):
        return J_DIVOP
    return J_REGEXP  # after an operator, punctuation or "}"


def _at_line_start(before: str) -> bool:
    """Whether a "-->" after JS *before* (the text since the last token) starts a comment.

    It does only at the start of a line (Annex B); when *before* holds no line end
    and nothing else, the line started before the last token (a string, a comment,
    a literal split there): refused rather than guessed.
    """
    lines = _LINE_END.split(before)
    if lines[-1].strip(" \t\f\v\ufeff\xa0"):
        return False  # code before it on its line: operators
    if len(lines) > 1:
        return True
    raise ContextError(
        "'-->' in JavaScript right after a string, comment or template part: it is a "
        "comment at the start of a line and '-- >' elsewhere; write it on its own line, or "
        "'-- >'"
    )


def _js(ctx: Context, text: str) -> tuple[Context, str]:
    match = _JS_SPECIAL.search(text)
    if match is None:
        return ctx._replace(sub=_js_slash_context(text, ctx.sub)), ""
    start, token = match.start(), match.group()
    sub = _js_slash_context(text[:start], ctx.sub)
    rest = text[match.end() :]
    if token == '"':
        return ctx._replace(state=S_JS_DQ, sub=sub), rest
    if token == "'":
        return ctx._replace(state=S_JS_SQ, sub=sub), rest
    if token == "`":
        return ctx._replace(state=S_JS_TMPL, sub=sub), rest
    if token == "-->" and not _at_line_start(text[:start]):
        # "n-->0" is "n-- > 0": operators, after which "/" starts a regular expression.
        return ctx._replace(sub=J_REGEXP), rest
    if token in ("<!--", "-->"):
        return ctx._replace(state=S_JS_LINE_CMT, sub=sub), rest
    if token == "{":
        if ctx.stack:
            ctx = ctx._replace(stack=(*ctx.stack[:-1], ctx.stack[-1] + 1))
        return ctx._replace(sub=J_REGEXP), rest
    if token == "}":
        if ctx.stack:
            if ctx.stack[-1] == 0:
                return ctx._replace(state=S_JS_TMPL, stack=ctx.stack[:-1], sub=J_DIVOP), rest
            ctx = ctx._replace(stack=(*ctx.stack[:-1], ctx.stack[-1] - 1))
        return ctx._replace(sub=J_REGEXP), rest
    # "/"
    if rest.startswith("/"):
        return ctx._replace(state=S_JS_LINE_CMT, sub=sub), rest[1:]
    if rest.startswith("*"):
        return ctx._replace(state=S_JS_BLOCK_CMT, sub=sub), rest[1:]
    if sub == J_REGEXP:
        return ctx._replace(state=S_JS_REGEXP, sub=""), rest
    if sub == J_UNKNOWN:
        raise ContextError(
            "'/' in JavaScript after branches that disagree on whether it starts a "
            "regular expression or divides"
        )
    if sub == J_PAREN:
        if not text[:start].rstrip().endswith(")"):
            # The ")" came before a comment, or in an earlier literal: what follows the
            # "/" on its line is not known here, so neither reading can be checked.
            raise ContextError(
                "'/' could start a division or a regular expression after the ')' before "
                "it (a comment or the end of a literal between them): put the regular "
                "expression in a variable first, or write the division on the line of "
                "its ')'"
            )
        _check_paren_slash(ctx, rest)
    return ctx._replace(sub=J_REGEXP), rest


def _check_paren_slash(ctx: Context, rest: str) -> None:
    """Refuse a "/" after ")" whose two readings the engine would follow differently.

    After ``)`` a "/" divides (``(a + b) / 2``) or, after ``if (...)``, starts a
    regular expression: which is known to the JavaScript grammar, not to the
    engine.  Both readings are followed to the end of the line (or of the text
    seen): if the regular expression closes there and the two end in different
    places (a quote in it opened a string one reading sees), the text is refused.
    """
    line = _LINE_END.split(rest, maxsplit=1)[0]
    as_regexp = _content(ctx._replace(state=S_JS_REGEXP, sub=""), line)
    if as_regexp.state == S_JS_REGEXP:
        return  # not closed on its line: no regular expression (or not known yet)
    as_division = _content(ctx._replace(sub=J_REGEXP), line)
    if (as_regexp.state, as_regexp.stack) != (as_division.state, as_division.stack):
        raise ContextError(
            "'/' after ')' in JavaScript may divide or start a regular expression, and the "
            "two readings differ; put the regular expression in a variable first, or write "
            "the division with spaces and parentheses that leave no doubt"
        )


def _past_closing_quote(text: str, quote: str) -> int:
    """The index just past the unescaped *quote* that ends a string in *text*, or -1."""
    i = 0
    while True:
        j = _next_of(text, i, quote + "\\")
        if j < 0:
            return -1
        if text[j] == quote:
            return j + 1
        i = j + 2  # a backslash escapes the next character


def _js_string(ctx: Context, text: str) -> tuple[Context, str]:
    end = _past_closing_quote(text, '"' if ctx.state == S_JS_DQ else "'")
    if end < 0:
        return ctx, ""
    return ctx._replace(state=S_JS, sub=J_DIVOP), text[end:]


def _js_template(ctx: Context, text: str) -> tuple[Context, str]:
    i = 0
    while True:
        j = _next_of(text, i, "`\\$")
        if j < 0:
            return ctx, ""
        char = text[j]
        if char == "\\":
            i = j + 2
        elif char == "$":
            if text.startswith("{", j + 1):
                return ctx._replace(state=S_JS, sub=J_REGEXP, stack=(*ctx.stack, 0)), text[j + 2 :]
            i = j + 1
        else:
            return ctx._replace(state=S_JS, sub=J_DIVOP), text[j + 1 :]


def _js_regexp(ctx: Context, text: str) -> tuple[Context, str]:
    in_class = ctx.sub == "class"
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char in "\n\r\u2028\u2029":
            # No regular expression literal spans lines: the "/" before was a division
            # the engine did not see as one, and it would be out of step from here on.
            raise ContextError(
                "a JavaScript regular expression would go on past a line end, which none "
                "may: a '/' before it divides; write the division with spaces and "
                "parentheses that leave no doubt ('(a) / b')"
            )
        if in_class:
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
        elif char == "/":
            return ctx._replace(state=S_JS, sub=J_DIVOP), text[i + 1 :]
        i += 1
    return ctx._replace(sub="class" if in_class else ""), ""


def _js_block_comment(ctx: Context, text: str) -> tuple[Context, str]:
    i = text.find("*/")
    if i < 0:
        return ctx, ""
    return ctx._replace(state=S_JS), text[i + 2 :]


_LINE_END = re.compile("[\n\r\u2028\u2029]")


def _js_line_comment(ctx: Context, text: str) -> tuple[Context, str]:
    match = _LINE_END.search(text)
    if match is None:
        return ctx, ""
    return ctx._replace(state=S_JS), text[match.end() :]


def _next_of(text: str, start: int, chars: str) -> int:
    best = -1
    for char in chars:
        j = text.find(char, start)
        if j >= 0 and (best < 0 or j < best):
            best = j
    return best


# -- CSS -------------------------------------------------------------------------

_CSS_SPECIAL = re.compile(r"[\"']|/\*|//|\burl\(\s*", re.IGNORECASE)


def _css(ctx: Context, text: str) -> tuple[Context, str]:
    match = _CSS_SPECIAL.search(text)
    if match is None:
        return ctx, ""
    token, rest = match.group(), text[match.end() :]
    if token == '"':
        return ctx._replace(state=S_CSS_DQ), rest
    if token == "'":
        return ctx._replace(state=S_CSS_SQ), rest
    if token == "/*":
        return ctx._replace(state=S_CSS_BLOCK_CMT), rest
    if token == "//":
        return ctx._replace(state=S_CSS_LINE_CMT), rest
    if not rest:
        # "url(" then maybe a quote: decided by what follows.
        return ctx._replace(pending="", state=S_CSS_URL, sub="open"), ""
    return _css_url_open(ctx, rest)


def _css_url_open(ctx: Context, text: str) -> tuple[Context, str]:
    text = text.lstrip(_SPACE)
    if text.startswith('"'):
        return ctx._replace(state=S_CSS_DQ_URL, sub=U_START), text[1:]
    if text.startswith("'"):
        return ctx._replace(state=S_CSS_SQ_URL, sub=U_START), text[1:]
    return ctx._replace(state=S_CSS_URL, sub=U_START), text


def _css_url(ctx: Context, text: str) -> tuple[Context, str]:
    if ctx.sub == "open":
        stripped = text.lstrip(_SPACE)
        if not stripped:
            return ctx, ""
        return _css_url_open(ctx, stripped)
    end = {S_CSS_URL: ")", S_CSS_DQ_URL: '"', S_CSS_SQ_URL: "'"}[ctx.state]
    i = 0
    while True:
        j = _next_of(text, i, end + "\\")
        if j < 0:
            return ctx._replace(sub=_url_part(ctx.sub, text)), ""
        if text[j] == "\\":
            i = j + 2
            continue
        rest = text[j + 1 :]
        if end == ")":
            return ctx._replace(state=S_CSS, sub=""), rest
        # After the closing quote: spaces, then ")".
        return ctx._replace(state=S_CSS, sub=""), rest.lstrip(_SPACE).removeprefix(")")


def _css_string(ctx: Context, text: str) -> tuple[Context, str]:
    end = _past_closing_quote(text, '"' if ctx.state == S_CSS_DQ else "'")
    if end < 0:
        return ctx, ""
    return ctx._replace(state=S_CSS), text[end:]


def _css_block_comment(ctx: Context, text: str) -> tuple[Context, str]:
    i = text.find("*/")
    return (ctx, "") if i < 0 else (ctx._replace(state=S_CSS), text[i + 2 :])


def _css_line_comment(ctx: Context, text: str) -> tuple[Context, str]:
    match = _LINE_END.search(text)
    return (ctx, "") if match is None else (ctx._replace(state=S_CSS), text[match.end() :])


_CONTENT_STATES = {
    S_ATTR: _plain,
    S_RCDATA: _plain,
    S_URL: _url,
    S_SRCSET: _url_list,
    S_JS: _js,
    S_JS_DQ: _js_string,
    S_JS_SQ: _js_string,
    S_JS_TMPL: _js_template,
    S_JS_REGEXP: _js_regexp,
    S_JS_BLOCK_CMT: _js_block_comment,
    S_JS_LINE_CMT: _js_line_comment,
    S_CSS: _css,
    S_CSS_DQ: _css_string,
    S_CSS_SQ: _css_string,
    S_CSS_URL: _css_url,
    S_CSS_DQ_URL: _css_url,
    S_CSS_SQ_URL: _css_url,
    S_CSS_BLOCK_CMT: _css_block_comment,
    S_CSS_LINE_CMT: _css_line_comment,
}


# -- values ----------------------------------------------------------------------

_URL_BASES = {U_START: "url", U_SCHEME: "url_query", U_PATH: "url_path", U_SLASH: "url_slash"}
_BASES = {
    S_SRCSET: "srcset",
    S_JS: "js_value",
    S_JS_DQ: "js_string",
    S_JS_SQ: "js_string",
    S_JS_TMPL: "js_string",
    S_JS_REGEXP: "js_regexp",
    S_JS_BLOCK_CMT: "drop",
    S_JS_LINE_CMT: "drop",
    S_CSS: "css",
    S_CSS_DQ: "css_string",
    S_CSS_SQ: "css_string",
    S_CSS_BLOCK_CMT: "drop",
    S_CSS_LINE_CMT: "drop",
}


def escaper_for(ctx: Context) -> str | None:
    """The name of the escaper for a value in *ctx*; None for plain HTML escaping.

    Raises ContextError where no value may go.
    """
    if ctx.alone:
        raise ContextError(_ALONE)
    state = ctx.state
    if ctx.pending and state == S_TEXT:
        _refuse_odd_space(ctx.pending)
        if _TAG_START.fullmatch(ctx.pending):
            # "<button%s>" % attrs(...): right after a tag's name go its attributes.
            return "tag_attrs"
        raise ContextError(f"a value here would be part of the tag {ctx.pending!r}")
    if ctx.pending and state == S_TAG:
        raise ContextError(f"a value here would be part of the attribute name {ctx.pending!r}")
    _refuse_open_reference(ctx)
    opener = ctx.pending.endswith(_OPENER_STARTS)
    ctx = settle(ctx)
    if opener:
        _refuse_comment_opener(ctx)
    state = ctx.state
    if state == S_RCDATA and ctx.kind == "data":
        _check_srcdoc(ctx.sub, block=True)
    if state in (S_TEXT, S_RCDATA):
        return None
    if state == S_BOGUS and ctx.cdata:
        raise ContextError(
            "no value may go in a CDATA section outside a <script> or <style> (nothing is "
            "decoded there: HTML escaping would show); put it in an element's text"
        )
    if state == S_BOGUS:
        raise ContextError("no value may go inside <!...> or <?...> (a doctype or bogus comment)")
    if state == S_COMMENT:
        return "comment"
    if state == S_TAG:
        return "attr_name"
    if state == S_AFTER_NAME:
        if ctx.sub != "space":
            raise ContextError("a value here would be part of the attribute name")
        return "attr_name"
    if state == S_BEFORE_VALUE:
        base = _base(_value_start(ctx, " "))
        return f"{base}_u0"
    base = _base(ctx)
    if ctx.delim == " ":
        return f"{base}_u"
    if ctx.delim:
        return None if base == "text" else f"{base}_q"
    return base


_OPENER_STARTS = ("<", "<!", "<!-")


def _refuse_comment_opener(ctx: Context) -> None:
    """Refuse a value right after a literal ``<``, ``<!`` or ``<!-`` (held back, then
    settled into *ctx*) in a script's string.

    In a string the value could complete ``<!--`` (the string escaper keeps ``!`` and
    ``-``), after which a later ``<script`` keeps the browser in the script past its
    ``</script>``: the engine would go on in HTML, the browser in script.  (A JS value
    starts with a space, and a regular expression's escaper writes ``-`` as ``\\x2d``.)
    """
    if ctx.element == "script" and not ctx.foreign and ctx.state in (S_JS_DQ, S_JS_SQ, S_JS_TMPL):
        raise ContextError(
            "a value right after a literal '<', '<!' or '<!-' in a script's string could complete "
            "'<!--', which changes where the browser ends the script; put a space or "
            "'\\x3c' in the literal"
        )


_OPEN_REFERENCE = re.compile(r"&[#A-Za-z0-9]*\Z")


def _refuse_open_reference(ctx: Context) -> None:
    """Refuse a value right after ``&``, ``&#``, ``&#x``, ``&na`` where references are decoded.

    In an attribute value (and an SVG or MathML script or style) the browser
    decodes character references before the inner language reads the text: a
    value such as ``#92;`` after a literal ``&`` would make a ``\\`` (or a ``j``
    of ``javascript:``) after its escaper ran.  Text and element text decode them
    too, but to one character of data, which is harmless there.
    """
    decoded = ctx.delim or (
        ctx.foreign
        and ctx.element
        and not ctx.cdata
        and ctx.state not in (S_TAG, S_AFTER_NAME, S_BEFORE_VALUE)
    )
    if decoded and ctx.pending and _OPEN_REFERENCE.search(ctx.pending):
        raise ContextError(
            "a value right after a literal '&' would complete a character reference, "
            "which the browser decodes after the value was escaped; write '&amp;' for "
            "an '&' before a value"
        )


def _base(ctx: Context) -> str:
    state = ctx.state
    if state == S_ATTR:
        if ctx.attr == K_HTML:
            _check_srcdoc(ctx.sub)
            return "srcdoc"
        return "text"
    if _url_like(ctx):
        if ctx.sub == "open":
            return "url"
        if ctx.sub == U_SCRIPT:
            raise ContextError(
                "no value may go in a javascript:, vbscript: or data: URL (the browser "
                "percent-decodes it into script or a document); use an event handler "
                "attribute or a <script>, or a data: URL with a literal image type"
            )
        if state == S_SRCSET and ctx.sub == U_START:
            return "url_list"  # (each ";" item of the value checked as a URL's start)
        return _URL_BASES.get(ctx.sub, "url_query")
    if ctx.kind == "urls":
        raise ContextError(
            "no value may go in an import map or speculation rules (their strings are URLs "
            "the browser loads and runs, which no escaping checks there); write the map in "
            "the literal, or build it as JSON with a URL checked by safe_url"
        )
    if ctx.kind == "json":
        return _JSON_BASES.get(_BASES[state], _BASES[state])
    return _BASES[state]


# In a JSON script (or one whose type is not known): escapes valid in JSON and JavaScript.
_JSON_BASES = {"js_string": "json_string", "js_value": "json_value"}


def _check_srcdoc(document: str, block: bool = False) -> None:
    """A value in srcdoc must land in the inner document's text (or a quoted plain value).

    So must a value in a script's data *block*, which a client-side template may
    render as HTML.
    """
    inner = settle(advance(TEXT, document))
    if (inner.state in (S_TEXT, S_RCDATA) and not inner.pending) or (
        inner.state == S_ATTR and inner.delim in ('"', "'") and inner.attr == K_PLAIN
    ):
        return
    if block:
        raise ContextError(
            f"a value in a data block (a <script> of a type that is not run) would land in "
            f"{describe(inner)} of the HTML a client-side template may make of it, where "
            "HTML escaping does not protect it; put only text there, or pass the data in "
            "a <script type=application/json>"
        )
    raise ContextError(
        f"a value in srcdoc would land in {describe(inner)} of the inner document, where "
        "double HTML escaping does not protect it; put only text there, or build the inner "
        "document as a template of its own and pass its result"
    )


def after_value(ctx: Context) -> Context:
    """The context after a value inserted in *ctx* (a valid place for one)."""
    if ctx.pending and ctx.state == S_TEXT and _TAG_START.fullmatch(ctx.pending):
        after_tag, _ = _text(_text_of(ctx), ctx.pending + " ")
        return _unknown_note(after_tag._replace(state=S_AFTER_NAME, attr=K_PLAIN))
    ctx = settle(ctx)
    if ctx.pending and ctx.state == S_COMMENT:
        return ctx._replace(pending="")
    state = ctx.state
    if state in (S_TAG, S_AFTER_NAME):
        # The attribute-name filter lets only names of plain attributes through.
        return _unknown_note(ctx._replace(state=S_AFTER_NAME, attr=K_PLAIN, sub=""))
    if state == S_BEFORE_VALUE:
        return after_value(_value_start(ctx, " "))._replace(alone=True)
    if _url_like(ctx):
        # The value may have ended in a scheme, a path or a query: the next one gets the
        # strictest escaping of a URL part (which "?" or "#" in text resolves).  Where
        # the scheme could still be written, which values wrote it is remembered: a
        # literal ":" after them could end a scheme they spell ("java" "script:").
        if ctx.sub in (U_START, "open"):
            return ctx._replace(sub=U_VALUE)
        if ctx.sub in (U_SCHEME, U_VALUE, U_VALUES):
            return ctx._replace(sub=U_VALUES)
        if ctx.sub == U_SLASH:
            return ctx._replace(sub=U_UNKNOWN)
        return ctx
    if state == S_JS:
        return ctx._replace(sub=J_DIVOP)
    if state == S_ATTR and ctx.attr == K_NOTE:
        return ctx._replace(sub=ctx.sub + "\0")  # a script's type the engine cannot know
    return ctx


def _unknown_note(tag: Context) -> Context:
    """*tag* after attribute names given by a value: a script's type (or an annotation-xml's
    encoding) is not known if it was not written before them (a "type" there counts)."""
    if tag.element in _NOTED and not tag.kind:
        return tag._replace(kind="?")
    return tag


def after_number(ctx: Context) -> Context:
    """The context after a number (digits, maybe a ``-``) inserted in *ctx*.

    A number may go where a name goes (``<h%d>``) and is followed as its digits;
    refused where its digits would complete a character reference (``&#%d;`` of
    39 is a quote in an ``onclick`` string), or where a ``-`` sign would change
    the context (``<!-%d`` of -1 opens a comment).
    """
    _refuse_open_reference(ctx)
    positive = advance(ctx, "1")
    try:
        negative = advance(ctx, "-1")
        same = settle(positive)._replace(pending="") == settle(negative)._replace(pending="")
    except ContextError:
        same = False
    if not same:
        raise ContextError(
            "a '-' sign here would change the HTML context; format the number as a value "
            "('%s'), or write it where a sign changes nothing"
        )
    return positive


def ends_in_text(ctx: Context) -> bool:
    """Whether output may end in *ctx*: text, with at most a lone ``<`` held back.

    A held-back tag name (``<script``) is not text: the caller's next literal
    (``>``) would open the element the engine never saw.
    """
    ctx = settle(ctx)
    return ctx._replace(pending="") == TEXT and ctx.pending in ("", "<")


def join(a: Context | None, b: Context | None) -> Context | None:
    """Where two paths of control flow meet: the common context, or None if there is none.

    None for either side means that path does not reach the join (it returned).
    Contexts that differ only in the URL part, or in what "/" means in JS, join
    into the unknown part, where values get the strictest escaper of the two.
    """
    if a is None:
        return b
    if b is None or a == b:
        return a
    _refuse_open_reference(a)  # (settling would drop the unfinished reference a value may end)
    _refuse_open_reference(b)
    a, b = settle(a), settle(b)
    if a.nonce != b.nonce:
        # One branch wrote a nonce attribute: the nonce added after it is the second, ignored.
        a, b = a._replace(nonce=True), b._replace(nonce=True)
    if a == b:
        return a
    if a._replace(sub="") == b._replace(sub=""):
        if _url_like(a):
            return a._replace(sub=_joined_url_part(a.sub, b.sub))
        if a.state == S_JS:
            return a._replace(sub=J_UNKNOWN)
    raise _Mismatch(a, b)


def _joined_url_part(a: str, b: str) -> str:
    """The URL part where branches in parts *a* and *b* meet: the strictest either allows.

    A scheme one branch may still be writing stays possible after the join: literal
    scheme characters (``if c: 'javascript'``) keep the part a scheme, and values at
    the start (``a`` then ``if c: b``) keep it values that a ``:`` could end, so the
    ``:`` after the join makes the same script URL, or error, as it would in that branch.
    """
    parts = {a, b}
    if U_SCRIPT in parts:
        return U_SCRIPT  # (no value may follow either way)
    if U_SCHEME in parts:
        return U_SCHEME
    if parts & {U_VALUE, U_VALUES}:
        return U_VALUES
    return U_UNKNOWN


class _Mismatch(ContextError):
    def __init__(self, a: Context, b: Context) -> None:
        super().__init__(f"{describe(a)} and {describe(b)}")
        self.contexts = (a, b)


# -- descriptions ----------------------------------------------------------------------

_STATE_NAMES = {
    S_TEXT: "text",
    S_RCDATA: "element text",
    S_TAG: "a tag, between attributes",
    S_AFTER_NAME: "a tag, after an attribute name",
    S_BEFORE_VALUE: "a tag, before an attribute value",
    S_COMMENT: "an HTML comment",
    S_BOGUS: "<!...> (a doctype or bogus comment)",
    S_ATTR: "an attribute value",
    S_URL: "a URL",
    S_SRCSET: "a srcset",
    S_JS: "a JavaScript expression",
    S_JS_DQ: 'a JavaScript string ("...")',
    S_JS_SQ: "a JavaScript string ('...')",
    S_JS_TMPL: "a JavaScript template literal (`...`)",
    S_JS_REGEXP: "a JavaScript regular expression",
    S_JS_BLOCK_CMT: "a JavaScript comment",
    S_JS_LINE_CMT: "a JavaScript comment",
    S_CSS: "CSS",
    S_CSS_DQ: 'a CSS string ("...")',
    S_CSS_SQ: "a CSS string ('...')",
    S_CSS_URL: "a CSS url(...)",
    S_CSS_DQ_URL: 'a CSS url("...")',
    S_CSS_SQ_URL: "a CSS url('...')",
    S_CSS_BLOCK_CMT: "a CSS comment",
    S_CSS_LINE_CMT: "a CSS comment",
}
_DELIMS = {'"': "double-quoted", "'": "single-quoted", " ": "unquoted"}
_KINDS = {
    K_PLAIN: "",
    K_URL: "URL ",
    K_SRCSET: "srcset ",
    K_URL_LIST: "URL list ",
    K_JS: "event handler ",
    K_CSS: "style ",
    K_HTML: "srcdoc ",
    K_NOTE: "script type ",
}


def describe(ctx: Context) -> str:
    """*ctx* in words, for error messages and ``ptl-wsgi check --contexts``."""
    ctx = settle(ctx)
    name = _STATE_NAMES[ctx.state]
    if ctx.state == S_RCDATA and ctx.element:
        name = f"<{ctx.element}> text"
    if ctx.state in (S_URL, S_CSS_URL, S_CSS_DQ_URL, S_CSS_SQ_URL) and ctx.sub not in ("", "open"):
        name = f"{name} ({ctx.sub})"
    if ctx.state == S_JS and ctx.stack:
        name = f"{name} in a template literal's ${{...}}"
    if ctx.delim:
        kind = "rel " if ctx.attr == K_NOTE and ctx.element == "link" else _KINDS.get(ctx.attr, "")
        where = f"{_DELIMS[ctx.delim]} {kind}attribute value"
        article = "an" if where[0] in "aeiou" else "a"
        name = f"{article} {where}" if ctx.state == S_ATTR else f"{name} in {article} {where}"
    elif ctx.element in ("script", "style") and ctx.state not in (
        S_TAG,
        S_AFTER_NAME,
        S_BEFORE_VALUE,
    ):
        name = f"{name} in <{ctx.element}>"
    if ctx.pending and ctx.state in (S_TEXT, S_TAG):
        name = f"{name}, in {ctx.pending!r}"
    if ctx.foreign:
        name = f"{name} inside <{ctx.foreign}>"
    return name
