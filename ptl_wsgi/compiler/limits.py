"""How deep source may nest: compiled on a fresh stack, within a recursion limit that fits."""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ptl_wsgi.compiler.source import Spot, spot_of, syntax_error


def _depth(tree: ast.AST) -> tuple[int, Spot | None]:
    """How deep *tree* is, and its deepest node that has a location."""
    best, deepest = 0, None
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > best and (spot := spot_of(node)) is not None:
            best, deepest = depth, spot
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return best, deepest


def _deepest_after_all(text: str, filename: str) -> Spot | None:
    """Where source that CPython found too deep to parse is deepest, if it can tell."""
    try:
        with _recursion_room(len(text)):
            return _depth(ast.parse(text, filename))[1]
    except (RecursionError, MemoryError, SyntaxError):
        return None


def _too_deep(filename: str, original: list[str], deepest: Spot | None) -> SyntaxError:
    message = (
        "too deeply nested to compile (Python gives up here: "
        "maximum recursion depth exceeded during compilation)"
    )
    if deepest is not None:
        return syntax_error(message, filename, original, deepest)
    # Without a tree the longest line is where deep nesting almost always is.
    lineno = max(range(len(original)), key=lambda i: len(original[i]), default=0) + 1
    text = original[lineno - 1] if original else ""
    return SyntaxError(message, (filename, lineno, 1, text, lineno, len(text.rstrip("\n")) + 1))


@contextmanager
def _nesting_limit(filename: str, original: list[str], deepest: Spot | None) -> Iterator[None]:
    """Turn a RecursionError left over despite :func:`_recursion_room` into a SyntaxError."""
    try:
        yield
    except RecursionError:
        raise _too_deep(filename, original, deepest) from None


# -- room to compile: a fresh stack, and a recursion limit that fits the tree -------------
#
# How deep CPython lets source nest depends on how much of the recursion limit the
# caller has used already, so the same file would compile at one import and not at
# another.  Compiling in a new thread starts every file at the same depth; the limit
# is raised (for the whole interpreter, so shared by every compilation) while a deep
# tree is transformed and compiled, because the transformer recurses per level and
# compiling an AST counts levels more strictly than compiling source does.

_STACK_SIZE = 64 * 1024 * 1024
_thread_lock = threading.Lock()
_limit_lock = threading.Lock()
_limit_users = 0
_limit_before = 0
_T = TypeVar("_T")


def _on_fresh_stack(func: Callable[..., _T], *args: Any) -> _T:
    """``func(*args)`` in a new thread with a large stack, so the caller's depth is irrelevant."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, func(*args)))
        except BaseException as exc:  # handed to the calling thread
            outcome.append((False, exc))

    thread: threading.Thread | None
    thread = threading.Thread(target=run, name="ptl-compile", daemon=True)
    with _thread_lock:
        # stack_size() applies to every thread started meanwhile: keep the window short.
        previous = threading.stack_size()
        try:
            threading.stack_size(_STACK_SIZE)
        except (ValueError, RuntimeError):
            pass
        try:
            thread.start()
        except RuntimeError:  # no threads here (interpreter shutdown, some platforms)
            thread = None
        finally:
            threading.stack_size(previous)
    if thread is None:
        run()
    else:
        thread.join()
    ok, value = outcome[0]
    if ok:
        result: _T = value  # func's
        return result
    outcome.clear()
    try:
        raise value
    finally:
        value = None  # no reference cycle through the traceback


def _user_recursion_limit() -> int:
    """The recursion limit as set by the program, not as raised by a compilation."""
    with _limit_lock:
        return _limit_before if _limit_users else sys.getrecursionlimit()


@contextmanager
def _recursion_room(depth: int) -> Iterator[None]:
    """A recursion limit high enough to transform and compile a tree *depth* levels deep."""
    global _limit_users, _limit_before
    # Measured: the transformer takes up to four frames per level.
    needed = 4 * depth + 200
    with _limit_lock:
        if _limit_users == 0:
            _limit_before = sys.getrecursionlimit()
        _limit_users += 1
        if needed > sys.getrecursionlimit():
            sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        with _limit_lock:
            _limit_users -= 1
            if _limit_users == 0:
                sys.setrecursionlimit(_limit_before)
