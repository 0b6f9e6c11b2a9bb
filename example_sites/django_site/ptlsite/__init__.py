"""The PTL example site for Django: notes, with the admin beside them."""

import os


def setup_db() -> None:
    """Create or update the SQLite database (``PTLSITE_DB``) by running the migrations."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptlsite.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
