"""CSRF protection for forms: the policy protocol, standalone tokens, the hidden field.

A policy decides the hidden field's name, the token rendered into it and
whether a submitted token is good.  :class:`CSRFTokenWidget` is the hidden
field.  ``Form(csrf=True)`` asks the request's framework adapter for its
policy (:mod:`ptl_wsgi.forms.adapters`): Django's and Flask's are in
``ptl_wsgi.contrib.forms_django`` and ``ptl_wsgi.contrib.forms_flask``;
anywhere else, pass a :class:`SessionCSRF` (or ``csrf=False``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import MutableMapping
from typing import Any, ClassVar, TypeGuard

from ptl_wsgi.forms.inputs import FormData
from ptl_wsgi.forms.widgets import HiddenWidget
from ptl_wsgi.html import htmltext

__all__ = ["CSRFPolicy", "CSRFTokenWidget", "SessionCSRF", "plausible_token"]

# Tokens are short ASCII str; anything else is rejected before any decoding so
# hostile input cannot reach hmac or itsdangerous with odd characters or types.
_MAX_TOKEN = 512
# Our timestamps: ASCII digits (str.isdigit() also says yes to "²" and Arabic-Indic digits),
# and few enough that the age is plain int arithmetic, never a float overflow.
_STAMP = re.compile(r"[0-9]{1,12}\Z")


def plausible_token(token: object) -> TypeGuard[str]:
    """Whether *token* may be a token at all: a short, non-empty ASCII ``str``.

    Every policy checks this first, so hostile input never reaches a MAC or a
    signature library with odd characters or types.
    """
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
        if raw is None or not plausible_token(submitted):
            return False
        parts = submitted.split(".")
        if len(parts) != 3 or _STAMP.match(parts[1]) is None:
            return False
        salt, stamp, mac = parts
        if self.max_age is not None and not 0 <= int(time.time()) - int(stamp) <= self.max_age:
            return False
        return hmac.compare_digest(mac, self._mac(raw, salt, stamp))


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
