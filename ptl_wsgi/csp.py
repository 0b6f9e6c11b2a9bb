"""Content-Security-Policy nonces: the one implementation every integration uses.

A request gets a fresh nonce; templates read it with :func:`csp_nonce` (or as
``csp_nonce`` in their context, from ``environ["ptl_wsgi.csp_nonce"]``), and
the response's header, made by :func:`content_security_policy`, names it.

* :func:`new_nonce`, :func:`csp_nonce`, :func:`nonce_scope` and
  :func:`content_security_policy` are the public API (also importable from
  ``ptl_wsgi.safety``, their former home, until 0.3);
* :class:`RequestNonce` is one request's state, as :class:`ptl_wsgi.wsgi.CSP`,
  the Flask extension and Django's ``CSPMiddleware`` keep it;
  :func:`in_nonce_scope` runs a response body with a request's nonce current.
"""

from __future__ import annotations

import contextvars
import functools
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, TypeVar

from ptl_wsgi._iterate_in_context import in_context, setting

__all__ = [
    "CSP_NONCE_KEY",
    "HEADER",
    "Directives",
    "RequestNonce",
    "check_directives",
    "content_security_policy",
    "csp_nonce",
    "in_nonce_scope",
    "new_nonce",
    "nonce_scope",
]

_T = TypeVar("_T")

#: Directives as :func:`content_security_policy` takes them.
Directives = Mapping[str, "str | Iterable[str] | None"]

#: The response header's name.
HEADER = "Content-Security-Policy"

_nonce: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ptl_wsgi_csp_nonce", default=None
)

#: Where the framework adapters keep the request's nonce: the WSGI environ
#: (Flask's ``request.environ``, Django's ``request.META``).  Unlike the context
#: variable, it is there for as long as the request object lives.
CSP_NONCE_KEY = "ptl_wsgi.csp_nonce"

_DIRECTIVE_NAME = re.compile(r"[a-z][a-z0-9\-]*\Z")
# Printable ASCII but for space, "," and ";", which would split the header.
_CSP_SOURCE = re.compile(r"[\x21-\x2b\x2d-\x3a\x3c-\x7e]+\Z")


def _fresh() -> str:
    return secrets.token_urlsafe(18)


def new_nonce() -> str:
    """Make a fresh nonce the current one (for this context) and return it.

    Call it once per request, before rendering; prefer :func:`nonce_scope`,
    which also forgets the nonce afterwards.
    """
    nonce = _fresh()
    _nonce.set(nonce)
    return nonce


def csp_nonce() -> str:
    """The current request's nonce, for ``<script nonce="...">`` in templates.

    Raises LookupError when no request has set one (see :func:`nonce_scope`);
    making one up here would give scripts a nonce the header never names.
    """
    nonce = _nonce.get()
    if nonce is None:
        raise LookupError(
            "no CSP nonce in this context: wrap the request in "
            "ptl_wsgi.csp.nonce_scope() or call new_nonce() first"
        )
    return nonce


@contextmanager
def nonce_scope(nonce: str | None = None) -> Iterator[str]:
    """Set a fresh nonce (or *nonce*) for one request and restore the old state after.

    Restoring matters: a server that reuses threads would otherwise hand one
    request's nonce to the next.  Passing the request's *nonce* again re-enters
    its scope, e.g. around each step of a streamed response body.
    """
    if nonce is None:
        nonce = _fresh()
    token = _nonce.set(nonce)
    try:
        yield nonce
    finally:
        _nonce.reset(token)


def in_nonce_scope(
    body: Iterable[_T], nonce: str, environ: Mapping[str, Any] | None = None
) -> Iterable[_T]:
    """*body* with *nonce* current around each step and ``close()``.

    A body is iterated after the request's scope was left (by the server,
    perhaps in another context).  Lists and the server's file wrapper are
    returned as they are (see :func:`ptl_wsgi._iterate_in_context.in_context`).
    """
    return in_context(body, functools.partial(setting, _nonce, nonce), environ)


def content_security_policy(nonce: str | None = None, directives: Directives | None = None) -> str:
    """The value of a ``Content-Security-Policy`` header allowing scripts by *nonce*.

    *nonce* defaults to :func:`csp_nonce`.  The base policy is a strict one::

        script-src 'nonce-N' 'strict-dynamic'; object-src 'none'; base-uri 'none'

    *directives* adds or replaces directives (a value may be a string or a
    list of sources; ``None`` removes the directive), e.g.
    ``{"default-src": "'self'", "frame-ancestors": "'none'"}``.  Raises
    ValueError for a directive name or source that would corrupt the header.
    """
    if nonce is None:
        nonce = csp_nonce()
    policy: dict[str, str | Iterable[str] | None] = {
        "script-src": (f"'nonce-{nonce}'", "'strict-dynamic'"),
        "object-src": "'none'",
        "base-uri": "'none'",
    }
    for name, sources in (directives or {}).items():
        policy[name.lower()] = sources  # directive names ignore case
    parts = []
    for name, sources in policy.items():
        if sources is None:
            continue
        if _DIRECTIVE_NAME.match(name) is None:
            raise ValueError(f"invalid CSP directive name {name!r}")
        words = sources.split() if isinstance(sources, str) else list(sources)
        for word in words:
            if _CSP_SOURCE.match(word) is None:
                raise ValueError(f"invalid CSP source {word!r} in {name}")
        parts.append(" ".join([name, *words]))
    return "; ".join(parts)


def check_directives(directives: Directives | None) -> dict[str, str | Iterable[str] | None]:
    """A copy of *directives*, checked now: ValueError as :func:`content_security_policy`
    raises it, so that a bad setting fails at start-up rather than per request."""
    checked = dict(directives or {})
    content_security_policy("n", checked)
    return checked


class RequestNonce:
    """One request's nonce: published in its *environ*, current while its scope is open.

    ``with RequestNonce(environ) as nonce:`` where one block handles the
    request; :meth:`open` and :meth:`close` where a framework starts and ends
    it in different hooks.  Closing restores what was current before.
    """

    __slots__ = ("_token", "nonce")

    def __init__(self, environ: MutableMapping[str, Any]) -> None:
        self.nonce = _fresh()
        environ[CSP_NONCE_KEY] = self.nonce
        self._token: contextvars.Token[str | None] | None = None

    def open(self) -> str:
        """Make the nonce current (in this context) until :meth:`close`; returns it."""
        self._token = _nonce.set(self.nonce)
        return self.nonce

    def close(self) -> None:
        """Restore the nonce that was current before :meth:`open` (again: nothing)."""
        token, self._token = self._token, None
        if token is not None:
            _nonce.reset(token)

    def __enter__(self) -> str:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def policy(self, directives: Directives | None = None) -> str:
        """The header value naming this nonce, with *directives* added."""
        return content_security_policy(self.nonce, directives)

    def iterate(self, body: Iterable[_T], environ: Mapping[str, Any] | None = None) -> Iterable[_T]:
        """*body* with this nonce current around each step (:func:`in_nonce_scope`)."""
        return in_nonce_scope(body, self.nonce, environ)
