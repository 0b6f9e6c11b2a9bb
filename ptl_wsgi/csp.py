"""Content-Security-Policy nonces: the one implementation every integration uses.

A request gets a fresh nonce; templates read it with :func:`csp_nonce` (or as
``csp_nonce`` in their context, from ``environ["ptl_wsgi.csp_nonce"]``), and
the response's header, made by :func:`content_security_policy`, names it.

* :func:`new_nonce`, :func:`csp_nonce`, :func:`nonce_scope` and
  :func:`content_security_policy` are the public API (also importable from
  ``ptl_wsgi.safety``, their former home, until 0.3);
* :func:`written` is a page as it is sent: a template's markup carries where the
  nonce goes, and only this (which the integrations call) and the markup's
  ``encode()`` write it in (:mod:`ptl_wsgi.escaping.nonce`);
* :class:`RequestNonce` is one request's state, as :class:`ptl_wsgi.wsgi.CSP`,
  the Flask extension and Django's ``CSPMiddleware`` keep it;
  :func:`in_nonce_scope` (:func:`in_nonce_scope_async`) runs a response body
  with a request's nonce current.
"""

from __future__ import annotations

import base64
import contextvars
import functools
import hashlib
import re
import secrets
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

from ptl_wsgi._iterate_in_context import in_context, in_context_async, setting
from ptl_wsgi.escaping.nonce import CURRENT, USED, enter, written
from ptl_wsgi.escaping.nonce import check as check_nonce

__all__ = [
    "CSP_NONCE_KEY",
    "HEADER",
    "NONCE",
    "Directives",
    "Finding",
    "RequestNonce",
    "check_directives",
    "check_hashes",
    "content_security_policy",
    "csp_nonce",
    "evaluate",
    "in_nonce_scope",
    "in_nonce_scope_async",
    "new_nonce",
    "nonce_scope",
    "script_hash",
    "written",
]

_T = TypeVar("_T")

#: Directives as :func:`content_security_policy` takes them.
Directives = Mapping[str, "str | Iterable[str] | None"]

#: The response header's name.
HEADER = "Content-Security-Policy"

# The context variable is the escaping engine's, which writes the nonce into every
# <script>, <style> and stylesheet <link> a template's literals write (escaping.nonce).
_nonce: contextvars.ContextVar[str | None] = CURRENT

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
    enter(nonce)
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
    nonce = _fresh() if nonce is None else check_nonce(nonce)
    token = enter(nonce)
    try:
        yield nonce
    finally:
        _nonce.reset(token)


def in_nonce_scope(
    body: Iterable[_T], nonce: str, environ: Mapping[str, Any] | None = None
) -> Iterable[_T]:
    """*body* with *nonce* current around each step and ``close()``, each chunk
    :func:`written` there (the framework may encode it after the step).

    A body is iterated after the request's scope was left (by the server,
    perhaps in another context).  The server's file wrapper is returned as it is,
    a list or tuple as a list of its chunks written (see
    :func:`ptl_wsgi._iterate_in_context.in_context`).
    """
    USED[0] = True
    enter_scope = functools.partial(setting, _nonce, check_nonce(nonce))
    return in_context(body, enter_scope, environ, written)


def in_nonce_scope_async(body: AsyncIterable[_T], nonce: str) -> AsyncIterator[_T]:
    """Async *body* with *nonce* current around each step and ``aclose()``
    (as :func:`in_nonce_scope`, for async streams)."""
    USED[0] = True
    return in_context_async(body, functools.partial(setting, _nonce, check_nonce(nonce)), written)


#: In *directives*, the request's nonce source: ``{"style-src": [NONCE]}`` is
#: ``style-src 'nonce-N'`` (not a CSP keyword: replaced before the header is sent).
NONCE = "'nonce'"

_HASH_SOURCE = re.compile(r"'sha(?:256|384|512)-[A-Za-z0-9+/]+={0,2}'\Z")


def content_security_policy(
    nonce: str | None = None,
    directives: Directives | None = None,
    hashes: Iterable[str] = (),
) -> str:
    """The value of a ``Content-Security-Policy`` header allowing scripts by *nonce*.

    *nonce* defaults to :func:`csp_nonce`.  The base policy is Google's strict
    one, which the CSP Evaluator's rules accept (docs/security.md)::

        script-src 'nonce-N' 'strict-dynamic' https: 'unsafe-inline';
        object-src 'none'; base-uri 'none'

    (``https:`` and ``'unsafe-inline'`` are for browsers older than CSP 3:
    ``'strict-dynamic'`` makes newer ones ignore the first, a nonce the second.)
    *hashes* (``'sha256-...'`` sources, as ``ptl-wsgi csp-hashes`` prints them)
    are added to ``script-src``, for inline scripts of pages cached whole.
    *directives* adds or replaces directives (a value may be a string or a
    list of sources, where :data:`NONCE` stands for the nonce; ``None`` removes
    the directive), e.g. ``{"style-src": [NONCE], "frame-ancestors": "'none'"}``.
    Raises ValueError for a directive name or source that would corrupt the
    header, and for a hash that is not one.
    """
    nonce = csp_nonce() if nonce is None else check_nonce(nonce)
    hashes = list(hashes)
    for source in hashes:
        if _HASH_SOURCE.match(source) is None:
            raise ValueError(f"invalid CSP hash source {source!r}: write 'sha256-<base64>'")
    policy: dict[str, str | Iterable[str] | None] = {
        "script-src": (NONCE, *hashes, "'strict-dynamic'", "https:", "'unsafe-inline'"),
        "object-src": "'none'",
        "base-uri": "'none'",
    }
    for name, sources in (directives or {}).items():
        policy[name.lower()] = sources  # directive names ignore case
    parts = []
    own = f"'nonce-{nonce}'"
    for name, sources in policy.items():
        if sources is None:
            continue
        if _DIRECTIVE_NAME.match(name) is None:
            raise ValueError(f"invalid CSP directive name {name!r}")
        words = sources.split() if isinstance(sources, str) else list(sources)
        for word in words:
            if _CSP_SOURCE.match(word) is None:
                raise ValueError(f"invalid CSP source {word!r} in {name}")
        parts.append(" ".join([name, *(own if word == NONCE else word for word in words)]))
    return "; ".join(parts)


def check_directives(directives: Directives | None) -> dict[str, str | Iterable[str] | None]:
    """A copy of *directives*, checked now: ValueError as :func:`content_security_policy`
    raises it, so that a bad setting fails at start-up rather than per request."""
    checked = dict(directives or {})
    content_security_policy("n", checked)
    return checked


def check_hashes(hashes: Iterable[str] | None) -> tuple[str, ...]:
    """*hashes* as a tuple, checked now (ValueError as :func:`content_security_policy`)."""
    checked = tuple(hashes or ())
    content_security_policy("n", None, checked)
    return checked


def script_hash(text: str) -> str:
    """The ``'sha256-...'`` source that allows an inline script (or style) of *text*."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


# -- Google's CSP Evaluator, its rules as docs/security.md lists them ---------------------


class Finding(NamedTuple):
    """One rule a policy breaks: *severity* ``high``, ``medium`` or ``info``."""

    severity: str
    directive: str
    message: str


_SCRIPT_FALLBACK = ("script-src", "default-src")


def evaluate(policy: str) -> list[Finding]:
    """What Google's CSP Evaluator says of *policy* (a header value), rule by rule.

    Its security checks (``'unsafe-inline'`` or ``'unsafe-eval'`` in effect,
    ``*`` and plain URL schemes that allow any script, missing ``script-src``,
    ``object-src`` or ``base-uri``, short nonces) and its strict-CSP checks
    (``'strict-dynamic'`` with a nonce or hash, the fallbacks for older
    browsers, Trusted Types), evaluated as a CSP 3 browser does: a nonce or
    hash disables ``'unsafe-inline'``, ``'strict-dynamic'`` disables hosts and
    schemes.  An empty list: nothing to report.
    """
    directives: dict[str, list[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            directives.setdefault(words[0].lower(), [word for word in words[1:]])
    findings: list[Finding] = []
    name = next((d for d in _SCRIPT_FALLBACK if d in directives), "")
    script = [word.lower() for word in directives.get(name, [])]
    nonces = [w for w in directives.get(name, []) if w.lower().startswith("'nonce-")]
    hashed = bool(nonces) or any(w.startswith(("'sha256-", "'sha384-", "'sha512-")) for w in script)
    dynamic = "'strict-dynamic'" in script
    if not name:
        findings.append(Finding("high", "script-src", "script-src is missing"))
    if "'unsafe-inline'" in script and not hashed:
        findings.append(
            Finding(
                "high",
                name,
                "'unsafe-inline' allows the execution of unsafe in-page scripts and event handlers",
            )
        )
    if "'unsafe-eval'" in script:
        findings.append(
            Finding(
                "medium",
                name,
                "'unsafe-eval' allows the execution of code injected into DOM APIs such as eval()",
            )
        )
    for directive in (name, "object-src", "base-uri"):
        words = [w.lower() for w in directives.get(directive, [])]
        if directive == name and dynamic:
            continue  # (hosts and schemes are ignored next to 'strict-dynamic')
        for word in words:
            if word in ("*", "http:", "https:", "data:"):
                findings.append(
                    Finding(
                        "high", directive, f"{word} allows the execution of scripts from any origin"
                    )
                )
    if "object-src" not in directives and "default-src" not in directives:
        findings.append(
            Finding(
                "high",
                "object-src",
                "object-src is missing: plugins could run script; set it to 'none'",
            )
        )
    if hashed and "base-uri" not in directives:
        findings.append(
            Finding(
                "high",
                "base-uri",
                "base-uri is missing: a <base> tag could make relative scripts load from "
                "elsewhere; set it to 'none' or 'self'",
            )
        )
    for nonce in nonces:
        value = nonce[len("'nonce-") : -1]
        if len(value) < 8:
            findings.append(
                Finding("medium", name, "the nonce should be at least 8 characters long")
            )
        if not re.fullmatch(r"[A-Za-z0-9+/_=-]+", value):
            findings.append(Finding("info", name, "the nonce should be base64"))
    if not dynamic:
        findings.append(
            Finding(
                "info",
                name,
                "without 'strict-dynamic', host allow-lists can often be bypassed; "
                "use it with nonces or hashes",
            )
        )
    elif not hashed:
        findings.append(
            Finding("info", name, "'strict-dynamic' without a nonce or hash disallows every script")
        )
    if hashed and "'unsafe-inline'" not in script:
        findings.append(
            Finding(
                "info",
                name,
                "add 'unsafe-inline' (ignored where nonces and hashes work) for older browsers",
            )
        )
    if dynamic and not {"https:", "http:"} & set(script):
        findings.append(
            Finding(
                "info", name, "add https: (ignored next to 'strict-dynamic') for older browsers"
            )
        )
    if "report-uri" not in directives and "report-to" not in directives:
        findings.append(
            Finding("info", "report-to", "no reporting: violations are not sent anywhere (opt in)")
        )
    if "require-trusted-types-for" not in directives:
        findings.append(
            Finding(
                "info",
                "require-trusted-types-for",
                "require-trusted-types-for 'script' would lock down DOM XSS sinks "
                "(opt in: it needs scripts that use Trusted Types)",
            )
        )
    return findings


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
        self._token = enter(self.nonce)
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

    def policy(self, directives: Directives | None = None, hashes: Iterable[str] = ()) -> str:
        """The header value naming this nonce, with *directives* and *hashes* added."""
        return content_security_policy(self.nonce, directives, hashes)

    def iterate(self, body: Iterable[_T], environ: Mapping[str, Any] | None = None) -> Iterable[_T]:
        """*body* with this nonce current around each step (:func:`in_nonce_scope`)."""
        return in_nonce_scope(body, self.nonce, environ)

    def iterate_async(self, body: AsyncIterable[_T]) -> AsyncIterator[_T]:
        """Async *body* with this nonce current around each step (:func:`in_nonce_scope_async`)."""
        return in_nonce_scope_async(body, self.nonce)

    def close_in_scope(self, close: Callable[[], None]) -> Callable[[], None]:
        """*close* made to run with this nonce current (a response's ``close``)."""
        nonce = self.nonce

        def closing() -> None:
            with nonce_scope(nonce):
                close()

        return closing
