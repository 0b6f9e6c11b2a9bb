"""Builds the optional C accelerator; everything else is in pyproject.toml.

Without a working C compiler the build goes on with the pure-Python twin
(``ptl-wsgi --version`` then says the accelerator is not built).  With
``PTL_WSGI_STRICT_BUILD=1`` the build is a gate instead: any warning is an
error and any failure fails the command.
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

STRICT = bool(os.environ.get("PTL_WSGI_STRICT_BUILD"))


class optional_build_ext(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as exc:  # no compiler at all
            self._warn(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # compiler present but the build failed
            self._warn(exc)

    def _warn(self, exc):
        if STRICT:
            raise exc
        print(
            f"WARNING: the ptl_wsgi C accelerator was not built ({exc}); "
            "installing the pure-Python implementation instead.",
            file=sys.stderr,
        )


extra = ["-Wall", "-Wextra"]
if STRICT:
    extra.append("-Werror")

setup(
    ext_modules=[
        Extension(
            "ptl_wsgi._htmltext_c",
            sources=["ptl_wsgi/_htmltext_c.c"],
            extra_compile_args=extra if sys.platform != "win32" else [],
            optional=not STRICT,
        )
    ],
    cmdclass={"build_ext": optional_build_ext},
)
