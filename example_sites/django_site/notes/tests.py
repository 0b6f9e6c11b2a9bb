"""Run with ``python manage.py test``: Django's own runner, with PTL templates."""

from django.test import TestCase
from django.urls import reverse

from .models import Note


class NoteViewsTests(TestCase):
    def test_list_uses_the_ptl_template(self) -> None:
        Note.objects.create(title="First", text="hello")
        response = self.client.get(reverse("notes:list"))
        self.assertTemplateUsed(response, "notes/list.ptl")
        self.assertEqual(list(response.context["notes"]), list(Note.objects.all()))
        self.assertContains(response, "First")
        self.assertContains(response, 'name="csrfmiddlewaretoken"')

    def test_posted_markup_comes_back_escaped(self) -> None:
        data = {"title": "<b>bold</b>", "text": "<script>alert(1)</script>"}
        response = self.client.post(reverse("notes:list"), data, follow=True)
        note = Note.objects.get()
        self.assertRedirects(response, note.get_absolute_url())
        self.assertTemplateUsed(response, "notes/detail.ptl")
        self.assertContains(response, "&lt;script&gt;alert(1)&lt;/script&gt;")
        self.assertContains(response, "Saved “&lt;b&gt;bold&lt;/b&gt;”.")
        self.assertNotContains(response, "<script>")

    def test_invalid_form_is_shown_again(self) -> None:
        response = self.client.post(reverse("notes:list"), {"title": "", "text": "kept <i>"})
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "This field is required.")
        self.assertContains(response, "kept &lt;i&gt;</textarea>")
        self.assertFalse(Note.objects.exists())


class LayoutTests(TestCase):
    """The layout reads messages, the user and the CSRF input from the render context."""

    def test_every_page_uses_the_layout(self) -> None:
        response = self.client.get(reverse("notes:list"))
        self.assertTemplateUsed(response, "layout.ptl")
        self.assertTemplateUsed(response, "layout.ptl:page")
        self.assertContains(response, '<link rel="icon" href="/favicon.svg"')

    def test_anonymous_user_gets_a_login_link(self) -> None:
        response = self.client.get(reverse("notes:list"))
        self.assertContains(response, '<a href="/admin/login/?next=%2F">Log in</a>')
        self.assertNotContains(response, "Log out")

    def test_signed_in_user_is_named_escaped_with_a_logout_form(self) -> None:
        from django.contrib.auth.models import User

        user = User.objects.create_superuser("<i>root</i>", "", "pw-for-tests")
        self.client.force_login(user)
        response = self.client.get(reverse("notes:list"))
        self.assertContains(response, "Signed in as <strong>&lt;i&gt;root&lt;/i&gt;</strong>")
        self.assertContains(response, '<a href="/admin/">Admin</a>')
        self.assertContains(response, '<form method="post" action="/admin/logout/">')
        # the CSRF input once in the logout form and once in the note form
        self.assertEqual(response.content.count(b'name="csrfmiddlewaretoken"'), 2)


class FrenchTests(TestCase):
    """LocaleMiddleware picks French from Accept-Language; the catalogue keeps markup trusted."""

    def test_french_page(self) -> None:
        Note.objects.create(title="<b>Première</b>", text="x")
        response = self.client.get(reverse("notes:list"), HTTP_ACCEPT_LANGUAGE="fr")
        self.assertContains(response, '<html lang="fr">')
        self.assertContains(response, "<h2>Nouvelle note</h2>")
        self.assertContains(response, '<button type="submit">Ajouter la note</button>')
        self.assertContains(response, "Titre")  # the form's label, translated lazily
        self.assertContains(response, "&lt;b&gt;Première&lt;/b&gt;")
        self.assertNotContains(response, "<b>Première</b>")

    def test_french_message_escapes_the_title(self) -> None:
        data = {"title": "<script>x</script>", "text": "t"}
        response = self.client.post(
            reverse("notes:list"), data, follow=True, HTTP_ACCEPT_LANGUAGE="fr"
        )
        self.assertContains(response, "« &lt;script&gt;x&lt;/script&gt; » enregistrée.")
        self.assertNotContains(response, "<script>x")

    def test_english_by_default(self) -> None:
        response = self.client.get(reverse("notes:list"), HTTP_ACCEPT_LANGUAGE="de")
        self.assertContains(response, '<html lang="en">')
        self.assertContains(response, "<h2>New note</h2>")


class NotFoundTests(TestCase):
    def test_ptl_404_page(self) -> None:
        response = self.client.get("/no/such/<page>", HTTP_ACCEPT_LANGUAGE="fr")
        self.assertEqual(response.status_code, 404)
        self.assertTemplateUsed(response, "not_found.ptl")
        self.assertTemplateUsed(response, "layout.ptl")
        self.assertContains(response, "Page introuvable", status_code=404)
        self.assertContains(response, "<code>/no/such/&lt;page&gt;</code>", status_code=404)

    def test_missing_note_is_the_same_page(self) -> None:
        response = self.client.get(reverse("notes:detail", args=[999]))
        self.assertContains(response, "Page not found", status_code=404)


class FaviconTests(TestCase):
    def test_svg_and_ico(self) -> None:
        response = self.client.get("/favicon.svg")
        self.assertEqual(response["Content-Type"], "image/svg+xml")
        self.assertIn(b"<svg", b"".join(response.streaming_content))
        self.assertRedirects(
            self.client.get("/favicon.ico"),
            "/favicon.svg",
            status_code=301,
            fetch_redirect_response=False,
        )


class DemoAdminTests(TestCase):
    def test_the_printed_password_logs_in(self) -> None:
        import os
        import tempfile
        from pathlib import Path

        import ptlsite

        with tempfile.TemporaryDirectory() as folder:
            kept = Path(folder, "db.sqlite3.admin-password")
            kept.write_text("left from an earlier database\n")
            kept.chmod(0o644)
            user, password, where = ptlsite.demo_admin(kept)
            self.assertEqual(where, kept)
            self.assertEqual(os.stat(kept).st_mode & 0o777, 0o600)
            self.assertEqual(kept.read_text(), f"{password}\n")
            # the next start finds the same user and says the same password
            self.assertEqual(ptlsite.demo_admin(kept), (user, password, kept))
            # a password file that does not match is not trusted, and nothing is reset
            kept.write_text("wrong\n")
            self.assertEqual(ptlsite.demo_admin(kept), (user, None, kept))
        self.assertTrue(self.client.login(username=user, password=password))
        self.assertEqual(self.client.get("/admin/").status_code, 200)
