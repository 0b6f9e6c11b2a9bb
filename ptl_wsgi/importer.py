"""Importing ``.ptl`` modules: a meta-path finder, a loader and a bytecode cache.

``install()`` puts :class:`PtlFinder` on ``sys.meta_path`` just before the
standard ``PathFinder``, so ``import pkg.mod`` finds ``pkg/mod.ptl`` on
``sys.path`` or a package's ``__path__``.  A directory holding both
``mod.ptl`` and another module of the same name (``mod.py``, ``mod.so``, a
``mod/`` package) is an error rather than a silent choice.

Compiled code is cached in
``__pycache__/<name>.<cache_tag>-ptl_wsgi-<__version__>-<COMPILER_VERSION>.pyc``
(``.opt-N`` appended under ``-O``), a name no Python source file can collide
with, and which changes with every release.  The header records a hash of
the source (``importlib.util.source_hash``, as in PEP 552's checked pycs), so
any edit is seen, whatever it does to the file's size or mtime.  Like
Python's own cache it is read but never written when ``sys.dont_write_bytecode``
is set (``-B``, ``PYTHONDONTWRITEBYTECODE``); where it cannot be written
(read-only tree), modules compile in memory.
"""

from __future__ import annotations

import _imp
import marshal
import os
import sys

# importlib's machinery as the interpreter loaded it at start-up (frozen, already in
# sys.modules): importlib.util and importlib.machinery re-export these very objects,
# but importing them costs a one-shot process contextlib, importlib._abc and more.
# (Re-exported, "as" says so to type checkers: ptl_wsgi.loader takes them from here.)
from _frozen_importlib import ModuleSpec as ModuleSpec
from _frozen_importlib import module_from_spec as module_from_spec
from _frozen_importlib_external import (
    MAGIC_NUMBER,
    PathFinder,
    SourceFileLoader,
    cache_from_source,
)
from types import CodeType

from ptl_wsgi import _runtime

# Not typing.TYPE_CHECKING: importing typing costs every one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType

__all__ = [
    "PtlFinder",
    "PtlLoader",
    "cache_path",
    "code_for_path",
    "install",
    "install_for",
    "load_module_from_path",
    "module_from_source",
    "precompile",
    "uninstall_for",
]

SUFFIX = ".ptl"
_MAGIC = MAGIC_NUMBER + b"PTL\1"
_HASH_KEY = int.from_bytes(MAGIC_NUMBER, "little")  # what importlib.util.source_hash uses
_HEADER_SIZE = 16  # _MAGIC, then _source_hash(source): 8 bytes each


def _source_hash(source: bytes) -> bytes:
    """``importlib.util.source_hash(source)`` (PEP 552's key), without importing importlib.util."""
    return _imp.source_hash(_HASH_KEY, source)


def _cache_tag() -> str:
    # Imported here: this module is imported while ptl_wsgi/__init__ is still running.
    from ptl_wsgi import __version__

    # A version string may hold characters that do not belong in a file name.
    version = "".join(c if c.isalnum() or c in "._+" else "_" for c in __version__)
    return f"{sys.implementation.cache_tag}-ptl_wsgi-{version}-{_runtime.COMPILER_VERSION}"


def cache_path(source_path: str) -> str | None:
    """The bytecode cache file for *source_path*, or None if this Python has no cache tag."""
    directory, filename = os.path.split(source_path)
    stem = filename[: -len(SUFFIX)] if filename.endswith(SUFFIX) else filename
    try:
        # Borrow Python's own rules for where __pycache__ is (sys.pycache_prefix).
        python_cache = cache_from_source(os.path.join(directory, stem + ".py"))
    except NotImplementedError:
        return None
    tag = _cache_tag()
    if sys.flags.optimize:
        tag += f".opt-{sys.flags.optimize}"
    return os.path.join(os.path.dirname(python_cache), f"{stem}.{tag}.pyc")


def _relocate(code: CodeType, filename: str) -> CodeType:
    """*code* with *filename* as its file, so a moved tree keeps working tracebacks."""
    if code.co_filename == filename:
        return code
    consts = tuple(_relocate(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _read_cache(path: str, source: bytes) -> CodeType | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:_HEADER_SIZE] != _MAGIC + _source_hash(source):
            return None  # stale, truncated or not ours
        code = marshal.loads(memoryview(data)[_HEADER_SIZE:])
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _write_cache(path: str, source: bytes, mode: int, code: CodeType) -> None:
    """Write *code* to *path* atomically; raises OSError when that is impossible."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    data = _MAGIC + _source_hash(source) + marshal.dumps(code)
    # A unique temporary name in the same directory, then an atomic rename.
    temp = f"{path}.{os.getpid()}-{id(data):x}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, (mode & 0o666) | 0o200)
    try:
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


class PtlLoader(SourceFileLoader):
    """Loads a ``.ptl`` file; ``get_source``/``get_data`` come from SourceFileLoader.

    With *write_cache* false the bytecode cache is read but never written.
    """

    def __init__(self, fullname: str, path: str, *, write_cache: bool = True) -> None:
        super().__init__(fullname, path)
        self.write_cache = write_cache

    # (Not the base's static method: a PTL loader compiles text, not ASTs, and it is
    # an instance method as in SourceLoader, which calls it on self.)
    def source_to_code(  # type: ignore[override]
        self, data: bytes | str, path: str, *, _optimize: int = -1
    ) -> CodeType:
        """Compile PTL source *data* (bytes or str) read from *path*."""
        return _compile(data, path)

    def get_code(self, fullname: str) -> CodeType:
        """The module's code, from the cache when it matches the source, else compiled."""
        source_path = self.get_filename(fullname)
        try:
            return _cached_code(
                source_path, self.get_data(source_path), self.source_to_code, self.write_cache
            )
        except SyntaxError as exc:
            # What lies below is the compiler's machinery (its thread, ast.parse); the
            # error itself names the .ptl file, line and column.  Like Jinja2's rewriting.
            raise exc.with_traceback(None) from None


class PyTemplateLoader(SourceFileLoader):
    """Loads a plain ``.py`` template module for a template loader.

    Through the same cache as ``.ptl`` files, checked by the source's hash: a
    template loader reloads a file whose ``st_mtime_ns`` or size changed, and
    Python's own ``.pyc`` (checked by whole seconds) could hand back the code
    of an edit made within the same second.
    """

    def get_code(self, fullname: str) -> CodeType:
        """The module's code, from the cache when it matches the source, else compiled."""
        source_path = self.get_filename(fullname)
        return _cached_code(source_path, self.get_data(source_path), self.source_to_code)


def _cached_code(
    source_path: str,
    source: bytes,
    compile_source: Callable[[bytes, str], CodeType],
    write: bool = True,
) -> CodeType:
    """The code of *source*, read from *source_path*: cached if it matches, else compiled.

    A compiled result is written to the cache if *write* and not ``sys.dont_write_bytecode``.
    """
    # The source is read either way: its hash, not its mtime, says if the cache is fresh.
    cache = cache_path(source_path)
    if cache is not None:
        code = _read_cache(cache, source)
        if code is not None:
            return _relocate(code, source_path)
    code = compile_source(source, source_path)
    if cache is not None and write and not sys.dont_write_bytecode:
        try:
            _write_cache(cache, source, os.stat(source_path).st_mode, code)
        except OSError:
            pass  # a read-only tree: compile in memory on every import
    return code


def _compile(source: bytes | str, path: str) -> CodeType:
    # Imported here: modules loaded from the cache never need the compiler (or ast).
    from ptl_wsgi.compiler import compile_ptl

    return compile_ptl(source, path)


def code_for_path(path: str | os.PathLike[str], *, write: bool = True) -> CodeType:
    """The code of the PTL file at *path*, through the bytecode cache that imports use.

    With *write* false the cache is only read (as :func:`precompile` wrote it).
    Raises OSError if the file cannot be read, SyntaxError for invalid PTL.
    """
    source_path = os.path.abspath(path)
    with open(source_path, "rb") as f:
        source = f.read()
    return _cached_code(source_path, source, _compile, write)


def _spec(fullname: str, path: str, write_cache: bool = True) -> ModuleSpec:
    loader: PtlLoader | PyTemplateLoader
    if path.endswith(".py"):
        loader = PyTemplateLoader(fullname, path)  # Python's own rules: no write_cache
    else:
        loader = PtlLoader(fullname, path, write_cache=write_cache)
    spec = ModuleSpec(fullname, loader, origin=path)
    spec.has_location = True
    spec.cached = cache_path(path)
    return spec


class PtlFinder:
    """Finds ``name.ptl`` modules on ``sys.path`` and package ``__path__`` lists."""

    def __init__(self) -> None:
        self._listings: dict[str, tuple[int, frozenset[str]]] = {}

    def invalidate_caches(self) -> None:
        """Forget directory listings (called by ``importlib.invalidate_caches()``)."""
        self._listings.clear()

    def _listing(self, directory: str) -> frozenset[str]:
        # Like FileFinder: one stat per lookup, a listdir only when the directory changed.
        try:
            mtime = os.stat(directory).st_mtime_ns
        except OSError:
            return frozenset()
        cached = self._listings.get(directory)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            names = frozenset(os.listdir(directory))
        except OSError:
            names = frozenset()
        self._listings[directory] = (mtime, names)
        return names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """Spec for ``fullname`` if the first path entry that defines it holds a .ptl."""
        filename = fullname.rpartition(".")[2] + SUFFIX
        entries = [e for e in (sys.path if path is None else path) if isinstance(e, str)]
        for index, entry in enumerate(entries):
            if filename in self._listing(entry or "."):
                # A module that an earlier entry defines wins, as it would without PTL.
                if index and _found_elsewhere(fullname, entries[:index]):
                    return None
                return _checked_spec(fullname, os.path.abspath(os.path.join(entry, filename)))
        return None


def _checked_spec(fullname: str, ptl_path: str) -> ModuleSpec:
    other = _found_elsewhere(fullname, [os.path.dirname(ptl_path)])
    if other is not None:
        raise ImportError(
            f"cannot import {fullname!r}: both {other} and {ptl_path} define it; "
            "rename or remove one",
            name=fullname,
            path=ptl_path,
        )
    return _spec(fullname, ptl_path)


def _found_elsewhere(fullname: str, entries: list[str]) -> str | None:
    """The origin of a non-PTL module or regular package *entries* define, if any."""
    spec = PathFinder.find_spec(fullname, entries)
    if spec is None or spec.loader is None or spec.origin is None:
        return None  # nothing, or only a namespace-package portion
    return spec.origin


class _PackageFinder:
    """A :class:`PtlFinder` answering only inside the top-level *packages*: those of
    template loaders, so that a ``Loader`` leaves the rest of the process's imports alone.

    Not a PtlFinder subclass: :func:`install` must still see that none is installed.
    """

    def __init__(self) -> None:
        self.packages: set[str] = set()
        self._finder = PtlFinder()

    def invalidate_caches(self) -> None:
        """Forget directory listings (called by ``importlib.invalidate_caches()``)."""
        self._finder.invalidate_caches()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """As :meth:`PtlFinder.find_spec`, for a submodule of one of the packages.

        A plain ``.py`` module there is a template module too: it loads through
        :class:`PyTemplateLoader`, as the template loader loads it by name.
        """
        if path is None or fullname.partition(".")[0] not in self.packages:
            return None
        spec = self._finder.find_spec(fullname, path, target)
        if spec is not None:
            return spec
        filename = fullname.rpartition(".")[2] + ".py"
        for entry in path:
            if isinstance(entry, str) and filename in self._finder._listing(entry or "."):
                return _spec(fullname, os.path.abspath(os.path.join(entry, filename)))
        return None


_package_finder = _PackageFinder()


def _insert(finder: PtlFinder | _PackageFinder) -> None:
    """Put *finder* on ``sys.meta_path`` just before the standard path finder."""
    for index, other in enumerate(sys.meta_path):
        if other is PathFinder:
            sys.meta_path.insert(index, finder)
            return
    sys.meta_path.append(finder)


def install() -> None:
    """Make ``.ptl`` files importable (idempotent)."""
    if not any(isinstance(finder, PtlFinder) for finder in sys.meta_path):
        _insert(PtlFinder())


def install_for(package: str) -> None:
    """Make ``.ptl`` files importable inside the top-level *package* alone (idempotent)."""
    _package_finder.packages.add(package)
    # Checked each time: a test (or a user) may have restored an older sys.meta_path.
    if not any(finder is _package_finder for finder in sys.meta_path):
        _insert(_package_finder)


def uninstall_for(package: str) -> None:
    """Undo :func:`install_for` for *package*; the others keep their imports."""
    _package_finder.packages.discard(package)


def load_module_from_path(
    path: str | os.PathLike[str],
    module_name: str,
    *,
    write_cache: bool = True,
    into: ModuleType | None = None,
) -> ModuleType:
    """Import the .ptl file at *path* as *module_name* (added to ``sys.modules``).

    Uses the same bytecode cache as ``import`` (only read if *write_cache* is
    false); the finder need not be installed.  The source is read as bytes, so
    a coding cookie is honoured.  If the module fails, ``sys.modules`` gets
    back what it held under *module_name* before (``__main__``, say).  A
    ``.py`` file is plain Python, loaded through that cache too (template
    loaders serve ``.py`` templates).  With *into*, the file runs in that
    existing module (a package keeps its path).
    """
    spec = _spec(module_name, os.path.abspath(path), write_cache)
    if into is None:
        module = module_from_spec(spec)
    else:
        module = into
        spec.submodule_search_locations = getattr(into, "__path__", None)
        module.__spec__ = spec
        module.__loader__ = spec.loader
        module.__file__ = spec.origin
        # (ignore: typeshed's ModuleType lacks __cached__, which imports set on modules.)
        module.__cached__ = spec.cached  # type: ignore[attr-defined]
    previous = sys.modules.get(module_name)
    sys.modules[module_name] = module
    loader = spec.loader
    assert loader is not None  # for type checkers: _spec gives it a PtlLoader
    try:
        loader.exec_module(module)
    except BaseException:
        if sys.modules.get(module_name) is module:
            if previous is None:
                del sys.modules[module_name]
            else:
                sys.modules[module_name] = previous
        raise
    return module


def module_from_source(
    source: str | bytes, module_name: str, *, filename: str = "<string>"
) -> ModuleType:
    """A new module named *module_name*, holding the PTL *source* run as its code.

    For templates made from strings: the module is not put in ``sys.modules``
    and its code is not cached; relative imports start at the package the name
    is in.  Raises SyntaxError (located at *filename*) for invalid PTL.
    """
    spec = ModuleSpec(module_name, None, origin=filename)
    module = module_from_spec(spec)
    module.__file__ = filename
    try:
        code = _compile(source, filename)
    except SyntaxError as exc:
        raise exc.with_traceback(None) from None  # as PtlLoader.get_code: no compiler frames
    exec(code, module.__dict__)
    return module


def precompile(source_path: str | os.PathLike[str]) -> str:
    """Compile *source_path* into its cache file and return that file's path.

    Raises SyntaxError for invalid PTL and OSError when the cache cannot be written.
    """
    source_path = os.path.abspath(source_path)
    cache = cache_path(source_path)
    if cache is None:
        raise OSError("this Python has no bytecode cache (sys.implementation.cache_tag is None)")
    with open(source_path, "rb") as f:
        source = f.read()
        mode = os.fstat(f.fileno()).st_mode
    code = _compile(source, source_path)
    # An explicit request: written even when sys.dont_write_bytecode is set, like compileall.
    _write_cache(cache, source, mode, code)
    return cache
