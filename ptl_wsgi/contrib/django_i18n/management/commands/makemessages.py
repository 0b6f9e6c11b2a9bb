"""``makemessages`` that reads ``.ptl`` files as Python rather than as Django templates."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.management.commands import makemessages

from ptl_wsgi.tools.babel_extract import python_view_text


class BuildFile(makemessages.BuildFile):
    """Django's build file, with ``.ptl`` files pre-processed to their Python view."""

    @cached_property
    def is_ptl(self) -> bool:
        return bool(self.domain == "django" and self.translatable.file.endswith(".ptl"))

    def preprocess(self) -> None:
        if not self.is_ptl:
            super().preprocess()
            return
        # Django would run its template lexer on any non-.py file; a .ptl file is Python.
        with open(self.path, "rb") as fp:
            view = python_view_text(fp.read(), self.path)
        with open(self.work_path, "w", encoding="utf-8") as fp:
            fp.write(view)


class Command(makemessages.Command):
    __doc__ = makemessages.Command.__doc__
    help = makemessages.Command.help + " Files ending in .ptl are examined too."
    build_file_class = BuildFile

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("domain", "django") == "django" and not options.get("extensions"):
            options["extensions"] = ["html", "txt", "py", "ptl"]
        super().handle(*args, **options)
