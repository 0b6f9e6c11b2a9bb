"""CSRF protection for forms: standalone, Flask and Django policies.

A policy decides the hidden field's name, the token rendered into it and
whether a submitted token is good.  :class:`CSRFTokenWidget` is the hidden
field; ``Form(csrf=True)`` picks a policy for the request it reads:

* a Django ``HttpRequest`` -> :class:`DjangoCSRF` (Django's middleware checks);
* inside a Flask request -> :class:`FlaskCSRF` (Flask-WTF compatible tokens);
* anything else needs an explicit :class:`SessionCSRF` (or ``csrf=False``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sys
import time
from collections.abc import MutableMapping
from typing import Any, ClassVar, TypeGuard

from ptl_wsgi.forms.inputs import FormData
from ptl_wsgi.forms.widgets import HiddenWidget
from ptl_wsgi.html import htmltext

__all__ = [
    "CSRFPolicy",
    "CSRFTokenWidget",
    "DjangoCSRF",
    "FlaskCSRF",
    "SessionCSRF",
    "detect_policy",
]

# Tokens are short ASCII str; anything else is rejected before any decoding so
# hostile input cannot reach hmac or itsdangerous with odd characters or types.
_MAX_TOKEN = 512
# Our timestamps: ASCII digits (str.isdigit() also says yes to "²" and Arabic-Indic digits),
# and few enough that the age is plain int arithmetic, never a float overflow.
_STAMP = re.compile(r"[0-9]{1,12}\Z")


def _plausible(token: object) -> TypeGuard[str]:
    return isinstance(token, str) and 0 < len(token) <= _MAX_TOKEN and token.isascii()


class CSRFPolicy:
    """How a form's CSRF token is made and checked."""

    field_name = "csrf_token"

    def token(self) -> str:
        """The token to render into the hidden field."""
        raise NotImplementedError

    def check(self, submitted: str | None) -> bool:
        """Whether *submitted* (None when missing) proves a same-site submission.

        Never raises for what a client sent: a malformed token, or one that is
        not a str at all, is simply False.
        """
        raise NotImplementedError


class SessionCSRF(CSRFPolicy):
    """Standalone tokens: a per-session random secret, signed with HMAC-SHA256.

    *session* is either a mutable mapping kept per visitor (the raw token is
    stored in it under ``session_key``) or a string that already identifies
    the session, such as the session cookie's value.  Neither ever appears
    in the page: the field carries ``salt.timestamp.hmac(secret, raw, salt,
    timestamp)``, checked in constant time and accepted for *max_age* seconds.
    """

    session_key = "_ptl_csrf_token"

    def __init__(
        self,
        secret: str | bytes,
        session: MutableMapping[str, Any] | str,
        *,
        max_age: int | None = 3600,
        field_name: str = "csrf_token",
    ) -> None:
        if not secret:
            raise ValueError("SessionCSRF needs a non-empty secret")
        if isinstance(session, str) and not session:
            raise ValueError("SessionCSRF needs a non-empty session identifier")
        self.secret = secret.encode("utf-8") if isinstance(secret, str) else secret
        self.session = session
        self.max_age = max_age
        self.field_name = field_name

    def _raw(self, create: bool) -> str | None:
        if isinstance(self.session, str):
            return self.session
        raw = self.session.get(self.session_key)
        if not isinstance(raw, str) and create:
            raw = self.session[self.session_key] = secrets.token_urlsafe(32)
        return raw if isinstance(raw, str) else None

    def _mac(self, raw: str, salt: str, stamp: str) -> str:
        message = "\0".join((raw, salt, stamp)).encode("utf-8", "surrogatepass")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def token(self) -> str:
        raw = self._raw(create=True)
        assert raw is not None
        salt = secrets.token_urlsafe(8)
        stamp = str(int(time.time()))
        return f"{salt}.{stamp}.{self._mac(raw, salt, stamp)}"

    def check(self, submitted: str | None) -> bool:
        raw = self._raw(create=False)
        if raw is None or not _plausible(submitted):
            return False
        parts = submitted.split(".")
        if len(parts) != 3 or _STAMP.match(parts[1]) is None:
            return False
        salt, stamp, mac = parts
        if self.max_age is not None and not 0 <= int(time.time()) - int(stamp) <= self.max_age:
            return False
        return hmac.compare_digest(mac, self._mac(raw, salt, stamp))


class FlaskCSRF(CSRFPolicy):
    """Flask: Flask-WTF-compatible tokens, so either library accepts the other's.

    The secret is ``WTF_CSRF_SECRET_KEY`` or else ``SECRET_KEY``; the raw
    per-session token lives in ``flask.session[field_name]`` and the field
    carries it signed by itsdangerous (salt ``"wtf-csrf-token"``), valid for
    ``WTF_CSRF_TIME_LIMIT`` seconds (default 3600; None for no limit).
    """

    salt = "wtf-csrf-token"

    def __init__(self) -> None:
        from flask import current_app

        config = current_app.config
        self.secret: str | bytes | None = (
            config.get("WTF_CSRF_SECRET_KEY") or current_app.secret_key
        )
        if not self.secret:
            raise RuntimeError("FlaskCSRF needs app.config['SECRET_KEY'] (or WTF_CSRF_SECRET_KEY)")
        self.field_name = config.get("WTF_CSRF_FIELD_NAME", "csrf_token")
        self.time_limit = config.get("WTF_CSRF_TIME_LIMIT", 3600)

    def _serializer(self) -> Any:
        from itsdangerous import URLSafeTimedSerializer

        assert self.secret  # for type checkers: __init__ refuses an empty one
        return URLSafeTimedSerializer(self.secret, salt=self.salt)

    def token(self) -> str:
        from flask import session

        raw = session.get(self.field_name)
        if not isinstance(raw, str):
            raw = session[self.field_name] = secrets.token_hex(20)
        return str(self._serializer().dumps(raw))

    def check(self, submitted: str | None) -> bool:
        from flask import session
        from itsdangerous import BadData

        raw = session.get(self.field_name)
        if not isinstance(raw, str) or not raw.isascii() or not _plausible(submitted):
            return False
        try:
            signed = self._serializer().loads(submitted, max_age=self.time_limit)
        except BadData:
            return False
        return isinstance(signed, str) and signed.isascii() and hmac.compare_digest(signed, raw)


class DjangoCSRF(CSRFPolicy):
    """Django: render ``csrfmiddlewaretoken`` and leave checking to the middleware.

    ``CsrfViewMiddleware`` rejects a bad token with a 403 before the view runs
    and marks accepted requests ``csrf_processing_done``.  A POST without that
    mark (middleware missing, or a ``csrf_exempt`` view) fails the check: use
    ``Form(csrf=False)`` deliberately for exempt views.
    """

    field_name = "csrfmiddlewaretoken"

    def __init__(self, request: Any) -> None:
        self.request = request

    def token(self) -> str:
        from django.middleware.csrf import get_token

        return str(get_token(self.request))

    def check(self, submitted: str | None) -> bool:
        return bool(getattr(self.request, "csrf_processing_done", False))


def _is_django_request(request: Any) -> bool:
    if not (hasattr(request, "META") and hasattr(request, "POST")):
        return False
    try:
        import django.middleware.csrf  # noqa: F401
    except ImportError:
        return False
    return True


def _in_flask_request() -> bool:
    flask = sys.modules.get("flask")  # never import Flask just to find out
    return flask is not None and flask.has_request_context()


def detect_policy(data: FormData) -> CSRFPolicy:
    """The policy for ``csrf=True``: Django's, Flask's, or an error explaining the choice."""
    if _is_django_request(data.request):
        return DjangoCSRF(data.request)
    if _in_flask_request():
        return FlaskCSRF()
    raise RuntimeError(
        "cannot protect this form against CSRF automatically outside Django and Flask: "
        "pass csrf=SessionCSRF(secret, session), or csrf=False for a form that changes nothing"
    )


class CSRFTokenWidget(HiddenWidget):
    """The hidden CSRF field of a form; a failed check becomes a form-level error."""

    kind = "csrf"
    is_field = False
    max_length = _MAX_TOKEN
    messages: ClassVar[dict[str, str]] = {
        **HiddenWidget.messages,
        "csrf": "This form has expired or did not come from this site. Please submit it again.",
    }

    def __init__(self, policy: CSRFPolicy) -> None:
        super().__init__(policy.field_name, label="Security token")
        self.policy = policy

    def process(self, data: FormData) -> None:
        self.processed = True
        values = data.getlist(self.name)
        submitted = values[0] if len(values) == 1 and isinstance(values[0], str) else None
        self.error = None if self.policy.check(submitted) else self.messages["csrf"]
        self.value = None

    def render_control(self) -> htmltext:
        # Always a fresh token: the submitted one is never shown back.
        return htmltext('<input type="hidden" name="%s" value="%s">') % (
            self.name,
            self.policy.token(),
        )
