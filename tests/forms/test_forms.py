"""ptl_wsgi.forms: parsing, validation, escaping, accessibility and input adapters."""

from __future__ import annotations

import datetime
import decimal
import io
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import time

import pytest
from forms_helpers import (
    HOSTILE,
    MALFORMED_TOKENS,
    PAGE_PTL,
    assert_no_injection,
    check_page,
    everything,
    page_form,
)
from werkzeug.datastructures import FileStorage, MultiDict
from werkzeug.test import Client, EnvironBuilder
from werkzeug.wrappers import Request, Response

from ptl_wsgi.forms import (
    CheckboxWidget,
    DateWidget,
    FileWidget,
    Form,
    FormData,
    HiddenWidget,
    IntWidget,
    MultipleSelectWidget,
    PasswordWidget,
    RadioButtonsWidget,
    SelectWidget,
    SessionCSRF,
    SubmitButton,
    TextAreaWidget,
    TextWidget,
    ValidationError,
    form_data,
)
from ptl_wsgi.html import htmltext

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTS)
SUPPORT = os.path.join(TESTS, "support")


def post(data: object, **kwargs: object) -> Form:
    return everything(Form(data, csrf=False, **kwargs))


# -- basics -------------------------------------------------------------------


def test_unsubmitted_form_renders_initial_values_and_is_not_valid() -> None:
    form = Form(None, csrf=False)
    form.add(TextWidget, "name", "Ann & Bob")
    form.add(DateWidget, "day", datetime.date(2024, 2, 29))
    form.add(SelectWidget, "pick", 2, options=[(1, "one"), (2, "two")])
    form.add(MultipleSelectWidget, "many", [1, 3], options=[1, 2, 3])
    form.add(CheckboxWidget, "ok", True)
    assert not form.is_submitted()
    assert not form.validate()
    assert not form.has_errors()
    html = form.render()
    assert isinstance(html, htmltext)
    assert 'value="Ann &amp; Bob"' in html
    assert 'value="2024-02-29"' in html
    assert '<option value="2" selected>two</option>' in html
    assert '<option value="1" selected>1</option>' in html
    assert '<option value="3" selected>3</option>' in html
    assert 'value="on" checked' in html


def test_valid_submission_parses_every_kind() -> None:
    upload = FileStorage(io.BytesIO(b"hello"), filename="a.txt", content_type="text/plain")
    form = post(
        {
            "text": "  Ann  ",
            "password": " secret ",
            "hidden": "h",
            "textarea": "a\r\nb\rc",
            "checkbox": "on",
            "radio": "b",
            "select": "y",
            "multi": ["3", "1", "3"],
            "int": "-0",
            "decimal": "1.25",
            "email": "ann@example.org",
            "date": "2024-02-29",
            "file": upload,
            "save": "1",
        }
    )
    assert form.validate(), [(w.name, w.error) for w in form]
    values = form.values
    file = values.pop("file")
    assert values == {
        "text": "Ann",
        "password": " secret ",
        "hidden": "h",
        "textarea": "a\nb\nc",
        "checkbox": True,
        "radio": "b",
        "select": "y",
        "multi": [3, 1],
        "int": 0,
        "decimal": decimal.Decimal("1.25"),
        "email": "ann@example.org",
        "date": datetime.date(2024, 2, 29),
    }
    assert (file.filename, file.content_type, file.size, file.read()) == (
        "a.txt",
        "text/plain",
        5,
        b"hello",
    )
    assert form.get_submit() == "save"


def test_missing_fields_give_required_errors_and_empty_values() -> None:
    form = post({})
    assert form.is_submitted()
    assert not form.validate()
    assert form["text"].error == "This field is required."
    assert form.values["checkbox"] is False
    assert form.values["multi"] == []
    assert all(form[n].error is None for n in form.widgets if n != "text")
    assert form.get_submit() is None


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("int", "1_000", "Enter a whole number."),
        ("int", "\uff11", "Enter a whole number."),
        ("int", "9" * 41, "too long"),
        ("int", "11", "Must be at most 10."),
        ("int", "-1", "Must be at least 0."),
        ("decimal", "NaN", "Enter a number."),
        ("decimal", "1e999999999", "Enter a number."),
        ("decimal", "1.234", "at most 2 decimal places"),
        ("email", "not an address", "valid e-mail"),
        ("email", "a@b", "valid e-mail"),
        ("date", "20240229", "YYYY-MM-DD"),
        ("date", "2023-02-29", "YYYY-MM-DD"),
        ("radio", "c", "Select a valid choice."),
        ("select", "z", "Select a valid choice."),
        ("multi", ["1", "4"], "Select a valid choice."),
        ("text", "x" * 1001, "at most 1000 characters"),
        ("text", "a\x00b", "not allowed"),
        ("text", "\udcff", "not allowed"),
        ("text", b"\xff\xfe", "not valid UTF-8"),
        ("text", object(), "unsupported type"),
        ("text", ["a", "b"], "more than once"),
        ("checkbox", ["on", "on"], "more than once"),
        ("select", ["x", "y"], "more than once"),
    ],
)
def test_bad_values_give_field_errors(name: str, raw: object, message: str) -> None:
    form = post({"text": "ok", name: raw})
    assert not form.validate()
    assert message in form[name].error
    html = str(form.render())
    html.encode("utf-8")  # shown back without unencodable surrogates
    assert re.search(f'aria-describedby="[^"]*id_{name}-error"', html)
    assert_no_injection(html)


def test_repeated_file_and_oversized_file() -> None:
    def storage(content: bytes) -> FileStorage:
        return FileStorage(io.BytesIO(content), filename="f.bin")

    form = post(MultiDict([("text", "x"), ("file", storage(b"1")), ("file", storage(b"2"))]))
    assert "more than once" in form["file"].error
    form = post({"text": "x", "file": storage(b"x" * 11)})
    assert "too large" in form["file"].error
    form = post({"text": "x", "file": "not a file"})
    assert form.validate() and form.values["file"] is None


def test_password_is_never_shown_back() -> None:
    form = post({"password": "hunter2"})
    assert "hunter2" not in form.render()


def test_validators_form_errors_and_add_error() -> None:
    def no_admin(value: str) -> None:
        if value == "admin":
            raise ValidationError("<b>admin</b> is reserved")

    def passwords_match(form: Form) -> None:
        if form.values["p1"] != form.values["p2"]:
            raise ValidationError("Passwords <differ>")

    def build(data: dict[str, str]) -> Form:
        form = Form(data, csrf=False)
        form.add(TextWidget, "user", validators=[no_admin])
        form.add(PasswordWidget, "p1")
        form.add(PasswordWidget, "p2")
        form.add_validator(passwords_match)
        return form

    form = build({"user": "admin", "p1": "a", "p2": "b"})
    assert form["user"].error == "<b>admin</b> is reserved"
    assert form.errors == []  # form validators wait for valid fields
    assert "&lt;b&gt;admin&lt;/b&gt; is reserved" in form.render()

    form = build({"user": "ann", "p1": "a", "p2": "b"})
    assert not form.validate()
    assert form.errors == ["Passwords <differ>"]
    html = form.render()
    assert '<div class="form-errors" id="id_form-errors" role="alert">' in html
    assert "Passwords &lt;differ&gt;" in html

    form = build({"user": "ann", "p1": "a", "p2": "a"})
    assert form.validate()
    form.add_error("Name taken", field="user")
    form.add_error(htmltext("<em>Try again</em>"))
    assert not form.validate()
    assert "<em>Try again</em>" in form.render()


def test_optional_empty_field_skips_validators() -> None:
    def never(value: object) -> None:
        raise AssertionError("validator ran on an empty value")

    form = Form({"n": "  "}, csrf=False)
    form.add(IntWidget, "n", validators=[never])
    assert form.validate() and form.values == {"n": None}


def test_widget_added_after_processing_is_processed() -> None:
    form = Form({"a": "1", "b": "2"}, csrf=False)
    form.add(TextWidget, "a")
    assert form.validate()
    form.add(IntWidget, "b")
    assert form.values == {"a": "1", "b": 2}


def test_building_mistakes_raise() -> None:
    form = Form(None, csrf=False)
    form.add(TextWidget, "a")
    with pytest.raises(ValueError, match="duplicate"):
        form.add(TextWidget, "a")
    with pytest.raises(ValueError, match="duplicate option keys"):
        SelectWidget("s", options=[1, "1"])
    with pytest.raises(ValueError, match="attribute name"):
        TextWidget("t", attrs={'x" onclick="y': "1"}).render()
    with pytest.raises(ValueError, match="method"):
        Form(None, method="put", csrf=False)
    with pytest.raises(RuntimeError, match="SessionCSRF"):
        Form({})
    with pytest.raises(TypeError):
        Form(42, csrf=False)


# -- escaping and accessibility -------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_values_come_back_escaped_in_every_widget(hostile: str) -> None:
    form = post({name: hostile for name in everything(Form(None, csrf=False)).widgets})
    assert not form.validate()
    html = str(form.render())
    assert_no_injection(html)
    escaped = str(htmltext("%s") % hostile)
    for name in ("text", "hidden", "textarea", "int", "decimal", "email", "date"):
        shown = form[name].render() if name != "hidden" else form[name].render_control()
        assert escaped in shown, name


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_labels_hints_options_attrs_and_errors_are_escaped(hostile: str) -> None:
    form = Form({"s": "nope", "r": "nope", "m": "nope"}, csrf=False, action=hostile)
    form.attrs["class"] = hostile
    opts = [(hostile, hostile)]
    for cls, name in ((SelectWidget, "s"), (RadioButtonsWidget, "r"), (MultipleSelectWidget, "m")):
        form.add(cls, name, options=opts, label=hostile, hint=hostile, attrs={"title": hostile})
    form.add(TextWidget, "t", label=hostile, hint=hostile, attrs={"placeholder": hostile})
    form.add(CheckboxWidget, "c", label=hostile)
    form.add(SubmitButton, "go", hostile)
    form.add_error(hostile)
    form["t"].error = hostile
    html = str(form.render())
    assert_no_injection(html)
    assert str(htmltext("%s") % hostile) in html


def test_trusted_markup_in_labels_is_kept() -> None:
    widget = TextWidget("t", label=htmltext("Name <abbr>req.</abbr>"))
    assert widget.render_label() == htmltext('<label for="id_t">Name <abbr>req.</abbr></label>')


def test_accessible_markup() -> None:
    form = Form({"name": "", "color": "z"}, csrf=False, id_prefix="signup-")
    form.add(TextWidget, "name", required=True, hint="As on your passport")
    form.add(RadioButtonsWidget, "color", options=["red", "blue"], hint="Pick one")
    form.add(TextWidget, "nick")
    assert not form.validate()
    name = str(form["name"].render())
    assert '<label for="signup-name">Name</label>' in name
    assert 'id="signup-name"' in name
    assert 'aria-invalid="true"' in name
    assert 'aria-describedby="signup-name-hint signup-name-error"' in name
    assert '<p class="error" id="signup-name-error">This field is required.</p>' in name
    assert '<p class="hint" id="signup-name-hint">As on your passport</p>' in name
    assert " required" in name and "has-error" in name

    radio = str(form["color"].render())
    assert radio.startswith('<fieldset class="field field-radio has-error" id="signup-color">')
    assert "<legend>Color</legend>" in radio
    assert radio.count('aria-invalid="true"') == 2
    assert radio.count('aria-describedby="signup-color-hint signup-color-error"') == 2
    assert (
        '<input id="signup-color_1"' in radio
        and '<label for="signup-color_1">blue</label>' in radio
    )

    nick = str(form["nick"].render())
    assert "aria-invalid" not in nick and "aria-describedby" not in nick


def test_whole_form_layout() -> None:
    form = Form(None, action="/save?a=1&b=2", csrf=False)
    form.add(HiddenWidget, "next", "/home")
    form.add(FileWidget, "avatar", accept="image/*")
    form.add(SubmitButton, "save", "Save")
    assert form.render() == htmltext(
        '<form method="post" action="/save?a=1&amp;b=2" enctype="multipart/form-data">\n'
        '<div class="field field-file"><label for="id_avatar">Avatar</label>'
        '<input type="file" id="id_avatar" name="avatar" accept="image/*"></div>\n'
        '<div class="buttons"><button type="submit" name="save" value="1">Save</button>\n</div>\n'
        '<input type="hidden" id="id_next" name="next" value="/home">\n'
        "</form>\n"
    )
    assert form.__html__() == str(form.render())
    assert form["avatar"].__html__() == str(form["avatar"].render())


def test_textarea_keeps_leading_newline() -> None:
    form = Form({"t": "\nindented"}, csrf=False)
    form.add(TextAreaWidget, "t")
    assert form["t"].render_control().endswith(">\n\nindented</textarea>")


# -- input adapters -------------------------------------------------------------


def environ(method: str = "POST", **kwargs: object) -> dict[str, object]:
    return EnvironBuilder(method=method, **kwargs).get_environ()


def test_werkzeug_request_and_environ() -> None:
    env = environ(data={"text": HOSTILE[0], "multi": ["1", "2"], "int": "3"})
    for source in (Request(env), env):
        form = post(source)
        assert form["text"].value == HOSTILE[0]
        assert form.values["multi"] == [1, 2]
        assert form.values["int"] == 3
    assert not post(Request(environ("GET"))).is_submitted()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"text=%FF%FE%3Cscript%3E&int=%ED%A0%80", "application/x-www-form-urlencoded"),
        (b"text=\xff\xfe<script>&int=\xed\xa0\x80", "application/x-www-form-urlencoded"),
        (
            b'--b\r\nContent-Disposition: form-data; name="text"\r\n\r\n\xff<script>\r\n--b--\r\n',
            "multipart/form-data; boundary=b",
        ),
    ],
)
def test_werkzeug_invalid_utf8_body_is_not_fatal(body: bytes, content_type: str) -> None:
    form = post(environ(data=body, content_type=content_type))
    form.validate()
    html = str(form.render())
    html.encode("utf-8")
    assert_no_injection(html)


def test_werkzeug_file_upload() -> None:
    env = environ(data={"text": "x", "file": (io.BytesIO(b"abc"), "<x>.txt", "text/plain")})
    form = post(Request(env))
    assert form.validate()
    assert form.values["file"].filename == "<x>.txt"
    assert form.values["file"].read() == b"abc"


def test_get_form_reads_query_string() -> None:
    def search(source: object) -> Form:
        form = Form(source, method="get")
        form.add(TextWidget, "q")
        return form

    assert not search(Request(environ("GET", query_string="other=1"))).is_submitted()
    form = search(Request(environ("GET", query_string={"q": "<b>"})))
    assert form.validate() and form.values == {"q": "<b>"}
    assert '<form method="get" action="">' in form.render()
    with pytest.raises(ValueError, match="GET"):
        Form(None, method="get", csrf=SessionCSRF("k", "sid"))


def test_form_data_from_mappings() -> None:
    data = form_data({"a": ["1", "2"], "b": "3"})
    assert data.method == "POST"
    assert (
        data.getlist("a") == ["1", "2"] and data.getlist("b") == ["3"] and data.getlist("c") == []
    )
    assert "a" in data and "c" not in data and 1 not in data
    assert form_data(data) is data
    assert form_data(None).method == "GET"
    assert FormData.empty().getfiles("x") == []


# -- standalone CSRF --------------------------------------------------------------


def test_session_csrf_with_mapping_session() -> None:
    session: dict[str, str] = {}
    page = Form(None, csrf=SessionCSRF("secret", session))
    html = page.render()
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    raw = session[SessionCSRF.session_key]
    assert raw not in html  # only a MAC of the per-session token is published

    def submit(token_value: object, sess: dict[str, str], secret: str = "secret") -> Form:
        form = Form({"csrf_token": token_value, "x": "1"}, csrf=SessionCSRF(secret, sess))
        form.add(TextWidget, "x")
        return form

    assert submit(token, session).validate()
    for bad, sess, secret in [
        (token, {}, "secret"),  # another session
        (token, {SessionCSRF.session_key: "other"}, "secret"),
        (token, session, "other secret"),
        (token + "0", session, "secret"),
        ([token, token], session, "secret"),
        (None, session, "secret"),
        ("\udcff" * 3, session, "secret"),
        ("a.b.c", session, "secret"),
        ("x" * 100_000, session, "secret"),
    ]:
        form = submit(bad, sess, secret)
        assert not form.validate()
        assert form.values == {"x": "1"}  # fields still parse and show back
        assert "has expired" in form.render_errors()


def test_session_csrf_with_session_id_and_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = SessionCSRF(b"k", "session-id-123", max_age=60)
    token = policy.token()
    assert "session-id-123" not in token
    assert policy.check(token)
    assert not SessionCSRF(b"k", "session-id-456").check(token)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 61)
    assert not policy.check(token)
    with pytest.raises(ValueError):
        SessionCSRF("", "sid")
    with pytest.raises(ValueError):
        SessionCSRF("k", "")


def test_plain_wsgi_app_with_session_csrf() -> None:
    """A plain WSGI view: a session cookie identifies the visitor."""

    def app(env: dict[str, object], start_response: object) -> object:
        request = Request(env)
        sid = request.cookies.get("sid", "")
        form = Form(request, csrf=SessionCSRF("wsgi secret", sid or "anonymous"))
        form.add(TextWidget, "title", required=True)
        form.add(TextAreaWidget, "body")
        form.add(SubmitButton, "save", "Save")
        if form.validate():
            return Response("saved " + form.values["title"])(env, start_response)
        return Response(str(form.render()), content_type="text/html")(env, start_response)

    client = Client(app)
    client.set_cookie("sid", "abc")
    page = client.get("/").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    response = client.post("/", data={"csrf_token": token, "title": "", "body": HOSTILE[2]})
    html = response.get_data(as_text=True)
    assert "This field is required." in html
    assert_no_injection(html)
    assert client.post("/", data={"csrf_token": token, "title": "T"}).get_data() == b"saved T"
    client.set_cookie("sid", "other")
    assert "has expired" in client.post("/", data={"csrf_token": token, "title": "T"}).get_data(
        as_text=True
    )


# -- PTL templates ----------------------------------------------------------------


def test_widget_by_widget_in_compiled_ptl() -> None:
    from ptl_wsgi.compiler import compile_ptl

    namespace: dict[str, object] = {}
    exec(compile_ptl(PAGE_PTL, "page.ptl"), namespace)
    check_page(namespace["page"](page_form()))


def test_widget_by_widget_in_imported_ptl_module(tmp_path: pathlib.Path) -> None:
    # A subprocess, so installing the import hook does not leak into other tests.
    (tmp_path / "formpage.ptl").write_text(PAGE_PTL)
    script = textwrap.dedent(
        """
        from ptl_wsgi.importer import install
        install()
        import formpage
        from forms_helpers import check_page, page_form
        check_page(formpage.page(page_form()))
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": os.pathsep.join([str(tmp_path), SUPPORT, REPO])},
        cwd=REPO,
        check=False,
    )
    assert result.stdout.strip() == "ok", result.stderr


# -- attributes: one renderer, beyond_escaping.attrs---------------------------------------------

SCRIPT_URL = "javascript:alert(document.domain)"
UNSAFE = "about:invalid#ptl-unsafe-url"


def test_form_action_is_a_checked_url() -> None:
    form = Form(None, csrf=False, action=SCRIPT_URL)
    assert f'action="{UNSAFE}"' in form.render_start()
    assert "javascript" not in str(form.render())
    assert 'action="/save?a=1&amp;b=2"' in Form(None, csrf=False, action="/save?a=1&b=2").render()
    form = Form(None, csrf=False, attrs={"ACTION": SCRIPT_URL})  # ours wins, whatever the case
    assert str(form.render_start()).count("action=") == 1


@pytest.mark.parametrize("name", ["formaction", "FormAction", "src", "poster", "xlink:href"])
def test_url_attributes_of_widgets_are_checked(name: str) -> None:
    form = everything(Form(None, csrf=False))
    for widget in form:
        widget.attrs[name] = " java\tscript:alert(1)"
    html = str(form.render())
    assert "script:" not in html
    assert html.count(UNSAFE) == len(form.widgets) + len(form["radio"].options) - 1


@pytest.mark.parametrize("name", ["onclick", "ONFOCUS", "onmouseover", "srcdoc"])
def test_event_handlers_are_refused_unless_markup(name: str) -> None:
    for cls, args in [(TextWidget, ()), (SubmitButton, ("Go",)), (SelectWidget, ())]:
        kwargs = {"options": ["a"]} if cls is SelectWidget else {}
        widget = cls("w", *args, attrs={name: "alert(1)"}, **kwargs)
        with pytest.raises(ValueError, match="script"):
            widget.render()
        widget = cls("w", *args, attrs={name: htmltext("track('w')")}, **kwargs)
        assert f"{name}=\"track('w')\"" in widget.render()
    with pytest.raises(ValueError, match="script"):
        Form(None, csrf=False, attrs={name: "alert(1)"}).render()


@pytest.mark.parametrize("name", ["a b", '"><x', "x=y", "", "a/b", "a`"])
def test_invalid_attribute_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid attribute name"):
        TextWidget("t", attrs={name: "1"}).render()


def test_our_attributes_win_over_the_callers_whatever_the_case() -> None:
    button = SubmitButton("go", "Go", attrs={"TYPE": "reset", "Name": "other", "class": "b"})
    assert button.render_control() == htmltext(
        '<button type="submit" name="go" class="b" value="1">Go</button>'
    )
    text = TextWidget("t", attrs={"ID": "x", "Value": "forced"}).render_control()
    assert "forced" not in text and text.count("id=") == 1


def test_one_attribute_renderer() -> None:
    import ptl_wsgi.forms.widgets as widgets

    assert not hasattr(widgets, "render_attrs")


# -- CSRF: a malformed token is only ever invalid ------------------------------------------


@pytest.mark.parametrize("token", MALFORMED_TOKENS)
def test_session_csrf_malformed_tokens_are_invalid(token: str) -> None:
    session: dict[str, str] = {}
    policy = SessionCSRF("secret", session)
    policy.token()
    assert policy.check(token) is False
    form = Form({"csrf_token": token}, csrf=SessionCSRF("secret", session))
    assert not form.validate()
    assert "has expired" in form.render_errors()


@pytest.mark.parametrize("token", [None, b"a.1.b", 12, ["a.1.b"], object()])
def test_session_csrf_non_str_tokens_are_invalid(token: object) -> None:
    policy = SessionCSRF("secret", "sid")
    assert policy.check(token) is False  # type: ignore[arg-type]


def test_int_widget_without_a_length_limit_still_refuses_huge_numbers() -> None:
    class Unbounded(IntWidget):
        max_length = None

    form = Form({"n": "9" * 5000}, csrf=False)
    form.add(Unbounded, "n")
    assert not form.validate()
    assert form["n"].error == "Enter a whole number."
