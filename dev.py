#!/usr/bin/env python3
"""Set up a virtual environment and run the project's everyday tasks.

Needs only Python 3 (and a C compiler for the accelerator)::

    python3 dev.py demo        # venv + install, then serve the example sites
    python3 dev.py test        # venv + install, then the whole test suite
    python3 dev.py test-fast   # the quick profile: no slow tests, few hypothesis examples
    python3 dev.py test-all    # the fast tests on the other supported Pythons (3.14, 3.15: chroot)
    python3 dev.py bench       # the benchmarks, results as ratios
    python3 dev.py test-django42   # the Django tests against Django 4.2 LTS
    python3 dev.py test-flask30    # the Flask and Quart tests against the oldest Flask (3.0)
    python3 dev.py coverage    # the example sites' tests under coverage, .ptl templates too
    python3 dev.py fuzz-contexts   # contextual escaping fuzzed in Chromium, new seeds (10 min)

Extra arguments after ``test`` and ``test-fast`` go to pytest, after ``demo`` to the demo
server, after ``fuzz-contexts`` to tests/support/contexts_fuzz.py (``--minutes``, ``--seeds``,
``--runtime``).
The Makefile's targets call this script.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SUPPORTED = ("3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
# Versions test-all can also run in a Debian sid chroot when no local interpreter has
# them: as root, with the tool that builds it (PTL_WSGI_SID_PYTHONS names another
# copy; set it empty to never use a chroot).
SID_VERSIONS = ("3.14", "3.15")
SID_TOOL = ROOT.parent / "shared" / "tools" / "sid-pythons.sh"
# Files whose change means the venv must be reinstalled (deps or the C build).
STAMPED = ("pyproject.toml", "setup.py", "dev.py", "ptl_wsgi/_htmltext_c.c")
# Programs some end-to-end tests drive (a browser, a CGI web server); the tests
# skip with a reason where they are missing and cannot be installed.
SYSTEM_TOOLS = {"chromium": "chromium", "lighttpd": "lighttpd", "msgfmt": "gettext"}


def venv_dir(version: str | None = None) -> Path:
    return ROOT / (f".venv-{version}" if version else ".venv")


def venv_python(where: Path) -> Path:
    return where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def find_python(version: str) -> str | None:
    """Find an interpreter for *version* on PATH or under pyenv."""
    found = shutil.which(f"python{version}")
    if found:
        probe = subprocess.run([found, "-c", "pass"], capture_output=True)
        if probe.returncode == 0:
            return found
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    return candidates[-1] if candidates else None


def sid_tool() -> Path | None:
    """The chroot tool for SID_VERSIONS, if it may run here (root, and the script exists)."""
    configured = os.environ.get("PTL_WSGI_SID_PYTHONS")
    tool = SID_TOOL if configured is None else Path(configured) if configured else None
    if tool is None or not tool.is_file() or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    return tool


def stamp() -> str:
    digest = hashlib.sha256()
    for name in STAMPED:
        path = ROOT / name
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_venv(version: str | None = None) -> Path:
    """Create the venv for *version* (default: this interpreter) and install the project."""
    where = venv_dir(version)
    python = venv_python(where)
    stamp_file = where / ".ptl_wsgi-installed"
    if stamp_file.exists() and stamp_file.read_text() == stamp() and python.exists():
        return python
    if version and version != f"{sys.version_info[0]}.{sys.version_info[1]}":
        interpreter = find_python(version)
        if interpreter is None:
            raise SystemExit(f"dev.py: no Python {version} found on PATH or under pyenv")
        run([interpreter, "-m", "venv", str(where)])
    elif not python.exists():
        venv.EnvBuilder(with_pip=True).create(where)
    # setup.py build_ext (make strict-build, the C tests) runs with the venv's own
    # setuptools, which must understand the PEP 639 license field (the dev group
    # asks for it too; upgrading first also serves the editable build).
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip", "setuptools>=77"])
    if pip_has_groups(python):
        # PEP 735: the dev dependency group of pyproject.toml (run() works in ROOT).
        run([str(python), "-m", "pip", "install", "--quiet", "-e", str(ROOT), "--group", "dev"])
    else:
        # A pip older than 25.1 (the upgrade can fail offline): the alias extra.
        run([str(python), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[dev]"])
    stamp_file.write_text(stamp())
    return python


def pip_has_groups(python: Path) -> bool:
    """True when the venv's pip installs dependency groups (``--group``, pip >= 25.1)."""
    help_text = subprocess.run(
        [str(python), "-m", "pip", "install", "--help"], capture_output=True, text=True
    ).stdout
    return "--group" in help_text


def ensure_system_tools() -> None:
    """Install the browser and web server the end-to-end tests use, where apt and root allow."""
    missing = [pkg for tool, pkg in SYSTEM_TOOLS.items() if shutil.which(tool) is None]
    if not missing:
        return
    can_install = shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0
    if not can_install:
        print(f"dev.py: {', '.join(missing)} not installed; the tests that need them will skip")
        return
    print(f"dev.py: installing {', '.join(missing)} for the end-to-end tests", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    quiet = {"stdout": subprocess.DEVNULL, "env": env}
    if subprocess.run(["apt-get", "update", "-qq"], **quiet).returncode == 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], **quiet)


def run(command: list[str], **kwargs) -> None:
    print("+", " ".join(command), flush=True)
    result = subprocess.run(command, cwd=ROOT, **kwargs)
    if result.returncode != 0:
        raise SystemExit(result.returncode)


def main(argv: list[str]) -> None:
    task, args = (argv[0], argv[1:]) if argv else ("test", [])
    if task == "setup":
        ensure_venv()
    elif task == "test":
        python = ensure_venv()
        ensure_system_tools()
        run([str(python), "-m", "pytest", *args])
    elif task == "test-fast":
        # No slow tests (servers, browsers, other Pythons) and the "fast" hypothesis
        # profile of tests/conftest.py, which caps every property's examples.  The
        # browser and web server are not installed for it: their tests are slow.
        python = ensure_venv()
        run(
            [
                str(python),
                "-m",
                "pytest",
                "-q",
                "-m",
                "not slow",
                "--hypothesis-profile=fast",
                *args,
            ]
        )
    elif task == "test-all":
        current = f"{sys.version_info[0]}.{sys.version_info[1]}"
        versions = args or [v for v in SUPPORTED if v != current]
        local = [v for v in versions if find_python(v) is not None]
        tool = sid_tool()
        chroot = [v for v in versions if v not in local and v in SID_VERSIONS and tool]
        missing = [v for v in versions if v not in local and v not in chroot]
        if missing:
            print(f"dev.py: skipping Python {', '.join(missing)}: not installed", flush=True)
        for version in local:
            python = ensure_venv(version)
            run([str(python), "-m", "pytest", "-q", "-m", "not slow"])
        if chroot:
            # Debian sid's builds in a chroot; the tool's header says what it sets up.
            run(["bash", str(tool), str(ROOT), *chroot])
    elif task == "demo":
        python = ensure_venv()
        run([str(python), "example_sites/serve.py", *args])
    elif task == "test-django42":
        # The project comes from the source tree (PYTHONPATH), so this venv needs
        # only the test dependencies, with Django pinned to the LTS series.
        where = venv_dir("django42")
        python = venv_python(where)
        if not python.exists():
            venv.EnvBuilder(with_pip=True).create(where)
        # Every time: a dependency added since the venv was made must come in too.
        run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "django>=4.2,<4.3",
                "django-debug-toolbar",
                "pytest",
                "pytest-django",
                "werkzeug",
                "flask",
                "hypothesis",
            ]
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        run(
            [
                str(python),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/integrations/test_django.py",
                "tests/examples/test_example_django.py",
                *args,
            ],
            env=env,
        )
    elif task == "test-flask30":
        # The oldest Flask pyproject.toml allows (flask>=3.0) with the oldest Jinja2 it
        # accepts, and the newest Quart that runs on them: the Jinja2 and Flask seams
        # (tests/integrations/test_flask_seam.py) and the behaviour built on them.  The
        # project comes from the source tree, as for test-django42.
        where = venv_dir("flask30")
        python = venv_python(where)
        if not python.exists():
            venv.EnvBuilder(with_pip=True).create(where)
        run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "flask>=3.0,<3.1",
                "jinja2==3.1.2",
                "quart",
                "pytest",
                "hypothesis",
                "werkzeug",
            ]
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        run(
            [
                str(python),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/integrations/test_flask_seam.py",
                "tests/integrations/test_flask.py",
                "tests/examples/test_example_flask.py",
                "tests/integrations/test_quart.py",
                *args,
            ],
            env=env,
        )
    elif task == "coverage":
        # Separate from "test": tracing costs time.  [tool.coverage.run] in pyproject.toml
        # enables the ptl_wsgi.tools.coverage plugin, so the sites' .ptl templates are reported.
        python = ensure_venv()
        tests = args or sorted(glob.glob("tests/examples/test_example_*.py"))
        # The Django site's tests run it in child processes (its test runner, runserver),
        # measured through coverage's subprocess patch: one data file per process, combined.
        run([str(python), "-m", "coverage", "erase"])
        run([str(python), "-m", "coverage", "run", "-m", "pytest", "-q", *tests])
        run([str(python), "-m", "coverage", "combine", "-q"])
        run([str(python), "-m", "coverage", "report", "--include=example_sites/*"])
    elif task == "fuzz-contexts":
        # The long run of tests/browser/test_contexts_fuzz.py's fuzzer: random seeds until the
        # time is up, each failure printed as a minimal template (exit status 1; 2 when
        # there is no browser: `make test` installs chromium where apt and root allow).
        python = ensure_venv()
        run([str(python), "tests/support/contexts_fuzz.py", *args])
    elif task == "bench":
        python = ensure_venv()
        run([str(python), "benchmarks/run.py", *args])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        raise SystemExit(130) from None
