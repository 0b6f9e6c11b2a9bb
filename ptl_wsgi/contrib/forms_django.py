"""Forms under Django: ``HttpRequest`` reading, uploaded files, Django's CSRF middleware.

Loaded by :mod:`ptl_wsgi.forms.adapters` when a form is given a Django
``HttpRequest``, so that ``Form(request)`` reads ``request.POST`` and
``request.FILES`` and renders Django's ``csrfmiddlewaretoken``.
"""

from __future__ import annotations

from typing import Any

from django.core.files.uploadedfile import UploadedFile as DjangoUploadedFile
from django.http import HttpRequest
from django.middleware.csrf import get_token

from ptl_wsgi.forms.csrf import CSRFPolicy
from ptl_wsgi.forms.inputs import FormData, UploadedFile

__all__ = ["DjangoCSRF", "DjangoFormsAdapter", "adapter"]


class DjangoCSRF(CSRFPolicy):
    """Django: render ``csrfmiddlewaretoken`` and leave checking to the middleware.

    ``CsrfViewMiddleware`` rejects a bad token with a 403 before the view runs
    and marks accepted requests ``csrf_processing_done``.  A POST without that
    mark (middleware missing, or a ``csrf_exempt`` view) fails the check: use
    ``Form(csrf=False)`` deliberately for exempt views.
    """

    field_name = "csrfmiddlewaretoken"

    def __init__(self, request: HttpRequest) -> None:
        self.request = request

    def token(self) -> str:
        return str(get_token(self.request))

    def check(self, submitted: str | None) -> bool:
        return bool(getattr(self.request, "csrf_processing_done", False))


def _uploaded(obj: Any) -> Any:
    """A Django upload as the forms' :class:`UploadedFile`; anything else as it is."""
    if isinstance(obj, DjangoUploadedFile):
        if not obj.name:
            return None
        return UploadedFile(
            filename=str(obj.name),
            content_type=str(obj.content_type or "application/octet-stream"),
            size=int(obj.size or 0),
            stream=obj.file,
            original=obj,
        )
    return obj


class _Files:
    """``request.FILES`` with each upload as an :class:`UploadedFile`."""

    def __init__(self, files: Any) -> None:
        self._files = files

    def getlist(self, name: str) -> list[Any]:
        return [_uploaded(f) for f in self._files.getlist(name)]


class DjangoFormsAdapter:
    """Django's side of forms."""

    def form_data(self, request: Any, method: str) -> FormData | None:
        """``request.GET`` for GET forms; ``request.POST`` and ``request.FILES`` otherwise."""
        if not isinstance(request, HttpRequest):
            return None
        if method.lower() == "get":
            return FormData(request.method or "GET", request.GET, None, request)
        return FormData(request.method or "GET", request.POST, _Files(request.FILES), request)

    def csrf_policy(self, data: FormData) -> CSRFPolicy | None:
        """:class:`DjangoCSRF` for a form reading a Django request."""
        return DjangoCSRF(data.request) if isinstance(data.request, HttpRequest) else None


adapter = DjangoFormsAdapter()
