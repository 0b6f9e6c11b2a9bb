"""ptl_wsgi.xmlrpc against xmlrpc.client and a real server on 127.0.0.1."""

from __future__ import annotations

import http.client
import io
import logging
import tracemalloc
import xmlrpc.client
from urllib.parse import urlsplit
from wsgiref.validate import validator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from servers import fetch, serve_in_thread
from werkzeug.test import Client
from werkzeug.wrappers import Request

from ptl_wsgi.html import htmltext
from ptl_wsgi.publish import Directory, Publisher, get_request
from ptl_wsgi.wsgi import Middleware
from ptl_wsgi.xmlrpc import (
    APPLICATION_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Fault,
    handle_xmlrpc,
    make_dispatcher,
    xmlrpc_app,
)


def add(a, b):
    return a + b


def echo(value):
    return value


def refuse(reason):
    raise Fault(42, f"refused: {reason}")


def crash():
    raise RuntimeError("password=hunter2 in /srv/secret/config.py")


def unmarshallable():
    return object()


DISPATCHER = make_dispatcher(add, echo, refuse, crash, unmarshallable)


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(validator(xmlrpc_app(DISPATCHER, max_body=4096))) as base:
        yield base


@pytest.fixture
def proxy(server):
    with xmlrpc.client.ServerProxy(server + "/RPC2", allow_none=True) as proxy:
        yield proxy


def test_calls(proxy):
    assert proxy.add(2, 3) == 5
    assert proxy.echo("h\u00e9llo <&>") == "h\u00e9llo <&>"
    assert proxy.echo(None) is None
    assert proxy.echo({"a": [1, 2.5, True]}) == {"a": [1, 2.5, True]}
    assert proxy.echo(b"\x00bin") == xmlrpc.client.Binary(b"\x00bin")
    assert "add" in proxy.system.listMethods()


def test_a_fault_is_sent_as_a_fault(proxy):
    with pytest.raises(xmlrpc.client.Fault) as info:
        proxy.refuse("no")
    assert (info.value.faultCode, info.value.faultString) == (42, "refused: no")


def test_other_errors_are_generic_faults_and_logged(proxy, caplog):
    with caplog.at_level(logging.ERROR, logger="ptl_wsgi.xmlrpc"):
        with pytest.raises(xmlrpc.client.Fault) as info:
            proxy.crash()
    assert info.value.faultCode == APPLICATION_ERROR
    assert "hunter2" not in info.value.faultString
    assert "RuntimeError" not in info.value.faultString
    assert "hunter2" in caplog.text
    with pytest.raises(xmlrpc.client.Fault) as info:
        proxy.unmarshallable()
    assert info.value.faultCode == APPLICATION_ERROR


def test_unknown_method(proxy):
    with pytest.raises(xmlrpc.client.Fault) as info:
        proxy.no_such_method()
    assert info.value.faultCode == METHOD_NOT_FOUND
    assert "no_such_method" in info.value.faultString


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_only_post(server, method):
    status, headers, _body = fetch(server + "/RPC2", method=method)
    assert status == 405
    assert headers["Allow"] == "POST"


def post(server, body, headers=None):
    status, _headers, data = fetch(
        server + "/RPC2", data=body, headers={"Content-Type": "text/xml", **(headers or {})}
    )
    return status, data


def test_malformed_xml_is_a_parse_error_fault(server):
    status, data = post(server, b"<methodCall><methodName>add</methodName>")
    assert status == 200
    with pytest.raises(xmlrpc.client.Fault) as info:
        xmlrpc.client.loads(data)
    assert info.value.faultCode == PARSE_ERROR
    assert "malformed" in info.value.faultString
    status, data = post(server, b"<methodCall><params/></methodCall>")
    with pytest.raises(xmlrpc.client.Fault) as info:
        xmlrpc.client.loads(data)
    assert info.value.faultCode == INVALID_REQUEST


def raw_post(server, headers, body=b""):
    """POST with exactly these headers (urllib would add a Content-Length)."""
    parts = urlsplit(server)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.putrequest("POST", "/RPC2")
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_content_length_errors(server):
    status, body = raw_post(server, {"Content-Type": "text/xml"})
    assert status == 411
    assert b"Content-Length" in body
    # wsgiref.validate itself rejects these environs, so this server runs without it.
    with serve_in_thread(xmlrpc_app(DISPATCHER)) as unvalidated:
        status, body = raw_post(unvalidated, {"Content-Length": "abc"})
        assert status == 400
        assert b"not a number" in body
        status, body = raw_post(unvalidated, {"Content-Length": "-5"})
        assert status == 400
    status, body = raw_post(server, {"Content-Length": "999999"})
    assert status == 413
    assert b"4096" in body


def test_over_large_body_from_a_client(proxy):
    with pytest.raises(xmlrpc.client.ProtocolError) as info:
        proxy.echo("x" * 10000)
    assert info.value.errcode == 413


def test_inside_a_publisher_and_alongside_other_views(caplog):
    class Root(Directory):
        _q_exports = ["", "rpc"]

        def _q_index(self):
            return htmltext("<p>home</p>")

        def rpc(self):
            return handle_xmlrpc(get_request(), make_dispatcher(add))

    def untouched(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"app"]

    calls = make_dispatcher(lambda: "via middleware", introspection=False)
    calls.funcs["hello"] = calls.funcs.pop("<lambda>")
    site = Middleware(untouched, views={"/mw-rpc": lambda r: handle_xmlrpc(r, calls)})
    with serve_in_thread(validator(Publisher(Root()))) as base:
        assert xmlrpc.client.ServerProxy(base + "/rpc").add(1, 2) == 3
        assert fetch(base + "/")[2] == b"<p>home</p>"
        assert fetch(base + "/rpc")[0] == 405
    with serve_in_thread(validator(site)) as base:
        assert xmlrpc.client.ServerProxy(base + "/mw-rpc").hello() == "via middleware"
        assert fetch(base + "/other")[2] == b"app"


def test_a_plain_function_as_dispatcher():
    def dispatch(method, params):
        return [method, *params]

    with serve_in_thread(validator(xmlrpc_app(dispatch))) as base:
        assert xmlrpc.client.ServerProxy(base).anything(1, "a") == ["anything", 1, "a"]


def test_a_body_shorter_than_its_content_length(server):
    import socket

    parts = urlsplit(server)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            b"POST /RPC2 HTTP/1.0\r\nHost: x\r\nContent-Type: text/xml\r\n"
            b"Content-Length: 100\r\n\r\n<methodCall>"
        )
        sock.shutdown(socket.SHUT_WR)  # the client gives up early
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.0 400"), reply[:200]
    assert b"shorter than its Content-Length" in reply


# -- hostile requests: a clear refusal, bounded memory, never a 500 -------------------------

CALL = (
    b"<methodCall><methodName>echo</methodName>"
    b"<params><param><value>%s</value></param></params></methodCall>"
)


def call_body(value: bytes) -> bytes:
    return CALL % value


def amplification_body(size: int = 990_000) -> bytes:
    """A DTD entity of 250 characters referenced until the body is *size* bytes."""
    head = b'<?xml version="1.0"?><!DOCTYPE methodCall [<!ENTITY e "' + b"x" * 250 + b'">]>'
    template = call_body(b"<string>%s</string>")
    count = (size - len(head) - len(template)) // 3
    return head + template.replace(b"%s", b"&e;" * count)


def fault_of(data: bytes) -> xmlrpc.client.Fault:
    with pytest.raises(xmlrpc.client.Fault) as info:
        xmlrpc.client.loads(data)
    return info.value


def test_entity_amplification_is_refused_before_expansion() -> None:
    body = amplification_body()
    assert body.count(b"&e;") > 320_000
    app = xmlrpc_app(DISPATCHER)
    environ = {
        "REQUEST_METHOD": "POST",
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "text/xml",
        "wsgi.input": io.BytesIO(body),
    }
    request = Request(environ)
    tracemalloc.start()
    try:
        response = handle_xmlrpc(request, app.dispatcher)
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Reading the body holds it twice (chunks, then joined); expansion would be 80 M characters.
    assert peak < 4 * len(body), peak
    fault = fault_of(response.get_data())
    assert fault.faultCode == INVALID_REQUEST
    assert "DTD" in fault.faultString


DTD_BODIES = [
    b'<!DOCTYPE methodCall [<!ENTITY e "x">]>' + call_body(b"<string>&e;</string>"),
    b"<!DOCTYPE methodCall>" + call_body(b"<string>x</string>"),
    b'<!DOCTYPE methodCall SYSTEM "http://127.0.0.1:1/x.dtd">' + call_body(b"<int>1</int>"),
    b'<!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + call_body(b"<string>&x;</string>"),
    b'<!DOCTYPE m [<!ENTITY % p SYSTEM "http://127.0.0.1:1/p">%p;]>' + call_body(b"<int>1</int>"),
    ("<!DOCTYPE m>" + call_body(b"<int>1</int>").decode()).encode("utf-16"),
]


@pytest.mark.parametrize("body", DTD_BODIES)
def test_requests_with_a_dtd_are_refused(body: bytes) -> None:
    response = Client(xmlrpc_app(DISPATCHER)).post("/", data=body, content_type="text/xml")
    assert response.status_code == 200
    fault = fault_of(response.get_data())
    assert fault.faultCode == INVALID_REQUEST
    assert "DTD" in fault.faultString


def nested(depth: int) -> bytes:
    return b"<array><data><value>" * depth + b"<int>1</int>" + b"</value></data></array>" * depth


HOSTILE_BODIES = {
    "empty": b"",
    "not xml": b"hello",
    "bad utf-8": call_body(b"<string>\xff\xfe</string>"),
    "utf-7": b'<?xml version="1.0" encoding="utf-7"?>' + call_body(b"<string>+ADw-</string>"),
    "unknown encoding": b'<?xml version="1.0" encoding="x-nonsense"?>' + call_body(b"<int>1</int>"),
    "huge int": call_body(b"<int>" + b"9" * 100_000 + b"</int>"),
    "huge i8": call_body(b"<i8>-" + b"9" * 5000 + b"</i8>"),
    "huge double": call_body(b"<double>" + b"9" * 5000 + b"e99999</double>"),
    "bad double": call_body(b"<double>nan-ish</double>"),
    "bad boolean": call_body(b"<boolean>2</boolean>"),
    "bad base64": call_body(b"<base64>!!!</base64>"),
    "bad date": call_body(b"<dateTime.iso8601>99999999T99:99:99</dateTime.iso8601>"),
    "struct without value": call_body(b"<struct><member><name>a</name></member></struct>"),
    "deep nesting": nested(20_000),
    "deep structs": b"<struct><member><name>a</name><value>" * 5000,
    "unclosed": b"<methodCall><methodName>echo",
    "method response": b"<methodResponse><params></params></methodResponse>",
    "no method name": b"<methodCall><params/></methodCall>",
    "unknown method": b"<methodCall><methodName>nope</methodName></methodCall>",
    "private method": b"<methodCall><methodName>_dispatch</methodName></methodCall>",
    "wrong arity": b"<methodCall><methodName>add</methodName></methodCall>",
    "nul bytes": b"\x00" * 100,
    "processing instruction": b"<?php x ?>" + call_body(b"<int>1</int>"),
    "unicode method name": b"<methodCall><methodName>\xc3\xa9</methodName></methodCall>",
}


def wsgi_post(body: bytes, content_length: str | None) -> tuple[str, bytes]:
    """POST *body* to the app with exactly this CONTENT_LENGTH (None: none at all)."""
    environ = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": "text/xml", "wsgi.input": io.BytesIO(body)}
    if content_length is not None:
        environ["CONTENT_LENGTH"] = content_length
    statuses: list[str] = []
    data = b"".join(xmlrpc_app(DISPATCHER)(environ, lambda s, h, e=None: statuses.append(s)))
    return statuses[0], data


def answer(body: bytes) -> object:
    """POST *body* with its Content-Length; the call's result, or the Fault it got."""
    status, data = wsgi_post(body, str(len(body)))
    assert status == "200 OK", data[:300]
    try:
        return xmlrpc.client.loads(data)[0]
    except xmlrpc.client.Fault as fault:
        return fault


# Valid but odd requests get an ordinary answer; all the others a client's fault code.
VALID_ODDITIES = {"huge double", "bad base64", "processing instruction"}


@pytest.mark.parametrize("name", HOSTILE_BODIES)
def test_hostile_bodies_get_a_fault_never_a_500(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        result = answer(HOSTILE_BODIES[name])
    if name in VALID_ODDITIES:
        assert not isinstance(result, xmlrpc.client.Fault), result
    else:
        assert isinstance(result, xmlrpc.client.Fault), result
        # The client's mistake gets a client's fault code, not the server's "internal error".
        codes = (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS)
        assert result.faultCode in codes, result
    assert not caplog.records, caplog.text


def test_deep_nesting_and_wrong_arguments_are_explained() -> None:
    result = answer(HOSTILE_BODIES["deep nesting"])
    assert result.faultCode == INVALID_REQUEST and "nested more than" in result.faultString
    result = answer(HOSTILE_BODIES["wrong arity"])
    assert result.faultCode == INVALID_PARAMS and "'add'" in result.faultString
    expected: object = 1
    for _ in range(30):
        expected = [expected]
    assert answer(call_body(nested(30))) == (expected,)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Length": "1_0"}, 400),
        ({"Content-Length": "+10"}, 400),
        ({"Content-Length": " 10"}, 400),
        ({"Content-Length": "\u0661\u0660"}, 400),
        ({"Content-Length": "9" * 5000}, 413),
        ({"Content-Length": "0x10"}, 400),
        ({"Content-Length": ""}, 411),
        ({"Transfer-Encoding": "chunked"}, 411),
    ],
)
def test_bad_content_lengths_are_4xx(headers: dict[str, str], status: int) -> None:
    got, data = wsgi_post(b"<x/>" * 10, headers.get("Content-Length"))
    assert got.startswith(str(status)), (got, data[:200])


@given(st.binary(max_size=300) | st.builds(call_body, st.binary(max_size=200)))
@settings(max_examples=300, deadline=None)
def test_any_body_gets_a_response_or_a_fault(body: bytes) -> None:
    result = answer(body)
    if isinstance(result, xmlrpc.client.Fault):
        assert result.faultCode != APPLICATION_ERROR, result
