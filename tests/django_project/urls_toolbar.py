"""The test URLs plus django-debug-toolbar's, for the toolbar test's settings."""

from debug_toolbar.toolbar import debug_toolbar_urls

from .urls import urlpatterns as base

urlpatterns = [*base, *debug_toolbar_urls()]
