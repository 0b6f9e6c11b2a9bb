"""Iterating a body inside a context: one step at a time, ``close()`` included.

A response body or a streamed template runs after the code that set up its
context (the current request, the CSP nonce, the render context) returned,
and the server may iterate it from another context.  So the context is
entered and left around each step, never held from one step to the next: a
reset in another context would fail, and between steps the thread may serve
other requests.  The standard library only: every room may import this one.
"""

from __future__ import annotations

# Types for checkers only: the loader imports this room, and a render from the
# bytecode cache must not pay for typing or contextlib.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import (
        AsyncIterable,
        AsyncIterator,
        Callable,
        Iterable,
        Iterator,
        Mapping,
    )
    from contextlib import AbstractContextManager
    from contextvars import ContextVar, Token
    from typing import Any, TypeVar

    _T = TypeVar("_T")
    _V = TypeVar("_V")
    #: What makes the context of one step: called afresh for each step.
    ContextFactory = Callable[[], AbstractContextManager[object]]

__all__ = ["AsyncInContext", "InContext", "in_context", "in_context_async", "setting"]


class setting:  # lower case: used like contextlib's functions
    """A context manager setting *var* to *value* inside, as cheap as a token."""

    __slots__ = ("_token", "_value", "_var")

    def __init__(self, var: ContextVar[Any], value: Any) -> None:
        self._var = var
        self._value = value

    def __enter__(self) -> None:
        self._token: Token[Any] = self._var.set(self._value)

    def __exit__(self, *exc_info: object) -> None:
        self._var.reset(self._token)


class InContext:
    """Iterate *iterable* with each step, and ``close()``, inside ``enter()``; with
    *each*, each item is ``each(item)``, made inside ``enter()`` too."""

    __slots__ = ("_each", "_enter", "_iter", "_iterable")

    def __init__(
        self,
        iterable: Iterable[Any],
        enter: ContextFactory,
        each: Callable[[Any], Any] | None = None,
    ) -> None:
        self._iterable = iterable
        self._iter: Iterator[Any] | None = None
        self._enter = enter
        self._each = each

    def __iter__(self) -> InContext:
        return self

    def __next__(self) -> Any:
        __traceback_hide__ = True  # debuggers hide it (see ptl_wsgi.tracebacks)
        with self._enter():
            if self._iter is None:
                # iter() too: a body's __iter__ may already run the application's code.
                self._iter = iter(self._iterable)
            item = next(self._iter)
            return item if self._each is None else self._each(item)

    def close(self) -> None:
        close = getattr(self._iterable, "close", None)
        if close is not None:
            with self._enter():
                close()


def in_context(
    iterable: Iterable[_T],
    enter: ContextFactory,
    environ: Mapping[str, Any] | None = None,
    each: Callable[[_T], _T] | None = None,
) -> Iterable[_T]:
    """*iterable* with each step inside ``enter()`` (see :class:`InContext`).

    Lists and tuples run no code, and wrapping the server's
    ``wsgi.file_wrapper`` (from *environ*) would defeat its ``sendfile()``:
    those are returned as they are.
    """
    if isinstance(iterable, (list, tuple)):
        if each is not None:
            with enter():
                return [each(item) for item in iterable]
        return iterable
    if environ is not None:
        wrapper = environ.get("wsgi.file_wrapper")
        if isinstance(wrapper, type) and isinstance(iterable, wrapper):
            return iterable
    return InContext(iterable, enter, each)


class AsyncInContext:
    """:class:`InContext` for an async iterable: each ``__anext__`` and ``aclose()``
    inside ``enter()``.

    The context is entered across the step's awaits: a task's suspension leaves
    it in this task's context only, which no other task shares.
    """

    __slots__ = ("_each", "_enter", "_iter", "_iterable")

    def __init__(
        self,
        iterable: AsyncIterable[Any],
        enter: ContextFactory,
        each: Callable[[Any], Any] | None = None,
    ) -> None:
        self._iterable = iterable
        self._iter: AsyncIterator[Any] | None = None
        self._enter = enter
        self._each = each

    def __aiter__(self) -> AsyncInContext:
        return self

    async def __anext__(self) -> Any:
        __traceback_hide__ = True
        with self._enter():
            if self._iter is None:
                self._iter = self._iterable.__aiter__()
            item = await self._iter.__anext__()
            return item if self._each is None else self._each(item)

    async def aclose(self) -> None:
        # An async generator's __aiter__ is itself: the iterable is what to close.
        target = self._iterable if self._iter is None else self._iter
        aclose = getattr(target, "aclose", None)
        if aclose is not None:
            with self._enter():
                await aclose()


def in_context_async(
    iterable: AsyncIterable[_T], enter: ContextFactory, each: Callable[[_T], _T] | None = None
) -> AsyncIterator[_T]:
    """Async *iterable* with each step inside ``enter()`` (see :class:`AsyncInContext`)."""
    return AsyncInContext(iterable, enter, each)
