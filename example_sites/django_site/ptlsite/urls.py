from django.contrib import admin
from django.contrib.staticfiles.views import serve
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from . import views

urlpatterns = [
    path("", include("notes.urls")),
    path("admin/", admin.site.urls),
    path("favicon.svg", views.favicon, name="favicon"),
    path("favicon.ico", RedirectView.as_view(pattern_name="favicon", permanent=True)),
    # A demo with no web server in front: the admin's CSS is served here, DEBUG or not.
    re_path(r"^static/(?P<path>.*)$", serve, {"insecure": True}),
]

handler404 = "ptlsite.views.page_not_found"
