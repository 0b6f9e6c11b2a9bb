"""The WSGI application; it honours ``SCRIPT_NAME``, so it can be mounted under a prefix."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptlsite.settings")

application = get_wsgi_application()
