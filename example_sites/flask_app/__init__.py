"""A guestbook on Flask with PTL templates: the Flask part of the demo.

:func:`create_app` builds the app (``app.py`` serves it on its own). Signatures
are kept in SQLite; the page shows everyone's input back, escaped by PTL. The
form comes from :mod:`ptl_wsgi.forms` (validation, CSRF token, escaped values).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, flash, redirect, render_template, request, send_file, url_for
from werkzeug.exceptions import NotFound

import ptl_wsgi
from ptl_wsgi.contrib.flask import PTL
from ptl_wsgi.csp import NONCE
from ptl_wsgi.forms import Form, SubmitButton, TextAreaWidget, TextWidget

from . import db
from .entries import bp as entries_bp

# The hook lets a view import a .ptl module and call its templates directly.
ptl_wsgi.install()
from .templates import about  # noqa: E402

HERE = Path(__file__).resolve().parent
FAVICON = HERE.parent / "favicon.svg"  # every example site's icon
MAX_NAME = 80
MAX_MESSAGE = 1000


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """The guestbook app; *config* overrides the defaults and ``FLASK_*`` variables.

    ``DATABASE`` (or ``FLASK_DATABASE``) is the SQLite file, created on first run.
    """
    app = Flask(__name__)
    app.config.update(
        DATABASE=str(HERE / "guestbook.sqlite3"),
        SECRET_KEY="dev: set FLASK_SECRET_KEY in production",
        # The strict Content-Security-Policy, styles by nonce too: every script, style
        # and stylesheet link the templates' literals write carries the request's nonce.
        PTL_CSP=True,
        PTL_CSP_DIRECTIVES={"style-src": [NONCE]},
    )
    app.config.from_prefixed_env()
    app.config.update(config or {})
    PTL(app)
    db.init_app(app)
    app.register_blueprint(entries_bp, url_prefix="/entries")

    @app.route("/", methods=["GET", "POST"])
    def index() -> Any:
        form = sign_form()
        if form.validate():
            name = form.values["name"]
            db.add_entry(name, form.values["message"])
            flash(f"Thanks for signing, {name}!")
            return redirect(url_for("index"))
        page = render_template("guestbook.ptl", entries=db.recent_entries(), form=form)
        return page, 400 if form.is_submitted() else 200

    @app.get("/about")
    def about_page() -> Any:
        return about.render(db.count_entries())

    @app.get("/favicon.svg")
    def favicon() -> Any:
        return send_file(FAVICON, mimetype="image/svg+xml", max_age=86400)

    @app.get("/favicon.ico")
    def favicon_ico() -> Any:
        return redirect(url_for("favicon"), 301)

    @app.errorhandler(NotFound)
    def not_found(error: NotFound) -> Any:
        return render_template("not_found.ptl", path=request.path), 404

    return app


def sign_form() -> Form:
    """The guestbook's form, bound to the current request (CSRF-protected by the session)."""
    form = Form(request, action=url_for("index"))
    form.add(TextWidget, "name", label="Your name", required=True, max_length=MAX_NAME)
    form.add(TextAreaWidget, "message", label="Your message", required=True, max_length=MAX_MESSAGE)
    form.add(SubmitButton, "sign", "Sign the guestbook")
    return form
