"""PTL templates in Flask: ``PTL(app)``, then Flask's own ``render_template``.

With ``PTL(app)``, Flask's :func:`flask.render_template` and
:func:`flask.stream_template` render ``.ptl`` names through ptl_wsgi, beside
Jinja2 templates::

    from flask import Flask, render_template
    from ptl_wsgi.contrib.flask import PTL

    app = Flask(__name__)
    PTL(app)                      # or PTL().init_app(app) in a factory

    @app.get("/")
    def index():
        return render_template("index.ptl", posts=load_posts())

The seam is ``app.jinja_env``, which all of Flask's render functions go
through: its loader is wrapped so that a ``.ptl`` name (``"dir/file.ptl"``,
``"dir/file.ptl:function"``) loads a :class:`PTLTemplate`, a
:class:`jinja2.Template` whose rendering calls the PTL template and sends its
output through :mod:`ptl_wsgi.output`.  Flask does the rest as for Jinja2:
context processors, globals, both signals, streaming, lists of names.  Jinja2
never sees a ``.ptl`` file's source: ``{% include %}`` of a ``.ptl`` name
renders it, ``{% import %}`` gives its functions, ``{% extends %}`` is an error.

- Templates are looked for in the app's ``template_folder``, then in every
  blueprint's, in registration order, then in ``PTL_SEARCH_PATH``.
- Auto-reload follows ``PTL_AUTO_RELOAD`` if set, else ``TEMPLATES_AUTO_RELOAD``,
  else ``app.debug``.
- The context is the keyword arguments, Flask's context processors (app and
  blueprint: ``request``, ``g``, ...) and its template globals (``url_for``,
  ``get_flashed_messages``, ``config``, ``session``, ...); a template receives
  the keys it declares as parameters, or all of them with ``**kwargs``.
- With ``PTL_CSP = True``, every response gets a ``Content-Security-Policy``
  naming a fresh per-request nonce (``PTL_CSP_DIRECTIVES`` adds directives,
  ``PTL_CSP_HASHES`` hashes of static inline scripts), which every
  ``<script>``, ``<style>`` and stylesheet ``<link>`` of a template's literals
  carries, and which templates receive as ``csp_nonce``.
"""

from __future__ import annotations

import functools
import os
import threading
import types
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from typing import Any

import flask
import jinja2
from flask import Flask, Response, current_app, has_request_context, request
from flask.templating import DispatchingJinjaLoader
from jinja2.defaults import DEFAULT_NAMESPACE
from jinja2.runtime import Context

from ptl_wsgi import loader as _loader
from ptl_wsgi import output
from ptl_wsgi.csp import (
    CSP_NONCE_KEY,
    HEADER,
    RequestNonce,
    content_security_policy,
    in_nonce_scope,
)
from ptl_wsgi.html import htmltext
from ptl_wsgi.tracebacks import entry_point, without_internal_frames

__all__ = [
    "PTL",
    "PTLTemplate",
    "TemplateNotFound",
    "TemplatesNotFound",
    "get_loader",
    "render_template",
    "render_template_string",
    "render_text",
    "stream_template",
    "stream_template_string",
]

_STRING_NAME = "<string>"


# (jinja2's ``name`` may be Undefined or None; ours is always the str asked for.)
class TemplateNotFound(  # type: ignore[misc]
    _loader.TemplateNotFound, jinja2.TemplateNotFound
):
    """A missing template, also a :class:`jinja2.TemplateNotFound`; ``tried`` lists where."""

    def __init__(self, name: str, tried: Iterable[str] = (), reason: str = "") -> None:
        super().__init__(name, tried, reason)
        self.templates = [name]  # jinja2's __init__, reached via super(), set it to the message


class TemplatesNotFound(TemplateNotFound, jinja2.TemplatesNotFound):  # type: ignore[misc]
    """None of a list of names exists; ``templates`` has every name, ``tried`` every place."""

    def __init__(self, names: Sequence[str], tried: Iterable[str] = ()) -> None:
        names = [str(name) for name in names]
        tried = list(tried)
        super().__init__(names[-1], tried)
        message = "none of the templates " + ", ".join(map(repr, names)) + " was found"
        if tried:
            message += "; looked in:\n" + "\n".join(f"  {place}" for place in tried)
        # Set last: the base classes' __init__ methods each set their own version.
        self.args = (message,)
        self.message = message
        self.templates = [*names]


def _is_ptl(name: Any) -> bool:
    # Any case: "x.PTL" is no PTL name (the loader refuses it), but on a case-insensitive
    # file system Jinja2 would open x.ptl for it.  A .py file is a template module too:
    # Jinja2 must never render Python source as its own.
    return isinstance(name, str) and _loader.split_name(name)[0].lower().endswith(_loader.SUFFIXES)


def _is_ptl_file(filename: str) -> bool:
    """Whether *filename* is a .ptl or .py file, whatever name (a link, a case) reached it."""
    return os.path.realpath(filename).rstrip(". ").lower().endswith(_loader.SUFFIXES)


class PTL:
    """The Flask extension; one instance may serve several apps (``init_app``)."""

    def __init__(self, app: Flask | None = None) -> None:
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Register PTL on *app*: ``PTL_*`` config defaults, ``app.extensions["ptl"]``,
        ``.ptl`` names in ``app.jinja_env``, the CSP request hooks (idle unless
        ``PTL_CSP`` is true) and Flask's CSRF policy for forms."""
        app.config.setdefault("PTL_AUTO_RELOAD", None)
        app.config.setdefault("PTL_SEARCH_PATH", [])
        app.config.setdefault("PTL_CSP", False)
        app.config.setdefault("PTL_CSP_DIRECTIVES", {})
        app.config.setdefault("PTL_CSP_HASHES", ())
        app.extensions["ptl"] = _AppState(app)
        # Forms made in a request get Flask's CSRF policy whatever they are given (None
        # for an empty form, say), not only flask.request.
        from ptl_wsgi.contrib.forms_flask import adapter
        from ptl_wsgi.forms.adapters import register

        register(adapter)
        _install_jinja(app)
        # First of the app's hooks, so that one answering early (a login redirect) has a nonce.
        app.before_request_funcs.setdefault(None, []).insert(0, _csp_begin)
        app.before_request_funcs[None].insert(0, _ensure_jinja)
        app.after_request(_csp_header)
        app.teardown_request(_csp_end)
        app.context_processor(_csp_context)


class _AppState:
    """One app's loader, built at first use so that blueprints registered later count."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self._loader: _loader.Loader | None = None
        self._lock = threading.Lock()

    @property
    def loader(self) -> _loader.Loader:
        if self._loader is None:
            with self._lock:
                if self._loader is None:
                    self._loader = _loader.Loader([folder for folder, _ in _folders(self.app)])
        return self._loader


def _folders(app: Flask) -> list[tuple[str, str]]:
    """The search path, each folder with its owner for the explain log (the first owner wins)."""
    folders: dict[str, str] = {}
    for scaffold in (app, *app.iter_blueprints()):
        if scaffold.template_folder is not None:
            folder = os.path.join(scaffold.root_path, scaffold.template_folder)
            if isinstance(scaffold, Flask):
                owner = f"application {scaffold.import_name!r}"
            else:
                owner = f"blueprint {scaffold.name!r} ({scaffold.import_name})"
            folders.setdefault(folder, owner)
    for folder in app.config["PTL_SEARCH_PATH"]:
        folders.setdefault(os.path.join(app.root_path, folder), "PTL_SEARCH_PATH")
    return list(folders.items())


def _auto_reload(app: Flask) -> bool:
    for key in ("PTL_AUTO_RELOAD", "TEMPLATES_AUTO_RELOAD"):
        if app.config.get(key) is not None:
            return bool(app.config[key])
    return app.debug


def _app(app: Flask | None = None) -> Flask:
    if app is None:
        # The proxy's object (current_app is typed as the Flask it stands for).
        found: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
        app = found
    if "ptl" not in app.extensions:
        raise RuntimeError("PTL is not set up on this app; call PTL(app) first")
    return app


def get_loader(app: Flask | None = None) -> _loader.Loader:
    """The loader of *app* (default: the current app), e.g. for ``loader.module(path)``."""
    app = _app(app)
    state: _AppState = app.extensions["ptl"]
    loader = state.loader
    loader.auto_reload = _auto_reload(app)
    return loader


def _ptl_template(app: Flask, name: str) -> _loader.Template:
    try:
        return get_loader(app).get_template(name)
    except TemplateNotFound:
        raise
    except _loader.TemplateNotFound as exc:
        raise TemplateNotFound(exc.name, exc.tried, exc.reason) from None


# -- the seam: app.jinja_env loads .ptl names as PTLTemplate ----------------------------------


class PTLTemplate(jinja2.Template):
    """A PTL template as Jinja2 and Flask see it: what ``app.jinja_env`` loads for a
    ``.ptl`` name, and what the signals carry as ``template``.

    ``name`` is the name it was loaded by (None for a template from a string, as
    in Jinja2), ``filename`` its file.  :meth:`render` returns ``htmltext``,
    :meth:`generate` yields ``htmltext`` chunks: output that is not markup is
    escaped (:func:`ptl_wsgi.output.chunks`).
    """

    _fixed: _loader.Template | None  # a template from a string, which no loader knows
    _fixed_module: types.ModuleType | None
    _as_text: bool

    @classmethod
    def _create(
        cls,
        environment: jinja2.Environment,
        name: str | None,
        filename: str,
        globals: MutableMapping[str, Any],
        fixed: tuple[_loader.Template, types.ModuleType] | None = None,
    ) -> PTLTemplate:
        # As Jinja2's own Template._from_namespace: Template.__new__ compiles Jinja2 source.
        template: PTLTemplate = object.__new__(cls)
        template.environment = environment
        template.globals = globals
        template.name = name
        template.filename = filename
        template.blocks = {}
        template._module = None
        template._debug_info = ""
        template._uptodate = None  # always current: the PTL loader reloads by itself
        template._fixed, template._fixed_module = fixed if fixed else (None, None)
        template._as_text = False
        return template

    @property
    def _app(self) -> Flask:
        return self.environment.app  # type: ignore[attr-defined,no-any-return]

    def _template(self) -> _loader.Template:
        # Looked up at each render (one dict lookup), so that auto-reload applies.
        if self._fixed is not None:
            return self._fixed
        assert self.name is not None
        return _ptl_template(self._app, self.name)

    def _call(self, context: dict[str, Any]) -> Any:
        """Run the template with Flask's globals (not Jinja2's own helpers) under *context*."""
        values = {**self.globals, **context}
        values = {k: v for k, v in values.items() if DEFAULT_NAMESPACE.get(k) is not v}
        return self._template().render(values)

    @entry_point
    def render(self, *args: Any, **kwargs: Any) -> Any:
        """The output as one ``htmltext`` (as raw ``str`` for :func:`render_text`)."""
        result = self._call(dict(*args, **kwargs))
        if self._as_text:
            return output.text(result)
        return htmltext("").join(output.chunks(result))

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """The output as ``htmltext`` chunks, as a generator template yields them.

        Run where Flask's ``stream_template`` iterates, after the request's
        teardown: the request's CSP nonce is made current for each step.
        """
        context = dict(*args, **kwargs)
        produced = self._produce(context)
        nonce = request.environ.get(CSP_NONCE_KEY) if has_request_context() else None
        return produced if nonce is None else iter(in_nonce_scope(produced, nonce))

    def _produce(self, context: dict[str, Any]) -> Iterator[Any]:
        # Where the server iterates a stream: the entry point into its templates.
        __traceback_hide__ = __tracebackhide__ = True
        try:
            if self._as_text:
                yield output.text(self._call(context))
            else:
                yield from output.chunks(self._call(context))
        except Exception as exc:
            raise without_internal_frames(exc)  # noqa: B904 (the same exception)

    def root_render_func(self, context: Context) -> Iterator[htmltext]:
        """Jinja2's entry for ``{% include %}``, and for ``{% extends %}``, which is refused."""
        if context.name != self.name:
            # An include renders in a context of this template's own; extends in the child's.
            raise jinja2.TemplateRuntimeError(
                f"a Jinja2 template cannot extend the PTL template {self.name!r}; "
                "include it, or call its functions, instead"
            )
        yield from output.chunks(self._call(context.get_all()))

    def make_module(
        self,
        vars: dict[str, Any] | None = None,
        shared: bool = False,
        locals: Any = None,
    ) -> Any:
        """What ``{% import %}`` binds: the ``.ptl`` module's functions."""
        return _PTLModule(self, dict(vars or {}))

    def _get_default_module(self, ctx: Context | None = None) -> Any:
        return _PTLModule(self, {})

    def _text_version(self) -> PTLTemplate:
        twin: PTLTemplate = object.__new__(type(self))  # not copy.copy: see _create
        twin.__dict__.update(self.__dict__)
        twin._as_text = True
        return twin

    def __repr__(self) -> str:
        return f"<PTLTemplate {self.name!r} from {self.filename}>"


class _PTLModule:
    """A ``.ptl`` file bound by ``{% import %}`` (or ``get_template_attribute``):
    its public functions as attributes; ``_body_stream`` serves
    ``{% include ... without context %}``."""

    def __init__(self, template: PTLTemplate, context: dict[str, Any]) -> None:
        self._template = template
        self._context = context
        self.__name__ = template.name

    @property
    def _body_stream(self) -> list[htmltext]:
        return list(output.chunks(self._template._call(self._context)))

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # private, as Jinja2's macros starting with _
            raise AttributeError(attribute)
        template = self._template
        if template._fixed_module is not None:
            module = template._fixed_module
        else:
            assert template.name is not None
            path, _function = _loader.split_name(template.name)
            if path != template.name:
                raise jinja2.TemplateRuntimeError(
                    f"import {path!r}, the file, not {template.name!r}, one of its templates"
                )
            module = get_loader(template._app).module(path)
        return getattr(module, attribute)


class _JinjaLoader(jinja2.BaseLoader):
    """The environment's loader: ``.ptl`` names load a :class:`PTLTemplate`, others go to
    *inner* (Flask's own loader); a ``.ptl`` file never goes out as Jinja2 source."""

    def __init__(self, inner: jinja2.BaseLoader | None) -> None:
        self.inner = inner

    @property
    def has_source_access(self) -> bool:  # type: ignore[override]
        return self.inner is not None and self.inner.has_source_access

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, Any]:
        if _is_ptl(template):
            raise TemplateNotFound(
                template, reason="a PTL template has no Jinja2 source; render it instead"
            )
        if self.inner is None:
            raise jinja2.TemplateNotFound(template)
        source, filename, uptodate = self.inner.get_source(environment, template)
        if filename is not None and _is_ptl_file(filename):
            raise TemplateNotFound(
                template, [filename], reason=f"{filename} is a PTL template, not Jinja2 source"
            )
        return source, filename, uptodate

    def load(
        self,
        environment: jinja2.Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> jinja2.Template:
        if not _is_ptl(name):
            if self.inner is None:
                raise jinja2.TemplateNotFound(name)
            if type(self.inner).load is not jinja2.BaseLoader.load:
                return self.inner.load(environment, name, globals)  # e.g. precompiled modules
            # Jinja2's own load, through the checked get_source above.
            return super().load(environment, name, globals)
        app: Flask = environment.app  # type: ignore[attr-defined]
        if app.config.get("EXPLAIN_TEMPLATE_LOADING"):
            _explain(app, name)
        try:
            filename = _ptl_template(app, name).filename
        except TemplateNotFound as exc:
            # {% from "partials.ptl" import card %} needs the module, not its render
            # template: a file without one still loads; rendering it raises this error.
            # (A file found but not a template: a reason, and that one file tried.)
            if ":" in name or not exc.reason or len(exc.tried) != 1:
                raise
            filename = exc.tried[0]
        return PTLTemplate._create(environment, name, filename, globals or {})

    def list_templates(self) -> list[str]:
        return self.inner.list_templates() if self.inner is not None else []


class _PTLEnvironment(jinja2.Environment):
    """Mixed into the app's Jinja2 environment class: whatever loader is set (by Flask,
    by a custom ``create_jinja_environment``, later by hand) is wrapped in
    :class:`_JinjaLoader`; lists of names report every place tried."""

    @property
    def loader(self) -> _JinjaLoader:
        return self.__dict__["_ptl_loader"]  # type: ignore[no-any-return]

    @loader.setter
    def loader(self, loader: jinja2.BaseLoader | None) -> None:
        if not isinstance(loader, _JinjaLoader):
            loader = _JinjaLoader(loader)
        self.__dict__["_ptl_loader"] = loader

    def select_template(
        self,
        names: Iterable[str | jinja2.Template],
        parent: str | None = None,
        globals: MutableMapping[str, Any] | None = None,
    ) -> jinja2.Template:
        """The first of *names* that exists; else :class:`TemplatesNotFound` naming each
        name and each place looked in."""
        if isinstance(names, jinja2.Undefined) or not names:
            return super().select_template(names, parent, globals)  # Jinja2's own errors
        names = list(names)
        tried: list[str] = []
        for name in names:
            try:
                return self.get_template(name, parent, globals)
            except jinja2.UndefinedError:
                continue
            except jinja2.TemplateNotFound as exc:
                tried += getattr(exc, "tried", None) or _jinja_places(self, str(name))
        raise TemplatesNotFound([str(name) for name in names], tried)


def _jinja_places(environment: jinja2.Environment, name: str) -> list[str]:
    """Where Flask's own loader looked for Jinja2 template *name* (its folder loaders)."""
    inner = environment.loader.inner if isinstance(environment.loader, _JinjaLoader) else None
    if not isinstance(inner, DispatchingJinjaLoader):
        return []
    places: list[str] = []
    for _scaffold, loader in inner._iter_loaders(name):
        if isinstance(loader, jinja2.FileSystemLoader):
            places += [os.path.join(folder, *name.split("/")) for folder in loader.searchpath]
    return places


@functools.cache
def _environment_class(base: type[jinja2.Environment]) -> type[jinja2.Environment]:
    if issubclass(base, _PTLEnvironment):
        return base
    return type(f"PTL{base.__name__}", (_PTLEnvironment, base), {})


def _install_jinja(app: Flask, create: bool = False) -> None:
    """Make ``app.jinja_env`` load ``.ptl`` names: now if it exists (or *create*), else when
    Flask makes it, at first use, so that config set after ``PTL(app)`` still counts."""
    if not create and "jinja_env" not in app.__dict__:  # a cached_property, not made yet
        # (A subclass of Flask's environment class; functools.cache's wrapper loses that.)
        app.jinja_environment = _environment_class(  # type: ignore[assignment]
            app.jinja_environment
        )
        return
    env = app.jinja_env
    if isinstance(env, _PTLEnvironment):
        return
    with _install_lock:  # the first requests of a threaded server may all get here
        if isinstance(env, _PTLEnvironment):
            return
        # In this order, a thread rendering meanwhile sees a working loader at each step.
        env.__dict__["_ptl_loader"] = _JinjaLoader(env.__dict__.get("loader"))
        # Its loader property reads _ptl_loader.  (A subclass of env's class; mypy takes a
        # class for unhashable when its instances define __eq__, and functools.cache for
        # a dict of instances.)
        env.__class__ = _environment_class(type(env))  # type: ignore[assignment,arg-type]
        env.__dict__.pop("loader", None)
        if env.cache is not None:
            env.cache.clear()  # nothing loaded before may stand for a .ptl name


_install_lock = threading.Lock()


def _ensure_jinja() -> None:
    # A create_jinja_environment that builds its environment without app.jinja_environment
    # is caught here, before any view renders.
    _install_jinja(current_app._get_current_object(), create=True)  # type: ignore[attr-defined]


def _explain(app: Flask, name: str) -> None:
    """Log where PTL looks for *name*, as Flask's ``EXPLAIN_TEMPLATE_LOADING`` does for
    Jinja2: each folder, in order, and whether the file is there."""
    lines = [f"Locating template {name!r}:"]
    path, _function = _loader.split_name(name)
    loader = get_loader(app)
    try:
        loader.find(path)  # checks that the name is well formed
    except _loader.TemplateNotFound as exc:
        app.logger.info("\n".join([*lines, f"Error: {exc.reason}"]))
        return
    owners = {os.path.realpath(folder): owner for folder, owner in _folders(app)}
    relative = os.path.join(*path.split("/"))
    found = 0
    for index, (folder, place) in enumerate(
        zip(loader.search_path, loader.places(relative), strict=True), start=1
    ):
        lines.append(f"{index:5}: trying PTL folder of {owners.get(folder, 'PTL_SEARCH_PATH')}")
        lines.append(f"       folder: {folder!r}")
        if os.path.isfile(place):
            found += 1
            lines.append(f"       -> found ({place!r})")
        else:
            lines.append("       -> no match")
    if found == 0:
        lines.append("Error: the template could not be found.")
    elif found > 1:
        lines.append("Warning: more than one folder has the template; the first one is used.")
    blueprint = request.blueprint if has_request_context() else None
    if blueprint is not None and found != 1:
        lines.append(
            f"  The template was looked up from an endpoint of the blueprint {blueprint!r}: "
            "put its templates in a subfolder named after it."
        )
    app.logger.info("\n".join(lines))


# -- rendering: Flask's own functions, and PTL source ----------------------------------------


@entry_point
def render_template(
    template_name_or_list: str | jinja2.Template | Sequence[str | jinja2.Template],
    /,
    **context: Any,
) -> Any:
    """Flask's :func:`flask.render_template`, after checking that ``PTL(app)`` was called.

    A ``.ptl`` name (``"dir/file.ptl"``, ``"dir/file.ptl:function"``) returns
    ``htmltext``, output that is not markup (a ``[plain]`` template's str)
    escaped; a list renders the first name that exists.
    """
    _app()
    return flask.render_template(template_name_or_list, **context)  # type: ignore[arg-type]


def stream_template(
    template_name_or_list: str | jinja2.Template | Sequence[str | jinja2.Template],
    /,
    **context: Any,
) -> Iterator[Any]:
    """Flask's :func:`flask.stream_template`, after checking that ``PTL(app)`` was called.

    A generator template (a plain ``def`` in a ``.ptl`` module that yields,
    say, the output of ``[html]`` templates) is sent chunk by chunk as it
    yields; any other template is sent as one chunk once it has run.
    """
    _app()
    return flask.stream_template(template_name_or_list, **context)  # type: ignore[arg-type]


def _from_string(app: Flask, source: str) -> PTLTemplate:
    """A template for PTL *source*'s ``render``; relative imports reach the app's templates."""
    try:
        template = get_loader(app).from_string(source, filename=_STRING_NAME)
    except TemplateNotFound:
        raise
    except _loader.TemplateNotFound as exc:
        raise TemplateNotFound(_STRING_NAME, reason=exc.reason) from None
    module = template.module
    assert module is not None
    env = app.jinja_env
    return PTLTemplate._create(env, None, _STRING_NAME, env.make_globals(None), (template, module))


@entry_point
def render_template_string(source: str, /, **context: Any) -> Any:
    """Render PTL *source* (its ``render`` template) as :func:`render_template` renders a
    file: context processors, globals, signals, escaping.  (Flask's own
    ``render_template_string`` renders Jinja2 source.)"""
    app = _app()
    return flask.render_template(_from_string(app, source), **context)


def stream_template_string(source: str, /, **context: Any) -> Iterator[Any]:
    """Stream PTL *source* (its ``render`` template) as :func:`stream_template` does."""
    app = _app()
    return flask.stream_template(_from_string(app, source), **context)


@entry_point
def render_text(
    name: str | Sequence[str],
    /,
    **context: Any,
) -> str:
    """Render template *name* (or the first of a list) as raw text: a plain ``str``
    with nothing escaped, for mail bodies and ``text/plain`` responses.

    Context processors, globals and signals are as for :func:`render_template`;
    the output is :func:`ptl_wsgi.output.text`, never fit for an HTML response.
    """
    app = _app()
    template = app.jinja_env.get_or_select_template(name)  # type: ignore[arg-type]
    if isinstance(template, PTLTemplate):
        template = template._text_version()
    return output.text(flask.render_template(template, **context))


# -- Content-Security-Policy nonce: one scope per request context -----------------------------

_STATE_ATTR = "_ptl_csp_state"


def _csp_on() -> bool:
    return has_request_context() and bool(current_app.config["PTL_CSP"])


def _request_nonce() -> str:
    """The request's nonce; the first call opens its scope, which teardown closes."""
    nonce: str | None = request.environ.get(CSP_NONCE_KEY)
    if nonce is None:
        state = RequestNonce(request.environ)
        setattr(request, _STATE_ATTR, state)
        nonce = state.open()
    return nonce


def _csp_begin() -> None:
    if _csp_on():
        _request_nonce()


def _csp_header(response: Response) -> Response:
    if _csp_on():
        config = current_app.config
        policy = content_security_policy(
            _request_nonce(), config["PTL_CSP_DIRECTIVES"], config["PTL_CSP_HASHES"]
        )
        response.headers.setdefault(HEADER, policy)
    return response


def _csp_end(exc: BaseException | None) -> None:
    # Teardown runs where Flask resets its own context variables: in wsgi_app,
    # where the scope was opened (Flask 3.1 runs it once more after a
    # stream_with_context stream, with no scope left to close), or, in Flask
    # 3.0, at the end of such a stream.
    state: RequestNonce | None = getattr(request, _STATE_ATTR, None)
    if state is not None:
        delattr(request, _STATE_ATTR)
        state.close()


def _csp_context() -> dict[str, str]:
    return {"csp_nonce": _request_nonce()} if _csp_on() else {}
