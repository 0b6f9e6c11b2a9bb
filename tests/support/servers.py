"""Real servers on 127.0.0.1 for tests: in a thread, or as a child process.

::

    with serve_in_thread(app) as base:
        status, headers, body = fetch(base + "/hello")

    with run_process_server([sys.executable, "app.py", "--port", "{port}"]) as base:
        ...

Every wait is bounded; servers are always stopped, and a child's output is
printed (so pytest shows it) and attached to the error when something fails.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "ServerError",
    "fetch",
    "free_port",
    "run_process_server",
    "serve_in_thread",
    "wait_for_port",
]

HOST = "127.0.0.1"


class ServerError(RuntimeError):
    """A server did not start, or died; the message carries its output."""


def free_port(host: str = HOST) -> int:
    """A TCP port that was free a moment ago (a child process will bind it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, host: str = HOST, timeout: float = 30.0, alive: Any = None) -> None:
    """Wait until *port* accepts connections; *alive()* returning False aborts the wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise ServerError(f"the server exited before listening on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.05)
    raise ServerError(f"nothing listened on {host}:{port} within {timeout:.0f}s")


def fetch(
    url: str,
    data: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    method: str | None = None,
    timeout: float = 15.0,
) -> tuple[int, Any, bytes]:
    """``(status, headers, body)`` for *url*; HTTP errors are returned, not raised.

    Redirects are not followed, so tests see them.
    """
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}), method=method)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@contextlib.contextmanager
def serve_in_thread(app: Any, threaded: bool = True) -> Iterator[str]:
    """Serve WSGI *app* from a thread with wsgiref's server; yield its base URL.

    wsgiref's server is the strict one (werkzeug's puts an int in the environ,
    which ``wsgiref.validate`` rejects); *threaded* gives a thread per request.
    """
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    class ThreadingServer(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        request_queue_size = 128  # many clients connect at once in the concurrency tests

    class Server(WSGIServer):
        request_queue_size = 128

    server_class = ThreadingServer if threaded else Server
    server = make_server(HOST, 0, app, server_class=server_class, handler_class=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextlib.contextmanager
def run_process_server(
    command: Sequence[str],
    *,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 30.0,
    ready_path: str | None = None,
) -> Iterator[str]:
    """Run *command* as a server on 127.0.0.1 and yield ``http://127.0.0.1:PORT``.

    ``{port}`` in the command's arguments becomes a free port (or *port*).
    *env* is added to this process's environment. With *ready_path* the
    server is ready once that path answers with any HTTP status, else once
    the port accepts connections. The process (and its children) is
    terminated on exit, and killed if it does not stop within 10s.
    """
    port = port or free_port()
    args = [str(part).replace("{port}", str(port)) for part in command]
    full_env = {**os.environ, **(env or {})}
    base = f"http://{HOST}:{port}"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            args,
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so the whole worker group can be stopped
        )

        def output() -> str:
            log.flush()
            log.seek(0)
            return log.read().decode("utf-8", "replace")

        try:
            try:
                wait_for_port(port, timeout=timeout, alive=lambda: process.poll() is None)
                if ready_path is not None:
                    _wait_for_http(base + ready_path, timeout, process)
            except ServerError as error:
                raise ServerError(f"{error}\n$ {' '.join(args)}\n{output()}") from None
            try:
                yield base
            except BaseException as error:
                text = f"--- output of {' '.join(args)} ---\n{output()}"
                print(text, file=sys.stderr)
                if hasattr(error, "add_note"):
                    error.add_note(text)
                raise
        finally:
            _stop(process)


def _wait_for_http(url: str, timeout: float, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"the server exited with status {process.returncode}")
        try:
            fetch(url, timeout=2)
            return
        except OSError:
            time.sleep(0.1)
    raise ServerError(f"{url} did not answer within {timeout:.0f}s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, 15)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait(timeout=10)
