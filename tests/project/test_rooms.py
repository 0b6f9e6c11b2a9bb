"""One room per concern: the import layering of docs/architecture.md, and the shared rooms.

The layering test parses every module of the package (ast, nothing imported) and
checks that each import goes to the same layer or one below, that the graph has no
cycle, and that no room imports a module by its old (moved) name.
"""

from __future__ import annotations

import ast
import importlib
import sys
import traceback
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

import pytest
from ptl_helpers import REPO, write_files

import ptl_wsgi
import ptl_wsgi.csp as csp
from ptl_wsgi._iterate_in_context import InContext, in_context, setting
from ptl_wsgi.importer import PtlFinder
from ptl_wsgi.loader import Loader
from ptl_wsgi.tracebacks import template_frame

PACKAGE = REPO / "ptl_wsgi"

LAYERS: dict[str, int] = {
    **dict.fromkeys(
        ["compiler", "compiler.source", "compiler.names", "compiler.nodes",
         "compiler.switches", "compiler.scopes", "compiler.state", "compiler.pieces",
         "compiler.contextual", "compiler.fusion", "compiler.transformer", "compiler.limits",
         "compiler.csp", "escaping", "escaping.rules", "escaping.context", "escaping.url",
         "escaping.js", "escaping.css", "escaping.markup", "escaping.escapers", "escaping._plans",
         "escaping.planner", "escaping.formatting", "escaping.printf", "escaping.nonce",
         "htmlcontext", "_runtime", "headers", "_iterate_in_context", "tracebacks",
         "_htmltext_py", "_htmltext_c", "tools", "tools.pygments_lexer", "forms.inputs",
         "contrib"],
        1,
    ),
    **dict.fromkeys(
        ["csp", "importer", "tools.from_quixote", "tools.to_py", "py_templates", "html",
         "_quixote_helpers", "beyond_escaping", "escapers", "output_policy",
         "tools.babel_extract", "tools.coverage", "tools.lint", "tools.typecheck", "idioms",
         "tools.converting", "filters"],
        2,
    ),
    **dict.fromkeys(
        ["tools.from_jinja2", "filters.jinja2", "tools.from_django", "filters.django"], 3
    ),
    "i18n": 3,
    "loader": 3,
    "wsgi": 4,
    "asgi": 4,
    **dict.fromkeys(
        ["publish", "xmlrpc", "cgiapp", "cgi", "devserver", "forms", "forms.widgets", "forms.csrf",
         "forms.form", "forms.adapters", "contrib.forms_flask", "contrib.forms_quart",
         "contrib.forms_django",
         "contrib.flask_core", "contrib.flask", "contrib.quart", "contrib.django",
         "contrib.django_i18n", "contrib.starlette", "contrib.litestar",
         "contrib.django_i18n.management", "contrib.django_i18n.management.commands",
         "contrib.django_i18n.management.commands.makemessages"],
        5,
    ),
    **dict.fromkeys(["cli", "__main__", "ptl_wsgi"], 6),
}  # fmt: skip

# No room imports one above it and the graph has no cycle: neither list has an entry.
ALLOWED_UPWARD_EDGES: tuple[tuple[str, str], ...] = ()
ALLOWED_CYCLE_EDGES: tuple[tuple[str, str], ...] = ()
# Read inside functions; the package's metadata, not one of its rooms.
METADATA = "__version__"
# Old names of rooms that moved (ptl_wsgi._MOVED_MODULES): importable, deprecated, and
# used by no room (this table would list any that did, each with the reason).
MOVED = {old.removeprefix("ptl_wsgi."): new[0].removeprefix("ptl_wsgi.")
         for old, new in ptl_wsgi._MOVED_MODULES.items()}  # fmt: skip
STILL_USING_A_MOVED_NAME: dict[str, set[str]] = {}


def _room(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or "ptl_wsgi"


def _exists(room: str) -> bool:
    base = PACKAGE.joinpath(*room.split("."))
    return base.with_suffix(".py").exists() or base.is_dir() or room == "_htmltext_c"


def _imports(path: Path) -> set[str]:
    """The rooms *path* imports, wherever the import stands (lazy ones count)."""
    room = _room(path)
    package = room.split(".") if path.name == "__init__.py" else room.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(["ptl_wsgi", *base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # "from ptl_wsgi import csp" names a room; "... import __version__" does not.
            names = [f"{module}.{a.name}" for a in node.names] + [module]
        else:
            continue
        for name in names:
            if name != "ptl_wsgi" and not name.startswith("ptl_wsgi."):
                continue
            target = name.removeprefix("ptl_wsgi").lstrip(".")
            if target.endswith(METADATA):
                continue
            if target in MOVED:
                moved.setdefault(room, set()).add(target)
                target = MOVED[target]
            while target and not _exists(target):
                target = target.rpartition(".")[0]
            target = target or "ptl_wsgi"
            if target != room and not (name == "ptl_wsgi" or _is_parent(target, room)):
                found.add(target)
    return found


# room -> the moved names it imports, filled in by _imports().
moved: dict[str, set[str]] = {}


def _is_parent(target: str, room: str) -> bool:
    return room.startswith(target + ".")


def _graph() -> dict[str, set[str]]:
    return {_room(path): _imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_room_has_a_layer_and_is_in_the_document() -> None:
    rooms = set(_graph())
    assert rooms - set(LAYERS) == set(), "give new modules a layer here and in the doc"
    document = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    for room in LAYERS:
        # A package's modules may go by the package (forms); the twins are named together;
        # contrib is an empty package around its rooms.
        parts = room.split(".")
        prefixes = {".".join(parts[:n]) for n in range(1, len(parts) + 1)}
        named = any(f"`{prefix}`" in document for prefix in prefixes)
        assert named or room.startswith("_htmltext_") or room == "contrib", room


def test_no_room_imports_a_moved_name() -> None:
    _graph()
    assert moved == STILL_USING_A_MOVED_NAME


def test_nothing_imports_a_room_above_it() -> None:
    upward = [
        f"{room} (layer {LAYERS[room]}) imports {target} (layer {LAYERS[target]})"
        for room, targets in _graph().items()
        for target in targets
        if LAYERS[target] > LAYERS[room] and (room, target) not in ALLOWED_UPWARD_EDGES
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    graph = _graph()
    for source, target in ALLOWED_CYCLE_EDGES:
        graph[source].discard(target)
    done: set[str] = set()

    def visit(room: str, path: list[str]) -> None:
        if room in path:
            pytest.fail("import cycle: " + " -> ".join([*path[path.index(room) :], room]))
        if room in done:
            return
        for target in sorted(graph.get(room, ())):
            visit(target, [*path, room])
        done.add(room)

    for room in sorted(graph):
        visit(room, [])


def test_only_the_importer_runs_module_code() -> None:
    # The loader and every integration load modules through the importer (files, strings,
    # CGI scripts): no other room builds a module by exec'ing code, or reads the cache.
    # Evaluating a constant expression (``eval('t""')`` for the t-string type) builds none.
    runners = {
        _room(path)
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("exec", "eval")
        and not (node.args and isinstance(node.args[0], ast.Constant))
    }
    assert runners == {"importer"}


# -- forms: the core knows no framework; the adapters in contrib do -------------------------


def test_the_forms_core_imports_no_framework() -> None:
    frameworks = ("flask", "django", "jinja2", "itsdangerous")
    found = [
        f"{path.name} imports {name}"
        for path in sorted((PACKAGE / "forms").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        if name.partition(".")[0] in frameworks
    ]
    assert found == []
    # Nor looks frameworks up behind the import system's back.
    for path in (PACKAGE / "forms").glob("*.py"):
        assert "sys.modules" not in path.read_text(encoding="utf-8"), path.name


def test_every_adapter_named_in_the_table_is_one() -> None:
    from ptl_wsgi.forms import adapters

    for package, target in adapters.ADAPTERS.items():
        module, _, attribute = target.partition(":")
        assert module.startswith("ptl_wsgi.contrib."), target
        adapter = getattr(importlib.import_module(module), attribute)
        assert callable(adapter.form_data) and callable(adapter.csrf_policy), package


# -- csp: the one CSP room, and its old home ------------------------------------------------


def test_the_old_name_of_beyond_escaping_still_has_the_csp_names() -> None:
    sys.modules.pop("ptl_wsgi.safety", None)
    with pytest.warns(DeprecationWarning, match="use ptl_wsgi.beyond_escaping"):
        safety = importlib.import_module("ptl_wsgi.safety")
    for name in ("CSP_NONCE_KEY", "content_security_policy", "csp_nonce", "new_nonce",
                 "nonce_scope"):  # fmt: skip
        assert getattr(safety, name) is getattr(csp, name)
        assert name in safety.__all__


def test_request_nonce_publishes_opens_and_closes() -> None:
    environ: dict[str, object] = {}
    state = csp.RequestNonce(environ)
    assert environ[csp.CSP_NONCE_KEY] == state.nonce
    with pytest.raises(LookupError):
        csp.csp_nonce()
    with csp.nonce_scope("outer"):
        assert state.open() == state.nonce
        assert csp.csp_nonce() == state.nonce
        state.close()
        state.close()  # a second close (Flask's teardown may run twice) does nothing
        assert csp.csp_nonce() == "outer"
    assert f"'nonce-{state.nonce}'" in state.policy({"default-src": "'self'"})


def test_check_directives_fails_early() -> None:
    assert csp.check_directives(None) == {}
    with pytest.raises(ValueError, match="invalid CSP source"):
        csp.check_directives({"img-src": "a;b"})


def test_a_body_sees_the_nonce_at_each_step_and_at_close() -> None:
    seen: list[str] = []

    def body() -> Iterator[bytes]:
        try:
            seen.append(csp.csp_nonce())
            yield b"a"
            seen.append(csp.csp_nonce())
            yield b"b"
        finally:
            seen.append(csp.csp_nonce())

    wrapped = iter(csp.in_nonce_scope(body(), "n1"))
    assert next(wrapped) == b"a"
    assert next(wrapped) == b"b"
    wrapped.close()  # type: ignore[attr-defined]
    assert seen == ["n1", "n1", "n1"]
    with pytest.raises(LookupError):
        csp.csp_nonce()  # never left set between steps


# -- _iterate_in_context ---------------------------------------------------------------------

_var: ContextVar[str] = ContextVar("test_rooms", default="none")


def test_in_context_leaves_lists_tuples_and_file_wrappers_alone() -> None:
    class FileWrapper:
        def __iter__(self) -> Iterator[bytes]:
            yield b"x"

    def enter() -> setting[str]:
        return setting(_var, "set")

    body = [b"a"]
    assert in_context(body, enter) is body
    assert in_context((b"a",), enter) == (b"a",)
    wrapper = FileWrapper()
    assert in_context(wrapper, enter, {"wsgi.file_wrapper": FileWrapper}) is wrapper
    assert isinstance(in_context(wrapper, enter, {}), InContext)


def test_in_context_runs_iter_next_and_close_inside() -> None:
    seen: list[str] = []

    class Body:
        def __iter__(self) -> Iterator[str]:
            seen.append(_var.get())
            return iter(["x"])

        def close(self) -> None:
            seen.append(_var.get())

    wrapped = InContext(Body(), lambda: setting(_var, "set"))
    assert list(wrapped) == ["x"]
    wrapped.close()
    assert seen == ["set", "set"]
    assert _var.get() == "none"


# -- tracebacks -----------------------------------------------------------------------------


def _raise_in(filename: str) -> BaseException:
    code = compile("def f():\n    raise ValueError('x')\n", filename, "exec")
    namespace: dict[str, object] = {}
    exec(code, namespace)
    try:
        namespace["f"]()  # type: ignore[operator]
    except ValueError as exc:
        return exc
    raise AssertionError


def test_template_frame_is_the_innermost_ptl_frame() -> None:
    exc = _raise_in("/t/page.ptl")
    frame = template_frame(exc.__traceback__)
    assert frame is not None and (frame.filename, frame.lineno) == ("/t/page.ptl", 2)
    exc = _raise_in("<string>")
    assert template_frame(exc.__traceback__) is None
    frame = template_frame(exc.__traceback__, "<string>")
    assert frame is not None and frame.lineno == 2
    assert traceback.extract_tb(exc.__traceback__)[-1].filename == "<string>"


# -- the loader's finder stays in its package -------------------------------------------------


def test_a_loader_makes_ptl_importable_in_its_package_only(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "layout.ptl": "def page [html] (body):\n    '<main>'\n    body\n    '</main>'\n",
            "index.ptl": "from .layout import page\ndef render [html] ():\n    page('hi')\n",
            "rooms_stray.ptl": "def render [html] ():\n    'stray'\n",
        },
    )
    saved_meta_path, saved_path = list(sys.meta_path), list(sys.path)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, PtlFinder)]
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    loader = Loader([tmp_path])
    try:
        assert str(loader.render("index.ptl")) == "<main>hi</main>"
        assert not any(isinstance(f, PtlFinder) for f in sys.meta_path)
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("rooms_stray")
    finally:
        loader.close()
        sys.meta_path[:] = saved_meta_path
        sys.path[:] = saved_path
        sys.modules.pop("rooms_stray", None)
