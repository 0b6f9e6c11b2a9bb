"""Template names to template callables: the one loader behind every integration.

A template name is a path relative to a search directory, optionally followed
by the name of a template function in that module::

    "blog/post.ptl"          # the module's template called ``render``
    "blog/post.ptl:sidebar"  # the module's template called ``sidebar``

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

from ptl_wsgi._iterate import InContext, setting
from ptl_wsgi.importer import ModuleSpec, module_from_spec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any


__all__ = [
    "DEFAULT_FUNCTION",
    "Loader",
    "Template",
    "TemplateArgumentError",
    "TemplateNotFound",
    "render_context",
    "split_name",
]

#: The template a name without ``:function`` refers to.
DEFAULT_FUNCTION = "render"
_SUFFIX = ".ptl"
_counter = itertools.count()

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_render_var: ContextVar[Mapping[str, Any]] = ContextVar("ptl_wsgi_render_context", default=_EMPTY)


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

    __slots__ = ("name", "filename", "function", "_accepted", "_required")

    def __init__(self, name: str, filename: str, function: Callable[..., Any]) -> None:
        self.name = name
        self.filename = filename
        self.function = function
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
    """

    def __init__(self, search_path: Iterable[str | os.PathLike[str]], auto_reload: bool = False):
        self.search_path = [os.path.realpath(os.fspath(p)) for p in search_path]
        self.auto_reload = auto_reload
        self.package = f"_ptl_templates_{next(_counter)}"
        self._templates: dict[str, Template] = {}
        self._mtimes: dict[str, tuple[int, int] | None] = {}
        self._lock = RLock()
        self._install_package()

    def _install_package(self) -> None:
        from ptl_wsgi.importer import install_for

        # For this package alone: templates import each other, the process's imports stay.
        install_for(self.package)
        spec = ModuleSpec(self.package, None, is_package=True)
        spec.submodule_search_locations = self.search_path
        package = module_from_spec(spec)
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
                    template = self._load(name)
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
            return self._import(relative, filename)

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
                    if file.endswith(_SUFFIX):
                        rel = os.path.relpath(os.path.join(root, file), directory)
                        seen.setdefault(rel.replace(os.sep, "/"), None)
        return sorted(seen)

    def close(self) -> None:
        """Forget this loader's modules (they stay alive while templates are in use)."""
        from ptl_wsgi.importer import uninstall_for

        with self._lock:
            self._purge()
            sys.modules.pop(self.package, None)
            uninstall_for(self.package)

    # -- internals ----------------------------------------------------------------

    def _check_relative(self, name: str, path: str) -> str:
        parts = path.replace("\\", "/").split("/")
        if (
            not path.endswith(_SUFFIX)
            or os.path.isabs(path)
            or any(part in ("", ".", "..") for part in parts)
        ):
            raise TemplateNotFound(
                name,
                reason="a template name is a relative path ending in .ptl, "
                "such as 'blog/post.ptl' or 'blog/post.ptl:sidebar'",
            )
        return os.path.join(*parts)

    def _load(self, name: str) -> Template:
        path, function_name = split_name(name)
        relative = self._check_relative(name, path)
        filename = self.find(path)
        if filename is None:
            raise TemplateNotFound(name, self.places(relative))
        # Stamped before it is read, for the same reason as in _reload_if_changed.
        self._mtimes.setdefault(filename, _stat(filename))
        module = self._import(relative, filename)
        reason = self._not_a_template(module, path, function_name)
        if reason:
            raise TemplateNotFound(name, [filename], reason=reason)
        return Template(name, filename, module.__dict__[function_name])

    def _not_a_template(self, module: ModuleType, path: str, attr: str) -> str:
        """Why *attr* of *module* is not a public template defined there ("" if it is)."""
        if attr.startswith("_"):
            return f"no template {attr!r} in {path} (names starting with '_' are private)"
        # The module's own namespace: no module __getattr__, no attributes of its type.
        if attr not in module.__dict__:
            return f"no template {attr!r} in {path}"
        value = module.__dict__[attr]
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
            if package is None:
                spec = ModuleSpec(name, None, is_package=True)
                spec.submodule_search_locations = [
                    os.path.join(root, *directories[:depth]) for root in self.search_path
                ]
                package = module_from_spec(spec)
                sys.modules[name] = package
                setattr(parent, part, package)
            parent_name, parent = name, package
        part = _module_part(file[: -len(_SUFFIX)])
        name = f"{parent_name}.{part}"
        module = sys.modules.get(name)
        if module is None:
            module = load_module_from_path(filename, name)
            setattr(parent, part, module)
        self._record_files()
        return module

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
        prefix = self.package + "."
        for name in [n for n in sys.modules if n.startswith(prefix)]:
            del sys.modules[name]
        self._templates.clear()
        self._mtimes.clear()
        import importlib  # here: a one-shot process never purges

        importlib.invalidate_caches()


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


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
