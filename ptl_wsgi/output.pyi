# Types for the deprecated name of ptl_wsgi.output_policy (ptl_wsgi._MOVED_MODULES), while
# contrib/flask.py still imports it: its rewrite on the Flask seam's branch (issue #30)
# renames the import, and this file goes with it.
from ptl_wsgi.output_policy import chunks as chunks
from ptl_wsgi.output_policy import is_html_type as is_html_type
from ptl_wsgi.output_policy import is_markup as is_markup
from ptl_wsgi.output_policy import markup as markup
from ptl_wsgi.output_policy import text as text
