"""The request's CSP nonce, as the escaping engine writes it into trusted markup.

Inside a nonce scope (:func:`ptl_wsgi.csp.nonce_scope`, which every integration
opens per request when CSP is on) each ``<script>``, ``<style>`` and
``<link rel=stylesheet|preload|modulepreload>`` start tag that a literal writes
gets `` nonce="..."`` (:func:`ptl_wsgi.escaping.rules.takes_nonce`), unless the
literal gave it one.  The engine (:mod:`~ptl_wsgi.escaping.context`) finds *where*
in the literal text, once, at compile or plan time: *slots*, offsets into a
literal.  The nonce itself is read here at run time, per render, so it is never
part of compiled code or of a cached plan.  A literal that is not output where it
stands takes it where it is evaluated, only when its value reaches nothing but output
(``compiler.csp.WrittenFlows``): no nonced literal becomes a format or an argument.

The context variable lives here, below :mod:`ptl_wsgi.csp`, because compiled
templates and the twins' run-time formatting (layer 1) read it; ``csp`` sets it.
"""

from __future__ import annotations

import contextvars

__all__ = ["CURRENT", "PREFIX", "USED", "attribute", "check", "enter", "inserted"]

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
