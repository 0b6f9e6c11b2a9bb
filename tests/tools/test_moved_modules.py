"""Old module names (the tools before ``ptl_wsgi.tools``, renamed modules) still work, deprecated.

Users write them where none of their code runs: coverage.py's ``plugins``, Babel's
mapping files, and imports (docs of 0.1 show ``from ptl_wsgi.convert import ...``,
``from ptl_wsgi.safety import safe_url``; converted ``.py`` templates import
``ptl_wsgi.templates``).  Each is checked in an import and, for the two configuration
files, run as users run it.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from ptl_helpers import subprocess_env, write_files

import ptl_wsgi

OLD_AND_NEW = [
    ("ptl_wsgi.convert", "ptl_wsgi.tools.from_quixote"),
    ("ptl_wsgi.to_py", "ptl_wsgi.tools.to_py"),
    ("ptl_wsgi.lint", "ptl_wsgi.tools.lint"),
    ("ptl_wsgi.typecheck", "ptl_wsgi.tools.typecheck"),
    ("ptl_wsgi.coverage", "ptl_wsgi.tools.coverage"),
    ("ptl_wsgi.babel_extract", "ptl_wsgi.tools.babel_extract"),
    ("ptl_wsgi.pygments_lexer", "ptl_wsgi.tools.pygments_lexer"),
    ("ptl_wsgi.safety", "ptl_wsgi.beyond_escaping"),
    ("ptl_wsgi.templates", "ptl_wsgi.py_templates"),
    ("ptl_wsgi.output", "ptl_wsgi.output_policy"),
    ("ptl_wsgi._helpers", "ptl_wsgi._quixote_helpers"),
    ("ptl_wsgi._iterate", "ptl_wsgi._iterate_in_context"),
]


def test_the_table_is_the_package_s() -> None:
    assert dict(OLD_AND_NEW) == {old: new[0] for old, new in ptl_wsgi._MOVED_MODULES.items()}
    for old, _new in OLD_AND_NEW:
        # Nothing is left at the old path: a file there would shadow the new module.
        path = Path(ptl_wsgi.__file__).parent / (old.rpartition(".")[2] + ".py")
        assert not path.exists(), path


@pytest.mark.parametrize(("old", "new"), OLD_AND_NEW)
def test_an_old_name_imports_the_new_module_with_a_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated .* use {new}") as caught:
        module = importlib.import_module(old)
    # The warning names the importer, not importlib.
    assert caught[0].filename != "<frozen importlib._bootstrap>"
    moved = importlib.import_module(new)
    assert moved.__name__ == new  # the new module keeps its own name and spec
    assert moved.__spec__ is not None and moved.__spec__.name == new
    assert module.__all__[: len(moved.__all__)] == moved.__all__ and module.__all__
    for name in moved.__all__:
        assert getattr(module, name) is getattr(moved, name)
    with pytest.raises(AttributeError):
        _ = module.no_such_name


def test_from_import_of_an_old_name() -> None:
    sys.modules.pop("ptl_wsgi.convert", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ptl_wsgi.convert import convert_source  # type: ignore[import-not-found]
    from ptl_wsgi.tools.from_quixote import convert_source as moved

    assert convert_source is moved


def test_an_unknown_module_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ptl_wsgi.no_such_tool")


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=root,
        env=subprocess_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_coverage_config_with_the_old_plugin_name(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            ".coveragerc": "[run]\nplugins = ptl_wsgi.coverage\nsource = .\n",
            "pages.ptl": 'def page [html] (admin):\n    "<h1>"\n    if admin:\n'
            '        "admin"\n    "</h1>"\n',
            "main.py": "import ptl_wsgi\nptl_wsgi.install()\nimport pages\n"
            "print(pages.page(False))\n",
        },
    )
    _run(tmp_path, "-m", "coverage", "run", "main.py")
    report = _run(tmp_path, "-m", "coverage", "report", "-m").stdout
    row = next(line.split() for line in report.splitlines() if "pages.ptl" in line)
    assert row[1:] == ["5", "1", "80%", "4"]


def test_babel_mapping_with_the_old_extractor_path(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "babel.cfg": "[ptl_wsgi.babel_extract.extract_ptl: **.ptl]\n",
            "home.ptl": "from ptl_wsgi.i18n import _\n"
            "def page [html] ():\n    '<p>%s</p>' % _('Welcome')\n",
        },
    )
    _run(
        tmp_path,
        "-c",
        "from babel.messages.frontend import main; main()",
        "extract",
        "-F",
        "babel.cfg",
        "-o",
        "messages.pot",
        ".",
    )
    with (tmp_path / "messages.pot").open("rb") as pot:
        assert [m.id for m in read_po(pot) if m.id] == ["Welcome"]
