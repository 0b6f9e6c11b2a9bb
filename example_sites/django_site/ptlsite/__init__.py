"""The PTL example site for Django: notes, with the admin beside them."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

DEMO_ADMIN = "admin"


def setup_db() -> None:
    """Create or update the SQLite database (``PTLSITE_DB``) by running the migrations."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptlsite.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)


def demo_admin(password_file: Path | None = None) -> tuple[str, str | None, Path]:
    """Make sure the demo's admin user exists; return its name, password and where that is kept.

    The password is random, made when the user is, and kept (readable only by its
    owner) in *password_file*, by default beside the database, so every start of
    the demo can say it.
    An ``admin`` user whose password is not that one (made or changed by hand) is
    left alone, and the password returned is None.
    """
    from django.conf import settings
    from django.contrib.auth import get_user_model

    where = password_file or Path(f"{settings.DATABASES['default']['NAME']}.admin-password")
    users = get_user_model()
    user = users.objects.filter(username=DEMO_ADMIN).first()
    password = where.read_text().strip() if where.exists() else ""
    if user is not None and password and user.check_password(password):
        return DEMO_ADMIN, password, where
    if user is not None:
        return DEMO_ADMIN, None, where
    password = secrets.token_urlsafe(12)
    users.objects.create_superuser(DEMO_ADMIN, "", password)
    fd = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file left from an earlier database keeps its mode otherwise
    with os.fdopen(fd, "w") as out:
        out.write(password + "\n")
    return DEMO_ADMIN, password, where
