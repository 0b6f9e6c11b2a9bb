"""The one header policy, and every place that parses or emits headers follows it."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import quote
from wsgiref.validate import validator

import pytest
from servers import fetch, serve_in_thread

from ptl_wsgi.cgiapp import CGIGateway
from ptl_wsgi.headers import HeaderError, check_header, check_status, split_lines
from ptl_wsgi.wsgi import Response, view

# Every character str.splitlines() breaks at, except the two HTTP allows.
BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"]
# The gateway's child must find this interpreter's packages.
CGI_PATH = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
CONTROLS = ["\x00", "\x01", "\x1f", "\x7f", "\x9f", *BREAKS]


@pytest.mark.parametrize("char", CONTROLS)
def test_values_with_control_characters_are_refused(char):
    with pytest.raises(HeaderError, match="may not stand in a header value"):
        check_header("X-Name", f"x{char}Set-Cookie: session=attacker")


@pytest.mark.parametrize("name", ["", "X Name", "X:Name", "X\x85", "Ä"])
def test_names_must_be_tokens(name):
    with pytest.raises(HeaderError, match="not an HTTP token"):
        check_header(name, "v")


def test_tabs_latin1_and_visible_characters_pass():
    check_header("X-Name", "a\tb ÿ é ~")
    check_status("404 Not Found")
    with pytest.raises(HeaderError):
        check_status("200 OK\x85Set-Cookie: a=b")


def test_split_lines_only_at_crlf_and_lf():
    head = "A: 1\r\nB: x\x85C: 2\nD: \x0b3"
    assert split_lines(head) == ["A: 1", "B: x\x85C: 2", "D: \x0b3"]


# -- emitted: a view that copies a client's value into a header gets a 400 -----------------


@pytest.mark.parametrize("char", [*CONTROLS[:-3], "\x85"])
def test_view_with_a_hostile_header_value_answers_400(char):
    app = view(lambda request: Response("ok", headers={"X-Name": request.args["name"]}))
    with serve_in_thread(validator(app)) as base:
        status, headers, body = fetch(base + "/?name=" + quote(f"x{char}Set-Cookie: s=1"))
    assert status == 400
    assert "Set-Cookie" not in headers
    assert b"invalid header" in body


# -- parsed: a CGI program's header block ---------------------------------------------------


def cgi_script(tmp_path, head: bytes):
    script = tmp_path / "out.cgi"
    script.write_bytes(b"#!/bin/sh\nprintf '" + head + b"'\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("char", [b"\\302\\205", b"\\205", b"\\013", b"\\014", b"\\034", b"\\036"])
def test_cgi_gateway_refuses_a_smuggled_header(tmp_path, char):
    head = b"Content-Type: text/html\\r\\nX-Name: x" + char + b"Set-Cookie: session=attacker"
    script = cgi_script(tmp_path, head + b"\\r\\n\\r\\nbody")
    errors = []

    class Errors:
        def write(self, text):
            errors.append(text)

        def flush(self):
            pass

    gateway = CGIGateway(script)

    def app(environ, start_response):
        environ["wsgi.errors"] = Errors()
        return gateway(environ, start_response)

    with serve_in_thread(app) as base:
        status, headers, _ = fetch(base + "/")
    assert status == 502
    assert "Set-Cookie" not in headers
    assert any("may not stand in a header value" in line for line in errors)


def test_run_cgi_refuses_a_header_taken_from_the_query(tmp_path):
    """The finding: ?name=x%C2%85Set-Cookie:... through a one-file CGI program and the gateway."""
    script = tmp_path / "page.cgi"
    script.write_text(
        f"#!{sys.executable}\n"
        "from ptl_wsgi.cgiapp import run_cgi\n"
        "from ptl_wsgi.wsgi import Response\n"
        "run_cgi(lambda request: Response('ok', headers={'X-Name': request.args['name']}))\n"
    )
    script.chmod(0o755)
    gateway = CGIGateway(script, env={"PATH": CGI_PATH})
    with serve_in_thread(validator(gateway)) as base:
        status, headers, _ = fetch(base + "/?name=x%C2%85Set-Cookie:%20session=attacker")
        assert status == 400
        assert "Set-Cookie" not in headers
        status, headers, body = fetch(base + "/?name=fine")
        assert (status, headers["X-Name"], body) == (200, "fine", b"ok")


def test_a_raised_response_with_a_hostile_header_answers_400():
    from werkzeug.exceptions import abort

    def page(request):
        abort(Response("x", headers={"X-Name": request.args["name"]}))

    with serve_in_thread(validator(view(page))) as base:
        status, headers, _ = fetch(base + "/?name=" + quote("a\x0bb\x85c"))
    assert status == 400
    assert "X-Name" not in headers
