import sys

from ptl_wsgi.cli import main

sys.exit(main())
