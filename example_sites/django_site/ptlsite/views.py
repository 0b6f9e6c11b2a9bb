"""Site-wide views: the favicon and the "page not found" page."""

from pathlib import Path

from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control

FAVICON = Path(__file__).resolve().parent.parent.parent / "favicon.svg"


@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> FileResponse:
    return FileResponse(FAVICON.open("rb"), content_type="image/svg+xml")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: the PTL page, with the status Django asked for (used when DEBUG is off)."""
    return render(request, "not_found.ptl", {"request_path": request.path}, status=404)
