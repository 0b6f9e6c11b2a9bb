"""Settings of the example site; ``PTLSITE_*`` environment variables override the defaults."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# A demo: the default key is public, so never deploy with it.
SECRET_KEY = os.environ.get("PTLSITE_SECRET_KEY", "ptl-example-site-not-a-secret")
# Off unless asked for: with DEBUG on, Django shows its own 404 page, not the site's.
DEBUG = os.environ.get("PTLSITE_DEBUG", "0") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", *os.environ.get("PTLSITE_HOSTS", "").split()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ptl_wsgi.contrib.django_i18n",  # makemessages reads the .ptl templates too
    "ptlsite",
    "notes",
]

MIDDLEWARE = [
    # The strict Content-Security-Policy: every script and style a PTL template's literals
    # write carries the request's nonce. The admin sends a policy of its own (ptlsite.middleware).
    "ptl_wsgi.contrib.django.CSPMiddleware",
    "ptlsite.middleware.admin_csp",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After sessions, before common: the browser's Accept-Language picks English or French.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Styles by nonce too: the <style> of the layout gets it like the scripts.
PTL_CSP_DIRECTIVES = {"style-src": ["'nonce'"]}

ROOT_URLCONF = "ptlsite.urls"
WSGI_APPLICATION = "ptlsite.wsgi.application"

TEMPLATES = [
    {
        # PTL first: it answers only for names ending in .ptl, the admin's .html
        # templates go on to DjangoTemplates. NAME is required (see docs/django.md).
        "BACKEND": "ptl_wsgi.contrib.django.PTLTemplates",
        "NAME": "ptl",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("PTLSITE_DB", BASE_DIR / "db.sqlite3"),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "Français")]
# Only the .po files are in the repository; ptlsite.apps compiles them when the site starts.
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Relative, so Django prefixes it with SCRIPT_NAME when the site is mounted under a path.
STATIC_URL = "static/"
