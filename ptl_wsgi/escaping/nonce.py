"""The request's CSP nonce, as the escaping engine writes it into trusted markup.

Inside a nonce scope (:func:`ptl_wsgi.csp.nonce_scope`, which every integration
opens per request when CSP is on) each ``<script>``, ``<style>`` and
``<link rel=stylesheet|preload|modulepreload>`` start tag that a template's literal
writes gets `` nonce="..."`` (:func:`ptl_wsgi.escaping.rules.takes_nonce`), unless
the literal gave it one.  The engine (:mod:`~ptl_wsgi.escaping.context`) finds *where*
in the literal text, once, at compile or plan time: *slots*, offsets into a literal.

The nonce is not put in the text where the literal is evaluated.  The markup *carries*
its slots (:func:`carrier`: a private htmltext subclass whose text is the literal's
own) through the engine's own composition, the output of one template in another's
text, its join, ``+``, and the formatting the compiler planned, and the nonce goes in
only when the page is written out (:func:`written`, called by the one output policy,
``ptl_wsgi.output_policy``).  Every other operation on such markup (``replace``,
``Markup(x)``, ``str(x)``, ``%`` at run time, a value's ``__radd__``, output in an
attribute or a URL) sees the text without the nonce and keeps no slot: what a value
was substituted into, or wherever the markup went that the engine did not put it,
fails closed (a script the browser refuses), never open.

The context variable lives here, below :mod:`ptl_wsgi.csp`, because compiled
templates and the twins read it; ``csp`` sets it.
"""

from __future__ import annotations

import contextvars
import os

# Not typing.TYPE_CHECKING: importing typing costs every one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = [
    "CURRENT",
    "PREFIX",
    "USED",
    "attribute",
    "carrier",
    "MARK",
    "carries",
    "check",
    "Follow",
    "enter",
    "holds_nonced",
    "inserted",
    "mark",
    "written",
]

#: The nonce of the request being rendered, or None outside a nonce scope.
CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ptl_wsgi_csp_nonce", default=None
)

#: ``USED[0]``: whether a nonce was ever made current in this process.  Until one is
#: (CSP off), a render does not look for one: a literal that could take the nonce
#: costs a list lookup, not a context variable's (compiled templates test it).
USED = [False]


def enter(nonce: str) -> contextvars.Token[str | None]:
    """Make *nonce* current (checked by the caller, :mod:`ptl_wsgi.csp`); its token."""
    USED[0] = True
    return CURRENT.set(nonce)


# CSP's base64-value (base64 or base64url, padding at the end): every character is
# safe in a double-quoted attribute value and in the header, so the nonce is written
# as it is, with no escaping that the header's copy would not have.
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")


def check(nonce: str) -> str:
    """*nonce*, if CSP's grammar allows it (``[A-Za-z0-9+/_-]+`` and ``=`` padding);
    ValueError otherwise: a nonce is written into pages and headers as it is."""
    body = nonce.rstrip("=") if type(nonce) is str else ""
    if not body or len(nonce) - len(body) > 2 or not _BASE64.issuperset(body):
        raise ValueError(f"invalid CSP nonce {nonce!r}: use base64 characters only")
    return nonce


#: What every nonce attribute the engine writes starts with (:func:`attribute`).
PREFIX = ' nonce="'


def attribute() -> str:
    """`` nonce="N"`` for the current nonce, or ``""`` outside a nonce scope."""
    nonce = CURRENT.get()
    return "" if nonce is None else f'{PREFIX}{nonce}"'


#: What an f-string the compiler planned writes at each slot in a nonce scope, for the
#: carrier's ``marked`` to take out again into slots: never output, and secret to the
#: process, so no value can spell it.
MARK = "\ue000" + os.urandom(16).hex() + "\ue001"


def mark() -> str:
    """:data:`MARK` in a nonce scope, else ``""``."""
    return "" if CURRENT.get() is None else MARK


def inserted(text: str, slots: tuple[int, ...], attr: str) -> str:
    """*text* with *attr* (`` nonce="N"``) inserted at each of *slots* (ascending offsets)."""
    if not slots or not attr:
        return text
    out = []
    start = 0
    for slot in slots:
        out.append(text[start:slot])
        out.append(attr)
        start = slot
    out.append(text[start:])
    return "".join(out)


# -- markup that carries its slots ------------------------------------------------------

#: Each twin's carrier class (:func:`carrier`), to its markup class.
_CARRIERS: dict[type, type] = {}


def carrier(
    markup: Any, markup_of: Callable[[Any], str], join_plain: Callable[[Any], Any]
) -> tuple[type, Callable[..., Any]]:
    """The class of *markup* (a twin's htmltext) that carries nonce slots, and the join
    that keeps them: ``(cls, join)``.  ``ptl_wsgi.html`` registers both with the twin,
    whose joins hand this join a part list holding such markup, and whose output
    functions pass such markup on as it is in text.  *join_plain* is the twin's join of
    a compiled template's parts, which this join calls on the runs between such markup.

    Besides its slots, such markup knows whether its text ends in text (*tail*): what
    is added after it keeps its own slots only then.  A compiled template's output
    does (the compiler makes every template end in text); anything else is followed
    by the context engine, a bounded length of it at run time (:class:`Follow`)."""

    def made(
        text: str,
        slots: tuple[int, ...],
        nonce: str | None = None,
        placed: bool = False,
        tail: bool | None = None,
    ) -> Any:
        # placed: the compiler found the slots from where a "+" chain puts the text;
        # tail: it ends in text (None: followed when something is added after it).
        if not slots:
            return str.__new__(markup, text)
        carried: Any = str.__new__(cls, text)
        carried.__dict__.update(slots=slots, nonce=CURRENT.get() or nonce, placed=placed, tail=tail)
        return carried

    def __add__(self: Any, other: Any, /) -> Any:
        joined = markup.__add__(self, other)
        if joined is NotImplemented:
            return joined
        own = self.__dict__
        slots, tail = own.get("slots", ()), False
        if _tail(self):
            if type(other) is cls:
                slots += shifted(slots_of(other), len(self))
                tail = _tail(other)
            else:
                tail = _ends_in_text(str.__str__(joined)[len(self) :])
        return made(str.__str__(joined), slots, own.get("nonce"), False, tail)

    def __radd__(self: Any, other: Any, /) -> Any:
        # other is not carrier markup (its own __add__ came first): text or markup.
        joined = markup.__radd__(self, other)
        if joined is NotImplemented:
            return joined
        text = str.__str__(joined)
        before = len(text) - len(self)
        own = self.__dict__
        if not own.get("placed") and not _ends_in_text(text[:before]):
            return made(text, ())  # added into a tag, an attribute, RCDATA: no slots there
        return made(text, shifted(slots_of(self), before), own.get("nonce"), False, own.get("tail"))

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        # Pickled (a cache of rendered fragments) as the plain markup: the slots and the
        # nonce are the request's, which the process that loads it does not serve.
        return markup.__reduce_ex__(str.__new__(markup, self), protocol)

    def join(
        parts: Any,
        separator: str | None = None,
        follow: bool = True,
        carried: Iterable[int] | None = None,
    ) -> Any:
        # A compiled template's join (not *follow*: its values outside text the compiler
        # made plain, and its output ends in text), html_join's and, with a markup
        # separator, htmltext.join's, which follow the context: markup keeps its slots
        # only where it lands in text.  None is skipped without a separator.
        # *carried*: where such markup is in *parts* (a list or tuple), found by the twin.
        if not follow and separator is None:
            return template_join(parts, carried)
        texts: list[str] = []
        slots: list[int] = []
        nonce = None
        between = "" if separator is None else str.__str__(separator)
        ctx = Follow() if follow else None
        at = 0
        for part in parts:
            if part is None and separator is None:
                continue
            if texts and between:
                texts.append(between)
                at += len(between)
                if ctx is not None:
                    ctx.advance(between)
            if type(part) is cls:
                text = str.__str__(part)
                if ctx is None or ctx.in_text():
                    slots.extend(at + slot for slot in slots_of(part))
                    nonce = nonce or part.__dict__.get("nonce")
                if ctx is not None:
                    ctx.after(text, _tail(part))
            else:
                text = markup_of(part)
                if ctx is not None:
                    ctx.advance(text)
            texts.append(text)
            at += len(text)
        tail = ctx is None or ctx.in_text()
        return made("".join(texts), tuple(slots), nonce, False, tail)

    def template_join(parts: Any, carried: Iterable[int] | None) -> Any:
        # The runs between carrier markup are joined by the twin (C), whole.
        if carried is None:
            carried = [i for i, part in enumerate(parts) if type(part) is cls]
        texts: list[str] = []
        slots: list[int] = []
        nonce = None
        at = start = 0
        for index in carried:
            if index > start:
                run = str.__str__(join_plain(parts[start:index]))
                texts.append(run)
                at += len(run)
            part = parts[index]
            text = str.__str__(part)
            slots.extend(at + slot for slot in slots_of(part))
            nonce = nonce or part.__dict__.get("nonce")
            texts.append(text)
            at += len(text)
            start = index + 1
        if start < len(parts):
            texts.append(str.__str__(join_plain(parts[start:])))
        joined = "".join(texts)
        # (a template ends in text, but may hold back a lone "<": what follows it, a tag)
        return made(joined, tuple(slots), nonce, False, not joined.endswith("<"))

    def marked(text: str, tail: bool | None = None) -> Any:
        if MARK not in text:
            return str.__new__(markup, text)
        pieces = text.split(MARK)
        slots = []
        at = 0
        for piece in pieces[:-1]:
            at += len(piece)
            slots.append(at)
        kept = tuple(slots) if CURRENT.get() is not None else ()
        return made("".join(pieces), kept, None, False, tail)

    def literal(text: str, slots: tuple[int, ...], placed: bool) -> Any:
        # A compiled template's literal (escapers.nonced): it ends in text if it does
        # from text (followed when asked); one placed in a "+" chain is not followed.
        return made(text, slots, None, placed, False if placed else None)

    cls = type(
        "NoncedMarkup",
        (markup,),
        {
            "__module__": markup.__module__,
            "__doc__": "Markup a template's literals wrote, whose script, style and "
            "stylesheet tags take the request's nonce when it is written out.",
            "__add__": __add__,
            "__radd__": __radd__,
            "__reduce_ex__": __reduce_ex__,
            "made": staticmethod(made),
            "marked": staticmethod(marked),
            "literal": staticmethod(literal),
        },
    )
    cls.__qualname__ = "NoncedMarkup"
    _CARRIERS[cls] = markup
    return cls, join


# Markup before carrier markup (``lit + partial()``, a join's parts) is followed by the
# context engine, imported on first need (a process without CSP never loads it).  It
# parses in Python: at run time no more than _FOLLOW_LIMIT characters are followed (a
# longer text is not, so the markup after it keeps no slots: fails closed), and the
# answers for the short literals that ``+`` usually sees are kept.
_FOLLOW_LIMIT = 4096
_IN_TEXT: dict[str, bool] = {}
_MAX_IN_TEXT = 1024
_MAX_KEPT = 256


def _ends_in_text(text: str) -> bool:
    known = _IN_TEXT.get(text)
    if known is None:
        follow = Follow()
        follow.advance(text)
        known = follow.in_text()
        if len(text) <= _MAX_KEPT:
            if len(_IN_TEXT) >= _MAX_IN_TEXT:
                _IN_TEXT.clear()
            _IN_TEXT[text] = known
    return known


class Follow:
    """The context after the markup so far, followed at run time (None once it cannot
    be: past _FOLLOW_LIMIT characters, or markup the engine cannot read)."""

    __slots__ = ("ctx", "left")

    def __init__(self) -> None:
        from ptl_wsgi.escaping.context import TEXT

        self.ctx: Any = TEXT
        self.left = _FOLLOW_LIMIT

    def advance(self, text: str) -> None:
        from ptl_wsgi.escaping.context import ContextError, advance

        if self.ctx is None or not text:
            return
        self.left -= len(text)
        if self.left < 0:
            self.ctx = None
            return
        try:
            self.ctx = advance(self.ctx, text)
        except ContextError:
            self.ctx = None

    def after(self, text: str, tail: bool) -> None:
        """Past carrier markup *text*, which ends in text if *tail* (not parsed then)."""
        if self.in_text() and tail:
            from ptl_wsgi.escaping.context import TEXT

            self.ctx = TEXT
        else:
            self.advance(text)

    def in_text(self) -> bool:
        """Whether the markup so far ends in text itself, with nothing held back (a lone
        ``<`` would make what follows a tag)."""
        from ptl_wsgi.escaping.context import TEXT, settle

        return self.ctx is not None and settle(self.ctx) == TEXT


def holds_nonced(value: Any, is_template: Callable[[Any], bool], depth: int = 0) -> bool:
    """Whether a t-string's *value* is or holds, in a list, a tuple or a nested t-string,
    markup that carries nonce slots: the twins' own t-string formatting then leaves it
    to the engine, which keeps the slots of what lands in text.  A generator is not
    looked into (that would consume it): the markup it yields keeps no slots, whoever
    formats it."""
    if depth > 32:
        return False
    if type(value) in _CARRIERS:
        return True
    if type(value) is list or type(value) is tuple:
        return any(holds_nonced(item, is_template, depth + 1) for item in value)
    if not is_template(value):
        return False
    return any(
        holds_nonced(interpolation.value, is_template, depth + 1)
        for interpolation in value.interpolations
    )


def _tail(carried: Any) -> bool:
    """Whether carrier markup ends in text (followed the first time it is asked)."""
    own = carried.__dict__
    tail = own.get("tail")
    if tail is None:
        tail = own["tail"] = _ends_in_text(str.__str__(carried))
    return bool(tail)


def slots_of(value: Any) -> tuple[int, ...]:
    """The nonce slots *value* carries (none unless it is carrier markup made with them:
    what an inherited method returns, with ``type(self)``, has none)."""
    if type(value) not in _CARRIERS:
        return ()
    slots: tuple[int, ...] = value.__dict__.get("slots", ())
    return slots


def shifted(slots: tuple[int, ...], by: int) -> tuple[int, ...]:
    return tuple(slot + by for slot in slots) if by else slots


def carries(value: Any) -> bool:
    """Whether *value* is markup with nonce slots to fill when it is written out."""
    return bool(slots_of(value))


def written(value: Any) -> Any:
    """*value* as it goes into a response: markup that carries slots with the request's
    nonce at each (the current one, or outside a nonce scope the one current when the
    markup was made), as its plain markup class; anything else as it is."""
    markup = _CARRIERS.get(type(value))
    if markup is None:
        return value  # (every page a response gets passes here: one lookup)
    own = value.__dict__
    slots = own.get("slots", ())
    nonce = CURRENT.get() or own.get("nonce")
    attr = "" if nonce is None or not slots else f'{PREFIX}{nonce}"'
    return str.__new__(markup, inserted(str.__str__(value), slots, attr))
