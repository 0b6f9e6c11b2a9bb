"""One-file CGI applications.

:func:`run_cgi` serves a view, a WSGI application or a :class:`Directory`
once, in the CGI environment the web server set up (through the standard
library's :class:`wsgiref.handlers.CGIHandler`).

``python -m ptl_wsgi.cgiapp SCRIPT`` runs SCRIPT as a PTL module named
``__main__``, so a single executable file can hold templates and all::

    #!/usr/bin/env -S python3 -m ptl_wsgi.cgiapp
    from ptl_wsgi.cgiapp import run_cgi

    def page [html] (request):
        "<p>Hello, %s</p>" % request.args.get("name", "world")

    if __name__ == "__main__":
        run_cgi(page)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ptl_wsgi.csp import CSP_NONCE_KEY
from ptl_wsgi.headers import HeaderError, check_header, check_status, split_lines

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = ["CGIGateway", "as_wsgi_app", "main", "run_cgi", "run_script"]


def as_wsgi_app(app_or_view: Any, *, debug: bool | None = None) -> WSGIApplication:
    """A WSGI application for a view ``f(request)``, a Directory, or a WSGI app."""
    from ptl_wsgi.publish import Directory, Publisher
    from ptl_wsgi.wsgi import View

    if isinstance(app_or_view, View):
        return app_or_view
    if isinstance(app_or_view, Directory):
        return Publisher(app_or_view, debug=debug)
    if not callable(app_or_view):
        raise TypeError(f"cannot serve {app_or_view!r}: not a view, Directory or WSGI app")
    if _required_positional(app_or_view) == 1:
        return View(app_or_view, debug=debug)
    # Any other callable is taken to be a WSGI app: it takes (environ, start_response).
    return cast("WSGIApplication", app_or_view)


def _required_positional(func: Callable[..., Any]) -> int | None:
    # Imported where used, like subprocess and traceback below: a CGI process
    # starts for every request, and only what serving it needs should load.
    import inspect

    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(
        1
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    )


#: The variable through which :class:`CGIGateway` under :class:`ptl_wsgi.wsgi.CSP` gives a
#: CGI program the request's CSP nonce (not ``HTTP_``: no client can set it).
NONCE_VARIABLE = "PTL_WSGI_CSP_NONCE"


def run_cgi(app_or_view: Any, *, debug: bool | None = None) -> None:
    """Serve one CGI request with *app_or_view* (see :func:`as_wsgi_app`); in the
    request's nonce scope when the gateway gave one (:data:`NONCE_VARIABLE`)."""
    from wsgiref.handlers import CGIHandler

    app = as_wsgi_app(app_or_view, debug=debug)
    nonce = os.environ.get(NONCE_VARIABLE)
    if not nonce:
        CGIHandler().run(app)
        return
    from ptl_wsgi.csp import nonce_scope

    with nonce_scope(nonce):
        CGIHandler().run(app)


def run_script(path: str) -> dict[str, Any]:
    """Run the PTL file *path* as the module ``__main__``, as ``python -m ptl_wsgi.cgiapp``
    does, and return its namespace.

    The importer loads it, as it loads every ``.ptl`` module: the source is
    read as bytes, so a coding cookie counts; the code comes from the
    script's bytecode cache when ``ptl-wsgi compile`` wrote one that matches
    the source (no compiling per request), else it is compiled in memory; and
    the module is ``sys.modules["__main__"]`` while it runs, as a script run
    by ``python`` is (pickle and dataclasses look classes up there).
    """
    from ptl_wsgi.importer import load_module_from_path

    path = os.path.abspath(path)
    # Like `python script.py`: the script's folder comes first on the import path.
    sys.path.insert(0, os.path.dirname(path))
    # The cache is read, never written here: like Python, which caches no script it
    # runs, since a __pycache__ beside a CGI script may be served as static files and
    # give the script's code away.  Writing one is the deployer's choice.
    return vars(load_module_from_path(path, "__main__", write_cache=False))


class CGIGateway:
    """A WSGI application that runs a CGI program per request: the web server's side of CGI.

    For development and demos (``Middleware(app, views=...)`` or any WSGI
    dispatcher can mount it), so a one-file CGI script can be tried without
    installing a web server. *command* runs the program (default: the script
    itself, through its ``#!`` line); *env* adds variables such as ``PATH``.
    """

    def __init__(
        self,
        script: str | os.PathLike[str],
        *,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.script = os.path.abspath(script)
        self.command = list(command) if command is not None else [self.script]
        self.env = dict(env or {})
        self.timeout = timeout

    def cgi_environ(self, environ: WSGIEnvironment) -> dict[str, str]:
        """The RFC 3875 meta-variables for this request."""
        cgi = {
            "GATEWAY_INTERFACE": "CGI/1.1",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "SERVER_SOFTWARE": "ptl_wsgi.cgiapp.CGIGateway",
            "SCRIPT_FILENAME": self.script,
        }
        for key in (
            "REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE",
            "CONTENT_LENGTH", "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "REMOTE_ADDR",
        ):  # fmt: skip
            value = environ.get(key)
            if value:
                cgi[key] = str(value)
        for key, value in environ.items():
            if key.startswith("HTTP_") and key != "HTTP_PROXY":  # "httpoxy"
                cgi[key] = str(value)
        nonce = environ.get(CSP_NONCE_KEY)
        if nonce:  # (under ptl_wsgi.wsgi.CSP: the program's pages take the request's nonce)
            cgi[NONCE_VARIABLE] = str(nonce)
        cgi.update(self.env)
        # A NUL cannot stand in an environment variable: subprocess would refuse the request.
        return {key: value for key, value in cgi.items() if "\x00" not in value}

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        import subprocess

        try:
            result = subprocess.run(
                self.command,
                input=body,
                env=self.cgi_environ(environ),
                cwd=os.path.dirname(self.script),
                capture_output=True,
                timeout=self.timeout,
            )
            output = result.stdout
        except (OSError, subprocess.TimeoutExpired) as error:
            print(f"CGIGateway: {self.script}: {error}", file=environ["wsgi.errors"])
            output = b""
        else:
            if result.stderr:
                environ["wsgi.errors"].write(result.stderr.decode("utf-8", "replace"))
        try:
            status, headers, content = _parse_cgi_output(output)
        except HeaderError as error:
            log = environ["wsgi.errors"]
            print(f"CGIGateway: {self.script}: invalid response: {error}", file=log)
            start_response("502 Bad Gateway", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"The CGI program did not send a valid response.\n"]
        start_response(status, headers)
        return [content]


def _parse_cgi_output(output: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    """Split a CGI program's output into status, headers and body (RFC 3875 section 6).

    :class:`~ptl_wsgi.headers.HeaderError` for anything but a clean header
    block: lines end in CRLF or LF only, and a name or value with a control
    character is refused, so no value can smuggle in a header of its own.
    """
    ends = [(output.find(sep), sep) for sep in (b"\r\n\r\n", b"\n\n") if sep in output]
    if not ends:
        raise HeaderError("no blank line ends the headers")
    index, separator = min(ends)
    head, content = output[:index], output[index + len(separator) :]
    status, headers = None, []
    for line in split_lines(head.decode("latin-1")):
        name, colon, value = line.partition(":")
        if not colon:
            raise HeaderError(f"the header line {line!r} has no colon")
        name, value = name.strip(" \t"), value.strip(" \t")
        check_header(name, value)
        if name.lower() == "status":
            check_status(value)
            status = value
        else:
            headers.append((name, value))
    names = {name.lower() for name, _ in headers}
    if status is None:
        status = "302 Found" if "location" in names else "200 OK"
    if "content-type" not in names:
        # Redirects may omit it (RFC 3875 6.2.3); WSGI wants one on every response.
        headers.append(("Content-Type", "text/plain; charset=utf-8"))
    return status, headers, content


def _fail(message: str) -> int:
    import traceback

    # Still a valid CGI response, so the server shows a 500 rather than a gateway error.
    traceback.print_exc(file=sys.stderr)
    out = sys.stdout.buffer
    out.write(b"Status: 500 Internal Server Error\r\n")
    out.write(b"Content-Type: text/plain; charset=utf-8\r\n\r\n")
    out.write(message.encode("utf-8") + b"\n")
    out.flush()
    return 1


def main(argv: list[str] | None = None) -> int:
    """``python -m ptl_wsgi.cgiapp SCRIPT``: run a one-file PTL CGI application."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m ptl_wsgi.cgiapp SCRIPT  (usually from a #! line)", file=sys.stderr)
        return 2
    try:
        run_script(args[0])
    except SystemExit:
        raise
    except BaseException:
        return _fail("The CGI script failed to start; the details are in the server's error log.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
