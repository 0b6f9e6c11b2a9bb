"""Editing templates under load: every render gives one complete version."""

from __future__ import annotations

import os
import textwrap
import threading
import time
from pathlib import Path

import pytest

from ptl_wsgi.loader import Loader

REPO = Path(__file__).parents[2]


# -- editing templates under load -----------------------------------------------------------

VERSIONS = 40


def layout_source(version: int) -> str:
    return textwrap.dedent(
        f"""
        def wrap [html] (body):
            '<L{version}>'
            {"'" + "l" * (version % 7) + "'"}
            body
            '</L{version}>'
        """
    )


def page_source(version: int) -> str:
    return textwrap.dedent(
        f"""
        from .layout import wrap

        def body [html] (name):
            '<P{version}>'
            {"'" + "p" * (version % 5) + "'"}
            name
            '</P{version}>'

        def render [html] (name):
            wrap(body(name))
        """
    )


def complete_outputs() -> set[str]:
    """Every page that complete versions of the two files can make together."""
    return {
        f"<L{v}>{'l' * (v % 7)}<P{w}>{'p' * (w % 5)}&lt;x&gt;</P{w}></L{v}>"
        for v in range(VERSIONS)
        for w in range(VERSIONS)
    }


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


@pytest.mark.slow
def test_rendering_while_templates_are_edited(tmp_path: Path) -> None:
    write_atomically(tmp_path / "layout.ptl", layout_source(0))
    write_atomically(tmp_path / "page.ptl", page_source(0))
    loader = Loader([tmp_path], auto_reload=True)
    complete = complete_outputs()
    errors: list[str] = []
    renders = [0]
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                output = str(loader.render("page.ptl", {"name": "<x>"}))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if output not in complete:
                errors.append(f"not a complete version: {output!r}")
            renders[0] += 1

    threads = [threading.Thread(target=reader) for _ in range(16)]
    for thread in threads:
        thread.start()
    try:
        for version in range(1, VERSIONS):
            write_atomically(tmp_path / "layout.ptl", layout_source(version))
            time.sleep(0.01)
            write_atomically(tmp_path / "page.ptl", page_source(version))
            time.sleep(0.03)
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=60)
        loader.close()
    assert not errors, errors[:10]
    assert renders[0] > 100
    fresh = Loader([tmp_path])
    try:
        final = str(fresh.render("page.ptl", {"name": "<x>"}))
    finally:
        fresh.close()
    assert final.startswith(f"<L{VERSIONS - 1}>") and f"<P{VERSIONS - 1}>" in final
