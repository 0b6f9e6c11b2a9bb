"""Importing .ptl modules: finder, packages, clashes, bytecode cache, reload, tracebacks."""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import inspect
import linecache
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from ptl_helpers import import_sandbox, subprocess_env, write_files

from ptl_wsgi import __version__, _runtime, compiler
from ptl_wsgi.html import htmltext
from ptl_wsgi.importer import (
    PtlFinder,
    PtlLoader,
    cache_path,
    install,
    load_module_from_path,
    precompile,
)

PAGE = """\
def page [html] (x):
    "<p>"
    x
"""


@pytest.fixture(autouse=True)
def write_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cache is under test here, even when the environment says -B.
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    with import_sandbox(tmp_path) as root:
        yield root


def set_mtime_ns(path: Path, mtime_ns: int) -> None:
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_install_is_idempotent_and_precedes_path_finder() -> None:
    saved = list(sys.meta_path)
    try:
        install()
        install()
        finders = [f for f in sys.meta_path if isinstance(f, PtlFinder)]
        assert len(finders) == 1
        index = sys.meta_path.index(finders[0])
        assert sys.meta_path[index + 1] is importlib.machinery.PathFinder
    finally:
        sys.meta_path[:] = saved


def test_import_sets_module_attributes(sandbox: Path) -> None:
    write_files(sandbox, {"plainmod.ptl": PAGE})
    module = importlib.import_module("plainmod")
    source = str(sandbox / "plainmod.ptl")
    assert module.page("<") == "<p>&lt;" and type(module.page("")) is htmltext
    assert module.__file__ == source
    assert module.__spec__.origin == source
    assert module.__spec__.has_location
    assert isinstance(module.__loader__, PtlLoader)
    tag = f"{sys.implementation.cache_tag}-ptl_wsgi-{__version__}-{_runtime.COMPILER_VERSION}"
    expected_cache = sandbox / "__pycache__" / f"plainmod.{tag}.pyc"
    assert module.__spec__.cached == str(expected_cache)
    if sys.version_info < (3, 15):  # 3.15 no longer sets __cached__ (gh-97879)
        assert module.__spec__.cached == str(expected_cache)
    assert expected_cache.is_file()
    assert module.page.__code__.co_filename == source


def test_cache_name_differs_from_py_sibling(sandbox: Path) -> None:
    ptl_cache = cache_path(str(sandbox / "mod.ptl"))
    assert ptl_cache != importlib.util.cache_from_source(str(sandbox / "mod.py"))
    assert ptl_cache is not None and os.path.dirname(ptl_cache) == str(sandbox / "__pycache__")


def test_mixed_package(sandbox: Path) -> None:
    write_files(
        sandbox,
        {
            "shop/__init__.py": "from shop import views\n",
            "shop/models.py": "NAME = '<Shop & Co>'\n",
            "shop/views.ptl": (
                "from shop.models import NAME\nfrom . import parts\n"
                "def index [html] ():\n    '<h1>%s</h1>' % NAME\n    parts.footer()\n"
            ),
            "shop/parts.ptl": "def footer [html] ():\n    '<footer>'\n",
            "shop/sub/deep.ptl": "def x [plain] ():\n    'deep'\n",  # namespace subpackage
        },
    )
    import shop

    assert shop.views.index() == "<h1>&lt;Shop &amp; Co&gt;</h1><footer>"
    deep = importlib.import_module("shop.sub.deep")
    assert deep.x() == "deep"
    assert deep.__spec__.parent == "shop.sub"


def test_py_and_ptl_in_same_directory_is_an_error(sandbox: Path) -> None:
    write_files(sandbox, {"pkg/__init__.py": "", "pkg/both.py": "", "pkg/both.ptl": PAGE})
    with pytest.raises(ImportError) as info:
        importlib.import_module("pkg.both")
    message = str(info.value)
    assert str(sandbox / "pkg" / "both.py") in message
    assert str(sandbox / "pkg" / "both.ptl") in message
    assert info.value.name == "pkg.both"


def test_package_and_ptl_with_same_name_is_an_error(sandbox: Path) -> None:
    write_files(sandbox, {"twin/__init__.py": "", "twin.ptl": PAGE})
    with pytest.raises(ImportError, match=r"both .*__init__\.py and .*twin\.ptl"):
        importlib.import_module("twin")


def test_first_path_entry_wins(sandbox: Path) -> None:
    write_files(
        sandbox,
        {
            "a/first_py.py": "KIND = 'py'\n",
            "b/first_py.ptl": "KIND = 'ptl'\n",
            "a/first_ptl.ptl": "KIND = 'ptl'\n",
            "b/first_ptl.py": "KIND = 'py'\n",
        },
    )
    sys.path[:0] = [str(sandbox / "a"), str(sandbox / "b")]
    assert importlib.import_module("first_py").KIND == "py"
    assert importlib.import_module("first_ptl").KIND == "ptl"


def test_syntax_error_on_import_names_the_ptl_file(sandbox: Path) -> None:
    write_files(sandbox, {"broken.ptl": "def f [html] (x):\n    return x\n"})
    with pytest.raises(SyntaxError) as info:
        importlib.import_module("broken")
    assert info.value.filename == str(sandbox / "broken.ptl")
    assert (info.value.lineno, info.value.offset) == (2, 5)
    assert "broken" not in sys.modules


def test_cache_is_used_when_fresh(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = sandbox / "cached.ptl"
    path.write_text("VALUE = 'old!'\n")
    assert importlib.import_module("cached").VALUE == "old!"
    del sys.modules["cached"]
    os.utime(path, ns=(1, 1))  # touched, same text: still fresh

    def no_compiling(*args: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(compiler, "compile_ptl", no_compiling)
    assert importlib.import_module("cached").VALUE == "old!"


def test_same_size_edit_with_mtime_restored_is_seen(sandbox: Path) -> None:
    path = sandbox / "sneaky.ptl"
    path.write_text("VALUE = 'old!'\n")
    assert importlib.import_module("sneaky").VALUE == "old!"
    stat = path.stat()
    path.write_text("VALUE = 'new!'\n")  # same size
    set_mtime_ns(path, stat.st_mtime_ns)
    del sys.modules["sneaky"]
    assert importlib.import_module("sneaky").VALUE == "new!"


@pytest.mark.parametrize("new_text", ["VALUE = 'new!'\n", "VALUE = 'longer'\n"])
def test_cache_is_invalidated_by_source_edit(sandbox: Path, new_text: str) -> None:
    path = sandbox / "edited.ptl"
    path.write_text("VALUE = 'old!'\n")
    assert importlib.import_module("edited").VALUE == "old!"
    stat = path.stat()
    path.write_text(new_text)
    if len(new_text) == stat.st_size:
        set_mtime_ns(path, stat.st_mtime_ns + 1)  # 1 ns later, same size
    else:
        set_mtime_ns(path, stat.st_mtime_ns)  # same mtime, other size
    del sys.modules["edited"]
    assert importlib.import_module("edited").VALUE == new_text.split("'")[1]


def test_compiler_version_is_part_of_the_cache_name(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sandbox / "versioned.ptl"
    path.write_text("VALUE = 1\n")
    old_cache = Path(importlib.import_module("versioned").__spec__.cached)
    monkeypatch.setattr(_runtime, "COMPILER_VERSION", "999")
    del sys.modules["versioned"]
    module = importlib.import_module("versioned")
    new_cache = Path(module.__spec__.cached)
    assert new_cache != old_cache and new_cache.name.endswith("-999.pyc")
    assert new_cache.is_file() and old_cache.is_file()


def test_corrupt_cache_is_rewritten(sandbox: Path) -> None:
    write_files(sandbox, {"corrupt.ptl": PAGE})
    cache = Path(importlib.import_module("corrupt").__spec__.cached)
    good = cache.read_bytes()
    cache.write_bytes(good[:30])
    del sys.modules["corrupt"]
    assert importlib.import_module("corrupt").page("&") == "<p>&amp;"
    assert cache.read_bytes() == good


def test_no_cache_is_written_with_dont_write_bytecode(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    write_files(sandbox, {"never.ptl": PAGE})
    module = importlib.import_module("never")
    assert module.page("<") == "<p>&lt;"
    assert not Path(module.__spec__.cached).exists()
    assert not (sandbox / "__pycache__").exists()


def test_pythondontwritebytecode_means_no_cache(tmp_path: Path) -> None:
    write_files(tmp_path, {"envpage.ptl": PAGE})
    env = subprocess_env(PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    child = "import ptl_wsgi; ptl_wsgi.install(); import envpage; print(envpage.page('<'))"
    result = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout == "<p>&lt;\n"
    assert not (tmp_path / "__pycache__").exists()


def test_package_version_is_part_of_the_cache_name(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ptl_wsgi

    path = sandbox / "release.ptl"
    path.write_text("VALUE = 1\n")
    old_cache = Path(importlib.import_module("release").__spec__.cached)
    monkeypatch.setattr(ptl_wsgi, "__version__", "99.0")
    del sys.modules["release"]
    new_cache = Path(importlib.import_module("release").__spec__.cached)
    assert new_cache != old_cache and "-ptl_wsgi-99.0-" in new_cache.name
    assert new_cache.is_file()


def test_unwritable_cache_directory_still_imports(sandbox: Path) -> None:
    # Running as root defeats chmod, so block the cache the way a read-only tree
    # does for everyone: __pycache__ cannot be created because a file has its name.
    write_files(sandbox, {"ro/__pycache__": "not a directory", "ro/page.ptl": PAGE})
    sys.path.insert(0, str(sandbox / "ro"))
    module = importlib.import_module("page")
    assert module.page("<") == "<p>&lt;"
    assert (sandbox / "ro" / "__pycache__").read_text() == "not a directory"
    del sys.modules["page"]
    assert importlib.import_module("page").page("") == "<p>"
    with pytest.raises(OSError):
        precompile(sandbox / "ro" / "page.ptl")


def test_precompiled_cache_is_used(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = sandbox / "pre.ptl"
    path.write_text("VALUE = 'one'\n")
    cache = precompile(path)
    assert cache == cache_path(str(path)) and Path(cache).is_file()

    def no_compiling(*args: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(compiler, "compile_ptl", no_compiling)
    assert importlib.import_module("pre").VALUE == "one"


def test_no_temporary_files_left_behind(sandbox: Path) -> None:
    write_files(sandbox, {"tidy.ptl": PAGE})
    importlib.import_module("tidy")
    assert [p.suffix for p in (sandbox / "__pycache__").iterdir()] == [".pyc"]


def test_moved_tree_reports_its_new_path(sandbox: Path) -> None:
    write_files(sandbox, {"old/moved.ptl": PAGE})
    load_module_from_path(sandbox / "old" / "moved.ptl", "moved_old")
    shutil.copytree(sandbox / "old", sandbox / "new")  # keeps mtimes: the cache stays valid
    new_path = str(sandbox / "new" / "moved.ptl")
    module = load_module_from_path(new_path, "moved_new")
    assert module.page.__code__.co_filename == new_path


def test_reload_picks_up_edits(sandbox: Path) -> None:
    path = sandbox / "reloaded.ptl"
    path.write_text(PAGE)
    module = importlib.import_module("reloaded")
    path.write_text(PAGE.replace("<p>", "<div>"))
    set_mtime_ns(path, path.stat().st_mtime_ns + 1_000_000)
    assert importlib.reload(module) is module
    assert module.page("") == "<div>"


def test_source_access_for_tools(sandbox: Path) -> None:
    write_files(sandbox, {"res/__init__.py": "", "res/tpl.ptl": PAGE})
    module = importlib.import_module("res.tpl")
    assert module.__loader__.get_source("res.tpl") == PAGE
    assert importlib.resources.files("res").joinpath("tpl.ptl").read_text() == PAGE
    assert linecache.getline(module.__file__, 2) == '    "<p>"\n'
    assert inspect.getsource(module.page) == PAGE


def test_traceback_through_imported_template(sandbox: Path) -> None:
    write_files(
        sandbox,
        {"failing.ptl": 'def page [html] (x):\n    """<p>\n</p>"""\n    x["missing"]\n'},
    )
    module = importlib.import_module("failing")
    with pytest.raises(KeyError) as info:
        module.page({})
    text = "".join(traceback.format_exception(info.type, info.value, info.tb))
    assert f'File "{sandbox / "failing.ptl"}", line 4, in page' in text
    assert '    x["missing"]' in text


def test_load_module_from_path(tmp_path: Path) -> None:
    write_files(tmp_path, {"loose.ptl": PAGE, "bad.ptl": "def f [html] ():\n    return 1\n"})
    try:
        module = load_module_from_path(tmp_path / "loose.ptl", "loose_by_path")
        assert sys.modules["loose_by_path"] is module
        assert module.__name__ == "loose_by_path"
        assert module.page(1) == "<p>1"
        assert Path(module.__spec__.cached).is_file()
        with pytest.raises(SyntaxError):
            load_module_from_path(tmp_path / "bad.ptl", "bad_by_path")
        assert "bad_by_path" not in sys.modules
    finally:
        sys.modules.pop("loose_by_path", None)


SOURCES = [b"", b"def f [html] ():\n    '<b>'\n", "x = '\u00e9\u4e2d'\n".encode() * 500]


@pytest.mark.parametrize("source", SOURCES)
def test_the_cache_header_is_importlibs_magic_and_source_hash(
    source: bytes, tmp_path: Path
) -> None:
    # The importer reads importlib's frozen machinery directly (start-up); the header
    # must still be exactly what importlib.util computes, on every Python.
    from ptl_wsgi import importer

    module = importlib.import_module
    assert importer.ModuleSpec is module("importlib.machinery").ModuleSpec
    assert importer.SourceFileLoader is module("importlib.machinery").SourceFileLoader
    assert importer.PathFinder is module("importlib.machinery").PathFinder
    assert importer.module_from_spec is importlib.util.module_from_spec
    assert importer._source_hash(source) == importlib.util.source_hash(source)
    path = tmp_path / "t.ptl"
    path.write_bytes(source)
    written = Path(importer.precompile(str(path))).read_bytes()
    assert written[:16] == importlib.util.MAGIC_NUMBER + b"PTL\1" + importlib.util.source_hash(
        source
    )
