"""What ``PTL(app)`` for Flask and for Quart share: ``.ptl`` names in the app's Jinja2
environment, the request hooks of CSP nonces, and the header policy.

Quart is built on Flask's sans-IO ``App`` and its template functions follow
Flask's: each takes the app's Jinja2 environment (``app.jinja_env``), adds the
context processors, sends the signals and renders what
``get_or_select_template`` returned.  So one seam serves both: the
environment's loader is wrapped, a ``.ptl`` (or ``.py``) name loads a
:class:`PTLTemplate`, a :class:`jinja2.Template` whose rendering calls the PTL
template through :mod:`ptl_wsgi.output_policy`, and every other name goes to the
framework's own loader.  Flask calls ``render``/``generate``, Quart
``render_async``/``generate_async``; Jinja2's own ``{% include %}`` and
``{% import %}`` work in either mode.

What differs between the frameworks (their request and app proxies, where a
request keeps its CSP nonce, the form of the 400, where a response is final,
whether a hook is called or awaited) is a :class:`Framework` the extension module
passes in; docs/integrations.md lists the Jinja2 and Flask names this relies
on, and tests/integrations/test_flask_seam.py pins each of them.
"""

from __future__ import annotations

import functools
import os
import threading
import types
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    MutableMapping,
    Sequence,
)
from typing import Any

import jinja2
from flask.sansio.app import App
from flask.templating import DispatchingJinjaLoader
from jinja2.defaults import DEFAULT_NAMESPACE
from jinja2.runtime import Context

from ptl_wsgi import loader as _loader
from ptl_wsgi import output_policy
from ptl_wsgi.csp import (
    CSP_NONCE_KEY,
    RequestNonce,
    content_security_policy,
    in_nonce_scope,
    written,
)
from ptl_wsgi.csp import HEADER as CSP_HEADER
from ptl_wsgi.forms.adapters import register as register_forms_adapter
from ptl_wsgi.headers import HeaderError, as_header_error
from ptl_wsgi.html import htmltext
from ptl_wsgi.tracebacks import entry_point, without_internal_frames

__all__ = [
    "CSP_HEADER",
    "Extension",
    "Framework",
    "PTLTemplate",
    "TemplateNotFound",
    "TemplatesNotFound",
    "csp_header",
    "csp_value",
    "from_string",
    "get_loader",
    "set_up",
    "text_version",
]

STRING_NAME = "<string>"
#: ``app.extensions`` key of the extension's state.
EXTENSION = "ptl"


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


class Framework:
    """What differs between the frameworks sharing this core; each extension subclasses it.

    The request hooks and the header policy are written once, here, as plain
    functions: :meth:`hook` hands each to the framework in the form it calls
    (Flask as it is, Quart awaited in the request's task).
    """

    #: How errors name the framework ("Flask", "Quart").
    name = "Flask"

    def request(self) -> Any:
        """The current request object (not its proxy), or None outside a request."""
        raise NotImplementedError

    def store(self, request: Any) -> MutableMapping[str, Any]:
        """The mapping *request* was made from (WSGI environ, ASGI scope): its nonce's home."""
        raise NotImplementedError

    def current_app(self) -> App:
        """The app of the current request or app context."""
        raise NotImplementedError

    def refusal(self, exc: HeaderError, request: Any) -> Any:
        """The logged 400 that answers *request* when its response breaks the header policy."""
        raise NotImplementedError

    def forms_adapter(self) -> Any:
        """The forms adapter with the framework's request reading and CSRF policy."""
        raise NotImplementedError

    def guard(self, app: App) -> None:
        """Hold *app*'s responses to the header policy where every hook has run (the
        refusal: :meth:`refusal`), and give each the CSP header of :func:`csp_value`."""
        raise NotImplementedError

    def hook(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """*function* as the framework calls a request hook."""
        return function

    def returned(self, value: Any) -> Any:
        """*value* as the framework's ``handle_exception`` returns it."""
        return value

    def request_nonce(self) -> str | None:
        """The current request's CSP nonce, if a request with one is active.

        Read where a stream starts, which may be after the request's teardown
        closed the nonce's scope: so from the request object, not the context.
        """
        request = self.request()
        nonce = None if request is None else self.store(request).get(CSP_NONCE_KEY)
        return nonce if isinstance(nonce, str) else None

    def blueprint(self) -> str | None:
        """The current request's blueprint, for the ``EXPLAIN_TEMPLATE_LOADING`` log."""
        request = self.request()
        return None if request is None else request.blueprint


def is_ptl_name(name: Any) -> bool:
    """Whether *name* is PTL's: its file part ends in ``.ptl`` or ``.py``, in any case.

    ("x.PTL" is no PTL name, the loader refuses it, but on a case-insensitive file
    system Jinja2 would open x.ptl for it; and Jinja2 must never send Python source.)
    """
    return isinstance(name, str) and _loader.split_name(name)[0].lower().endswith(_loader.SUFFIXES)


def _is_ptl_file(filename: str) -> bool:
    """Whether *filename* is a .ptl or .py file, whatever name (a link, a case) reached it."""
    return os.path.realpath(filename).rstrip(". ").lower().endswith(_loader.SUFFIXES)


# -- one app's state --------------------------------------------------------------------------


class AppState:
    """One app's loader, built at first use so that blueprints registered later count."""

    def __init__(self, app: App, framework: Framework) -> None:
        self.app = app
        self.framework = framework
        self._loader: _loader.Loader | None = None
        self._lock = threading.Lock()

    @property
    def loader(self) -> _loader.Loader:
        if self._loader is None:
            with self._lock:
                if self._loader is None:
                    self._loader = _loader.Loader([folder for folder, _ in folders(self.app)])
        return self._loader


class Extension:
    """``PTL(app)`` or, in a factory, ``PTL().init_app(app)``; one instance may serve
    several apps.  Each framework's extension names its :class:`Framework`."""

    framework: Framework

    def __init__(self, app: App | None = None) -> None:
        if app is not None:
            self.init_app(app)

    def init_app(self, app: App) -> None:
        """Register PTL on *app*: ``PTL_*`` config defaults, ``app.extensions["ptl"]``,
        ``.ptl`` names in ``app.jinja_env``, the CSP request hooks (idle unless
        ``PTL_CSP`` is true), the header policy (:mod:`ptl_wsgi.headers`: a response
        header with a control character is a logged 400, whichever view or hook set
        it) and the framework's CSRF policy for forms."""
        set_up(app, self.framework)


def set_up(app: App, framework: Framework) -> AppState:
    """``PTL(app)``: ``PTL_*`` config defaults, ``app.extensions["ptl"]``, ``.ptl`` names in
    ``app.jinja_env`` (now if it exists, else when the app makes it), the request hooks,
    the header policy and the framework's CSRF policy for forms."""
    app.config.setdefault("PTL_AUTO_RELOAD", None)
    app.config.setdefault("PTL_SEARCH_PATH", [])
    app.config.setdefault("PTL_CSP", False)
    app.config.setdefault("PTL_CSP_DIRECTIVES", {})
    app.config.setdefault("PTL_CSP_HASHES", ())
    state = app.extensions[EXTENSION] = AppState(app, framework)
    install_jinja(app)
    # Forms made in a request get the framework's CSRF policy whatever they are given
    # (None for an empty form, say), not only its request.
    register_forms_adapter(framework.forms_adapter())
    # First of the app's hooks, so that one answering early (a login redirect) has a nonce.
    hook = framework.hook
    app.before_request_funcs.setdefault(None, []).insert(
        0, hook(functools.partial(_begin_request, framework))
    )
    app.teardown_request(hook(functools.partial(_end_request, framework)))
    app.context_processor(hook(functools.partial(_template_context, framework)))
    refuse_library_header_errors(app, framework)
    framework.guard(app)
    return state


def state_of(app: App, framework: Framework) -> AppState:
    """*app*'s state; RuntimeError if ``PTL(app)`` was not called on it."""
    state = app.extensions.get(EXTENSION)
    if not isinstance(state, AppState):
        raise RuntimeError(f"PTL is not set up on this app; call PTL(app) first ({framework.name})")
    return state


def folders(app: App) -> list[tuple[str, str]]:
    """The search path, each folder with its owner for the explain log (the first owner wins):
    the app's template folder, each blueprint's in registration order (as the framework's own
    Jinja2 loader searches), then ``PTL_SEARCH_PATH``."""
    found: dict[str, str] = {}
    for scaffold in (app, *app.iter_blueprints()):
        if scaffold.template_folder is not None:
            folder = os.path.join(scaffold.root_path, scaffold.template_folder)
            if isinstance(scaffold, App):
                owner = f"application {scaffold.import_name!r}"
            else:
                owner = f"blueprint {scaffold.name!r} ({scaffold.import_name})"
            found.setdefault(folder, owner)
    for folder in app.config["PTL_SEARCH_PATH"]:
        found.setdefault(os.path.join(app.root_path, folder), "PTL_SEARCH_PATH")
    return list(found.items())


def auto_reload(app: App) -> bool:
    """``PTL_AUTO_RELOAD`` if set, else ``TEMPLATES_AUTO_RELOAD``, else ``app.debug``."""
    for key in ("PTL_AUTO_RELOAD", "TEMPLATES_AUTO_RELOAD"):
        if app.config.get(key) is not None:
            return bool(app.config[key])
    return app.debug


def get_loader(app: App) -> _loader.Loader:
    """*app*'s loader, its auto-reload switch as the config says now."""
    state: AppState = app.extensions[EXTENSION]
    loader = state.loader
    loader.auto_reload = auto_reload(app)
    return loader


def ptl_template(app: App, name: str) -> _loader.Template:
    """The loader's template *name*; a missing one is also a Jinja2 ``TemplateNotFound``."""
    try:
        return get_loader(app).get_template(name)
    except TemplateNotFound:
        raise
    except _loader.TemplateNotFound as exc:
        raise TemplateNotFound(exc.name, exc.tried, exc.reason) from None


# -- the template Jinja2 and the framework see ------------------------------------------------


class PTLTemplate(jinja2.Template):
    """A PTL template as Jinja2 and the framework see it: what ``app.jinja_env`` loads for
    a ``.ptl`` name, and what the signals carry as ``template``.

    ``name`` is the name it was loaded by (None for a template from a string, as
    in Jinja2), ``filename`` its file.  :meth:`render` returns ``htmltext``,
    :meth:`generate` yields ``htmltext`` chunks (and ``render_async``,
    ``generate_async`` the same for Quart): output that is not markup is escaped
    (:func:`ptl_wsgi.output_policy.chunks`).
    """

    _app: App
    _fixed: _loader.Template | None  # a template from a string, which no loader knows
    _fixed_module: types.ModuleType | None
    _as_text: bool

    @classmethod
    def create(
        cls,
        environment: jinja2.Environment,
        app: App,
        name: str | None,
        filename: str,
        globals: MutableMapping[str, Any],
        fixed: tuple[_loader.Template, types.ModuleType] | None = None,
    ) -> PTLTemplate:
        """A template of *app*'s loader (or *fixed*, from a string), without Jinja2 source."""
        # Jinja2's public constructor of a template from a compiled module's namespace
        # (its ModuleLoader's): Template() itself would compile Jinja2 source.
        namespace: dict[str, Any] = {"name": name, "__file__": filename, "blocks": {}}
        namespace["root"] = None
        namespace["debug_info"] = ""
        template = cls.from_module_dict(environment, namespace, globals)
        assert isinstance(template, PTLTemplate)
        # What Jinja2's compiled {% include %} calls; always current, the loader reloads.
        template.root_render_func = template._included
        template._app = app
        template._fixed, template._fixed_module = fixed if fixed else (None, None)
        template._as_text = False
        return template

    def _template(self) -> _loader.Template:
        # Looked up at each render (one dict lookup), so that auto-reload applies.
        if self._fixed is not None:
            return self._fixed
        assert self.name is not None
        return ptl_template(self._app, self.name)

    def _call(self, context: dict[str, Any]) -> Any:
        """Run the template with the framework's globals (not Jinja2's own helpers)."""
        values = {**self.globals, **context}
        values = {k: v for k, v in values.items() if DEFAULT_NAMESPACE.get(k) is not v}
        return self._template().render(values)

    @entry_point
    def render(self, *args: Any, **kwargs: Any) -> Any:
        """The output as one ``htmltext`` (as raw ``str`` for ``render_text``)."""
        result = self._call(dict(*args, **kwargs))
        if self._as_text:
            return output_policy.text(result)
        return output_policy.joined(result)

    async def render_async(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`render` for an async environment (Quart's): PTL templates run at once."""
        __traceback_hide__ = __tracebackhide__ = True
        return self.render(*args, **kwargs)

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """The output as ``htmltext`` chunks, as a generator template yields them.

        Run where the framework iterates a stream, after the request's teardown:
        the request's CSP nonce is made current for each step.
        """
        context = dict(*args, **kwargs)
        produced = self._produce(context)
        nonce = self._app.extensions[EXTENSION].framework.request_nonce()
        return produced if nonce is None else iter(in_nonce_scope(produced, nonce))

    async def generate_async(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, object]:
        """:meth:`generate` for an async environment: each step runs in the event loop."""
        steps = self.generate(*args, **kwargs)
        try:
            for chunk in steps:
                yield chunk
        finally:
            close = getattr(steps, "close", None)
            if close is not None:
                close()

    def _produce(self, context: dict[str, Any]) -> Iterator[Any]:
        # Where the server iterates a stream: the entry point into its templates.
        __traceback_hide__ = __tracebackhide__ = True
        try:
            if self._as_text:
                yield output_policy.text(self._call(context))
            else:
                yield from output_policy.chunks(self._call(context))
        except Exception as exc:
            raise without_internal_frames(exc)  # noqa: B904 (the same exception)

    def _included(self, context: Context) -> Any:
        """Jinja2's entry for ``{% include %}`` (a generator, an async one in an async
        environment), and for ``{% extends %}``, which is refused."""
        if context.name != self.name:
            # An include renders in a context of this template's own; extends in the child's.
            raise jinja2.TemplateRuntimeError(
                f"a Jinja2 template cannot extend the PTL template {self.name!r}; "
                "include it, or call its functions, instead"
            )
        chunks = output_policy.chunks(self._call(context.get_all()))
        return _async_steps(chunks) if self.environment.is_async else chunks

    def make_module(
        self,
        vars: dict[str, Any] | None = None,
        shared: bool = False,
        locals: Any = None,
    ) -> Any:
        """What ``{% import ... with context %}`` binds: the ``.ptl`` module's functions."""
        return _PTLModule(self, dict(vars or {}))

    async def make_module_async(
        self,
        vars: dict[str, Any] | None = None,
        shared: bool = False,
        locals: Any = None,
    ) -> Any:
        """:meth:`make_module` in an async environment."""
        return _PTLModule(self, dict(vars or {}))

    # Jinja2's compiled {% import %} and {% include ... without context %} call these.
    def _get_default_module(self, ctx: Context | None = None) -> Any:
        return _PTLModule(self, {})

    async def _get_default_module_async(self, ctx: Context | None = None) -> Any:
        return _PTLModule(self, {})

    def __repr__(self) -> str:
        return f"<PTLTemplate {self.name!r} from {self.filename}>"


async def _async_steps(chunks: Iterator[htmltext]) -> AsyncIterator[htmltext]:
    for chunk in chunks:
        yield chunk


def text_version(template: jinja2.Template) -> jinja2.Template:
    """*template*, rendering raw text if it is PTL's (for ``render_text``)."""
    if not isinstance(template, PTLTemplate):
        return template
    fixed = (template._fixed, template._fixed_module) if template._fixed is not None else None
    assert template.filename is not None  # a PTLTemplate's always is
    twin = PTLTemplate.create(
        template.environment, template._app, template.name, template.filename,
        template.globals, fixed,  # type: ignore[arg-type]
    )  # fmt: skip
    twin._as_text = True
    return twin


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
        return list(output_policy.chunks(self._template._call(self._context)))

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
        # (called from Jinja2, a function's markup is Jinja2's to compose: Jinja2's
        # escape() makes plain Markup of it, so its tags take no nonce, fail closed)
        return getattr(module, attribute)


def from_string(app: App, source: str) -> PTLTemplate:
    """A template for PTL *source*'s ``render``; relative imports reach the app's templates."""
    try:
        template = get_loader(app).from_string(source, filename=STRING_NAME)
    except TemplateNotFound:
        raise
    except _loader.TemplateNotFound as exc:
        raise TemplateNotFound(STRING_NAME, reason=exc.reason) from None
    module = template.module
    assert module is not None
    env = app.jinja_env
    return PTLTemplate.create(
        env, app, None, STRING_NAME, env.make_globals(None), (template, module)
    )


# -- the seam: the environment's loader -------------------------------------------------------


class JinjaLoader(jinja2.BaseLoader):
    """The environment's loader: ``.ptl`` names load a :class:`PTLTemplate`, others go to
    *inner* (the framework's own loader); a ``.ptl`` file never goes out as Jinja2 source."""

    def __init__(self, inner: jinja2.BaseLoader | None, app: App) -> None:
        self.inner = inner
        self.app = app

    @property
    def has_source_access(self) -> bool:  # type: ignore[override]
        return self.inner is not None and self.inner.has_source_access

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, Any]:
        if is_ptl_name(template):
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
        if not is_ptl_name(name):
            if self.inner is None:
                raise jinja2.TemplateNotFound(name)
            if type(self.inner).load is not jinja2.BaseLoader.load:
                return self.inner.load(environment, name, globals)  # e.g. precompiled modules
            # Jinja2's own load, through the checked get_source above.
            return super().load(environment, name, globals)
        app = self.app
        if app.config.get("EXPLAIN_TEMPLATE_LOADING"):
            explain(app, name)
        try:
            filename = ptl_template(app, name).filename
        except TemplateNotFound as exc:
            # {% from "partials.ptl" import card %} needs the module, not its render
            # template: a file without one still loads; rendering it raises this error.
            # (A file found but not a template: a reason, and that one file tried.)
            if ":" in name or not exc.reason or len(exc.tried) != 1:
                raise
            filename = exc.tried[0]
        return PTLTemplate.create(environment, app, name, filename, globals or {})

    def list_templates(self) -> list[str]:
        return self.inner.list_templates() if self.inner is not None else []


class _PTLEnvironment(jinja2.Environment):
    """Mixed into the app's Jinja2 environment class: whatever loader is set (by the
    framework, by a custom ``create_jinja_environment``, later by hand) is wrapped in
    :class:`JinjaLoader`; lists of names report every place tried."""

    def __init__(self, app: App, *args: Any, **options: Any) -> None:
        self.__dict__["_ptl_app"] = app  # before the loader is set, in super().__init__
        super().__init__(app, *args, **options)  # type: ignore[arg-type]

    @property
    def loader(self) -> JinjaLoader:
        return self.__dict__["_ptl_loader"]  # type: ignore[no-any-return]

    @loader.setter
    def loader(self, loader: jinja2.BaseLoader | None) -> None:
        if not isinstance(loader, JinjaLoader):
            loader = JinjaLoader(loader, self.__dict__["_ptl_app"])
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
    """Where the framework's own loader looked for Jinja2 template *name*: the app's and
    each blueprint's ``jinja_loader``, as its dispatching loader searches them."""
    wrapper = environment.loader
    if not isinstance(wrapper, JinjaLoader):
        return []
    if not isinstance(wrapper.inner, DispatchingJinjaLoader):
        return []  # a loader of the user's own: where it looks is its business
    app = wrapper.app
    places: list[str] = []
    for scaffold in (app, *app.iter_blueprints()):
        loader = scaffold.jinja_loader
        if isinstance(loader, jinja2.FileSystemLoader):
            places += [os.path.join(folder, *name.split("/")) for folder in loader.searchpath]
    return places


@functools.cache
def _environment_class(base: type[jinja2.Environment]) -> type[jinja2.Environment]:
    if issubclass(base, _PTLEnvironment):
        return base
    return type(f"PTL{base.__name__}", (_PTLEnvironment, base), {})


def install_jinja(app: App, create: bool = False) -> None:
    """Make ``app.jinja_env`` load ``.ptl`` names: now if it exists (or *create*), else when
    the app makes it, at first use, so that config set after ``PTL(app)`` still counts."""
    if not create and "jinja_env" not in app.__dict__:  # a cached_property, not made yet
        # The framework's documented switch: the class create_jinja_environment uses.
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
        # An environment made before PTL(app) (or by a create_jinja_environment of the
        # app's own): its class is extended in place, as no other place sees every loader
        # set on it.  In this order, a thread rendering meanwhile sees a working loader.
        env.__dict__["_ptl_app"] = app
        env.__dict__["_ptl_loader"] = JinjaLoader(env.__dict__.get("loader"), app)
        # (mypy takes a class for unhashable when its instances define __eq__.)
        env.__class__ = _environment_class(type(env))  # type: ignore[assignment,arg-type]
        env.__dict__.pop("loader", None)
        if env.cache is not None:
            env.cache.clear()  # nothing loaded before may stand for a .ptl name


_install_lock = threading.Lock()


def explain(app: App, name: str) -> None:
    """Log where PTL looks for *name*, as ``EXPLAIN_TEMPLATE_LOADING`` does for Jinja2:
    each folder, in order, and whether the file is there."""
    lines = [f"Locating template {name!r}:"]
    path, _function = _loader.split_name(name)
    loader = get_loader(app)
    try:
        loader.find(path)  # checks that the name is well formed
    except _loader.TemplateNotFound as exc:
        app.logger.info("\n".join([*lines, f"Error: {exc.reason}"]))
        return
    owners = {os.path.realpath(folder): owner for folder, owner in folders(app)}
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
    blueprint = app.extensions[EXTENSION].framework.blueprint()
    if blueprint is not None and found != 1:
        lines.append(
            f"  The template was looked up from an endpoint of the blueprint {blueprint!r}: "
            "put its templates in a subfolder named after it."
        )
    app.logger.info("\n".join(lines))


# -- Content-Security-Policy: the settings both frameworks read --------------------------------


def written_value(returned: Any, streams: bool = True) -> Any:
    """What a view returned (a body, or a ``(body, status, headers)`` tuple), with
    markup carrying nonce slots written out (:func:`ptl_wsgi.csp.written`) and, with
    *streams*, a streamed body's chunks written as they are produced: the framework
    encodes a ``str`` body itself, where no nonce may go in any more."""
    if isinstance(returned, tuple) and returned:
        return (written_value(returned[0], streams), *returned[1:])
    if streams and isinstance(returned, Iterator) and not isinstance(returned, (str, bytes)):
        return output_policy.written_chunks(returned)
    return written(returned)


def csp_on(app: App) -> bool:
    """Whether *app* sends the header and gives templates ``csp_nonce`` (read per request)."""
    return bool(app.config["PTL_CSP"])


def csp_header(app: App, nonce: str) -> str:
    """The header value for *nonce*, with the app's ``PTL_CSP_DIRECTIVES`` and
    ``PTL_CSP_HASHES``."""
    config = app.config
    return content_security_policy(nonce, config["PTL_CSP_DIRECTIVES"], config["PTL_CSP_HASHES"])


def csp_value(app: App, store: MutableMapping[str, Any]) -> str | None:
    """The ``Content-Security-Policy`` of a response to the request made from *store* (its
    environ or scope), naming its nonce (a fresh one if it has none); None without
    ``PTL_CSP``.  Set by the guard on every response that has no such header of its own."""
    if not csp_on(app):
        return None
    nonce = store.get(CSP_NONCE_KEY)
    if not isinstance(nonce, str):
        nonce = RequestNonce(store).nonce  # no page of this request has named one
    return csp_header(app, nonce)


# -- the request hooks: written once, handed to the framework by Framework.hook ----------------

_STATE_ATTR = "_ptl_csp_state"


def _open_nonce(framework: Framework, request: Any) -> str:
    """The request's nonce; the first call opens its scope, which teardown closes."""
    store = framework.store(request)
    nonce = store.get(CSP_NONCE_KEY)
    if not isinstance(nonce, str):
        state = RequestNonce(store)
        setattr(request, _STATE_ATTR, state)
        nonce = state.open()
    return nonce


def _begin_request(framework: Framework) -> None:
    app = framework.current_app()
    # A create_jinja_environment that builds its environment without app.jinja_environment
    # is caught here, before any view renders.
    install_jinja(app, create=True)
    if csp_on(app):
        _open_nonce(framework, framework.request())


def _end_request(framework: Framework, exc: BaseException | None) -> None:
    # Teardown runs where the framework resets its own context variables, where the scope
    # was opened; both run it again at the end of a stream_with_context stream (Flask 3.0;
    # 3.1 with no scope left), when the state is gone: nothing is closed twice.
    request = framework.request()
    state: RequestNonce | None = getattr(request, _STATE_ATTR, None)
    if state is not None:
        delattr(request, _STATE_ATTR)
        state.close()


def _template_context(framework: Framework) -> dict[str, str]:
    request = framework.request()
    if request is None or not csp_on(framework.current_app()):
        return {}
    return {"csp_nonce": _open_nonce(framework, request)}


def refuse_library_header_errors(
    app: App,
    framework: Framework,
    method: str = "handle_exception",
    connection: Callable[[], Any] | None = None,
) -> None:
    """Make werkzeug's own refusal of a header value (CR/LF) the 400, not the framework's 500.

    Werkzeug raises it in the view, in the framework's ``make_response`` of what the view
    returned, or in an ``after_request`` hook, outside every error handler; each reaches
    ``handle_exception`` (*method*: Quart's ``handle_websocket_exception`` for a WebSocket's
    denial response, answered to *connection*, by default the request), which re-raises
    when testing: the one place that sees them, so it is wrapped.  The refusal is answered
    as it is: the hooks that broke the response would break it again (the guard still
    gives it the CSP header).
    """
    current = framework.request if connection is None else connection
    # Any: the sans-IO App has none of these methods; Quart 0.23's take its context first.
    wrapped: Any = app
    handle = getattr(wrapped, method)
    if getattr(handle, "_ptl_refusals", False):
        return  # PTL(app) twice

    @functools.wraps(handle)
    def handle_exception(*args: Any) -> Any:
        __traceback_hide__ = __tracebackhide__ = True  # a bug's traceback is the app's
        refused = as_header_error(args[-1])  # the error is the last argument
        if refused is None:
            return handle(*args)  # Quart's: a coroutine, which Quart awaits
        return framework.returned(framework.refusal(refused, current()))

    handle_exception._ptl_refusals = True  # type: ignore[attr-defined]
    setattr(wrapped, method, handle_exception)
