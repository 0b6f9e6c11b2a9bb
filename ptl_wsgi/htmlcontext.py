"""The old name of :mod:`ptl_wsgi.escaping.context`, the context engine (the same module)."""

import sys

from ptl_wsgi.escaping import context

sys.modules[__name__] = context
