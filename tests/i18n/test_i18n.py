"""ptl_wsgi.i18n: translated markup stays trusted, translated text stays escaped.

Each backend (installed gettext translations, Django, Flask-Babel) is tested with a real
French catalog compiled during the test with Babel's own ``write_mo``.
"""

from __future__ import annotations

import gettext
import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from ptl_helpers import subprocess_env

from ptl_wsgi import i18n
from ptl_wsgi.compiler import compile_ptl
from ptl_wsgi.html import htmltext

FRENCH = {
    "<b>Welcome</b>": "<b>Bienvenue</b>",
    "Hello %s": "Bonjour %s",
    "Hello <em>%s</em>": "Bonjour <em>%s</em>",
    "Rock & roll": "Rock & roll !",
    # French has three CLDR plural forms (one, many: millions, other).
    ("one <i>item</i>", "%d <i>items</i>"): (
        "un <i>article</i>",
        "%d <i>articles</i>",
        "%d <i>articles</i>",
    ),
    ("menu", "<b>File</b>"): "<b>Fichier</b>",
    "Tags <b>changed</b>": "Balises <strong>changées</strong>",
}

TEMPLATES = """\
from ptl_wsgi.i18n import _, gettext_lazy, ngettext, pgettext

# Outside a template a literal is plain text: its translation is escaped.
TITLE = gettext_lazy("Rock & roll")

def render [html] (name, n):
    _("<b>Welcome</b>")
    _("Hello <em>%s</em>") % name
    ngettext("one <i>item</i>", "%d <i>items</i>", n) % n
    pgettext("menu", "<b>File</b>")
    _(name)
    TITLE
"""

EXPECTED_FR = (
    "<b>Bienvenue</b>Bonjour <em>&lt;Zoé&gt;</em>2 <i>articles</i><b>Fichier</b>"
    "&lt;Zoé&gt;Rock &amp; roll !"
)
EXPECTED_EN = (
    "<b>Welcome</b>Hello <em>&lt;Zoé&gt;</em>2 <i>items</i><b>File</b>&lt;Zoé&gt;Rock &amp; roll"
)


def french_catalog() -> Catalog:
    catalog = Catalog(locale="fr")
    for msgid, msgstr in FRENCH.items():
        if isinstance(msgid, tuple) and isinstance(msgstr, tuple):
            catalog.add(msgid, msgstr)
        elif isinstance(msgid, tuple):
            catalog.add(msgid[1], msgstr, context=msgid[0])
        else:
            catalog.add(msgid, msgstr)
    return catalog


def write_catalog(locale_dir: Path, domain: str) -> Path:
    """Compile the French catalog to LOCALE_DIR/fr/LC_MESSAGES/DOMAIN.mo."""
    mo = locale_dir / "fr" / "LC_MESSAGES" / f"{domain}.mo"
    mo.parent.mkdir(parents=True, exist_ok=True)
    with mo.open("wb") as fp:
        write_mo(fp, french_catalog())
    return mo


def french() -> gettext.GNUTranslations:
    buffer = io.BytesIO()
    write_mo(buffer, french_catalog())
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def load_templates(source: str = TEMPLATES) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "i18n_page"}
    exec(compile_ptl(source, "i18n_page.ptl"), namespace)
    return namespace


@pytest.fixture
def fr(monkeypatch: pytest.MonkeyPatch) -> gettext.GNUTranslations:
    """The French catalog as the backend, whatever framework the suite has configured."""
    translations = french()
    monkeypatch.setattr(i18n, "backend", lambda: translations)
    return translations


# The rule


def test_trusted_msgid_gives_trusted_translation(fr) -> None:
    result = i18n.gettext(htmltext("<b>Welcome</b>"))
    assert type(result) is htmltext
    assert result == "<b>Bienvenue</b>"


def test_plain_msgid_gives_plain_translation(fr) -> None:
    result = i18n.gettext("<b>Welcome</b>")
    assert type(result) is str
    assert result == "<b>Bienvenue</b>"
    assert htmltext("%s") % result == "&lt;b&gt;Bienvenue&lt;/b&gt;"


def test_untranslated_messages_keep_their_trust(fr) -> None:
    assert type(i18n.gettext(htmltext("<i>new</i>"))) is htmltext
    assert type(i18n.gettext("<i>new</i>")) is str


def test_arguments_are_escaped(fr) -> None:
    assert i18n._(htmltext("Hello %s")) % "<script>" == "Bonjour &lt;script&gt;"


def test_markup_that_differs_from_the_msgid_is_still_trusted(fr) -> None:
    assert i18n.gettext(htmltext("Tags <b>changed</b>")) == htmltext(
        "Balises <strong>changées</strong>"
    )


def test_any_markup_is_trusted(fr) -> None:
    class Markup(str):
        def __html__(self) -> str:
            return str(self)

    assert type(i18n.gettext(Markup("<b>Welcome</b>"))) is htmltext


def test_plurals_and_contexts(fr) -> None:
    one, many = htmltext("one <i>item</i>"), htmltext("%d <i>items</i>")
    assert i18n.ngettext(one, many, 1) == "un <i>article</i>"
    assert type(i18n.ngettext(one, many, 3)) is htmltext
    assert i18n.npgettext("x", "a", "b", 2) == "b"
    assert type(i18n.pgettext("menu", htmltext("<b>File</b>"))) is htmltext
    assert i18n.pgettext("menu", "<b>File</b>") == "<b>Fichier</b>"
    assert type(i18n.pgettext("menu", "<b>File</b>")) is str


def test_mixed_plural_forms_are_refused(fr) -> None:
    with pytest.raises(TypeError, match="both"):
        i18n.ngettext(htmltext("<i>one</i>"), "many", 2)
    with pytest.raises(TypeError, match="both"):
        i18n.ngettext_lazy("one", htmltext("<i>many</i>"), 2)


def test_lazy_translations_follow_the_backend(monkeypatch) -> None:
    title = i18n.gettext_lazy(htmltext("<b>Welcome</b>"))
    text = i18n.gettext_lazy("Rock & roll")
    monkeypatch.setattr(i18n, "backend", gettext.NullTranslations)
    assert str(title) == "<b>Welcome</b>"
    monkeypatch.setattr(i18n, "backend", french)
    assert str(title) == "<b>Bienvenue</b>" and title.__html__() == "<b>Bienvenue</b>"
    assert htmltext("%s") % title == "<b>Bienvenue</b>"
    assert not hasattr(text, "__html__")
    assert htmltext("%s") % text == "Rock &amp; roll !"
    assert i18n.pgettext_lazy("menu", "<b>File</b>") == "<b>Fichier</b>"
    assert str(i18n.npgettext_lazy("c", "a", "b", 1)) == "a"
    assert i18n.ngettext_lazy(
        htmltext("one <i>item</i>"), htmltext("%d <i>items</i>"), 2
    ).__html__() == htmltext("%d <i>articles</i>")


def test_html_template(fr) -> None:
    render = load_templates()["render"]
    assert render("<Zoé>", 2) == EXPECTED_FR


def test_plain_template_is_not_markup(fr) -> None:
    source = "from ptl_wsgi.i18n import _\ndef mail [plain] ():\n    _('Rock & roll')\n"
    mail = load_templates(source)["mail"]
    assert mail() == "Rock & roll !"
    assert not hasattr(mail(), "__html__")


# Backends


def test_installed_translations_without_frameworks(tmp_path: Path) -> None:
    """Installed translations are used, and neither Django nor Flask is imported."""
    write_catalog(tmp_path, "messages")
    (tmp_path / "shop.ptl").write_text(TEMPLATES, encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import gettext, sys
        import ptl_wsgi
        from ptl_wsgi import i18n
        ptl_wsgi.install()
        sys.path.insert(0, {str(tmp_path)!r})
        import shop
        assert shop.render("<Zoé>", 2) == {EXPECTED_EN!r}, (
            shop.render("<Zoé>", 2)
        )
        i18n.install(gettext.translation("messages", {str(tmp_path)!r}, ["fr"]))
        print(shop.render("<Zoé>", 2))
        print(sorted({{"django", "flask", "flask_babel"}} & set(sys.modules)))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # The script checks the page before install() (English); after it, it is French.
    assert result.stdout.splitlines() == [EXPECTED_FR, "[]"]


def test_django_backend(tmp_path: Path, settings) -> None:
    from django.template import engines
    from django.utils import translation

    write_catalog(tmp_path, "django")
    settings.USE_I18N = True
    settings.LOCALE_PATHS = [str(tmp_path)]  # resets Django's translation caches
    template = engines["ptl"].from_string(TEMPLATES)
    with translation.override("fr"):
        assert template.render({"name": "<Zoé>", "n": 2}) == EXPECTED_FR
    with translation.override("en"):
        assert template.render({"name": "<Zoé>", "n": 2}) == EXPECTED_EN


def test_django_page_with_locale_middleware(tmp_path: Path, settings, client) -> None:
    write_catalog(tmp_path, "django")
    settings.USE_I18N = True
    settings.LOCALE_PATHS = [str(tmp_path)]
    settings.LANGUAGES = [("en", "English"), ("fr", "French")]
    settings.MIDDLEWARE = ["django.middleware.locale.LocaleMiddleware"]
    settings.ROOT_URLCONF = __name__
    response = client.get("/welcome/?name=<Zoé>", headers={"accept-language": "fr"})
    assert response.status_code == 200
    assert response.content.decode() == EXPECTED_FR


def test_flask_babel_backend(tmp_path: Path) -> None:
    from flask import Flask
    from flask_babel import Babel

    from ptl_wsgi.contrib.flask import PTL, render_template_string

    write_catalog(tmp_path / "translations", "messages")
    app = Flask(__name__, root_path=str(tmp_path))
    PTL(app)
    Babel(app, locale_selector=lambda: "fr")
    with app.test_request_context("/"):
        assert render_template_string(TEMPLATES, name="<Zoé>", n=2) == EXPECTED_FR
        assert i18n.backend() is app.extensions["babel"].instance.domain_instance.get_translations()
    other = Flask("without_babel", root_path=str(tmp_path))
    with other.test_request_context("/"):
        # No babel extension on this app: Flask-Babel is not the backend.
        assert i18n._("Hello %s") == "Hello %s"


def welcome_view(request):
    from django.http import HttpResponse
    from django.template import engines

    page = engines["ptl"].from_string(TEMPLATES).render({"name": request.GET["name"], "n": 2})
    return HttpResponse(page)


def _urlpatterns() -> list[object]:
    from django.urls import path

    return [path("welcome/", welcome_view)]


def __getattr__(name: str) -> object:
    # This module is the Django test's URLconf; built on demand so importing it needs no Django.
    if name == "urlpatterns":
        return _urlpatterns()
    raise AttributeError(name)
