"""Template names to template callables: the one loader behind every integration.

A template name is a path relative to a search directory, optionally followed
by the name of a template function in that module::

    "blog/post.ptl"          # the module's template called ``render``
    "blog/post.ptl:sidebar"  # the module's template called ``sidebar``
    "blog/post.py:sidebar"   # the same, from a plain Python module

A ``.py`` module is plain Python (``ptl-wsgi convert --to-py`` writes one from
a ``.ptl`` module); a name reaches only its functions marked with
:func:`ptl_wsgi.py_templates.template`, never an unmarked function, so a team can
move templates to Python file by file.

The search directories together form one package (a fresh one per
:class:`Loader`), so template modules import each other with relative imports,
and a name missing from the first directory is looked for in the next, the way
Flask's and Django's loaders search their folders::

    # blog/post.ptl
    from ..layout import page        # layout.ptl from any search directory

    def render [html] (post):
        page(post.title, body(post))
"""

from __future__ import annotations

import itertools
import os
import sys

# threading.RLock is this very type; importing threading (or inspect, pathlib,
# typing) would add milliseconds to the start-up of every one-shot (CGI) process.
from _thread import RLock
from contextvars import ContextVar
from types import FunctionType, GeneratorType, MappingProxyType, ModuleType

from ptl_wsgi._iterate_in_context import InContext, setting
from ptl_wsgi.importer import ModuleSpec, module_from_spec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any

    #: One recorded call of a template: its name (``"dir/file.ptl:function"``), its
    #: function and its arguments by parameter name (:meth:`Loader.recording`).
    Call = tuple[str, Callable[..., Any], dict[str, Any]]


__all__ = [
    "DEFAULT_FUNCTION",
    "SUFFIXES",
    "Loader",
    "Template",
    "TemplateArgumentError",
    "TemplateNotFound",
    "loader_for",
    "render_context",
    "split_name",
]

#: The template a name without ``:function`` refers to.
DEFAULT_FUNCTION = "render"
_SUFFIX = ".ptl"
# The module name (in a loader's package) of templates made from strings: no file
# name escapes to it (see _module_part), so it never stands for a file's module.
_STRING_MODULE = "<string>"
_PY_SUFFIX = ".py"
#: What a template file's name ends with: PTL modules and plain Python modules.
SUFFIXES = (_SUFFIX, _PY_SUFFIX)
_SUFFIXES = SUFFIXES
_counter = itertools.count()

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_render_var: ContextVar[Mapping[str, Any]] = ContextVar("ptl_wsgi_render_context", default=_EMPTY)
# The calls being recorded in this context (Loader.recording), None when none are.
_recorded_calls: ContextVar[list[Call] | None] = ContextVar("ptl_wsgi_recorded_calls", default=None)


def render_context() -> Mapping[str, Any]:
    """The read-only context of the render in progress (empty outside one).

    That is everything :meth:`Template.render` was given: the view's values
    plus what the integration adds (``request``, context processors,
    ``csrf_input``, ``csp_nonce``, Flask's globals), whatever the template
    itself declares.  Any template called during the render, a layout say,
    reads what it needs here instead of having every page pass it down.
    """
    return _render_var.get()


class TemplateNotFound(LookupError):
    """No template by that name; ``tried`` lists every place that was looked in."""

    def __init__(self, name: str, tried: Iterable[str] = (), reason: str = "") -> None:
        tried = list(tried)
        message = f"template {name!r} not found"
        if reason:
            message += f": {reason}"
        if tried:
            message += "; looked in:\n" + "\n".join(f"  {place}" for place in tried)
        # Attributes after super(): in an integration's subclass that also derives from
        # a framework's exception (jinja2's), that __init__ may set ``name`` too.
        super().__init__(message)
        self.name = name
        self.tried = tried
        self.reason = reason

    def __str__(self) -> str:
        return str(self.args[0])


def loader_for(module_name: str) -> Loader:
    """The :class:`Loader` that loaded the template module *module_name* (``__name__``).

    For what an import statement cannot spell: a template whose file name is not an
    identifier (``loader_for(__name__).module("my-form.ptl")``) or one named at render
    time (``loader_for(__name__).get_template(name)``).
    """
    package = sys.modules.get(module_name.partition(".")[0])
    loader = getattr(package, "__ptl_loader__", None)
    if not isinstance(loader, Loader):
        raise LookupError(f"module {module_name!r} was not loaded by a ptl_wsgi Loader")
    return loader


class TemplateArgumentError(TypeError):
    """The context lacks a value for a required parameter of the template."""


def split_name(name: str) -> tuple[str, str]:
    """Split ``"dir/file.ptl:func"`` into the file part and the function name."""
    path, _, function = name.partition(":")
    return path, function or DEFAULT_FUNCTION


class Template:
    """One template function, called with a context mapping.

    Keys the function does not take are left out unless it accepts
    ``**kwargs``; a required parameter missing from the context raises
    :class:`TemplateArgumentError` naming the template and the parameter.
    """

    __slots__ = ("name", "filename", "function", "module", "_accepted", "_required")

    def __init__(
        self,
        name: str,
        filename: str,
        function: Callable[..., Any],
        module: ModuleType | None = None,
    ) -> None:
        self.name = name
        self.filename = filename
        self.function = function
        #: The module the template was loaded from, where the loader knows it.
        self.module = module
        self._accepted, self._required = _keyword_parameters(function)

    def render(self, context: Mapping[str, Any] | None = None) -> str | Iterator[Any]:
        """Call the template with the parts of *context* it takes.

        While it runs, :func:`render_context` is the whole *context*; a
        generator template (a stream) gets it back around each of its steps.
        """
        context = context or {}
        for param in self._required:
            if param not in context:
                raise TemplateArgumentError(
                    f"template {self.name!r} needs {param!r}, which the context does not have"
                )
        # A copy: the caller's dict may change after the call, while a stream still runs.
        current = MappingProxyType(dict(context))
        token = _render_var.set(current)
        result: str | Iterator[Any]  # a template's htmltext or str, or a stream
        # Debuggers hide this frame, and an error loses ptl_wsgi's frames below it
        # (see ptl_wsgi.tracebacks).
        __traceback_hide__ = __tracebackhide__ = True
        try:
            if self._accepted is None:
                result = self.function(**context)
            else:
                accepted = self._accepted
                result = self.function(**{k: v for k, v in context.items() if k in accepted})
        except Exception as exc:
            from ptl_wsgi.tracebacks import without_internal_frames

            raise without_internal_frames(exc)  # noqa: B904 (the same exception)
        finally:
            _render_var.reset(token)
        if isinstance(result, GeneratorType):
            # A stream runs after this returned, perhaps where a server iterates it.
            # A closure, not functools.partial: a one-shot process need not import functools.
            def enter() -> setting:
                return setting(_render_var, current)

            return InContext(result, enter)
        return result

    def call_arguments(self, context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The arguments :meth:`render` calls the function with for *context*, by
        parameter name, defaults included (what a test client shows as its context)."""
        context = context or {}
        if self._accepted is not None:
            context = {k: v for k, v in context.items() if k in self._accepted}
        return _call_arguments(self.function, (), context)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __traceback_hide__ = __tracebackhide__ = True
        try:
            return self.function(*args, **kwargs)
        except Exception as exc:
            from ptl_wsgi.tracebacks import without_internal_frames

            raise without_internal_frames(exc)  # noqa: B904 (the same exception)

    def __repr__(self) -> str:
        return f"<Template {self.name!r} from {self.filename}>"


class Loader:
    """Finds, compiles, caches and reloads the templates under *search_path*.

    With ``auto_reload`` on, every lookup checks the files of the modules
    already loaded from these directories and reloads them all when one has
    changed (so an edit to an imported layout is picked up too); with it off,
    a cached template costs one dict lookup and no ``stat()``.

    A reload never replaces a good template with a broken one: a file caught
    half-written (an editor saving in place) or saved with an error keeps its
    last good version, with a warning on the ``ptl_wsgi.loader`` logger, until
    it loads again.  A template that never loaded raises the error.
    """

    def __init__(self, search_path: Iterable[str | os.PathLike[str]], auto_reload: bool = False):
        self.search_path = [os.path.realpath(os.fspath(p)) for p in search_path]
        self.auto_reload = auto_reload
        self.package = f"_ptl_templates_{next(_counter)}"
        self._templates: dict[str, Template] = {}
        self._mtimes: dict[str, tuple[int, int] | None] = {}
        # The last version of each template and module that loaded, for a reload that fails.
        self._last_good: dict[str, Template] = {}
        self._last_good_modules: dict[str, ModuleType] = {}
        self._kept_modules: dict[str, ModuleType] = {}
        self._lock = RLock()
        # When the templates of the loaded modules were last made to record
        # (Loader.recording): the size of sys.modules and the purge count then.  Modules
        # come and go with imports and purges, so the scan (of sys.modules) is skipped
        # while neither changed.
        self._recorded_at: tuple[int, int] | None = None
        self._purges = 0
        self._install_package()

    def _install_package(self) -> None:
        from ptl_wsgi.importer import install_for

        # For this package alone: templates import each other, the process's imports stay.
        install_for(self.package)
        spec = ModuleSpec(self.package, None, is_package=True)
        spec.submodule_search_locations = self.search_path
        package = module_from_spec(spec)
        package.__dict__["__ptl_loader__"] = self  # for loader_for
        sys.modules[self.package] = package

    # -- lookups ------------------------------------------------------------------

    def get_template(self, name: str) -> Template:
        """The template called *name*; raises :class:`TemplateNotFound`."""
        if self.auto_reload:
            self._reload_if_changed()
        template = self._templates.get(name)
        if template is None:
            with self._lock:
                template = self._templates.get(name)
                if template is None:
                    template = self._load_or_keep(name)
                    self._templates[name] = template
        return template

    def render(self, name: str, context: Mapping[str, Any] | None = None) -> str | Iterator[Any]:
        """Render the template called *name* with *context*.

        An ``[html]`` template gives htmltext, a ``[plain]`` one a str, a stream an iterator.
        """
        __traceback_hide__ = __tracebackhide__ = True
        try:
            return self.get_template(name).render(context)
        except Exception as exc:
            from ptl_wsgi.tracebacks import without_internal_frames

            raise without_internal_frames(exc)  # noqa: B904 (the same exception)

    def module(self, path: str) -> ModuleType:
        """The module of template file *path* (``"blog/post.ptl"``), imported if need be."""
        if self.auto_reload:
            self._reload_if_changed()
        relative = self._check_relative(path, path)
        filename = self.find(path)
        if filename is None:
            raise TemplateNotFound(path, self.places(relative))
        with self._lock:
            kept = self._kept_modules.get(relative)
            if kept is not None:
                return kept
            try:
                return self._import(relative, filename)
            except Exception as exc:
                good = self._last_good_modules.get(self._module_name(relative))
                if good is None:
                    raise
                self._keep(path, exc)
                self._kept_modules[relative] = good
                return good

    def from_string(
        self, source: str, function: str = DEFAULT_FUNCTION, *, filename: str = "<string>"
    ) -> Template:
        """The template *function* of PTL *source*, as if it were a file in the search path.

        Its relative imports reach this loader's templates (``from .layout import
        page``); the same rules as for files say what is a template.  Nothing is
        cached: each call compiles *source*.  Raises SyntaxError for invalid PTL
        (located at *filename*) and :class:`TemplateNotFound` when *source*
        defines no such template.
        """
        from ptl_wsgi.importer import module_from_source

        module = module_from_source(source, f"{self.package}.{_STRING_MODULE}", filename=filename)
        reason = self._not_a_template(module, filename, function)
        if reason:
            raise TemplateNotFound(f"{filename}:{function}", reason=reason)
        return Template(filename, filename, _unrecorded(module.__dict__[function]), module)

    def reload(self) -> None:
        """Forget every loaded module: the next lookup reads the files again.

        As with ``auto_reload``, a template that then fails to load keeps its
        last good version.  Django's autoreloader calls this (the engine's
        ``reset()``) when a ``.ptl`` file changes.
        """
        with self._lock:
            self._purge()

    def find(self, path: str) -> str | None:
        """The file that the template file name *path* refers to, or None."""
        relative = self._check_relative(path, path)
        for place in self.places(relative):
            if os.path.isfile(place):
                return place
        return None

    def places(self, relative: str) -> list[str]:
        """Every file that *relative* could be, in search order."""
        return [os.path.join(directory, relative) for directory in self.search_path]

    def list_templates(self) -> list[str]:
        """Every template file name under the search path (first occurrence wins)."""
        seen: dict[str, None] = {}
        for directory in self.search_path:
            for root, _dirs, files in os.walk(directory):
                for file in sorted(files):
                    if file.endswith(_SUFFIXES) and file != "__init__.py":
                        rel = os.path.relpath(os.path.join(root, file), directory)
                        seen.setdefault(rel.replace(os.sep, "/"), None)
        return sorted(seen)

    def recording(self, calls: list[Call]) -> setting:
        """A context manager: while it is open, each call of one of this loader's templates
        in this context is appended to *calls* as ``(name, function, arguments)``.

        For Django's ``template_rendered`` signal (the test client's ``response.templates``,
        debug toolbars).  No profile or trace hook: the loader knows its templates, and the
        first recording puts a recording function in their place in the namespaces of its
        modules (a test process's, which records; other processes never pay for it).  A
        template is recorded when called by a name a module binds (``page(...)``,
        ``layout.page(...)``) and its module was loaded before the block opened; the
        top template a :class:`Template` calls is the caller's to record
        (:meth:`Template.call_arguments`).
        """
        self._record_templates()
        return setting(_recorded_calls, calls)

    def close(self) -> None:
        """Forget this loader's modules (they stay alive while templates are in use)."""
        from ptl_wsgi.importer import uninstall_for

        with self._lock:
            self._purge()
            self._last_good.clear()
            self._last_good_modules.clear()
            sys.modules.pop(self.package, None)
            uninstall_for(self.package)

    # -- internals ----------------------------------------------------------------

    def _check_relative(self, name: str, path: str) -> str:
        parts = path.replace("\\", "/").split("/")
        if (
            not path.endswith(_SUFFIXES)
            or os.path.isabs(path)
            or any(part in ("", ".", "..") for part in parts)
            or parts[-1] == "__init__.py"
        ):
            raise TemplateNotFound(
                name,
                reason="a template name is a relative path ending in .ptl or .py, "
                "such as 'blog/post.ptl' or 'blog/post.py:sidebar'",
            )
        return os.path.join(*parts)

    def _load_or_keep(self, name: str) -> Template:
        """:meth:`_load`, or the last good version of *name* if its file still
        exists but no longer loads (the one reload policy of every integration)."""
        try:
            template = self._load(name)
        except Exception as exc:
            good = self._last_good.get(name)
            # Never loaded: nothing to keep.  Its file gone: a deliberate removal.
            if good is None or self.find(split_name(name)[0]) is None:
                raise
            self._keep(name, exc)
            return good
        self._last_good[name] = template
        return template

    def _keep(self, name: str, exc: Exception) -> None:
        """Say that *name* keeps its last good version because loading failed with *exc*."""
        # Watch every template file the failure went through, one that was never
        # loaded before included, so that fixing it is seen as a change.
        files = [exc.filename] if isinstance(exc, SyntaxError) and exc.filename else []
        tb = exc.__traceback__
        while tb is not None:
            files.append(tb.tb_frame.f_code.co_filename)
            tb = tb.tb_next
        for file in files:
            if file.endswith(_SUFFIX) and any(
                file.startswith(directory + os.sep) for directory in self.search_path
            ):
                self._mtimes.setdefault(file, _stat(file))
        import logging  # here: a process whose templates load never needs it

        logging.getLogger(__name__).warning(
            "%s does not load (%s); serving its last good version until it does",
            name,
            _describe_error(exc),
        )

    def _load(self, name: str) -> Template:
        path, function_name = split_name(name)
        relative = self._check_relative(name, path)
        filename = self.find(path)
        if filename is None:
            raise TemplateNotFound(name, self.places(relative))
        # Stamped before it is read, for the same reason as in _reload_if_changed.
        self._mtimes.setdefault(filename, _stat(filename))
        twin = _twin(filename)
        if twin is not None:
            # One module name for two files: which one an import finds would be luck.
            raise TemplateNotFound(
                name,
                [filename],
                reason=f"{path} and {os.path.basename(twin)} beside it are the same module: "
                "remove or rename one",
            )
        module = self._import(relative, filename)
        reason = self._not_a_template(module, path, function_name)
        if reason:
            raise TemplateNotFound(name, [filename], reason=reason)
        return Template(name, filename, _unrecorded(module.__dict__[function_name]), module)

    def _not_a_template(self, module: ModuleType, path: str, attr: str) -> str:
        """Why *attr* of *module* is not a public template defined there ("" if it is)."""
        if attr.startswith("_"):
            return f"no template {attr!r} in {path} (names starting with '_' are private)"
        # The module's own namespace: no module __getattr__, no attributes of its type.
        if attr not in module.__dict__:
            return f"no template {attr!r} in {path}"
        value = _unrecorded(module.__dict__[attr])
        origin = getattr(value, "__module__", None)
        if isinstance(value, ModuleType):
            return f"{attr!r} in {path} is a module, not a template"
        if isinstance(value, type):
            return f"{attr!r} in {path} is a class, not a template"
        if not callable(value):
            return f"{attr!r} in {path} is a {type(value).__name__}, not a template"
        if isinstance(origin, str) and origin != module.__name__:
            return f"{attr!r} in {path} is imported from {self._describe_module(origin)}"
        if getattr(value, "__ptl_template__", None) in ("html", "plain"):
            return ""
        if path.endswith(_PY_SUFFIX):
            # Plain Python: only what @template marks is a template, generators included.
            return (
                f"{attr!r} in {path} is not marked as a template: decorate it with "
                '@template("html") or @template("plain") from ptl_wsgi.py_templates'
            )
        # Imported only here, off the path of marked templates: inspect imports ast.
        import inspect

        # A generator defined here is a streamed template (see docs/flask.md): it
        # cannot be an [html] template, and nobody writes one by accident.
        if not inspect.isgeneratorfunction(value):
            if inspect.isfunction(value):
                return (
                    f"{attr!r} in {path} is an ordinary function: "
                    f"did you mean 'def {attr} [html] (...)'?"
                )
            return f"{attr!r} in {path} is a {type(value).__name__}, not a template"
        return ""

    def _record_templates(self) -> None:
        """Bind a recording function in place of each template of the loaded modules,
        wherever a module of this loader binds it (see :meth:`recording`)."""
        if self._recorded_at == (len(sys.modules), self._purges):
            return  # no module came or went: their templates record already
        with self._lock:
            recorded_at = (len(sys.modules), self._purges)
            modules = self._own_modules()
            recorders: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}
            for module in modules:
                path = self._describe_module(module.__name__)
                if not path.endswith(SUFFIXES):
                    continue
                namespace = module.__dict__
                # A function under its own name first, then under other names bound to it.
                attrs = sorted(namespace, key=lambda a: a != getattr(namespace[a], "__name__", a))
                for attr in attrs:
                    value = namespace[attr]
                    if (
                        isinstance(value, FunctionType)
                        and id(value) not in recorders
                        and not hasattr(value, "__ptl_recorded__")
                        and not self._not_a_template(module, path, attr)
                    ):
                        recorders[id(value)] = (value, _recorder(value, f"{path}:{attr}"))
            for module in modules:
                namespace = module.__dict__
                for attr, value in list(namespace.items()):
                    found = recorders.get(id(value))
                    if found is not None and found[0] is value:
                        namespace[attr] = found[1]
            self._recorded_at = recorded_at

    def _describe_module(self, module_name: str) -> str:
        """A template file's name for this loader's modules, else the module's name."""
        file = getattr(sys.modules.get(module_name), "__file__", None)
        if module_name.startswith(self.package + ".") and file:
            for directory in self.search_path:
                if file.startswith(directory + os.sep):
                    return os.path.relpath(file, directory).replace(os.sep, "/")
        return module_name

    def _import(self, relative: str, filename: str) -> ModuleType:
        """The module of *filename*, loaded from that very file under a name made from *relative*.

        Directories become packages and the file a module in them, so relative
        imports work; a part that is not an identifier (``jquery.min``) is
        escaped (:func:`_module_part`) rather than split at its dots.
        """
        from ptl_wsgi.importer import load_module_from_path

        *directories, file = relative.split(os.sep)
        parent_name = self.package
        parent = sys.modules[parent_name]
        for depth, directory in enumerate(directories, 1):
            part = _module_part(directory)
            name = f"{parent_name}.{part}"
            package = sys.modules.get(name)
            locations = [os.path.join(root, *directories[:depth]) for root in self.search_path]
            if package is None:
                spec = ModuleSpec(name, None, is_package=True)
                spec.submodule_search_locations = locations
                package = module_from_spec(spec)
                # A file of the directory's name (partials.ptl beside partials/) is that
                # package's code, as a module's file beats a directory in Python's imports:
                # loaded now, so every module sees one package holding both.
                twin = self.find("/".join(directories[:depth]) + _SUFFIX)
                if twin is None:
                    sys.modules[name] = package
                else:
                    package = load_module_from_path(twin, name, into=package)
                setattr(parent, part, package)
            elif not hasattr(package, "__path__"):  # that file, loaded first: a package now
                package.__path__ = locations
                assert package.__spec__ is not None  # (load_module_from_path gave it one)
                package.__spec__.submodule_search_locations = locations
            parent_name, parent = name, package
        part = _module_part(file[: file.rindex(".")])
        name = f"{parent_name}.{part}"
        module = sys.modules.get(name)
        if module is not None and not _same_file(getattr(module, "__file__", None), filename):
            # x.ptl in one search directory, x.py in another: one module name, two files.
            raise TemplateNotFound(
                relative.replace(os.sep, "/"),
                [filename],
                reason=f"its module is already loaded from {module.__file__}: "
                "a .ptl and a .py file of the same name cannot both be templates",
            )
        try:
            if module is None:
                module = load_module_from_path(filename, name)
                setattr(parent, part, module)
        finally:
            # Even on failure: the modules it imported before failing are watched too.
            self._record_files()
        return module

    def _module_name(self, relative: str) -> str:
        """The module name :meth:`_import` gives the file *relative*."""
        *directories, file = relative.split(os.sep)
        parts = [_module_part(part) for part in directories]
        return ".".join([self.package, *parts, _module_part(file[: file.rindex(".")])])

    def _own_modules(self) -> list[ModuleType]:
        prefix = self.package + "."
        return [
            module
            for name, module in list(sys.modules.items())
            if name.startswith(prefix) and getattr(module, "__file__", None)
        ]

    def _record_files(self) -> None:
        for module in self._own_modules():
            if module.__file__ is not None:  # (_own_modules gives only modules with one)
                self._mtimes.setdefault(module.__file__, _stat(module.__file__))

    def _reload_if_changed(self) -> None:
        if all(_stat(file) == stamp for file, stamp in list(self._mtimes.items())):
            return
        with self._lock:
            # Again under the lock: another thread may have reloaded meanwhile.
            stamps = {file: _stat(file) for file in self._mtimes}
            if stamps != self._mtimes:
                self._purge()
                # Taken before the files are read again, so an edit made during the
                # re-import shows up as a change at the next check instead of being lost.
                self._mtimes = stamps

    def _purge(self) -> None:
        self._purges += 1
        prefix = self.package + "."
        for name in [n for n in sys.modules if n.startswith(prefix)]:
            module = sys.modules.pop(name)
            if getattr(module, "__file__", None):
                self._last_good_modules[name] = module
        self._templates.clear()
        self._kept_modules.clear()
        self._mtimes.clear()
        import importlib  # here: a one-shot process never purges

        importlib.invalidate_caches()


def _recorder(function: FunctionType, name: str) -> Callable[..., Any]:
    """*function*, called through a function that records each call in a recording
    context (:meth:`Loader.recording`); it looks like *function* to the loader and tools."""

    def recorded(*args: Any, **kwargs: Any) -> Any:
        __traceback_hide__ = __tracebackhide__ = True
        calls = _recorded_calls.get()
        if calls is not None:
            calls.append((name, function, _call_arguments(function, args, kwargs)))
        return function(*args, **kwargs)

    recorded.__dict__.update(function.__dict__)
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(recorded, attribute, getattr(function, attribute))
    recorded.__wrapped__ = function  # type: ignore[attr-defined]
    recorded.__ptl_recorded__ = function  # type: ignore[attr-defined]
    return recorded


def _unrecorded(value: Any) -> Any:
    """The template function itself, if *value* is its recorder (:func:`_recorder`)."""
    return getattr(value, "__ptl_recorded__", value) if isinstance(value, FunctionType) else value


def _call_arguments(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """*function*'s parameters bound to *args* and *kwargs*, defaults included ({} if
    they do not fit: the call itself raises)."""
    signature = getattr(function, "_ptl_signature", None)
    if signature is None:
        import inspect  # here: only recording (tests) needs it

        signature = inspect.signature(function)
        # Kept on the function: computed once per template, gone with its module.
        function._ptl_signature = signature  # type: ignore[attr-defined]
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {}
    bound.apply_defaults()
    return dict(bound.arguments)


# inspect.CO_VARKEYWORDS, a constant of CPython's code objects.
_CO_VARKEYWORDS = 0x08


def _keyword_parameters(function: Callable[..., Any]) -> tuple[set[str] | None, tuple[str, ...]]:
    """The names *function* takes by keyword (None: any, it has ``**kwargs``) and those required.

    Read from the code object for a plain function, as ``inspect.signature``
    would report them; anything else (wrapped, a ``__signature__``, a callable
    object) goes through ``inspect``, imported only then because it imports ast.
    """
    if (
        type(function) is FunctionType
        and not hasattr(function, "__wrapped__")
        and not hasattr(function, "__signature__")
    ):
        code = function.__code__
        first, end = code.co_posonlyargcount, code.co_argcount
        positional = code.co_varnames[first:end]
        keyword_only = code.co_varnames[end : end + code.co_kwonlyargcount]
        first_default = end - len(function.__defaults__ or ())
        kw_defaults = function.__kwdefaults__ or {}
        required = [name for i, name in enumerate(positional, first) if i < first_default]
        required += [name for name in keyword_only if name not in kw_defaults]
        if code.co_flags & _CO_VARKEYWORDS:
            return None, tuple(required)
        return {*positional, *keyword_only}, tuple(required)

    import inspect

    accepted: set[str] | None = set()
    required = []
    for param in inspect.signature(function).parameters.values():
        if param.kind is param.VAR_KEYWORD:
            accepted = None
        elif param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            if accepted is not None:
                accepted.add(param.name)
            if param.default is param.empty:
                required.append(param.name)
    return accepted, tuple(required)


def _module_part(part: str) -> str:
    """*part* of a file's path as one component of a module name, never containing a dot.

    Identifiers stay as they are, so relative imports between templates find
    the same modules.  Anything else becomes ``-`` followed by the part with
    each character outside ``[A-Za-z0-9_]`` written as ``-<hex>-``: no
    identifier starts with ``-``, and the escaping is reversible, so two files
    never share a module.
    """
    if part.isidentifier():
        return part
    return "-" + "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else f"-{ord(c):x}-" for c in part
    )


def _describe_error(exc: Exception) -> str:
    """*exc* in one line; a syntax error as ``file:line:col: message``."""
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}:{exc.lineno}:{exc.offset}: {exc.msg}"
    return f"{type(exc).__name__}: {exc}"


def _twin(filename: str) -> str | None:
    """The file beside *filename* that would be the same module (x.py for x.ptl), if any."""
    stem, suffix = os.path.splitext(filename)
    other = stem + (_PY_SUFFIX if suffix == _SUFFIX else _SUFFIX)
    return other if os.path.isfile(other) else None


def _same_file(a: str | None, b: str) -> bool:
    return a is not None and os.path.realpath(a) == os.path.realpath(b)


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
