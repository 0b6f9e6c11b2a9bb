"""The shared template loader: names, context, lookups, reuse, reload, threads."""

from __future__ import annotations

import functools
import logging
import os
import sys
import textwrap
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from markupsafe import Markup

from ptl_wsgi import loader as loader_module
from ptl_wsgi.html import htmltext
from ptl_wsgi.loader import Loader, TemplateArgumentError, TemplateNotFound, split_name

MakeLoader = Callable[..., Loader]


def write(path: Path, source: str) -> Path:
    """Write *source* to *path* the way editors save: a new file renamed over the old one.

    A file that existed gets an mtime two seconds later than before, so a
    change is seen even when the filesystem's clock has not moved on.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.stat().st_mtime_ns if path.exists() else None
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(textwrap.dedent(source), encoding="utf-8")
    os.replace(temp, path)
    if before is not None:
        later = max(before + 2_000_000_000, path.stat().st_mtime_ns)
        os.utime(path, ns=(later, later))
    return path


@pytest.fixture
def make_loader() -> Iterator[MakeLoader]:
    loaders: list[Loader] = []

    def make(*search_path: Path, auto_reload: bool = False) -> Loader:
        loader = Loader(search_path, auto_reload=auto_reload)
        loaders.append(loader)
        return loader

    yield make
    for loader in loaders:
        loader.close()


@pytest.fixture
def site(tmp_path: Path) -> tuple[Path, Path]:
    """Two search directories: an app's templates and a library's."""
    app, lib = tmp_path / "app", tmp_path / "lib"
    write(
        app / "page.ptl",
        """
        def render [html] (title):
            "<h1>%s</h1>" % title

        def sidebar [html] ():
            "<aside>side</aside>"

        helper = "not a template"
        """,
    )
    write(
        app / "blog" / "post.ptl",
        """
        from ..layout import page
        from .parts import byline

        def render [html] (post, author):
            page(post, byline(author))
        """,
    )
    write(
        lib / "layout.ptl",
        """
        def page [html] (title, body):
            "<title>%s</title><main>" % title
            body
            "</main>"
        """,
    )
    write(lib / "blog" / "parts.ptl", 'def byline [html] (name):\n    "<p>by %s</p>" % name\n')
    write(lib / "page.ptl", 'def render [html] (title):\n    "shadowed"\n')
    return app, lib


# -- names ---------------------------------------------------------------------------


def test_split_name() -> None:
    assert split_name("blog/post.ptl") == ("blog/post.ptl", "render")
    assert split_name("blog/post.ptl:sidebar") == ("blog/post.ptl", "sidebar")


def test_name_picks_module_and_function(site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    loader = make_loader(*site)
    assert loader.render("page.ptl", {"title": "<Hi>"}) == "<h1>&lt;Hi&gt;</h1>"
    assert loader.render("page.ptl:sidebar") == "<aside>side</aside>"
    template = loader.get_template("page.ptl:sidebar")
    assert template.name == "page.ptl:sidebar"
    assert template.filename == str(site[0].resolve() / "page.ptl")


@pytest.mark.parametrize(
    "name", ["page.html", "/abs/page.ptl", "../page.ptl", "blog//post.ptl", "./page.ptl"]
)
def test_malformed_names(name: str, site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    with pytest.raises(TemplateNotFound, match=r"relative path ending in \.ptl") as info:
        make_loader(*site).get_template(name)
    assert info.value.name == name


def test_first_search_directory_wins(site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    assert make_loader(*site).render("page.ptl", {"title": "x"}) == "<h1>x</h1>"
    assert make_loader(site[1], site[0]).render("page.ptl", {"title": "x"}) == "shadowed"


def test_list_templates(site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    assert make_loader(*site).list_templates() == [
        "blog/parts.ptl",
        "blog/post.ptl",
        "layout.ptl",
        "page.ptl",
    ]


# -- context -------------------------------------------------------------------------


@pytest.fixture
def params_loader(tmp_path: Path, make_loader: MakeLoader) -> Loader:
    write(
        tmp_path / "params.ptl",
        """
        def render [html] (title, subtitle="none", *, flag=False):
            "%s|%s|%s" % (title, subtitle, flag)

        def everything [html] (title, **rest):
            "%s|%s" % (title, ",".join(sorted(rest)))
        """,
    )
    return make_loader(tmp_path)


def test_context_keys_the_template_does_not_take_are_left_out(params_loader: Loader) -> None:
    context = {"title": "T", "flag": True, "request": object(), "url_for": len}
    assert params_loader.render("params.ptl", context) == "T|none|True"


def test_kwargs_template_gets_the_whole_context(params_loader: Loader) -> None:
    context = {"title": "T", "b": 1, "a": 2}
    assert params_loader.render("params.ptl:everything", context) == "T|a,b"


def test_missing_required_parameter_names_template_and_parameter(params_loader: Loader) -> None:
    with pytest.raises(TemplateArgumentError) as info:
        params_loader.render("params.ptl", {"subtitle": "s"})
    assert "'params.ptl'" in str(info.value)
    assert "'title'" in str(info.value)
    assert isinstance(info.value, TypeError)


# -- missing templates -----------------------------------------------------------------


def test_missing_template_lists_every_place(
    site: tuple[Path, Path], make_loader: MakeLoader
) -> None:
    app, lib = (str(p.resolve()) for p in site)
    with pytest.raises(TemplateNotFound) as info:
        make_loader(*site).get_template("blog/missing.ptl:sidebar")
    error = info.value
    expected = [os.path.join(app, "blog", "missing.ptl"), os.path.join(lib, "blog", "missing.ptl")]
    assert error.tried == expected
    assert error.name == "blog/missing.ptl:sidebar"
    for place in expected:
        assert place in str(error)
    assert isinstance(error, LookupError)


def test_missing_function_names_the_file(site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    loader = make_loader(*site)
    for name in ("page.ptl:nope", "page.ptl:helper"):
        with pytest.raises(TemplateNotFound) as info:
            loader.get_template(name)
        assert info.value.tried == [str(site[0].resolve() / "page.ptl")]
        assert repr(name.partition(":")[2]) in str(info.value)


def test_missing_module_lookup(site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    with pytest.raises(TemplateNotFound) as info:
        make_loader(*site).module("nope.ptl")
    assert len(info.value.tried) == 2


# -- reuse between templates --------------------------------------------------------------


def test_relative_imports_across_search_directories(
    site: tuple[Path, Path], make_loader: MakeLoader
) -> None:
    # blog/post.ptl (app) imports ..layout and .parts, which exist only in lib.
    out = make_loader(*site).render("blog/post.ptl", {"post": "R&D", "author": "<Bob>"})
    assert out == "<title>R&amp;D</title><main><p>by &lt;Bob&gt;</p></main>"


def test_module_lookup_gives_macros(site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    loader = make_loader(*site)
    layout = loader.module("layout.ptl")
    assert layout.page("T", htmltext("<b>x</b>")) == "<title>T</title><main><b>x</b></main>"
    # The same module object that templates importing it get.
    loader.render("blog/post.ptl", {"post": "p", "author": "a"})
    assert loader.module("layout.ptl") is layout


def test_nothing_is_escaped_twice(tmp_path: Path, make_loader: MakeLoader) -> None:
    write(
        tmp_path / "outer.ptl",
        """
        from .inner import item

        def render [html] (items, extra):
            "<ul>"
            for text in items:
                item(text)
            "</ul>"
            extra
        """,
    )
    write(tmp_path / "inner.ptl", 'def item [html] (text):\n    "<li>%s</li>" % text\n')
    loader = make_loader(tmp_path)
    inner = loader.module("inner.ptl")
    context = {
        "items": ["a & b", inner.item("<i>")],  # str, and markup from another template
        "extra": Markup("<br>") + "&",  # markupsafe markup, escaped once already
    }
    out = loader.render("outer.ptl", context)
    assert isinstance(out, htmltext)
    assert out == "<ul><li>a &amp; b</li><li><li>&lt;i&gt;</li></li></ul><br>&amp;"
    assert "&amp;amp;" not in out and "&amp;lt;" not in out


# -- auto-reload --------------------------------------------------------------------


def test_edited_file_is_recompiled_with_auto_reload(
    site: tuple[Path, Path], make_loader: MakeLoader
) -> None:
    loader = make_loader(*site, auto_reload=True)
    assert loader.render("page.ptl", {"title": "x"}) == "<h1>x</h1>"
    write(site[0] / "page.ptl", 'def render [html] (title):\n    "<h2>%s</h2>" % title\n')
    assert loader.render("page.ptl", {"title": "x"}) == "<h2>x</h2>"


def test_edited_imported_file_is_recompiled(
    site: tuple[Path, Path], make_loader: MakeLoader
) -> None:
    loader = make_loader(*site, auto_reload=True)
    context = {"post": "P", "author": "A"}
    assert loader.render("blog/post.ptl", context).startswith("<title>P</title>")
    write(site[1] / "layout.ptl", 'def page [html] (title, body):\n    "<h1>%s</h1>" % title\n')
    assert loader.render("blog/post.ptl", context) == "<h1>P</h1>"


def write_in_place(path: Path, source: str) -> Path:
    """Overwrite *path* the way some editors save: truncated, then written, same inode.

    The mtime moves two seconds on, as in :func:`write`, so the change is seen.
    """
    before = path.stat().st_mtime_ns
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    later = max(before + 2_000_000_000, path.stat().st_mtime_ns)
    os.utime(path, ns=(later, later))
    return path


def test_a_broken_file_never_loaded_raises_with_its_location(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    page = write(tmp_path / "page.ptl", 'def render [html] ()\n    "one"\n')
    loader = make_loader(tmp_path, auto_reload=True)
    with pytest.raises(SyntaxError) as info:
        loader.render("page.ptl")
    assert info.value.filename == str(page.resolve())
    assert info.value.lineno == 1
    write(page, 'def render [html] ():\n    "fixed"\n')
    assert loader.render("page.ptl") == "fixed"


GOOD_PAGE = (
    'from .layout import frame\n\ndef render [html] (title):\n    frame("<h1>%s</h1>" % title)\n'
)
# Prefixes of a save caught half-way, each failing differently: nothing yet (the
# file compiles, but defines no template), a syntax error, an import that fails
# while the module runs.
HALF_WRITTEN = {
    "empty": "",
    "syntax": GOOD_PAGE[: GOOD_PAGE.index(":\n") - 3],
    "import": "from .layout import fra\n",
}


@pytest.mark.parametrize("half", sorted(HALF_WRITTEN))
def test_a_half_written_file_keeps_the_last_good_version(
    half: str, tmp_path: Path, make_loader: MakeLoader, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path / "layout.ptl", 'def frame [html] (body):\n    "<main>%s</main>" % body\n')
    page = write(tmp_path / "page.ptl", GOOD_PAGE)
    loader = make_loader(tmp_path, auto_reload=True)
    assert loader.render("page.ptl", {"title": "<x>"}) == "<main><h1>&lt;x&gt;</h1></main>"
    caplog.set_level(logging.WARNING, logger="ptl_wsgi.loader")
    write_in_place(page, HALF_WRITTEN[half])
    for _ in range(3):
        assert loader.render("page.ptl", {"title": "t"}) == "<main><h1>t</h1></main>"
    warnings = [r for r in caplog.records if r.name == "ptl_wsgi.loader"]
    assert len(warnings) == 1, warnings  # once per failed version, not once per request
    message = warnings[0].getMessage()
    assert "page.ptl" in message and "last good version" in message
    if half == "syntax":
        assert f"{page.resolve()}:3:" in message  # where the file fails
    write_in_place(page, GOOD_PAGE.replace("<h1>", "<h2>").replace("</h1>", "</h2>"))
    assert loader.render("page.ptl", {"title": "t"}) == "<main><h2>t</h2></main>"


def test_a_half_written_imported_file_keeps_the_last_good_version(
    tmp_path: Path, make_loader: MakeLoader, caplog: pytest.LogCaptureFixture
) -> None:
    layout = write(
        tmp_path / "layout.ptl", 'def frame [html] (body):\n    "<main>%s</main>" % body\n'
    )
    write(tmp_path / "page.ptl", GOOD_PAGE)
    loader = make_loader(tmp_path, auto_reload=True)
    assert loader.render("page.ptl", {"title": "t"}) == "<main><h1>t</h1></main>"
    caplog.set_level(logging.WARNING, logger="ptl_wsgi.loader")
    write_in_place(layout, 'def frame [html] (body):\n    "<div>%s</div>" %')
    assert loader.render("page.ptl", {"title": "t"}) == "<main><h1>t</h1></main>"
    assert any(str(layout.resolve()) in r.getMessage() for r in caplog.records)
    assert loader.module("layout.ptl").frame("b") == "<main>b</main>"  # the module too
    write_in_place(layout, 'def frame [html] (body):\n    "<div>%s</div>" % body\n')
    assert loader.render("page.ptl", {"title": "t"}) == "<div><h1>t</h1></div>"


def test_a_new_broken_import_is_watched_until_it_loads(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    # page.ptl starts importing a file the loader has never read, which is broken:
    # fixing that file alone must be noticed.
    write(tmp_path / "page.ptl", 'def render [html] ():\n    "one"\n')
    loader = make_loader(tmp_path, auto_reload=True)
    assert loader.render("page.ptl") == "one"
    parts = write(tmp_path / "parts.ptl", 'def part [html] ()\n    "two"\n')
    write(tmp_path / "page.ptl", "from .parts import part\ndef render [html] ():\n    part()\n")
    assert loader.render("page.ptl") == "one"
    write(parts, 'def part [html] ():\n    "two"\n')
    assert loader.render("page.ptl") == "two"


def test_a_deleted_file_is_not_found_rather_than_kept(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    page = write(tmp_path / "page.ptl", 'def render [html] ():\n    "one"\n')
    loader = make_loader(tmp_path, auto_reload=True)
    assert loader.render("page.ptl") == "one"
    page.unlink()
    with pytest.raises(TemplateNotFound):
        loader.render("page.ptl")


def test_reload_forgets_modules_but_keeps_the_last_good_version(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    # What Django's autoreloader calls (through the engine's reset()), auto_reload or not.
    page = write(tmp_path / "page.ptl", 'def render [html] ():\n    "one"\n')
    loader = make_loader(tmp_path)
    assert loader.render("page.ptl") == "one"
    write_in_place(page, 'def render [html] ():\n    "tw')
    loader.reload()
    assert loader.render("page.ptl") == "one"
    write_in_place(page, 'def render [html] ():\n    "two"\n')
    assert loader.render("page.ptl") == "one"  # no auto-reload: only reload() looks again
    loader.reload()
    assert loader.render("page.ptl") == "two"


def test_without_auto_reload_edits_are_ignored(
    site: tuple[Path, Path], make_loader: MakeLoader
) -> None:
    loader = make_loader(*site)
    assert loader.render("page.ptl", {"title": "x"}) == "<h1>x</h1>"
    write(site[0] / "page.ptl", 'def render [html] (title):\n    "<h2>%s</h2>" % title\n')
    assert loader.render("page.ptl", {"title": "x"}) == "<h1>x</h1>"


@pytest.mark.parametrize("auto_reload", [False, True])
def test_stat_calls_per_render(
    auto_reload: bool,
    site: tuple[Path, Path],
    make_loader: MakeLoader,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loader = make_loader(*site, auto_reload=auto_reload)
    context = {"post": "P", "author": "A"}
    loader.render("blog/post.ptl", context)  # first render: finds and compiles
    stats: list[str] = []
    real_stat = os.stat

    def counting_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        stats.append(str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    # os.stat itself, so os.path.isfile and friends are counted too.
    monkeypatch.setattr(os, "stat", counting_stat)
    for _ in range(50):
        loader.render("blog/post.ptl", context)
    monkeypatch.undo()
    if auto_reload:
        assert len(stats) >= 50 and all(path.endswith(".ptl") for path in stats)
    else:
        assert stats == []


def test_edit_saved_while_the_template_compiles_is_not_lost(
    tmp_path: Path, make_loader: MakeLoader, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each version's module code can save the next version, like an editor saving
    # between the loader reading a file and noting its mtime.
    page = tmp_path / "page.ptl"

    def version(n: int, saves: int | None = None) -> str:
        source = f'def render [html] ():\n    "v{n}"\n'
        if saves is not None:
            source = f"import edit_hook_for_test\nedit_hook_for_test.save({saves})\n" + source
        return source

    hook = types.ModuleType("edit_hook_for_test")
    hook.save = lambda n: write(page, version(n))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "edit_hook_for_test", hook)
    write(page, version(1, saves=2))
    loader = make_loader(tmp_path, auto_reload=True)
    assert loader.render("page.ptl") == "v1"  # first load
    assert loader.render("page.ptl") == "v2"
    write(page, version(3, saves=4))
    assert loader.render("page.ptl") == "v3"  # a reload
    assert loader.render("page.ptl") == "v4"


def test_concurrent_renders_while_file_is_rewritten(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    # Every version's output is internally consistent, so a render that mixed two
    # versions, or saw half a compiled module, would be caught.
    def version(n: int) -> str:
        body = "\n".join(f'    "<p>{n}:{i}</p>"' for i in range(300))
        return f"from .part import tail\n\ndef render [html] ():\n{body}\n    tail({n})\n"

    def expected(n: int) -> str:
        return "".join(f"<p>{n}:{i}</p>" for i in range(300)) + f"<end>{n}</end>"

    write(tmp_path / "part.ptl", 'def tail [html] (n):\n    "<end>%d</end>" % n\n')
    page = write(tmp_path / "page.ptl", version(0))
    loader = make_loader(tmp_path, auto_reload=True)
    valid = {expected(n) for n in range(21)}
    errors: list[BaseException] = []
    bad: list[str] = []
    seen: set[str] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                out = loader.render("page.ptl")
            except BaseException as exc:
                errors.append(exc)
                return
            seen.add(out)
            if out not in valid:
                bad.append(out)

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for thread in threads:
        thread.start()
    try:
        for n in range(1, 21):
            write(page, version(n))
            time.sleep(0.005)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not errors, errors[:3]
    assert not bad, bad[:3]
    assert len(seen) > 1  # the readers did see reloads happen
    assert loader.render("page.ptl") == expected(20)


def test_renders_while_a_file_is_saved_in_place_in_pieces(
    tmp_path: Path, make_loader: MakeLoader
) -> None:
    # An editor truncating the file and writing it in three pieces while six threads
    # render: every render is one whole good version, never an error.  The body is one
    # call spanning every line, so each strict prefix of a version fails to load
    # (empty: no template; otherwise an unclosed parenthesis).
    def version(n: int) -> str:
        body = "\n".join(f'        "<p>{n}:{i}</p>"' for i in range(200))
        return f"from .part import tail\n\ndef render [html] ():\n    tail({n}, (\n{body}\n    ))\n"

    def expected(n: int) -> str:
        return "".join(f"<p>{n}:{i}</p>" for i in range(200)) + f"<end>{n}</end>"

    write(tmp_path / "part.ptl", 'def tail [html] (n, body):\n    body\n    "<end>%d</end>" % n\n')
    page = write(tmp_path / "page.ptl", version(0))
    loader = make_loader(tmp_path, auto_reload=True)
    assert loader.render("page.ptl") == expected(0)
    valid = {expected(n) for n in range(11)}
    errors: list[BaseException] = []
    bad: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                out = loader.render("page.ptl")
            except BaseException as exc:
                errors.append(exc)
                return
            if out not in valid:
                bad.append(out)

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for thread in threads:
        thread.start()
    try:
        for n in range(1, 11):
            source = version(n)
            third = len(source) // 3
            with open(page, "w", encoding="utf-8") as f:
                for start in (0, third, 2 * third):
                    f.write(source[start : start + third] if start < 2 * third else source[start:])
                    f.flush()
                    time.sleep(0.003)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not errors, errors[:3]
    assert not bad, bad[:3]
    write_in_place(page, version(10))  # a later mtime, whatever the clock did
    assert loader.render("page.ptl") == expected(10)


def test_close_forgets_the_package(site: tuple[Path, Path]) -> None:
    loader = Loader(site)
    loader.render("blog/post.ptl", {"post": "p", "author": "a"})
    assert any(name.startswith(loader.package + ".") for name in sys.modules)
    loader.close()
    assert not any(name.startswith(loader.package) for name in sys.modules)


def test_loaders_are_independent(site: tuple[Path, Path], make_loader: MakeLoader) -> None:
    first, second = make_loader(site[0], site[1]), make_loader(site[1], site[0])
    assert first.package != second.package
    assert first.render("page.ptl", {"title": "t"}) == "<h1>t</h1>"
    assert second.render("page.ptl", {"title": "t"}) == "shadowed"
    assert loader_module.DEFAULT_FUNCTION == "render"


@pytest.mark.parametrize("first", ["partials.ptl:card", "partials/box.ptl"])
def test_a_file_and_a_directory_of_the_same_name_both_load(
    first: str, tmp_path: Path, make_loader: MakeLoader
) -> None:
    # partials.ptl beside partials/: one module name for both; neither may hide the other.
    write(tmp_path / "partials.ptl", "def card [html] (x):\n    '<b>%s</b>' % x\n")
    write(
        tmp_path / "partials" / "box.ptl",
        "from .. import partials\ndef render [html] (x):\n    '<div>%s</div>' % partials.card(x)\n",
    )
    loader = make_loader(tmp_path)
    expected = {
        "partials.ptl:card": "<b>&lt;x&gt;</b>",
        "partials/box.ptl": "<div><b>&lt;x&gt;</b></div>",
    }
    second = next(name for name in expected if name != first)
    for name in (first, second, first):
        assert loader.render(name, {"x": "<x>"}) == expected[name], name


# -- templates from strings ----------------------------------------------------------------


def test_from_string_imports_relative_to_the_search_path(
    site: tuple[Path, Path], make_loader: MakeLoader
) -> None:
    loader = make_loader(*site)
    template = loader.from_string(
        "from .layout import page\ndef render [html] (name):\n    page('Hi', '<b>%s</b>' % name)\n"
    )
    assert template.render({"name": "<x>"}) == "<title>Hi</title><main><b>&lt;x&gt;</b></main>"
    assert template.module is not None and template.module.__name__.startswith(loader.package)
    assert template.module.__name__ not in sys.modules  # nothing to import it by
    two = "def render [html] ():\n    'a'\ndef side [html] ():\n    'b'\n"
    side = loader.from_string(two, "side")
    assert side.render() == "b"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def other [html] ():\n    'x'\n", "no template 'render'"),
        ("def render():\n    return '<x>'\n", "ordinary function"),
        ("from .layout import page as render\n", "imported from layout.ptl"),
        ("render = 'text'\n", "is a str"),
    ],
)
def test_from_string_follows_the_rules_for_files(
    source: str, reason: str, site: tuple[Path, Path], make_loader: MakeLoader
) -> None:
    with pytest.raises(TemplateNotFound, match=reason):
        make_loader(*site).from_string(source)


def test_from_string_syntax_errors_are_located(tmp_path: Path, make_loader: MakeLoader) -> None:
    with pytest.raises(SyntaxError) as info:
        make_loader(tmp_path).from_string("def render [html] ():\n    if x\n", filename="<t>")
    assert (info.value.filename, info.value.lineno) == ("<t>", 2)


# -- file names that are not Python identifiers ------------------------------------------


@pytest.mark.parametrize("name", ["jquery.min.ptl", "x.y.ptl", "my-page.ptl", "2col.ptl"])
def test_dotted_and_other_file_names_load_that_file(
    name: str, tmp_path: Path, make_loader: MakeLoader
) -> None:
    write(tmp_path / "layout.ptl", 'def wrap [html] (x):\n    "[" \n    x\n    "]"\n')
    write(tmp_path / name, "from .layout import wrap\ndef render [html] ():\n    wrap('<own>')\n")
    # A decoy where a dotted import of "x.y" would look.
    write(tmp_path / "x" / "y.ptl", 'def render [html] ():\n    "decoy"\n')
    loader = make_loader(tmp_path)
    assert loader.render(name) == "[<own>]"
    assert loader.module(name).__file__ == str(tmp_path.resolve() / name)


def test_dotted_directory_names(tmp_path: Path, make_loader: MakeLoader) -> None:
    write(tmp_path / "v1.2" / "parts.ptl", 'def part [html] ():\n    "<p>"\n')
    page = "from .parts import part\ndef render [html] ():\n    part()\n"
    write(tmp_path / "v1.2" / "page.ptl", page)
    assert make_loader(tmp_path).render("v1.2/page.ptl") == "<p>"


def test_escaped_names_do_not_collide(tmp_path: Path, make_loader: MakeLoader) -> None:
    write(tmp_path / "a.b.ptl", 'def render [plain] ():\n    "dot"\n')
    write(tmp_path / "a-b.ptl", 'def render [plain] ():\n    "dash"\n')
    write(tmp_path / "a-2eb.ptl", 'def render [plain] ():\n    "lookalike"\n')
    loader = make_loader(tmp_path)
    assert [loader.render(n) for n in ("a.b.ptl", "a-b.ptl", "a-2eb.ptl")] == [
        "dot",
        "dash",
        "lookalike",
    ]


# -- template names resolve only to templates defined in that file ------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    write(tmp_path / "other.ptl", 'def shared [html] ():\n    "<shared>"\n')
    write(
        tmp_path / "page.ptl",
        """
        import os
        from .other import shared
        from os.path import join

        def render [html] ():
            "<page>"

        def _helper [html] ():
            "<private>"

        def ordinary():
            return "<ordinary>"

        class Widget:
            pass

        alias = render
        value = "text"
        """,
    )
    write(tmp_path / "plainfunc.ptl", 'def render():\n    return "<blank?>"\n')
    return tmp_path


def test_public_templates_and_aliases_resolve(mixed: Path, make_loader: MakeLoader) -> None:
    loader = make_loader(mixed)
    assert loader.render("page.ptl") == "<page>"
    assert loader.render("page.ptl:alias") == "<page>"
    assert loader.render("other.ptl:shared") == "<shared>"


PRIVATE = "(names starting with '_' are private)"


@pytest.mark.parametrize(
    "name, reason",
    [
        ("page.ptl:_helper", f"no template '_helper' in page.ptl {PRIVATE}"),
        ("page.ptl:__class__", f"no template '__class__' in page.ptl {PRIVATE}"),
        ("page.ptl:__dict__", f"no template '__dict__' in page.ptl {PRIVATE}"),
        ("page.ptl:shared", "'shared' in page.ptl is imported from other.ptl"),
        ("page.ptl:join", "'join' in page.ptl is imported from posixpath"),
        ("page.ptl:os", "'os' in page.ptl is a module, not a template"),
        ("page.ptl:Widget", "'Widget' in page.ptl is a class, not a template"),
        ("page.ptl:value", "'value' in page.ptl is a str, not a template"),
        ("page.ptl:nothing", "no template 'nothing' in page.ptl"),
        (
            "page.ptl:ordinary",
            "'ordinary' in page.ptl is an ordinary function: "
            "did you mean 'def ordinary [html] (...)'?",
        ),
        (
            "plainfunc.ptl",
            "'render' in plainfunc.ptl is an ordinary function: "
            "did you mean 'def render [html] (...)'?",
        ),
    ],
)
def test_only_templates_defined_in_the_file_resolve(
    name: str, reason: str, mixed: Path, make_loader: MakeLoader
) -> None:
    if name.endswith(":join") and os.path.__name__ != "posixpath":
        reason = reason.replace("posixpath", os.path.__name__)
    with pytest.raises(TemplateNotFound) as info:
        make_loader(mixed).get_template(name)
    assert info.value.reason == reason
    assert info.value.name == name


def test_template_marker(mixed: Path, make_loader: MakeLoader) -> None:
    module = make_loader(mixed).module("page.ptl")
    assert module.render.__ptl_template__ == "html"
    assert not hasattr(module.ordinary, "__ptl_template__")


def _by_signature(function: Callable[..., object]) -> tuple[set[str] | None, tuple[str, ...]]:
    """What inspect.signature says the function takes by keyword, and requires."""
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


def _wrapped(a: int, b: int = 1) -> None:
    pass


@functools.wraps(_wrapped)
def _wrapper(*args: object, **kwargs: object) -> None:
    pass


@pytest.mark.parametrize(
    "function",
    [
        lambda: None,
        lambda a, b, c=1: None,
        lambda a, /, b, *, c, d=2: None,
        lambda a=1, /, b=2, *args, c, **kw: None,
        lambda *args, **kwargs: None,
        lambda a, b=1, *, c=1, d: None,
        _wrapper,
        functools.partial(lambda a, b, *, c: None, 1, c=3),
    ],
)
def test_parameters_read_from_code_agree_with_inspect(function: Callable[..., object]) -> None:
    # Read from the code object so that rendering never imports inspect (and ast).
    assert loader_module._keyword_parameters(function) == _by_signature(function)


# -- recording template calls (Django's template_rendered) ---------------------------------


def _recording_site(tmp_path: Path) -> Loader:
    write(
        tmp_path / "layout.ptl",
        "def page [html] (body, title='t'):\n    '<main>'\n    body\n    '</main>'\n",
    )
    write(
        tmp_path / "index.ptl",
        "from . import layout\nfrom .layout import page\n"
        "def row [html] (item):\n    '<li>%s</li>' % item\n"
        "def stream ():\n    yield 'a'\n    yield row('b')\n"
        "def render [html] (items):\n"
        "    for i in items:\n        row(i)\n"
        "    page('body')\n    layout.page('again', title='x')\n",
    )
    return Loader([tmp_path])


def test_recording_gives_each_call_with_its_arguments(tmp_path: Path) -> None:
    loader = _recording_site(tmp_path)
    try:
        top = loader.get_template("index.ptl")
        assert str(top.render({"items": [1]})) == (
            "<li>1</li><main>body</main><main>again</main>"
        )  # before: nothing is recorded, nothing is wrapped
        calls: list[tuple[str, Callable[..., object], dict[str, object]]] = []
        with loader.recording(calls):
            assert str(top.render({"items": [1, 2]})).count("<li>") == 2
        assert [(name, args) for name, _, args in calls] == [
            ("index.ptl:row", {"item": 1}),
            ("index.ptl:row", {"item": 2}),
            ("layout.ptl:page", {"body": "body", "title": "t"}),
            ("layout.ptl:page", {"body": "again", "title": "x"}),
        ]
        module = loader.module("layout.ptl")
        assert calls[-1][1] is loader.get_template("layout.ptl:page").function
        assert calls[-1][1].__code__.co_filename.endswith("layout.ptl")
        # Outside the block, and in another context, nothing is recorded.
        top.render({"items": [3]})
        thread = threading.Thread(target=top.render, args=({"items": [4]},))
        with loader.recording(calls):
            thread.start()
            thread.join()
        assert len(calls) == 4
        # What the loader hands out stays the template itself, generators included.
        assert loader.get_template("index.ptl:stream").function.__name__ == "stream"
        assert list(loader.render("index.ptl:stream")) == ["a", htmltext("<li>b</li>")]
        assert not hasattr(loader.get_template("layout.ptl:page").function, "__wrapped__")
        assert module.page.__ptl_template__ == "html"  # the recorder looks like the template
        assert top.call_arguments({"items": [], "other": 1}) == {"items": []}
    finally:
        loader.close()


def test_a_failed_call_is_recorded_and_raises_the_template_s_error(tmp_path: Path) -> None:
    loader = _recording_site(tmp_path)
    try:
        loader.get_template("index.ptl")
        calls: list[tuple[str, Callable[..., object], dict[str, object]]] = []
        with loader.recording(calls), pytest.raises(TypeError, match="page"):
            loader.module("index.ptl").page()
        assert calls == [("layout.ptl:page", calls[0][1], {})]
    finally:
        loader.close()
