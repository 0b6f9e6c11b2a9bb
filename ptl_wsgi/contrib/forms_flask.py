"""Forms under Flask: Flask-WTF-compatible CSRF tokens.

Loaded by :mod:`ptl_wsgi.forms.adapters` when a form is given ``flask.request``
(and registered by ``PTL(app)``), so that ``Form(request)`` inside a Flask
request is protected by :class:`FlaskCSRF`.  Flask's request is a werkzeug
request, which the forms core reads itself.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

import flask
from itsdangerous import BadData, URLSafeTimedSerializer

from ptl_wsgi.forms.csrf import CSRFPolicy, plausible_token
from ptl_wsgi.forms.inputs import FormData

__all__ = ["FlaskCSRF", "FlaskFormsAdapter", "adapter"]


class FlaskCSRF(CSRFPolicy):
    """Flask: Flask-WTF-compatible tokens, so either library accepts the other's.

    The secret is ``WTF_CSRF_SECRET_KEY`` or else ``SECRET_KEY``; the raw
    per-session token lives in ``flask.session[field_name]`` and the field
    carries it signed by itsdangerous (salt ``"wtf-csrf-token"``), valid for
    ``WTF_CSRF_TIME_LIMIT`` seconds (default 3600; None for no limit).
    """

    salt = "wtf-csrf-token"

    def __init__(self) -> None:
        app = self._current_app()
        config = app.config
        secret = config.get("WTF_CSRF_SECRET_KEY") or app.secret_key
        if not secret:
            raise RuntimeError(
                f"{type(self).__name__} needs app.config['SECRET_KEY'] (or WTF_CSRF_SECRET_KEY)"
            )
        self.secret: str | bytes = secret
        self.field_name = config.get("WTF_CSRF_FIELD_NAME", "csrf_token")
        self.time_limit = config.get("WTF_CSRF_TIME_LIMIT", 3600)

    # The framework's proxies: Quart's policy (contrib.forms_quart) is this one on Quart's.
    @staticmethod
    def _current_app() -> Any:
        return flask.current_app

    @staticmethod
    def _session() -> Any:
        return flask.session

    def _serializer(self) -> URLSafeTimedSerializer:
        return URLSafeTimedSerializer(self.secret, salt=self.salt)

    def token(self) -> str:
        session = self._session()
        raw = session.get(self.field_name)
        if not isinstance(raw, str):
            raw = session[self.field_name] = secrets.token_hex(20)
        return str(self._serializer().dumps(raw))

    def check(self, submitted: str | None) -> bool:
        raw = self._session().get(self.field_name)
        if not isinstance(raw, str) or not raw.isascii() or not plausible_token(submitted):
            return False
        try:
            signed = self._serializer().loads(submitted, max_age=self.time_limit)
        except BadData:
            return False
        return isinstance(signed, str) and signed.isascii() and hmac.compare_digest(signed, raw)


class FlaskFormsAdapter:
    """Flask's side of forms: requests are werkzeug's (read by the core); CSRF is Flask's."""

    def form_data(self, request: Any, method: str) -> FormData | None:
        """None: the core reads werkzeug requests, Flask's included."""
        return None

    def csrf_policy(self, data: FormData) -> CSRFPolicy | None:
        """:class:`FlaskCSRF` inside a Flask request, whatever the form was given."""
        return FlaskCSRF() if flask.has_request_context() else None


adapter = FlaskFormsAdapter()
