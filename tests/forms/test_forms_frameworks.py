"""ptl_wsgi.forms under real Flask and Django: request adapters and CSRF."""

from __future__ import annotations

import io
import re

# Flask and Django are dev dependencies: a missing one fails the run, never skips it.
import django
import flask
import pytest
from forms_helpers import HOSTILE, assert_no_injection, everything

from ptl_wsgi.forms import (
    DjangoCSRF,
    FileWidget,
    FlaskCSRF,
    Form,
    TextAreaWidget,
    TextWidget,
)
from ptl_wsgi.html import htmltext


def token_in(html: str, field: str) -> str:
    match = re.search(rf'name="{field}" value="([^"]+)"', html)
    assert match, html
    return match.group(1)


# -- Flask ------------------------------------------------------------------------


def make_flask_app(**config: object) -> flask.Flask:
    app = flask.Flask(__name__)
    app.config.update(SECRET_KEY="flask secret", **config)

    @app.route("/", methods=["GET", "POST"])
    def edit() -> str:
        form = everything(Form(flask.request))
        if form.validate():
            return "saved " + form.values["text"]
        return str(form.render())

    return app


def hostile_data(hostile: str) -> dict[str, object]:
    return {name: hostile for name in everything(Form(None, csrf=False)).widgets}


@pytest.mark.parametrize("hostile", HOSTILE)
def test_flask_round_trip_escapes_hostile_values(hostile: str) -> None:
    client = make_flask_app().test_client()
    page = client.get("/").get_data(as_text=True)
    token = token_in(page, "csrf_token")
    data = {**hostile_data(hostile), "csrf_token": token}
    html = client.post("/", data=data).get_data(as_text=True)
    assert "has expired" not in html
    assert "Enter a whole number." in html
    assert_no_injection(html)
    assert htmltext("%s") % hostile in html
    good = {"text": "Ann", "csrf_token": token, "file": (io.BytesIO(b"x"), "a.txt")}
    assert client.post("/", data=good).get_data() == b"saved Ann"


def test_flask_csrf_rejects_missing_foreign_and_forged_tokens() -> None:
    app = make_flask_app()
    client, stranger = app.test_client(), app.test_client()
    token = token_in(client.get("/").get_data(as_text=True), "csrf_token")
    stranger.get("/")
    for who, value in [
        (client, None),
        (client, token + "x"),
        (stranger, token),
        (client, "tök"),
    ]:
        data = {"text": "Ann"} if value is None else {"text": "Ann", "csrf_token": value}
        html = who.post("/", data=data).get_data(as_text=True)
        assert "has expired" in html
        assert 'value="Ann"' in html  # the fields are still shown back


def test_flask_tokens_are_flask_wtf_compatible() -> None:
    from itsdangerous import URLSafeTimedSerializer

    app = make_flask_app(WTF_CSRF_SECRET_KEY="wtf secret", WTF_CSRF_TIME_LIMIT=None)
    with app.test_request_context("/"):
        policy = FlaskCSRF()
        token = policy.token()
        raw = flask.session["csrf_token"]
        # What Flask-WTF's validate_csrf does with the same configuration.
        assert URLSafeTimedSerializer("wtf secret", salt="wtf-csrf-token").loads(token) == raw
        # And a token made the Flask-WTF way is accepted here.
        assert policy.check(URLSafeTimedSerializer("wtf secret", salt="wtf-csrf-token").dumps(raw))
        assert not policy.check(
            URLSafeTimedSerializer("flask secret", salt="wtf-csrf-token").dumps(raw)
        )


def test_flask_without_secret_key_is_a_clear_error() -> None:
    app = flask.Flask(__name__)
    with app.test_request_context("/"), pytest.raises(RuntimeError, match="SECRET_KEY"):
        Form(flask.request)


def test_a_form_given_the_environ_or_nothing_inside_flask_gets_flasks_policy() -> None:
    from ptl_wsgi.contrib.flask import PTL

    app = make_flask_app()
    PTL(app)  # registers Flask's forms adapter: a form given None is protected too
    with app.test_request_context("/", method="POST"):
        for given in (flask.request.environ, None):
            form = Form(given)
            assert isinstance(form["csrf_token"].policy, FlaskCSRF), given
            assert 'name="csrf_token" value="' in str(form.render_end())


def test_a_request_that_only_looks_like_djangos_is_not_read_as_one() -> None:
    # Requests are told apart by the framework their class comes from, not by attributes.
    class Impostor:
        META: dict[str, str] = {}
        POST = {"text": "forged"}
        method = "POST"

    with pytest.raises(TypeError, match="cannot read form data from Impostor"):
        Form(Impostor(), csrf=False)


def test_forms_import_a_framework_only_for_its_requests() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from ptl_wsgi.forms import Form, TextWidget\n"
        "form = Form({'text': 'x'}, csrf=False)\n"
        "form.add(TextWidget, 'text')\n"
        "assert form.validate() and str(form.render())\n"
        "print(sorted(m for m in ('flask', 'django', 'jinja2') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.stdout.strip() == "[]", result.stderr


# -- Django -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def django_settings() -> object:
    """Use settings someone already configured as they are; else configure minimally."""
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            SECRET_KEY="django secret",
            ALLOWED_HOSTS=["testserver"],
            USE_TZ=True,
            INSTALLED_APPS=[],
        )
        django.setup()
    return settings


def run_django(request: object, view: object) -> object:
    """Pass *request* through CsrfViewMiddleware around *view*, as Django's handler does."""
    from django.middleware.csrf import CsrfViewMiddleware

    middleware = CsrfViewMiddleware(view)
    response = middleware.process_request(request)
    if response is None:
        response = middleware.process_view(request, view, (), {})
    if response is None:
        response = view(request)
    return middleware.process_response(request, response)


def django_view(request: object) -> object:
    from django.http import HttpResponse

    form = everything(Form(request))
    if form.validate():
        return HttpResponse("saved " + form.values["text"])
    return HttpResponse(str(form.render()))


@pytest.mark.parametrize("hostile", HOSTILE)
def test_django_round_trip_escapes_hostile_values(django_settings: object, hostile: str) -> None:
    from django.test import RequestFactory

    factory = RequestFactory()
    cookie_name = django_settings.CSRF_COOKIE_NAME
    page = run_django(factory.get("/"), django_view)
    token = token_in(page.content.decode(), "csrfmiddlewaretoken")
    cookie = page.cookies[cookie_name].value

    def post_form(data: dict[str, object]) -> object:
        request = factory.post("/", data)
        request.COOKIES[cookie_name] = cookie
        return run_django(request, django_view)

    html = post_form({**hostile_data(hostile), "csrfmiddlewaretoken": token}).content.decode()
    assert "has expired" not in html
    assert "Enter a whole number." in html
    assert_no_injection(html)

    upload = io.BytesIO(b"data")
    upload.name = "a.txt"
    saved = post_form({"text": "Ann", "csrfmiddlewaretoken": token, "file": upload})
    assert saved.content == b"saved Ann"
    assert post_form({"text": "Ann"}).status_code == 403  # the middleware checks, not us


def test_django_files_and_repeated_fields(django_settings: object) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import RequestFactory

    request = RequestFactory().post(
        "/",
        {"t": ["a", "b"], "f": SimpleUploadedFile("<x>.txt", b"abc", "text/plain")},
    )
    form = Form(request, csrf=False)
    form.add(TextWidget, "t")
    form.add(FileWidget, "f")
    assert not form.validate()
    assert "more than once" in form["t"].error
    upload = form.values["f"]
    assert (upload.filename, upload.size, upload.read()) == ("<x>.txt", 3, b"abc")


def test_django_invalid_utf8_body(django_settings: object) -> None:
    from django.test import RequestFactory

    request = RequestFactory().generic(
        "POST",
        "/",
        b"t=%FF%3Cscript%3E&a=\xfe",
        content_type="application/x-www-form-urlencoded",
    )
    form = Form(request, csrf=False)
    form.add(TextWidget, "t")
    form.add(TextAreaWidget, "a")
    form.validate()
    html = str(form.render())
    html.encode("utf-8")
    assert_no_injection(html)


def test_django_post_not_checked_by_middleware_fails_closed(django_settings: object) -> None:
    from django.test import RequestFactory

    form = Form(RequestFactory().post("/", {"t": "x"}))
    form.add(TextWidget, "t")
    assert isinstance(form["csrfmiddlewaretoken"].policy, DjangoCSRF)
    assert not form.validate()
    assert "has expired" in form.render_errors()


# -- malformed tokens are invalid, never an error --------------------------------------------

from forms_helpers import MALFORMED_TOKENS  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ANY_TOKEN = st.one_of(
    st.text(),
    st.text(alphabet="0123456789.-_=", max_size=120),
    st.sampled_from(MALFORMED_TOKENS),
    st.binary(),
    st.none(),
    st.integers(),
)


@given(ANY_TOKEN)
@settings(max_examples=200, deadline=None)
def test_flask_csrf_check_never_raises(token: object) -> None:
    app = make_flask_app()
    with app.test_request_context("/"):
        policy = FlaskCSRF()
        policy.token()
        assert policy.check(token) is False  # type: ignore[arg-type]
    with app.test_request_context("/"):  # no token in the session yet
        assert FlaskCSRF().check(token) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("token", MALFORMED_TOKENS[:6])
def test_flask_malformed_tokens_are_a_form_error(token: str) -> None:
    client = make_flask_app().test_client()
    client.get("/")
    response = client.post("/", data={"text": "Ann", "csrf_token": token})
    assert response.status_code == 200
    assert "has expired" in response.get_data(as_text=True)


@pytest.mark.parametrize("token", MALFORMED_TOKENS[:6])
def test_django_malformed_tokens_are_refused_by_the_middleware(
    django_settings: object, token: str
) -> None:
    from django.test import RequestFactory

    factory = RequestFactory()
    page = run_django(factory.get("/"), django_view)
    request = factory.post("/", {"text": "Ann", "csrfmiddlewaretoken": token})
    request.COOKIES[django_settings.CSRF_COOKIE_NAME] = page.cookies[
        django_settings.CSRF_COOKIE_NAME
    ].value
    assert run_django(request, django_view).status_code == 403
    assert DjangoCSRF(request).check(token) is False


def test_a_request_whose_form_is_awaited_is_a_clear_error_not_an_empty_submission() -> None:
    # An async framework's request with werkzeug's attribute names (Quart's has an adapter):
    # its form read as fields would be a coroutine, never awaited, and no submission.
    import warnings

    class AsyncRequest:
        method = "POST"
        args: dict[str, str] = {}
        files: dict[str, str] = {}

        @property
        async def form(self) -> dict[str, str]:
            return {"text": "x"}

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        with pytest.raises(TypeError, match="the form of a AsyncRequest is read with await"):
            Form(AsyncRequest(), csrf=False)
