"""ptl_wsgi.xmlrpc against xmlrpc.client and a real server on 127.0.0.1."""

from __future__ import annotations

import http.client
import logging
import xmlrpc.client
from urllib.parse import urlsplit
from wsgiref.validate import validator

import pytest
from servers import fetch, serve_in_thread

from ptl_wsgi.html import htmltext
from ptl_wsgi.publish import Directory, Publisher, get_request
from ptl_wsgi.wsgi import Middleware
from ptl_wsgi.xmlrpc import (
    APPLICATION_ERROR,
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
