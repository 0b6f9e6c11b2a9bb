"""The strict policy itself (issue #31): Google's CSP Evaluator rules, hashes of static
inline scripts in the header of every integration, ``ptl-wsgi check --csp`` and
``ptl-wsgi csp-hashes`` run as users run them."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.test import override_settings
from flask import Flask
from ptl_helpers import subprocess_env
from werkzeug.test import Client

from ptl_wsgi.compiler import compile_ptl, csp_report, inline_scripts
from ptl_wsgi.contrib.django import CSPMiddleware
from ptl_wsgi.contrib.flask import PTL
from ptl_wsgi.csp import NONCE, content_security_policy, evaluate, script_hash
from ptl_wsgi.wsgi import CSP

HASH = script_hash("document.title = 'x';")


def severities(policy: str) -> list[tuple[str, str]]:
    return [(finding.severity, finding.directive) for finding in evaluate(policy)]


# -- Google's CSP Evaluator -------------------------------------------------------------


def test_the_default_header_meets_every_rule_but_the_opt_in_ones() -> None:
    policy = content_security_policy("abcdefgh12345678")
    assert policy == (
        "script-src 'nonce-abcdefgh12345678' 'strict-dynamic' https: 'unsafe-inline'; "
        "object-src 'none'; base-uri 'none'"
    )
    assert severities(policy) == [("info", "report-to"), ("info", "require-trusted-types-for")]
    opted_in = content_security_policy(
        "abcdefgh12345678",
        {"report-uri": "/csp-reports", "require-trusted-types-for": "'script'"},
        [HASH],
    )
    assert evaluate(opted_in) == []


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("script-src 'self' 'unsafe-inline'", ("high", "script-src")),
        (
            "script-src 'nonce-abcdefghij' 'unsafe-eval'; object-src 'none'",
            ("medium", "script-src"),
        ),
        (
            "script-src https: 'nonce-abcdefghij'; object-src 'none'; base-uri 'none'",
            ("high", "script-src"),
        ),
        ("script-src *; object-src 'none'", ("high", "script-src")),
        ("default-src 'self'; object-src data:", ("high", "object-src")),
        ("script-src 'nonce-abcdefghij' 'strict-dynamic'", ("high", "object-src")),
        ("script-src 'nonce-abcdefghij' 'strict-dynamic'; object-src 'none'", ("high", "base-uri")),
        (
            "script-src 'nonce-abc' 'strict-dynamic'; object-src 'none'; base-uri 'none'",
            ("medium", "script-src"),
        ),
        ("object-src 'none'", ("high", "script-src")),
        ("script-src 'self'; object-src 'none'", ("info", "script-src")),  # no 'strict-dynamic'
    ],
)
def test_the_evaluator_rules_find_what_they_should(policy: str, expected: tuple[str, str]) -> None:
    assert expected in severities(policy)


def test_strict_dynamic_and_a_nonce_disable_the_fallbacks() -> None:
    # https: and 'unsafe-inline' are ignored by CSP 3 browsers next to them: no finding
    policy = (
        "script-src 'nonce-abcdefghij' 'strict-dynamic' https: 'unsafe-inline'; "
        "object-src 'none'; base-uri 'none'"
    )
    assert [s for s, _ in severities(policy) if s != "info"] == []


# -- the header's parts ---------------------------------------------------------------------


def test_hashes_and_the_nonce_word_in_directives() -> None:
    policy = content_security_policy("n0nce123", {"style-src": [NONCE, "'self'"]}, [HASH])
    assert policy.startswith(f"script-src 'nonce-n0nce123' {HASH} 'strict-dynamic'")
    assert "style-src 'nonce-n0nce123' 'self'" in policy
    digest = base64.b64encode(hashlib.sha256(b"document.title = 'x';").digest()).decode()
    assert HASH == f"'sha256-{digest}'"


@pytest.mark.parametrize(
    "bad", ["sha256-abc", "'sha1-abc='", "'sha256-a b'", "'sha256-x'; img-src *"]
)
def test_a_hash_that_is_not_one_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid CSP hash"):
        content_security_policy("n0nce123", None, [bad])
    with pytest.raises(ValueError, match="invalid CSP hash"):
        CSP(lambda e, s: [], hashes=[bad])
    with override_settings(PTL_CSP_HASHES=[bad]), pytest.raises(ImproperlyConfigured):
        CSPMiddleware(lambda request: HttpResponse(""))


def _policy_of(headers: Any) -> str:
    return str(headers["Content-Security-Policy"])


def test_every_integration_adds_the_hashes_on_request() -> None:
    def app(environ: Any, start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b""]

    assert HASH in _policy_of(Client(CSP(app, hashes=[HASH])).get("/").headers)
    assert HASH not in _policy_of(Client(CSP(app)).get("/").headers)

    flask_app = Flask(__name__)
    flask_app.config.update(PTL_CSP=True, PTL_CSP_HASHES=[HASH])
    PTL(flask_app)
    flask_app.add_url_rule("/", "index", lambda: "x")
    assert HASH in _policy_of(flask_app.test_client().get("/").headers)

    from django.test import RequestFactory

    with override_settings(PTL_CSP_HASHES=[HASH]):
        response = CSPMiddleware(lambda request: HttpResponse("x"))(RequestFactory().get("/"))
    assert HASH in response["Content-Security-Policy"]

    from starlette.responses import HTMLResponse
    from starlette.testclient import TestClient

    from ptl_wsgi.asgi import CSP as ASGICSP

    async def asgi_app(scope: Any, receive: Any, send: Any) -> None:
        await HTMLResponse("x")(scope, receive, send)

    client = TestClient(ASGICSP(asgi_app, hashes=[HASH]))  # (no lifespan: a bare app)
    assert HASH in client.get("/").headers["Content-Security-Policy"]
    with pytest.raises(ValueError, match="invalid CSP hash"):
        ASGICSP(asgi_app, hashes=["sha256-x"])


# -- check --csp and csp-hashes ----------------------------------------------------------

FINDINGS = """\
from ptl_wsgi.beyond_escaping import attrs

def page [html] (url, kind):
    '<button onclick="go()">Go</button>'
    '<a href="javascript:void(0)">x</a>'
    '<div hx-on:click="x()" x-data="{}">'
    "</div>"
    '<script src="%s"></script>' % url
    "<p%s>x</p>" % attrs({"onmouseover": "x()"})
    '<link rel="%s" href="/a.css">' % kind
    "<script>document.title = 'x';</script>"
    '<form action="/" onsubmit="return false"></form>'
"""


def test_csp_report_lists_each_finding_with_its_place() -> None:
    found = [(line, col, kind) for line, col, kind, _ in csp_report(FINDINGS, "page.ptl")]
    assert found == [
        (4, 14, "handler"),
        (5, 15, "script-url"),
        (6, 11, "framework"),
        (6, 29, "framework"),
        (8, 36, "script-src-value"),
        (9, 27, "attrs-event"),
        (10, 39, "link-value"),
        (12, 23, "handler"),
    ]


def test_static_inline_scripts_are_found_and_others_are_not() -> None:
    source = """\
def page [html] (n, flag):
    "<script>document.title = 'x';</script>"
    '<script src="/a.js"></script>'
    "<script>var n = %s;</script>" % n
    '<script type="application/json">{}</script>'
    "<script type=module>"
    "import '/m.js';"
    "</script>"
    "<script>"
    if flag:
        "a();"
    "</script>"
"""
    assert inline_scripts(source, "p.ptl") == [
        (2, 5, "document.title = 'x';"),
        (6, 5, "import '/m.js';"),
    ]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", *args],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_commands_as_users_run_them(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "page.ptl").write_text(FINDINGS, encoding="utf-8")
    (tmp_path / "templates" / "clean.ptl").write_text(
        "def f [html] ():\n    '<script>go();</script>'\n", encoding="utf-8"
    )
    result = run_cli("check", "--csp", "templates", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 8
    assert lines[0].startswith("templates/page.ptl:4:14: csp: inline event handler onclick=:")
    assert "addEventListener" in lines[0]
    assert lines[4].startswith("templates/page.ptl:8:36: csp warning: <script src> from a value")
    clean = run_cli("check", "--csp", "templates/clean.ptl", cwd=tmp_path)
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")

    hashes = run_cli("csp-hashes", "templates", cwd=tmp_path)
    assert hashes.returncode == 0, hashes.stderr
    assert hashes.stdout.splitlines() == [
        f"{script_hash('go();')}  templates/clean.ptl:2:5",
        f"{HASH}  templates/page.ptl:11:5",
    ]
    broken = tmp_path / "broken.ptl"
    broken.write_text("def f [html] (:\n", encoding="utf-8")
    failed = run_cli("csp-hashes", "broken.ptl", cwd=tmp_path)
    assert failed.returncode == 1 and failed.stderr.startswith("broken.ptl:1:")


def test_the_cgi_gateway_passes_the_requests_nonce_and_no_client_can() -> None:
    from ptl_wsgi.cgiapp import NONCE_VARIABLE, CGIGateway
    from ptl_wsgi.csp import CSP_NONCE_KEY

    gateway = CGIGateway("/nonexistent.cgi")
    environ = {"REQUEST_METHOD": "GET", CSP_NONCE_KEY: "n0nce123"}
    assert gateway.cgi_environ(environ)[NONCE_VARIABLE] == "n0nce123"
    forged = gateway.cgi_environ({"REQUEST_METHOD": "GET", "HTTP_PTL_WSGI_CSP_NONCE": "x"})
    assert NONCE_VARIABLE not in forged


# -- literals that get no nonce (review M4, issue #31) ----------------------------------------

# Each of these takes the nonce where it is evaluated: nothing to report but the warning.
NONCED_INDIRECTLY = """\
def page [html] (flag, v):
    x = "<script>window.y=1;</script>"
    x
    "<script>" + "window.z=1;</script>"
    ("<style>a{}</style>" if flag else "")
    "".join(['<link rel="stylesheet" href="/a.css">'])
    "<p>" + v + "</p><script>window.r=1;</script>"
    y = f"<script>window.q={1};</script>"
    z = "<script src='/%s.js'></script>" % "a"
    "<script>window.ok=1;</script>"
    "<script>var n = %d;</script>" % 3
    f"<style>p{{}}</style>"
    w = "<script src=/a.js" + "></script>"
    if v == "<style>":  # (compared with, not written)
        "y"
"""

# What still gets none: a tag left open, a msgid, a .format() kept whole.
UNNONCED = """\
def page [html] (v, u):
    x = "<style>{}</style>".format(v)
    _("<style>p{}</style>")
    y = "<script src=" + u
    z = f'<script src="{u}"'
    ngettext("<style>a{}</style>", "<style>b{}</style>", 2)
    w = '<link rel=stylesheet href="/a.css"'
    w + ">"
    "<script>" + v + "</script>"
    s = "<script>var a = 1;"
    s + "</script>"
    f"<style>p {{ order: {v} }}" + "</style>"
"""


def test_literals_that_take_the_nonce_where_they_are_evaluated_are_not_reported() -> None:
    found = [(line, col, kind) for line, col, kind, _ in csp_report(NONCED_INDIRECTLY)]
    assert found == [(9, 9, "script-src-value")]


# An f-string's field has its own position from Python 3.12 (PEP 701), the f-string's before.
_FIELD_COL = 24 if sys.version_info >= (3, 12) else 9


def test_every_literal_tag_that_gets_no_nonce_is_reported() -> None:
    found = [(line, col, kind) for line, col, kind, _ in csp_report(UNNONCED, "page.ptl")]
    assert found == [
        (2, 9, "no-nonce"),
        (3, 7, "msgid-no-nonce"),
        (4, 9, "added-no-nonce"),
        (4, 9, "open-no-nonce"),
        (5, 9, "literal-no-nonce"),
        (5, 9, "open-no-nonce"),
        (5, _FIELD_COL, "script-src-value"),
        (6, 14, "msgid-no-nonce"),
        (6, 36, "msgid-no-nonce"),
        (7, 9, "literal-no-nonce"),
        (7, 9, "open-no-nonce"),
        (9, 5, "added-no-nonce"),
        (10, 9, "literal-no-nonce"),
        (10, 9, "open-no-nonce"),
    ]  # (open-no-nonce: those left open switch off the style of line 12's nonce)
    message = dict(((line, kind), text) for line, _, kind, text in csp_report(UNNONCED))
    assert "leaves a <script> open" in message[(10, "literal-no-nonce")]
    assert "only HTML-escaped" in message[(9, "added-no-nonce")]
    assert "<style>" in message[(3, "msgid-no-nonce")]


def test_strict_mode_refuses_a_literal_tag_that_gets_no_nonce() -> None:
    source = (
        "__ptl_csp_strict__ = True\n"
        "def page [html] ():\n"
        "    x = '<script src=\"/a.js\"'\n"
        "    x + '></script>'\n"
    )
    with pytest.raises(SyntaxError) as info:
        compile_ptl(source, "strict.ptl")
    assert info.value.lineno == 3 and "gets no automatic nonce" in str(info.value)
    # a literal assigned whole takes the nonce: no error
    compile_ptl(
        "__ptl_csp_strict__ = True\ndef page [html] ():\n    x = '<script></script>'\n    x\n",
        "strict_ok.ptl",
    )


# -- values in nonced links (review L3) ----------------------------------------------------

LINKS = """\
def page [html] (u, a, r):
    '<link rel="stylesheet" href="%s">' % u
    f'<link rel="preload" as="script" href={u}>'
    '<link href="%s" rel="stylesheet">' % u
    '<link rel="canonical" href="%s">' % u
    f'<link rel="stylesheet" {a}>'
    f'<link rel="{r}" href="/a.css">'
    f"<script src={u}></script>"
"""


def test_values_in_a_nonced_link_are_reported_as_they_are() -> None:
    found = [(line, kind) for line, _, kind, _ in csp_report(LINKS, "links.ptl")]
    assert found == [
        (2, "url-value"),
        (3, "url-value"),
        (4, "url-value"),
        (6, "tag-value"),
        (7, "link-value"),
        (8, "script-src-value"),
    ]
    messages = {line: text for line, _, _, text in csp_report(LINKS, "links.ptl")}
    assert "gets the nonce whatever they say" in messages[6]
    assert "(its rel is not known)" not in messages[6]
    assert "stylesheet" in messages[2]
