"""The idioms of template languages, for PTL written by hand and by the converters.

Three answers to what Jinja2 and Django templates give for free:

**Loops** — ``for loop, post in looped(posts):`` gives ``loop.first``, ``loop.last``,
``loop.index``, ``loop.revindex``, ``loop.cycle("odd", "even")``, ``loop.changed(day)``
(Jinja2's names) and ``loop.counter``, ``loop.revcounter``, ``loop.parentloop`` (Django's).
A nested loop names its parent, ``looped(comments, parent=loop)``, for ``depth`` and
``parentloop``.  A generator is consumed as it goes: ``last`` and ``nextitem`` look one item
ahead, and only ``length`` and ``revindex`` read it to the end, when first asked.

**Lenient values** — converted templates keep the originals' forgiveness:
``dot(g, "user")`` is ``g.user`` and ``at(post, "author_id")`` is ``post["author_id"]``,
each trying the other spelling and then giving :data:`undefined` instead of raising, as
Jinja2's attribute and item lookup do; ``undefined`` renders empty, is false, iterates as
empty, and attribute or item access on it give it again (Jinja2's ``ChainableUndefined``,
Django's ``string_if_invalid = ""``).  So ``at(dot(g, "user"), "id") == at(post,
"author_id")`` is ``False`` with nobody logged in, where ``g.user["id"]`` raises.  Calling
it, or arithmetic with it, raises :class:`UndefinedError` naming what was missing.

A converter writes ``TODO("file:line: construct: reason")`` where it could not
convert something: it raises :class:`NotConvertedError` when a render reaches it.

**Layouts** — ``{% extends %}`` and ``{% block %}`` are a class and its ``[html]``
methods.  A layout subclasses :class:`Layout`; each block is a method; the method ``page``
renders the whole document, calling the blocks through ``self`` (``{% block title %}`` is
``self.title()`` there).  A page subclasses its layout and overrides the blocks it fills;
``super().title()`` is ``{{ super() }}``; blocks nest freely, since a block that calls
another is just a method calling a method, and a page overriding the inner one changes it
wherever it is called.  The context is ``self.context`` and, for names no block uses, an
attribute (``self.posts``).  The module's ``render`` template renders the page with the
context it is given as keyword arguments, as every integration calls it::

    # file: templates/base.ptl
    from ptl_wsgi.idioms import Layout

    class Base(Layout):
        def title [html] (self):
            "My site"

        def header [html] (self):
            "<h1>"
            self.title()
            "</h1>"

        def content [html] (self):
            pass

        def page [html] (self):
            "<!doctype html><title>"
            self.title()
            "</title>"
            self.header()
            self.content()

    # file: templates/posts.ptl
    from ptl_wsgi.idioms import looped
    from .base import Base

    class Posts(Base):
        def title [html] (self):
            "Posts"

        def header [html] (self):
            super().header()
            '<a href="/new">New</a>'

        def content [html] (self):
            for loop, post in looped(self.posts):
                '<article class="%s">%s</article>' % (loop.cycle("odd", "even"), post)

    def render [html] (**context):
        Posts(**context).page()

docs/layouts.md shows it whole, with the context and a layout that also renders alone.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any, Generic, NoReturn, TypeVar

__all__ = [
    "TEMPLATE_SUFFIXES",
    "TODO",
    "Layout",
    "NotConvertedError",
    "LoopContext",
    "Undefined",
    "UndefinedError",
    "at",
    "converted_name",
    "dot",
    "is_undefined",
    "looped",
    "undefined",
]

T = TypeVar("T")


class UndefinedError(Exception):
    """An undefined value was used where no lenient answer exists (called, added, ...)."""


class Undefined:
    """A missing value: renders as nothing, is false and empty, and chains.

    ``name`` says what was missing, for the error raised when it is called or
    computed with.  All undefined values are equal to each other and to nothing else,
    as in Jinja2.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str = "") -> None:
        self._name = name

    def _fail(self, *args: object, **kwargs: object) -> NoReturn:
        what = repr(self._name) if self._name else "a value"
        raise UndefinedError(f"{what} is undefined")

    def __getattr__(self, name: str) -> Undefined:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Undefined(f"{self._name}.{name}" if self._name else name)

    def __getitem__(self, key: object) -> Undefined:
        return Undefined(f"{self._name}[{key!r}]" if self._name else repr(key))

    def __str__(self) -> str:
        return ""

    def __html__(self) -> str:
        return ""

    def __format__(self, spec: str) -> str:
        return format("", spec)

    def __repr__(self) -> str:
        return f"Undefined({self._name!r})" if self._name else "Undefined"

    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __contains__(self, item: object) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Undefined)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, Undefined)

    def __hash__(self) -> int:
        return hash(Undefined)

    __call__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = _fail
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __neg__ = __pos__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    __int__ = __float__ = __complex__ = _fail


#: The missing value with no name.
undefined = Undefined()


def is_undefined(value: object) -> bool:
    """Whether *value* is undefined (Jinja2's ``is undefined`` test)."""
    return isinstance(value, Undefined)


def dot(obj: Any, name: str) -> Any:
    """``obj.name`` as Jinja2 reads it: the attribute, else the item, else undefined."""
    if isinstance(obj, Undefined):
        return getattr(obj, name)
    try:
        return getattr(obj, name)
    except AttributeError:
        pass
    try:
        return obj[name]
    except (TypeError, LookupError):
        return Undefined(name)


def at(obj: Any, key: Any) -> Any:
    """``obj[key]`` as Jinja2 reads it: the item, else the attribute named *key*, else undefined.

    Errors other than a missing key or a wrong type (a werkzeug ``BadRequestKeyError``
    is a ``KeyError``, so a missing form field is undefined too) are not caught.
    """
    if isinstance(obj, Undefined):
        return obj[key]
    try:
        return obj[key]
    except (AttributeError, LookupError, TypeError):
        if isinstance(key, str):
            try:
                return getattr(obj, key)
            except AttributeError:
                pass
        return Undefined(key if isinstance(key, str) else repr(key))


_NOTHING: Any = object()


class LoopContext(Generic[T]):
    """The state of one :func:`looped` loop at its current item.

    One object per loop, updated as the loop advances (as Jinja2's ``loop``).
    """

    def __init__(self, iterable: Iterable[T], parent: LoopContext[Any] | None = None) -> None:
        self._iterator = iter(iterable)
        self._sized = iterable if hasattr(iterable, "__len__") else None
        self._ahead: list[T] = []  # items read from the iterator but not yet reached
        self._length: int | None = None
        self._parent = parent
        self._last_changed: Any = _NOTHING
        self._index0 = -1
        self._current: Any = undefined
        self._previous: Any = undefined

    # -- advancing -------------------------------------------------------------------

    def _peek(self) -> Any:
        if not self._ahead:
            try:
                self._ahead.append(next(self._iterator))
            except StopIteration:
                return _NOTHING
        return self._ahead[0]

    def _advance(self) -> Iterator[tuple[LoopContext[T], T]]:
        while True:
            item = self._ahead.pop(0) if self._ahead else next(self._iterator, _NOTHING)
            if item is _NOTHING:
                return
            if self._index0 >= 0:
                self._previous = self._current
            self._index0 += 1
            self._current = item
            yield self, item

    # -- Jinja2's names --------------------------------------------------------------

    @property
    def index0(self) -> int:
        """The position of the current item, from 0."""
        return self._index0

    @property
    def index(self) -> int:
        """The position of the current item, from 1."""
        return self.index0 + 1

    @property
    def length(self) -> int:
        """How many items the loop has (reads a generator to its end, once)."""
        if self._length is None:
            if self._sized is not None:
                self._length = len(self._sized)  # type: ignore[arg-type]
            else:
                self._ahead.extend(self._iterator)
                self._length = self.index0 + 1 + len(self._ahead)
        return self._length

    @property
    def revindex(self) -> int:
        """How many items are left, the current one included (1 on the last)."""
        return self.length - self.index0

    @property
    def revindex0(self) -> int:
        """How many items are left after the current one (0 on the last)."""
        return self.length - self.index

    @property
    def first(self) -> bool:
        """Whether this is the first item."""
        return self.index0 == 0

    @property
    def last(self) -> bool:
        """Whether this is the last item (looks one item ahead)."""
        return self._peek() is _NOTHING

    @property
    def previtem(self) -> Any:
        """The item before the current one; undefined on the first."""
        return self._previous

    @property
    def nextitem(self) -> Any:
        """The item after the current one; undefined on the last."""
        item = self._peek()
        return undefined if item is _NOTHING else item

    @property
    def depth(self) -> int:
        """How deep this loop is nested, from 1 (a loop with no parent)."""
        return 1 if self._parent is None else self._parent.depth + 1

    @property
    def depth0(self) -> int:
        """How deep this loop is nested, from 0."""
        return self.depth - 1

    def cycle(self, *values: Any) -> Any:
        """The value for this item among *values*, in turn (``loop.cycle("odd", "even")``)."""
        if not values:
            raise TypeError("cycle() needs at least one value")
        return values[self.index0 % len(values)]

    def changed(self, *values: Hashable) -> bool:
        """Whether *values* differ from those of the previous call (True on the first)."""
        if values != self._last_changed:
            self._last_changed = values
            return True
        return False

    # -- Django's names --------------------------------------------------------------

    counter = index
    counter0 = index0
    revcounter = revindex
    revcounter0 = revindex0

    @property
    def parentloop(self) -> Any:
        """The enclosing loop's context; undefined for a loop with no parent."""
        return undefined if self._parent is None else self._parent

    def __repr__(self) -> str:
        return f"<LoopContext {self.index}>"


def looped(
    iterable: Iterable[T], parent: LoopContext[Any] | None = None
) -> Iterator[tuple[LoopContext[T], T]]:
    """Iterate ``(loop, item)`` pairs, *loop* describing where the loop is.

    ``for loop, post in looped(posts):`` is Jinja2's ``{% for post in posts %}`` with its
    ``loop`` and Django's ``forloop``; *parent* is the enclosing loop's context.
    """
    return LoopContext(iterable, parent)._advance()


#: Extensions a converted template loses (``base.html`` becomes ``base.ptl``).
TEMPLATE_SUFFIXES = (".html", ".htm", ".xml", ".txt", ".j2", ".jinja", ".jinja2")


def converted_name(name: str) -> str:
    """The converted template's name: ``base.html`` → ``base.ptl``, ``layout`` → ``layout.ptl``.

    A template extension (:data:`TEMPLATE_SUFFIXES`) is replaced by ``.ptl``, which any
    other name gets appended; the converters name files so, and converted templates the
    names they compute at render time.
    """
    stem, dot_suffix = name.rsplit(".", 1) if "." in name.rsplit("/", 1)[-1] else (name, "")
    if dot_suffix and "." + dot_suffix.lower() in TEMPLATE_SUFFIXES:
        return stem + ".ptl"
    return name + ".ptl"


class NotConvertedError(NotImplementedError):
    """A render reached what a converter could not convert (see its report)."""


def TODO(what: str) -> NoReturn:
    """Fail loudly: *what* (``"file:line: construct: reason"``) was not converted.

    A converter writes it where the construct was, as a statement or in place of a value.
    """
    raise NotConvertedError(f"not converted: {what}")


class Layout:
    """Base of layout classes: blocks are ``[html]`` methods, ``page`` is the document.

    Instances hold the render's context (``self.context``); a context value is
    also an attribute when no method or attribute of the class has its name.
    """

    context: Mapping[str, Any]

    def __init__(self, /, **context: Any) -> None:  # (a context may hold 'self')
        self.context = context

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup failed: blocks and methods win over the context.
        if name == "context" or name.startswith("__"):
            raise AttributeError(name)
        try:
            return self.context[name]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__!r} has no block {name!r} and the context no value {name!r}"
            ) from None

    def get(self, name: str, default: Any = _NOTHING) -> Any:
        """The context's value *name*, else *default*, else :data:`undefined`.

        Converted templates read the context so.
        """
        try:
            return self.context[name]
        except KeyError:
            return Undefined(name) if default is _NOTHING else default

    def page(self) -> Any:
        """The whole document; a layout defines it as an ``[html]`` method."""
        raise NotImplementedError(f"{type(self).__name__} defines no page() method")
