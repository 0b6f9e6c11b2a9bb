from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class PtlsiteConfig(AppConfig):
    """The project itself as an app: its catalogs are compiled when it starts."""

    name = "ptlsite"

    def ready(self) -> None:
        from .catalogs import compile_catalogs

        for folder in settings.LOCALE_PATHS:
            compile_catalogs(Path(folder))
