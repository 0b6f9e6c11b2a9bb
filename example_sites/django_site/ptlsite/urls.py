from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.views import serve
from django.urls import include, path

urlpatterns = [
    path("", include("notes.urls")),
    path("admin/", admin.site.urls),
]

if settings.DEBUG:
    # Not only runserver's static handler: the admin's CSS must load when a WSGI
    # dispatcher mounts the site under a prefix too.
    urlpatterns.append(path("static/<path:path>", serve))
