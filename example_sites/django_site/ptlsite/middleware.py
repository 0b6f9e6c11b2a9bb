"""The admin's own Content-Security-Policy.

``CSPMiddleware`` sends the strict policy with every response, and every script and
style of the PTL pages carries its nonce. The admin's Django templates write no
nonce; their scripts and stylesheets are files of this site, so the admin gets a
policy of its own (the outer ``CSPMiddleware`` keeps a header that is already there).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from ptl_wsgi.csp import HEADER

ADMIN_POLICY = "script-src 'self'; object-src 'none'; base-uri 'none'"


def admin_csp(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[..., HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if request.path_info.startswith("/admin/"):
            response.setdefault(HEADER, ADMIN_POLICY)
        return response

    return middleware
