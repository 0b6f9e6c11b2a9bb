"""ptl_wsgi.cgiapp: the one-file CGI example as a CGI child process, and behind lighttpd."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlencode

import pytest
from servers import fetch, free_port, run_process_server, serve_in_thread

from ptl_wsgi.cgiapp import CGIGateway

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "example_sites" / "cgi" / "hello.cgi"
VENV_BIN = str(Path(sys.executable).parent)
# The script's "#!/usr/bin/env -S python3 ..." line must find this interpreter.
CGI_PATH = f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"


def cgi_environ(method="GET", query="", body=b"", **extra):
    """A CGI/1.1 environment as a web server would build it (RFC 3875)."""
    environ = {
        "PATH": CGI_PATH,
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_SOFTWARE": "test",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8080",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "/cgi-bin/hello.cgi",
        "PATH_INFO": "",
        "QUERY_STRING": query,
    }
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
        environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
    environ.update(extra)
    return environ


def run_cgi_child(command, environ, body=b""):
    """Run a CGI program; return (status, headers, body) parsed from its output."""
    result = subprocess.run(command, env=environ, input=body, capture_output=True, timeout=60)
    head, _, content = result.stdout.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n") if line)
    assert "Status" in headers, (result.stdout, result.stderr)
    return int(headers["Status"].split()[0]), headers, content, result.stderr.decode()


@pytest.fixture
def script(tmp_path):
    """The example script, executable, in a cgi-bin folder of its own."""
    cgi_bin = tmp_path / "htdocs" / "cgi-bin"
    cgi_bin.mkdir(parents=True)
    target = cgi_bin / "hello.cgi"
    shutil.copy(SCRIPT, target)
    target.chmod(0o755)
    return target


def test_the_example_is_a_one_file_script_with_a_shebang():
    first_line = SCRIPT.read_text().splitlines()[0]
    assert first_line.startswith("#!") and "ptl_wsgi.cgiapp" in first_line
    assert "def page" in SCRIPT.read_text() and "[html]" in SCRIPT.read_text()


def test_get_with_a_query(script):
    status, headers, body, _ = run_cgi_child(
        [str(script)], cgi_environ(query=urlencode({"name": "<Bob & Al>"}))
    )
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"<p class='greeting'>Hello, &lt;Bob &amp; Al&gt;!</p>" in body
    assert b"/cgi-bin/hello.cgi" in body
    assert int(headers["Content-Length"]) == len(body)


def test_post_with_a_body(script):
    form = urlencode({"message": "<script>x</script>"}).encode()
    status, _headers, body, _ = run_cgi_child(
        [str(script)], cgi_environ("POST", query="name=Al", body=form), body=form
    )
    assert status == 200
    assert b"Hello, Al!" in body
    assert b"You wrote: <q>&lt;script&gt;x&lt;/script&gt;</q>" in body


def test_errors_are_500s_without_internals(tmp_path):
    broken = tmp_path / "broken.cgi"
    broken.write_text(
        textwrap.dedent(
            """\
            from ptl_wsgi.cgiapp import run_cgi

            def page [html] (request):
                raise ValueError("secret-token")

            run_cgi(page, debug=False)
            """
        )
    )
    command = [sys.executable, "-m", "ptl_wsgi.cgiapp", str(broken)]
    status, _headers, body, stderr = run_cgi_child(command, cgi_environ())
    assert status == 500
    assert b"secret-token" not in body
    assert "secret-token" in stderr  # the server's error log gets the details

    broken.write_text("def page [html] (:\n")
    status, _headers, body, stderr = run_cgi_child(command, cgi_environ())
    assert status == 500
    assert b"SyntaxError" not in body
    assert "SyntaxError" in stderr


@pytest.mark.parametrize(
    "setup",
    [
        # a plain WSGI application
        "def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [environ['QUERY_STRING'].encode()]\n",
        # a view
        "def app(request):\n    return request.args['q']\n",
        # a Directory tree
        "from ptl_wsgi.publish import Directory\n"
        "class Root(Directory):\n"
        "    def _q_index(self):\n"
        "        from ptl_wsgi.publish import get_request\n"
        "        return get_request().args['q']\n"
        "app = Root()\n",
    ],
    ids=["wsgi-app", "view", "directory"],
)
def test_run_cgi_serves_apps_views_and_directories(setup):
    code = setup + "from ptl_wsgi.cgiapp import run_cgi\nrun_cgi(app)\n"
    status, _headers, body, _ = run_cgi_child(
        [sys.executable, "-c", code], cgi_environ(query="q=x", PATH_INFO="/")
    )
    assert (status, body.strip()) == (200, b"q=x" if "environ" in setup else b"x")


def test_cgi_gateway_serves_the_script_from_wsgi(script, tmp_path):
    """CGIGateway: the web server's half of CGI, for demos without a web server."""
    from wsgiref.validate import validator

    gateway = CGIGateway(script, env={"PATH": CGI_PATH})
    with serve_in_thread(validator(gateway)) as base:
        status, headers, body = fetch(base + "/?" + urlencode({"name": "<G>"}))
        assert status == 200
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert b"Hello, &lt;G&gt;!" in body
        form = urlencode({"message": "a&b"}).encode()
        status, _headers, body = fetch(base + "/?name=x", data=form)
        assert b"You wrote: <q>a&amp;b</q>" in body

    bad = tmp_path / "bad.cgi"
    bad.write_text("#!/bin/sh\necho 'not a CGI response'\n")
    bad.chmod(0o755)
    redirecting = tmp_path / "redirect.cgi"
    redirecting.write_text("#!/bin/sh\nprintf 'Location: /elsewhere\\r\\n\\r\\n'\n")
    redirecting.chmod(0o755)
    with serve_in_thread(validator(CGIGateway(bad))) as base:
        assert fetch(base + "/")[0] == 502
    with serve_in_thread(validator(CGIGateway(redirecting))) as base:
        status, headers, _ = fetch(base + "/")
        assert (status, headers["Location"]) == (302, "/elsewhere")


# -- behind a real web server ----------------------------------------------------------------


def find_lighttpd():
    return shutil.which("lighttpd") or next(
        (p for p in ("/usr/sbin/lighttpd", "/usr/local/sbin/lighttpd") if os.path.exists(p)),
        None,
    )


def install_lighttpd():
    """Install Debian's lighttpd if it is missing; return its path or a reason to skip."""
    found = find_lighttpd()
    if found:
        return found, None
    if not shutil.which("apt-get"):
        return None, "lighttpd is not installed and there is no apt-get to install it"
    if os.geteuid() != 0:
        return None, "lighttpd is not installed and installing it needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "install", "-y", "-q", "lighttpd"],
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "lighttpd"],
    ):
        try:
            result = subprocess.run(command, env=env, capture_output=True, timeout=300)
        except subprocess.TimeoutExpired:
            return None, f"`{' '.join(command)}` timed out"
        if command[1] == "install" and result.returncode == 0:
            break
    found = find_lighttpd()
    if found:
        return found, None
    return None, "apt-get could not install lighttpd: " + result.stderr.decode()[-300:]


@pytest.fixture(scope="module")
def lighttpd():
    path, reason = install_lighttpd()
    if path is None:
        pytest.skip(reason)
    return path


@pytest.mark.slow
def test_behind_lighttpd(lighttpd, script):
    htdocs = script.parent.parent
    config = htdocs.parent / "lighttpd.conf"
    port = free_port()  # lighttpd takes its port from the config file
    config.write_text(
        textwrap.dedent(
            f"""\
            server.modules = ("mod_cgi", "mod_setenv")
            server.document-root = "{htdocs}"
            server.bind = "127.0.0.1"
            server.port = {port}
            server.errorlog = "{htdocs.parent}/error.log"
            cgi.assign = (".cgi" => "")
            setenv.add-environment = ("PATH" => "{CGI_PATH}")
            """
        )
    )
    with run_process_server([lighttpd, "-D", "-f", str(config)], port=port) as base:
        url = base + "/cgi-bin/hello.cgi"
        status, headers, body = fetch(url + "?" + urlencode({"name": "<Bob>"}))
        assert status == 200, body
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert b"Hello, &lt;Bob&gt;!" in body
        assert b"Served by /cgi-bin/hello.cgi via CGI CGI/1.1" in body

        form = urlencode({"message": "R&D <b>"}).encode()
        status, _headers, body = fetch(url + "?name=Al", data=form)
        assert status == 200, body
        assert b"You wrote: <q>R&amp;D &lt;b&gt;</q>" in body


# -- the script is loaded by the importer, like every .ptl module ---------------------------


def _run_script(script: Path, prologue: str = "") -> tuple[int, bytes, str]:
    """Run *script* as ``python -m ptl_wsgi.cgiapp`` would, after *prologue*."""
    code = f"{prologue}\nimport sys\nfrom ptl_wsgi.cgiapp import main\nsys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, str(script)]
    status, _headers, body, stderr = run_cgi_child(command, cgi_environ())
    return status, body, stderr


HELLO = "from ptl_wsgi.cgiapp import run_cgi\n\ndef page [html] (request):\n    '<p>%s</p>'\n"


def test_a_script_with_a_coding_cookie_is_decoded_by_it(tmp_path):
    script = tmp_path / "latin.cgi"
    source = "# -*- coding: latin-1 -*-\n" + HELLO % "caf\xe9" + "run_cgi(page)\n"
    script.write_bytes(source.encode("latin-1"))
    status, body, stderr = _run_script(script)
    assert (status, body) == (200, "<p>café</p>".encode()), stderr


def test_a_precompiled_script_runs_from_its_cache_and_none_is_written(tmp_path):
    from ptl_wsgi.importer import cache_path, precompile

    cached, uncached = tmp_path / "cached.cgi", tmp_path / "uncached.cgi"
    for script in (cached, uncached):
        script.write_text(HELLO % script.stem + "run_cgi(page)\n")
    precompile(cached)
    # With the compiler made unimportable, only the cache can give the code.
    no_compiler = "import sys; sys.modules['ptl_wsgi.compiler'] = None"
    status, body, stderr = _run_script(cached, no_compiler)
    assert (status, body) == (200, b"<p>cached</p>"), stderr
    status, body, stderr = _run_script(uncached)
    assert (status, body) == (200, b"<p>uncached</p>"), stderr
    assert not Path(cache_path(str(uncached))).exists()  # a run never writes a cache


def test_the_script_is_the_main_module(tmp_path):
    # As under `python script.py`: pickle finds the script's classes in sys.modules["__main__"].
    script = tmp_path / "main.cgi"
    script.write_text(
        "import pickle, sys\n"
        "from ptl_wsgi.cgiapp import run_cgi\n\n"
        "class Point:\n    x = 1\n\n"
        "def page [html] (request):\n"
        "    '<p>%s %s</p>' % (pickle.loads(pickle.dumps(Point())).x,\n"
        "                      sys.modules['__main__'].__file__ == __file__)\n\n"
        "if __name__ == '__main__':\n    run_cgi(page)\n"
    )
    status, body, stderr = _run_script(script)
    assert (status, body) == (200, b"<p>1 True</p>"), stderr


def test_the_old_module_name_still_runs_a_script_and_warns(tmp_path):
    script = tmp_path / "old.cgi"
    script.write_text("from ptl_wsgi.cgi import run_cgi\n" + HELLO % "old" + "run_cgi(page)\n")
    command = [sys.executable, "-m", "ptl_wsgi.cgi", str(script)]
    status, _headers, body, stderr = run_cgi_child(command, cgi_environ())
    assert (status, body) == (200, b"<p>old</p>"), stderr
    assert "DeprecationWarning" in stderr and "ptl_wsgi.cgiapp" in stderr
