"""Forms under Quart: Flask-WTF-compatible CSRF tokens in Quart's session.

A Quart request's form is read with ``await``, which a form's constructor
cannot do: a view passes ``await ptl_wsgi.contrib.quart.form_data()`` (the
current request's submission, read) to :class:`~ptl_wsgi.forms.Form`.  This
adapter, found by :mod:`ptl_wsgi.forms.adapters` from the request's class (and
registered by ``PTL(app)``), gives such forms :class:`QuartCSRF`, and refuses
an unread Quart request with an error saying so.
"""

from __future__ import annotations

from typing import Any

import quart

from ptl_wsgi.contrib.forms_flask import FlaskCSRF
from ptl_wsgi.forms.csrf import CSRFPolicy
from ptl_wsgi.forms.inputs import FormData

__all__ = ["QuartCSRF", "QuartFormsAdapter", "adapter"]


class QuartCSRF(FlaskCSRF):
    """:class:`~ptl_wsgi.contrib.forms_flask.FlaskCSRF` on Quart's app and session: the same
    settings (``WTF_CSRF_SECRET_KEY`` or ``SECRET_KEY``, ``WTF_CSRF_FIELD_NAME``,
    ``WTF_CSRF_TIME_LIMIT``) and Flask-WTF-compatible tokens."""

    @staticmethod
    def _current_app() -> Any:
        return quart.current_app

    @staticmethod
    def _session() -> Any:
        return quart.session


class QuartFormsAdapter:
    """Quart's side of forms: submissions are read by ``form_data()``; CSRF is Quart's."""

    def form_data(self, request: Any, method: str) -> FormData | None:
        """A GET form's query string; a Quart request's body cannot be read here."""
        if method.lower() == "get":
            return FormData(request.method, request.args, None, request)
        raise TypeError(
            "a Quart request's form is read with await: pass "
            "Form(await form_data()) (from ptl_wsgi.contrib.quart), not the request"
        )

    def csrf_policy(self, data: FormData) -> CSRFPolicy | None:
        """:class:`QuartCSRF` inside a Quart request, whatever the form was given."""
        return QuartCSRF() if quart.has_request_context() else None


adapter = QuartFormsAdapter()
