"""Message extraction from .ptl files: Babel's extractor method and Django's makemessages."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from ptl_helpers import subprocess_env

from ptl_wsgi.tools.babel_extract import extract_ptl, python_view, python_view_text

SOURCE = """\
from ptl_wsgi.i18n import _, gettext_lazy, ngettext, pgettext

def welcome [html] (name,
                    title=_("Default title")):
    # Translators: the greeting on the home page
    _("<b>Welcome</b>")
    _("Hello %s") % name

template old(n):
    ngettext("%d item",
             "%d items", n) % n

async def later [plain] ():
    pgettext("menu", "File")

NOTE = gettext_lazy("Later")
"""

# (line, msgid or (singular, plural), context, comments)
EXPECTED = [
    (4, "Default title", None, []),
    (6, "<b>Welcome</b>", None, ["the greeting on the home page"]),
    (7, "Hello %s", None, []),
    (10, ("%d item", "%d items"), None, []),
    (14, "File", "menu", []),
    (16, "Later", None, []),
]
# What a catalog shows: Babel and xgettext keep the "Translators:" tag in the comment.
EXPECTED_WITH_TAGS = [
    (line, message, context, [f"Translators: {c}" for c in comments])
    for line, message, context, comments in EXPECTED
]
KEYWORDS = {"_": None, "ngettext": (1, 2), "pgettext": ((1, "c"), 2), "gettext_lazy": None}


def test_python_view_keeps_lines_and_columns() -> None:
    view = python_view_text(SOURCE)
    assert len(view.splitlines()) == len(SOURCE.splitlines())
    for before, after in zip(SOURCE.splitlines(), view.splitlines(), strict=True):
        assert len(before) == len(after)
    assert "def welcome        (name," in view
    assert "def      old(n):" in view
    compile(view, "view.py", "exec")  # plain Python


def test_python_view_keeps_the_encoding() -> None:
    source = "# -*- coding: latin-1 -*-\ndef f [html] ():\n    _('Caf\xe9')\n".encode("latin-1")
    view = python_view(source)
    assert view.decode("latin-1").splitlines()[2] == "    _('Caf\xe9')"
    results = list(extract_ptl(io.BytesIO(view), {"_": None}, [], {}))
    assert [(line, message) for line, _f, message, _c in results] == [(3, "Caf\xe9")]


def test_extract_ptl_directly() -> None:
    results = list(
        extract_ptl(io.BytesIO(SOURCE.encode()), KEYWORDS, ["Translators:"], {"encoding": "utf-8"})
    )
    found = [(line, message, comments) for line, _func, message, comments in results]
    assert found == [
        (4, "Default title", []),
        (6, "<b>Welcome</b>", ["Translators: the greeting on the home page"]),
        (7, "Hello %s", []),
        (10, ("%d item", "%d items", None), []),
        (14, ("menu", "File"), []),
        (16, "Later", []),
    ]


def pot_messages(pot: Path) -> list[tuple[int, object, str | None, list[str]]]:
    with pot.open("rb") as fp:
        catalog = read_po(fp)
    return [
        (m.locations[0][1], m.id, m.context, list(m.auto_comments))
        for m in sorted(catalog, key=lambda m: m.locations[0][1] if m.locations else 0)
        if m.id
    ]


def test_pybabel_extract_with_a_mapping_file(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "home.ptl").write_text(SOURCE, encoding="utf-8")
    # A dotted path needs no entry point (and so no reinstall of the package).
    (tmp_path / "babel.cfg").write_text("[ptl_wsgi.tools.babel_extract.extract_ptl: **.ptl]\n")
    command = [
        sys.executable,
        "-c",
        "from babel.messages.frontend import main; main()",
        "extract",
        "-F",
        "babel.cfg",
        "-k",
        "gettext_lazy",  # Babel knows _, ngettext, pgettext... but not the lazy forms
        "-c",
        "Translators:",
        "-o",
        "messages.pot",
        ".",
    ]
    result = subprocess.run(
        command, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert pot_messages(tmp_path / "messages.pot") == EXPECTED_WITH_TAGS


# Django's makemessages (GNU gettext's xgettext)


def install_gettext() -> tuple[str | None, str]:
    """Install GNU gettext if xgettext is missing; return its path or a reason to skip."""
    found = shutil.which("xgettext")
    if found:
        return found, ""
    if not shutil.which("apt-get"):
        return None, "GNU gettext is not installed and there is no apt-get to install it"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None, "GNU gettext is not installed and installing it needs root"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    result = None
    for command in (
        ["apt-get", "install", "-y", "-q", "gettext"],
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "gettext"],
    ):
        result = subprocess.run(command, env=env, capture_output=True, timeout=300)
    found = shutil.which("xgettext")
    if found:
        return found, ""
    stderr = result.stderr.decode()[-300:] if result else ""
    return None, "apt-get could not install gettext: " + stderr


@pytest.fixture(scope="module")
def xgettext() -> str:
    path, reason = install_gettext()
    if path is None:
        pytest.skip(reason)
    return path


def make_project(root: Path) -> None:
    (root / "locale").mkdir()
    (root / "templates").mkdir()
    (root / "templates" / "home.ptl").write_text(SOURCE, encoding="utf-8")
    (root / "views.py").write_text('from django.utils.translation import gettext as _\n_("View")\n')


def run_makemessages(root: Path, app_installed: bool, *args: str) -> subprocess.CompletedProcess:
    settings = textwrap.dedent(
        f"""
        SECRET_KEY = "x"
        USE_I18N = True
        LOCALE_PATHS = ["locale"]
        INSTALLED_APPS = {["ptl_wsgi.contrib.django_i18n"] if app_installed else []!r}
        """
    )
    (root / "i18n_settings.py").write_text(settings)
    script = (
        "import django.core.management as m; m.execute_from_command_line(__import__('sys').argv)"
    )
    command = [sys.executable, "-c", script, "makemessages", "-l", "fr", *args]
    env = subprocess_env(DJANGO_SETTINGS_MODULE="i18n_settings")
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_makemessages_reads_ptl_files(xgettext: str, tmp_path: Path) -> None:
    make_project(tmp_path)
    result = run_makemessages(tmp_path, app_installed=True)
    assert result.returncode == 0, result.stderr
    po = tmp_path / "locale" / "fr" / "LC_MESSAGES" / "django.po"
    assert pot_messages(po) == [(2, "View", None, []), *EXPECTED_WITH_TAGS]
    text = po.read_text("utf-8")
    assert "#: templates/home.ptl:6" in text  # the .ptl file, not its Python view
    assert ".ptl.py" not in text
    assert not list(tmp_path.rglob("*.ptl.py"))  # the Python views are cleaned up


def test_stock_makemessages_misreads_ptl_files(xgettext: str, tmp_path: Path) -> None:
    """Without the app, Django reads a .ptl file as a Django template and finds nothing."""
    make_project(tmp_path)
    result = run_makemessages(tmp_path, False, "-e", "ptl,py")
    assert result.returncode == 0, result.stderr
    po = tmp_path / "locale" / "fr" / "LC_MESSAGES" / "django.po"
    text = po.read_text("utf-8")
    assert "#: views.py:2" in text and "Welcome" not in text
