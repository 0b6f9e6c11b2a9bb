"""Property tests: no submission, however hostile, crashes a form or injects markup."""

from __future__ import annotations

import io
from urllib.parse import quote_from_bytes

from forms_helpers import assert_no_injection, everything
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import FileStorage, MultiDict
from werkzeug.test import EnvironBuilder

from ptl_wsgi.forms import Form

NAMES = [*everything(Form(None, csrf=False)).widgets, "unknown"]
MEGABYTE = 1 << 20

scalars = st.one_of(
    st.text(),
    st.text(alphabet="<>\"'&=; /\\`"),
    st.binary().map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.binary(),
    st.integers(),
    st.floats(),
    st.decimals(),
    st.none(),
    st.sampled_from(["<" * MEGABYTE, "9" * MEGABYTE, "a@" + "b" * MEGABYTE, "</textarea>" * 1000]),
    st.builds(lambda b: FileStorage(io.BytesIO(b), filename="<f>"), st.binary(max_size=20)),
    st.builds(object),
)
values = st.one_of(scalars, st.lists(scalars, max_size=4), st.tuples(scalars, scalars))
form_data = st.dictionaries(st.sampled_from(NAMES), values, max_size=len(NAMES))


def check(form: Form) -> None:
    form.validate()
    form.get_submit()
    html = str(form.render())
    html.encode("utf-8")  # renderable into a UTF-8 response
    assert_no_injection(html)


@settings(
    max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example]
)
@given(form_data)
def test_arbitrary_mappings_never_crash_or_inject(data: dict[str, object]) -> None:
    check(everything(Form(data, csrf=False)))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.binary(max_size=40)), max_size=20))
def test_raw_bytes_in_urlencoded_body(pairs: list[tuple[str, bytes]]) -> None:
    body = "&".join(f"{name}={quote_from_bytes(value)}" for name, value in pairs)
    environ = EnvironBuilder(
        method="POST", data=body, content_type="application/x-www-form-urlencoded"
    ).get_environ()
    check(everything(Form(environ, csrf=False)))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.text(max_size=40)), max_size=20))
def test_repeated_fields_in_multidicts(pairs: list[tuple[str, str]]) -> None:
    form = everything(Form(MultiDict(pairs), csrf=False))
    check(form)
    counts = {name: sum(1 for n, _ in pairs if n == name) for name, _ in pairs}
    for name, count in counts.items():
        if count > 1 and name in form and form[name].is_field and name != "multi":
            assert form[name].error == form[name].messages["repeated"]


# -- CSRF checks: anything at all is a token that is invalid, never an exception -------------

tokens = st.one_of(
    st.text(),
    st.text(alphabet="0123456789.-+_ \u0661\u00b2", max_size=30),
    st.builds(
        lambda a, n, b: f"{a}.{n}.{b}",
        st.text(max_size=10),
        st.integers(min_value=-(10**600), max_value=10**600),
        st.text(max_size=70),
    ),
    st.binary(),
    st.none(),
    st.integers(),
    st.lists(st.text(max_size=5), max_size=3),
)


@given(tokens)
@settings(max_examples=300, deadline=None)
def test_session_csrf_check_never_raises(token: object) -> None:
    from ptl_wsgi.forms import SessionCSRF

    session: dict[str, str] = {}
    policy = SessionCSRF("secret", session)
    policy.token()
    for checker in (policy, SessionCSRF("secret", "sid", max_age=None)):
        assert checker.check(token) is False  # type: ignore[arg-type]
    form = Form({"csrf_token": token}, csrf=policy)
    assert not form.validate()
    assert "has expired" in form.render_errors()
