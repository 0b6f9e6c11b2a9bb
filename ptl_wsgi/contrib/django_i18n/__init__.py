"""A Django app whose ``makemessages`` finds messages in ``.ptl`` templates too.

Add ``"ptl_wsgi.contrib.django_i18n"`` to ``INSTALLED_APPS``; ``manage.py makemessages``
then examines ``.ptl`` files (besides ``.html``, ``.txt`` and ``.py``) as Python, with the
template annotations blanked so that xgettext reads them and reports their own line numbers.
"""
