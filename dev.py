#!/usr/bin/env python3
"""Set up a virtual environment and run the project's everyday tasks.

Needs only Python 3 (and a C compiler for the accelerator)::

    python3 dev.py demo        # venv + install, then serve the example sites
    python3 dev.py test        # venv + install, then the whole test suite
    python3 dev.py test-all    # the suite on every supported Python found
    python3 dev.py bench       # the benchmarks, results as ratios

Extra arguments after ``test`` go to pytest, after ``demo`` to the demo server.
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
SUPPORTED = ("3.10", "3.11", "3.12", "3.13")
# Files whose change means the venv must be reinstalled (deps or the C build).
STAMPED = ("pyproject.toml", "setup.py", "ptl_wsgi/_htmltext_c.c")


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
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    run([str(python), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[dev]"])
    stamp_file.write_text(stamp())
    return python


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
        run([str(python), "-m", "pytest", *args])
    elif task == "test-all":
        versions = args or list(SUPPORTED)
        missing = [v for v in versions if find_python(v) is None]
        if missing:
            print(f"dev.py: skipping Python {', '.join(missing)}: not installed", flush=True)
        for version in versions:
            if version in missing:
                continue
            python = ensure_venv(version)
            run([str(python), "-m", "pytest", "-q", "-m", "not slow"])
    elif task == "demo":
        python = ensure_venv()
        run([str(python), "-m", "ptl_wsgi.demo", *args])
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
