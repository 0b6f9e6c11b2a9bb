"""Deprecated: the old name of :mod:`ptl_wsgi.cgiapp`, to be removed in 0.3.

Kept for one release because 0.1.0's CGI scripts name it in their ``#!``
line (``python3 -m ptl_wsgi.cgi``) and a script that cannot start is a 500 on
a live server.  It was renamed because it shares its name with the standard
library's ``cgi`` module (which any ``import cgi`` from inside this folder, or
a run of this file, would get instead).
"""

from __future__ import annotations

import sys
import warnings

from ptl_wsgi.cgiapp import CGIGateway, as_wsgi_app, main, run_cgi, run_script

__all__ = ["CGIGateway", "as_wsgi_app", "main", "run_cgi", "run_script"]

warnings.warn(
    "ptl_wsgi.cgi is deprecated and will be removed in 0.3: use ptl_wsgi.cgiapp "
    "(in a script's #! line: python3 -m ptl_wsgi.cgiapp)",
    DeprecationWarning,
    # Run as `python -m ptl_wsgi.cgi`, this module is __main__, where Python shows
    # DeprecationWarning by default; imported, the warning names the importer.
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    sys.exit(main())
