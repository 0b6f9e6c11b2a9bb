"""Every WSGI output path applies the one output policy (issue: safe by default).

A value that is not markup never reaches an HTML response unescaped, whatever
spelling the content type has and however the view hands it over.
"""

from __future__ import annotations

from wsgiref.validate import validator

import pytest
from werkzeug.test import Client

from ptl_wsgi.html import htmltext
from ptl_wsgi.wsgi import View, stream, view

ATTACK = "<script>alert(1)</script>"
ESCAPED = b"&lt;script&gt;alert(1)&lt;/script&gt;"
HTML_TYPES = ["text/html", "text/html; charset=utf-8", "TEXT/HTML", "application/xhtml+xml",
              "image/svg+xml"]  # fmt: skip


def get(app, path="/"):
    return Client(validator(app)).open(path, buffered=True)


@pytest.mark.parametrize("mimetype", HTML_TYPES)
def test_stream_escapes_str_chunks_for_every_html_spelling(mimetype):
    app = view(lambda request: stream(iter([htmltext("<p>"), ATTACK]), mimetype=mimetype))
    body = get(app).data
    assert body == b"<p>" + ESCAPED


@pytest.mark.parametrize("mimetype", HTML_TYPES)
def test_stream_escapes_bytes_chunks_in_html(mimetype):
    app = view(lambda request: stream(iter([ATTACK.encode()]), mimetype=mimetype))
    assert get(app).data == ESCAPED


@pytest.mark.parametrize("mimetype", ["text/plain", "text/html"])
@pytest.mark.parametrize("header", ["text/html", "text/plain", "application/xhtml+xml"])
def test_stream_escapes_whenever_the_sent_type_is_html(mimetype, header):
    app = view(
        lambda request: stream(iter([ATTACK]), mimetype=mimetype, headers={"Content-Type": header})
    )
    response = get(app)
    sent = response.headers["Content-Type"]
    assert response.data == (ESCAPED if "html" in sent else ATTACK.encode())


def test_stream_raw_text_when_the_type_is_not_html():
    app = view(lambda request: stream(iter([ATTACK]), mimetype="text/plain"))
    assert get(app).data == ATTACK.encode()


@pytest.mark.parametrize("content_type", HTML_TYPES)
@pytest.mark.parametrize("body", [ATTACK, ATTACK.encode()])
def test_view_content_type_html_escapes_str_and_bytes(content_type, body):
    app = View(lambda request: body, content_type=content_type)
    response = get(app)
    assert response.data == ESCAPED


@pytest.mark.parametrize("body", [ATTACK, ATTACK.encode()])
def test_view_headers_content_type_html_escapes(body):
    app = view(lambda request: (body, 200, {"Content-Type": "Text/HTML; charset=utf-8"}))
    assert get(app).data == ESCAPED


def test_view_generator_follows_the_views_content_type():
    def gen():
        yield ATTACK

    app = View(lambda request: gen(), content_type="text/plain; charset=utf-8")
    response = get(app)
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert response.data == ATTACK.encode()


def test_markup_passes_and_str_defaults_to_text_plain():
    assert get(view(lambda request: htmltext("<b>x</b>"))).data == b"<b>x</b>"
    response = get(view(lambda request: ATTACK))
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert response.data == ATTACK.encode()


def test_plain_template_into_html_is_escaped_and_render_text_keeps_it_raw(tmp_path):
    from ptl_wsgi.loader import Loader
    from ptl_wsgi.wsgi import render, render_text

    (tmp_path / "mail.ptl").write_text(
        'def render [plain] (who):\n    "Dear %s, <R&D> awaits." % who\n'
    )
    loader = Loader([tmp_path])
    try:
        page = View(
            lambda r: render("mail.ptl", who="<A>"), content_type="text/html", loader=loader
        )
        assert get(page).data == b"Dear &lt;A&gt;, &lt;R&amp;D&gt; awaits."
        mail = view(
            lambda r: (render_text("mail.ptl", who="<A>"), {"Content-Type": "text/plain"}),
            loader=loader,
        )
        assert get(mail).data == b"Dear <A>, <R&D> awaits."
    finally:
        loader.close()


def test_repeated_content_type_headers_are_html():
    headers = [("Content-Type", "text/plain"), ("Content-Type", "text/html")]
    assert get(view(lambda request: (ATTACK, 200, headers))).data == ESCAPED
    assert get(view(lambda request: stream(iter([ATTACK]), headers=headers))).data == ESCAPED
