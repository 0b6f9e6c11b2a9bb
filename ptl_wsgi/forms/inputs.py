"""Submitted fields and files: one view for every source, and the WSGI sources.

This reads what needs no framework: a werkzeug ``Request`` (Flask's too: it
has ``form``, ``args`` and ``files``), a WSGI environ (wrapped in a werkzeug
``Request`` on demand) and plain mappings and MultiDicts, taken as
already-submitted POST data, which is what tests want.  Frameworks with
requests of their own (Django) are read by their adapter in ``contrib``
(:mod:`ptl_wsgi.forms.adapters`), which builds the same :class:`FormData`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

__all__ = ["FormData", "UploadedFile", "form_data"]


@dataclass(frozen=True)
class UploadedFile:
    """One uploaded file, the same whichever framework received it.

    ``filename`` and ``content_type`` come from the client: never trust them.
    ``original`` is the framework's own object (werkzeug ``FileStorage``, or
    what a framework adapter read, such as Django's ``UploadedFile``).
    """

    filename: str
    content_type: str
    size: int
    stream: IO[bytes]
    original: Any = None

    def read(self) -> bytes:
        """Return the whole content, from the start."""
        self.stream.seek(0)
        return self.stream.read()


def _getlist(container: Any, name: str) -> list[Any]:
    if container is None:
        return []
    getlist = getattr(container, "getlist", None)
    if getlist is not None:
        return list(getlist(name))
    if name not in container:
        return []
    value = container[name]
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _stream_size(stream: Any) -> int:
    try:
        position = stream.tell()
        stream.seek(0, 2)
        size = stream.tell()
        stream.seek(position)
    except (AttributeError, OSError, ValueError):
        return 0
    return int(size)


def _uploaded(obj: Any) -> UploadedFile | None:
    """Normalise a framework file object; None when it is not a real upload."""
    if isinstance(obj, UploadedFile):
        return obj
    if hasattr(obj, "stream") and hasattr(obj, "filename"):  # werkzeug FileStorage
        if not obj.filename:
            return None
        return UploadedFile(
            filename=str(obj.filename),
            content_type=str(obj.content_type or "application/octet-stream"),
            size=_stream_size(obj.stream),
            stream=obj.stream,
            original=obj,
        )
    return None


class FormData:
    """Submitted fields and files, with ``getlist`` semantics.

    Values are returned exactly as the source holds them (normally ``str``;
    plain mappings may hold bytes or other types, which widgets reject with a
    field error).
    """

    def __init__(
        self,
        method: str,
        fields: Any = None,
        files: Any = None,
        request: Any = None,
    ) -> None:
        self.method = method.upper()
        self.request = request
        self._fields = fields
        self._files = files

    def getlist(self, name: str) -> list[Any]:
        """All values submitted under *name*, in order."""
        return _getlist(self._fields, name)

    def getfiles(self, name: str) -> list[UploadedFile | None]:
        """All uploads under *name*; None for a part that is not a file upload."""
        return [_uploaded(f) for f in _getlist(self._files, name)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(self.getlist(name) or self.getfiles(name))

    @classmethod
    def empty(cls) -> FormData:
        """Nothing submitted: a GET with no data."""
        return cls("GET")


def _is_environ(source: object) -> TypeGuard[WSGIEnvironment]:
    return isinstance(source, Mapping) and "REQUEST_METHOD" in source and "wsgi.input" in source


def _has_form(source: object) -> bool:
    """Whether *source* has a ``form``, found without reading it: an async framework's
    ``form`` property makes a coroutine at each read, which would go unawaited."""
    # __class__, not type(): Flask's ``request`` is a proxy that passes it on.
    if hasattr(source.__class__, "form"):
        return True
    try:
        return "form" in vars(source)
    except TypeError:  # no __dict__
        return False


def form_data(source: Any, method: str = "post") -> FormData:
    """Build :class:`FormData` for a form with HTTP *method* from *source*.

    *source* may be a werkzeug/Flask ``Request``, a WSGI environ, a
    :class:`FormData`, a mapping or MultiDict of submitted values (taken as a
    POST), or None (nothing submitted).  :func:`ptl_wsgi.forms.form_data` also
    takes the requests of frameworks with an adapter (Django's).
    """
    get = method.lower() == "get"
    if source is None:
        return FormData.empty()
    if isinstance(source, FormData):
        return source
    if _is_environ(source):
        request = source.get("werkzeug.request")
        if request is None:
            from werkzeug.wrappers import Request

            request = Request(source)  # registers itself in the environ for reuse
        source = request
    if _has_form(source) and hasattr(source, "args") and hasattr(source, "method"):
        fields = source.args if get else source.form
        if hasattr(type(fields), "__await__"):
            # An async framework's request (Quart's has its own adapter): read as fields,
            # a coroutine would be no submission, and a coroutine never awaited.
            close = getattr(fields, "close", None)
            if close is not None:
                close()
            raise TypeError(
                f"the form of a {type(source).__name__} is read with await: "
                "pass the awaited data (a mapping or FormData) instead of the request"
            )
        return FormData(source.method, fields, None if get else source.files, source)
    if isinstance(source, Mapping) or hasattr(source, "getlist"):
        return FormData("GET" if get else "POST", source, source)
    raise TypeError(f"cannot read form data from {type(source).__name__}")
