"""Translation that keeps PTL's trust rule: translated markup stays markup.

``gettext`` returns a plain ``str``, so in an ``[html]`` template a translated literal would
be escaped (``&lt;b&gt;Bienvenue&lt;/b&gt;``).  The functions here translate through the
active backend and then apply one rule:

* the translation of a trusted msgid (htmltext, or anything with ``__html__``, such as a
  string literal in an ``[html]`` template) is trusted: it is returned as htmltext;
* the translation of a plain ``str`` is a plain ``str``, escaped on output as always.

A translation whose markup differs from its msgid's is still trusted: translators' catalogs
are part of the application, like its templates.  But markup must end in text, as a
msgid a template writes does: a translation that leaves a tag, an attribute or raw text
open (what follows it would land there, a CSP nonce included) is returned escaped, shown
as text.  ``%``, ``format()`` and ``format_map()`` on a
trusted translation are htmltext's: each value is escaped for the place it lands in the
translated markup (docs/contextual-escaping.md, "Formatting at run time").

The backend is chosen on every call, so one module serves every framework:

1. Flask-Babel, inside an app context of an app that has the ``babel`` extension;
2. Django's translation machinery, when Django is imported, configured and its apps ready;
3. the translations installed with :func:`install` (by default ``gettext.NullTranslations``).

Flask and Django are never imported here unless the application already imported them.
"""

from __future__ import annotations

import gettext as _gettext
import sys
from collections.abc import Callable
from typing import Any, Protocol

from ptl_wsgi.escaping.rules import is_markup
from ptl_wsgi.html import htmlescape, htmltext

__all__ = [
    "_",
    "gettext",
    "gettext_lazy",
    "install",
    "installed",
    "LazyText",
    "ngettext",
    "ngettext_lazy",
    "npgettext",
    "npgettext_lazy",
    "pgettext",
    "pgettext_lazy",
]


class Translations(Protocol):
    """What :func:`install` accepts: the ``gettext.NullTranslations`` interface."""

    def gettext(self, message: str, /) -> str: ...
    def ngettext(self, singular: str, plural: str, n: int, /) -> str: ...
    def pgettext(self, context: str, message: str, /) -> str: ...
    def npgettext(self, context: str, singular: str, plural: str, n: int, /) -> str: ...


_installed: Translations = _gettext.NullTranslations()


def install(translations: Translations) -> None:
    """Use *translations* (e.g. ``gettext.translation(...)``) when no framework is active."""
    global _installed
    _installed = translations


def installed() -> Translations:
    """The translations :func:`install` last installed."""
    return _installed


def _flask_babel() -> Translations | None:
    if "flask_babel" not in sys.modules:
        return None
    import flask
    import flask_babel

    if not flask.has_app_context() or "babel" not in flask.current_app.extensions:
        return None
    translations: Translations | None = flask_babel.get_translations()
    return translations


class _Django:
    """Django's functions under the names of the ``NullTranslations`` methods."""

    def __init__(self) -> None:
        from django.utils import translation

        self.gettext = translation.gettext
        self.ngettext = translation.ngettext
        self.pgettext = translation.pgettext
        self.npgettext = translation.npgettext


_django_backend: _Django | None = None


def _django() -> Translations | None:
    global _django_backend
    if "django" not in sys.modules:
        return None
    try:
        from django.apps import apps
        from django.conf import settings
    except ImportError:
        return None
    # Django's catalogs cannot load before the app registry is ready.
    if not settings.configured or not apps.ready:
        return None
    if _django_backend is None:
        _django_backend = _Django()
    return _django_backend


def backend() -> Translations:
    """The translations this call uses (see the module's docstring for the order)."""
    translations = _flask_babel()
    if translations is None:
        translations = _django()
    return _installed if translations is None else translations


def _markup(message: Any) -> str | None:
    """*message*'s markup if it is trusted, else None."""
    return str(message.__html__()) if is_markup(message) else None


def _result(translated: str, trusted: bool) -> str:
    if not trusted:
        return str(translated)
    text = str(translated)
    # A catalog is not the template's author: markup it gives must end in text, as the
    # msgid the template wrote does, or what follows it (a literal's script, with the
    # request's CSP nonce) would land in a tag or an attribute it left open.  Such a
    # translation is shown as text.
    return htmltext(text) if _balanced(text) else htmlescape(text)


_BALANCED: dict[str, bool] = {}
_MAX_BALANCED = 4096


def _balanced(text: str) -> bool:
    """Whether markup *text*, parsed from text, ends in text (cached per text)."""
    known = _BALANCED.get(text)
    if known is None:
        from ptl_wsgi.escaping.context import TEXT, ContextError, advance, settle

        try:
            known = settle(advance(TEXT, text)) == TEXT  # (nothing held back, not even "<")
        except ContextError:
            known = False
        if len(_BALANCED) >= _MAX_BALANCED:
            _BALANCED.clear()  # catalog strings are few; a flood is not kept
        _BALANCED[text] = known
    return known


def _trust(*messages: Any) -> tuple[bool, list[str]]:
    """Whether *messages* are trusted, and their text; all or none must be."""
    markups = [_markup(m) for m in messages]
    if all(m is None for m in markups):
        return False, [str(m) for m in messages]
    if any(m is None for m in markups):
        raise TypeError("singular and plural must both be markup (htmltext) or both plain str")
    return True, markups  # type: ignore[return-value]


def gettext(message: str) -> str:
    """Translate *message*; htmltext if *message* is markup, else a plain str."""
    trusted, (text,) = _trust(message)
    return _result(backend().gettext(text), trusted)


def ngettext(singular: str, plural: str, n: int) -> str:
    """Translate the form of *singular*/*plural* for *n*; htmltext if both are markup."""
    trusted, (one, many) = _trust(singular, plural)
    return _result(backend().ngettext(one, many, n), trusted)


def pgettext(context: str, message: str) -> str:
    """Translate *message* in *context* (a plain str that is never output)."""
    trusted, (text,) = _trust(message)
    return _result(backend().pgettext(str(context), text), trusted)


def npgettext(context: str, singular: str, plural: str, n: int) -> str:
    """:func:`ngettext` in *context*."""
    trusted, (one, many) = _trust(singular, plural)
    return _result(backend().npgettext(str(context), one, many, n), trusted)


_ = gettext


class LazyText:
    """A translation made when it is used, not when it is created (module-level messages).

    ``str()`` translates with the backend active at that moment; a lazily translated
    markup msgid also has ``__html__``, so templates and Django's ``conditional_escape``
    output it unescaped.
    """

    __slots__ = ("_args", "_func")

    def __init__(self, func: Callable[..., str], *args: Any) -> None:
        self._func, self._args = func, args

    def _value(self) -> str:
        return self._func(*self._args)

    def __str__(self) -> str:
        return str(self._value())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._args!r}>"

    # (Typed results: each is str, or htmltext when *other* is markup.)
    def __mod__(self, arg: Any) -> str:
        result: str = self._value() % arg
        return result

    def __add__(self, other: Any) -> str:
        result: str = self._value() + other
        return result

    def __radd__(self, other: Any) -> str:
        result: str = other + self._value()
        return result

    def __eq__(self, other: object) -> bool:
        return self._value() == (other._value() if isinstance(other, LazyText) else other)

    def __lt__(self, other: Any) -> bool:
        return self._value() < (other._value() if isinstance(other, LazyText) else other)

    def __hash__(self) -> int:
        return hash(self._value())

    def __len__(self) -> int:
        return len(self._value())

    def __contains__(self, item: str) -> bool:
        return item in self._value()

    def __getattr__(self, name: str) -> Any:
        # Other str methods (upper, format, ...) act on the translation.
        return getattr(self._value(), name)


class _LazyMarkup(LazyText):
    __slots__ = ()

    def __html__(self) -> str:
        return self._value()


def _lazy(func: Callable[..., str], args: tuple[Any, ...], messages: tuple[Any, ...]) -> LazyText:
    # Decide trust (and reject mixed plurals) now, where the mistake is made.
    trusted, _texts = _trust(*messages)
    return (_LazyMarkup if trusted else LazyText)(func, *args)


def gettext_lazy(message: str) -> LazyText:
    """:func:`gettext`, translated when used."""
    return _lazy(gettext, (message,), (message,))


def ngettext_lazy(singular: str, plural: str, n: int) -> LazyText:
    """:func:`ngettext`, translated when used."""
    return _lazy(ngettext, (singular, plural, n), (singular, plural))


def pgettext_lazy(context: str, message: str) -> LazyText:
    """:func:`pgettext`, translated when used."""
    return _lazy(pgettext, (context, message), (message,))


def npgettext_lazy(context: str, singular: str, plural: str, n: int) -> LazyText:
    """:func:`npgettext`, translated when used."""
    return _lazy(npgettext, (context, singular, plural, n), (singular, plural))
