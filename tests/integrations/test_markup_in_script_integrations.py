"""A markup value in a script is data through the integrations too (review finding P1).

Real Flask (its test client, CSP on: a compiled script gets the request's nonce, so what
is in it runs) and Django's real PTL engine from the suite's settings module, with Django's own
``format_html`` in a template.
"""

from __future__ import annotations

import re
from pathlib import Path

from flask import Flask

from ptl_wsgi.contrib.django import PTLTemplates
from ptl_wsgi.contrib.flask import PTL, render_template

USER = "1; alert(document.domain)"
DATA = '<script nonce="N">var n =  "1; alert(document.domain)" ;</script>'

SOURCE = """\
from django.utils.html import format_html
from markupsafe import Markup

def render [html] (user):
    "<p>"
    Markup("<b>kept</b>")
    "</p>"
    format_html("<script>var n = {};</script>", user)
    f"<script>var n = {Markup(user)};</script>"
    "<script>var n = "
    Markup(user)
    ";</script>"
"""


def _scripts(body: str) -> list[str]:
    return re.findall(r"<script[^>]*>.*?</script>", re.sub(r'nonce="[^"]+"', 'nonce="N"', body))


def test_flask_with_csp(tmp_path: Path) -> None:
    (tmp_path / "page.ptl").write_text(SOURCE)
    app = Flask(__name__, template_folder=str(tmp_path))
    app.config.update({"TESTING": True, "PTL_CSP": True})
    PTL(app)

    @app.get("/")
    def view() -> object:
        return render_template("page.ptl", user=USER)

    response = app.test_client().get("/")
    body = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "<p><b>kept</b></p>" in body
    # format_html's format is a literal passed to a call: formatted at run time, it
    # takes no nonce (finding D of the second CSP review); the compiled ones do.
    assert _scripts(body) == [DATA.replace(' nonce="N"', ""), DATA, DATA], body


def test_django_engine(tmp_path: Path) -> None:
    (tmp_path / "page.ptl").write_text(SOURCE)
    engine = PTLTemplates({"NAME": "t", "DIRS": [tmp_path], "APP_DIRS": False, "OPTIONS": {}})
    try:
        body = engine.get_template("page.ptl").render({"user": USER})
    finally:
        engine.loader.close()
    assert "<p><b>kept</b></p>" in body
    assert _scripts(body) == [DATA.replace(' nonce="N"', "")] * 3, body
